"""Gaussian localness (Yang et al. 2018) and relative positions (Shaw et al. 2018)."""

import math

import pytest
import torch
from fairseq.modules import MultiheadAttention

from fairseq_localness.modelbuild import parameter_delta
from fairseq_localness.attention import AttentionSpec, LocalityAttention
from fairseq_localness.attention.context import AttentionContext
from fairseq_localness.methods.gaussian import GaussianLocalness, GaussianOptions
from fairseq_localness.methods.relative_position import RelativePositionOptions, RelativePositions
from localness_testing import (
    assert_incremental_parity,
    assert_padding_invariance,
    build_model,
    run,
    train_and_generate,
    train_command,
    BIN,
    USER_DIR,
)

GAUSSIAN_ARCHS = ["transformer_gaussian_local", "transformer_relpos", "transformer_gaussian_local_relpos"]


def make_context(batch=2, heads=2, length=5, head_dim=3, pad_first=0, causal=False, seed=0):
    gen = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(batch, heads, length, head_dim, generator=gen) for _ in range(3))
    padding = torch.zeros(batch, length, dtype=torch.bool)
    padding[0, :pad_first] = True  # left padding, as fairseq pads sources
    return AttentionContext(
        q=q, k=k, v=v, query_input=torch.randn(batch, length, heads * head_dim, generator=gen), key_input=None,
        key_padding_mask=padding if pad_first else None, attn_mask=None, causal=causal,
        attn_type="decoder" if causal else "encoder", layer=1, scaling=head_dim**-0.5,
    )


def spec(dim=6, heads=2, attn_type="encoder"):
    return AttentionSpec(embed_dim=dim, num_heads=heads, attn_type=attn_type, layer=1, kdim=dim, max_positions=64)


@pytest.mark.parametrize("pad_first", [0, 2])
def test_gaussian_bias_matches_hand_computation(pad_first):
    """Eq. 5-10 computed element by element, with I the unpadded sentence length."""
    torch.manual_seed(0)
    method = GaussianLocalness(GaussianOptions(), spec())
    ctx = make_context(pad_first=pad_first)
    bias = method.logit_bias(ctx)
    w_p, u_p, u_d = method.w_p.weight, method.u_p.weight, method.u_d.weight
    for b in range(2):
        n_pad = pad_first if b == 0 else 0
        length = 5 - n_pad  # I
        for i in range(5):
            query = ctx.q[b, :, i, :].reshape(-1)  # heads concatenated
            hidden = torch.tanh(w_p @ query)
            for h in range(2):
                center = length * torch.sigmoid(u_p[h] @ hidden)
                window = length * torch.sigmoid(u_d[h] @ hidden)
                sigma = window / 2
                for j in range(n_pad, 5):
                    position = j - n_pad
                    expected = -((position - center) ** 2) / (2 * sigma**2)
                    assert math.isclose(bias[b, h, i, j].item(), expected.item(), rel_tol=1e-5, abs_tol=1e-5)


@pytest.mark.parametrize("window", ["fixed", "head", "layer"])
def test_window_strategies(window):
    torch.manual_seed(0)
    options = GaussianOptions(window=window, fixed_window=4.0)
    method = GaussianLocalness(options, spec())
    ctx = make_context()
    bias = method.logit_bias(ctx)
    assert bias.shape == (2, 2, 5, 5) and torch.isfinite(bias).all()
    if window == "fixed":
        # sigma = 2 everywhere: bias differences between neighbouring keys are set by the centre only
        center = 5 * torch.sigmoid(method.u_p(torch.tanh(method.w_p(ctx.query_proj)))).transpose(1, 2)
        expected = -((torch.arange(5.0) - center.unsqueeze(-1)) ** 2) / (2 * 2.0**2)
        torch.testing.assert_close(bias, expected)
    if window == "head":
        # D_m = 50 * sigmoid(0) = 25 for every head at initialisation
        recorded = {}
        ctx.records = recorded
        method.logit_bias(ctx)
        torch.testing.assert_close(recorded["gaussian_window"], torch.full((2, 5, 2), 25.0))
    if window == "layer":
        assert set(n for n, _ in method.named_parameters()) == {"w_p.weight", "u_p.weight", "u_d.weight", "w_d.weight"}


def test_layer_window_by_hand_from_the_mean_of_the_real_keys():
    """Eq. 8: D = I sigmoid(U_d^T tanh(W_d K_bar)), K_bar the mean of the real keys (padding left out: sentence 0
    has two padded positions, so I = 3 and K_bar the mean of its last three keys), the same for every query."""
    torch.manual_seed(0)
    method = GaussianLocalness(GaussianOptions(window="layer"), spec())
    ctx = make_context(pad_first=2)
    recorded = {}
    ctx.records = recorded
    method.logit_bias(ctx)
    keys = ctx.k.transpose(1, 2).reshape(2, 5, 6)  # (B, S, C): the heads' keys concatenated
    for b, first in ((0, 2), (1, 0)):
        length = 5 - first
        mean_key = keys[b, first:].sum(0) / length
        expected = length * torch.sigmoid(method.u_d.weight @ torch.tanh(method.w_d.weight @ mean_key))  # (H,)
        torch.testing.assert_close(recorded["gaussian_window"][b], expected.expand(5, -1), atol=1e-5, rtol=0)


def test_very_large_window_is_vanilla_attention():
    torch.manual_seed(0)
    dim, heads = 16, 4
    options = GaussianOptions(window="fixed", fixed_window=1e7)
    local = LocalityAttention(dim, heads, spec(dim, heads), [(GaussianLocalness, options)], self_attention=True).eval()
    vanilla = MultiheadAttention(dim, heads, self_attention=True).eval()
    vanilla.load_state_dict({k: v for k, v in local.state_dict().items() if not k.startswith("locality.")})
    x = torch.randn(7, 3, dim)
    padding = torch.zeros(3, 7, dtype=torch.bool)
    padding[1, :3] = True
    ours, _ = local(x, x, x, key_padding_mask=padding, need_weights=False)
    reference, _ = vanilla(x, x, x, key_padding_mask=padding, need_weights=False)
    torch.testing.assert_close(ours, reference, atol=1e-5, rtol=0)


def test_fast_path_equals_explicit_path():
    """SDPA with the bias and the explicit softmax path agree (need_weights forces the latter)."""
    torch.manual_seed(0)
    attention = LocalityAttention(16, 4, spec(16, 4), [(GaussianLocalness, GaussianOptions())], self_attention=True).eval()
    x = torch.randn(6, 2, 16)
    fast, none = attention(x, x, x, need_weights=False)
    explicit, weights = attention(x, x, x, need_weights=True)
    assert none is None and weights.shape == (2, 6, 6)
    torch.testing.assert_close(fast, explicit, atol=1e-5, rtol=0)


def test_gradients_reach_gaussian_parameters(tiny_data_bin):
    model, task = build_model("transformer_gaussian_local", tiny_data_bin, {"gaussian_attention": "encoder,decoder,cross"})
    model.train()
    src = torch.tensor([[5, 6, 7, 8, 2], [1, 1, 9, 10, 2]])
    prev = torch.tensor([[2, 5, 6], [2, 7, 8]])
    logits = model(src, torch.tensor([5, 3]), prev)[0]
    logits.logsumexp(-1).sum().backward()
    names = [n for n, _ in model.named_parameters() if ".locality." in n]
    assert names and {n.rsplit(".", 2)[-2] for n in names} == {"w_p", "u_p", "u_d"}
    for name, param in model.named_parameters():
        if ".locality." in name:
            assert param.grad is not None and param.grad.abs().sum() > 0, name


def test_relative_position_terms_match_direct_gather():
    """The bucketed key/value terms equal Shaw et al.'s Eq. 3-4 with a gathered a_ij tensor."""
    torch.manual_seed(0)
    options = RelativePositionOptions(max_distance=2)
    method = RelativePositions(options, spec())
    ctx = make_context(pad_first=1)
    rel = (ctx.key_positions.unsqueeze(1) - ctx.query_positions.unsqueeze(2)).clamp(-2, 2) + 2  # (B, T, S)
    a_k, a_v = method.key_embeddings[rel], method.value_embeddings[rel]  # (B, T, S, d)
    expected_bias = torch.einsum("bhtd,btsd->bhts", ctx.q * ctx.scaling, a_k)
    torch.testing.assert_close(method.logit_bias(ctx), expected_bias)
    probs = torch.softmax(torch.randn(2, 2, 5, 5), dim=-1)
    torch.testing.assert_close(method.value_term(ctx, probs), torch.einsum("bhts,btsd->bhtd", probs, a_v))


@pytest.mark.parametrize(
    "arch,overrides",
    [
        ("transformer_gaussian_local", {"gaussian_attention": "encoder,decoder,cross"}),
        ("transformer_gaussian_local", {"gaussian_attention": "decoder,cross", "gaussian_window": "layer"}),
        ("transformer_gaussian_local", {"gaussian_attention": "decoder", "gaussian_window": "head"}),
        ("transformer_gaussian_local", {"gaussian_attention": "decoder", "gaussian_window": "fixed"}),
        ("transformer_relpos", {}),
        ("transformer_gaussian_local_relpos", {"gaussian_attention": "encoder,decoder"}),
    ],
)
def test_incremental_decoding_and_padding(tiny_data_bin, arch, overrides):
    model, task = build_model(arch, tiny_data_bin, overrides)
    assert_incremental_parity(model, task)
    assert_padding_invariance(model, task)


def test_parameter_deltas_match_paper():
    """Yang et al. 2018 Table 4: Localness on 3 encoder layers adds 0.8M (base) and 3.3M (big); Rel_Pos 0.1M."""
    base, reference = parameter_delta("transformer_gaussian_local", "transformer", "wmt14")
    assert round((base - reference) / 1e6, 1) == 0.8
    big, reference_big = parameter_delta("transformer_gaussian_local_wmt_en_de_big", "transformer_wmt_en_de_big", "wmt14")
    # 3.244M; the paper's 307.2M - 303.9M = 3.3M is a difference of two numbers each rounded to 0.1M
    assert abs((big - reference_big) / 1e6 - 3.3) < 0.1
    relpos, reference = parameter_delta("transformer_relpos", "transformer", "wmt14")
    assert round((relpos - reference) / 1e6, 1) == 0.1


@pytest.mark.parametrize(
    "bad_flags,message",
    [
        (["--locality-methods", "gausian"], "unknown locality method 'gausian'"),
        (["--gaussian-layers", "1-9"], "out of range: the model has 3 layers"),
        (["--gaussian-layers", "0-2"], "layers are numbered from 1"),
        (["--gaussian-fixed-window", "0", "--gaussian-window", "fixed"], "--gaussian-fixed-window must be > 0"),
        (["--gaussian-attention", "encoder,crosss"], "unknown attention type 'crosss'"),
        (["--relpos-attention", "cross", "--locality-methods", "relpos"], "relpos is not defined for cross attention"),
    ],
)
def test_bad_flags_give_clear_errors(tiny_data_bin, tmp_path, bad_flags, message):
    proc = run(train_command(tiny_data_bin, tmp_path / "ckpt", "transformer_gaussian_local", bad_flags, updates=1), check=False)
    assert proc.returncode != 0
    assert message in proc.stderr, proc.stderr[-3000:]
    assert not (tmp_path / "ckpt" / "checkpoint_last.pt").exists()


def test_plain_transformer_unchanged_by_plugin(tiny_data_bin):
    """With the plugin loaded, `transformer` is fairseq's own; `transformer_localness` without methods equals it."""
    plain, task = build_model("transformer", tiny_data_bin)
    localness, _ = build_model("transformer_localness", tiny_data_bin)
    assert not any(isinstance(m, LocalityAttention) for m in plain.modules())
    assert not any(isinstance(m, LocalityAttention) for m in localness.modules())
    src = torch.tensor([[5, 6, 7, 8, 2], [1, 1, 9, 10, 2]])
    prev = torch.tensor([[2, 5, 6], [2, 7, 8]])
    with torch.no_grad():
        torch.testing.assert_close(plain(src, torch.tensor([5, 3]), prev)[0], localness(src, torch.tensor([5, 3]), prev)[0])


@pytest.mark.parametrize("arch", GAUSSIAN_ARCHS)
def test_cli_train_resume_generate(tiny_data_bin, tmp_path, arch):
    out = train_and_generate(tiny_data_bin, tmp_path, arch, updates=20)
    assert "BLEU" in out
    # resume: a second fairseq-train run in the same directory continues from checkpoint_last.pt
    proc = run(train_command(tiny_data_bin, tmp_path / arch, arch, updates=30))
    log = proc.stdout + proc.stderr
    assert "Loaded checkpoint" in log and "num_updates 30" in log.replace("num_updates=30", "num_updates 30"), log[-3000:]


def test_cli_interactive_loads_checkpoint(tiny_data_bin, tmp_path):
    arch = "transformer_gaussian_local"
    run(train_command(tiny_data_bin, tmp_path / arch, arch, updates=5))
    result = run(
        [str(BIN / "fairseq-interactive"), str(tiny_data_bin), "--user-dir", USER_DIR, "--path",
         str(tmp_path / arch / "checkpoint_last.pt"), "--beam", "2", "--source-lang", "src", "--target-lang", "tgt"],
        stdin="w1 w2 w3\n",
    )
    assert any(line.startswith("H-0") for line in result.stdout.splitlines()), result.stdout
