"""The locality-method protocol: what a method is, what it is told, and the options every method has.

A *locality method* is one small ``nn.Module`` that reads like its paper's
equations and contributes to the shared attention path
(:class:`fairseq_localness.attention.core.LocalityAttention`) through a few
hooks (see :class:`LocalityMethod`). Its options are a :class:`MethodOptions`
dataclass; :mod:`.options` turns them into flags ``--<name>-<option>``, and
:mod:`.registry` makes a method available by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, ClassVar, FrozenSet, Optional, Tuple, Type

from torch import Tensor, nn

from .errors import LocalityConfigError
from .fusion import FlexTerms

if TYPE_CHECKING:  # pragma: no cover
    from .context import AttentionContext

#: The three places attention occurs in an encoder-decoder Transformer.
ATTENTION_TYPES = ("encoder", "decoder", "cross")


@dataclass
class MethodOptions:
    """Options every locality method has: where it is placed.

    Subclasses override the defaults with their paper's setting and add their
    own fields; ``metadata["help"]`` is the flag's help text and
    ``metadata["choices"]`` restricts its values (flags, defaults and reading:
    :mod:`fairseq_localness.attention.options`).
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
        q, k   = transform_qk(q, k, positions)               # self-attention q/k by position, before caching (RoPE)
        logits = q k^T / sqrt(d) + sum(logit_bias)          # Gaussian, band masks, log M, Shaw keys
        probs  = transform_probs(softmax(logits))            # multiplicative windows
        out    = dropout(probs) v + sum(value_term)          # Shaw values
        out    = mix_output(out, attend)                     # hybrid local/global gate
        y      = out_proj(out) + sum(output_term)            # block context beside the projection (release Block)

    ``attend(extra_bias, flex=None)`` recomputes attention over the same
    logits plus an extra bias (e.g. a local band; a tensor, or a function
    returning one so that FlexAttention need not build it), for methods that
    mix several patterns; ``flex`` is the same pattern as :class:`FlexTerms`.
    When no method needs probabilities, attention runs through
    ``flex_attention`` or ``scaled_dot_product_attention`` (the backend, see
    ``fairseq_localness.attention.backends``).

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

    Fusion (FlexAttention, :mod:`.fusion`): ``flex_terms(ctx)`` gives the
    method's ``logit_bias`` again as a ``score_mod`` (a function of one score
    reading small per-query or per-distance tensors) and/or a ``Band`` (a
    block mask cached per length bucket), so that the attention core can run
    the block through ``flex_attention`` without a dense bias.
    ``flex_unfusable()`` says why a method cannot run there (None: it can);
    the default reads the hooks: probabilities read or changed, a kernel with
    no bias equivalent, or a ``logit_bias`` without ``flex_terms``. Hooks
    outside the score -> softmax -> sum step (``transform_input``,
    ``transform_qk``, ``mix_output``, ``output_term``) run around the kernel
    and need nothing.

    Class attributes:
        Options: dataclass of the method's options (flags ``--<name>-<field>``).
        supported_attention: attention types the method is defined for.
        needs_probs: the method reads or changes attention probabilities
            (forces the explicit softmax path). Instances may change it; it
            starts True where a class overrides ``transform_probs``.
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
        if type(self).overrides("transform_probs"):
            self.needs_probs = True  # until the subclass says its transform is the identity (e.g. an option)

    def transform_input(self, x: Tensor, key_padding_mask: Optional[Tensor]) -> Tensor:
        """Self-attention only: map the input (T, B, C) before the q/k/v projections (e.g. a convolution stack).

        ``key_padding_mask`` is (B, T), True at padding, or None. Called on the
        whole sequence: the core refuses it in incremental decoding. With
        ``input_in_residual`` the core also returns ``x' - x`` with the attention
        output, so that the layer's residual carries ``x'`` (layers in front of
        the attention rather than a side branch of it).
        """
        return x

    def transform_qk(
        self, q: Tensor, k: Tensor, query_positions: Tensor, key_positions: Tensor
    ) -> Tuple[Tensor, Tensor]:
        """Self-attention only: map the projected queries (B, H, T, d) and this call's new keys (B, H, S_new, d).

        Positions are padding-aware, (B, T) and (B, S_new), counted from each
        sentence's first real token. Called before the keys join the
        incremental cache, so cached keys keep the transform of their own
        positions (and are reordered with the beam like any key); the core
        refuses a method that overrides it in cross attention.
        """
        return q, k

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

    def mixed_probs(self, ctx: "AttentionContext", probs: Tensor) -> Tensor:
        """The attention weights (batch, heads, tgt_len, src_len) that :meth:`mix_output`'s output is the weighted
        sum of, from the softmax's ``probs``: what the layer returns as its weights (and the analyses read). A mix
        that is no distribution over the keys (a projection of two outputs) returns ``probs`` as they are."""
        return probs

    def output_term(self, ctx: "AttentionContext") -> Optional[Tensor]:
        """A term (batch, tgt_len, embed_dim) added after the layer's output projection, or None."""
        return None

    def attention_kernel(
        self, ctx: "AttentionContext", bias: Optional[Tensor], need_probs: bool, dropout: Callable[[Tensor], Tensor]
    ) -> Optional[Tuple[Tensor, Optional[Tensor]]]:
        """Replace score -> softmax -> weighted sum: (output (B, H, T, d), probabilities or None), or None to decline.

        ``dropout`` is the attention dropout to apply to the probabilities.
        """
        return None

    def flex_terms(self, ctx: "AttentionContext") -> Optional[FlexTerms]:
        """This call's ``logit_bias`` as FlexAttention terms (a ``score_mod``, a ``Band``, key windows), or None for none.

        Called instead of ``logit_bias`` when the block runs through
        FlexAttention, and only if ``flex_unfusable()`` is None. Must equal
        ``logit_bias`` at every real query and key (tests/test_flex.py).
        """
        return None

    def flex_training_fallback(self) -> Optional[str]:
        """Why ``auto`` should train this method on ``sdpa`` rather than Flex, or None (the default).

        For a Flex form whose forward matches the reference but whose backward has not passed on a GPU, or
        whose training a GPU measured slower through Flex than through SDPA (docs/gpu.md): under
        ``--locality-attention-backend auto`` calls that need gradients take ``sdpa``; inference, and an
        explicit ``flex``, still run Flex.
        """
        return None

    def flex_unfusable(self) -> Optional[str]:
        """Why this method (with its options) cannot run inside FlexAttention, or None when it can.

        The default reads the hooks; methods override it to name the reason
        in their paper's terms, or to depend on their options.
        """
        cls = type(self)
        if self.needs_probs:
            return "it reads or changes the attention probabilities"
        if cls.replaces_attention:
            return "its attention_kernel has no logit-bias equivalent"
        if cls.overrides("logit_bias") and not cls.overrides("flex_terms"):
            return "it declares no FlexAttention form of its logit_bias"
        return None

    def extra_repr(self) -> str:
        return f"{self.spec.attn_type} layer {self.spec.layer}: {self.options}"

    @classmethod
    def overrides(cls, hook: str) -> bool:
        return getattr(cls, hook) is not getattr(LocalityMethod, hook)
