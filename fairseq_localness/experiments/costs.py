"""What a paper table costs: the GPU-hours of its training rows at the papers' throughput (``reproduce.sh --gpu-hours``)."""

from __future__ import annotations

from typing import List, Optional, Tuple

from .recipes import benchmark_values, tokens_per_update

#: Training throughput per GPU (tokens/s) on the papers' hardware, from Yang et al. (2019) Table 2 and Sec. 5:
#: 8 NVIDIA P40 GPUs x 4096 tokens per step, Transformer-Base 1.28 and Transformer-Big 0.61 steps/s (WMT14 En-De).
P40_TOKENS_PER_GPU_S = {"base": 1.28 * 4096, "big": 0.61 * 4096}
#: updates of settings that stop after max_epoch epochs, as the paper states them: Fan et al. (2021)
#: Sec. 3.1.1, "50k update, 80k update and 80k update for transformer big, base and small"
STATED_UPDATES = {"fan2021_wmt14_en_de_base": 80000, "fan2021_iwslt14_de_en": 80000}


def gpu_hours(row) -> Tuple[Optional[int], int, str, Optional[float]]:
    """(updates, tokens per update, model size, P40 GPU-hours) of one row: the setting's updates x its
    effective batch, at the per-GPU throughput of its model size (small models counted as base)."""
    values = benchmark_values(row.setting)
    updates = int(values["optimization"].get("max_update") or 0) or STATED_UPDATES.get(row.setting)
    tokens = tokens_per_update(values)
    size = "big" if "big" in f"{row.setting} {row.arch}" else "base"
    hours = updates * tokens / P40_TOKENS_PER_GPU_S[size] / 3600 if updates else None
    return updates, tokens, size, hours


def gpu_hours_table(rows: List) -> str:
    lines = ["| Row | Setting | Updates | Tokens/update | Model | P40 GPU-hours |", "|---|---|---|---|---|---|"]
    total = 0.0
    for row in rows:
        updates, tokens, size, hours = gpu_hours(row)
        total += hours or 0.0
        lines.append(f"| {row.id} | {row.setting} | {updates or 'n/a (epochs)'} | {tokens} | {size} | "
                     f"{'n/a' if hours is None else f'{hours:.0f}'} |")
    lines.append(f"| total | | | | | {total:.0f} |")
    return "\n".join(lines + [
        "", "GPU-hours = updates x tokens/update / (tokens/s per GPU), with the papers' P40 throughput "
        "(Yang et al. 2019, Table 2: 8 GPUs x 4096 tokens at 1.28 steps/s base, 0.61 big); "
        "not counted: a locality method's slowdown, 5-18% for the CSANs (same table: 1.22 base, 0.50 big), up to "
        "26% (Block) and 42% (Cnns) in its Table 1. Epoch-trained settings: "
        "the paper's stated updates. Newer GPUs are faster: rescale with the ups (updates/s) of your "
        "first log lines (docs/cluster.md)."])
