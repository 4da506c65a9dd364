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

fairseq keeps its early-stopping count (``--patience``) and the plateau schedule's last step in memory only, so a
resumed training did not go on as the uninterrupted one (see :func:`resume_where_training_stopped`), and it made a
resumed training's batches of other sentences than the uninterrupted one's (see :func:`batches_of_the_first_epoch`).

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


#: the key of a checkpoint's ``extra_state`` that carries what fairseq keeps only in memory (see
#: :func:`resume_where_training_stopped`)
RESUME_STATE = "localness_resume_state"


def _early_stopping_functions() -> List[object]:
    """fairseq's ``should_stop_early`` of this process: ``fairseq_cli.train``'s (fairseq-train,
    fairseq-hydra-train), and ``__main__``'s under ``python -m fairseq_cli.train``."""
    import sys

    found: List[object] = []
    for name in ("fairseq_cli.train", "__main__"):
        function = getattr(sys.modules.get(name), "should_stop_early", None)
        code = getattr(function, "__code__", None)
        if code is not None and code.co_filename.replace("\\", "/").endswith("fairseq_cli/train.py") \
                and function not in found:
            found.append(function)
    return found


def _plateau(trainer) -> Optional[object]:
    """torch's ReduceLROnPlateau inside fairseq's ``reduce_lr_on_plateau`` schedule, or None for another one."""
    from fairseq.optim.lr_scheduler.reduce_lr_on_plateau import ReduceLROnPlateauLRSchedule

    schedule = getattr(trainer, "lr_scheduler", None)
    return schedule.lr_scheduler if isinstance(schedule, ReduceLROnPlateauLRSchedule) else None


def resume_where_training_stopped() -> None:
    """Make a training resumed from ``checkpoint_last.pt`` go on as the same training uninterrupted would.

    Two things fairseq keeps only in memory were lost at a resume:

    * **Early stopping** (``--patience``): ``fairseq_cli.train.should_stop_early`` keeps the best validation
      score and the number of validations since it (``best``, ``num_runs``) as attributes of the function. A
      resumed training took its first validation as the best and counted from zero again, so a run killed two
      epochs into a plateau trained up to ``patience`` epochs longer than the same run uninterrupted.
    * **The plateau schedule's last step** (``reduce_lr_on_plateau``): fairseq saves an epoch's checkpoint before
      it steps the schedule with that epoch's validation loss, so a halving decided at the last saved epoch was
      lost, and the resumed run trained one epoch more at the old rate. torch's scheduler also keeps its count of
      bad epochs and its cooldown in memory only (fairseq saves its ``best`` alone).

    Each checkpoint now carries these values in its ``extra_state`` (key :data:`RESUME_STATE`). Loading it
    restores them, under the condition on which fairseq restores its own best score (no
    ``--reset-optimizer``/``--reset-meters``, and no ``--finetune-from-model``, whose first checkpoint is another
    training's); for a checkpoint written at the end of an epoch it then takes the schedule step fairseq did not
    take (``trainer.lr_step(epoch, val_loss)``, the call fairseq makes after that save), with
    ``--reset-lr-scheduler`` excepted. A checkpoint written before this fix restores the best score fairseq saved
    (``extra_state["best"]``) with the early-stopping count at zero, and takes the lost step likewise.
    """
    from fairseq import checkpoint_utils
    from fairseq.trainer import Trainer

    if not getattr(Trainer.save_checkpoint, "keeps_resume_state", False):
        save = Trainer.save_checkpoint

        @functools.wraps(save)
        def save_with_resume_state(self, filename, extra_state, *args, **kwargs):
            state = {}
            for function in _early_stopping_functions():
                if getattr(function, "best", None) is not None:  # should_stop_early has seen a validation
                    state["early_stopping"] = {"best": float(function.best),
                                               "num_runs": int(getattr(function, "num_runs", 0))}
                    break
            plateau = _plateau(self)
            if plateau is not None:
                state["plateau"] = {"num_bad_epochs": int(plateau.num_bad_epochs),
                                    "cooldown_counter": int(plateau.cooldown_counter)}
            extra_state[RESUME_STATE] = state
            return save(self, filename, extra_state, *args, **kwargs)

        save_with_resume_state.keeps_resume_state = True
        Trainer.save_checkpoint = save_with_resume_state

    if not getattr(checkpoint_utils.load_checkpoint, "restores_resume_state", False):
        load = checkpoint_utils.load_checkpoint

        @functools.wraps(load)
        def load_with_resume_state(cfg, trainer, **passthrough_args):
            extra_state, epoch_itr = load(cfg, trainer, **passthrough_args)
            if extra_state is None or cfg.reset_optimizer or cfg.reset_meters or cfg.finetune_from_model:
                return extra_state, epoch_itr
            state = extra_state.get(RESUME_STATE) or {}
            stopping = state.get("early_stopping")
            if stopping is None and extra_state.get("best") is not None:
                stopping = {"best": float(extra_state["best"]), "num_runs": 0}
            for function in _early_stopping_functions() if stopping else ():
                function.best, function.num_runs = stopping["best"], stopping["num_runs"]
            plateau = _plateau(trainer)
            if plateau is None or cfg.reset_lr_scheduler:
                return extra_state, epoch_itr
            for key, value in (state.get("plateau") or {}).items():
                setattr(plateau, key, value)
            itr_state = extra_state.get("train_iterator") or {}
            at_epoch_end = itr_state.get("iterations_in_epoch") == 0 and itr_state.get("epoch", 1) > 1
            if at_epoch_end and extra_state.get("val_loss") is not None:
                trainer.lr_step(itr_state["epoch"] - 1, extra_state["val_loss"])  # the step fairseq took after saving
            return extra_state, epoch_itr

        load_with_resume_state.restores_resume_state = True
        checkpoint_utils.load_checkpoint = load_with_resume_state


def batches_of_the_first_epoch() -> None:
    """Give a training resumed at epoch k > 1 the batches the uninterrupted training draws.

    fairseq builds an epoch's batches once and reuses them in every later epoch, only shuffling their order
    (``FairseqTask.get_batch_iterator``, for a dataset that ``can_reuse_epoch_itr``: a translation corpus that is
    not sharded). It orders the sentences by length under the random seed ``seed + epoch`` of the epoch that builds
    them, and that order decides which of the sentences of equal length go into which batch. The uninterrupted
    training builds them in epoch 1; a training resumed from a checkpoint of epoch k builds them in epoch k, under
    another seed: batches of the same sizes that hold other sentences, and from its first update on the resumed
    run's weights part from those of the run it continues. Built here as epoch 1 builds them (the iterator then
    stands at epoch k, as fairseq's), they are the uninterrupted run's. A training that starts in epoch 1, and
    one that rebuilds its batches every epoch (``--rebuild-batches``, sharded data), is unchanged.
    """
    import inspect

    from fairseq.tasks.fairseq_task import FairseqTask

    build = FairseqTask.get_batch_iterator
    if getattr(build, "batches_of_first_epoch", False):
        return
    signature = inspect.signature(build)

    @functools.wraps(build)
    def get_batch_iterator(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        given, epoch = bound.arguments, bound.arguments["epoch"]
        dataset = given["dataset"]
        reused_later = (not given["disable_iterator_cache"] and not given["update_epoch_batch_itr"]
                        and not getattr(getattr(self, "cfg", None), "rebuild_batches", False)
                        and self.can_reuse_epoch_itr(dataset))
        if not reused_later or epoch <= 1 or dataset in self.dataset_to_epoch_iter:
            return build(*bound.args, **bound.kwargs)
        given["epoch"] = 1
        iterator = build(*bound.args, **bound.kwargs)
        iterator.epoch = epoch  # as fairseq's iterator built at epoch k stands (a checkpoint's state then loads)
        dataset.set_epoch(epoch)
        return iterator

    get_batch_iterator.batches_of_first_epoch = True
    FairseqTask.get_batch_iterator = get_batch_iterator


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
    resume_where_training_stopped()
    batches_of_the_first_epoch()
    mark_user_dir_imported()
    _applied = True
