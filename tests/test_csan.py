"""Convolutional self-attention (Yang et al. 2019): 1D-CSAN and 2D-CSAN, dense and banded."""

import pytest
import torch
from fairseq.modules import MultiheadAttention

from fairseq_localness.attention import AttentionSpec, LocalityAttention, LocalityConfigError
from fairseq_localness.methods.baselines import LocalHard, LocalHardOptions
from fairseq_localness.methods.csan import (
    Csan1d,
    Csan1dOptions,
    Csan2d,
    Csan2dOptions,
    banded_area_attention,
    dense_area_attention,
)
from localness_testing import (
    assert_incremental_parity,
    assert_padding_invariance,
    build_model,
    random_batch,
    train_and_generate,
)

IDENTITY = lambda x: x  # noqa: E731  (no dropout)


def spec(dim=16, heads=4, attn_type="encoder"):
    return AttentionSpec(embed_dim=dim, num_heads=heads, attn_type=attn_type, layer=1, kdim=dim, max_positions=64)


def band(tgt_len, src_len, left, right):
    """(T, S) additive band: 0 where -left <= j - i <= right (queries are the last T keys)."""
    i = torch.arange(src_len - tgt_len, src_len).unsqueeze(1)
    distance = torch.arange(src_len).unsqueeze(0) - i
    return torch.zeros(tgt_len, src_len).masked_fill((distance < -left) | (distance > right), float("-inf"))


def same_weights(model, reference):
    """Load ``reference``'s weights into ``model`` (CSANs have no parameters of their own)."""
    model.load_state_dict(reference.state_dict())
    return model


def forward_and_grads(model, task, seed=1):
    src, lengths, prev = random_batch(task, batch=3, src_len=10, tgt_len=8, seed=seed)
    model.zero_grad()
    logits = model(src, lengths, prev)[0]
    logits.logsumexp(-1).sum().backward()
    return logits.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


# --- the kernels -----------------------------------------------------------------------------------


@pytest.mark.parametrize("left,right", [(5, 5), (10, 0), (2, 7), (0, 0)])
@pytest.mark.parametrize("offsets,wrap", [([0], False), ([-1, 0, 1], False), ([-1, 0, 1], True), ([-2, -1, 0, 1, 2], False)])
@pytest.mark.parametrize("block", [1, 3, 32])
def test_banded_equals_dense_reference(left, right, offsets, wrap, block):
    """Values and gradients, with left padding and a query-dependent extra bias; padding queries excluded."""
    gen = torch.Generator().manual_seed(0)
    batch, heads, length, dim = 2, 5, 13, 4
    q, k, v = (torch.randn(batch, heads, length, dim, generator=gen, requires_grad=True) for _ in range(3))
    extra = torch.randn(batch, heads, length, length, generator=gen, requires_grad=True)
    padding = torch.zeros(batch, 1, 1, length)
    padding[1, ..., :3] = float("-inf")
    real = torch.ones(batch, 1, length, 1)
    real[1, :, :3] = 0
    banded = banded_area_attention(q, k, v, 0.5, padding + extra, left, right, block, offsets, wrap, IDENTITY) * real
    dense, _ = dense_area_attention(q, k, v, 0.5, band(length, length, left, right) + padding + extra, offsets, wrap, IDENTITY)
    dense = dense * real
    torch.testing.assert_close(banded, dense, atol=1e-5, rtol=0)
    weights = torch.randn(banded.shape, generator=gen)
    grads_banded = torch.autograd.grad((banded * weights).sum(), (q, k, v, extra))
    grads_dense = torch.autograd.grad((dense * weights).sum(), (q, k, v, extra))
    for ours, reference in zip(grads_banded, grads_dense):
        torch.testing.assert_close(ours, reference, atol=1e-5, rtol=0)


@pytest.mark.parametrize("left,right", [(4, 0), (2, 0)])
def test_banded_queries_are_the_last_keys(left, right):
    """Incremental decoding: T queries at the end of S cached keys."""
    gen = torch.Generator().manual_seed(0)
    q = torch.randn(2, 3, 2, 4, generator=gen)
    k, v = (torch.randn(2, 3, 9, 4, generator=gen) for _ in range(2))
    banded = banded_area_attention(q, k, v, 0.5, None, left, right, 32, [-1, 0, 1], False, IDENTITY)
    dense, _ = dense_area_attention(q, k, v, 0.5, band(2, 9, left, right), [-1, 0, 1], False, IDENTITY)
    torch.testing.assert_close(banded, dense, atol=1e-5, rtol=0)


@pytest.mark.parametrize("wrap", [False, True])
@pytest.mark.parametrize("banded", [False, True])
def test_2d_area_by_hand(wrap, banded):
    """M = 3, N = 3 over 3 heads: the area of every query listed key by key, first and last head included."""
    gen = torch.Generator().manual_seed(0)
    heads, length, dim = 3, 5, 2
    q, k, v = (torch.randn(1, heads, length, dim, generator=gen) for _ in range(3))
    if banded:
        out = banded_area_attention(q, k, v, 1.0, None, 1, 1, 2, [-1, 0, 1], wrap, IDENTITY)
    else:
        out, probs = dense_area_attention(q, k, v, 1.0, band(length, length, 1, 1), [-1, 0, 1], wrap, IDENTITY)
        torch.testing.assert_close(probs.sum(-1), torch.ones(1, heads, length))
    for h in range(heads):
        if wrap:
            area_heads = [(h - 1) % heads, h, (h + 1) % heads]
        else:
            area_heads = [n for n in (h - 1, h, h + 1) if 0 <= n < heads]
        # the first head's area has no head before it, the last none after it (unless wrapping)
        assert len(area_heads) == (3 if wrap or h == 1 else 2)
        for i in range(length):
            area = [(n, j) for n in area_heads for j in (i - 1, i, i + 1) if 0 <= j < length]
            scores = torch.tensor([float(q[0, h, i] @ k[0, n, j]) for n, j in area])
            weights = torch.softmax(scores, dim=0)
            expected = sum(w * v[0, n, j] for w, (n, j) in zip(weights, area))
            torch.testing.assert_close(out[0, h, i], expected, atol=1e-5, rtol=0)


# --- the methods in a model ---------------------------------------------------------------------------


@pytest.mark.parametrize("implementation", ["dense", "banded"])
def test_window_covering_the_sentence_is_vanilla_attention(tiny_data_bin, implementation):
    reference, task = build_model("transformer_localness", tiny_data_bin)
    flags = {"csan1d_attention": "encoder,decoder", "csan1d_window": 41, "csan1d_implementation": implementation}
    model = same_weights(build_model("transformer_csan1d", tiny_data_bin, flags)[0], reference)
    src, lengths, prev = random_batch(task, batch=3, src_len=10, tgt_len=8)
    with torch.no_grad():
        torch.testing.assert_close(model(src, lengths, prev)[0], reference(src, lengths, prev)[0], atol=1e-5, rtol=0)


def test_small_window_changes_the_output(tiny_data_bin):
    reference, task = build_model("transformer_localness", tiny_data_bin)
    model = same_weights(build_model("transformer_csan1d", tiny_data_bin, {"csan1d_window": 3})[0], reference)
    src, lengths, prev = random_batch(task, batch=3, src_len=10, tgt_len=8)
    with torch.no_grad():
        assert (model(src, lengths, prev)[0] - reference(src, lengths, prev)[0]).abs().max() > 1e-3


@pytest.mark.parametrize("method", ["csan1d", "csan2d"])
@pytest.mark.parametrize("decoder_window", ["left", "centred"])
def test_banded_model_equals_dense_model(tiny_data_bin, method, decoder_window):
    """Whole model, encoder and decoder self-attention, block size not dividing the length: values and gradients."""
    flags = {f"{method}_attention": "encoder,decoder", f"{method}_window": 5, f"{method}_decoder_window": decoder_window,
             f"{method}_block_size": 3}
    dense, task = build_model(f"transformer_{method}", tiny_data_bin, {**flags, f"{method}_implementation": "dense"})
    banded = same_weights(build_model(f"transformer_{method}", tiny_data_bin, {**flags, f"{method}_implementation": "banded"})[0], dense)
    dense_logits, dense_grads = forward_and_grads(dense.train(), task)
    banded_logits, banded_grads = forward_and_grads(banded.train(), task)
    torch.testing.assert_close(banded_logits, dense_logits, atol=1e-5, rtol=0)
    assert dense_grads.keys() == banded_grads.keys() and len(dense_grads) > 0
    for name in dense_grads:
        torch.testing.assert_close(banded_grads[name], dense_grads[name], atol=1e-5, rtol=0, msg=name)


@pytest.mark.parametrize("implementation", ["dense", "banded"])
def test_2d_with_one_head_equals_1d(tiny_data_bin, implementation):
    one, task = build_model("transformer_csan1d", tiny_data_bin, {
        "csan1d_attention": "encoder,decoder", "csan1d_window": 3, "csan1d_implementation": implementation})
    two = same_weights(build_model("transformer_csan2d", tiny_data_bin, {
        "csan2d_attention": "encoder,decoder", "csan2d_window": 3, "csan2d_heads": 1,
        "csan2d_implementation": implementation})[0], one)
    src, lengths, prev = random_batch(task, batch=3, src_len=10, tgt_len=8)
    with torch.no_grad():
        torch.testing.assert_close(two(src, lengths, prev)[0], one(src, lengths, prev)[0], atol=1e-5, rtol=0)


def test_2d_edge_options_differ(tiny_data_bin):
    drop, task = build_model("transformer_csan2d", tiny_data_bin)
    wrap = same_weights(build_model("transformer_csan2d", tiny_data_bin, {"csan2d_head_edge": "wrap"})[0], drop)
    src, lengths, prev = random_batch(task, batch=3, src_len=10, tgt_len=8)
    with torch.no_grad():
        assert (drop(src, lengths, prev)[0] - wrap(src, lengths, prev)[0]).abs().max() > 1e-4


@pytest.mark.parametrize("method", ["csan1d", "csan2d"])
def test_attention_weights_stay_in_the_window(method):
    """need_weights forces the dense path; no probability leaves the M-window, rows sum to one."""
    options = (Csan1dOptions if method == "csan1d" else Csan2dOptions)(window=3)
    cls = Csan1d if method == "csan1d" else Csan2d
    attention = LocalityAttention(16, 4, spec(), [(cls, options)], self_attention=True).eval()
    x = torch.randn(7, 2, 16)
    padding = torch.zeros(2, 7, dtype=torch.bool)
    padding[1, :2] = True
    fast, _ = attention(x, x, x, key_padding_mask=padding, need_weights=False)
    explicit, weights = attention(x, x, x, key_padding_mask=padding, need_weights=True, need_head_weights=True)
    torch.testing.assert_close(fast[:, 0], explicit[:, 0], atol=1e-5, rtol=0)
    torch.testing.assert_close(fast[2:, 1], explicit[2:, 1], atol=1e-5, rtol=0)
    outside = band(7, 7, 1, 1).isneginf()
    assert weights[:, 0][..., outside].abs().max() == 0
    assert weights[:, 1, 2:][..., outside[2:]].abs().max() == 0  # real queries of the padded sentence
    torch.testing.assert_close(weights.sum(-1), torch.ones(4, 2, 7))


@pytest.mark.parametrize(
    "arch,overrides",
    [
        ("transformer_csan1d", {"csan1d_attention": "encoder,decoder", "csan1d_window": 3}),
        ("transformer_csan1d", {"csan1d_attention": "encoder,decoder", "csan1d_window": 5, "csan1d_implementation": "banded",
                                "csan1d_block_size": 2}),
        ("transformer_csan1d", {"csan1d_attention": "decoder", "csan1d_window": 5, "csan1d_decoder_window": "centred",
                                "csan1d_implementation": "banded"}),
        ("transformer_csan2d", {"csan2d_attention": "encoder,decoder", "csan2d_window": 3}),
        ("transformer_csan2d", {"csan2d_attention": "encoder,decoder", "csan2d_window": 5, "csan2d_implementation": "banded",
                                "csan2d_block_size": 2, "csan2d_head_edge": "wrap"}),
    ],
)
def test_incremental_decoding_and_padding(tiny_data_bin, arch, overrides):
    model, task = build_model(arch, tiny_data_bin, overrides)
    assert_incremental_parity(model, task)
    assert_padding_invariance(model, task)


@pytest.mark.parametrize("arch", ["transformer_csan1d", "transformer_csan2d"])
def test_no_added_parameters(tiny_data_bin, arch):
    reference, _ = build_model("transformer_localness", tiny_data_bin)
    model, _ = build_model(arch, tiny_data_bin, {arch.split("_")[1] + "_attention": "encoder,decoder", arch.split("_")[1] + "_layers": "all"})
    assert any(isinstance(m, LocalityAttention) for m in model.modules())
    assert [(n, p.shape) for n, p in model.named_parameters()] == [(n, p.shape) for n, p in reference.named_parameters()]


def saved_activation_bytes(attention, x, padding):
    """Bytes of the distinct tensors autograd keeps for backward in one call (activation memory)."""
    storages = {}

    def pack(tensor):
        storage = tensor.untyped_storage()
        storages[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        attention(x, x, x, key_padding_mask=padding, need_weights=False)[0].sum()
    return sum(storages.values())


def test_banded_layer_keeps_less_memory_at_length_512():
    """At T = 512 the 1D-CSAN layer (auto: banded) keeps several times less for backward than full attention
    that materialises the T x S probabilities: fairseq's own attention with attention dropout, and the dense band.

    (PyTorch's fused attention without dropout keeps O(T) too; see docs/methods/yang2019-csan.md.)
    """
    torch.manual_seed(0)
    layers = {
        "banded": LocalityAttention(64, 4, spec(64, 4), [(Csan1d, Csan1dOptions())], self_attention=True, dropout=0.1),
        "dense": LocalityAttention(64, 4, spec(64, 4), [(Csan1d, Csan1dOptions(implementation="dense"))],
                                   self_attention=True, dropout=0.1),
        "fairseq": MultiheadAttention(64, 4, self_attention=True, dropout=0.1),
    }
    x = torch.randn(512, 2, 64, requires_grad=True)
    padding = torch.zeros(2, 512, dtype=torch.bool)
    padding[1, :100] = True
    kept = {name: saved_activation_bytes(layer.train(), x, padding) for name, layer in layers.items()}
    full_probabilities = 2 * 4 * 512 * 512 * 4  # one (B, H, T, S) float32 tensor
    assert kept["dense"] >= full_probabilities and kept["fairseq"] >= full_probabilities
    assert kept["banded"] * 4 < min(kept["dense"], kept["fairseq"]), kept


@pytest.mark.parametrize(
    "options,message",
    [
        (Csan1dOptions(window=4), "--csan1d-window must be an odd number >= 1"),
        (Csan1dOptions(window=0), "--csan1d-window must be an odd number >= 1"),
        (Csan1dOptions(block_size=0), "--csan1d-block-size must be >= 1"),
        (Csan2dOptions(heads=2), "--csan2d-heads must be an odd number >= 1"),
    ],
)
def test_bad_options(options, message):
    with pytest.raises(LocalityConfigError, match=message):
        options.validate("csan2d" if isinstance(options, Csan2dOptions) else "csan1d")


def test_bad_combinations():
    with pytest.raises(LocalityConfigError, match="--csan2d-heads 5 exceeds the 4 attention heads"):
        Csan2d(Csan2dOptions(heads=5), spec())
    with pytest.raises(LocalityConfigError, match="csan1d, csan2d each replace the attention computation"):
        LocalityAttention(16, 4, spec(), [(Csan1d, Csan1dOptions()), (Csan2d, Csan2dOptions())], self_attention=True)
    with pytest.raises(LocalityConfigError, match="csan2d replaces the attention computation and cannot share a block with localhard"):
        LocalityAttention(16, 4, spec(), [(Csan2d, Csan2dOptions()), (LocalHard, LocalHardOptions())], self_attention=True)
    # 1D-CSAN falls back to its dense band, which composes with post-softmax methods
    attention = LocalityAttention(16, 4, spec(), [(Csan1d, Csan1dOptions(implementation="banded")), (LocalHard, LocalHardOptions())],
                                  self_attention=True)
    x = torch.randn(5, 2, 16)
    assert torch.isfinite(attention(x, x, x)[0]).all()


def test_bad_flags_through_fairseq(tiny_data_bin):
    with pytest.raises(LocalityConfigError, match="csan1d is not defined for cross attention"):
        build_model("transformer_csan1d", tiny_data_bin, {"csan1d_attention": "cross"})
    with pytest.raises(SystemExit):  # argparse rejects the choice
        build_model("transformer_csan2d", tiny_data_bin, {"csan2d_head_edge": "replicate"})


@pytest.mark.parametrize("arch", ["transformer_csan1d", "transformer_csan2d_iwslt_de_en"])
def test_train_and_generate(tiny_data_bin, tmp_path, arch):
    method = arch.split("_")[1]
    train_and_generate(tiny_data_bin, tmp_path, arch, ["--" + method + "-attention", "encoder,decoder"], updates=20)
