"""Differentiable Window: Nguyen et al. (2020), "Differentiable Window for Dynamic Local Attention", ACL.

Equation numbers refer to the paper. A query q (the attention block's input at
its position) points at the left and right boundaries l, r of its window over
the keys K (the keys' inputs, n of them):

    phi_l = softmax(q W_L^Q (K W_L^K)^T / sqrt(d)),  phi_r likewise with W_R       (Eq. 7-8)
    m = (phi_l L) * (phi_r L^T) + (phi_r L) * (phi_l L^T)                          (Eq. 9)

L is the n x n upper-triangular matrix of ones, so (phi L)_j = P(pointer <= j)
and (phi L^T)_j = P(pointer >= j): cumulative sums, computed with ``cumsum``.
With l ~ phi_l and r ~ phi_r independent, m_j = E[1(l <= j <= r) + 1(r <= j <= l)],
the expectation of the discrete window [min(l, r), max(l, r)] (the pointers
are not ordered; a collapsed window l = r = j is counted by both terms).

Segment-based masking (Eq. 10-11) points at segments of b consecutive tokens
instead: Eq. 11 is Eq. 9 with L replaced by J_n, J_n[i, j] = 1 if
i <= b ceil(j / b) (Eq. 10), so (phi J_n)_j = P(pointer <= the last token of
j's segment) and (phi J_n^T)_j = P(pointer >= the first token of j's segment),
one value for every token of a segment. Here that is computed without J_n:
the token cumulative sum taken at the last token of j's segment, and the
reverse one at its first token.

The window M (one row m per query) enters attention in one of two ways:

    multiplicative window (MW):  A = softmax(Q K^T / sqrt(d)) * M                 (Eq. 12-13)
    additive window (AW):        A = softmax((s_glb + s_loc * M) / sqrt(d))        (Eq. 14-17)
                                 s_glb = Q W_glb^Q (K W_glb^K)^T  (the attention's own q, k)
                                 s_loc = Q W_loc^Q (K W_loc^K)^T
                                 (Eq. 14-15 print Q in place of K; K is the only reading
                                 that serves cross-attention, where M is T x S)

MW does not renormalise A by default (the paper); ``renormalize`` divides each
row by its sum (the authors' code has both). Every head has its own pointers
and local scores: the C x C projections are split into heads like q and k, and
d is the head dimension. Padding keys never receive boundary probability; in
decoder self-attention the pointers are causal (a query cannot point at a
future token), so only token-based masking is defined there.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method
from ..attention.tensors import BiasFreeLinear, large_negative

MODES = ("add", "mul")
MASKINGS = ("token", "segment")


@dataclass
class DiffWinOptions(MethodOptions):
    layers: str = field(default="1-3", metadata={"help": "1-based layers (paper: the first 3)"})
    mode: str = field(
        default="add",
        metadata={"help": "how the window enters attention: add (additive window AW, Eq. 14-17) or "
                  "mul (multiplicative window MW, Eq. 12-13)", "choices": MODES},
    )
    masking: str = field(
        default="token",
        metadata={"help": "boundary pointers over tokens (Eq. 7-9) or over segments of segment-size "
                  "tokens (Eq. 10-11); decoder self-attention is token-only", "choices": MASKINGS},
    )
    segment_size: int = field(default=5, metadata={"help": "segment size b of segment-based masking"})
    renormalize: bool = field(
        default=False,
        metadata={"help": "mul mode: divide each masked attention row by its sum (the authors' code option; "
                  "the paper does not renormalise)"},
    )

    def validate(self, method: str) -> None:
        super().validate(method)
        flag = "--" + method.replace("_", "-")  # the placement names contain underscores; their flags do not
        if self.segment_size < 1:
            raise LocalityConfigError(f"{flag}-segment-size must be >= 1, got {self.segment_size}")
        if self.renormalize and self.mode != "mul":
            raise LocalityConfigError(f"{flag}-renormalize applies to the multiplicative window only ({flag}-mode mul)")
        if self.masking == "segment" and "decoder" in self.attention_types():
            raise LocalityConfigError(
                f"{flag}-masking segment: decoder self-attention is token-based only "
                "(a decoder cannot point to unfinished segments)"
            )


def boundary_cdfs(phi: Tensor) -> tuple[Tensor, Tensor]:
    """(phi L, phi L^T): P(pointer <= j) and P(pointer >= j) along the last dim."""
    at_most = phi.cumsum(dim=-1)
    at_least = (1.0 - at_most).add_(phi)  # 1 - P(pointer < j), without a second (reversed) cumsum
    return at_most, at_least


def segment_bounds(key_positions: Tensor, segment_size: int) -> tuple[Tensor, Tensor]:
    """Indices (B, S) of the first and last key of each key's segment of ``segment_size`` tokens.

    Segments are counted from each sentence's first real token, so padding
    does not shift them; the last segment may be shorter.
    """
    offset = key_positions % segment_size
    index = torch.arange(key_positions.size(1), device=key_positions.device)
    first = index - offset
    last = (index + (segment_size - 1) - offset).clamp_max(key_positions.size(1) - 1)
    return first, last


def soft_window_mask(phi: Tensor, segments: Optional[tuple[Tensor, Tensor]] = None) -> Tensor:
    """M (B, H, T, S) from the stacked boundary distributions phi = [phi_l; phi_r] (B, 2H, T, S).

    Token-based (Eq. 9), or segment-based (Eq. 10-11) given ``segments``, the
    (first, last) key indices (B, S) of each key's segment: P(seg(l) <= seg(j))
    is P(l <= last token of j's segment) and P(seg(l) >= seg(j)) is
    P(l >= its first token), so every token of a segment gets the segment's
    value. Cumulative sums past the last real key stay constant (padding has
    zero probability), so a segment clipped at the sequence end needs no lengths.
    """
    at_most, at_least = boundary_cdfs(phi)
    if segments is not None:
        first, last = (index[:, None, None, :].expand(at_most.shape) for index in segments)
        at_most, at_least = at_most.gather(-1, last), at_least.gather(-1, first)
    left_at_most, right_at_most = at_most.chunk(2, dim=1)
    left_at_least, right_at_least = at_least.chunk(2, dim=1)
    return torch.addcmul(left_at_most * right_at_least, right_at_most, left_at_least)


class DifferentiableWindow(LocalityMethod):
    """Dynamic soft window from learned left/right boundary pointers (Nguyen et al. 2020).

    One implementation, registered once per placement (``diffwin_enc``,
    ``diffwin_cross``, ``diffwin_dec``) so that each attention type has its own
    option set and paper defaults.
    """

    Options = DiffWinOptions

    def __init__(self, options: DiffWinOptions, spec):
        super().__init__(options, spec)
        dim = spec.embed_dim
        self.additive = options.mode == "add"
        # row blocks: W_L, W_R (Eq. 7-8) and, for AW, W_loc (Eq. 15); each C x C, split into heads
        self.blocks = 3 if self.additive else 2
        self.query_proj = BiasFreeLinear(dim, self.blocks * dim)
        self.key_proj = BiasFreeLinear(spec.kdim, self.blocks * dim)
        for weight in (self.query_proj.weight, self.key_proj.weight):
            for block in weight.detach().split(dim, dim=0):
                nn.init.xavier_uniform_(block, gain=2**-0.5)  # as fairseq initialises q/k projections
        self.needs_probs = not self.additive

    def _scores(self, ctx) -> Tensor:
        """Scaled pointer (and local) scores (B, blocks*H, T, S): q W^Q (K W^K)^T / sqrt(d) per head."""
        heads, head_dim = self.spec.num_heads, self.spec.head_dim

        def split(x: Tensor) -> Tensor:  # (B, N, blocks*C) -> (B, blocks*H, N, d); B of the keys' own batch
            return x.view(x.size(0), x.size(1), self.blocks * heads, head_dim).transpose(1, 2)

        queries = split(self.query_proj(ctx.query_input)) * ctx.scaling
        keys = ctx.key_side(self.name, lambda key_input: split(self.key_proj(key_input)))
        return torch.matmul(queries, keys.transpose(-1, -2))

    def _allowed(self, ctx) -> Optional[Tensor]:
        """(B, 1, T|1, S) bool: keys a pointer may land on (real keys; causal in the decoder), None for all."""
        allowed = None if ctx.key_padding_mask is None else ~ctx.key_padding_mask[:, None, None, :]
        if ctx.causal and ctx.tgt_len > 1:
            # the queries are the last T of the S keys, so query t is key S - T + t
            key_index = torch.arange(ctx.src_len, device=ctx.q.device)
            past = (key_index[None, :] <= key_index[ctx.src_len - ctx.tgt_len :, None])[None, None]
            allowed = past if allowed is None else allowed & past
        return allowed

    def _window(self, ctx, pointer_scores: Tensor) -> Tensor:
        """Soft mask M (B, H, T, S) from the stacked left/right pointer scores (B, 2H, T, S)."""
        allowed = self._allowed(ctx)
        if allowed is not None:
            pointer_scores = pointer_scores.masked_fill(~allowed, large_negative(pointer_scores.dtype))
        phi = pointer_scores.softmax(dim=-1)
        if allowed is not None:
            dead = ~allowed.any(dim=-1, keepdim=True)
            if dead.any():
                # a query with no real key to point at: no boundary mass (softmax would spread it over padding)
                phi = phi.masked_fill(dead, 0.0)
        if ctx.records is not None:
            ctx.record(f"{self.name}_left", phi[:, : self.spec.num_heads])
            ctx.record(f"{self.name}_right", phi[:, self.spec.num_heads :])
        segments = None
        if self.options.masking == "segment":
            segments = segment_bounds(ctx.key_positions, self.options.segment_size)
        mask = soft_window_mask(phi, segments)
        ctx.record(f"{self.name}_mask", mask)
        return mask

    def flex_unfusable(self) -> Optional[str]:
        if not self.additive:
            return "the multiplicative window (Eq. 13) multiplies the probabilities after the softmax"
        # Eq. 9 needs the cumulative sums of two pointer softmaxes over all keys: M is a dense (T, S) tensor per
        # head before any score is known, so a score_mod could only read it back, and SDPA takes it directly
        return "the window M (Eq. 9) is built from cumulative sums over all keys, a dense (T, S) tensor per head"

    def window_mask(self, ctx) -> Tensor:
        """M for multiplicative use (MW)."""
        return self._window(ctx, self._scores(ctx))

    def logit_bias(self, ctx) -> Optional[Tensor]:
        """AW: s_loc * M / sqrt(d) added to the attention's own scaled logits s_glb / sqrt(d) (Eq. 17)."""
        if not self.additive:
            return None
        pointer_scores, local = self._scores(ctx).split([2 * self.spec.num_heads, self.spec.num_heads], dim=1)
        return local * self._window(ctx, pointer_scores)

    def transform_probs(self, ctx, probs: Tensor) -> Tensor:
        """MW: attention probabilities times M (Eq. 13), optionally renormalised."""
        if self.additive:
            return probs
        masked = probs * self.window_mask(ctx).to(probs.dtype)
        if self.options.renormalize:
            masked = masked / masked.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(masked.dtype).tiny)
        return masked


@dataclass
class DiffWinEncoderOptions(DiffWinOptions):
    attention: str = field(default="encoder", metadata={"help": "attention type (diffwin_enc: encoder only)"})


@dataclass
class DiffWinCrossOptions(DiffWinOptions):
    attention: str = field(default="cross", metadata={"help": "attention type (diffwin_cross: cross only)"})
    masking: str = field(
        default="segment",
        metadata={"help": "boundary pointers over tokens (Eq. 7-9) or over segments of "
                  "--diffwin-cross-segment-size tokens (Eq. 10-11; paper: segment)", "choices": MASKINGS},
    )


@dataclass
class DiffWinDecoderOptions(DiffWinOptions):
    attention: str = field(default="decoder", metadata={"help": "attention type (diffwin_dec: decoder only)"})
    mode: str = field(
        default="mul",
        metadata={"help": "how the window enters attention: add (AW, Eq. 14-17) or mul (MW, Eq. 12-13; paper: mul)",
                  "choices": MODES},
    )


@register_locality_method("diffwin_enc")
class DiffWinEncoder(DifferentiableWindow):
    """Differentiable Window in encoder self-attention (paper: Enc(AW), token masking, layers 1-3)."""

    Options = DiffWinEncoderOptions
    supported_attention = frozenset({"encoder"})


@register_locality_method("diffwin_cross")
class DiffWinCross(DifferentiableWindow):
    """Differentiable Window in encoder-decoder attention (paper: Cr(AW,Seg), segment size 5, layers 1-3)."""

    Options = DiffWinCrossOptions
    supported_attention = frozenset({"cross"})


@register_locality_method("diffwin_dec")
class DiffWinDecoder(DifferentiableWindow):
    """Differentiable Window in decoder self-attention (paper: Dec(MW), causal token pointers, layers 1-3)."""

    Options = DiffWinDecoderOptions
    supported_attention = frozenset({"decoder"})
