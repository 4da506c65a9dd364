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
    fixed = BlockSelfAttention(BlockOptions(form="blosan", length=3, directional=True), spec())
    assert fixed.block_ids(ctx).tolist() == [[0, 0, 0, 1, 1, 1, 2], [-1, -1, 0, 0, 0, 1, 1]]
    auto = BlockSelfAttention(BlockOptions(form="blosan", length=0, directional=True), spec())  # n=7 -> r=ceil(14^(1/3)=2.41)=3; n=5 -> ceil(10^(1/3)=2.15)=3
    assert auto.block_ids(context([0, 2])).tolist() == [[0, 0, 0, 1, 1, 1, 2], [-1, -1, 0, 0, 0, 1, 1]]
    assert auto.block_ids(context([0, 6])).tolist()[1] == [-1] * 6 + [0]  # n=1 -> r=2


def test_summary_is_a_per_feature_softmax_within_each_block():
    """s_l[c] = sum_{j in l} exp(a_j[c]) u_j[c] / sum_{j in l} exp(a_j[c]) with a = W_2 ELU(W_1 u + b_1) + b_2."""
    torch.manual_seed(0)
    method = BlockSelfAttention(BlockOptions(form="blosan", length=2, directional=True), spec())
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
    attention = LocalityAttention(8, 2, spec(), [(BlockSelfAttention, BlockOptions(form="blosan", length=3, directional=directional))],
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
    attention = LocalityAttention(8, 2, spec(), [(BlockSelfAttention, BlockOptions(form="blosan", length=2, directional=True))],
                                  self_attention=True).eval()
    for p in attention.locality.parameters():  # non-zero biases so that every term is checked
        p.add_(0.1 * torch.randn_like(p))
    x = torch.randn(7, 2, 8)
    padding = torch.zeros(2, 7, dtype=torch.bool)
    padding[1, :2] = True
    out, _ = attention(x, x, x, key_padding_mask=padding, need_weights=False)
    expected = reference_output(attention, x, padding, r=2)
    torch.testing.assert_close(out[:, 0], expected[:, 0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(out[2:, 1], expected[2:, 1], atol=1e-5, rtol=1e-4)


BLOSAN = {"block_form": "blosan", "block_layers": "1-3", "block_length": 0, "block_directional": True}  # the first form


def test_parameters_added(tiny_data_bin):
    """release (default, every encoder layer): W_g, W_s (C^2 + C each), W_a (C H + H), W_G (2C^2 + C), W_e (C^2); blosan:
    W_1, W_2 (C x C + C each) and W_f (3C x 2C + 2C); linear summary: W_2 only. TINY: C=32, H=4, 3 encoder layers."""
    reference = sum(p.numel() for p in build_model("transformer_localness", tiny_data_bin)[0].parameters())
    count = lambda flags: sum(p.numel() for p in build_model("transformer_block", tiny_data_bin, flags)[0].parameters())  # noqa: E731
    assert count({}) - reference == 3 * (5 * 32 * 32 + 3 * 32 + 32 * 4 + 4)
    assert count(BLOSAN) - reference == 3 * (2 * (32 * 32 + 32) + 3 * 32 * 2 * 32 + 2 * 32)
    assert count({**BLOSAN, "block_summary": "linear"}) - reference == 3 * ((32 * 32 + 32) + 3 * 32 * 2 * 32 + 2 * 32)


BASE = {"encoder_layers": 6, "decoder_layers": 6, "encoder_embed_dim": 512, "decoder_embed_dim": 512,
        "encoder_ffn_embed_dim": 2048, "decoder_ffn_embed_dim": 2048, "encoder_attention_heads": 8,
        "decoder_attention_heads": 8}


def test_yang2019_table1_block_row_builds_the_release(tiny_data_bin):
    """The Yang et al. (2019) Table 1 "+ Block" row (transformer_block_wmt_en_de, no overrides) builds what
    baosongyang/Context-Aware-SAN builds: block attention in all six encoder layers (models/transformer_block.py lines
    51-63), none in the decoder (lines 94-127), blocks of 4 tokens (layers/attention_block.py lines 340-350), its
    parameterisation (lines 355-379): +5 C^2 + 3 C + C H + H = 1,316,360 per layer, 7,898,160 in all (the paper: +6.0M)."""
    from fairseq_localness.experiments.tables import load_tables, table_rows

    row = next(r for r in table_rows(load_tables(), "yang2019", "1") if r.id == "block")
    assert (row.arch, row.overrides) == ("transformer_block_wmt_en_de", [])
    model = build_model(row.arch, tiny_data_bin, BASE)[0]
    base = build_model("transformer_wmt_en_de", tiny_data_bin, BASE)[0]
    methods = {(name.split(".")[2], type(module).__name__): module for name, module in model.named_modules()
               if name.endswith(".locality.0")}
    assert sorted(methods) == [(str(i), "BlockSelfAttention") for i in range(6)]  # encoder layers 1-6 only
    assert all(name.startswith("encoder.") for name, m in model.named_modules() if name.endswith(".locality.0"))
    options = {(m.options.form, m.options.length, m.options.directional) for m in methods.values()}
    assert options == {("release", 4, False)}
    added = sum(p.numel() for p in model.parameters()) - sum(p.numel() for p in base.parameters())
    assert added == 6 * (5 * 512 ** 2 + 3 * 512 + 512 * 8 + 8) == 7_898_160
    assert round(added / 1e6 - 6.0, 2) == 1.90  # against the paper's +6.0M (docs/baselines.md)
    blosan = build_model(row.arch, tiny_data_bin, {**BASE, **BLOSAN})[0]
    assert sum(p.numel() for p in blosan.parameters()) - sum(p.numel() for p in base.parameters()) == 6_297_600


def release_reference(attention, x, padding):
    """The release's steps (layers/attention_block.py lines 336-380) with loops over sentences, blocks of 4 counted from
    each sentence's first real token, heads and tokens; padding left out of every softmax."""
    method = attention.locality[0]
    T, B, C = x.shape
    H = attention.num_heads
    d = C // H
    q = attention.q_proj(x).view(T, B, H, d)
    k = attention.k_proj(x).view(T, B, H, d)
    v = attention.v_proj(x).view(T, B, H, d)
    out = torch.zeros(T, B, C)
    for b in range(B):
        real = [t for t in range(T) if not padding[b, t]]
        blocks = [real[i:i + 4] for i in range(0, len(real), 4)]
        block_of = {t: n for n, members in enumerate(blocks) for t in members}
        u = {}
        for i in real:  # intra-block attention, both ways
            heads = []
            for h in range(H):
                keys = blocks[block_of[i]]
                w = torch.softmax(torch.stack([q[i, b, h] @ k[j, b, h] / math.sqrt(d) for j in keys]), 0)
                heads.append(sum(wj * v[j, b, h] for wj, j in zip(w, keys)))
            u[i] = torch.cat(heads)
        s = []
        for members in blocks:  # summaries: one score per head and token
            a = torch.stack([method.token_score(torch.sigmoid(method.token_gate(u[j]))) for j in members])  # (n, H)
            w = torch.softmax(a, 0)
            s.append(torch.cat([sum(w[n, h] * u[j][h * d:(h + 1) * d] for n, j in enumerate(members)) for h in range(H)]))
        e = []
        for l in range(len(blocks)):  # inter-block attention with the summaries' own query map, then the gate
            query = method.summary_query(s[l])
            heads = []
            for h in range(H):
                w = torch.softmax(torch.stack([query[h * d:(h + 1) * d] @ s[m][h * d:(h + 1) * d] / math.sqrt(d)
                                               for m in range(len(blocks))]), 0)
                heads.append(sum(w[m] * s[m][h * d:(h + 1) * d] for m in range(len(blocks))))
            o = torch.cat(heads)
            gate = torch.sigmoid(method.block_gate(torch.cat([s[l], o])))
            e.append(gate * o + (1 - gate) * s[l])
        for i in real:  # the 2C -> C output map: [u_i; e_block(i)]
            weight = torch.cat([attention.out_proj.weight, method.block_output.weight], dim=1)
            out[i, b] = weight @ torch.cat([u[i], e[block_of[i]]]) + attention.out_proj.bias
    return out


@torch.no_grad()
def test_release_output_matches_its_steps_by_hand():
    torch.manual_seed(0)
    attention = LocalityAttention(8, 2, spec(), [(BlockSelfAttention, BlockOptions())], self_attention=True).eval()
    for p in attention.locality.parameters():  # non-zero biases so that every term is checked
        p.add_(0.1 * torch.randn_like(p))
    x = torch.randn(11, 2, 8)
    padding = torch.zeros(2, 11, dtype=torch.bool)
    padding[1, :3] = True  # 8 real tokens: two full blocks; 11: blocks of 4, 4, 3
    out, weights = attention(x, x, x, key_padding_mask=padding, need_weights=True, need_head_weights=True)
    expected = release_reference(attention, x, padding)
    torch.testing.assert_close(out[:, 0], expected[:, 0], atol=1e-5, rtol=1e-4)
    torch.testing.assert_close(out[3:, 1], expected[3:, 1], atol=1e-5, rtol=1e-4)
    same_block = torch.tensor([[i // 4 == j // 4 for j in range(11)] for i in range(11)])
    assert torch.equal(weights[:, 0] > 0, same_block.expand(2, -1, -1))  # blocks of 4, both ways, every head


def test_release_form_refuses_directions(tiny_data_bin):
    with pytest.raises(LocalityConfigError, match="--block-directional is a blosan option"):
        build_model("transformer_block", tiny_data_bin, {"block_directional": True})


@pytest.mark.parametrize("overrides", [{}, BLOSAN, {"block_form": "blosan", "block_length": 2}])
def test_model_padding_invariance_and_decoding(tiny_data_bin, overrides):
    model, task = build_model("transformer_block", tiny_data_bin, overrides)
    assert_padding_invariance(model, task)
    assert_incremental_parity(model, task)  # encoder-only: decoding through the cached encoder output


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"block_attention": "decoder"}, "block is not defined for decoder attention"),
        ({"block_length": -1}, "--block-length must be >= 0"),
        ({**BLOSAN, "encoder_attention_heads": 1, "encoder_embed_dim": 32}, "odd number of heads"),
    ],
)
def test_bad_flags(tiny_data_bin, overrides, message):
    with pytest.raises(LocalityConfigError, match=message):
        build_model("transformer_block", tiny_data_bin, overrides)


def test_train_and_generate(tiny_data_bin, tmp_path):
    train_and_generate(tiny_data_bin, tmp_path, "transformer_block", updates=20)
