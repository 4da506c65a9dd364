"""The shared attention path: the locality-method protocol, its registry and flags, context, core module, placement.

``protocol`` (what a method is), ``errors`` (``LocalityConfigError``), ``registry`` (methods by name),
``options`` (flags from option dataclasses), ``tensors`` (helpers), ``context``, ``core``, ``placement``,
``sharing``: docs/design.md, "Where things live".
"""

from .context import AttentionContext
from .core import LocalityAttention
from .errors import LocalityConfigError
from .placement import LocalityPlan
from .protocol import ATTENTION_TYPES, AttentionSpec, LocalityMethod, MethodOptions, parse_layer_spec
from .registry import LOCALITY_METHODS, get_locality_method, register_locality_method
from .tensors import BiasFreeLinear

__all__ = [
    "ATTENTION_TYPES", "BiasFreeLinear", "LOCALITY_METHODS", "AttentionContext", "AttentionSpec", "LocalityAttention",
    "LocalityConfigError", "LocalityMethod", "LocalityPlan", "MethodOptions", "get_locality_method",
    "parse_layer_spec", "register_locality_method",
]
