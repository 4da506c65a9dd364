"""The comparison tables' locality baselines from their equations (fairseq_localness/methods/baselines.py).

Neighbor (Sperber et al. 2018):   G_ij = -(j - i)^2 / (2 sigma^2), sigma = D / 2, D = exp(log D_h) per head (or layer)
Local_Hard (Luong et al. 2015, local-p):
    p_i = I sigmoid(v_p^T tanh(W_p q_i))                                              (Luong Eq. 9)
    a_ij = softmax_{|j - p_i| <= D}(e_ij) exp(-(j - p_i)^2 / (2 sigma^2)), sigma = D / 2    (Luong Eq. 10)
    (``--localhard-gaussian bias``: softmax_{|j - p_i| <= D}(e_ij - (j - p_i)^2 / (2 sigma^2)))
Bi_Direct (Shen et al. 2018a):    heads 1..H/2 see j <= i, heads H/2+1..H see j >= i.

Identity projections (q = k = v = x per head); every weight is a softmax computed key by key.
"""

import math

import pytest
import torch

from fairseq_localness.methods.baselines import (
    BiDirect,
    BiDirectOptions,
    LocalHard,
    LocalHardOptions,
    Neighbor,
    NeighborOptions,
)
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

LENGTH, PAD = PADDED_LENGTH, PADDED_PAD


def inputs(dim, attn_type, seed=0):
    return padded_inputs(dim, attn_type, seed)


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
@pytest.mark.parametrize("per_head,windows", [(True, [2.0, 5.0]), (False, [3.0])])
def test_neighbor_is_a_gaussian_centred_on_the_query(attn_type, per_head, windows):
    attention = identity_attention([(Neighbor, NeighborOptions(per_head=per_head, attention=attn_type))], 4, 2, attn_type)
    with torch.no_grad():
        attention.locality[0].log_window.copy_(torch.tensor(windows).log())
    x, padding = inputs(4, attn_type)

    def gaussian(b, h, i, j):
        pos = positions(b, attn_type)
        sigma = windows[h if per_head else 0] / 2
        return -((pos[j] - pos[i]) ** 2) / (2 * sigma**2)

    weights, out = hand_attention(x, x, 2, visible(attn_type), extra=gaussian)
    mask = causal_mask(LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows(attn_type), key_padding_mask=padding, attn_mask=mask)


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
@pytest.mark.parametrize("gaussian", ["multiply", "bias"])
def test_local_hard_is_luong_local_p(attn_type, gaussian):
    half_width = 1.5
    options = LocalHardOptions(window=half_width, gaussian=gaussian, attention=attn_type)
    attention = identity_attention([(LocalHard, options)], 4, 2, attn_type)
    method = attention.locality[0]
    gen = torch.Generator().manual_seed(11)
    with torch.no_grad():
        method.w_p.weight.copy_(torch.randn(4, 4, generator=gen))
        method.v_p.weight.copy_(2 * torch.randn(2, 4, generator=gen))
    x, padding = inputs(4, attn_type, seed=2)
    centers = {}
    for b in (0, 1):
        pos = positions(b, attn_type)
        for i in pos:
            length = pos[i] + 1 if attn_type == "decoder" else len(pos)
            hidden = torch.tanh(method.w_p.weight.double() @ x[i, b].double())
            for h in range(2):
                centers[b, h, i] = length * 1 / (1 + math.exp(-float(method.v_p.weight.double()[h] @ hidden)))  # Eq. 9
    sigma = half_width / 2

    def inside(b, h, i, j):
        return abs(positions(b, attn_type)[j] - centers[b, h, i]) <= half_width

    def log_gaussian(b, h, i, j):
        return -((positions(b, attn_type)[j] - centers[b, h, i]) ** 2) / (2 * sigma**2)

    if gaussian == "multiply":
        weights, out = hand_attention(x, x, 2, visible(attn_type, inside), factor=lambda *a: math.exp(log_gaussian(*a)))
    else:
        weights, out = hand_attention(x, x, 2, visible(attn_type, inside), extra=log_gaussian)
    # the hard window is not empty for these inputs, and narrower than the sentence for some queries
    windows = [len(visible(attn_type, inside)(b, h, i)) for b in (0, 1) for h in range(2) for i in positions(b, attn_type)]
    assert min(windows) >= 1 and min(windows) < max(windows) and max(windows) <= 3
    mask = causal_mask(LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows(attn_type), key_padding_mask=padding, attn_mask=mask)


def test_local_hard_window_includes_its_edges():
    """|j - p| <= D is inclusive: with v_p = 0, p = I sigmoid(0) = I / 2; for I = 7, D = 1.5 the window of
    p = 3.5 is exactly keys 2..5 (|2 - 3.5| = |5 - 3.5| = 1.5)."""
    attention = identity_attention([(LocalHard, LocalHardOptions(window=1.5, gaussian="bias"))], 4, 2)
    with torch.no_grad():
        attention.locality[0].v_p.weight.zero_()
    x = torch.randn(LENGTH, 1, 4)
    _, weights = attention(x, x, x, need_head_weights=True)
    assert [j for j in range(LENGTH) if weights[0, 0, 0, j] > 0] == [2, 3, 4, 5]


def test_bidirect_splits_heads_into_backward_and_forward():
    attention = identity_attention([(BiDirect, BiDirectOptions())], 8, 4, "encoder")
    x, padding = inputs(8, "encoder", seed=3)

    def direction(b, h, i, j):
        pos = positions(b, "encoder")
        return pos[j] <= pos[i] if h < 2 else pos[j] >= pos[i]  # heads 1-2 backward, 3-4 forward

    weights, out = hand_attention(x, x, 4, visible("encoder", direction))
    assert weights[0, 0, 0, 1:].abs().max() == 0 and weights[0, 0, 0, 0] == 1  # the first token sees itself only
    assert weights[0, 3, -1, :-1].abs().max() == 0 and weights[0, 3, -1, -1] == 1
    assert_attention(attention, x, weights, out, rows("encoder"), key_padding_mask=padding)


@pytest.mark.parametrize("length,directional", [(0, True), (0, False), (2, True)])
def test_block_intra_attention_is_a_softmax_within_the_block(length, directional):
    """Block (Shen et al. 2018b): query i attends to the keys of its own block of r tokens, r = ceil((2n)^(1/3))
    (n = 7: r = 3, blocks {0,1,2} {3,4,5} {6}; n = 5: 10^(1/3) = 2.15, r = 3) or r = --block-length; with
    directional heads, heads 1-2 look backward (j <= i) and heads 3-4 forward (j >= i)."""
    from fairseq_localness.methods.block import BlockOptions, BlockSelfAttention, block_lengths

    assert block_lengths(torch.tensor([7, 5, 4, 32, 1]), 0).tolist() == [3, 3, 2, 4, 2]  # 8^(1/3) = 2, 64^(1/3) = 4
    attention = identity_attention([(BlockSelfAttention, BlockOptions(length=length, directional=directional))], 8, 4)
    x, padding = inputs(8, "encoder", seed=4)
    r = length or 3

    def same_block(b, h, i, j):
        pos = positions(b, "encoder")
        if pos[j] // r != pos[i] // r:
            return False
        if not directional:
            return True
        return pos[j] <= pos[i] if h < 2 else pos[j] >= pos[i]

    weights, _ = hand_attention(x, x, 4, visible("encoder", same_block))
    if length == 0 and directional:
        assert [j for j in range(LENGTH) if weights[0, 2, 4, j] > 0] == [4, 5]  # forward head, block {3, 4, 5}
        assert [j for j in range(LENGTH) if weights[1, 0, 4, j] > 0] == [2, 3, 4]  # backward head, positions 0-2
    _, got = attention(x, x, x, key_padding_mask=padding, need_head_weights=True)
    got = got.transpose(0, 1)
    for b, queries in rows("encoder").items():
        for i in queries:
            torch.testing.assert_close(got[b, :, i].double(), weights[b, :, i], atol=1e-5, rtol=0)
