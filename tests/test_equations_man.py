"""Mask attention (Fan et al. 2021) from its equations, on hand-made inputs.

    S_M(Q, K)[t, s] = M[t, s] exp(q_t k_s / sqrt(d)) / sum_s' M[t, s'] exp(q_t k_s' / sqrt(d))     (Eq. 4)
    SMAN: M[t, s] = 1 if |t - s| <= b else 0,  b = sqrt(L) / 2 (SMAN1) or fixed (SMAN2)           (Eq. 11)
    DMAN: M_i[t, s] = sigmoid(h_t W + P_{t-s} + U_i)                                             (Eq. 12)

L is the real sentence length (the prefix length t + 1 in decoder self-attention); P has one entry per
distance t - s, distances beyond the table share its last entry; ``min_mask`` clamps M from below.
"""

import math

import pytest
import torch

from fairseq_localness.attention import AttentionContext
from fairseq_localness.methods.mask_attention import DMANOptions, DynamicMask, SMANOptions, StaticMask
from localness_testing import (
    PADDED_LENGTH,
    PADDED_PAD,
    assert_attention,
    causal_mask,
    hand_attention,
    identity_attention,
    padded_inputs,
    padded_positions as positions,
    padded_rows as rows,
    padded_support as visible,
)

DIM, HEADS = 4, 2
LENGTH, PAD = PADDED_LENGTH, PADDED_PAD
MAX_POSITIONS = 4  # P covers distances -3..3 (encoder) or 0..3 (decoder): the 7-token inputs exceed it


def inputs(attn_type, seed=0):
    return padded_inputs(DIM, attn_type, seed)


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
@pytest.mark.parametrize("min_mask", [0.0, 0.3])
def test_dman_is_eq_4_with_the_mask_of_eq_12(attn_type, min_mask):
    attention = identity_attention([(DynamicMask, DMANOptions(attention=attn_type, min_mask=min_mask))], DIM, HEADS,
                                   attn_type, max_positions=MAX_POSITIONS)
    method = attention.locality[0]
    # P_{t-s} by distance, written out: encoder distances -3..3, decoder 0..3
    table = {d: 0.5 * d - 0.4 * d * d for d in range(-(MAX_POSITIONS - 1), MAX_POSITIONS)}
    if attn_type == "decoder":
        table = {d: v for d, v in table.items() if d >= 0}
    w, u = torch.tensor([0.7, -0.3, 1.1, 0.2]), torch.tensor([0.4, -1.5])
    with torch.no_grad():
        method.context_weight.copy_(w)
        method.head_bias.copy_(u)
        method.distance_bias.copy_(torch.tensor([table[d] for d in sorted(table)]))
    x, padding = inputs(attn_type)
    low, high = min(table), max(table)

    def mask(b, h, t, s):  # Eq. 12, with the clamp of --dman-min-mask
        pos = positions(b, attn_type)
        distance = max(low, min(high, pos[t] - pos[s]))
        value = 1 / (1 + math.exp(-(float(w @ x[t, b]) + table[distance] + float(u[h]))))
        return max(value, min_mask)

    # Eq. 4: M exp(e) / sum M exp(e) = softmax(e + log M)
    weights, out = hand_attention(x, x, HEADS, visible(attn_type), extra=lambda *a: math.log(mask(*a)))
    causal = causal_mask(LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows(attn_type), key_padding_mask=padding, attn_mask=causal)
    # the analysis record holds log M itself
    attention.capture = {}
    attention(x, x, x, key_padding_mask=padding, attn_mask=causal)
    recorded = attention.capture["dman_log_mask"]  # (B, H, T, S)
    for b, queries in rows(attn_type).items():
        for t in queries:
            for s in visible(attn_type)(b, 0, t):
                for h in range(HEADS):
                    assert recorded[b, h, t, s].item() == pytest.approx(math.log(mask(b, h, t, s)), abs=1e-5)


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
@pytest.mark.parametrize("window,width", [("sqrt", 4.0), ("fixed", 1.5), ("fixed", 0.0), ("fixed", 1.0)])
def test_sman_band(attn_type, window, width):
    attention = identity_attention([(StaticMask, SMANOptions(attention=attn_type, window=window, width=width))], DIM, HEADS,
                                   attn_type)
    x, padding = inputs(attn_type, seed=1)

    def inside(b, h, t, s):  # Eq. 11
        pos = positions(b, attn_type)
        length = pos[t] + 1 if attn_type == "decoder" else len(pos)
        half_width = math.sqrt(length) / 2 if window == "sqrt" else width
        return abs(pos[t] - pos[s]) <= half_width

    weights, out = hand_attention(x, x, HEADS, visible(attn_type, inside))
    if window == "fixed" and width == 0.0:  # M = I: every query sees itself only
        assert torch.equal(weights[0, 0], torch.eye(LENGTH, dtype=weights.dtype))
    if window == "sqrt" and attn_type == "encoder":  # L = 7: b = 1.32 -> |t - s| <= 1; L = 5: b = 1.12
        assert [j for j in range(LENGTH) if weights[0, 0, 3, j] > 0] == [2, 3, 4]
    causal = causal_mask(LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows(attn_type), key_padding_mask=padding, attn_mask=causal)
    # one sentence alone (batch of one) gets the same band; the record is log M: 0 inside, a floor outside
    attention.capture = {}
    _, alone = attention(x[:, :1], x[:, :1], x[:, :1], attn_mask=causal, need_head_weights=True)
    torch.testing.assert_close(alone[:, 0].double(), weights[0], atol=1e-5, rtol=0)
    recorded = attention.capture["sman_log_mask"][0, 0]
    inside_band = torch.tensor([[inside(0, 0, t, s) for s in range(LENGTH)] for t in range(LENGTH)])
    assert (recorded[inside_band] == 0).all() and (recorded[~inside_band] <= -1e4).all()


def test_offset_rows_spread_one_value_per_offset():
    """[t, s] = per_offset[s - i + S - 1] for the last T queries i = S - T + t, written out for S = 3."""
    from fairseq_localness.attention.tensors import offset_rows

    per_offset = torch.tensor([10.0, 20.0, 30.0, 40.0, 50.0], requires_grad=True)  # offsets s - i = -2 .. 2
    full = offset_rows(per_offset, 3)
    assert full.tolist() == [[30.0, 40.0, 50.0],  # i = 0: offsets 0, 1, 2
                             [20.0, 30.0, 40.0],  # i = 1: offsets -1, 0, 1
                             [10.0, 20.0, 30.0]]  # i = 2: offsets -2, -1, 0
    assert offset_rows(per_offset, 1).tolist() == [[10.0, 20.0, 30.0]]  # one decoding step: the last query
    full.sum().backward()
    assert per_offset.grad.tolist() == [1.0, 2.0, 3.0, 2.0, 1.0]  # each offset's number of (i, s) pairs
    per_head = torch.arange(10.0).view(5, 2)  # a trailing dimension (heads) stays last
    assert offset_rows(per_head, 3)[1, 2].tolist() == per_head[3].tolist()  # i = 1, s = 2: offset 1


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
def test_dman_distance_gradient_is_the_sum_over_its_pairs(attn_type):
    """dL/dP_d sums dL/d(log M)[b, h, t, s] . dlog M/dP over the real pairs at distance d (Eq. 12 by positions,
    on the padded batch), where the table is read once per offset and spread into rows."""
    attention = identity_attention([(DynamicMask, DMANOptions(attention=attn_type))], DIM, HEADS,
                                   attn_type, max_positions=MAX_POSITIONS)
    method = attention.locality[0]
    x, padding = inputs(attn_type)
    zeros = torch.zeros(2, HEADS, LENGTH, DIM // HEADS)
    ctx = AttentionContext(q=zeros, k=zeros, v=zeros, query_input=x.transpose(0, 1), key_input=None,
                           key_padding_mask=padding, attn_mask=None, causal=attn_type == "decoder",
                           attn_type=attn_type, layer=1, scaling=1.0)
    log_mask = method.logit_bias(ctx)  # (B, H, T, S): log sigmoid(h_t W + P_{t-s} + U_i)
    weights = torch.randn(log_mask.shape, generator=torch.Generator().manual_seed(4))
    method.distance_bias.grad = None
    low = -(MAX_POSITIONS - 1) if attn_type == "encoder" else 0
    expected = torch.zeros_like(method.distance_bias)
    real = (log_mask * weights).new_zeros(())
    for b in (0, 1):
        pos = positions(b, attn_type)
        for t in pos:
            for s in pos:
                if attn_type == "decoder" and s > t:
                    continue
                distance = max(low, min(MAX_POSITIONS - 1, pos[t] - pos[s]))
                for h in range(HEADS):
                    real = real + weights[b, h, t, s] * log_mask[b, h, t, s]
                    # d log sigmoid(z) / dz = 1 - sigmoid(z)
                    expected[distance - low] += weights[b, h, t, s] * (1 - log_mask[b, h, t, s].exp()).detach()
    real.backward()
    torch.testing.assert_close(method.distance_bias.grad, expected, atol=1e-5, rtol=1e-5)
