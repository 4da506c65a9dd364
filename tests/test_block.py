"""Block self-attention (Shen et al. 2018b, Bi-BloSAN; the "Block" row of Yang et al. 2019 Table 1)."""

import math

import pytest
import torch
import torch.nn.functional as F

from fairseq_localness.attention import AttentionSpec, LocalityAttention, LocalityConfigError
from fairseq_localness.attention.context import AttentionContext
from fairseq_localness.methods.block import BlockOptions, BlockSelfAttention, block_lengths
from localness_testing import assert_incremental_parity, assert_padding_invariance, build_model, train_and_generate


def spec(dim=8, heads=2):
    return AttentionSpec(embed_dim=dim, num_heads=heads, attn_type="encoder", layer=1, kdim=dim, max_positions=64)


def test_block_length_is_the_cube_root_of_2n_rounded_up():
    """r = ceil((2n)^(1/3)): n=1 -> 2 (1.26), 4 -> 2 (exactly 2), 13 -> 3 (2.96), 14 -> 4 (3.04), 32 -> 4 (exactly 4)."""
    lengths = torch.tensor([1, 4, 13, 14, 32, 500])
    assert block_lengths(lengths, 0).tolist() == [2, 2, 3, 4, 4, 10]
    assert block_lengths(lengths, 5).tolist() == [5] * 6


def context(padding_first, length=7):
    batch = len(padding_first)
    padding = torch.zeros(batch, length, dtype=torch.bool)
    for b, n_pad in enumerate(padding_first):
        padding[b, :n_pad] = True
    q = torch.zeros(batch, 2, length, 4)
    return AttentionContext(q=q, k=q, v=q, query_input=q.new_zeros(batch, length, 8), key_input=None,
                            key_padding_mask=padding, attn_mask=None, causal=False, attn_type="encoder", layer=1, scaling=0.5)


def test_block_partition_counts_real_tokens_from_the_sentence_start():
    """Left padding belongs to no block (-1); blocks start at the first real token."""
    ctx = context([0, 2])
    fixed = BlockSelfAttention(BlockOptions(length=3), spec())
    assert fixed.block_ids(ctx).tolist() == [[0, 0, 0, 1, 1, 1, 2], [-1, -1, 0, 0, 0, 1, 1]]
    auto = BlockSelfAttention(BlockOptions(), spec())  # n=7 -> r=ceil(14^(1/3)=2.41)=3; n=5 -> ceil(10^(1/3)=2.15)=3
    assert auto.block_ids(context([0, 2])).tolist() == [[0, 0, 0, 1, 1, 1, 2], [-1, -1, 0, 0, 0, 1, 1]]
    assert auto.block_ids(context([0, 6])).tolist()[1] == [-1] * 6 + [0]  # n=1 -> r=2


def test_summary_is_a_per_feature_softmax_within_each_block():
    """s_l[c] = sum_{j in l} exp(a_j[c]) u_j[c] / sum_{j in l} exp(a_j[c]) with a = W_2 ELU(W_1 u + b_1) + b_2."""
    torch.manual_seed(0)
    method = BlockSelfAttention(BlockOptions(length=2), spec())
    ctx = context([0, 3], length=5)  # blocks [0,0,1,1,2] and [-,-,-,0,0]
    u = torch.randn(2, 5, 8)
    s = method.summaries(ctx, u)
    assert s.shape == (2, 3, 8)
    a = method.summary_score(F.elu(method.summary_hidden(u)))
    for b, blocks in ((0, [[0, 1], [2, 3], [4]]), (1, [[3, 4]])):
        for l, members in enumerate(blocks):
            for c in range(8):
                weights = torch.tensor([math.exp(a[b, j, c].item()) for j in members])
                expected = sum(w * u[b, j, c].item() for w, j in zip(weights / weights.sum(), members))
                assert math.isclose(s[b, l, c].item(), expected, rel_tol=1e-4, abs_tol=1e-5)
    assert s[1, 1:].abs().max() == 0  # blocks the short sentence does not have


@pytest.mark.parametrize("directional", [True, False])
def test_intra_block_attention_stays_in_the_block(directional):
    torch.manual_seed(0)
    attention = LocalityAttention(8, 2, spec(), [(BlockSelfAttention, BlockOptions(length=3, directional=directional))],
                                  self_attention=True).eval()
    x = torch.randn(7, 2, 8)
    padding = torch.zeros(2, 7, dtype=torch.bool)
    padding[1, :2] = True
    _, weights = attention(x, x, x, key_padding_mask=padding, need_head_weights=True)  # (H, B, T, S)
    for b, n_pad in ((0, 0), (1, 2)):
        for i in range(n_pad, 7):
            for j in range(7):
                same = j >= n_pad and (i - n_pad) // 3 == (j - n_pad) // 3
                backward_ok, forward_ok = same and (not directional or j <= i), same and (not directional or j >= i)
                assert (weights[0, b, i, j] > 0) == backward_ok and (weights[1, b, i, j] > 0) == forward_ok, (b, i, j)


def reference_output(attention, x, padding, r):
    """Every step of the module docstring with loops over sentences, heads, tokens and blocks."""
    method = attention.locality[0]
    T, B, C = x.shape
    H, d = 2, C // 2
    q = attention.q_proj(x).view(T, B, H, d)
    k = attention.k_proj(x).view(T, B, H, d)
    v = attention.v_proj(x).view(T, B, H, d)
    out = torch.zeros(T, B, C)
    for b in range(B):
        real = [t for t in range(T) if not padding[b, t]]
        block = {t: (p // r) for p, t in enumerate(real)}
        num_blocks = max(block.values()) + 1
        u = {}
        for i in real:  # intra-block attention, backward head 0, forward head 1
            heads = []
            for h in range(H):
                keys = [j for j in real if block[j] == block[i] and (j <= i if h == 0 else j >= i)]
                w = torch.softmax(torch.stack([q[i, b, h] @ k[j, b, h] / math.sqrt(d) for j in keys]), 0)
                heads.append(sum(wj * v[j, b, h] for wj, j in zip(w, keys)))
            u[i] = torch.cat(heads)
        s = []
        for l in range(num_blocks):  # summaries
            members = [j for j in real if block[j] == l]
            a = torch.stack([method.summary_score(F.elu(method.summary_hidden(u[j]))) for j in members])
            s.append((torch.softmax(a, 0) * torch.stack([u[j] for j in members])).sum(0))
        e = []
        for l in range(num_blocks):  # inter-block attention per head, same directions
            heads = []
            for h in range(H):
                ms = [m for m in range(num_blocks) if (m <= l if h == 0 else m >= l)]
                w = torch.softmax(torch.stack([s[l][h * d:(h + 1) * d] @ s[m][h * d:(h + 1) * d] / math.sqrt(d) for m in ms]), 0)
                heads.append(sum(wm * s[m][h * d:(h + 1) * d] for wm, m in zip(w, ms)))
            e.append(torch.cat(heads))
        for i in real:  # fusion gate
            vi = v[i, b].reshape(C)
            f, g = method.fusion(torch.cat([vi, u[i], e[block[i]]])).chunk(2)
            o = torch.sigmoid(g) * F.elu(f) + (1 - torch.sigmoid(g)) * vi
            out[i, b] = attention.out_proj(o)
    return out


@torch.no_grad()
def test_output_matches_the_equations_by_hand():
    torch.manual_seed(0)
    attention = LocalityAttention(8, 2, spec(), [(BlockSelfAttention, BlockOptions(length=2))], self_attention=True).eval()
    for p in attention.locality.parameters():  # non-zero biases so that every term is checked
        p.add_(0.1 * torch.randn_like(p))
    x = torch.randn(7, 2, 8)
    padding = torch.zeros(2, 7, dtype=torch.bool)
    padding[1, :2] = True
    out, _ = attention(x, x, x, key_padding_mask=padding, need_weights=False)
    expected = reference_output(attention, x, padding, r=2)
    torch.testing.assert_close(out[:, 0], expected[:, 0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(out[2:, 1], expected[2:, 1], atol=1e-5, rtol=1e-4)


def test_parameters_added(tiny_data_bin):
    """Per layer: W_1, W_2 (C x C + C each) and W_f (3C x 2C + 2C); linear summary: W_2 only. TINY: C=32, 3 layers."""
    reference = sum(p.numel() for p in build_model("transformer_localness", tiny_data_bin)[0].parameters())
    count = lambda flags: sum(p.numel() for p in build_model("transformer_block", tiny_data_bin, flags)[0].parameters())  # noqa: E731
    assert count({}) - reference == 3 * (2 * (32 * 32 + 32) + 3 * 32 * 2 * 32 + 2 * 32)
    assert count({"block_summary": "linear"}) - reference == 3 * ((32 * 32 + 32) + 3 * 32 * 2 * 32 + 2 * 32)


@pytest.mark.parametrize("overrides", [{}, {"block_length": 2, "block_directional": False, "block_layers": "all"}])
def test_model_padding_invariance_and_decoding(tiny_data_bin, overrides):
    model, task = build_model("transformer_block", tiny_data_bin, overrides)
    assert_padding_invariance(model, task)
    assert_incremental_parity(model, task)  # encoder-only: decoding through the cached encoder output


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"block_attention": "decoder"}, "block is not defined for decoder attention"),
        ({"block_length": -1}, "--block-length must be >= 0"),
        ({"encoder_attention_heads": 1, "encoder_embed_dim": 32}, "odd number of heads"),
    ],
)
def test_bad_flags(tiny_data_bin, overrides, message):
    with pytest.raises(LocalityConfigError, match=message):
        build_model("transformer_block", tiny_data_bin, overrides)


def test_train_and_generate(tiny_data_bin, tmp_path):
    train_and_generate(tiny_data_bin, tmp_path, "transformer_block", updates=20)
