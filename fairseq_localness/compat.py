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
:func:`keep_last_batch`).
"""

from __future__ import annotations

import argparse
import functools
from typing import List

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
    _applied = True
