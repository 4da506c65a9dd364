"""Mask Attention Networks (Fan et al. 2021): DMAN/SMAN masks, MAN layers, archs, parameter counts."""

import math
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from fairseq.modules import MultiheadAttention

from fairseq_localness.modelbuild import count_parameters, parse_model_args, recipe_model
from fairseq_localness.architectures.man import PAPER_PARAMETERS
from fairseq_localness.layers.man import AttentionSubLayer, FeedForwardSubLayer, MANDecoderLayer, MANEncoderLayer
from fairseq_localness.attention import AttentionSpec, LocalityAttention, LocalityConfigError
from fairseq_localness.attention.context import AttentionContext
from fairseq_localness.methods.mask_attention import DMANOptions, DynamicMask, SMANOptions, StaticMask
from localness_testing import (
    assert_incremental_parity,
    assert_padding_invariance,
    build_model,
    generate_command,
    random_batch,
    run,
    train_command,
)

DIM, HEADS, LENGTH = 8, 2, 6


def spec(attn_type="encoder", max_positions=16):
    return AttentionSpec(embed_dim=DIM, num_heads=HEADS, attn_type=attn_type, layer=1, kdim=DIM, max_positions=max_positions)


def attention_pair(method, options, seed=0):
    """A LocalityAttention with ``method`` and fairseq's MultiheadAttention with the same weights."""
    torch.manual_seed(seed)
    masked = LocalityAttention(DIM, HEADS, spec(), [(method, options)], self_attention=True)
    plain = MultiheadAttention(DIM, HEADS, self_attention=True)
    plain.load_state_dict(masked.state_dict(), strict=False)
    return masked.eval(), plain.eval()


def left_padded_input(lengths=(LENGTH, 4), seed=1, dtype=torch.float32):
    """(T, B, C) input and (B, T) padding mask, sources left-padded as fairseq does."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(LENGTH, len(lengths), DIM, generator=gen).to(dtype)
    padding = torch.zeros(len(lengths), LENGTH, dtype=torch.bool)
    for b, n in enumerate(lengths):
        padding[b, : LENGTH - n] = True
    return x, padding


# --------------------------------------------------------------------------- Eq. 4 and the masks


@pytest.mark.parametrize("method,options", [
    (StaticMask, SMANOptions(window="fixed", width=LENGTH)),  # band wider than the sentence: M = 1
    (DynamicMask, None),  # U = +40: sigmoid(.) = 1 to within 1e-17
])
def test_all_ones_mask_is_vanilla_attention(method, options):
    masked, plain = attention_pair(method, options or DMANOptions())
    if method is DynamicMask:
        with torch.no_grad():
            masked.locality[0].head_bias.fill_(40.0)
    x, padding = left_padded_input()
    with torch.no_grad():
        ours, _ = masked(x, x, x, key_padding_mask=padding)
        theirs, _ = plain(x, x, x, key_padding_mask=padding)
    real = ~padding.t()
    torch.testing.assert_close(ours[real], theirs[real], atol=1e-6, rtol=0)


def eq12_mask(module: DynamicMask, h: torch.Tensor, positions) -> torch.Tensor:
    """M_i[t, s] = sigmoid(h_t W + P_{t-s} + U_i) for one sentence, element by element (Eq. 12).

    h: (T, C) sub-layer input of one sentence; positions: its real token indices.
    The table P is indexed by t - s from the lowest distance it holds.
    """
    lowest = 0 if module.causal else -module.max_distance
    n = len(positions)
    mask = torch.empty(module.spec.num_heads, n, n, dtype=torch.float64)
    w, p, u = (x.detach().double() for x in (module.context_weight, module.distance_bias, module.head_bias))
    for i in range(module.spec.num_heads):
        for t in range(n):
            for s in range(n):
                if module.causal and s > t:
                    mask[i, t, s] = float("nan")  # a future key: hidden by the causal mask, no Eq. 12 value
                    continue
                x = h[positions[t]].double() @ w + p[(t - s) - lowest] + u[i]
                mask[i, t, s] = 1 / (1 + math.exp(-x))
    return mask


def test_mask_attention_is_eq4_with_eq12_mask():
    """The module's output equals S_M(Q, K) V W^O with Eq. 4 and Eq. 12 computed literally; gradients reach W, P, U."""
    masked, _ = attention_pair(DynamicMask, DMANOptions())
    method = masked.locality[0]
    x, padding = left_padded_input()
    out, _ = masked(x, x, x, key_padding_mask=padding)
    d = DIM // HEADS
    for b in range(2):
        positions = [t for t in range(LENGTH) if not padding[b, t]]
        h = x[:, b]
        mask = eq12_mask(method, h, positions)
        q = masked.q_proj(h[positions]).double().view(-1, HEADS, d)
        k = masked.k_proj(h[positions]).double().view(-1, HEADS, d)
        v = masked.v_proj(h[positions]).double().view(-1, HEADS, d)
        heads = []
        for i in range(HEADS):
            weights = mask[i] * torch.exp(q[:, i] @ k[:, i].t() / math.sqrt(d))  # Eq. 4
            heads.append((weights / weights.sum(dim=1, keepdim=True)) @ v[:, i])
        expected = torch.cat(heads, dim=-1) @ masked.out_proj.weight.double().t() + masked.out_proj.bias.double()
        torch.testing.assert_close(out[positions, b].double(), expected, atol=1e-5, rtol=0)
    out[~padding.t()].pow(2).sum().backward()
    for param in (method.context_weight, method.distance_bias, method.head_bias):
        assert param.grad is not None and param.grad.abs().sum() > 0


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
def test_vanishing_masks_stay_finite(dtype):
    """M -> 0 everywhere (and a zero band outside SMAN's window): log M is clamped, no NaN or -inf rows."""
    for method, options in ((DynamicMask, DMANOptions()), (StaticMask, SMANOptions(window="fixed", width=0))):
        masked, _ = attention_pair(method, options)
        if method is DynamicMask:
            with torch.no_grad():
                masked.locality[0].head_bias.fill_(-1e6)
        masked = masked.to(dtype)
        masked.capture = {}
        x, padding = left_padded_input(dtype=dtype)
        with torch.no_grad():
            out, _ = masked(x, x, x, key_padding_mask=padding)
        log_mask = next(iter(masked.capture.values()))
        assert torch.isfinite(log_mask).all() and torch.isfinite(out).all(), (method.__name__, dtype)


def sman_context(lengths, causal=False, window="sqrt", width=4.0):
    batch, length = len(lengths), max(lengths)
    padding = torch.zeros(batch, length, dtype=torch.bool)
    for b, n in enumerate(lengths):
        if causal:
            padding[b, n:] = True  # targets are right-padded
        else:
            padding[b, : length - n] = True
    q = torch.zeros(batch, HEADS, length, DIM // HEADS)
    ctx = AttentionContext(
        q=q, k=q, v=q, query_input=torch.zeros(batch, length, DIM), key_input=None,
        key_padding_mask=padding, attn_mask=None, causal=causal,
        attn_type="decoder" if causal else "encoder", layer=1, scaling=1.0,
    )
    method = StaticMask(SMANOptions(window=window, width=width), spec("decoder" if causal else "encoder"))
    return (method.logit_bias(ctx)[:, 0] == 0).long(), padding  # M as 0/1, (B, T, S)


def test_sman_masks_by_hand():
    # SMAN1, sentence of 9 tokens: b = sqrt(9)/2 = 1.5 -> |t - s| <= 1; of 4 tokens (left-padded): b = 1
    mask, padding = sman_context([9, 4])
    tridiagonal_9 = [[1 if abs(t - s) <= 1 else 0 for s in range(9)] for t in range(9)]
    assert mask[0].tolist() == tridiagonal_9
    assert mask[1, 5:, 5:].tolist() == [[1, 1, 0, 0], [1, 1, 1, 0], [0, 1, 1, 1], [0, 0, 1, 1]]
    # SMAN1, 16 tokens: b = 2
    mask, _ = sman_context([16])
    assert mask[0, 7].tolist() == [0] * 5 + [1] * 5 + [0] * 6
    # SMAN2 with b = 2 on 5 tokens
    mask, _ = sman_context([5], window="fixed", width=2)
    assert mask[0].tolist() == [[1, 1, 1, 0, 0], [1, 1, 1, 1, 0], [1, 1, 1, 1, 1], [0, 1, 1, 1, 1], [0, 0, 1, 1, 1]]
    # SMAN1 in decoder self-attention: L is the prefix length t + 1, b = 0.5, 0.71, 0.87, 1, 1.12;
    # only s <= t matters (the causal mask removes the rest)
    mask, _ = sman_context([5], causal=True)
    lower = [[mask[0, t, s].item() for s in range(t + 1)] for t in range(5)]
    assert lower == [[1], [0, 1], [0, 0, 1], [0, 0, 1, 1], [0, 0, 0, 1, 1]]


# --------------------------------------------------------------------------- the MAN layer


def test_identity_mask_sublayer_is_ffn(tiny_data_bin):
    """Eq. 8-9: with M = I (SMAN, b = 0) and the FFN activation, a MAN sub-layer is an FFN with W1 = W^V, W2 = W^O."""
    model, _ = build_model("transformer_sman", tiny_data_bin, {
        "sman_window": "fixed", "sman_width": 0, "man_attention_relu": "true",
    })
    sublayer = model.encoder.layers[0].first_sublayer
    assert isinstance(sublayer, AttentionSubLayer)
    attention = sublayer.attention
    dim = attention.embed_dim
    ffn = FeedForwardSubLayer(
        fc1=torch.nn.Linear(dim, dim), fc2=torch.nn.Linear(dim, dim), activation_fn=torch.relu,
        activation_dropout=0.0, embed_dim=dim, dropout=0.0, normalize_before=sublayer.normalize_before,
    )
    ffn.fc1.load_state_dict(attention.v_proj.state_dict())
    ffn.fc2.load_state_dict(attention.out_proj.state_dict())
    ffn.layer_norm.load_state_dict(sublayer.layer_norm.state_dict())
    x = torch.randn(7, 3, dim)
    with torch.no_grad():
        torch.testing.assert_close(sublayer(x), ffn(x), atol=1e-5, rtol=0)
        # without the ReLU (the paper's SAN) the same weights give the purely linear H W^V W^O instead
        attention.out_proj._forward_pre_hooks.clear()
        assert not torch.allclose(sublayer(x), ffn(x), atol=1e-3)


def capture_attention_inputs(model):
    """Register hooks that keep every DMAN attention's query input and enable its capture dict."""
    captured = {}
    for name, module in model.named_modules():
        if isinstance(module, LocalityAttention) and any(isinstance(m, DynamicMask) for m in module.locality):
            module.capture = {}

            def hook(mod, args, kwargs, name=name):
                captured[name] = (mod, kwargs["query"].detach())

            module.register_forward_pre_hook(hook, with_kwargs=True)
    return captured


def test_dman_mask_is_eq12_for_every_layer_and_head(tiny_data_bin):
    model, task = build_model("transformer_dman", tiny_data_bin)
    captured = capture_attention_inputs(model)
    src, lengths, prev = random_batch(task, batch=2, src_len=6, tgt_len=5)
    with torch.no_grad():
        model(src, lengths, prev)
    assert len(captured) == 6  # DMAN in all 3 encoder and all 3 decoder layers
    for name, (module, query) in captured.items():
        method = next(m for m in module.locality if isinstance(m, DynamicMask))
        log_mask = module.capture["dman_log_mask"]
        tokens = prev if method.causal else src
        for b in range(tokens.size(0)):
            positions = [t for t in range(tokens.size(1)) if tokens[b, t] != task.source_dictionary.pad()]
            expected = eq12_mask(method, query[:, b], positions)
            got = log_mask[b][:, positions][:, :, positions].double().exp()
            visible = ~torch.isnan(expected)
            torch.testing.assert_close(got[visible], expected[visible], atol=1e-6, rtol=0, msg=name)


def attention_by_hand(attention, h, padding, masks=None):
    """Eq. 2 / Eq. 4 for every sentence: softmax-free, M * exp(q k / sqrt(d)) normalised, then W^O.

    h: (T, B, C); padding: (B, T); masks: None (SAN, M = 1) or a function (b, positions) -> (H, n, n).
    Returns (T, B, C) with zeros at padded positions.
    """
    heads = attention.num_heads
    d = attention.embed_dim // heads
    out = torch.zeros(h.shape, dtype=torch.float64)
    for b in range(h.size(1)):
        positions = [t for t in range(h.size(0)) if not padding[b, t]]
        x = h[positions, b]
        q, k, v = (proj(x).double().view(-1, heads, d) for proj in (attention.q_proj, attention.k_proj, attention.v_proj))
        mask = masks(b, positions) if masks else torch.ones(heads, len(positions), len(positions), dtype=torch.float64)
        per_head = []
        for i in range(heads):
            weights = mask[i] * torch.exp(q[:, i] @ k[:, i].t() / math.sqrt(d))
            per_head.append((weights / weights.sum(dim=1, keepdim=True)) @ v[:, i])
        out[positions, b] = torch.cat(per_head, -1) @ attention.out_proj.weight.double().t() + attention.out_proj.bias.double()
    return out


@pytest.mark.parametrize("norm", ["pre", "post"])
def test_dman_encoder_layer_by_hand(tiny_data_bin, norm):
    """One DMAN -> SAN -> FFN encoder layer (Sec. 2.5, Fig. 2) computed sub-layer by sub-layer from Eq. 4, 9 and 12.

    pre (the authors' released models): H + f(LN(H)) for every sub-layer; post: LN(H + f(H)).
    """
    model, _ = build_model("transformer_dman", tiny_data_bin, {"man_norm": norm})
    layer = model.encoder.layers[0]
    dman, san = layer.first_sublayer.attention, layer.self_attn
    method = next(m for m in dman.locality if isinstance(m, DynamicMask))
    _, padding = left_padded_input()
    x = torch.randn(LENGTH, 2, layer.embed_dim, generator=torch.Generator().manual_seed(3))

    def layer_norm(module, h):
        return torch.nn.functional.layer_norm(h.float(), (h.size(-1),), module.weight, module.bias, module.eps).double()

    def residual(h, norm_module, f):
        if norm == "pre":
            return h + f(layer_norm(norm_module, h))
        return layer_norm(norm_module, h + f(h))

    def dman_by_hand(h):
        masks = lambda b, positions: eq12_mask(method, h[:, b].float(), positions)  # noqa: E731
        return attention_by_hand(dman, h.float(), padding, masks)

    def ffn_by_hand(h):  # Eq. 9: ReLU(H W1) W2
        hidden = torch.relu(h @ layer.fc1.weight.double().t() + layer.fc1.bias.double())
        return hidden @ layer.fc2.weight.double().t() + layer.fc2.bias.double()

    with torch.no_grad():
        h = residual(x.double(), layer.first_sublayer.layer_norm, dman_by_hand)
        h = residual(h, layer.self_attn_layer_norm, lambda z: attention_by_hand(san, z.float(), padding))
        expected = residual(h, layer.final_layer_norm, ffn_by_hand)
        got = layer(x, padding)
    real = ~padding.t()
    torch.testing.assert_close(got[real].double(), expected[real], atol=1e-4, rtol=0)


MODEL_CASES = {
    "dman": ("transformer_dman", {}),  # DMAN (causal) -> SAN -> cross -> FFN in the decoder
    "sman-relu-orders": ("transformer_sman", {  # SMAN1 on decoder prefixes, DMAN in the self-attention slot
        "man_attention_relu": "true", "man_encoder_order": "ffn,san,ffn", "man_decoder_order": "sman,dman,ffn",
    }),
}


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_incremental_decoding_and_padding(tiny_data_bin, case):
    arch, overrides = MODEL_CASES[case]
    model, task = build_model(arch, tiny_data_bin, overrides)
    assert_incremental_parity(model, task)
    assert_padding_invariance(model, task)


def test_layers_follow_the_orders(tiny_data_bin):
    model, _ = build_model("transformer_dman", tiny_data_bin, {
        "man_encoder_order": "dman,dman,ffn", "man_decoder_order": "san,ffn",
    })
    encoder_layer, decoder_layer = model.encoder.layers[0], model.decoder.layers[1]
    assert isinstance(encoder_layer, MANEncoderLayer) and isinstance(decoder_layer, MANDecoderLayer)
    for attention in (encoder_layer.first_sublayer.attention, encoder_layer.self_attn):
        assert [type(m) for m in attention.locality] == [DynamicMask]
    # san,ffn: fairseq's own decoder layer, untouched
    assert decoder_layer.first_sublayer is None and type(decoder_layer.self_attn) is MultiheadAttention


def test_masks_as_plain_locality_methods(tiny_data_bin):
    """--locality-methods dman/sman on the localness Transformer masks its self-attention, no extra sub-layer."""
    model, task = build_model("transformer_localness", tiny_data_bin, {"locality_methods": "dman,sman", "sman_layers": "1"})
    layer = model.decoder.layers[0]
    assert [type(m) for m in layer.self_attn.locality] == [DynamicMask, StaticMask]
    assert [type(m) for m in model.encoder.layers[2].self_attn.locality] == [DynamicMask]
    src, lengths, prev = random_batch(task)
    with torch.no_grad():
        assert torch.isfinite(model(src, lengths, prev)[0]).all()


@pytest.mark.parametrize("arch,overrides,message", [
    ("transformer_dman", {"man_encoder_order": "dman,ffn,san"}, "not a MAN order"),
    ("transformer_dman", {"man_decoder_order": "dman,lsa,ffn"}, "unknown sub-layer"),
    ("transformer_dman", {"man_encoder_order": "dman,san,san,ffn"}, "not a MAN order"),
    ("transformer_sman", {"sman_width": -1}, "--sman-width must be >= 0"),
    ("transformer_dman", {"dman_min_mask": 1.5}, "--dman-min-mask must be in"),
    ("transformer_dman", {"locality_methods": "dman", "dman_attention": "cross"}, "not defined for cross"),
])
def test_bad_flags_are_clear_errors(tiny_data_bin, arch, overrides, message):
    with pytest.raises(LocalityConfigError, match=message):
        build_model(arch, tiny_data_bin, overrides)


@pytest.mark.parametrize("flag,value", [("man_attention_relu", "maybe"), ("man_sizes", "wide")])
def test_bad_flag_values_are_rejected_by_the_parser(tiny_data_bin, flag, value, capsys):
    with pytest.raises(SystemExit):
        build_model("transformer_dman", tiny_data_bin, {flag: value})
    assert f"--{flag.replace('_', '-')}" in capsys.readouterr().err


# --------------------------------------------------------------------------- sizes and parameter counts


def test_size_settings():
    released = parse_model_args("transformer_dman_iwslt_de_en")
    assert (released.encoder_ffn_embed_dim, released.decoder_ffn_embed_dim) == (512, 512)
    assert (released.man_encoder_order, released.man_decoder_order, released.dropout) == ("dman,san,ffn", "san,ffn", 0.3)
    paper = parse_model_args("transformer_dman_iwslt_de_en", ["--man-sizes", "paper"])
    assert (paper.encoder_ffn_embed_dim, paper.man_decoder_order) == (1024, "dman,san,ffn")
    big = parse_model_args("transformer_dman_wmt_en_de_big", ["--encoder-embed-dim", "768", "--decoder-embed-dim", "768"])
    assert (big.encoder_ffn_embed_dim, big.man_decoder_order) == (2 * 768, "dman,san,ffn")
    explicit = parse_model_args(
        "transformer_sman_iwslt_de_en", ["--encoder-ffn-embed-dim", "300", "--man-decoder-order", "sman,san,ffn"],
    )
    assert (explicit.encoder_ffn_embed_dim, explicit.decoder_ffn_embed_dim) == (300, 512)
    assert (explicit.man_encoder_order, explicit.man_decoder_order) == ("sman,san,ffn", "sman,san,ffn")


@pytest.mark.parametrize("arch", ["transformer_dman", "transformer_sman_iwslt_de_en", "transformer_dman_wmt_en_de_big"])
def test_norm_placement(arch):
    """--man-norm pre (default: the authors' released architectures) / post sets both stacks' placement."""
    default = parse_model_args(arch)
    assert (default.man_norm, default.encoder_normalize_before, default.decoder_normalize_before) == ("pre", True, True)
    post = parse_model_args(arch, ["--man-norm", "post"])
    assert (post.encoder_normalize_before, post.decoder_normalize_before) == (False, False)
    with pytest.raises(LocalityConfigError, match="--man-norm post contradicts --decoder-normalize-before"):
        parse_model_args(arch, ["--man-norm", "post", "--decoder-normalize-before"])


def man_delta(d, heads, layers, ffn_transformer, ffn_man, enc_dman, dec_dman, max_positions=1024):
    """Parameters a MAN model adds to the (post-norm) Transformer of the same size, from the layer structure.

    Per encoder layer: one more attention (4d^2 + 4d) and layer norm (2d), the FFN resized,
    and DMAN's W (d), P (2 max - 1 distances) and U (heads); in the decoder P has max
    entries (t - s >= 0). A decoder layer without DMAN (san,ffn) only resizes its FFN.
    Pre-norm (--man-norm pre, the default) adds one final layer norm (2d) after each stack.
    """
    ffn = lambda inner: 2 * d * inner + inner + d  # noqa: E731
    attention, norm = 4 * d * d + 4 * d, 2 * d
    encoder = attention + norm + ffn(ffn_man) - ffn(ffn_transformer) + (d + 2 * max_positions - 1 + heads) * enc_dman
    decoder = ffn(ffn_man) - ffn(ffn_transformer) + (attention + norm + d + max_positions + heads) * dec_dman
    return layers * (encoder + decoder) + 2 * norm


@pytest.mark.parametrize("suffix,recipe,d,heads,ffn_t,ffn_m,dec_dman", [
    ("_iwslt_de_en", "iwslt14", 512, 4, 1024, 512, False),
    ("_wmt_en_de", "wmt14", 512, 8, 2048, 1024, True),
    ("_wmt_en_de_big", "wmt14", 1024, 16, 4096, 2048, True),
])
def test_parameter_counts(suffix, recipe, d, heads, ffn_t, ffn_m, dec_dman):
    """Standard-recipe vocabularies; the MAN - Transformer difference is exactly the layers' structure and
    within a million of the paper's for the small and base models (big: see docs/methods/fan2021-man.md)."""
    with torch.device("meta"):  # counts only: no memory, no initialisation
        transformer = count_parameters(recipe_model("transformer" + suffix, recipe))
        man = count_parameters(recipe_model("transformer_dman" + suffix, recipe))
        sman = count_parameters(recipe_model("transformer_sman" + suffix, recipe))
    delta = man - transformer
    assert delta == man_delta(d, heads, 6, ffn_t, ffn_m, True, dec_dman)
    dman_params = 6 * ((d + 2 * 1024 - 1 + heads) + dec_dman * (d + 1024 + heads))
    assert man - sman == dman_params  # SMAN has no parameters
    paper_man, paper_transformer = PAPER_PARAMETERS[suffix]
    if suffix != "_wmt_en_de_big":
        assert abs(delta / 1e6 - (paper_man - paper_transformer)) <= 1.0


@pytest.mark.parametrize("suffix,recipe,both_possible", [
    ("_iwslt_de_en", "iwslt14", True), ("_wmt_en_de", "wmt14", True), ("_wmt_en_de_big", "wmt14", False),
])
def test_printed_deltas_are_differences_of_rounded_totals(suffix, recipe, both_possible):
    """Table 1's +1M / +1M / +2M are not parameters MAN adds (+0.03M / +0.05M / +0.08M, the release's layers): a
    joint vocabulary of V rows puts both printed totals (Transformer, MAN, whole millions) within reach for the
    small and base models only; no V gives both 213M and 215M (docs/methods/fan2021-man.md, "Parameter counts")."""
    def without_embeddings(model):
        return sum(p.numel() for name, p in model.named_parameters() if "embed_tokens" not in name)

    with torch.device("meta"):
        transformer = without_embeddings(recipe_model("transformer" + suffix, recipe))
        man = without_embeddings(recipe_model("transformer_dman" + suffix, recipe))
    d = 1024 if suffix.endswith("big") else 512
    paper_man, paper_transformer = PAPER_PARAMETERS[suffix]

    def rows(count, printed):  # the V with round((count + V d) / 1e6) == printed
        return set(range(math.ceil(((printed - 0.5) * 1e6 - count) / d), math.floor(((printed + 0.5) * 1e6 - count) / d) + 1))

    assert 0 < man - transformer < 100_000
    assert bool(rows(transformer, paper_transformer) & rows(man, paper_man)) == both_possible


def test_paper_text_sizes_of_the_small_model():
    """--man-sizes paper at the IWSLT size: FFN 2 x 512 (= the Transformer's) and DMAN in the decoder too."""
    with torch.device("meta"):
        transformer = count_parameters(recipe_model("transformer_iwslt_de_en", "iwslt14"))
        man = count_parameters(recipe_model("transformer_dman_iwslt_de_en", "iwslt14", ["--man-sizes", "paper"]))
    assert man - transformer == man_delta(512, 4, 6, 1024, 1024, True, True)


# --------------------------------------------------------------------------- the real CLI

#: every architecture once, the orders of Tables 3 and 4 spread over them (encoder / decoder)
CLI_RUNS = {
    "transformer_dman": [],
    "transformer_dman_iwslt_de_en": ["--man-encoder-order", "ffn,san,ffn"],
    "transformer_dman_wmt_en_de": ["--man-encoder-order", "san,san,ffn", "--man-decoder-order", "dman,dman,ffn"],
    "transformer_dman_wmt_en_de_big": [
        "--man-encoder-order", "san,dman,ffn", "--man-decoder-order", "san,dman,ffn",
        "--man-attention-relu", "true", "--encoder-normalize-before", "--decoder-normalize-before",
    ],
    "transformer_sman": [],
    "transformer_sman_iwslt_de_en": ["--man-sizes", "paper", "--sman-window", "fixed", "--sman-width", "2"],
    "transformer_sman_wmt_en_de": ["--man-encoder-order", "dman,dman,ffn", "--man-decoder-order", "ffn,san,ffn"],
    "transformer_sman_wmt_en_de_big": ["--dman-min-mask", "1e-10", "--man-decoder-order", "dman,san,ffn"],
}


def test_every_architecture_trains_and_generates(tiny_data_bin, tmp_path):
    def train_and_generate(arch):
        save_dir = tmp_path / arch
        run(train_command(tiny_data_bin, save_dir, arch, CLI_RUNS[arch], updates=10))
        return run(generate_command(tiny_data_bin, save_dir / "checkpoint_last.pt")).stdout

    with ThreadPoolExecutor(max_workers=2) as pool:  # two single-threaded processes at a time
        outputs = dict(zip(CLI_RUNS, pool.map(train_and_generate, CLI_RUNS)))
    for arch, out in outputs.items():
        hypotheses = [line for line in out.splitlines() if line.startswith("H-")]
        assert len(hypotheses) == 40 and "BLEU" in out.splitlines()[-1], (arch, out[-2000:])
