"""Locality baselines of the comparison tables of Yang et al. (2018, 2019), on the shared attention core.

Neighbor -- Sperber et al. (2018), "Self-Attentional Acoustic Models", Interspeech:
    a Gaussian bias centred on the query itself, with a learned width,
        G_ij = -(j - i)^2 / (2 sigma^2),  sigma = D / 2,  D = exp(log D_h) learned per head.

Local_Hard -- Luong et al. (2015), "Effective Approaches to Attention-based NMT", EMNLP, local-p:
    a predicted centre and a fixed window D,
        p_i = I * sigmoid(v_p^T tanh(W_p q_i))                       (Luong Eq. 9; one v_p column per head)
        a_ij = softmax_{|j - p_i| <= D}(e_ij) * exp(-(j - p_i)^2 / (2 sigma^2)),  sigma = D / 2   (Eq. 10)
    The Gaussian multiplies the probabilities inside the hard window, as in
    the paper (they no longer sum to one); ``--localhard-gaussian bias``
    adds it to the logits instead, i.e. renormalises.

Bi_Direct -- Shen et al. (2018a), "DiSAN: Directional Self-Attention Network", AAAI:
    directional masks, half of the heads backward and half forward,
        M^bw_ij = 0 if j <= i else -inf,   M^fw_ij = 0 if j >= i else -inf.
    Each token keeps attending to itself (DiSAN's masks leave the diagonal
    out, which would leave the first/last token of a head with no key at all
    in a Transformer layer without DiSAN's fusion gate).

Local_Soft is the ``gaussian`` method (Yang et al. 2018), Rel_Pos is ``relpos``; Block and Cnns are
``methods/block.py`` and ``methods/cnns.py``.

Parameter counts against the tables (Transformer-Base, lower three encoder layers; docs/baselines.md
lists every guess we tried): Neighbor adds 8 scalars per layer where Yang et al. (2019) Table 1 and
Xu et al. (2019) Table 1 print +0.4M, which no per-head width reaches; Local_Hard adds W_p and v_p,
0.80M, where both print +0.4M (Local_Soft, the same network plus U_d, prints +0.8M and counts 0.81M).
Neither paper states a smaller prediction network, so both keep their original papers' form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.fusion import FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method
from ..attention.tensors import BiasFreeLinear, large_negative
from .gaussian import gaussian_bias, gaussian_score_mod

# the paper tables apply every locality model where CSANs go: the lower three encoder layers
TABLE_LAYERS = "1-3"


@dataclass
class NeighborOptions(MethodOptions):
    layers: str = field(default=TABLE_LAYERS, metadata={"help": "1-based layers (comparison tables: encoder layers 1-3)"})
    attention: str = field(default="encoder", metadata={"help": "self-attention types: encoder, decoder"})
    window_init: float = field(default=10.0, metadata={"help": "initial window D (sigma = D / 2)"})
    per_head: bool = field(default=True, metadata={"help": "one learned window per head (else one per layer)"})

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.window_init <= 0:
            raise LocalityConfigError(f"--{method}-window-init must be > 0, got {self.window_init}")


@register_locality_method("neighbor")
class Neighbor(LocalityMethod):
    """Gaussian bias centred on the query with a learned width (Sperber et al. 2018)."""

    Options = NeighborOptions
    supported_attention = frozenset({"encoder", "decoder"})

    def __init__(self, options: NeighborOptions, spec):
        super().__init__(options, spec)
        # log-parametrised so that the window stays positive
        self.log_window = nn.Parameter(torch.full((spec.num_heads if options.per_head else 1,), math.log(options.window_init)))

    def center_and_window(self, ctx):
        """P_i = i and D = exp(log D), broadcast to (B, H or 1, T), float32."""
        # float32 (see gaussian_bias): half precision rounds positions and overflows the squares
        center = ctx.query_positions.unsqueeze(1).float()  # (B, 1, T): P_i = i
        window = self.log_window.float().exp().view(1, -1, 1)  # (1, H or 1, 1)
        return torch.broadcast_tensors(center, window)

    def logit_bias(self, ctx) -> Tensor:
        center, window = self.center_and_window(ctx)
        return gaussian_bias(ctx.key_positions, center, window, large_negative(ctx.q.dtype), dtype=ctx.q.dtype)

    def flex_terms(self, ctx) -> FlexTerms:
        center, window = self.center_and_window(ctx)
        if center.size(1) == 1:  # one window per layer: expanded over the heads, which score_mod indexes by h
            center, window = (x.expand(-1, ctx.num_heads, -1) for x in (center, window))
        return FlexTerms(score_mod=gaussian_score_mod(ctx.key_positions, center, window, large_negative(ctx.q.dtype)))


GAUSSIAN_MODES = ("multiply", "bias")


@dataclass
class LocalHardOptions(MethodOptions):
    layers: str = field(default=TABLE_LAYERS, metadata={"help": "1-based layers (comparison tables: encoder layers 1-3)"})
    attention: str = field(default="encoder", metadata={"help": "attention types: encoder, decoder, cross"})
    window: float = field(default=10.0, metadata={"help": "half-width D of the hard window [p - D, p + D] (Luong et al.: 10)"})
    gaussian: str = field(
        default="multiply",
        metadata={"help": "multiply (the probabilities by the Gaussian, Luong Eq. 10) or bias (add its log to the "
                  "logits, renormalised)", "choices": GAUSSIAN_MODES},
    )

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.window <= 0:
            raise LocalityConfigError(f"--{method}-window must be > 0, got {self.window}")


@register_locality_method("localhard")
class LocalHard(LocalityMethod):
    """Predicted centre, hard window of fixed half-width D, Gaussian sigma = D / 2 (Luong et al. 2015, local-p)."""

    Options = LocalHardOptions
    masks_rows = True  # the hard window may contain no real key

    def __init__(self, options: LocalHardOptions, spec):
        super().__init__(options, spec)
        dim = spec.embed_dim
        self.w_p = BiasFreeLinear(dim, dim)  # W_p, Eq. 9
        self.v_p = BiasFreeLinear(dim, spec.num_heads)  # v_p, one column per head
        nn.init.xavier_uniform_(self.w_p.weight)
        nn.init.xavier_uniform_(self.v_p.weight)
        self.needs_probs = options.gaussian == "multiply"

    def center(self, ctx) -> Tensor:
        """p = I * sigmoid(v_p^T tanh(W_p q)) (Eq. 9): (B, H, T), computed once per call."""
        return ctx.memo(self, "center", lambda: self._center(ctx))

    def _center(self, ctx) -> Tensor:
        length = ctx.visible_lengths.unsqueeze(-1)  # I, (B, T, 1), float32: exact positions in half precision
        center = length * torch.sigmoid(self.v_p(torch.tanh(self.w_p(ctx.query_proj))).float())
        ctx.record("localhard_center", center)
        return center.transpose(1, 2)

    def _gaussian(self, ctx, center: Tensor) -> Tensor:
        window = torch.full_like(center, self.options.window)
        return gaussian_bias(ctx.key_positions, center, window, large_negative(ctx.q.dtype), dtype=ctx.q.dtype)

    def logit_bias(self, ctx) -> Tensor:
        center = self.center(ctx)  # float32
        distance = ctx.key_positions[:, None, None, :].float() - center.unsqueeze(-1)
        outside = distance.abs() > self.options.window
        bias = torch.zeros(outside.shape, dtype=ctx.q.dtype, device=outside.device)
        bias = bias.masked_fill(outside, float("-inf"))  # the hard window
        if self.options.gaussian == "bias":
            bias = bias + self._gaussian(ctx, center)
        return bias

    def flex_unfusable(self) -> Optional[str]:
        if self.options.gaussian == "multiply":
            return "Luong's Eq. 10 multiplies the probabilities by the Gaussian after the softmax"
        if self.options.window < 1:
            # a window narrower than one position can hide every key from a real query, which the dense path
            # turns into plain attention (masks_rows) and FlexAttention into a zero output
            return "a window below one position can leave a query without keys"
        return None

    def flex_terms(self, ctx) -> FlexTerms:
        """The hard window |j - p_i| <= D as -inf in the score_mod, the Gaussian added inside it; the window's
        place moves with the predicted centre, so the blocks to skip come from [p_i - D, p_i + D] per call."""
        center, half = self.center(ctx), self.options.window  # (B, H, T) float32
        gaussian = gaussian_score_mod(ctx.key_positions, center, torch.full_like(center, half), large_negative(ctx.q.dtype))
        keys = ctx.key_positions.float()

        def hard_window(score, b, h, q_idx, kv_idx):
            inside = (keys[b, kv_idx] - center[b, h, q_idx]).abs() <= half
            return torch.where(inside, gaussian(score, b, h, q_idx, kv_idx), float("-inf"))

        return FlexTerms(score_mod=hard_window, key_window=(center - half, center + half))

    def transform_probs(self, ctx, probs: Tensor) -> Tensor:
        if self.options.gaussian != "multiply":
            return probs
        return probs * self._gaussian(ctx, self.center(ctx)).exp()  # Eq. 10


@dataclass
class BiDirectOptions(MethodOptions):
    layers: str = field(default=TABLE_LAYERS, metadata={"help": "1-based layers (comparison tables: encoder layers 1-3)"})
    attention: str = field(default="encoder", metadata={"help": "attention types: encoder only"})


@register_locality_method("bidirect")
class BiDirect(LocalityMethod):
    """Directional masks (Shen et al. 2018a): heads 1..H/2 attend backward (j <= i), the others forward (j >= i)."""

    Options = BiDirectOptions
    supported_attention = frozenset({"encoder"})

    def __init__(self, options: BiDirectOptions, spec):
        super().__init__(options, spec)
        if spec.num_heads % 2:
            raise LocalityConfigError(
                f"bidirect splits the heads into a backward and a forward half; "
                f"{spec.attn_type} layer {spec.layer} has an odd number of heads ({spec.num_heads})"
            )
        backward = torch.arange(spec.num_heads) < spec.num_heads // 2
        self.register_buffer("backward", backward.view(1, -1, 1, 1), persistent=False)

    def logit_bias(self, ctx) -> Optional[Tensor]:
        distance = ctx.relative_positions.unsqueeze(1)  # j - i, (B, 1, T, S)
        blocked = torch.where(self.backward, distance > 0, distance < 0)  # (B, H, T, S)
        return torch.zeros(blocked.shape, dtype=ctx.q.dtype, device=ctx.q.device).masked_fill(blocked, float("-inf"))

    def flex_terms(self, ctx) -> FlexTerms:
        """M^bw / M^fw per score: -inf at j > i in the backward heads, j < i in the forward ones."""
        backward = self.backward.view(-1)
        keys, queries = ctx.key_positions, ctx.query_positions

        def direction(score, b, h, q_idx, kv_idx):
            distance = keys[b, kv_idx] - queries[b, q_idx]  # j - i
            blocked = torch.where(backward[h], distance > 0, distance < 0)
            return torch.where(blocked, float("-inf"), score)

        return FlexTerms(score_mod=direction)
