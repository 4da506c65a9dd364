"""The registry of locality methods: a method's name -> its :class:`~.protocol.LocalityMethod` class.

Methods register with :func:`register_locality_method`; ``--locality-methods``
names them, and :func:`get_locality_method` looks them up (the protocol is in
:mod:`.protocol`, the flags generated from a method's options in :mod:`.options`).
"""

from __future__ import annotations

from typing import Dict, Type

from .errors import LocalityConfigError
from .protocol import LocalityMethod

LOCALITY_METHODS: Dict[str, Type[LocalityMethod]] = {}


def register_locality_method(name: str):
    """Class decorator: make a :class:`LocalityMethod` available as ``name``."""

    if not name.isidentifier() or name != name.lower():
        raise ValueError(f"locality method names are lower-case identifiers, got {name!r}")

    def decorator(cls: Type[LocalityMethod]) -> Type[LocalityMethod]:
        if name in LOCALITY_METHODS and LOCALITY_METHODS[name] is not cls:
            raise ValueError(f"locality method {name!r} is already registered by {LOCALITY_METHODS[name]}")
        cls.name = name
        LOCALITY_METHODS[name] = cls
        return cls

    return decorator


def get_locality_method(name: str) -> Type[LocalityMethod]:
    try:
        return LOCALITY_METHODS[name]
    except KeyError:
        raise LocalityConfigError(
            f"unknown locality method {name!r}; available: {', '.join(sorted(LOCALITY_METHODS))}"
        ) from None
