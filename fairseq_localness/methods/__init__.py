"""Locality methods, one module per paper; importing a module registers its methods."""

from . import gaussian, relative_position  # noqa: F401
