"""Block self-attention: the "Block" baseline of Yang et al. (2019) Table 1, after Shen et al. (2018b),
"Bi-Directional Block Self-Attention for Fast and Memory-Efficient Sequence Modeling" (Bi-BloSAN), ICLR.

Bi-BloSAN splits the sequence into blocks of r tokens, attends within each block, summarises every
block into one vector, attends between the block summaries, and fuses token, block and sentence
context with a gate. On the shared multi-head attention (values V, the layer's own projections):

    block(i) = floor(i / r),  r = ceil((2 n)^(1/3))                   block length, n the sentence length
    u_i = sum_{j: block(j) = block(i)} softmax_j(q_i k_j / sqrt(d)) v_j   intra-block attention (per head)
    a_j = W_2 ELU(W_1 u_j + b_1) + b_2                                 multi-dimensional source2token scores
    s_l = sum_{j in block l} softmax_j(a_j) * u_j                      block summary (softmax per feature)
    e_l = sum_m softmax_m(s_l s_m / sqrt(d)) s_m                       inter-block attention (per head)
    [f_i; g_i] = W_f [v_i; u_i; e_block(i)] + b_f                      context fusion
    o_i = sigmoid(g_i) * ELU(f_i) + (1 - sigmoid(g_i)) * v_i           fusion gate

The block length r = ceil((2n)^(1/3)) is the memory-optimal choice of Bi-BloSAN's released code
(``context_fusion.py``: ``block_len = ceil((2 sl)^(1/3))``), computed here from each sentence's real
length so that padding changes nothing; ``--block-length R`` fixes it. The steps and the ELU are those of
its ``simple_block_attention``; its two-layer summary (multi-dimensional source2token attention of
DiSAN, Shen et al. 2018a) is ``--block-summary mlp``, the released block code's one linear map
``--block-summary linear``. "Bi-directional": with ``--block-directional true`` (default) heads
1..H/2 attend backward (j <= i, blocks m <= l) and the others forward (j >= i, m >= l), Bi-BloSAN's
forward and backward masks spread over the heads as for Bi_Direct; each token keeps itself.

Adapted to the Transformer: the intra-block attention is the layer's own multi-head attention under a
block mask, the inter-block attention runs the same scaled dot product over the heads of the block
summaries (no projections of its own), and the fused output goes through the layer's output
projection. Encoder self-attention only: a block summary reads every token of its block, which a
causal decoder cannot.

Parameters at Transformer-Base (C = 512) per layer: W_1, W_2 (2 x 512^2 + 2 x 512) and W_f
(3C x 2C + 2C), 2.10M; 6.30M over the lower three layers against +6.0M in Yang et al. (2019) Table 1
(``--block-summary linear``: 5.51M); see docs/baselines.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..attention.registry import LocalityConfigError, LocalityMethod, MethodOptions, register_locality_method

SUMMARIES = ("mlp", "linear")


@dataclass
class BlockOptions(MethodOptions):
    layers: str = field(default="1-3", metadata={"help": "1-based layers (Yang et al. 2019 Sec. 5: the lowest three encoder layers)"})
    attention: str = field(default="encoder", metadata={"help": "attention types: encoder only"})
    length: int = field(default=0, metadata={"help": "block length r; 0: ceil((2n)^(1/3)) per sentence of n tokens "
                                                     "(Bi-BloSAN's released code)"})
    summary: str = field(default="mlp", metadata={"help": "block summary scores: mlp (W_2 ELU(W_1 u), DiSAN's multi-dimensional "
                                                         "source2token) or linear (W u, Bi-BloSAN's block code)", "choices": SUMMARIES})
    directional: bool = field(default=True, metadata={"help": "half of the heads attend backward, half forward (Bi-BloSAN's "
                                                             "two directions); false: both ways in every head"})

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.length < 0:
            raise LocalityConfigError(f"--{method}-length must be >= 0 (0: automatic), got {self.length}")


def block_lengths(lengths: Tensor, fixed: int) -> Tensor:
    """r per sentence (B,): ``fixed``, or ceil((2 n)^(1/3)) of the sentence length n."""
    if fixed > 0:
        return torch.full_like(lengths, fixed)
    # the float cube root of 2n can land just above an exact integer (e.g. 4.0000001): round it first
    return torch.ceil(torch.round((2 * lengths.double()) ** (1.0 / 3), decimals=6)).long().clamp_min(1)


@register_locality_method("block")
class BlockSelfAttention(LocalityMethod):
    """Intra-block attention, block summaries, inter-block attention and a fusion gate (Shen et al. 2018b)."""

    Options = BlockOptions
    supported_attention = frozenset({"encoder"})
    masks_rows = True  # padding queries belong to no block

    def __init__(self, options: BlockOptions, spec):
        super().__init__(options, spec)
        if options.directional and spec.num_heads % 2:
            raise LocalityConfigError(
                f"--block-directional splits the heads into a backward and a forward half; "
                f"{spec.attn_type} layer {spec.layer} has an odd number of heads ({spec.num_heads})"
            )
        dim = spec.embed_dim
        if options.summary == "mlp":
            self.summary_hidden = nn.Linear(dim, dim)  # W_1, b_1
        self.summary_score = nn.Linear(dim, dim)  # W_2, b_2 (or W of the linear summary)
        self.fusion = nn.Linear(3 * dim, 2 * dim)  # W_f, b_f
        for layer in (getattr(self, "summary_hidden", None), self.summary_score, self.fusion):
            if layer is not None:
                nn.init.xavier_uniform_(layer.weight)
                nn.init.zeros_(layer.bias)
        backward = torch.arange(spec.num_heads) < spec.num_heads // 2
        self.register_buffer("backward", backward.view(1, -1, 1, 1), persistent=False)

    def block_ids(self, ctx) -> Tensor:
        """(B, S) long: block of every key, -1 at padding; computed once per call."""
        return ctx.memo(self, "blocks", lambda: self._block_ids(ctx))

    def _block_ids(self, ctx) -> Tensor:
        r = block_lengths(ctx.key_lengths, self.options.length)
        ids = torch.div(ctx.key_positions, r.unsqueeze(1), rounding_mode="floor")
        return ids.masked_fill(~ctx.key_valid, -1)

    def _direction_mask(self, distance: Tensor) -> Tensor:
        """True where a head may not look: distance = key index - query index, (B, 1, T, S)."""
        if not self.options.directional:
            return torch.zeros_like(distance, dtype=torch.bool)
        return torch.where(self.backward, distance > 0, distance < 0)

    def logit_bias(self, ctx) -> Tensor:
        """Intra-block attention: -inf outside the query's block (and outside its direction)."""
        ids = self.block_ids(ctx)
        query_ids = ids[:, -ctx.tgt_len:]
        other_block = (query_ids.unsqueeze(2) != ids.unsqueeze(1)) | (query_ids.unsqueeze(2) < 0)  # (B, T, S)
        hidden = other_block.unsqueeze(1) | self._direction_mask(ctx.relative_positions.unsqueeze(1))
        return torch.zeros(hidden.shape, dtype=ctx.q.dtype, device=ctx.q.device).masked_fill(hidden, float("-inf"))

    def summaries(self, ctx, u: Tensor) -> Tensor:
        """s_l (B, L, C): per-feature softmax over each block's tokens of the summary scores a_j."""
        ids = self.block_ids(ctx)
        num_blocks = int(ids.max().item()) + 1
        hidden = F.elu(self.summary_hidden(u)) if self.options.summary == "mlp" else u
        scores = self.summary_score(hidden).float()  # a_j, (B, T, C)
        slot = ids.masked_fill(ids < 0, num_blocks).unsqueeze(-1).expand_as(scores)  # padding -> spare slot
        shape = (scores.size(0), num_blocks + 1, scores.size(2))
        peak = scores.new_full(shape, float("-inf")).scatter_reduce(1, slot, scores, "amax", include_self=True)
        weights = (scores - peak.gather(1, slot)).exp()
        total = scores.new_zeros(shape).scatter_add(1, slot, weights)
        weighted = scores.new_zeros(shape).scatter_add(1, slot, weights * u.float())
        return (weighted / total.clamp_min(1e-30))[:, :num_blocks].to(u.dtype)

    def inter_block(self, ctx, s: Tensor) -> Tensor:
        """e_l (B, H, L, d): scaled dot-product attention between the block summaries, per head."""
        batch, num_blocks, _ = s.shape
        heads = s.view(batch, num_blocks, self.spec.num_heads, -1).transpose(1, 2)  # (B, H, L, d)
        ids = self.block_ids(ctx)
        present = F.one_hot(ids.clamp_min(0), num_blocks).mul(ids.ge(0).unsqueeze(-1)).amax(dim=1).bool()  # (B, L)
        order = torch.arange(num_blocks, device=s.device)
        hidden = ~present[:, None, None, :] | self._direction_mask((order[None, :] - order[:, None])[None, None])
        bias = torch.zeros(hidden.shape, dtype=s.dtype, device=s.device).masked_fill(hidden, float("-inf"))
        bias = bias.masked_fill(torch.isneginf(bias).all(dim=-1, keepdim=True), 0.0)  # empty blocks are never read
        return F.scaled_dot_product_attention(heads, heads, heads, attn_mask=bias, scale=ctx.scaling)

    def mix_output(self, ctx, out: Tensor, attend) -> Tensor:
        batch, heads, length, head_dim = out.shape
        merge = lambda x: x.transpose(1, 2).reshape(batch, x.size(2), heads * head_dim)  # noqa: E731
        u = merge(out)  # intra-block output, (B, T, C)
        values = merge(ctx.v[:, :, -length:])  # v_i
        s = self.summaries(ctx, u)
        e = self.inter_block(ctx, s)  # (B, H, L, d)
        ids = self.block_ids(ctx)[:, -length:].clamp_min(0)
        e_tokens = merge(e.gather(2, ids[:, None, :, None].expand(-1, heads, -1, head_dim)))  # e_block(i)
        f, g = self.fusion(torch.cat([values, u, e_tokens], dim=-1)).chunk(2, dim=-1)
        gate = torch.sigmoid(g)
        ctx.record("block_gate", gate)
        fused = gate * F.elu(f) + (1 - gate) * values
        return fused.view(batch, length, heads, head_dim).transpose(1, 2)
