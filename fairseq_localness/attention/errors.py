"""The error of a bad locality option, and how a fairseq command-line program reports it.

:class:`LocalityConfigError` is raised while options are read and placed
(:mod:`.options`, :mod:`.placement`, the methods' ``validate``); a model's
``build_model`` wrapped in :func:`exit_on_config_error` turns it into an
argparse-style error under ``fairseq-train`` and friends.
"""

from __future__ import annotations

import functools
import os
import sys
from typing import Callable


class LocalityConfigError(ValueError):
    """A locality option has a bad value (unknown method, layer out of range, ...)."""


def running_fairseq_command() -> bool:
    """Whether a fairseq command-line program (``fairseq-train``, ``fairseq-hydra-train``, ``fairseq-generate``,
    ``python -m fairseq_cli.X``, ...) is on the call stack, as opposed to Python code (tests, notebooks)."""
    frame = sys._getframe(1)
    while frame is not None:
        module = frame.f_globals.get("__name__") or ""
        if module == "__main__":
            module = getattr(frame.f_globals.get("__spec__"), "name", "") or ""
        if module.startswith("fairseq_cli."):
            return True
        frame = frame.f_back
    return False


def exit_on_config_error(build: Callable) -> Callable:
    """Decorator of a model's ``build_model``: under a fairseq command-line program, a
    :class:`LocalityConfigError` ends it like an argparse error, ``PROG: error: MESSAGE`` on stderr and exit
    status 2, instead of a traceback that ends in the message. Called from Python, the error propagates."""

    @functools.wraps(build)
    def wrapper(*args, **kwargs):
        try:
            return build(*args, **kwargs)
        except LocalityConfigError as err:
            if not running_fairseq_command():
                raise
            sys.stdout.flush()
            print(f"{os.path.basename(sys.argv[0]) or 'fairseq'}: error: {err}", file=sys.stderr, flush=True)
            raise SystemExit(2) from None

    return wrapper
