"""Which locality methods go into which attention block."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Tuple, Type

from .backends import read_backend
from .errors import LocalityConfigError
from .options import read_method_options
from .protocol import ATTENTION_TYPES, LocalityMethod, MethodOptions, parse_layer_spec
from .registry import get_locality_method


def method_names(args: Any) -> List[str]:
    """The methods named by ``--locality-methods`` (comma-separated), in order."""
    spec = getattr(args, "locality_methods", None) or ""
    names = [n.strip() for n in str(spec).split(",") if n.strip()]
    if len(set(names)) != len(names):
        raise LocalityConfigError(f"--locality-methods names a method twice: {spec!r}")
    return names


@dataclass
class LocalityPlan:
    """Validated placement: for every (attention type, 1-based layer), the methods to build."""

    placements: Dict[Tuple[str, int], List[Tuple[Type[LocalityMethod], MethodOptions]]]
    #: --locality-attention-backend (attention.backends)
    backend: str = "auto"

    @classmethod
    def from_args(cls, args: Any) -> "LocalityPlan":
        num_layers = {
            "encoder": int(getattr(args, "encoder_layers", 0)),  # decoder-only LMs have none
            "decoder": int(getattr(args, "decoder_layers")),
            "cross": 0 if getattr(args, "no_cross_attention", False) else int(getattr(args, "decoder_layers")),
        }
        placements: Dict[Tuple[str, int], List[Tuple[Type[LocalityMethod], MethodOptions]]] = {}
        for name in method_names(args):
            method = get_locality_method(name)
            flag = "--" + name.replace("_", "-")
            options = read_method_options(args, method)
            attention_types = options.attention_types()
            if not attention_types:
                raise LocalityConfigError(f"{flag}-attention: name at least one of {', '.join(ATTENTION_TYPES)}")
            for kind in attention_types:
                if kind not in method.supported_attention:
                    raise LocalityConfigError(
                        f"{flag}-attention: {name} is not defined for {kind} attention "
                        f"(supported: {', '.join(sorted(method.supported_attention))})"
                    )
                if num_layers[kind] == 0:
                    raise LocalityConfigError(f"{flag}-attention: the model has no {kind} attention")
                layers = parse_layer_spec(options.layers, num_layers[kind], flag=f"{flag}-layers")
                for layer in sorted(layers):
                    placements.setdefault((kind, layer), []).append((method, options))
        return cls(placements, backend=read_backend(args))

    def methods_for(self, attn_type: str, layer: int) -> List[Tuple[Type[LocalityMethod], MethodOptions]]:
        return self.placements.get((attn_type, layer), [])

    def describe(self) -> str:
        if not self.placements:
            return "no locality methods (plain Transformer attention)"
        return "; ".join(
            f"{kind} layer {layer}: {', '.join(m.name for m, _ in methods)}"
            for (kind, layer), methods in sorted(self.placements.items())
        )
