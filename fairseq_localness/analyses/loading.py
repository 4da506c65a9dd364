"""Checkpoints and data for the analyses: fairseq's own loading, batched forward passes, captured values.

A checkpoint is loaded with ``checkpoint_utils.load_model_ensemble_and_task``
after importing the plugin the way ``--user-dir`` does, so every model that
``fairseq-generate --user-dir`` can load is analysable. A pass runs the model
with teacher forcing (``model(**net_input)``) over a binarised split in
fairseq's batches, and yields each batch with what the methods recorded
(``capture_locality``) and, when asked, the attention probabilities.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

import torch
from torch import Tensor, nn

from ..attention.core import LocalityAttention, LocalityCapture, capture_locality
from ..paths import USER_DIR


class AnalysisError(Exception):
    """Bad input for an analysis; the message names the flag or file to fix."""


@dataclass
class LoadedModel:
    """One checkpoint, loaded for inference."""

    path: str
    label: str
    model: nn.Module
    task: object
    device: torch.device
    arch: str = ""

    @property
    def source_dictionary(self):
        return self.task.source_dictionary

    @property
    def target_dictionary(self):
        return self.task.target_dictionary


def pick_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise AnalysisError(f"--device {name}: no CUDA device is available (use --device cpu)")
    return torch.device(name)


def import_user_dir(user_dir: str = str(USER_DIR)) -> None:
    """Register the plugin exactly as fairseq's ``--user-dir`` does."""
    from fairseq import utils

    if not os.path.isdir(user_dir):
        raise AnalysisError(f"--user-dir {user_dir}: no such directory")
    utils.import_user_module(argparse.Namespace(user_dir=user_dir))


def load_checkpoint(path: str, data: Optional[str] = None, label: Optional[str] = None, device: str = "auto",
                    user_dir: str = str(USER_DIR)) -> LoadedModel:
    """The model of ``path`` in eval mode on ``device``; ``data`` replaces the training data directory."""
    from fairseq import checkpoint_utils

    if not os.path.isfile(path):
        raise AnalysisError(f"--checkpoint {path}: no such file")
    if data is not None and not os.path.isdir(data):
        raise AnalysisError(f"--data {data}: no such directory (a fairseq-preprocess output)")
    import_user_dir(user_dir)
    overrides = {"data": data} if data is not None else None
    try:
        models, cfg, task = checkpoint_utils.load_model_ensemble_and_task([path], arg_overrides=overrides)
    except Exception as exc:  # fairseq raises many types for a bad file; say which file
        raise AnalysisError(f"--checkpoint {path}: fairseq could not load it: {type(exc).__name__}: {exc}") from exc
    target = pick_device(device)
    model = models[0].to(target).eval()
    arch = getattr(getattr(cfg, "model", None), "arch", None) or getattr(getattr(cfg, "model", None), "_name", "") or ""
    name = label or os.path.basename(os.path.dirname(os.path.abspath(path))) or os.path.basename(path)
    return LoadedModel(path=path, label=name, model=model, task=task, device=target, arch=str(arch))


def parse_labelled(value: str) -> Tuple[Optional[str], str]:
    """'LABEL=PATH' -> (LABEL, PATH); a bare PATH -> (None, PATH)."""
    label, sep, path = value.partition("=")
    if sep and label and not os.path.exists(value):
        return label, path
    return None, value


# --- methods present in a model ---------------------------------------------------------------------------------


def locality_modules(model: nn.Module, method: str, attn_type: Optional[str] = None) -> List[Tuple[LocalityAttention, object]]:
    """(attention block, method module) for every block holding the registered method ``method``."""
    found = []
    for module in model.modules():
        if isinstance(module, LocalityAttention) and (attn_type is None or module.spec.attn_type == attn_type):
            found.extend((module, m) for m in module.locality if m.name == method)
    return found


def methods_present(model: nn.Module) -> List[str]:
    names = set()
    for module in model.modules():
        if isinstance(module, LocalityAttention):
            names.update(f"{m.name} ({module.spec.attn_type})" for m in module.locality)
    return sorted(names)


def require_method(loaded: LoadedModel, analysis: str, method: str, attn_type: Optional[str] = None,
                   condition=None, need: str = "") -> List[Tuple[LocalityAttention, object]]:
    """The blocks holding ``method`` (filtered by ``condition(method_module)``), or a clear AnalysisError."""
    found = [(block, m) for block, m in locality_modules(loaded.model, method, attn_type) if condition is None or condition(m)]
    if not found:
        where = f" in {attn_type} attention" if attn_type else ""
        have = ", ".join(methods_present(loaded.model)) or "no locality method"
        raise AnalysisError(
            f"{analysis}: checkpoint {loaded.path} (arch {loaded.arch or '?'}) has no '{method}' method{where}"
            f"{' ' + need if need else ''}; it has: {have}"
        )
    return found


# --- passes over a split ---------------------------------------------------------------------------------------


@dataclass
class PassOptions:
    """How to run over the data: which split, batch sizes, how many sentences."""

    split: str = "valid"
    max_tokens: int = 4096
    batch_size: Optional[int] = None
    max_sentences: Optional[int] = None  # stop after this many sentences (None: the whole split)
    progress_seconds: float = 10.0
    quiet: bool = False


def load_split(loaded: LoadedModel, split: str):
    """The split's dataset, loaded once per task (the checks before a pass and the pass both ask for it)."""
    if split in getattr(loaded.task, "datasets", {}):
        return loaded.task.dataset(split)
    try:
        loaded.task.load_dataset(split)
    except FileNotFoundError as exc:
        data = getattr(getattr(loaded.task, "cfg", None), "data", "?")
        raise AnalysisError(f"--split {split}: not found in --data {data} ({exc}); "
                            "binarise it with fairseq-preprocess (--validpref/--testpref)") from exc
    return loaded.task.dataset(split)


def require_sentences(loaded: LoadedModel, split: str, ids: Sequence[int], flag: str) -> None:
    """Sentence ids that the split cannot hold (negative, or past its end) are refused before the pass over it.
    (Whether an id is among the sentences read under --max-sentences is known only after the pass.)"""
    size = len(load_split(loaded, split))
    bad = [i for i in ids if not 0 <= i < size]
    if bad:
        raise AnalysisError(f"{flag} {','.join(map(str, bad))}: split {split} has sentence ids 0-{size - 1}")


class Progress:
    """Prints 'what: n/total sentences' to stderr at most every ``seconds``, and once at the end."""

    def __init__(self, what: str, total: int, seconds: float = 10.0, quiet: bool = False):
        self.what, self.total, self.seconds, self.quiet = what, total, seconds, quiet
        self.done, self.start, self.last = 0, time.time(), time.time()

    def update(self, n: int) -> None:
        self.done += n
        if not self.quiet and time.time() - self.last >= self.seconds:
            self.last = time.time()
            print(f"[{self.what}] {self.done}/{self.total} sentences ({self.last - self.start:.0f}s)", file=sys.stderr, flush=True)

    def finish(self) -> None:
        if not self.quiet:
            print(f"[{self.what}] {self.done} sentences in {time.time() - self.start:.1f}s", file=sys.stderr, flush=True)


def iterate_batches(loaded: LoadedModel, options: PassOptions, what: str) -> Iterator[dict]:
    """fairseq's batches of ``options.split`` (on the model's device), in a fixed order, with progress."""
    from fairseq import utils

    dataset = load_split(loaded, options.split)
    total = len(dataset) if options.max_sentences is None else min(len(dataset), options.max_sentences)
    iterator = loaded.task.get_batch_iterator(
        dataset=dataset, max_tokens=options.max_tokens, max_sentences=options.batch_size,
        max_positions=utils.resolve_max_positions(loaded.task.max_positions(), loaded.model.max_positions()),
        ignore_invalid_inputs=True, seed=1, num_workers=0,
    ).next_epoch_itr(shuffle=False)
    progress = Progress(f"{what}: {loaded.label}", total, options.progress_seconds, options.quiet)
    seen = 0
    for sample in iterator:
        if not sample or "net_input" not in sample:
            continue
        if options.max_sentences is not None and seen >= options.max_sentences:
            break
        if options.max_sentences is not None and seen + sample["id"].numel() > options.max_sentences:
            keep = options.max_sentences - seen
            sample = _first_rows(sample, keep)
        seen += sample["id"].numel()
        yield utils.move_to_cuda(sample, device=loaded.device) if loaded.device.type == "cuda" else sample
        progress.update(sample["id"].numel())
    progress.finish()


def _first_rows(sample: dict, keep: int) -> dict:
    def cut(value):
        if isinstance(value, dict):
            return {k: cut(v) for k, v in value.items()}
        return value[:keep] if torch.is_tensor(value) and value.dim() > 0 else value
    return cut(sample)


def real_positions(tokens: Tensor, pad: int) -> Tensor:
    """(B, T) bool: True at real (non-padding) tokens."""
    return tokens.ne(pad)


@contextmanager
def capture_attention(model: nn.Module, attn_types: Sequence[str] = ("encoder",)) -> Iterator[Dict[Tuple[str, int, str], Tensor]]:
    """Head-wise attention probabilities (B, H, T, S) of every attention block of ``attn_types`` while the block runs.

    Keys are (attention type, 1-based layer, kind): kind is the block's
    locality methods joined with '+' ('dman' for a MAN layer's dynamic mask
    sub-layer) or 'san' for a plain self-attention ('attn' for plain cross
    attention). Only the last call of each block is kept. fairseq's own
    MultiheadAttention would hand the call to PyTorch's fused kernel, which
    averages the heads; it is steered to its explicit path while capturing.
    """
    from fairseq.modules import MultiheadAttention

    probs: Dict[Tuple[str, int, str], Tensor] = {}
    handles, restored = [], []

    def force_weights(_module, args, kwargs):
        return args, dict(kwargs, need_weights=True, need_head_weights=True)

    for name, module in model.named_modules():
        if not isinstance(module, MultiheadAttention):
            continue
        placement = _placement(name, module)
        if placement is None or placement[0] not in attn_types:
            continue

        def keep(_module, _args, _kwargs, output, key=placement):
            weights = output[1]
            if weights is not None:
                probs[key] = (weights.transpose(0, 1) if weights.dim() == 4 else weights.unsqueeze(1)).detach().float()

        handles.append(module.register_forward_pre_hook(force_weights, with_kwargs=True))
        handles.append(module.register_forward_hook(keep, with_kwargs=True))
        if not isinstance(module, LocalityAttention):
            restored.append((module, module.skip_embed_dim_check))
            module.skip_embed_dim_check = True  # the explicit path (the flag only skips a shape assertion)
    try:
        yield probs
    finally:
        for handle in handles:
            handle.remove()
        for module, value in restored:
            module.skip_embed_dim_check = value


def _placement(name: str, module: nn.Module) -> Optional[Tuple[str, int, str]]:
    """(attn_type, 1-based layer, kind) of an attention module from its name in the model."""
    parts = name.split(".")
    if "layers" not in parts:
        return None
    side = parts[parts.index("layers") - 1]
    layer = int(parts[parts.index("layers") + 1]) + 1
    cross = "encoder_attn" in parts
    attn_type = "cross" if cross else ("encoder" if side == "encoder" else "decoder")
    methods = [m.name for m in module.locality] if isinstance(module, LocalityAttention) else []
    kind = "+".join(methods) if methods else ("attn" if cross else "san")
    return attn_type, layer, kind


@dataclass
class BatchCapture:
    """One batch: its sample, the methods' recorded values and (when asked) attention probabilities."""

    sample: dict
    records: LocalityCapture
    probs: Dict[Tuple[str, int, str], Tensor] = field(default_factory=dict)  # (attn_type, layer, kind) -> (B, H, T, S)

    def source_mask(self, loaded: LoadedModel) -> Tensor:
        return real_positions(self.sample["net_input"]["src_tokens"], loaded.source_dictionary.pad())

    def target_mask(self, loaded: LoadedModel) -> Tensor:
        return real_positions(self.sample["net_input"]["prev_output_tokens"], loaded.target_dictionary.pad())


@torch.no_grad()
def forward_passes(loaded: LoadedModel, options: PassOptions, what: str, attention_of: Sequence[str] = ()) -> Iterator[BatchCapture]:
    """Teacher-forced forward passes over the split, capturing every method's recorded values."""
    for sample in iterate_batches(loaded, options, what):
        with capture_locality(loaded.model) as records, capture_attention(loaded.model, attention_of) as probs:
            loaded.model(**sample["net_input"])
        yield BatchCapture(sample=sample, records=records, probs=dict(probs))
