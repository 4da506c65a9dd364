"""Model and architecture registrations, one module per paper.

Not named ``models/``: fairseq imports a user dir's ``models/`` folder a
second time under another name, which would register everything twice.
"""

import importlib
import pkgutil

from . import base  # noqa: F401  (the transformer_localness model the others build on)

for _module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
    importlib.import_module(f"{__name__}.{_module}")
