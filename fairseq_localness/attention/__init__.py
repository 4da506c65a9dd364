"""The shared attention path: registry of locality methods, context, core module, placement."""

from .context import AttentionContext
from .core import LocalityAttention
from .placement import LocalityPlan
from .registry import (
    ATTENTION_TYPES,
    LOCALITY_METHODS,
    AttentionSpec,
    BiasFreeLinear,
    LocalityConfigError,
    LocalityMethod,
    MethodOptions,
    get_locality_method,
    parse_layer_spec,
    register_locality_method,
)

__all__ = [
    "ATTENTION_TYPES", "BiasFreeLinear", "LOCALITY_METHODS", "AttentionContext", "AttentionSpec", "LocalityAttention",
    "LocalityConfigError", "LocalityMethod", "LocalityPlan", "MethodOptions", "get_locality_method",
    "parse_layer_spec", "register_locality_method",
]
