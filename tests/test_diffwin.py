"""Differentiable Window (Nguyen et al. 2020): soft masks, MW and AW, placements, decoding, the real CLI."""

import pytest
import torch
from fairseq.modules import MultiheadAttention

from fairseq_localness.modelbuild import count_parameters, recipe_model
from fairseq_localness.attention import AttentionSpec, LocalityAttention, LocalityConfigError
from fairseq_localness.attention.context import AttentionContext
from fairseq_localness.methods.diffwin import (
    DiffWinCross,
    DiffWinDecoder,
    DiffWinDecoderOptions,
    DiffWinEncoder,
    DiffWinEncoderOptions,
    DifferentiableWindow,
    segment_bounds,
    soft_window_mask,
)
from localness_testing import assert_incremental_parity, assert_padding_invariance, build_model, train_and_generate

DIFFWIN_ARCHS = ["transformer_diffwin", "transformer_diffwin_enc_dec", "transformer_diffwin_cross"]


def discrete_window(left, right, cells: torch.Tensor) -> torch.Tensor:
    """The window the pointers select over cells (tokens or segments): [min(l, r), max(l, r)], once per ordering."""
    return ((left <= cells) & (cells <= right)).float() + ((right <= cells) & (cells <= left)).float()


def random_pointers(batch=2, heads=2, queries=3, keys=8, pad_first=0, seed=0):
    """Left/right boundary distributions (B, H, T, S) with zero mass on batch row 0's left padding."""
    gen = torch.Generator().manual_seed(seed)
    valid = torch.ones(batch, keys, dtype=torch.bool)
    valid[0, :pad_first] = False
    logits = torch.randn(2, batch, heads, queries, keys, generator=gen).masked_fill(~valid[:, None, None, :], -1e9)
    phi_l, phi_r = logits.softmax(dim=-1)
    positions = (valid.long().cumsum(dim=1) - 1).clamp_min(0)
    return phi_l, phi_r, valid, positions


@pytest.mark.parametrize("segment_size", [None, 1, 2, 3])
@pytest.mark.parametrize("pad_first", [0, 3])
def test_soft_mask_is_expectation_of_discrete_window(segment_size, pad_first):
    """m = E_{l ~ phi_l, r ~ phi_r}[discrete window], enumerating every (l, r) (token Eq. 9, segment Eq. 10-11)."""
    phi_l, phi_r, valid, positions = random_pointers(pad_first=pad_first)
    phi = torch.cat([phi_l, phi_r], dim=1)
    if segment_size is None:
        mask = soft_window_mask(phi)
        cells = torch.arange(phi_l.size(-1)).expand_as(positions)  # token j
    else:
        mask = soft_window_mask(phi, segment_bounds(positions, segment_size))
        cells = positions // segment_size  # segment of token j
    for b in range(phi_l.size(0)):
        c = cells[b]
        # windows[l, r, j]: the discrete window of every pointer pair (l, r), each weighted by its probability
        windows = discrete_window(c[:, None, None], c[None, :, None], c[None, None, :])
        expected = torch.einsum("htl,htr,lrj->htj", phi_l[b], phi_r[b], windows)
        real = valid[b]
        torch.testing.assert_close(mask[b][..., real], expected[..., real], atol=1e-6, rtol=0)
    if segment_size is None and pad_first:
        assert mask[0, ..., :pad_first].abs().max() < 1e-6  # padding is outside every window


def test_segment_size_one_is_token_masking():
    phi_l, phi_r, _, positions = random_pointers(pad_first=2)
    phi = torch.cat([phi_l, phi_r], dim=1)
    torch.testing.assert_close(soft_window_mask(phi, segment_bounds(positions, 1)), soft_window_mask(phi))


def one_hot_pointers(left: int, right: int, n: int) -> torch.Tensor:
    """Stacked one-hot boundary distributions [phi_l; phi_r] of shape (1, 2, 1, n)."""
    return torch.nn.functional.one_hot(torch.tensor([left, right]), n).float().view(1, 2, 1, n)


def test_one_hot_pointers_give_the_discrete_window():
    n = 7
    cells = torch.arange(n)
    for left in range(n):
        for right in range(n):
            mask = soft_window_mask(one_hot_pointers(left, right, n)).view(n)
            torch.testing.assert_close(mask, discrete_window(left, right, cells))
            if left < right:  # an ordered window is exactly the 0/1 indicator of [l, r]
                torch.testing.assert_close(mask, ((cells >= left) & (cells <= right)).float())


def test_segment_mask_is_constant_within_segments():
    b = 3
    phi_l, phi_r, valid, positions = random_pointers(keys=11, pad_first=2)
    mask = soft_window_mask(torch.cat([phi_l, phi_r], dim=1), segment_bounds(positions, b))
    segments = positions // b
    for row in range(mask.size(0)):
        for segment in segments[row, valid[row]].unique():
            members = valid[row] & (segments[row] == segment)
            values = mask[row][..., members]
            torch.testing.assert_close(values, values[..., :1].expand_as(values))
    # one-hot pointers select whole segments: from the start of l's segment to the end of r's
    n = 11
    positions = torch.arange(n).unsqueeze(0)
    for left, right in [(4, 7), (0, 10), (5, 5), (8, 1)]:
        mask = soft_window_mask(one_hot_pointers(left, right, n), segment_bounds(positions, b)).view(n)
        seg = torch.arange(n) // b
        torch.testing.assert_close(mask, discrete_window(left // b, right // b, seg))


def spec(dim=16, heads=4, attn_type="encoder", kdim=None):
    return AttentionSpec(embed_dim=dim, num_heads=heads, attn_type=attn_type, layer=1, kdim=kdim or dim, max_positions=64)


def attention_pair(method_cls, options, dim=16, heads=4, attn_type="encoder", seed=0):
    """LocalityAttention with one Differentiable Window and fairseq's MultiheadAttention with the same q/k/v/out."""
    torch.manual_seed(seed)
    kwargs = dict(self_attention=True) if attn_type != "cross" else dict(encoder_decoder_attention=True)
    local = LocalityAttention(dim, heads, spec(dim, heads, attn_type), [(method_cls, options)], **kwargs).eval()
    vanilla = MultiheadAttention(dim, heads, **kwargs).eval()
    vanilla.load_state_dict({k: v for k, v in local.state_dict().items() if not k.startswith("locality.")})
    return local, vanilla


def padded_input(length=7, batch=3, dim=16):
    x = torch.randn(length, batch, dim)
    padding = torch.zeros(batch, length, dtype=torch.bool)
    padding[1, :3] = True
    return x, padding


@pytest.mark.parametrize("renormalize", [False, True])
def test_multiplicative_window_with_all_ones_mask_is_vanilla(monkeypatch, renormalize):
    local, vanilla = attention_pair(DiffWinEncoder, DiffWinEncoderOptions(mode="mul", renormalize=renormalize))
    x, padding = padded_input()
    reference, _ = vanilla(x, x, x, key_padding_mask=padding, need_weights=False)
    windowed, _ = local(x, x, x, key_padding_mask=padding, need_weights=False)
    assert (windowed - reference).abs().max() > 1e-3  # the learned window does change attention
    monkeypatch.setattr(DifferentiableWindow, "window_mask", lambda self, ctx: torch.ones(()))
    ours, _ = local(x, x, x, key_padding_mask=padding, need_weights=False)
    torch.testing.assert_close(ours, reference, atol=1e-5, rtol=0)


def test_additive_window_with_zero_local_term_is_vanilla():
    local, vanilla = attention_pair(DiffWinEncoder, DiffWinEncoderOptions(mode="add"))
    x, padding = padded_input()
    reference, _ = vanilla(x, x, x, key_padding_mask=padding, need_weights=False)
    windowed, _ = local(x, x, x, key_padding_mask=padding, need_weights=False)
    assert (windowed - reference).abs().max() > 1e-3
    with torch.no_grad():
        local.locality[0].query_proj.weight[2 * 16 :].zero_()  # W_loc^Q = 0, so s_loc = 0
    ours, _ = local(x, x, x, key_padding_mask=padding, need_weights=False)
    torch.testing.assert_close(ours, reference, atol=1e-5, rtol=0)


def make_context(method, x, padding=None, causal=False):
    """The AttentionContext the core builds for self-attention over x (T, B, C)."""
    attention = LocalityAttention(x.size(-1), method.spec.num_heads, method.spec, [], self_attention=True)
    heads = method.spec.num_heads
    split = lambda t: t.view(t.size(0), t.size(1), heads, -1).permute(1, 2, 0, 3)  # noqa: E731
    return AttentionContext(
        q=split(attention.q_proj(x)), k=split(attention.k_proj(x)), v=split(attention.v_proj(x)),
        query_input=x.transpose(0, 1), key_input=x.transpose(0, 1), key_padding_mask=padding, attn_mask=None,
        causal=causal, attn_type=method.spec.attn_type, layer=1, scaling=attention.scaling, records={},
    )


def test_additive_bias_matches_the_matrix_form():
    """Eq. 7-9 and 17 with the explicit L matrix, head by head, against the cumsum implementation."""
    torch.manual_seed(0)
    dim, heads, n = 12, 3, 6
    method = DiffWinEncoder(DiffWinEncoderOptions(mode="add"), spec(dim, heads))
    x, padding = torch.randn(n, 2, dim), torch.zeros(2, n, dtype=torch.bool)
    padding[1, :2] = True
    ctx = make_context(method, x, padding)
    bias = method.logit_bias(ctx)
    head_dim = dim // heads
    w_q, w_k = (w.view(3, heads, head_dim, dim) for w in (method.query_proj.weight, method.key_proj.weight))
    upper = torch.triu(torch.ones(n, n))  # L
    for b in range(2):
        h_in = x[:, b]
        real = ~padding[b]
        for h in range(heads):
            def scores(block):
                return (h_in @ w_q[block, h].t()) @ (h_in @ w_k[block, h].t()).t() / head_dim**0.5

            def pointer(block):
                return scores(block).masked_fill(~real, float("-inf")).softmax(dim=-1)

            phi_l, phi_r = pointer(0), pointer(1)
            mask = (phi_l @ upper) * (phi_r @ upper.t()) + (phi_r @ upper) * (phi_l @ upper.t())
            expected = scores(2) * mask
            torch.testing.assert_close(bias[b, h][:, real], expected[:, real], atol=1e-5, rtol=1e-5)


def test_pointers_skip_padding_and_future_and_survive_empty_rows():
    torch.manual_seed(0)
    method = DiffWinDecoder(DiffWinDecoderOptions(mode="add"), spec(attn_type="decoder"))
    x = torch.randn(5, 3, 16)
    padding = torch.zeros(3, 5, dtype=torch.bool)
    padding[1, 3:] = True  # right padding, as fairseq pads targets
    padding[2, :] = True  # a row with no real key at all
    ctx = make_context(method, x, padding, causal=True)
    bias = method.logit_bias(ctx)
    assert torch.isfinite(bias).all()
    for side in ("left", "right"):
        phi = ctx.records[f"diffwin_dec_{side}"]
        future = torch.triu(torch.ones(5, 5, dtype=torch.bool), diagonal=1)
        assert phi[..., future].abs().max() == 0  # causal pointers
        assert phi[1, ..., 3:].abs().max() == 0  # no boundary probability on padding
        assert phi[2].abs().max() == 0  # an empty row points nowhere (and is not NaN)
        torch.testing.assert_close(phi[0].sum(-1), torch.ones(4, 5))
        torch.testing.assert_close(phi[1, :, :3].sum(-1), torch.ones(4, 3))
    assert ctx.records["diffwin_dec_mask"][2].abs().max() == 0
    # MW on the same rows: finite, renormalisation of an all-zero row stays zero
    mul = DiffWinDecoder(DiffWinDecoderOptions(mode="mul", renormalize=True), spec(attn_type="decoder"))
    probs = torch.softmax(torch.randn(3, 4, 5, 5), dim=-1)
    assert torch.isfinite(mul.transform_probs(make_context(mul, x, padding, causal=True), probs)).all()


def test_architectures_place_the_paper_configuration(tiny_data_bin):
    model, _ = build_model("transformer_diffwin", tiny_data_bin, {"diffwin_enc_layers": "1-2"})

    def methods(module):
        return [(type(m).__name__, m.options.mode, m.options.masking) for m in getattr(module, "locality", [])]

    encoder, decoder = model.encoder.layers, model.decoder.layers
    assert [methods(layer.self_attn) for layer in encoder] == [[("DiffWinEncoder", "add", "token")]] * 2 + [[]]
    assert [methods(layer.encoder_attn) for layer in decoder] == [[("DiffWinCross", "add", "segment")]] * 3
    assert [methods(layer.self_attn) for layer in decoder] == [[("DiffWinDecoder", "mul", "token")]] * 3
    assert not isinstance(encoder[2].self_attn, LocalityAttention)  # untouched layers keep fairseq's attention
    cross_only, _ = build_model("transformer_diffwin_cross", tiny_data_bin)
    assert not any(isinstance(m, (DiffWinEncoder, DiffWinDecoder)) for m in cross_only.modules())
    assert sum(isinstance(m, DiffWinCross) for m in cross_only.modules()) == 3


def test_gradients_reach_every_window_projection(tiny_data_bin):
    model, _ = build_model("transformer_diffwin", tiny_data_bin)
    model.train()
    src = torch.tensor([[5, 6, 7, 8, 9, 10, 2], [1, 1, 9, 10, 11, 12, 2]])
    prev = torch.tensor([[2, 5, 6, 7], [2, 7, 8, 9]])
    model(src, torch.tensor([7, 5]), prev)[0].logsumexp(-1).sum().backward()
    names = [n for n, _ in model.named_parameters() if ".locality." in n]
    assert len(names) == 2 * 9  # query_proj and key_proj in 3 encoder, 3 cross and 3 decoder blocks
    for name, param in model.named_parameters():
        if ".locality." in name:
            assert param.grad is not None and param.grad.abs().sum() > 0, name


@pytest.mark.parametrize(
    "arch,overrides",
    [
        ("transformer_diffwin", {}),
        ("transformer_diffwin_enc_dec", {}),
        ("transformer_diffwin_cross", {}),
        # Table 2/3 variants: MW renormalised in the encoder with segments, AW in the decoder, token cross masking
        ("transformer_diffwin", {"diffwin_enc_mode": "mul", "diffwin_enc_renormalize": "true",
                                 "diffwin_enc_masking": "segment", "diffwin_enc_segment_size": 2,
                                 "diffwin_dec_mode": "add", "diffwin_cross_masking": "token"}),
        ("transformer_diffwin_cross", {"diffwin_cross_mode": "mul", "diffwin_cross_segment_size": 3}),
    ],
)
def test_incremental_decoding_and_padding(tiny_data_bin, arch, overrides):
    model, task = build_model(arch, tiny_data_bin, overrides)
    assert_incremental_parity(model, task)
    assert_padding_invariance(model, task)


@pytest.mark.parametrize(
    "overrides,message",
    [
        ({"diffwin_dec_masking": "segment"}, "decoder self-attention is token-based only"),
        ({"diffwin_enc_renormalize": "true"}, "--diffwin-enc-renormalize applies to the multiplicative window only"),
        ({"diffwin_cross_segment_size": 0}, "--diffwin-cross-segment-size must be >= 1"),
        ({"diffwin_enc_attention": "cross"}, "diffwin_enc is not defined for cross attention"),
        ({"diffwin_dec_layers": "2-5"}, "out of range: the model has 3 layers"),
    ],
)
def test_bad_flags_give_clear_errors(tiny_data_bin, overrides, message):
    with pytest.raises(LocalityConfigError, match=message):
        build_model("transformer_diffwin", tiny_data_bin, overrides)


#: Nguyen et al. (2020) Table 1, WMT'14 En-De base with a shared 32k vocabulary
PAPER_PARAMETERS = {
    "transformer": 63e6,
    "transformer_diffwin_cross": 65e6,
    "transformer_diffwin_enc_dec": 68e6,
    "transformer_diffwin": 73e6,
}


def test_parameter_counts_against_the_paper(capsys):
    """Each AW block adds W_L, W_R, W_loc for queries and keys (6 C^2), each MW block W_L, W_R (4 C^2)."""
    counts = {arch: count_parameters(recipe_model(arch, "wmt14")) for arch in PAPER_PARAMETERS}
    c2 = 512 * 512
    expected_extra = {"transformer_diffwin_cross": 3 * 6 * c2, "transformer_diffwin_enc_dec": 3 * 6 * c2 + 3 * 4 * c2,
                      "transformer_diffwin": 2 * 3 * 6 * c2 + 3 * 4 * c2}
    with capsys.disabled():
        print("\narchitecture                  ours     paper   (WMT'14 En-De, shared 32768-type vocabulary)")
        for arch, paper in PAPER_PARAMETERS.items():
            print(f"{arch:28s} {counts[arch] / 1e6:6.1f}M  {paper / 1e6:5.0f}M")
    for arch, extra in expected_extra.items():
        assert counts[arch] - counts["transformer"] == extra, arch
        # the totals agree with Table 1 to within rounding; only the baseline row differs (see the docs)
        assert abs(counts[arch] - PAPER_PARAMETERS[arch]) < 0.9e6, arch
    assert round(counts["transformer"] / 1e6, 1) == 60.9


@pytest.mark.parametrize("arch", DIFFWIN_ARCHS)
def test_cli_train_and_generate(tiny_data_bin, tmp_path, arch):
    out = train_and_generate(tiny_data_bin, tmp_path, arch, updates=10)
    assert "BLEU" in out
