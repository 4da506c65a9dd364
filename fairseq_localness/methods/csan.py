"""Convolutional self-attention: Yang et al. (2019), "Convolutional Self-Attention Networks", NAACL.

1D-CSAN restricts query i of head h to a window of M keys
centred on it, and attends within the window only:

    K^h_i = {k^h_{i-(M-1)/2}, ..., k^h_{i+(M-1)/2}},  V^h_i likewise
    o^h_i = ATT(q^h_i, K^h_i) V^h_i

2D-CSAN widens the window to an M x N area over the heads
h-(N-1)/2 .. h+(N-1)/2, with one softmax over the whole area:

    K~^h_i = U_{n=h-(N-1)/2}^{h+(N-1)/2} K^n_i,  V~^h_i likewise
    o^h_i  = ATT(q^h_i, K~^h_i) V~^h_i

Both are parameter-free. Positions outside the sentence and heads outside
1..H are left out of the window: our reading of the union above, which ranges
over heads that exist (the paper does not say what happens at the first and
last head; Sec. 3.2 says only that the union combines the keys and values of
different subspaces). ``--csan2d-head-edge
wrap`` treats the heads as a circle instead, identically for keys and values
(the authors' code wraps the keys but repeats the edge head's values; that
mismatch is not reproduced).

Decoder self-attention uses a causal window: the M keys ending at the query
(``left``), or the centred window cut at the query (``centred``).

Two computations give the same result:

* dense: the window is a -inf band on the full (T, S) logits (1D: the
  method's ``logit_bias``, so it combines with every other method);
* banded: queries are cut into blocks of ``c``; block b gathers only the
  ``c + left + right`` keys its queries can see, so scores, softmax and the
  weighted sum cost O(T (c + M)) rather than O(T S) in time and memory.

``--csan*-implementation auto`` picks banded from ``banded-min-length`` keys
on (see docs/methods/yang2019-csan.md for the measured crossover; on CUDA ``auto``
runs the dense band through the core's fused attention, ``LocalityAttention.uses_kernel``). Padding must sit
at either end of a sentence (fairseq's left-padded sources, right-padded
targets): the banded layout counts distance in buffer positions.

Under FlexAttention (docs/gpu.md, "Backends") the 1D window is a band block mask,
cached per length bucket: the kernel skips the key blocks outside it. 2D-CSAN
cannot run there: its one softmax spans the keys of N heads, and a Flex score
belongs to one head.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Tuple

import torch
import torch.nn.functional as F
from torch import Tensor

from ..attention.errors import LocalityConfigError
from ..attention.fusion import Band, FlexTerms
from ..attention.protocol import LocalityMethod, MethodOptions
from ..attention.registry import register_locality_method

IMPLEMENTATIONS = ("auto", "banded", "dense")
DECODER_WINDOWS = ("left", "centred")
HEAD_EDGES = ("drop", "wrap")


@dataclass
class Csan1dOptions(MethodOptions):
    layers: str = field(default="1-3", metadata={"help": "1-based layers (paper: encoder layers 1-3)"})
    attention: str = field(default="encoder", metadata={"help": "self-attention types: encoder, decoder (paper: encoder)"})
    window: int = field(default=11, metadata={"help": "window size M in positions, odd (paper: 11)"})
    decoder_window: str = field(
        default="left",
        metadata={"help": "causal window in decoder self-attention: left (the M keys ending at the query) or "
                  "centred (the centred window cut at the query, (M-1)/2 keys back)", "choices": DECODER_WINDOWS},
    )
    implementation: str = field(
        default="auto",
        metadata={"help": "banded (cost grows with T*M), dense (a band mask on the T x S logits), or auto "
                  "(banded from --<method>-banded-min-length keys on, and dense when attention weights are "
                  "requested)", "choices": IMPLEMENTATIONS},
    )
    banded_min_length: int = field(default=128, metadata={"help": "auto: number of keys from which to use the banded computation"})
    block_size: int = field(default=32, metadata={"help": "banded: queries per block (each block gathers block + M - 1 keys)"})

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.window < 1 or self.window % 2 == 0:
            raise LocalityConfigError(f"--{method}-window must be an odd number >= 1 (a window centred on the query), got {self.window}")
        if self.banded_min_length < 1:
            raise LocalityConfigError(f"--{method}-banded-min-length must be >= 1, got {self.banded_min_length}")
        if self.block_size < 1:
            raise LocalityConfigError(f"--{method}-block-size must be >= 1, got {self.block_size}")


@dataclass
class Csan2dOptions(Csan1dOptions):
    # the dense 2D area costs N times a plain attention, so the banded layout pays off earlier than in 1D
    banded_min_length: int = field(default=64, metadata={"help": "auto: number of keys from which to use the banded computation"})
    # N = 3: the paper gives M = 11 only (Sec. 5.1, Fig. 2(b) varies N at M = 11); the authors' release reads the keys of
    # heads h-1, h, h+1 (baosongyang/Context-Aware-SAN, layers/attention_conv.py lines 262-264, the band |i - j| <= 5
    # tiled over the 3 heads at lines 274-282)
    heads: int = field(default=3, metadata={"help": "N, the number of adjacent heads in the area, odd (the authors' release: 3, "
                                                    "layers/attention_conv.py lines 262-264)"})
    head_edge: str = field(
        default="drop",
        metadata={"help": "heads beyond the first/last: drop (leave them out of the area; our reading, the paper is silent) or wrap "
                  "(circular, for keys and values alike)", "choices": HEAD_EDGES},
    )

    def validate(self, method: str) -> None:
        super().validate(method)
        if self.heads < 1 or self.heads % 2 == 0:
            raise LocalityConfigError(f"--{method}-heads must be an odd number >= 1 (an area centred on the head), got {self.heads}")


# ---------------------------------------------------------------------------------------------
# Banded layout
# ---------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BandLayout:
    """Queries in ``blocks`` blocks of ``block``; block b sees the ``width`` keys ``key_index[b]``.

    Key indices are into the key buffer padded with ``left`` slots in front
    and ``pad_right`` behind, so every gather stays in range; ``allowed``
    (blocks, block, width) marks the keys inside a query's window and the
    buffer (a -inf elsewhere).
    """

    block: int
    blocks: int
    width: int
    left: int
    pad_right: int
    key_index: Tensor  # (blocks, width) into the padded buffer
    allowed: Tensor  # (blocks, block, width) bool

    @classmethod
    def build(cls, tgt_len: int, src_len: int, left: int, right: int, block: int, device) -> "BandLayout":
        block = max(1, min(block, tgt_len))
        blocks = -(-tgt_len // block)
        width = block + left + right
        offset = src_len - tgt_len  # self-attention: the queries are the last T keys
        starts = offset + torch.arange(blocks, device=device) * block  # padded index of key (query start - left)
        key_index = starts.unsqueeze(1) + torch.arange(width, device=device)  # (blocks, width)
        key = key_index - left  # unpadded key index
        distance = torch.arange(width, device=device) - left - torch.arange(block, device=device).unsqueeze(1)  # j - i
        allowed = ((distance >= -left) & (distance <= right)).unsqueeze(0) & ((key >= 0) & (key < src_len)).unsqueeze(1)
        return cls(block, blocks, width, left, blocks * block - tgt_len + right, key_index, allowed)

    def area_keys(self, x: Tensor, offsets: List[int]) -> Tensor:
        """(B, H, S, d) -> (B, H, blocks, N * width, d): the keys (or values) of heads h + offsets each block sees.

        One gather from the heads-flattened buffer; heads outside 1..H wrap
        around (``head_area_bias`` masks them unless wrapping is wanted).
        """
        batch, heads, _, dim = x.shape
        padded = F.pad(x, (0, 0, self.left, self.pad_right))  # (B, H, S_pad, d)
        source = (torch.arange(heads, device=x.device).unsqueeze(1) + torch.tensor(offsets, device=x.device)) % heads
        index = source[:, :, None, None] * padded.size(2) + self.key_index  # (H, N, blocks, width)
        index = index.transpose(1, 2).flatten()  # per head and block: N runs of width keys
        area = padded.flatten(1, 2).index_select(1, index)
        return area.view(batch, heads, self.blocks, len(offsets) * self.width, dim)

    def queries(self, x: Tensor) -> Tensor:
        """(..., T, d) -> (..., blocks, block, d)."""
        rows = self.blocks * self.block
        return F.pad(x, (0, 0, 0, rows - x.size(-2))).unflatten(-2, (self.blocks, self.block))

    def bias(self, bias: Tensor) -> Tensor:
        """A bias broadcastable to (B, H, T, S) -> (B|1, H|1, blocks, block|1, width)."""
        while bias.dim() < 4:
            bias = bias.unsqueeze(0)
        cols = F.pad(bias, (self.left, self.pad_right), value=float("-inf"))
        if cols.size(-2) == 1:  # the same for every query (padding): gather keys only
            return cols.index_select(-1, self.key_index.flatten()).unflatten(-1, tuple(self.key_index.shape)).transpose(-3, -2)
        rows = F.pad(cols, (0, 0, 0, self.blocks * self.block - cols.size(-2)))
        row = torch.arange(self.blocks * self.block, device=bias.device).view(self.blocks, self.block, 1)
        flat = row * cols.size(-1) + self.key_index.unsqueeze(1)  # (blocks, block, width)
        return rows.flatten(-2).index_select(-1, flat.flatten()).unflatten(-1, tuple(flat.shape))

    def output(self, x: Tensor, tgt_len: int) -> Tensor:
        """(..., blocks, block, d) -> (..., T, d)."""
        return x.flatten(-3, -2)[..., :tgt_len, :]


def neighbour_heads(x: Tensor, offsets: List[int], dim: int) -> Tensor:
    """Concatenate, along ``dim``, the tensors of heads h+o for each offset o (heads on dim 1, circular)."""
    if offsets == [0]:
        return x
    return torch.cat([torch.roll(x, shifts=-o, dims=1) for o in offsets], dim=dim)


def head_area_bias(num_heads: int, offsets: List[int], wrap: bool, keys: int, dtype, device) -> Optional[Tensor]:
    """(H, N * keys): -inf on the part of the area that belongs to a head outside 1..H (unless wrapping)."""
    if wrap or offsets == [0]:
        return None
    source = torch.arange(num_heads, device=device).unsqueeze(1) + torch.tensor(offsets, device=device)
    outside = (source < 0) | (source >= num_heads)  # (H, N)
    bias = torch.zeros(outside.shape, dtype=dtype, device=device).masked_fill(outside, float("-inf"))
    return bias.repeat_interleave(keys, dim=1)


def _softmax_rows(scores: Tensor, bias: Tensor) -> Tensor:
    """softmax(scores + bias) over the last dim; a row with every key masked attends uniformly instead of NaN."""
    bias = bias.masked_fill(torch.isneginf(bias).all(dim=-1, keepdim=True), 0.0)
    logits = scores + bias
    return F.softmax(logits, dim=-1, dtype=torch.float32).type_as(logits)


def banded_area_attention(
    q: Tensor, k: Tensor, v: Tensor, scaling: float, bias: Optional[Tensor], left: int, right: int, block: int,
    offsets: List[int], wrap: bool, dropout: Callable[[Tensor], Tensor],
) -> Tensor:
    """Attention of each query over the keys j in [i - left, i + right] of the heads h + offsets.

    q (B, H, T, d) unscaled, k and v (B, H, S, d); ``bias`` broadcastable to
    (B, H, T, S) (fairseq's masks, padding, other methods) -> (B, H, T, d).
    """
    layout = BandLayout.build(q.size(2), k.size(2), left, right, block, q.device)
    window = torch.zeros(layout.allowed.shape, dtype=q.dtype, device=q.device).masked_fill(~layout.allowed, float("-inf"))
    if bias is not None:
        window = window + layout.bias(bias.to(q.dtype))  # (B|1, H|1, blocks, block, width)
    # a query whose own window is empty attends uniformly instead of producing NaN
    window = window.masked_fill(torch.isneginf(window).all(dim=-1, keepdim=True), 0.0)
    keys = layout.area_keys(k, offsets)  # (B, H, blocks, N * width, d)
    values = layout.area_keys(v, offsets)
    scores = torch.matmul(layout.queries(q * scaling), keys.transpose(-1, -2))  # (B, H, blocks, block, N * width)
    # biases are added in place (matmul keeps its inputs, not its output): no second area-sized tensor
    scores.add_(window.repeat((1,) * (window.dim() - 1) + (len(offsets),)))  # the same band for each head of the area
    heads = head_area_bias(q.size(1), offsets, wrap, layout.width, q.dtype, q.device)
    if heads is not None:
        scores.add_(heads.view(1, -1, 1, 1, heads.size(-1)))
    probs = F.softmax(scores, dim=-1, dtype=torch.float32).type_as(scores)
    return layout.output(torch.matmul(dropout(probs), values), q.size(2))


def dense_area_attention(
    q: Tensor, k: Tensor, v: Tensor, scaling: float, bias: Tensor, offsets: List[int], wrap: bool,
    dropout: Callable[[Tensor], Tensor],
) -> Tuple[Tensor, Tensor]:
    """The reference computation over the full (T, N * S) area; ``bias`` already holds the band.

    Returns the output and the probabilities summed over the N heads, (B, H, T, S).
    """
    src_len = k.size(2)
    keys = neighbour_heads(k, offsets, dim=2)  # (B, H, N * S, d)
    values = neighbour_heads(v, offsets, dim=2)
    while bias.dim() < 4:
        bias = bias.unsqueeze(0)
    area = bias.repeat(1, 1, 1, len(offsets))
    heads = head_area_bias(q.size(1), offsets, wrap, src_len, q.dtype, q.device)
    if heads is not None:
        area = area + heads.view(1, -1, 1, heads.size(-1))
    probs = _softmax_rows(torch.matmul(q * scaling, keys.transpose(-1, -2)), area)
    out = torch.matmul(dropout(probs), values)
    return out, probs.unflatten(-1, (len(offsets), src_len)).sum(dim=-2)


# ---------------------------------------------------------------------------------------------
# Methods
# ---------------------------------------------------------------------------------------------


@register_locality_method("csan1d")
class Csan1d(LocalityMethod):
    """1D convolutional self-attention (Yang et al. 2019): attend within a window of M keys."""

    Options = Csan1dOptions
    supported_attention = frozenset({"encoder", "decoder"})
    masks_rows = True  # a padding query may see only padding keys

    def window_extents(self, ctx) -> Tuple[int, int]:
        """(left, right): query i sees keys j with i - left <= j <= i + right."""
        half = (self.options.window - 1) // 2
        if not ctx.causal:
            return half, half
        return (self.options.window - 1 if self.options.decoder_window == "left" else half), 0

    def band_bias(self, ctx) -> Tensor:
        """(B, 1, T, S): -inf outside the window, in padding-aware sentence positions."""
        left, right = self.window_extents(ctx)
        distance = ctx.relative_positions  # j - i
        outside = (distance < -left) | (distance > right)
        return torch.zeros(outside.shape, dtype=ctx.q.dtype, device=ctx.q.device).masked_fill(outside, float("-inf")).unsqueeze(1)

    def use_banded(self, ctx) -> bool:
        choice = self.options.implementation
        return choice == "banded" or (choice == "auto" and ctx.src_len >= self.options.banded_min_length)

    def head_offsets(self) -> List[int]:
        return [0]

    def logit_bias(self, ctx) -> Tensor:
        return self.band_bias(ctx)

    def flex_terms(self, ctx) -> FlexTerms:
        """The window K^h_i as a band: keys i - left .. i + right (buffer and sentence positions agree for real tokens)."""
        left, right = self.window_extents(ctx)
        return FlexTerms(band=Band(left, right))

    def attention_kernel(self, ctx, bias, need_probs, dropout):
        if need_probs or not self.use_banded(ctx):
            return None  # the core applies band_bias to the full logits
        left, right = self.window_extents(ctx)
        out = banded_area_attention(
            ctx.q, ctx.k, ctx.v, ctx.scaling, bias, left, right, self.options.block_size, [0], False, dropout
        )
        return out, None


@register_locality_method("csan2d")
class Csan2d(Csan1d):
    """2D convolutional self-attention (Yang et al. 2019): one softmax over M keys x N adjacent heads.

    Attention weights returned for analysis (``need_weights``) are the
    probabilities summed over the N heads of the area, per key position.
    """

    Options = Csan2dOptions
    replaces_attention = True  # keys and values come from other heads

    def __init__(self, options: Csan2dOptions, spec):
        super().__init__(options, spec)
        if options.heads > spec.num_heads:
            raise LocalityConfigError(
                f"--{self.name}-heads {options.heads} exceeds the {spec.num_heads} attention heads of "
                f"{spec.attn_type} layer {spec.layer}"
            )

    def head_offsets(self) -> List[int]:
        half = (self.options.heads - 1) // 2
        return list(range(-half, half + 1))

    def flex_unfusable(self) -> Optional[str]:
        return "one softmax spans the keys of N adjacent heads, and a FlexAttention score belongs to one head"

    def attention_kernel(self, ctx, bias, need_probs, dropout):
        wrap = self.options.head_edge == "wrap"
        if not need_probs and self.use_banded(ctx):
            left, right = self.window_extents(ctx)
            out = banded_area_attention(
                ctx.q, ctx.k, ctx.v, ctx.scaling, bias, left, right, self.options.block_size,
                self.head_offsets(), wrap, dropout,
            )
            return out, None
        band = self.band_bias(ctx)
        band = band if bias is None else band + bias
        return dense_area_attention(ctx.q, ctx.k, ctx.v, ctx.scaling, band, self.head_offsets(), wrap, dropout)
