"""Model and architecture registrations (not named ``models/``: fairseq would import that folder a second time)."""

from . import base, gaussian  # noqa: F401
