"""Hybrid local/global attention (Xu et al. 2019)."""

import pytest
import torch

from fairseq_localness.attention import AttentionSpec, LocalityAttention, LocalityConfigError
from fairseq_localness.attention.core import capture_locality
from fairseq_localness.methods.hybrid import HybridLocalGlobal, HybridOptions
from localness_testing import (
    assert_incremental_parity,
    assert_padding_invariance,
    build_model,
    random_batch,
    train_and_generate,
)


def spec(dim=16, heads=4):
    return AttentionSpec(embed_dim=dim, num_heads=heads, attn_type="encoder", layer=1, kdim=dim, max_positions=64)


def outputs(model, task):
    src, lengths, prev = random_batch(task, batch=3, src_len=10, tgt_len=8)
    with torch.no_grad():
        return model(src, lengths, prev)[0]


def shared_weights(model, reference):
    """Copy every parameter the two models share (the gate or concat projection stays the model's own)."""
    own = model.state_dict()
    own.update({k: v for k, v in reference.state_dict().items() if k in own})
    model.load_state_dict(own)
    return model


@pytest.mark.parametrize("attention", ["encoder", "encoder,decoder"])
def test_gate_zero_is_vanilla_and_gate_one_is_local(tiny_data_bin, monkeypatch, attention):
    flags = {"hybrid_attention": attention}
    vanilla, task = build_model("transformer_localness", tiny_data_bin)
    local = shared_weights(build_model("transformer_hybrid_local", tiny_data_bin, {**flags, "hybrid_combine": "local"})[0], vanilla)
    hybrid = shared_weights(build_model("transformer_hybrid_local", tiny_data_bin, flags)[0], vanilla)
    for forced, reference in ((0.0, vanilla), (1.0, local)):
        monkeypatch.setattr(HybridLocalGlobal, "gate", lambda self, ctx, g=forced: torch.full((*ctx.query_input.shape[:2], 1), g))
        torch.testing.assert_close(outputs(hybrid, task), outputs(reference, task), atol=1e-5, rtol=0)
    monkeypatch.undo()
    # the learned gate lies strictly between the two patterns
    mixed = outputs(hybrid, task)
    assert (mixed - outputs(vanilla, task)).abs().max() > 1e-4 and (mixed - outputs(local, task)).abs().max() > 1e-4


@pytest.mark.parametrize("per_head", [False, True])
def test_the_weights_returned_are_the_gated_mixture_the_output_is_made_of(per_head):
    """Eq. 4: O = (1 - g) P^G V + g P^L V, so the layer's weights are (1 - g) P^G + g P^L, not the global softmax
    alone: the output projection of (weights x V) is the layer's output, and by hand P^L is the softmax of the
    same logits inside |i - j| <= m."""
    torch.manual_seed(0)
    heads, dim, m = 4, 16, 1
    attention = LocalityAttention(dim, heads, spec(), [(HybridLocalGlobal, HybridOptions(window=m, gate_per_head=per_head))],
                                  self_attention=True).eval()
    x = torch.randn(7, 2, dim)
    out, weights = attention(x, x, x, need_weights=True, need_head_weights=True)  # weights (H, B, T, S)
    v = attention.v_proj(x).view(7, 2, heads, dim // heads)  # (S, B, H, d)
    mixed = torch.einsum("hbts,sbhd->tbhd", weights, v).reshape(7, 2, dim)
    torch.testing.assert_close(attention.out_proj(mixed), out, atol=1e-5, rtol=0)
    # by hand, head 0 of sentence 0: logits q k / sqrt(d), the gate sigmoid(W_g x)
    q = attention.q_proj(x)[:, 0].view(7, heads, -1)[:, 0] * (dim // heads) ** -0.5
    k = attention.k_proj(x)[:, 0].view(7, heads, -1)[:, 0]
    logits = q @ k.T
    band = (torch.arange(7)[:, None] - torch.arange(7)[None, :]).abs() <= m
    g = torch.sigmoid(attention.locality[0].gate_proj(x[:, 0]))[:, 0:1]  # (T, 1): head 0's (or the one) gate
    expected = (1 - g) * logits.softmax(-1) + g * logits.masked_fill(~band, float("-inf")).softmax(-1)
    torch.testing.assert_close(weights[0, 0], expected, atol=1e-6, rtol=0)
    assert (weights.sum(-1) - 1).abs().max() < 1e-5


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=str)
@pytest.mark.parametrize("extra", ["none", "localhard-bias", "localhard-multiply"])
def test_the_mixture_is_the_local_softmax_the_output_used(extra, dtype):
    """P^L in the returned weights is the local pattern as the output attended with it, with another method on
    the layer too (a hard window that hides every key of a row, a multiplicative one), and in half precision where
    P^G's in-band entries underflow (a P^L taken as P^G renormalised in the band would be 0/0 there):
    out_proj(weights x V) is the layer's output."""
    from fairseq_localness.methods.baselines import LocalHard, LocalHardOptions

    torch.manual_seed(0)
    methods = [(HybridLocalGlobal, HybridOptions(window=1))]
    if extra != "none":
        methods.append((LocalHard, LocalHardOptions(gaussian=extra.split("-")[1], window=1.0)))
    attention = LocalityAttention(16, 4, spec(), methods, self_attention=True).eval()
    with torch.no_grad():
        attention.q_proj.weight.mul_(12.0)  # peaked rows: in-band probabilities of P^G far below their maximum
        x = torch.randn(9, 2, 16)
        attention, x = attention.to(dtype), x.to(dtype)
        if dtype == torch.float16:  # the data this case is for: P^G underflows to 0 inside the band
            q = attention.q_proj(x).view(9, 2, 4, 4) * 0.5
            k = attention.k_proj(x).view(9, 2, 4, 4)
            global_probs = torch.einsum("tbhd,sbhd->bhts", q, k).softmax(-1)
            band = (torch.arange(9)[:, None] - torch.arange(9)[None, :]).abs() <= 1
            assert (global_probs[..., band] == 0).any()
        out, weights = attention(x, x, x, need_weights=True, need_head_weights=True)
        assert torch.isfinite(out).all() and torch.isfinite(weights).all()
        v = attention.v_proj(x).view(9, 2, 4, 4)
        mixed = torch.einsum("hbts,sbhd->tbhd", weights.to(dtype), v).reshape(9, 2, 16)
        scale = out.float().abs().max().item()
        tolerance = {torch.float32: 1e-5, torch.float16: 5e-3, torch.bfloat16: 4e-2}[dtype] * max(scale, 1.0)
        torch.testing.assert_close(attention.out_proj(mixed).float(), out.float(), atol=tolerance, rtol=0)


def test_a_query_whose_window_hides_every_key_attends_only_to_keys_it_may_see():
    """Decoder self-attention: where the methods' windows leave a query no visible key (here Luong's hard window
    and the hybrid's band share none), the query attends over the keys the causal mask allows, not over every key:
    changing only the last token leaves every earlier output as it was, as incremental decoding computes it."""
    from fairseq_localness.methods.baselines import LocalHard, LocalHardOptions

    torch.manual_seed(0)
    decoder = AttentionSpec(embed_dim=16, num_heads=4, attn_type="decoder", layer=1, kdim=16, max_positions=64)
    methods = [(HybridLocalGlobal, HybridOptions(window=1, attention="decoder")),
               (LocalHard, LocalHardOptions(attention="decoder", gaussian="bias", window=1.0))]
    attention = LocalityAttention(16, 4, decoder, methods, self_attention=True).eval()
    causal = torch.triu(torch.full((8, 8), float("-inf")), 1)
    torch.manual_seed(5)
    x = torch.randn(8, 2, 16)
    changed = x.clone()
    changed[-1] += 10.0
    with torch.no_grad():
        out, weights = attention(x, x, x, attn_mask=causal, need_weights=True, need_head_weights=True)
        out_changed, _ = attention(changed, changed, changed, attn_mask=causal)
    torch.testing.assert_close(out_changed[:-1], out[:-1], atol=1e-6, rtol=0)
    assert weights.triu(1).abs().max() == 0 and (weights.sum(-1) - 1).abs().max() < 1e-5


def test_local_pattern_sees_only_the_band():
    """B(xi) masks |i - j| > m: the local pattern's weights are zero outside the band, rows sum to one."""
    torch.manual_seed(0)
    attention = LocalityAttention(16, 4, spec(), [(HybridLocalGlobal, HybridOptions(combine="local", window=2))],
                                  self_attention=True).eval()
    x = torch.randn(9, 2, 16)
    padding = torch.zeros(2, 9, dtype=torch.bool)
    padding[1, :3] = True
    _, weights = attention(x, x, x, key_padding_mask=padding, need_head_weights=True)  # (H, B, T, S)
    i = torch.arange(9)
    outside = (i[None] - i[:, None]).abs() > 2
    assert weights[:, 0][..., outside].abs().max() == 0
    assert weights[:, 1, 3:][..., outside[3:]].abs().max() == 0 and weights[:, 1, 3:, :3].abs().max() == 0
    torch.testing.assert_close(weights[:, 0].sum(-1), torch.ones(4, 9))


@pytest.mark.parametrize("per_head,gate_input", [(False, "input"), (True, "query")])
def test_gate_is_eq5_and_captured_per_layer_and_position(tiny_data_bin, per_head, gate_input):
    flags = {"hybrid_gate_per_head": per_head, "hybrid_gate_input": gate_input}
    model, task = build_model("transformer_hybrid_local", tiny_data_bin, flags)
    src, lengths, prev = random_batch(task, batch=3, src_len=10, tgt_len=8)
    layer_inputs = {}
    hooks = [layer.self_attn.register_forward_pre_hook(
        lambda m, args, kwargs, n=n: layer_inputs.__setitem__(n + 1, kwargs.get("query", args[0] if args else None)),
        with_kwargs=True) for n, layer in enumerate(model.encoder.layers)]
    with torch.no_grad(), capture_locality(model) as captured:
        model(src, lengths, prev)
    for hook in hooks:
        hook.remove()
    gates = captured.by_layer("hybrid_gate", "encoder")
    assert sorted(gates) == [1, 2]  # the paper's layers 1-2
    for layer, gate in gates.items():
        attention = model.encoder.layers[layer - 1].self_attn
        source = layer_inputs[layer].transpose(0, 1)  # H_i, (B, T, C)
        if gate_input == "query":
            source = attention.q_proj(source) * attention.head_dim**-0.5  # the released code's scaled queries
        expected = torch.sigmoid(source @ attention.locality[0].gate_proj.weight.t())  # Eq. 5
        assert gate.shape == (3, 10, 4 if per_head else 1)
        torch.testing.assert_close(gate, expected)
    assert all(m.capture is None for m in model.modules() if isinstance(m, LocalityAttention))


def test_gates_captured_at_every_decoding_step(tiny_data_bin):
    model, task = build_model("transformer_hybrid_local", tiny_data_bin, {"hybrid_attention": "decoder", "hybrid_layers": "2"})
    src, lengths, prev = random_batch(task, batch=2, src_len=6, tgt_len=4)
    state = {}
    with torch.no_grad(), capture_locality(model) as captured:
        encoder_out = model.encoder(src, src_lengths=lengths)
        for t in range(4):
            model.decoder(prev[:, : t + 1], encoder_out=encoder_out, incremental_state=state)
    steps = captured.calls[("decoder", 2)]
    assert len(steps) == 4 and all(step["hybrid_gate"].shape == (2, 1, 1) for step in steps)


def test_parameters_added():
    """Gate: W_g is C x 1 (C x H per head); concat into W_O: W_c is C x C; concat projection: 2C x C; local: nothing."""
    dim, heads = 16, 4
    counts = {}
    for name, options in {"gate": HybridOptions(), "per_head": HybridOptions(gate_per_head=True),
                          "concat": HybridOptions(combine="concat"),
                          "concat_projection": HybridOptions(combine="concat", concat_into="projection"),
                          "local": HybridOptions(combine="local")}.items():
        counts[name] = sum(p.numel() for p in HybridLocalGlobal(options, spec(dim, heads)).parameters())
    assert counts == {"gate": dim, "per_head": dim * heads, "concat": dim * dim, "concat_projection": 2 * dim * dim,
                      "local": 0}


@pytest.mark.parametrize("concat_into", ["output", "projection"])
@torch.no_grad()
def test_concat_is_a_linear_map_of_both_patterns(concat_into):
    """output: W_O (O^G + W_c O^L) = W_O [O^G; O^L] with W_O^L = W_O W_c; projection: W_O W_c [O^G; O^L]."""
    torch.manual_seed(0)
    options = HybridOptions(combine="concat", concat_into=concat_into, window=1)
    attention = LocalityAttention(16, 4, spec(), [(HybridLocalGlobal, options)], self_attention=True).eval()
    x = torch.randn(6, 2, 16)
    out, _ = attention(x, x, x, need_weights=False)
    q, k, v = (proj(x).view(6, 2, 4, 4).permute(1, 2, 0, 3) for proj in (attention.q_proj, attention.k_proj, attention.v_proj))
    logits = q @ k.transpose(-1, -2) / 2
    band = (torch.arange(6)[None] - torch.arange(6)[:, None]).abs() > 1
    merge = lambda o: o.permute(2, 0, 1, 3).reshape(6, 2, 16)  # noqa: E731
    glob = merge(torch.softmax(logits, -1) @ v)
    local = merge(torch.softmax(logits.masked_fill(band, float("-inf")), -1) @ v)
    w_c = attention.locality[0].concat_proj.weight
    mixed = glob + local @ w_c.t() if concat_into == "output" else torch.cat([glob, local], -1) @ w_c.t()
    torch.testing.assert_close(out, attention.out_proj(mixed), atol=1e-5, rtol=1e-4)


@pytest.mark.parametrize("combine,concat_into", [("gate", "output"), ("concat", "output"), ("concat", "projection"), ("local", "output")])
def test_incremental_decoding_and_padding(tiny_data_bin, combine, concat_into):
    model, task = build_model("transformer_hybrid_local", tiny_data_bin, {
        "hybrid_attention": "encoder,decoder", "hybrid_combine": combine, "hybrid_gate_per_head": combine == "gate",
        "hybrid_layers": "all", "hybrid_concat_into": concat_into})
    assert_incremental_parity(model, task)
    assert_padding_invariance(model, task)


def test_bad_flags(tiny_data_bin):
    with pytest.raises(LocalityConfigError, match="--hybrid-window must be >= 0"):
        build_model("transformer_hybrid_local", tiny_data_bin, {"hybrid_window": -1})
    with pytest.raises(LocalityConfigError, match="hybrid is not defined for cross attention"):
        build_model("transformer_hybrid_local", tiny_data_bin, {"hybrid_attention": "cross"})
    with pytest.raises(SystemExit):  # argparse rejects the choice
        build_model("transformer_hybrid_local", tiny_data_bin, {"hybrid_combine": "sum"})


def test_train_and_generate(tiny_data_bin, tmp_path):
    train_and_generate(tiny_data_bin, tmp_path, "transformer_hybrid_local", ["--hybrid-combine", "concat"], updates=20)
