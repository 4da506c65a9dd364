"""Gaussian localness (Yang et al. 2018) and relative positions (Shaw et al. 2018) from their equations.

Gaussian (equation numbers of Yang et al. 2018):
    ATT = softmax(q k^T / sqrt(d) + G),  G_ij = -(j - P_i)^2 / (2 sigma_i^2),  sigma_i = D_i / 2     (Eq. 4-5)
    P_i = I sigmoid(U_p^T tanh(W_p Q_i))                                                         (Eq. 6, 8)
    D_i = I sigmoid(U_d^T tanh(W_p Q_i))       query-specific window                              (Eq. 7, 9)
    D   = I sigmoid(U_d^T tanh(W_d K_bar))     layer-specific window, K_bar the mean of the keys  (Eq. 9)
    D   = fixed,  D_h = N sigmoid(z_h)         fixed and head-specific windows                    (Section 4.1)
I is the real sentence length (the prefix length i + 1 in decoder self-attention); in decoder self-attention
K_bar is the mean of the keys the query can see (1..i).

Relative positions (Shaw et al. 2018):
    e_ij = q_i (k_j + a^K_ij)^T / sqrt(d),  z_i = sum_j alpha_ij (v_j + a^V_ij),  a_ij = w_clip(j - i, k)   (Eq. 3-6)

All projections of the attention are the identity (q = k = v = x per head); the methods' own weights are
set to fixed values and every expected number is computed from the lines above, query by query.
"""

import math

import pytest
import torch

from fairseq_localness.methods.gaussian import GaussianLocalness, GaussianOptions
from fairseq_localness.methods.relative_position import RelativePositionOptions, RelativePositions
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
D = DIM // HEADS


def inputs(attn_type, seed=0):
    return padded_inputs(DIM, attn_type, seed)


def sigmoid(value: float) -> float:
    return 1 / (1 + math.exp(-value))


def set_weights(method, seed=5):
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name in ("w_p", "u_p", "u_d", "w_d"):
            module = getattr(method, name, None)
            if module is not None:
                module.weight.copy_(torch.randn(module.weight.shape, generator=gen))
        if hasattr(method, "z"):
            method.z.copy_(torch.tensor([0.3, -1.2]))


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
@pytest.mark.parametrize("strategy", ["query", "layer", "fixed", "head"])
def test_gaussian_attention_from_eq_4_to_9(attn_type, strategy):
    options = GaussianOptions(window=strategy, attention=attn_type, fixed_window=3.0, head_window_max=6.0)
    attention = identity_attention([(GaussianLocalness, options)], DIM, HEADS, attn_type)
    method = attention.locality[0]
    set_weights(method)
    x, padding = inputs(attn_type)
    w_p, u_p = method.w_p.weight.double(), method.u_p.weight.double()
    centers, windows = {}, {}
    for b in (0, 1):
        pos = positions(b, attn_type)
        for i in pos:
            length = pos[i] + 1 if attn_type == "decoder" else len(pos)  # I
            hidden = torch.tanh(w_p @ x[i, b].double())  # tanh(W_p Q_i), Eq. 8
            if strategy == "layer":
                seen = [j for j in pos if attn_type == "encoder" or j <= i]
                mean_key = sum(x[j, b].double() for j in seen) / len(seen)  # K_bar
                layer_hidden = torch.tanh(method.w_d.weight.double() @ mean_key)
            for h in range(HEADS):
                centers[b, h, i] = length * sigmoid(float(u_p[h] @ hidden))  # Eq. 6
                if strategy == "query":
                    windows[b, h, i] = length * sigmoid(float(method.u_d.weight.double()[h] @ hidden))
                elif strategy == "layer":
                    windows[b, h, i] = length * sigmoid(float(method.u_d.weight.double()[h] @ layer_hidden))
                elif strategy == "fixed":
                    windows[b, h, i] = 3.0
                else:
                    windows[b, h, i] = 6.0 * sigmoid([0.3, -1.2][h])

    def gaussian(b, h, i, j):  # Eq. 5, j in sentence positions
        sigma = windows[b, h, i] / 2
        return -((positions(b, attn_type)[j] - centers[b, h, i]) ** 2) / (2 * sigma**2)

    weights, out = hand_attention(x, x, HEADS, visible(attn_type), extra=gaussian)
    mask = causal_mask(LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows(attn_type), key_padding_mask=padding, attn_mask=mask)


def test_the_layer_case_data_tell_the_mean_key_from_the_sum():
    """The data of test_gaussian_attention_from_eq_4_to_9's 'layer' case give another window with K_bar the sum of
    the keys than with their mean (Eq. 9), so that test, which compares the module with the mean, fails if the
    module used the sum. This checks the test's data, not the module."""
    options = GaussianOptions(window="layer")
    attention = identity_attention([(GaussianLocalness, options)], DIM, HEADS, "encoder")
    method = attention.locality[0]
    set_weights(method)
    x, _ = inputs("encoder")
    mean_key, sum_key = x[:, 0].double().mean(0), x[:, 0].double().sum(0)
    u_d, w_d = method.u_d.weight.double(), method.w_d.weight.double()
    assert (u_d @ torch.tanh(w_d @ mean_key) - u_d @ torch.tanh(w_d @ sum_key)).abs().max() > 0.1


@pytest.mark.parametrize("attn_type", ["encoder", "decoder"])
@pytest.mark.parametrize("values", [True, False])
@pytest.mark.parametrize("clip", [1, 2])
def test_relative_positions_from_eq_3_to_6(attn_type, values, clip):
    options = RelativePositionOptions(max_distance=clip, values=values, attention=attn_type)
    attention = identity_attention([(RelativePositions, options)], DIM, HEADS, attn_type)
    method = attention.locality[0]
    gen = torch.Generator().manual_seed(7)
    with torch.no_grad():
        method.key_embeddings.copy_(torch.randn(2 * clip + 1, D, generator=gen))
        if values:
            method.value_embeddings.copy_(torch.randn(2 * clip + 1, D, generator=gen))
    x, padding = inputs(attn_type, seed=1)

    def bucket(b, i, j):  # clip(j - i, k) + k, sentence positions
        pos = positions(b, attn_type)
        return max(-clip, min(clip, pos[j] - pos[i])) + clip

    def key_term(b, h, i, j):  # q_i a^K_ij / sqrt(d)
        return float(x[i, b, h * D:(h + 1) * D] @ method.key_embeddings[bucket(b, i, j)]) / math.sqrt(D)

    weights, out = hand_attention(x, x, HEADS, visible(attn_type), extra=key_term)
    if values:  # + sum_j alpha_ij a^V_ij (Eq. 3)
        for b, queries in rows(attn_type).items():
            for i in queries:
                for h in range(HEADS):
                    for j in range(LENGTH):
                        if weights[b, h, i, j] > 0:
                            out[i, b, h * D:(h + 1) * D] += weights[b, h, i, j] * method.value_embeddings[bucket(b, i, j)].double()
    mask = causal_mask(LENGTH) if attn_type == "decoder" else None
    assert_attention(attention, x, weights, out, rows(attn_type), key_padding_mask=padding, attn_mask=mask)


def test_mean_key_of_every_row_including_one_token_sentences():
    """K_bar = the mean of the real keys, a one-token sentence's own key (encoder), and the running mean
    of keys 1..i in decoder self-attention."""
    from fairseq_localness.attention import AttentionContext

    keys = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [5.0, 9.0]], [[7.0, 7.0], [7.0, 7.0], [2.0, -6.0]]])  # (B, S, C)
    padding = torch.tensor([[False, False, False], [True, True, False]])  # row 1: a one-token sentence
    k = keys.view(2, 3, 1, 2).transpose(1, 2)  # one head

    def ctx(causal, pad):
        return AttentionContext(q=k, k=k, v=k, query_input=keys, key_input=keys, key_padding_mask=pad, attn_mask=None,
                                causal=causal, attn_type="decoder" if causal else "encoder", layer=1, scaling=1.0)

    mean = GaussianLocalness._mean_key(ctx(False, padding))
    torch.testing.assert_close(mean[0], torch.tensor([[3.0, 5.0]] * 3))
    torch.testing.assert_close(mean[1], torch.tensor([[2.0, -6.0]] * 3))
    running = GaussianLocalness._mean_key(ctx(True, None))
    torch.testing.assert_close(running[0], torch.tensor([[1.0, 2.0], [2.0, 3.0], [3.0, 5.0]]))
