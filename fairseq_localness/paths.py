"""Where the project's non-Python files live: configs/, scripts/ and the plugin directory itself.

The configs and shell scripts sit beside the package in the repository (the
install is editable, as README's set-up command does), so they are found from
the package's own location.
"""

from __future__ import annotations

from pathlib import Path

#: the plugin directory: what ``--user-dir`` points at
USER_DIR = Path(__file__).resolve().parent
#: the repository root (the checkout the package is installed from)
REPO = USER_DIR.parent
CONFIG_DIR = REPO / "configs"
SCRIPTS_DIR = REPO / "scripts"
