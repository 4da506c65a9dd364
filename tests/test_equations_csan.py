"""CSAN (Yang et al. 2019) from its equations, on hand-made inputs: the exact window of every placement.

1D-CSAN: o^h_i = ATT(q^h_i, K^h_i) V^h_i with K^h_i = {k_{i-(M-1)/2}, ..., k_{i+(M-1)/2}} (Section 2.2);
the decoder's causal window holds the M keys ending at the query (``left``: j in [i-(M-1), i]) or the
centred window cut at the query (``centred``: j in [i-(M-1)/2, i]). 2D-CSAN: one softmax over the keys of
that window in the heads h-(N-1)/2 .. h+(N-1)/2 (Section 2.3). Positions outside the sentence (padding) and
heads outside 1..H are not in the window; ``head_edge wrap`` treats the heads as a circle.

Every expected weight is a softmax computed key by key over the listed window (tests/localness_testing.py).
"""

import math

import pytest
import torch

from fairseq_localness.methods.csan import Csan1d, Csan1dOptions, Csan2d, Csan2dOptions
from localness_testing import (
    PADDED_LENGTH,
    PADDED_PAD,
    assert_attention,
    causal_mask,
    hand_attention,
    identity_attention,
    padded_inputs,
)

LENGTH, PAD = PADDED_LENGTH, PADDED_PAD  # batch 1 has PAD padding tokens: left in the encoder (sources), right in the decoder (targets)


def inputs(dim: int, attn_type: str, seed: int = 0):
    return padded_inputs(dim, attn_type, seed)


def real_positions(b: int, attn_type: str):
    """{buffer index j: sentence position of j} of the real tokens of batch row b."""
    if b == 0:
        return {j: j for j in range(LENGTH)}
    if attn_type == "encoder":
        return {j: j - PAD for j in range(PAD, LENGTH)}
    return {j: j for j in range(LENGTH - PAD)}


def window(attn_type: str, back: int, ahead: int):
    """support(b, h, i): the real keys j with i - back <= j <= i + ahead (in sentence positions)."""
    def support(b, h, i):
        pos = real_positions(b, attn_type)
        if i not in pos:
            return []  # a padding query: its output is not compared
        return [j for j, p in pos.items() if -back <= p - pos[i] <= ahead]
    return support


# (placement, decoder window, M, keys back, keys ahead): the extents written out from the definitions above
PLACEMENTS = [
    ("encoder", "left", 1, 0, 0),
    ("encoder", "left", 3, 1, 1),
    ("encoder", "left", 5, 2, 2),
    ("decoder", "left", 3, 2, 0),  # the M keys ending at the query: i-2, i-1, i
    ("decoder", "left", 5, 4, 0),
    ("decoder", "centred", 3, 1, 0),  # the centred window i-1..i+1 cut at the query
    ("decoder", "centred", 5, 2, 0),
]


@pytest.mark.parametrize("implementation", ["dense", "banded"])
@pytest.mark.parametrize("attn_type,decoder_window,size,back,ahead", PLACEMENTS)
def test_1d_window_is_a_softmax_over_exactly_the_window(attn_type, decoder_window, size, back, ahead, implementation):
    options = Csan1dOptions(window=size, decoder_window=decoder_window, implementation=implementation, block_size=3,
                            attention=attn_type)
    attention = identity_attention([(Csan1d, options)], dim=4, heads=2, attn_type=attn_type)
    x, padding = inputs(4, attn_type)
    weights, out = hand_attention(x, x, 2, window(attn_type, back, ahead))
    rows = {b: list(real_positions(b, attn_type)) for b in (0, 1)}
    mask = causal_mask(LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows, key_padding_mask=padding, attn_mask=mask)


def test_window_extents_per_placement():
    """window_extents() states the same (back, ahead) pairs as PLACEMENTS."""
    for attn_type, decoder_window, size, back, ahead in PLACEMENTS:
        method = Csan1d(Csan1dOptions(window=size, decoder_window=decoder_window), None)

        class Ctx:
            causal = attn_type == "decoder"

        assert method.window_extents(Ctx()) == (back, ahead), (attn_type, decoder_window, size)


def hand_area_attention(x, heads: int, support, offsets, wrap: bool):
    """2D-CSAN by definition: one softmax over the keys (n, j), n in the heads h + offsets, j in support.

    Returns the weights summed over the area's heads per key position (B, H, T, S) and the output (T, B, C).
    """
    tgt_len, batch, dim = x.shape
    d = dim // heads
    weights = torch.zeros(batch, heads, tgt_len, tgt_len, dtype=torch.float64)
    out = torch.zeros(tgt_len, batch, dim, dtype=torch.float64)
    for b in range(batch):
        for h in range(heads):
            area_heads = [(h + o) % heads if wrap else h + o for o in offsets]
            area_heads = [n for n in area_heads if 0 <= n < heads]
            for i in range(tgt_len):
                keys = list(support(b, h, i))
                if not keys:
                    continue
                q = x[i, b, h * d:(h + 1) * d].double()
                logits = {(n, j): float(q @ x[j, b, n * d:(n + 1) * d].double()) / math.sqrt(d) for n in area_heads for j in keys}
                top = max(logits.values())
                total = sum(math.exp(s - top) for s in logits.values())
                for (n, j), s in logits.items():
                    w = math.exp(s - top) / total
                    weights[b, h, i, j] += w
                    out[i, b, h * d:(h + 1) * d] += w * x[j, b, n * d:(n + 1) * d].double()
    return weights, out


@pytest.mark.parametrize("implementation", ["dense", "banded"])
@pytest.mark.parametrize("head_edge", ["drop", "wrap"])
@pytest.mark.parametrize("attn_type,decoder_window,size,back,ahead", [PLACEMENTS[1], PLACEMENTS[3], PLACEMENTS[5]])
def test_2d_area_is_one_softmax_over_window_and_adjacent_heads(attn_type, decoder_window, size, back, ahead, head_edge,
                                                              implementation):
    options = Csan2dOptions(window=size, decoder_window=decoder_window, implementation=implementation, block_size=3,
                            heads=3, head_edge=head_edge, attention=attn_type)
    attention = identity_attention([(Csan2d, options)], dim=8, heads=4, attn_type=attn_type)
    x, padding = inputs(8, attn_type, seed=1)
    weights, out = hand_area_attention(x, 4, window(attn_type, back, ahead), [-1, 0, 1], wrap=head_edge == "wrap")
    rows = {b: list(real_positions(b, attn_type)) for b in (0, 1)}
    mask = causal_mask(LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows, key_padding_mask=padding, attn_mask=mask)


@pytest.mark.parametrize("implementation", ["dense", "banded"])
def test_2d_edge_heads_see_fewer_heads_only_when_dropping(implementation):
    """Head 1's area is heads {1, 2} (drop) or {4, 1, 2} (wrap): the module's outputs for the two edge choices
    differ exactly at the edge heads (identity projections: head h's output is its own slice of the output)."""
    x, padding = inputs(8, "encoder", seed=2)
    outputs = {}
    for edge in ("drop", "wrap"):
        options = Csan2dOptions(window=3, implementation=implementation, block_size=3, heads=3, head_edge=edge,
                                attention="encoder")
        attention = identity_attention([(Csan2d, options)], dim=8, heads=4, attn_type="encoder")
        out, _ = attention(x, x, x, key_padding_mask=padding, need_weights=False)
        outputs[edge] = out.view(x.size(0), x.size(1), 4, 2)  # (T, B, heads, head dim)
    real = {b: list(real_positions(b, "encoder")) for b in (0, 1)}
    for b, queries in real.items():
        drop, wrap = outputs["drop"][queries, b], outputs["wrap"][queries, b]
        torch.testing.assert_close(drop[:, 1:3], wrap[:, 1:3])
        assert (drop[:, 0] - wrap[:, 0]).abs().max() > 1e-3 and (drop[:, 3] - wrap[:, 3]).abs().max() > 1e-3
