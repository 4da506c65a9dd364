"""Relative position representations: Shaw et al. (2018), "Self-Attention with Relative Position Representations", NAACL.

    e_ij = x_i W^Q (x_j W^K + a^K_ij)^T / sqrt(d)          (Eq. 4)
    z_i  = sum_j alpha_ij (x_j W^V + a^V_ij)                (Eq. 3)
    a^K_ij = w^K_clip(j - i, k),  a^V_ij = w^V_clip(j - i, k) (Eq. 5-6)

The 2k+1 embeddings of dimension d_head are shared by all heads of a layer,
as in the paper. The key term is a logit bias; the value term reads the
attention probabilities, bucketed by clipped distance, so it costs
O(T * (2k+1) * d) rather than gathering a T x S x d tensor.

Under FlexAttention the key term is q_i a^K / sqrt(d) per bucket, (B, H, T, 2k+1), read by each score; the
value term (Eq. 3) cannot run there: it sums a^V_ij with the probabilities, which Flex never returns. Without it
(``--relpos-values false``) the method is fused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.fusion import FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method


@dataclass
class RelativePositionOptions(MethodOptions):
    layers: str = field(default="all", metadata={"help": "1-based layers (Shaw et al.: every layer)"})
    attention: str = field(
        default="encoder,decoder", metadata={"help": "self-attention types: encoder, decoder (Shaw et al.: both)"}
    )
    max_distance: int = field(default=16, metadata={"help": "clipping distance k (Eq. 5-6)"})
    values: bool = field(default=True, metadata={"help": "also add the value term a^V (Eq. 3)"})

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.max_distance < 1:
            raise LocalityConfigError(f"--{method}-max-distance must be >= 1, got {self.max_distance}")


@register_locality_method("relpos")
class RelativePositions(LocalityMethod):
    """Clipped relative position embeddings on keys and values (Shaw et al. 2018)."""

    Options = RelativePositionOptions
    supported_attention = frozenset({"encoder", "decoder"})

    def __init__(self, options: RelativePositionOptions, spec):
        super().__init__(options, spec)
        buckets = 2 * options.max_distance + 1
        self.key_embeddings = nn.Parameter(torch.empty(buckets, spec.head_dim))  # w^K
        nn.init.xavier_uniform_(self.key_embeddings)
        if options.values:
            self.value_embeddings = nn.Parameter(torch.empty(buckets, spec.head_dim))  # w^V
            nn.init.xavier_uniform_(self.value_embeddings)
        self.needs_probs = options.values

    def buckets(self, ctx) -> Tensor:
        """clip(j - i, k) + k, (B, T, S)."""
        k = self.options.max_distance
        return ctx.relative_positions.clamp(-k, k) + k

    def logit_bias(self, ctx) -> Tensor:
        scores = torch.matmul(ctx.q * ctx.scaling, self.key_embeddings.t())  # (B, H, T, 2k+1)
        index = self.buckets(ctx).unsqueeze(1).expand(-1, ctx.num_heads, -1, -1)
        return scores.gather(-1, index)

    def flex_unfusable(self) -> Optional[str]:
        if self.options.values:
            return "Shaw's value term (Eq. 3) sums a^V_ij weighted by the probabilities, which FlexAttention never returns"
        return None

    def flex_training_fallback(self) -> Optional[str]:
        # measured: NVIDIA H200, torch 2.11 (docs/gpu.md): the backward's kernel did not compile while the clip
        # bounds were captured integers; flex_terms now reads them from a table, not yet run on a GPU
        return "its Flex backward has not yet been run on a GPU in this form (docs/gpu.md)"

    def flex_terms(self, ctx) -> FlexTerms:
        """The key term of Eq. 4, q_i a^K_ij / sqrt(d), per score from the (B, H, T, 2k+1) bucket scores."""
        scores = torch.matmul(ctx.q * ctx.scaling, self.key_embeddings.t())  # (B, H, T, 2k+1)
        k, keys, queries = self.options.max_distance, ctx.key_positions, ctx.query_positions
        # clip(j - i, k) + k for every j - i in [-(S - 1), S - 1], looked up rather than clamped in the score_mod:
        # under dynamic shapes the captured bounds -k and k became symbolic integers, which the backward's
        # kernel could not lower (torch 2.11: "'ShapeAsConstantBuffer' object has no attribute 'dtype'")
        bucket_of_offset = torch.arange(-(ctx.src_len - 1), ctx.src_len, device=ctx.q.device).clamp(-k, k) + k

        def key_term(score, b, h, q_idx, kv_idx):
            offset = keys[b, kv_idx] - queries[b, q_idx] + bucket_of_offset.size(0) // 2  # j - i + S - 1
            return score + scores[b, h, q_idx, bucket_of_offset[offset]].to(score.dtype)

        return FlexTerms(score_mod=key_term)

    def value_term(self, ctx, probs: Tensor) -> Tensor:
        if not self.options.values:
            return None
        index = self.buckets(ctx).unsqueeze(1).expand_as(probs)
        per_bucket = probs.new_zeros(*probs.shape[:3], self.value_embeddings.size(0)).scatter_add_(-1, index, probs)
        return torch.matmul(per_bucket, self.value_embeddings.to(probs.dtype))
