"""Hybrid local/global attention (Xu et al. 2019) from its equations, on hand-made inputs.

    local   O^L_i = softmax(B(xi_i)) V,  B(xi)_ij = xi_ij if |i - j| <= m else -inf      (Section 3.1)
    global  O^G_i = softmax(xi_i) V
    gate    O_i = (1 - g_i) O^G_i + g_i O^L_i,  g_i = sigmoid(W_g H_i)                    (Eq. 4-5)
    concat  O_i = W_O [O^G_i; O^L_i] = W_O (O^G_i + W_c O^L_i), or W_c [O^G_i; O^L_i] before W_O  (Table 1, "HYBRID (Concate)")

The query projection is 2 I (keys and values: I), so the gate read from the layer input H and the one read
from the scaled query projection Q / sqrt(d) = 2 H / sqrt(d) (the authors' released gate) differ.
"""

import math

import pytest
import torch

from fairseq_localness.methods.hybrid import HybridLocalGlobal, HybridOptions
from localness_testing import (
    PADDED_LENGTH,
    PADDED_PAD,
    assert_attention,
    causal_mask,
    hand_attention,
    identity_attention,
    padded_positions as positions,
    padded_rows as rows,
)

DIM, HEADS = 4, 2
LENGTH, PAD = PADDED_LENGTH, PADDED_PAD


def setup(attn_type: str, **options):
    attention = identity_attention([(HybridLocalGlobal, HybridOptions(attention=attn_type, **options))], DIM, HEADS, attn_type)
    with torch.no_grad():
        attention.q_proj.weight.mul_(2.0)
    torch.manual_seed(3)
    x = torch.randn(LENGTH, 2, DIM)
    padding = torch.zeros(2, LENGTH, dtype=torch.bool)
    if attn_type == "encoder":
        padding[1, :PAD] = True
    else:
        padding[1, LENGTH - PAD:] = True
    return attention, x, padding


def band(attn_type: str, m):
    """Real keys with |i - j| <= m (m=None: every real key); the decoder also has j <= i."""
    def support(b, h, i):
        pos = positions(b, attn_type)
        if i not in pos:
            return []
        keys = [j for j, p in pos.items() if m is None or abs(p - pos[i]) <= m]
        return [j for j in keys if attn_type == "encoder" or j <= i]
    return support


def hand_patterns(x, attn_type: str, m: int):
    queries = 2 * x
    global_w, global_out = hand_attention(queries, x, HEADS, band(attn_type, None))
    local_w, local_out = hand_attention(queries, x, HEADS, band(attn_type, m))
    return global_w, global_out, local_w, local_out


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
@pytest.mark.parametrize("m,expected_keys", [(0, [3]), (1, [2, 3, 4]), (2, [1, 2, 3, 4, 5])])
def test_local_pattern_is_a_softmax_over_the_band(attn_type, m, expected_keys):
    attention, x, padding = setup(attn_type, combine="local", window=m)
    mask = causal_mask(LENGTH) if attn_type == "decoder" else None
    _, _, local_w, local_out = hand_patterns(x, attn_type, m)
    # the band of query 3 of the unpadded sentence, written out
    seen = [j for j in range(LENGTH) if local_w[0, 0, 3, j] > 0]
    assert seen == [j for j in expected_keys if attn_type == "encoder" or j <= 3]
    assert_attention(attention, x, local_w, local_out, rows(attn_type), key_padding_mask=padding, attn_mask=mask)


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
@pytest.mark.parametrize("gate_input,per_head", [("input", False), ("query", False), ("input", True), ("query", True)])
def test_gate_mixes_global_and_local_by_eq4(attn_type, gate_input, per_head):
    m = 1
    attention, x, padding = setup(attn_type, window=m, gate_input=gate_input, gate_per_head=per_head)
    method = attention.locality[0]
    gate_weight = torch.tensor([[0.5, -1.0, 0.25, 2.0], [-0.75, 0.5, 1.5, -0.25]])[: HEADS if per_head else 1]
    with torch.no_grad():
        method.gate_proj.weight.copy_(gate_weight)
    global_w, global_out, local_w, local_out = hand_patterns(x, attn_type, m)
    d = DIM // HEADS
    source = x if gate_input == "input" else 2 * x / d**0.5  # H_i, or the scaled query projection Q_i / sqrt(d)
    expected = torch.zeros_like(global_out)
    expected_w = torch.zeros_like(global_w)
    for i in range(LENGTH):
        for b in range(2):
            for h in range(HEADS):
                w = gate_weight[h if per_head else 0].double()
                g = 1 / (1 + math.exp(-float(w @ source[i, b].double())))  # Eq. 5
                cols = slice(h * d, (h + 1) * d)
                expected[i, b, cols] = (1 - g) * global_out[i, b, cols] + g * local_out[i, b, cols]  # Eq. 4
                expected_w[b, h, i] = (1 - g) * global_w[b, h, i] + g * local_w[b, h, i]  # the weights of that sum
    mask = causal_mask(LENGTH) if attn_type == "decoder" else None
    # the returned weights are those the output is the weighted sum of: the gated mixture of the two patterns
    assert_attention(attention, x, expected_w, expected, rows(attn_type), key_padding_mask=padding, attn_mask=mask)


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
@pytest.mark.parametrize("concat_into", ["output", "projection"])
def test_concat_projects_both_patterns(attn_type, concat_into):
    """projection: W_c [O^G; O^L] (W_c 2C x C); output: the output projection reads [O^G; O^L], i.e.
    W_O (O^G + W_c O^L) with W_c C x C (W_O is the identity here)."""
    m = 1
    attention, x, padding = setup(attn_type, window=m, combine="concat", concat_into=concat_into)
    torch.manual_seed(4)
    w_c = torch.randn(DIM, 2 * DIM if concat_into == "projection" else DIM)
    with torch.no_grad():
        attention.locality[0].concat_proj.weight.copy_(w_c)
    global_w, global_out, _, local_out = hand_patterns(x, attn_type, m)
    if concat_into == "projection":
        expected = torch.cat([global_out, local_out], dim=-1) @ w_c.double().t()  # W_c [O^G; O^L]
    else:
        expected = global_out + local_out @ w_c.double().t()  # O^G + W_c O^L
    mask = causal_mask(LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, global_w, expected, rows(attn_type), key_padding_mask=padding, attn_mask=mask)


def test_gate_starts_from_the_released_codes_normal_01():
    """The paper gives no initialisation; the authors' gate_sum draws W_g from N(0, 0.1) (Xavier uniform would
    give a standard deviation of sqrt(2 / (512 + 1)) = 0.062, and 0.062 for 512 -> 8)."""
    torch.manual_seed(0)
    for per_head, rows in ((False, 1), (True, 8)):
        attention = identity_attention([(HybridLocalGlobal, HybridOptions(gate_per_head=per_head))], 512, 8, "encoder")
        weight = attention.locality[0].gate_proj.weight
        assert weight.shape == (rows, 512)
        assert weight.mean().abs() < 0.01 and abs(weight.std().item() - 0.1) < 0.006
