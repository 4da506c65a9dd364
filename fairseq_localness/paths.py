"""Where the project's non-Python files live: configs/, scripts/ and the plugin directory itself.

The package imports from anywhere (fairseq's ``--user-dir``, an installed wheel), but the recipes (``configs/``)
and the shell doors (``scripts/``) are files of the repository checkout, not of the package. They are found

1. in ``$FAIRSEQ_LOCALNESS_HOME`` when it is set: a checkout used with a regular (non-editable) install;
2. otherwise beside the package: the editable install of the README's set-up command, or a checkout on
   ``PYTHONPATH``.

The commands that read them (train, reproduce, compare, the analyses) call :func:`require_checkout` first, so an
install without a checkout stops with a sentence that says which of the two to do, not with a missing-file error
from deep inside Hydra.
"""

from __future__ import annotations

import os
from pathlib import Path

#: the environment variable that names the checkout holding configs/ and scripts/
HOME_VARIABLE = "FAIRSEQ_LOCALNESS_HOME"
#: the plugin directory: what ``--user-dir`` points at
USER_DIR = Path(__file__).resolve().parent


def _checkout() -> Path:
    home = os.environ.get(HOME_VARIABLE)
    return Path(home).expanduser().resolve() if home else USER_DIR.parent


#: the repository root (the checkout the package is installed from, or $FAIRSEQ_LOCALNESS_HOME)
REPO = _checkout()
CONFIG_DIR = REPO / "configs"
SCRIPTS_DIR = REPO / "scripts"


class CheckoutError(RuntimeError):
    """configs/ and scripts/ are not where this install looks for them."""


def require_checkout() -> Path:
    """The checkout root, or :class:`CheckoutError` naming where it looked and the two ways to fix it."""
    if (CONFIG_DIR / "benchmark").is_dir() and SCRIPTS_DIR.is_dir():
        return REPO
    where = (f"${HOME_VARIABLE} is {os.environ[HOME_VARIABLE]!r}, which" if os.environ.get(HOME_VARIABLE)
             else f"the package is installed at {USER_DIR}, and {REPO}")
    raise CheckoutError(
        f"{where} holds no configs/benchmark/ and scripts/: the recipes and scripts are files of the repository "
        f"checkout. Install the checkout in editable mode (pip install -e CHECKOUT), or set {HOME_VARIABLE}=CHECKOUT")
