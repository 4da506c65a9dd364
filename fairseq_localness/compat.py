"""Compatibility fixes applied on import (no environment variables needed).

torch >= 2.6 loads checkpoints with ``weights_only=True``: only allow-listed
classes may be unpickled. fairseq's checkpoints store the training
configuration as an ``argparse.Namespace`` (legacy ``--arch`` models keep
their args as one inside ``cfg.model``) and may hold numpy scalars (e.g. the
best validation score), so ``fairseq-generate``, ``fairseq-interactive`` and
``--restore-file``/resume fail out of the box. We allow-list exactly those
classes instead of turning ``weights_only`` off: loading stays safe for
checkpoints from untrusted sources.
"""

from __future__ import annotations

import argparse
from typing import List

import numpy as np
import torch

_applied = False


def checkpoint_safe_globals() -> List[object]:
    """Classes that fairseq checkpoints contain beyond torch's default allow-list."""
    safe: List[object] = [argparse.Namespace, np.dtype]
    numpy_core = getattr(np, "_core", None) or getattr(np, "core")
    safe.append(numpy_core.multiarray.scalar)
    dtypes = getattr(np, "dtypes", None)
    if dtypes is not None:  # numpy >= 1.25 pickles dtypes through these classes
        safe.extend(
            getattr(dtypes, name)
            for name in ("Float64DType", "Float32DType", "Float16DType", "Int64DType", "Int32DType", "BoolDType")
            if hasattr(dtypes, name)
        )
    return safe


def apply() -> None:
    """Idempotently apply every fix."""
    global _applied
    if _applied:
        return
    torch.serialization.add_safe_globals(checkpoint_safe_globals())
    _applied = True
