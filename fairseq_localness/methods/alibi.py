"""ALiBi: Press, Smith and Lewis (2022), "Train Short, Test Long: Attention with Linear Biases Enables Input Length
Extrapolation", ICLR.

The paper adds no position embeddings; each head h of every layer adds a fixed linear penalty to its logits
(Section 3; we cite no equation number):

    softmax(q_i K^T + m_h * [-(i - 1), ..., -2, -1, 0])        i.e.   b_ij = -m_h (i - j),  j <= i   (causal)

Head slopes (Section 3): the geometric sequence that starts at 2^(-8/H) and has that ratio,

    m_h = 2^(-8h / H),  h = 1..H                                 (8 heads: 1/2, 1/4, ..., 1/256)

For H not a power of two the paper's released code (``get_slopes``, repeated in KERPLE's code) takes the
H' = 2^floor(log2 H) slopes of H' heads, then every other slope of 2H' heads, 2^(-8(2k - 1) / (2H')) for
k = 1..H - H', appended after them in head order: values that interleave with the first H' slopes, the first of
them, 2^(-4/H'), above them all (12 heads: 0.707, 0.354, 0.177, 0.088 after 1/2 ... 1/256).

Our readings: in the bidirectional encoder (the paper has causal language models only) the penalty is symmetric,
b_ij = -m_h |i - j|; cross attention has no i - j (queries and keys are different sequences) and is refused.
Positions count real tokens (padding ignored), so incremental decoding and padded batches see the same biases.
Without position embeddings (the architecture's default, as in the paper) a symmetric encoder cannot tell a
sentence from its reversal; docs/methods/modern.md says more.

Under FlexAttention the penalty is added score by score from the H slopes (no (B, H, T, S) tensor).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import List

import torch
from torch import Tensor

from ..attention.errors import LocalityConfigError
from ..attention.fusion import FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method


def alibi_slopes(heads: int) -> List[float]:
    """m_1..m_H: 2^(-8h/H) for a power of two H, else the closest lower power's slopes and every other of 2H'."""
    if heads < 1:
        raise ValueError(f"ALiBi needs at least one head, got {heads}")
    if heads & (heads - 1) == 0:
        return [2.0 ** (-8.0 * h / heads) for h in range(1, heads + 1)]
    lower = 2 ** int(math.floor(math.log2(heads)))
    return alibi_slopes(lower) + alibi_slopes(2 * lower)[0::2][: heads - lower]


@dataclass
class AlibiOptions(MethodOptions):
    layers: str = field(default="all", metadata={"help": "1-based layers (paper: every layer)"})
    attention: str = field(
        default="encoder,decoder",
        metadata={"help": "self-attention types: encoder (symmetric -m|i-j|, our reading), decoder (the paper's causal "
                  "-m(i-j)); cross attention is not defined"},
    )

    def validate(self, method: str) -> None:
        super().validate(method)
        if "cross" in self.attention_types():
            raise LocalityConfigError(
                f"--{method}-attention: ALiBi is not defined for cross attention: its bias -m(i - j) compares a "
                "query's and a key's positions in one sequence, and cross attention's come from two; use encoder "
                "and/or decoder"
            )


@register_locality_method("alibi")
class Alibi(LocalityMethod):
    """b_ij = -m_h (i - j) in causal decoder self-attention, -m_h |i - j| in the encoder; no parameters."""

    Options = AlibiOptions
    supported_attention = frozenset({"encoder", "decoder"})

    def __init__(self, options: AlibiOptions, spec):
        super().__init__(options, spec)
        # fixed numbers, not a parameter or buffer: no checkpoint entry, and never rounded to half precision
        self.slopes = alibi_slopes(spec.num_heads)

    def logit_bias(self, ctx) -> Tensor:
        relative = ctx.relative_positions.float()  # j - i, (B, T, S)
        # causal: i - j >= 0 at every key the query may see (later keys are masked by fairseq's future mask)
        distance = -relative if ctx.causal else relative.abs()
        slopes = torch.tensor(self.slopes, dtype=torch.float32, device=relative.device)
        bias = -slopes.view(1, -1, 1, 1) * distance.unsqueeze(1)  # (B, H, T, S), float32
        return bias.to(ctx.q.dtype)

    def flex_terms(self, ctx) -> FlexTerms:
        """b_ij = -m_h (i - j) (causal) or -m_h |i - j| for one score, in float32 as ``logit_bias``."""
        slopes = torch.tensor(self.slopes, dtype=torch.float32, device=ctx.q.device)
        keys, queries, causal = ctx.key_positions, ctx.query_positions, ctx.causal

        def linear_bias(score, b, h, q_idx, kv_idx):
            relative = (keys[b, kv_idx] - queries[b, q_idx]).float()  # j - i
            distance = -relative if causal else relative.abs()
            return score + (-slopes[h] * distance).to(score.dtype)

        return FlexTerms(score_mod=linear_bias)
