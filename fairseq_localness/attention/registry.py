"""Registry of locality methods and their typed, documented options.

A *locality method* is one small ``nn.Module`` that reads like its paper's
equations and contributes to the shared attention path
(:class:`fairseq_localness.attention.core.LocalityAttention`) through a few
hooks (see :class:`LocalityMethod`).  Methods are registered by name with
:func:`register_locality_method`; every option of a method becomes a
command-line flag ``--<name>-<option>`` (and a key ``<name>_<option>`` in
Hydra's ``model`` config), generated from the method's ``Options`` dataclass.
"""

from __future__ import annotations

import argparse
import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Dict, FrozenSet, Optional, Tuple, Type

import torch
from torch import Tensor, nn

if TYPE_CHECKING:  # pragma: no cover
    from .context import AttentionContext

#: The three places attention occurs in an encoder-decoder Transformer.
ATTENTION_TYPES = ("encoder", "decoder", "cross")


class LocalityConfigError(ValueError):
    """A locality option has a bad value (unknown method, layer out of range, ...)."""


def parse_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off"):
        return False
    raise argparse.ArgumentTypeError(f"expected a boolean (true/false), got {value!r}")


@dataclass
class MethodOptions:
    """Options every locality method has: where it is placed.

    Subclasses override the defaults with their paper's setting and add their
    own fields; ``metadata["help"]`` is the flag's help text and
    ``metadata["choices"]`` restricts its values.
    """

    layers: str = field(
        default="all",
        metadata={"help": "1-based layers to apply the method to: 'all', 'none', or a list "
                  "of numbers and ranges such as '1-3' or '1,3,5'"},
    )
    attention: str = field(
        default="encoder",
        metadata={"help": "comma-separated attention types: encoder (encoder self-attention), "
                  "decoder (decoder self-attention), cross (encoder-decoder attention)"},
    )

    def validate(self, method: str) -> None:
        """Raise :class:`LocalityConfigError` on a bad value; subclasses extend it."""
        for kind in self.attention_types():
            if kind not in ATTENTION_TYPES:
                raise LocalityConfigError(
                    f"--{method}-attention: unknown attention type {kind!r}; "
                    f"choose from {', '.join(ATTENTION_TYPES)}"
                )
        parse_layer_spec(self.layers, num_layers=None, flag=f"--{method}-layers")

    def attention_types(self) -> tuple:
        return tuple(t.strip() for t in str(self.attention).split(",") if t.strip())


def parse_layer_spec(spec: Any, num_layers: Optional[int], flag: str = "--layers") -> FrozenSet[int]:
    """Parse '1-3', '1,3,5', 'all' or 'none' into a set of 1-based layer numbers.

    With ``num_layers`` given, 'all' expands to every layer and numbers beyond
    it are an error.
    """
    text = str(spec).strip().lower()
    if text in ("", "none"):
        return frozenset()
    if text == "all":
        if num_layers is None:
            return frozenset()
        return frozenset(range(1, num_layers + 1))
    layers = set()
    for part in text.split(","):
        part = part.strip()
        try:
            if "-" in part:
                lo, hi = (int(x) for x in part.split("-", 1))
                if lo > hi:
                    raise ValueError
                layers.update(range(lo, hi + 1))
            else:
                layers.add(int(part))
        except ValueError:
            raise LocalityConfigError(
                f"{flag}: cannot parse {spec!r}; use 'all', 'none', or numbers and ranges like '1-3' or '1,3,5'"
            ) from None
    if min(layers) < 1:
        raise LocalityConfigError(f"{flag}: layers are numbered from 1, got {spec!r}")
    if num_layers is not None and max(layers) > num_layers:
        bad = sorted(layer for layer in layers if layer > num_layers)
        raise LocalityConfigError(
            f"{flag}: layer(s) {bad} out of range: the model has {num_layers} layers (numbered 1-{num_layers})"
        )
    return frozenset(layers)


@dataclass(frozen=True)
class AttentionSpec:
    """What a method needs to know about the attention block it is placed in."""

    embed_dim: int
    num_heads: int
    attn_type: str  # one of ATTENTION_TYPES
    layer: int  # 1-based
    kdim: int
    max_positions: int

    @property
    def head_dim(self) -> int:
        return self.embed_dim // self.num_heads


class LocalityMethod(nn.Module):
    """Base class of a locality method.

    Override only the hooks the paper needs; the attention core finds the
    overridden ones and calls them at these points::

        x      = transform_input(x)                          # self-attention input before q/k/v (CNNs)
        logits = q k^T / sqrt(d) + sum(logit_bias)          # Gaussian, band masks, log M, Shaw keys
        probs  = transform_probs(softmax(logits))            # multiplicative windows
        out    = dropout(probs) v + sum(value_term)          # Shaw values
        out    = mix_output(out, attend)                     # hybrid local/global gate

    ``attend(extra_bias)`` recomputes attention over the same logits plus an
    extra bias (e.g. a local band), for methods that mix several patterns.
    When no method needs probabilities, attention runs through
    ``torch.nn.functional.scaled_dot_product_attention`` with the summed bias.

    ``attention_kernel(ctx, bias, need_probs, dropout)`` lets one method per
    attention block replace the three middle lines (score, softmax, weighted
    sum), e.g. with a banded computation whose cost grows with T*M instead of
    T*S, or with keys and values pooled from neighbouring heads. ``bias`` is
    the sum of fairseq's masks, the padding mask and every *other* method's
    ``logit_bias``; the kernel's own ``logit_bias`` is left out, since the
    kernel applies its own restriction. It returns the per-head output
    (B, H, T, d) and, when ``need_probs``, probabilities (B, H, T, S), or
    ``None`` to decline: the core then adds the method's ``logit_bias`` and
    runs its own step. A kernel with a dense ``logit_bias`` equivalent is
    skipped in blocks that also use ``transform_probs``/``value_term``.

    Class attributes:
        Options: dataclass of the method's options (flags ``--<name>-<field>``).
        supported_attention: attention types the method is defined for.
        needs_probs: the method reads or changes attention probabilities
            (forces the explicit softmax path). Instances may change it.
        masks_rows: the method's bias can hide every key from a query (hard
            windows); the core then makes such rows attend uniformly instead
            of producing NaN.
        replaces_attention: the method's ``attention_kernel`` never declines
            (it has no ``logit_bias`` equivalent, e.g. keys from other heads):
            it cannot share a block with ``transform_probs``/``value_term``
            methods, nor return pre-softmax logits.
    """

    name: ClassVar[str] = ""
    Options: ClassVar[Type[MethodOptions]] = MethodOptions
    supported_attention: ClassVar[FrozenSet[str]] = frozenset(ATTENTION_TYPES)
    needs_probs: bool = False
    masks_rows: ClassVar[bool] = False
    replaces_attention: ClassVar[bool] = False
    input_in_residual: ClassVar[bool] = False

    def __init__(self, options: MethodOptions, spec: AttentionSpec):
        super().__init__()
        self.options = options
        self.spec = spec

    def transform_input(self, x: Tensor, key_padding_mask: Optional[Tensor]) -> Tensor:
        """Self-attention only: map the input (T, B, C) before the q/k/v projections (e.g. a convolution stack).

        ``key_padding_mask`` is (B, T), True at padding, or None. Called on the
        whole sequence: the core refuses it in incremental decoding. With
        ``input_in_residual`` the core also returns ``x' - x`` with the attention
        output, so that the layer's residual carries ``x'`` (layers in front of
        the attention rather than a side branch of it).
        """
        return x

    def logit_bias(self, ctx: "AttentionContext") -> Optional[Tensor]:
        """Additive term broadcastable to (batch, heads, tgt_len, src_len)."""
        return None

    def transform_probs(self, ctx: "AttentionContext", probs: Tensor) -> Tensor:
        """Post-softmax reweighting of (batch, heads, tgt_len, src_len) probabilities."""
        return probs

    def value_term(self, ctx: "AttentionContext", probs: Tensor) -> Optional[Tensor]:
        """Extra per-head output (batch, heads, tgt_len, head_dim) from the (dropped-out) probabilities."""
        return None

    def mix_output(self, ctx: "AttentionContext", out: Tensor, attend) -> Tensor:
        """Combine the per-head output (batch, heads, tgt_len, head_dim) with other patterns."""
        return out

    def attention_kernel(
        self, ctx: "AttentionContext", bias: Optional[Tensor], need_probs: bool, dropout: Callable[[Tensor], Tensor]
    ) -> Optional[Tuple[Tensor, Optional[Tensor]]]:
        """Replace score -> softmax -> weighted sum: (output (B, H, T, d), probabilities or None), or None to decline.

        ``dropout`` is the attention dropout to apply to the probabilities.
        """
        return None

    def extra_repr(self) -> str:
        return f"{self.spec.attn_type} layer {self.spec.layer}: {self.options}"

    @classmethod
    def overrides(cls, hook: str) -> bool:
        return getattr(cls, hook) is not getattr(LocalityMethod, hook)


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


def option_attr(method: str, option: str) -> str:
    """The argparse/Hydra attribute holding ``option`` of ``method``."""
    return f"{method}_{option}"


def _flag_type(fld: dataclasses.Field):
    kind = fld.type if not isinstance(fld.type, str) else {"str": str, "int": int, "float": float, "bool": bool}[fld.type]
    return parse_bool if kind is bool else kind


def add_method_args(parser: argparse.ArgumentParser, cls: Type[LocalityMethod]) -> None:
    """Add ``--<name>-<option>`` flags for every option of ``cls``.

    No argparse defaults are set (fairseq suppresses them for model args), so
    architecture functions can fill in defaults; see :func:`fill_method_defaults`.
    """
    for fld in dataclasses.fields(cls.Options):
        flag = "--" + option_attr(cls.name, fld.name).replace("_", "-")
        kwargs = dict(type=_flag_type(fld), metavar=fld.name.upper(), help=f"{fld.metadata.get('help', '')} (default: {fld.default})")
        if "choices" in fld.metadata:
            kwargs["choices"] = fld.metadata["choices"]
        parser.add_argument(flag, **kwargs)


def fill_method_defaults(args: Any, cls: Type[LocalityMethod]) -> None:
    """Set every missing option attribute of ``cls`` on ``args`` to its default."""
    for fld in dataclasses.fields(cls.Options):
        attr = option_attr(cls.name, fld.name)
        if getattr(args, attr, None) is None:
            setattr(args, attr, fld.default)


def read_method_options(args: Any, cls: Type[LocalityMethod]) -> MethodOptions:
    """Build and validate ``cls.Options`` from ``args`` (argparse namespace, config or dict-like)."""
    values = {}
    for fld in dataclasses.fields(cls.Options):
        value = getattr(args, option_attr(cls.name, fld.name), None)
        if value is None:
            value = fld.default
        try:
            value = _flag_type(fld)(value)
        except (TypeError, ValueError, argparse.ArgumentTypeError) as err:
            raise LocalityConfigError(f"--{cls.name.replace('_', '-')}-{fld.name.replace('_', '-')}: {err}") from None
        choices = fld.metadata.get("choices")
        if choices is not None and value not in choices:
            raise LocalityConfigError(
                f"--{cls.name.replace('_', '-')}-{fld.name.replace('_', '-')}: {value!r} is not one of {', '.join(map(str, choices))}"
            )
        values[fld.name] = value
    options = cls.Options(**values)
    options.validate(cls.name.replace("_", "-"))  # validate() spells flags: --<method>-<option>
    return options


class BiasFreeLinear(nn.Linear):
    """``y = x W^T``, registering no ``bias`` entry at all.

    fairseq's trainer catalogues parameters by identity, so every ``None``
    bias of ``nn.Linear(bias=False)`` looks like one shared parameter and is
    logged as "detected shared parameter" for each pair.
    """

    def __init__(self, in_features: int, out_features: int):
        super().__init__(in_features, out_features, bias=False)
        del self._parameters["bias"]
        self.bias = None


def large_negative(dtype: torch.dtype) -> float:
    """A finite 'minus infinity' for soft biases: exp() of it is 0 but sums of a few stay finite."""
    return -1e4 if dtype in (torch.float16, torch.bfloat16) else -1e9
