"""Baselines of the comparison tables: Neighbor, Local_Hard, Bi_Direct; every window-family architecture end to end."""

import math

import pytest
import torch
from fairseq.models import ARCH_MODEL_REGISTRY

from fairseq_localness.architectures.window import WINDOW_ARCHITECTURES
from fairseq_localness.attention import AttentionSpec, LocalityAttention, LocalityConfigError
from fairseq_localness.attention.context import AttentionContext
from fairseq_localness.methods.baselines import (
    BiDirect,
    BiDirectOptions,
    LocalHard,
    LocalHardOptions,
    Neighbor,
    NeighborOptions,
)
from localness_testing import assert_incremental_parity, assert_padding_invariance, build_model, train_and_generate


def spec(dim=8, heads=2, attn_type="encoder"):
    return AttentionSpec(embed_dim=dim, num_heads=heads, attn_type=attn_type, layer=1, kdim=dim, max_positions=64)


def make_context(batch=2, heads=2, length=6, head_dim=4, pad_first=2, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, length, head_dim, generator=gen) for _ in range(3))
    padding = torch.zeros(batch, length, dtype=torch.bool)
    padding[1, :pad_first] = True
    return AttentionContext(
        q=q, k=k, v=v, query_input=torch.randn(batch, length, heads * head_dim, generator=gen), key_input=None,
        key_padding_mask=padding if pad_first else None, attn_mask=None, causal=False, attn_type="encoder",
        layer=1, scaling=head_dim**-0.5,
    )


def test_neighbor_bias_is_a_gaussian_around_the_query():
    method = Neighbor(NeighborOptions(window_init=4.0), spec())
    with torch.no_grad():
        method.log_window[1] = math.log(8.0)
    ctx = make_context()
    bias = method.logit_bias(ctx)
    for b, n_pad in ((0, 0), (1, 2)):
        for h, window in ((0, 4.0), (1, 8.0)):
            sigma = window / 2
            for i in range(n_pad, 6):
                for j in range(n_pad, 6):
                    expected = -((j - i) ** 2) / (2 * sigma**2)
                    assert math.isclose(bias[b, h, i, j].item(), expected, rel_tol=1e-5, abs_tol=1e-6)
    # the width is learned
    bias.sum().backward()
    assert method.log_window.grad is not None and method.log_window.grad.abs().min() > 0
    assert Neighbor(NeighborOptions(per_head=False), spec()).log_window.numel() == 1


@pytest.mark.parametrize("gaussian", ["multiply", "bias"])
def test_local_hard_matches_luong_eq_9_10(gaussian):
    """Softmax inside |j - p_i| <= D, times exp(-(j - p_i)^2 / (2 (D/2)^2)) (or renormalised), by hand."""
    torch.manual_seed(0)
    window = 1.5
    method = LocalHard(LocalHardOptions(window=window, gaussian=gaussian), spec())
    attention = LocalityAttention(8, 2, spec(), [(LocalHard, LocalHardOptions(window=window, gaussian=gaussian))],
                                  self_attention=True).eval()
    attention.locality[0].load_state_dict(method.state_dict())
    x = torch.randn(6, 2, 8)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[1, :2] = True
    _, weights = attention(x, x, x, key_padding_mask=padding, need_head_weights=True)  # (H, B, T, S)
    q = attention.q_proj(x).view(6, 2, 2, 4).permute(1, 2, 0, 3)  # (B, H, T, d)
    k = attention.k_proj(x).view(6, 2, 2, 4).permute(1, 2, 0, 3)
    for b, n_pad in ((0, 0), (1, 2)):
        length = 6 - n_pad  # I
        for i in range(n_pad, 6):
            query = q[b, :, i].reshape(-1)
            hidden = torch.tanh(method.w_p.weight @ query)
            for h in range(2):
                center = length * torch.sigmoid(method.v_p.weight[h] @ hidden)  # Eq. 9
                keys = [j for j in range(n_pad, 6) if abs((j - n_pad) - center) <= window]
                scores = torch.stack([q[b, h, i] @ k[b, h, j] / 2 for j in keys])
                gauss = torch.stack([torch.exp(-((j - n_pad) - center) ** 2 / (2 * (window / 2) ** 2)) for j in keys])
                if gaussian == "multiply":
                    expected = torch.softmax(scores, 0) * gauss  # Eq. 10
                else:
                    expected = torch.softmax(scores + gauss.log(), 0)
                row = weights[h, b, i]
                torch.testing.assert_close(row[keys], expected, atol=1e-5, rtol=1e-4)
                others = [j for j in range(6) if j not in keys]
                assert row[others].abs().max() == 0 if others else True


def test_bidirect_heads_look_one_way():
    torch.manual_seed(0)
    attention = LocalityAttention(8, 4, spec(8, 4), [(BiDirect, BiDirectOptions())], self_attention=True).eval()
    x = torch.randn(6, 2, 8)
    padding = torch.zeros(2, 6, dtype=torch.bool)
    padding[1, :2] = True
    _, weights = attention(x, x, x, key_padding_mask=padding, need_head_weights=True)  # (H, B, T, S)
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)  # j > i
    for b, real in ((0, slice(0, 6)), (1, slice(2, 6))):  # the padded sentence's real queries
        assert weights[:2, b, real][..., future[real]].abs().max() == 0  # backward heads: j <= i
        assert weights[2:, b, real][..., future.t()[real]].abs().max() == 0  # forward heads: j >= i
    assert (weights[:, 0].diagonal(dim1=-2, dim2=-1) > 0).all()  # every token keeps itself
    assert weights[:2, 1, 2:, 2].min() > 0 and weights[2:, 1, 2:, -1].min() > 0


def test_bidirect_needs_an_even_number_of_heads():
    with pytest.raises(LocalityConfigError, match="odd number of heads"):
        BiDirect(BiDirectOptions(), spec(9, 3))


@pytest.mark.parametrize(
    "arch,overrides",
    [
        ("transformer_neighbor", {"neighbor_attention": "encoder,decoder"}),
        ("transformer_neighbor", {"neighbor_attention": "decoder", "neighbor_per_head": False}),
        ("transformer_local_hard", {"localhard_attention": "encoder,decoder,cross", "localhard_window": 2}),
        ("transformer_local_hard", {"localhard_attention": "decoder,cross", "localhard_gaussian": "bias"}),
        ("transformer_bidirect", {}),
    ],
)
def test_incremental_decoding_and_padding(tiny_data_bin, arch, overrides):
    model, task = build_model(arch, tiny_data_bin, overrides)
    assert_incremental_parity(model, task)
    assert_padding_invariance(model, task)


@pytest.mark.parametrize(
    "arch,overrides,message",
    [
        ("transformer_bidirect", {"bidirect_attention": "decoder"}, "bidirect is not defined for decoder attention"),
        ("transformer_neighbor", {"neighbor_window_init": 0}, "--neighbor-window-init must be > 0"),
        ("transformer_local_hard", {"localhard_window": -1}, "--localhard-window must be > 0"),
        ("transformer_neighbor", {"neighbor_layers": "2-7"}, "out of range: the model has 3 layers"),
    ],
)
def test_bad_flags(tiny_data_bin, arch, overrides, message):
    with pytest.raises(LocalityConfigError, match=message):
        build_model(arch, tiny_data_bin, overrides)


def test_parameters_added(tiny_data_bin):
    """Per layer: Neighbor H windows; Local_Hard W_p (C x C) and v_p (C x H); Bi_Direct nothing. TINY: C=32, H=4, 3 layers."""
    reference = sum(p.numel() for p in build_model("transformer_localness", tiny_data_bin)[0].parameters())
    added = {arch: sum(p.numel() for p in build_model(arch, tiny_data_bin)[0].parameters()) - reference
             for arch in ("transformer_neighbor", "transformer_local_hard", "transformer_bidirect")}
    assert added == {"transformer_neighbor": 3 * 4, "transformer_local_hard": 3 * (32 * 32 + 32 * 4), "transformer_bidirect": 0}


def test_every_size_variant_is_registered():
    for name in WINDOW_ARCHITECTURES:
        for suffix in ("", "_iwslt_de_en", "_wmt_en_de", "_wmt_en_de_big"):
            assert name + suffix in ARCH_MODEL_REGISTRY


@pytest.mark.parametrize("arch", ["transformer_neighbor", "transformer_local_hard_wmt_en_de", "transformer_bidirect"])
def test_train_and_generate(tiny_data_bin, tmp_path, arch):
    train_and_generate(tiny_data_bin, tmp_path, arch, updates=20)
