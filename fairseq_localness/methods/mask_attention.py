"""Mask attention: Fan et al. (2021), "Mask Attention Networks: Rethinking and Strengthen Transformer", NAACL.

Equation numbers refer to the paper. A mask attention network (MAN) weighs
the attention scores with a mask matrix M in [0, 1] before normalising:

    S_M(Q, K)[t, s] = M[t, s] exp(Q_t K_s^T / sqrt(d)) / sum_s' M[t, s'] exp(Q_t K_s'^T / sqrt(d))   (Eq. 4)

which is softmax(Q K^T / sqrt(d) + log M): the mask enters the shared
attention core as the logit bias log M. SAN is the case M = 1 and FFN the
case M = I (Eq. 6-9, see ``layers/man.py``). The two learnable or
hand-made masks of the paper:

    SMAN  (static):   M[t, s] = 1 if |t - s| <= b else 0                            (Eq. 11)
                      b = sqrt(L) / 2 (SMAN1) or a fixed b (SMAN2)
    DMAN  (dynamic):  M^l_i[t, s] = sigmoid(h^l_t W^l + P^l_{t-s} + U^l_i)          (Eq. 12)

h^l_t is the sub-layer's input at the query token t, W^l a d -> 1 projection,
P^l one learned scalar per relative distance t - s (shared by the heads) and
U^l_i one scalar per head i. Positions count real tokens only, so padding
changes nothing. log M is clamped at a finite floor (``large_negative``): a
zero of the mask then removes a key exactly (exp underflows to 0) without
-inf, so no row can turn into NaN in fp32, fp16 or bf16.

Under FlexAttention log M is added score by score: DMAN's from h_t W (B, T), P
and U, never as a (B, H, T, S) tensor; SMAN's band from b per query, with the
widest band the sentence allows (b <= sqrt(S)/2, or the fixed b) as a block
mask cached per length bucket, so the kernel skips the key blocks beyond it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.fusion import Band, FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method
from ..attention.tensors import large_negative, offset_rows

SELF_ATTENTION = frozenset({"encoder", "decoder"})
SMAN_WINDOWS = ("sqrt", "fixed")


@dataclass
class DMANOptions(MethodOptions):
    layers: str = field(default="all", metadata={"help": "1-based layers (paper: every layer)"})
    attention: str = field(
        default="encoder,decoder",
        metadata={"help": "self-attention types: encoder, decoder (Eq. 12 is defined for self-attention)"},
    )
    min_mask: float = field(
        default=0.0,
        metadata={"help": "clamp M >= MIN_MASK before the log; 0 keeps Eq. 12 exact up to the dtype's floor "
                  "(paper), 1e-10 is the authors' code (also stops gradients below it)"},
    )

    def validate(self, method: str) -> None:
        super().validate(method)
        if not 0.0 <= self.min_mask < 1.0:
            raise LocalityConfigError(f"--{method}-min-mask must be in [0, 1), got {self.min_mask}")


@register_locality_method("dman")
class DynamicMask(LocalityMethod):
    """Dynamic mask attention (Fan et al. 2021, Eq. 12): a learned, query- and distance-dependent soft mask."""

    Options = DMANOptions
    supported_attention = SELF_ATTENTION

    def __init__(self, options: DMANOptions, spec):
        super().__init__(options, spec)
        # decoder self-attention only sees t - s >= 0: no parameters for distances it never uses
        self.causal = spec.attn_type == "decoder"
        self.max_distance = spec.max_positions - 1
        distances = spec.max_positions if self.causal else 2 * spec.max_positions - 1
        self.context_weight = nn.Parameter(torch.empty(spec.embed_dim))  # W^l (d -> 1)
        self.distance_bias = nn.Parameter(torch.empty(distances))  # P^l_{t-s}, shared across heads
        self.head_bias = nn.Parameter(torch.empty(spec.num_heads))  # U^l_i
        # the paper gives no initialisation; these follow the authors' code
        bound = math.sqrt(6.0 / (spec.embed_dim + 1))  # xavier-uniform of a 1 x d matrix
        nn.init.uniform_(self.context_weight, -bound, bound)
        nn.init.normal_(self.distance_bias)
        nn.init.normal_(self.head_bias)

    def distance_rows(self, ctx) -> Tensor:
        """P_{t-s} for every query and key, (T, S); distances beyond the table share its last entry.

        By index within the padded batch: fairseq pads each sentence on one side only, so between real tokens
        the index offset is the position offset, and padding keys are masked. One entry per offset, spread into
        rows (``offset_rows``): P's gradient is then a dense sum rather than a scatter over B x T x S indices.
        """
        offsets = torch.arange(1 - ctx.src_len, ctx.src_len, device=self.distance_bias.device)  # s - t
        lowest = 0 if self.causal else -self.max_distance
        per_offset = self.distance_bias[(-offsets).clamp(lowest, self.max_distance) - lowest]  # (2S - 1,)
        return offset_rows(per_offset, ctx.tgt_len)

    def logit_bias(self, ctx) -> Tensor:
        context = torch.matmul(ctx.query_input, self.context_weight.to(ctx.query_input.dtype))  # h_t W, (B, T)
        per_query = context.unsqueeze(-1) + self.distance_rows(ctx)  # + P_{t-s}, (B, T, S)
        # keeping both summands >= floor / 2 keeps log sigmoid(sum) >= floor (finite in every dtype)
        # without another pass over the (B, H, T, S) tensor; it only moves values whose exp() is 0 anyway
        half_floor = large_negative(ctx.q.dtype) / 2
        logits = per_query.clamp_min(half_floor).unsqueeze(1) + self.head_bias.clamp_min(half_floor).view(1, -1, 1, 1)
        log_mask = F.logsigmoid(logits)  # log M (Eq. 12), computed without overflow, as Eq. 4 needs it
        if self.options.min_mask > 0:
            log_mask = log_mask.clamp_min(math.log(self.options.min_mask))  # the authors' M >= 1e-10
        ctx.record("dman_log_mask", log_mask)
        return log_mask

    def flex_terms(self, ctx) -> FlexTerms:
        """log M (Eq. 12) of one score, from h_t W (B, T), P_{t-s} and U_i: the same steps as ``logit_bias``."""
        context = torch.matmul(ctx.query_input, self.context_weight.to(ctx.query_input.dtype))  # h_t W, (B, T)
        half_floor = large_negative(ctx.q.dtype) / 2
        head = self.head_bias.clamp_min(half_floor)  # U_i
        distance_bias, keys, queries = self.distance_bias, ctx.key_positions, ctx.query_positions
        highest = self.max_distance
        lowest = 0 if self.causal else -highest
        min_log = math.log(self.options.min_mask) if self.options.min_mask > 0 else None

        def log_mask(score, b, h, q_idx, kv_idx):
            distance = (queries[b, q_idx] - keys[b, kv_idx]).clamp(lowest, highest) - lowest  # t - s
            per_query = (context[b, q_idx] + distance_bias[distance]).clamp_min(half_floor)
            value = F.logsigmoid(per_query + head[h])
            if min_log is not None:
                value = value.clamp_min(min_log)
            return score + value.to(score.dtype)

        return FlexTerms(score_mod=log_mask)


@dataclass
class SMANOptions(MethodOptions):
    layers: str = field(default="all", metadata={"help": "1-based layers (paper: every layer)"})
    attention: str = field(
        default="encoder,decoder", metadata={"help": "self-attention types: encoder, decoder"},
    )
    window: str = field(
        default="sqrt",
        metadata={"help": "half-width b of the band: sqrt (SMAN1, b = sqrt(L)/2 with L the sentence length; "
                  "the prefix length in decoder self-attention) or fixed (SMAN2, b = --sman-width)",
                  "choices": SMAN_WINDOWS},
    )
    width: float = field(default=4.0, metadata={"help": "b of the fixed window (SMAN2); 0 gives M = I"})

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.width < 0:
            raise LocalityConfigError(f"--{method}-width must be >= 0, got {self.width}")


@register_locality_method("sman")
class StaticMask(LocalityMethod):
    """Static band mask (Fan et al. 2021, Eq. 11): attend to keys within b tokens, b = sqrt(L)/2 or fixed."""

    Options = SMANOptions
    supported_attention = SELF_ATTENTION

    def half_width(self, ctx) -> Tensor:
        """b per query, (B, T, 1)."""
        if self.options.window == "sqrt":
            # L is what the query can see: the source length, or the prefix length when decoding,
            # so that step-by-step decoding computes the same mask as the full forward
            return (ctx.visible_lengths.float().sqrt() / 2).unsqueeze(-1)
        return torch.full((1, 1, 1), float(self.options.width), device=ctx.q.device)

    def logit_bias(self, ctx) -> Tensor:
        inside = ctx.relative_positions.abs() <= self.half_width(ctx)  # (B, T, S), Eq. 11
        log_mask = torch.zeros(inside.shape, dtype=ctx.q.dtype, device=ctx.q.device)
        log_mask = log_mask.masked_fill(~inside, large_negative(ctx.q.dtype)).unsqueeze(1)  # same for every head
        ctx.record("sman_log_mask", log_mask)
        return log_mask

    def flex_terms(self, ctx) -> FlexTerms:
        """Eq. 11 per score, and the widest band as a block mask: b <= sqrt(S)/2 (SMAN1) or the fixed b (SMAN2)."""
        per_query = self.options.window == "sqrt"
        half_width = self.half_width(ctx)[..., 0] if per_query else None  # b per query, (B, T)
        fixed, floor = float(self.options.width), large_negative(ctx.q.dtype)
        keys, queries = ctx.key_positions, ctx.query_positions

        def band(score, b, h, q_idx, kv_idx):
            width = half_width[b, q_idx] if per_query else fixed
            inside = (keys[b, kv_idx] - queries[b, q_idx]).abs() <= width
            return torch.where(inside, score, score + floor)

        widest = math.sqrt(ctx.src_len) / 2 if per_query else self.options.width
        return FlexTerms(score_mod=band, band=Band(int(widest), int(widest)))
