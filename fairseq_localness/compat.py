"""Compatibility fixes applied on import (no environment variables needed).

torch >= 2.6 loads checkpoints with ``weights_only=True``: only allow-listed
classes may be unpickled. fairseq's checkpoints store the training
configuration as an ``argparse.Namespace`` (legacy ``--arch`` models keep
their args as one inside ``cfg.model``) and may hold numpy scalars and arrays (e.g.
the best validation score), so ``fairseq-generate``, ``fairseq-interactive`` and
``--restore-file``/resume fail out of the box. We allow-list exactly those
classes instead of turning ``weights_only`` off: loading stays safe for
checkpoints from untrusted sources.

fairseq's ``DistributedFairseqModel`` always passes ``device_ids=[device_id]``
to PyTorch's ``DistributedDataParallel``, which PyTorch rejects for a module
on the CPU; :func:`cpu_ddp_without_device_ids` makes multi-process CPU
training (``--cpu --distributed-backend gloo``) work.

ve-fairseq 0.12.3 also drops sentences when batching (see
:func:`keep_last_batch`), ``--diverse-beam-groups`` crashes (see
:func:`fix_diverse_beam_search`) and ``--no-repeat-ngram-size`` blocks
nothing on the CPU (see :func:`fix_no_repeat_ngram`).

Code that imports the package and then hands fairseq ``--user-dir`` (the
compare grid, the analyses, probing) no longer makes fairseq log
"``--user-dir=... has already been imported``" (see :func:`mark_user_dir_imported`).
"""

from __future__ import annotations

import argparse
import functools
from typing import List, Optional

import numpy as np
import torch

_applied = False


def checkpoint_safe_globals() -> List[object]:
    """Classes that fairseq checkpoints contain beyond torch's default allow-list."""
    safe: List[object] = [argparse.Namespace, np.dtype, np.ndarray]
    numpy_core = getattr(np, "_core", None) or getattr(np, "core")
    safe += [numpy_core.multiarray.scalar, numpy_core.multiarray._reconstruct]
    dtypes = getattr(np, "dtypes", None)
    if dtypes is not None:  # numpy >= 1.25 pickles dtypes through these classes
        safe.extend(
            getattr(dtypes, name)
            for name in ("Float64DType", "Float32DType", "Float16DType", "Int64DType", "Int32DType", "BoolDType")
            if hasattr(dtypes, name)
        )
    return safe


def cpu_ddp_without_device_ids() -> None:
    """Let fairseq wrap a CPU model in PyTorch's DDP (multi-process CPU training with gloo).

    ``fairseq.models.distributed_fairseq_model`` builds
    ``DistributedDataParallel(module, device_ids=[args.device_id], output_device=args.device_id, ...)``
    for ``--ddp-backend c10d/pytorch_ddp`` whatever the device; PyTorch only
    accepts ``device_ids`` for a module on one CUDA device and raises for a CPU
    module. We swap the class that module looks up for a subclass that drops
    both arguments when the module's parameters are on the CPU; GPU training
    is untouched.
    """
    from fairseq.models import distributed_fairseq_model

    ddp = distributed_fairseq_model.DistributedDataParallel
    if getattr(ddp, "drops_device_ids_on_cpu", False):
        return

    class CpuSafeDistributedDataParallel(ddp):
        drops_device_ids_on_cpu = True

        def __init__(self, module, *args, device_ids=None, output_device=None, **kwargs):
            parameter = next(module.parameters(), None)
            if parameter is not None and parameter.device.type == "cpu":
                device_ids = output_device = None
            super().__init__(module, *args, device_ids=device_ids, output_device=output_device, **kwargs)

    distributed_fairseq_model.DistributedDataParallel = CpuSafeDistributedDataParallel


def keep_last_batch(batch_by_size):
    """Wrap ``fairseq.data.data_utils.batch_by_size`` so that no sentence is dropped.

    ve-fairseq 0.12.3 drops the last batch when its size is not a multiple of
    ``--required-batch-size-multiple`` (default 8): ``fairseq-generate`` then
    silently leaves up to 7 test sentences untranslated, and validation and
    every training epoch lose them too. Batches follow the order of
    ``indices``, so the dropped sentences are its tail; they become a final,
    smaller batch, as upstream fairseq does.
    """

    @functools.wraps(batch_by_size)
    def wrapper(indices, *args, **kwargs):
        indices = np.asarray(indices if isinstance(indices, np.ndarray) else list(indices), dtype=np.int64)
        batches = batch_by_size(indices, *args, **kwargs)
        covered = sum(len(batch) for batch in batches)
        if covered < len(indices):
            batches = list(batches) + [indices[covered:]]
        return batches

    wrapper.keeps_last_batch = True
    return wrapper


def diverse_beam_search_is_broken(search_class: Optional[type] = None) -> bool:
    """Whether fairseq's ``DiverseBeamSearch`` still has the batch-row bug (see :func:`fix_diverse_beam_search`).

    Probed by behaviour, not version: two sentences with dataset ids 7 and 9
    take one step, the first finishes, and the second takes another step. A
    fixed search accepts that; the buggy one indexes its one-row-per-sentence
    overlap table with the id 9 and raises ``IndexError``.
    """
    from fairseq import search as fairseq_search
    from fairseq.data import Dictionary

    dictionary = Dictionary()
    search = (search_class or fairseq_search.DiverseBeamSearch)(dictionary, num_groups=2, diversity_strength=0.5)
    vocab = len(dictionary)
    lprobs = torch.log_softmax(torch.arange(2 * 2 * vocab, dtype=torch.float).view(2, 2, vocab), dim=-1)
    ids = torch.tensor([7, 9])
    try:
        search.step(0, lprobs, torch.zeros(2, 2, 1), None, ids)
        search.prune_sentences(torch.tensor([1]))
        search.step(1, lprobs[1:], torch.zeros(1, 2, 1), None, ids[1:])
    except IndexError:
        return True
    return search.group_overlap.size(0) != 1


def fix_diverse_beam_search() -> bool:
    """Make ``--diverse-beam-groups`` work; returns whether fairseq needed the fix.

    fairseq's ``DiverseBeamSearch.step`` (upstream commit 3f6ba43f, issue #5069,
    after the 0.12.2 release) keeps ``group_overlap`` with one row per sentence
    of the current batch, but indexes it with ``original_batch_idxs``, the
    sentences' *dataset* ids (``sample["id"]``), and never drops the rows of
    finished sentences. Any batch whose ids are not ``0..n-1`` raises
    ``IndexError``; ids smaller than the batch size but out of order silently
    take the penalties of other sentences. The fix indexes by batch row and
    prunes the table with the sentences that stay (``prune_sentences``, which
    fairseq calls when sentences finish). With ids ``0..n-1`` both index the
    same rows, so results there are unchanged. When fairseq's own search works
    (a fixed fairseq), nothing is replaced.
    """
    from fairseq import search

    if getattr(search.DiverseBeamSearch, "indexes_by_batch_row", False) or not diverse_beam_search_is_broken():
        return False
    search.DiverseBeamSearch = batch_row_diverse_beam_search(search.DiverseBeamSearch)
    return True


def batch_row_diverse_beam_search(base: type) -> type:
    """``base`` (fairseq's DiverseBeamSearch) with group overlaps indexed by batch row and pruned."""

    class BatchRowDiverseBeamSearch(base):
        indexes_by_batch_row = True

        def step(self, step, lprobs, scores, prev_output_tokens=None, original_batch_idxs=None):
            rows = torch.arange(lprobs.size(0), device=lprobs.device)
            return super().step(step, lprobs, scores, prev_output_tokens, rows)

        def prune_sentences(self, batch_idxs):
            super().prune_sentences(batch_idxs)
            if self.group_overlap.numel() > 0:
                self.group_overlap = self.group_overlap[batch_idxs.to(self.group_overlap.device)]

    BatchRowDiverseBeamSearch.__name__ = BatchRowDiverseBeamSearch.__qualname__ = base.__name__
    return BatchRowDiverseBeamSearch


def no_repeat_ngram_is_broken() -> bool:
    """Whether fairseq's CPU ``--no-repeat-ngram-size`` blocks nothing (see :func:`fix_no_repeat_ngram`).

    Probe: the hypothesis "5 6 5" (after the bos/eos 2, then padding 1) with
    bigrams blocked must ban 6 as the next token.
    """
    from fairseq.ngram_repeat_block import NGramRepeatBlock

    blocker = NGramRepeatBlock(2, use_extension=False)
    lprobs = torch.zeros(1, 8)
    blocker(torch.tensor([[2, 5, 6, 5, 1, 1]]), lprobs, bsz=1, beam_size=1, step=3)
    return not bool(torch.isneginf(lprobs[0, 6]))


def fix_no_repeat_ngram() -> bool:
    """Make ``--no-repeat-ngram-size`` block repeats without fairseq's CUDA extension; returns whether needed.

    ve-fairseq 0.12.3's Python fallback ``NGramRepeatBlock._no_repeat_ngram``
    compares the last n-1 tokens of the *whole* token buffer, which past the
    current step holds only padding, so nothing is ever banned (upstream
    fairseq reads the tokens up to the current step). The generator passes that
    buffer, so the fix hands the fallback the tokens up to ``step`` only. Left
    alone where the probe finds the fallback working.
    """
    from fairseq.ngram_repeat_block import NGramRepeatBlock

    if getattr(NGramRepeatBlock._no_repeat_ngram, "reads_current_prefix", False) or not no_repeat_ngram_is_broken():
        return False
    buffer_wide = NGramRepeatBlock._no_repeat_ngram

    @functools.wraps(buffer_wide)
    def up_to_step(self, tokens, lprobs, bsz: int, beam_size: int, step: int):
        return buffer_wide(self, tokens[:, : step + 1], lprobs, bsz, beam_size, step)

    up_to_step.reads_current_prefix = True
    NGramRepeatBlock._no_repeat_ngram = up_to_step
    return True


def numpy2_compat_long() -> None:
    """ve-fairseq 0.12.3 uses ``np.compat.long``, which numpy 2 removed: TokenBlockDataset's ``eos`` break
    mode (language-model sampling with fairseq-interactive, ``--sample-break-mode eos``) fails without it."""
    try:
        np.compat.long  # noqa: B018  (numpy < 2: present)
    except AttributeError:
        np.compat = argparse.Namespace(long=np.int64)  # numpy 1's np.compat.long was int: int64 here


def mark_user_dir_imported() -> None:
    """Tell fairseq that this package, as a ``--user-dir``, is imported (it is: this runs on its import).

    ``fairseq.utils.import_user_module`` keeps the user directories it has handled in its ``memo`` and logs
    "``--user-dir=DIR has already been imported.``" at INFO when asked for a directory whose module is in
    ``sys.modules`` but not in ``memo``: every process that imports ``fairseq_localness`` itself and then
    parses ``--user-dir`` (the compare grid's flag checks, the analyses, probing) printed it. Recording
    this package's directory in ``memo`` makes fairseq skip the directory silently, as it does for a
    directory it imported itself; another directory (another copy of the plugin) is handled as before.
    The package has no ``tasks/`` or ``models/`` folder, so nothing else is skipped.
    """
    import os

    from fairseq import utils

    memo = getattr(utils.import_user_module, "memo", set())
    memo.add(os.path.dirname(os.path.abspath(__file__)))
    utils.import_user_module.memo = memo


def apply() -> None:
    """Idempotently apply every fix."""
    global _applied
    if _applied:
        return
    torch.serialization.add_safe_globals(checkpoint_safe_globals())
    cpu_ddp_without_device_ids()
    from fairseq.data import data_utils

    if not getattr(data_utils.batch_by_size, "keeps_last_batch", False):
        data_utils.batch_by_size = keep_last_batch(data_utils.batch_by_size)
    fix_diverse_beam_search()
    fix_no_repeat_ngram()
    numpy2_compat_long()
    mark_user_dir_imported()
    _applied = True
