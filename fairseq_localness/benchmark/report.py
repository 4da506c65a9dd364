"""Summarising measurements: medians, ratios to the reference, the printed table and the JSON records."""

from __future__ import annotations

import statistics
from typing import Dict, List

from .specs import JSON_KEYS, Spec


def _ratio(value, ref):
    if value is None or ref is None or ref == 0:
        return None
    return value / ref


def _fmt(value, spec=None, none="-"):
    """Format a number; by default with thousands separators, and one decimal
    below 100 so that small throughputs stay readable."""
    if value is None:
        return none
    if spec is None:
        spec = "{:,.0f}" if abs(value) >= 100 else "{:.1f}"
    return spec.format(value)


def summarise(specs: List[Spec], seq_lens: List[int], runs: Dict, settings: dict,
              baselines: List[Spec]) -> List[dict]:
    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    records = []
    for seq_len in seq_lens:
        agg = {}
        for spec in specs:
            rs = runs[(spec.label, seq_len)]
            agg[spec.label] = dict(
                train=med([r["train_tokens_per_s"] for r in rs]),
                decode=med([r["decode_tokens_per_s"] for r in rs]),
                mem=med([r["peak_mem_mb"] for r in rs]),
                first=rs[0], all=rs,
            )
        # Rows grouped by reference: the baseline first, then its comparisons.
        ordered = []
        for ref in baselines:
            ordered.append(ref)
            ordered += [s for s in specs if s.baseline == ref.label and s is not ref]
        for spec in ordered:
            a, b = agg[spec.label], agg[spec.baseline]
            first = a["first"]
            records.append(dict(
                arch=spec.label,
                seq_len=seq_len,
                train_tokens_per_s=a["train"],
                peak_mem_mb=a["mem"],
                train_ratio_vs_baseline=_ratio(a["train"], b["train"]),
                decode_tokens_per_s=a["decode"],
                decode_ratio_vs_baseline=_ratio(a["decode"], b["decode"]),
                mem_ratio_vs_baseline=_ratio(a["mem"], b["mem"]),
                baseline=spec.baseline,
                role=spec.role,
                base_arch=spec.arch,
                overrides=spec.overrides,
                params=first["params"],
                size=first["size"],
                batch_sentences=first["bsz"],
                decode_len=first["decode_len"],
                train_tokens_per_s_runs=[r["train_tokens_per_s"] for r in a["all"]],
                decode_tokens_per_s_runs=[r["decode_tokens_per_s"] for r in a["all"]],
                peak_mem_mb_runs=[r["peak_mem_mb"] for r in a["all"]],
                mem_method=first["mem_method"],
                device=settings["device"], dtype=settings["dtype"],
                threads=settings["threads"], vocab=settings["vocab"],
                batch_tokens=settings["batch_tokens"], steps=settings["steps"],
                warmup=settings["warmup"], repeats=settings["repeats"],
                beam=settings["beam"], decode_batch=settings["decode_batch"],
                loadavg_before=settings.get("loadavg_before"),
                loadavg_after=settings.get("loadavg_after"),
            ))
    for record in records:
        missing = set(JSON_KEYS) - set(record)
        assert not missing, missing
    return records


def format_table(records: List[dict], device: str = "cpu") -> str:
    """The printed table: one line per record, a blank line between lengths, the footnote on what the columns are."""
    cols = ("arch", "len", "params", "train tok/s", "ratio", "peak MB", "mem ratio",
            "decode tok/s", "ratio")
    rows = []
    for r in records:
        rows.append((
            ("* " if r["role"] == "baseline" else "  ") + r["arch"],
            str(r["seq_len"]),
            f"{r['params'] / 1e6:.1f}M",
            _fmt(r["train_tokens_per_s"]),
            _fmt(r["train_ratio_vs_baseline"], "{:.3f}"),
            _fmt(r["peak_mem_mb"]),
            _fmt(r["mem_ratio_vs_baseline"], "{:.3f}"),
            _fmt(r["decode_tokens_per_s"]),
            _fmt(r["decode_ratio_vs_baseline"], "{:.3f}"),
        ))
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    line = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))).rstrip()
    lines = [line(cols), "  ".join("-" * w for w in widths)]
    prev_len = None
    for r, row in zip(records, rows):
        if prev_len is not None and r["seq_len"] != prev_len:
            lines.append("")
        prev_len = r["seq_len"]
        lines.append(line(row))
    mem = ("torch.cuda.max_memory_allocated over build+training"
           if device == "cuda"
           else "growth of the worker's peak anonymous RSS over build+training")
    lines += ["", f"* = reference; ratios = median of this arch / median of its reference. peak MB: {mem}."]
    return "\n".join(lines)


def print_table(records: List[dict], settings: dict) -> None:
    print(format_table(records, settings["device"]))


def format_models(records: List[dict]) -> str:
    """The "Models:" lines: each model's size and its reference (one record per model, the first length's)."""
    lines, seen = ["Models:"], set()
    for r in records:
        if r["arch"] in seen:
            continue
        seen.add(r["arch"])
        s = r["size"]
        lines.append(f"  {r['arch']}: {r['params']:,} params, embed {s['encoder_embed_dim']}/"
                     f"{s['decoder_embed_dim']}, ffn {s['encoder_ffn_embed_dim']}, layers "
                     f"{s['encoder_layers']}+{s['decoder_layers']}, heads "
                     f"{s['encoder_attention_heads']}/{s['decoder_attention_heads']}"
                     f"  [{r['role']}{'' if r['role'] == 'baseline' else ', vs ' + r['baseline']}]")
    return "\n".join(lines)
