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
"""

from __future__ import annotations

import argparse
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


def apply() -> None:
    """Idempotently apply every fix."""
    global _applied
    if _applied:
        return
    torch.serialization.add_safe_globals(checkpoint_safe_globals())
    cpu_ddp_without_device_ids()
    _applied = True
