"""Block self-attention: the "Block" baseline of Yang et al. (2019) Table 1, after Shen et al. (2018b),
"Bi-Directional Block Self-Attention for Fast and Memory-Efficient Sequence Modeling" (Bi-BloSAN), ICLR.

Two forms (``--block-form``). Both split the sentence into blocks of r tokens, attend within each block,
summarise every block into one vector, attend between the block summaries, and bring the block context
back to every token; they differ in how.

**release** (default): the block attention of Yang et al.'s released code (baosongyang/Context-Aware-SAN,
``layers/attention_block.py`` ``multihead_attention``, lines 277-389, the block steps 336-382), which its
``models/transformer_block.py`` uses in every encoder layer (lines 51-63; the decoder keeps the standard
attention, lines 94-127) with blocks of 4 tokens (the sequence padded to a multiple of 4, ``transformer_block.py``
lines 159-164; the reshapes to ``[..., L/4, 4, d]``, ``attention_block.py`` lines 340-350). Per head h
(d = C / H), with the layer's own q, k, v (release variable and line on the right):

    u_i   = sum_{j in block(i)} softmax_j(q_i k_j / sqrt(d)) v_j        intra-block attention (352-354)
    g_i   = sigmoid(W_g [u_i]_heads + b_g)                             C -> C, q2_transform (355)
    a_i   = W_a g_i + b_a                                              C -> H, one score per head, logit2_transform (357)
    s_l   = sum_{j in block l} softmax_j(a_j,h) u_j                    block summary per head (357-359)
    o_l   = sum_m softmax_m((W_s [s_l] + b_s)_h s_m / sqrt(d)) s_m     inter-block attention, v_q_transform (361-364)
    G_l   = sigmoid(W_G [s_l; o_l] + b_G)                              2C -> C gate, G_transform (365-367)
    e_l   = G_l o_l + (1 - G_l) s_l                                    (368)
    out_i = W_o [u_i; e_block(i)] + b_o                                2C -> C, output_transform (370-380)

The output map reads the token's intra-block output and its block's context side by side (2C inputs; the
Transformer's reads C): here the layer's own output projection takes u_i and a bias-free C x C map ``W_e``
(the block half of the release's W_o, :meth:`BlockSelfAttention.output_term`) adds W_e e_block(i) after it,
which is the release's sum W_o [u; e] column for column. Where the release lets padding in (the
summary softmax over all 4 slots of the last block, the inter-block attention over padding blocks), padding
is masked here, so that it changes nothing.

**blosan**: Bi-BloSAN's own recipe (the form this method first had), on the shared multi-head attention:

    block(i) = floor(i / r),  r = ceil((2 n)^(1/3))                   block length, n the sentence length
    u_i = sum_{j: block(j) = block(i)} softmax_j(q_i k_j / sqrt(d)) v_j   intra-block attention (per head)
    a_j = W_2 ELU(W_1 u_j + b_1) + b_2                                 multi-dimensional source2token scores
    s_l = sum_{j in block l} softmax_j(a_j) * u_j                      block summary (softmax per feature)
    e_l = sum_m softmax_m(s_l s_m / sqrt(d)) s_m                       inter-block attention (per head)
    [f_i; g_i] = W_f [v_i; u_i; e_block(i)] + b_f                      context fusion
    o_i = sigmoid(g_i) * ELU(f_i) + (1 - sigmoid(g_i)) * v_i           fusion gate

The block length r = ceil((2n)^(1/3)) (``--block-length 0``) is the memory-optimal choice of Bi-BloSAN's
released code (``context_fusion.py``: ``block_len = ceil((2 sl)^(1/3))``), computed here from each sentence's
real length so that padding changes nothing. The steps and the ELU are those of its
``simple_block_attention``; its two-layer summary (multi-dimensional source2token attention of DiSAN, Shen
et al. 2018a) is ``--block-summary mlp``, the released block code's one linear map ``--block-summary
linear``. "Bi-directional": with ``--block-directional true`` heads 1..H/2 attend backward (j <= i, blocks
m <= l) and the others forward (j >= i, m >= l), Bi-BloSAN's forward and backward masks spread over the
heads as for Bi_Direct; each token keeps itself. The intra-block attention is the layer's own multi-head
attention under a block mask, the inter-block attention runs the same scaled dot product over the heads of
the block summaries (no projections of its own), and the fused output goes through the layer's output
projection. Bi-BloSAN as it was here: ``--block-form blosan --block-layers 1-3 --block-length 0
--block-directional true``.

Encoder self-attention only in both forms: a block summary reads every token of its block, which a causal
decoder cannot.

Under FlexAttention the intra-block attention is the kernel's: a score_mod keeps the keys of the query's own
block (-inf elsewhere), and since a block holds at most r tokens, the band |i - j| <= r - 1 (cached per length
bucket) lets the kernel skip every key block beyond it; summaries, inter-block attention and fusion run after it.

Parameters per layer at Transformer-Base (C = 512, H = 8): release W_g, W_s (2 x (C^2 + C)), W_a (C H + H),
W_G (2 C^2 + C) and W_e (C^2), 5 C^2 + 3 C + C H + H = 1,316,360: 7.898M in all six encoder layers (3.949M in
the lower three) against +6.0M in Yang et al. (2019) Table 1; blosan W_1, W_2 (2 x (C^2 + C)) and W_f (3C x 2C
+ 2C), 2,099,200: 6.298M over the lower three layers (``--block-summary linear``: 5.510M). See
docs/baselines.md.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..attention.errors import LocalityConfigError
from ..attention.fusion import Band, FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method

SUMMARIES = ("mlp", "linear")
FORMS = ("release", "blosan")


@dataclass
class BlockOptions(MethodOptions):
    layers: str = field(default="all", metadata={"help": "1-based layers (the authors' release, models/transformer_block.py "
                                                        "lines 51-63: every encoder layer; blosan as first built here: 1-3)"})
    attention: str = field(default="encoder", metadata={"help": "attention types: encoder only"})
    form: str = field(default="release", metadata={"help": "release: the block attention of the authors' release "
                                                          "(baosongyang/Context-Aware-SAN layers/attention_block.py); blosan: "
                                                          "Bi-BloSAN's summary and fusion gate (docs/baselines.md)", "choices": FORMS})
    length: int = field(default=4, metadata={"help": "block length r (the release's 4, layers/attention_block.py lines "
                                                     "340-350); 0: ceil((2n)^(1/3)) per sentence of n tokens (Bi-BloSAN's code)"})
    summary: str = field(default="mlp", metadata={"help": "blosan form: block summary scores mlp (W_2 ELU(W_1 u), DiSAN's "
                                                         "multi-dimensional source2token) or linear (W u, Bi-BloSAN's block code)",
                                                 "choices": SUMMARIES})
    directional: bool = field(default=False, metadata={"help": "blosan form: half of the heads attend backward, half forward "
                                                               "(Bi-BloSAN's two directions); the release attends both ways"})

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.length < 0:
            raise LocalityConfigError(f"--{method}-length must be >= 0 (0: automatic), got {self.length}")
        if self.form == "release" and self.directional:
            raise LocalityConfigError(f"--{method}-directional is a blosan option: the release's block attention "
                                      f"attends both ways within a block (--{method}-form blosan for Bi-BloSAN's directions)")


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
        dim, heads = spec.embed_dim, spec.num_heads
        if options.form == "release":  # layers/attention_block.py lines 355, 357, 361, 367, 379
            self.token_gate = nn.Linear(dim, dim)  # W_g, b_g ("q2_transform")
            self.token_score = nn.Linear(dim, heads)  # W_a, b_a ("logit2_transform")
            self.summary_query = nn.Linear(dim, dim)  # W_s, b_s ("v_q_transform")
            self.block_gate = nn.Linear(2 * dim, dim)  # W_G, b_G ("G_transform")
            self.block_output = nn.Linear(dim, dim, bias=False)  # W_e: the block half of "output_transform"
            layers = (self.token_gate, self.token_score, self.summary_query, self.block_gate, self.block_output)
        else:
            if options.summary == "mlp":
                self.summary_hidden = nn.Linear(dim, dim)  # W_1, b_1
            self.summary_score = nn.Linear(dim, dim)  # W_2, b_2 (or W of the linear summary)
            self.fusion = nn.Linear(3 * dim, 2 * dim)  # W_f, b_f
            layers = (getattr(self, "summary_hidden", None), self.summary_score, self.fusion)
        for layer in layers:
            if layer is not None:
                nn.init.xavier_uniform_(layer.weight)
                if layer.bias is not None:
                    nn.init.zeros_(layer.bias)
        backward = torch.arange(heads) < heads // 2
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

    def flex_terms(self, ctx) -> FlexTerms:
        """The intra-block mask per score (same block, and direction), and the band of the longest block."""
        ids = self.block_ids(ctx)  # (B, S), -1 at padding
        query_ids = ids[:, -ctx.tgt_len:]
        keys, queries = ctx.key_positions, ctx.query_positions
        backward = self.backward.view(-1) if self.options.directional else None

        def own_block(score, b, h, q_idx, kv_idx):
            block = query_ids[b, q_idx]
            hidden = (block != ids[b, kv_idx]) | (block < 0)
            if backward is not None:
                distance = keys[b, kv_idx] - queries[b, q_idx]  # j - i
                hidden = hidden | torch.where(backward[h], distance > 0, distance < 0)
            return torch.where(hidden, float("-inf"), score)

        # r of the longest possible sentence bounds every block (computed on the CPU: no device sync)
        longest = int(block_lengths(torch.tensor([ctx.src_len]), self.options.length).item())
        return FlexTerms(score_mod=own_block, band=Band(longest - 1, longest - 1))

    def summaries(self, ctx, u: Tensor, scores: Optional[Tensor] = None) -> Tensor:
        """s_l (B, L, C): per-feature softmax over each block's tokens of the scores (B, T, C): blosan's a_j by
        default; the release passes its per-head scores repeated over each head's features."""
        ids = self.block_ids(ctx)
        num_blocks = int(ids.max().item()) + 1
        if scores is None:
            hidden = F.elu(self.summary_hidden(u)) if self.options.summary == "mlp" else u
            scores = self.summary_score(hidden)  # a_j, (B, T, C)
        scores = scores.float()
        slot = ids.masked_fill(ids < 0, num_blocks).unsqueeze(-1).expand_as(scores)  # padding -> spare slot
        shape = (scores.size(0), num_blocks + 1, scores.size(2))
        peak = scores.new_full(shape, float("-inf")).scatter_reduce(1, slot, scores, "amax", include_self=True)
        weights = (scores - peak.gather(1, slot)).exp()
        total = scores.new_zeros(shape).scatter_add(1, slot, weights)
        weighted = scores.new_zeros(shape).scatter_add(1, slot, weights * u.float())
        return (weighted / total.clamp_min(1e-30))[:, :num_blocks].to(u.dtype)

    def inter_block(self, ctx, s: Tensor, queries: Optional[Tensor] = None) -> Tensor:
        """e_l (B, H, L, d): scaled dot-product attention between the block summaries, per head; the queries are the
        summaries themselves (blosan) or their own map of them (release)."""
        batch, num_blocks, _ = s.shape
        split = lambda x: x.view(batch, num_blocks, self.spec.num_heads, -1).transpose(1, 2)  # noqa: E731  (B, H, L, d)
        heads = split(s)
        ids = self.block_ids(ctx)
        present = F.one_hot(ids.clamp_min(0), num_blocks).mul(ids.ge(0).unsqueeze(-1)).amax(dim=1).bool()  # (B, L)
        order = torch.arange(num_blocks, device=s.device)
        hidden = ~present[:, None, None, :] | self._direction_mask((order[None, :] - order[:, None])[None, None])
        bias = torch.zeros(hidden.shape, dtype=s.dtype, device=s.device).masked_fill(hidden, float("-inf"))
        bias = bias.masked_fill(torch.isneginf(bias).all(dim=-1, keepdim=True), 0.0)  # empty blocks are never read
        query = heads if queries is None else split(queries)
        return F.scaled_dot_product_attention(query, heads, heads, attn_mask=bias, scale=ctx.scaling)

    def mix_output(self, ctx, out: Tensor, attend) -> Tensor:
        batch, heads, length, head_dim = out.shape
        merge = lambda x: x.transpose(1, 2).reshape(batch, x.size(2), heads * head_dim)  # noqa: E731
        u = merge(out)  # intra-block output, (B, T, C)
        ids = self.block_ids(ctx)[:, -length:].clamp_min(0)
        if self.options.form == "release":
            gate = torch.sigmoid(self.token_gate(u))  # g_i
            per_head = self.token_score(gate)  # a_i, (B, T, H): one score per head
            s = self.summaries(ctx, u, per_head.repeat_interleave(head_dim, dim=-1))  # (B, L, C)
            o = merge(self.inter_block(ctx, s, queries=self.summary_query(s)))  # (B, L, C)
            block_gate = torch.sigmoid(self.block_gate(torch.cat([s, o], dim=-1)))  # G_l
            e = block_gate * o + (1 - block_gate) * s  # e_l, (B, L, C)
            ctx.record("block_gate", block_gate)
            e_tokens = e.gather(1, ids.unsqueeze(-1).expand(-1, -1, e.size(-1)))  # e_block(i), (B, T, C)
            ctx.memo(self, "block_context", lambda: e_tokens)
            return out  # the layer's output projection reads u_i; output_term adds W_e e_block(i)
        values = merge(ctx.v[:, :, -length:])  # v_i
        s = self.summaries(ctx, u)
        e = self.inter_block(ctx, s)  # (B, H, L, d)
        e_tokens = merge(e.gather(2, ids[:, None, :, None].expand(-1, heads, -1, head_dim)))  # e_block(i)
        f, g = self.fusion(torch.cat([values, u, e_tokens], dim=-1)).chunk(2, dim=-1)
        gate = torch.sigmoid(g)
        ctx.record("block_gate", gate)
        fused = gate * F.elu(f) + (1 - gate) * values
        return fused.view(batch, length, heads, head_dim).transpose(1, 2)

    def output_term(self, ctx) -> Optional[Tensor]:
        """release: W_e e_block(i) (B, T, C), the block half of the release's 2C -> C output map, added after the
        layer's output projection of u_i; blosan: nothing."""
        if self.options.form != "release":
            return None
        return self.block_output(ctx.memo(self, "block_context", lambda: None))
