"""Where and when a result was made: the machine, the date and the command that result files record.

``fairseq-localness-compare`` puts them in its tables' captions, the benchmark's ``--run-json`` into its run file,
and the docs' measured tables (``fairseq_localness.experiments.doc_tables``) read them back from docs/results/.
"""

from __future__ import annotations

import datetime
import os
import platform
import shlex
from typing import Sequence


def machine_description(gpus: int = 0) -> str:
    """``N x GPU model, torch VERSION`` with GPUs, else ``C-core CPU (arch), Python VERSION``."""
    if gpus:
        try:
            import torch

            return f"{gpus} x {torch.cuda.get_device_name(0)}, torch {torch.__version__}"
        except Exception:
            return f"{gpus} GPU(s)"
    return f"{os.cpu_count()}-core CPU ({platform.machine()}), {platform.python_implementation()} {platform.python_version()}"


def utc_now() -> datetime.datetime:
    return datetime.datetime.now(datetime.timezone.utc)


def command_line(program: str, argv: Sequence[str], env: Sequence[str] = ("OMP_NUM_THREADS",)) -> str:
    """``program argv...`` as a shell would need it, prefixed by the ``env`` variables that are set
    (``OMP_NUM_THREADS=1 python scripts/benchmark.py ...``)."""
    prefix = [f"{name}={shlex.quote(os.environ[name])}" for name in env if os.environ.get(name)]
    return " ".join([*prefix, program, shlex.join(list(argv))]).strip()
