"""Average the parameters of the last N checkpoints (fairseq's ``scripts/average_checkpoints.py``
is not part of the fairseq wheel).

Floating-point tensors are averaged (accumulated in float64, stored in their own dtype);
other tensors (integer buffers) are taken from the newest checkpoint. The rest of the
checkpoint (configuration, training state) is the newest one's, without its optimizer state.

Checkpoints are loaded with ``fairseq.checkpoint_utils.load_checkpoint_to_cpu`` after
``import fairseq_localness``, whose compatibility module allow-lists the classes fairseq
checkpoints contain, so ``torch.load`` keeps ``weights_only=True``.

Command line::

    python -m fairseq_localness.evaluation.average CHECKPOINT_DIR --last N [--updates] --output FILE
"""
from __future__ import annotations

import argparse
import os
import pickle
import re
import sys
from collections import OrderedDict
from typing import Any, Sequence

_EPOCH = re.compile(r"^checkpoint(\d+)\.pt$")
_UPDATE = re.compile(r"^checkpoint_(\d+)_(\d+)\.pt$")


def last_checkpoints(ckpt_dir: str, n: int, updates: bool = False) -> list[str]:
    """Paths of the ``n`` newest epoch (``checkpointE.pt``) or update (``checkpoint_E_U.pt``)
    checkpoints of ``ckpt_dir``, oldest first."""
    if n < 1:
        raise ValueError(f"need at least one checkpoint to average, got {n}")
    pattern, group = (_UPDATE, 2) if updates else (_EPOCH, 1)
    found = sorted((int(m.group(group)), name) for name in os.listdir(ckpt_dir)
                   if (m := pattern.match(name)))
    if len(found) < n:
        kind = "update checkpoints (checkpoint_E_U.pt)" if updates else "epoch checkpoints (checkpointN.pt)"
        have = ", ".join(name for _, name in found) or "none"
        raise ValueError(f"asked to average the last {n} {kind} but {ckpt_dir} has {len(found)}: {have}")
    return [os.path.join(ckpt_dir, name) for _, name in found[-n:]]


def _load(path: str) -> dict[str, Any]:
    import fairseq_localness  # noqa: F401  (allow-lists fairseq's checkpoint classes for torch.load)
    from fairseq import checkpoint_utils

    try:
        return checkpoint_utils.load_checkpoint_to_cpu(path)
    except (EOFError, RuntimeError, pickle.UnpicklingError) as err:  # an empty or cut-short file
        raise ValueError(f"{path}: not a readable checkpoint ({type(err).__name__}: {str(err)[:200]}); "
                         "it may have been cut short by a killed save") from None


def average_checkpoints(paths: Sequence[str]) -> dict[str, Any]:
    """Checkpoint state whose model parameters are the mean of those of ``paths``."""
    import torch

    total: "OrderedDict[str, torch.Tensor]" = OrderedDict()
    state: dict[str, Any] = {}
    for path in paths:
        state = _load(path)
        model = state["model"]
        if total and model.keys() != total.keys():
            diff = sorted(set(model) ^ set(total))
            raise ValueError(f"{path} has different parameters than {paths[0]} (e.g. {diff[:5]}): "
                             "only checkpoints of one model can be averaged")
        for key, tensor in model.items():
            if tensor.is_floating_point():
                acc = tensor.detach().to(torch.float64, copy=True)
                total[key] = acc if key not in total else total[key].add_(acc)
            else:
                total[key] = tensor  # integer buffers: the newest checkpoint's value
    reference = state["model"]
    state["model"] = OrderedDict(
        (k, (v / len(paths)).to(reference[k].dtype) if reference[k].is_floating_point() else v)
        for k, v in total.items())
    state.pop("last_optimizer_state", None)
    return state


def save_checkpoint(state: dict[str, Any], path: str) -> None:
    """Write ``state`` as fairseq does (configuration as plain containers)."""
    import torch
    from omegaconf import OmegaConf

    if OmegaConf.is_config(state.get("cfg")):
        state = dict(state, cfg=OmegaConf.to_container(state["cfg"], resolve=True, enum_to_str=True))
    tmp = path + ".tmp"
    torch.save(state, tmp)
    os.replace(tmp, path)


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint_dir")
    p.add_argument("--last", type=int, required=True, help="average the last N checkpoints")
    p.add_argument("--updates", action="store_true", help="use checkpoint_E_U.pt (--save-interval-updates)")
    p.add_argument("--output", required=True)
    p.add_argument("--force", action="store_true", help="overwrite --output")
    a = p.parse_args(argv)
    if os.path.exists(a.output) and not a.force:
        sys.exit(f"ERROR: {a.output} exists; pass --force to overwrite it")
    directory = os.path.dirname(os.path.abspath(a.output))
    if not os.path.isdir(directory):  # before N checkpoints are loaded
        sys.exit(f"ERROR: --output {a.output}: no directory {directory}")
    try:
        paths = last_checkpoints(a.checkpoint_dir, a.last, a.updates)
        averaged = average_checkpoints(paths)
    except (OSError, ValueError) as e:
        sys.exit(f"ERROR: {e}")
    save_checkpoint(averaged, a.output)
    print(f"averaged {', '.join(os.path.basename(x) for x in paths)} -> {a.output}")


if __name__ == "__main__":
    main()
