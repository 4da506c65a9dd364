"""Whether fairseq accepts an architecture's flags: fairseq-train's own parser, then the locality placement checks.

Used by the launcher's checks before anything trains (:mod:`.launch`) and by the paper tables (:mod:`.plans`).
"""

from __future__ import annotations

from typing import List, Optional, Sequence

from ..paths import USER_DIR
from .recipes import benchmark_values


def setting_task_flags(setting: str) -> List[str]:
    """The fairseq task a benchmark setting trains (``task._name``) with the options its parser needs."""
    task = benchmark_values(setting).get("task") or {}
    name = task.get("_name", "translation")
    return ["--task", name] + (["--num-classes", str(task.get("num_classes", 2))] if name == "sentence_prediction" else [])


def parser_error(arch: str, flags: Sequence[str], task_flags: Sequence[str] = ("--task", "translation")) -> Optional[str]:
    """Parse ``--arch ARCH FLAGS`` with fairseq's training parser (as fairseq-train would, for the
    setting's task), then validate the locality placement; return the error or None."""
    import contextlib
    import io

    import fairseq_localness  # noqa: F401  (registers the architectures)
    from fairseq import options
    from fairseq.models import ARCH_MODEL_REGISTRY

    if arch not in ARCH_MODEL_REGISTRY:
        return f"architecture {arch} is not registered (not implemented yet)"
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            parser = options.get_training_parser()
            args = options.parse_args_and_arch(
                parser, ["data-bin", *task_flags, "--user-dir", str(USER_DIR), "--arch", arch, *flags]
            )
    except SystemExit:
        message = stderr.getvalue().strip().splitlines()
        return f"fairseq rejects the flags {' '.join(flags)}: {message[-1] if message else 'parse error'}"
    if getattr(args, "locality_methods", None) is not None:
        from fairseq_localness.attention.placement import LocalityPlan
        from fairseq_localness.attention.errors import LocalityConfigError

        try:
            LocalityPlan.from_args(args)
        except LocalityConfigError as err:
            return f"invalid locality options: {err}"
    return None
