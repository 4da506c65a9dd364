"""The recent position methods as whole models: ALiBi, T5 biases, KERPLE, FIRE, RoPE (docs/methods/modern.md).

Each architecture built through fairseq's parser: its defaults (no sinusoidal embeddings), incremental decoding with
a beam reorder equal to the full forward, padding invariance, T5's table, KERPLE's (r1, r2) and FIRE's function
shared per stack (FIRE's on request; saved and loaded), clear errors for cross attention, and fairseq-train + fairseq-generate end
to end. The equations by hand are in tests/test_equations_modern.py.
"""

import pytest
import torch

from fairseq_localness.architectures.modern import MODERN_ARCHITECTURES
from fairseq_localness.attention import LocalityConfigError
from localness_testing import assert_incremental_parity, assert_padding_invariance, build_model, train_and_generate

CASES = [
    ("transformer_alibi", {}),
    ("transformer_t5bias", {}),
    ("transformer_t5bias", {"t5bias_share_layers": False, "t5bias_num_buckets": 8, "t5bias_max_distance": 6}),
    ("transformer_kerple", {}),
    ("transformer_kerple", {"kerple_kernel": "power", "kerple_share_layers": False}),
    ("transformer_fire", {}),
    ("transformer_fire", {"fire_share_layers": True, "fire_init_l": 3}),
    ("transformer_rope", {}),
    ("transformer_localness", {"locality_methods": "rope,alibi"}),  # with sinusoidal embeddings, two methods
]


def randomize_methods(model, seed=0):
    """Untrained tables start small (T5) or at zero-ish slopes: give every method parameter a visible value."""
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, param in model.named_parameters():
            if ".locality." in name:
                param.copy_(torch.rand(param.shape, generator=gen) * 1.5 + 0.1)


@pytest.mark.parametrize("arch,overrides", CASES, ids=[f"{a}-{'-'.join(map(str, o.values()))}" for a, o in CASES])
def test_incremental_decoding_and_padding(tiny_data_bin, arch, overrides):
    model, task = build_model(arch, tiny_data_bin, overrides)
    randomize_methods(model)
    assert_incremental_parity(model, task)
    assert_padding_invariance(model, task)


@pytest.mark.parametrize("arch,method", sorted(MODERN_ARCHITECTURES.items()))
def test_architecture_defaults(tiny_data_bin, arch, method):
    model, _ = build_model(arch, tiny_data_bin)
    assert model.encoder.embed_positions is None and model.decoder.embed_positions is None  # the only position signal
    for stack in (model.encoder, model.decoder):
        for layer in stack.layers:
            assert [m.name for m in layer.self_attn.locality] == [method]
    assert all(type(layer.encoder_attn).__name__ == "MultiheadAttention" for layer in model.decoder.layers)
    plain, _ = build_model("transformer_localness", tiny_data_bin, {"locality_methods": method})
    assert plain.encoder.embed_positions is not None


@pytest.mark.parametrize("method,attr", [("t5bias", "table"), ("kerple", "kernel"), ("fire", "fire")])
def test_one_table_per_stack_shared_by_its_layers(tiny_data_bin, tmp_path, method, attr):
    shared = {f"{method}_share_layers": True}  # the default of T5 and KERPLE; FIRE shares on request
    model, task = build_model(f"transformer_{method}", tiny_data_bin, shared)
    encoder = [getattr(layer.self_attn.locality[0], attr) for layer in model.encoder.layers]
    decoder = [getattr(layer.self_attn.locality[0], attr) for layer in model.decoder.layers]
    assert all(m is encoder[0] for m in encoder) and all(m is decoder[0] for m in decoder)
    assert encoder[0] is not decoder[0]
    randomize_methods(model, seed=1)
    path = tmp_path / "model.pt"
    torch.save(model.state_dict(), path)
    fresh, _ = build_model(f"transformer_{method}", tiny_data_bin, shared, seed=5)
    fresh.load_state_dict(torch.load(path))
    src = torch.tensor([[5, 6, 7, 2]])
    prev = torch.tensor([[2, 8, 9]])
    with torch.no_grad():
        torch.testing.assert_close(fresh(src, torch.tensor([4]), prev)[0], model(src, torch.tensor([4]), prev)[0])
    assert getattr(fresh.encoder.layers[2].self_attn.locality[0], attr) is getattr(
        fresh.encoder.layers[0].self_attn.locality[0], attr)
    unshared, _ = build_model(f"transformer_{method}", tiny_data_bin, {f"{method}_share_layers": False})
    tables = [getattr(layer.self_attn.locality[0], attr) for layer in unshared.encoder.layers]
    assert tables[0] is not tables[1]
    shared_count = sum(p.numel() for p in getattr(model.encoder.layers[0].self_attn.locality[0], attr).parameters())
    plain, _ = build_model("transformer_localness", tiny_data_bin)  # sinusoidal embeddings have no parameters
    count = lambda m: sum(p.numel() for p in m.parameters())  # noqa: E731
    assert count(model) - count(plain) == 2 * shared_count  # one per stack, counted once
    assert count(unshared) - count(plain) == 2 * 3 * shared_count


@pytest.mark.parametrize("method", sorted(MODERN_ARCHITECTURES.values()))
def test_cross_attention_is_refused(tiny_data_bin, method):
    with pytest.raises(LocalityConfigError, match=f"--{method}-attention: .*cross attention"):
        build_model(f"transformer_{method}", tiny_data_bin, {f"{method}_attention": "encoder,cross"})


@pytest.mark.parametrize("arch,overrides,message", [
    ("transformer_t5bias", {"t5bias_num_buckets": 2}, "--t5bias-num-buckets must be >= 4"),
    ("transformer_t5bias", {"t5bias_max_distance": 16}, "--t5bias-max-distance must exceed"),
    ("transformer_fire", {"fire_mlp_width": 0}, "--fire-mlp-width must be >= 1"),
    ("transformer_fire", {"fire_init_c": 0}, "--fire-init-c must be > 0"),
    ("transformer_rope", {"encoder_embed_dim": 36, "decoder_embed_dim": 36}, "odd head dimension 9"),
])
def test_bad_flags(tiny_data_bin, arch, overrides, message):
    with pytest.raises(LocalityConfigError, match=message):
        build_model(arch, tiny_data_bin, overrides)


def test_rope_trains_and_translates(tiny_data_bin, tmp_path):
    """The new core hook end to end: fairseq-train, then fairseq-generate's beam search over cached rotated keys."""
    train_and_generate(tiny_data_bin, tmp_path, "transformer_rope")


@pytest.mark.slow
@pytest.mark.parametrize("arch", ["transformer_alibi", "transformer_t5bias", "transformer_kerple", "transformer_fire"])
def test_trains_and_translates(tiny_data_bin, tmp_path, arch):
    train_and_generate(tiny_data_bin, tmp_path, arch)


@pytest.mark.parametrize("extra", [["--kerple-kernel", "power"], ["--kerple-share-layers", "false"],
                                   ["--t5bias-share-layers", "false"],
                                   ["--fire-share-layers", "true"]], ids=lambda e: "".join(e))
def test_half_precision_of_the_variants(extra):
    """tests/test_half_precision.py runs every family's default; the power kernel squares distances up to 1,023."""
    import copy

    from fairseq_localness.modelbuild import build_translation_model, parse_model_args, synthetic_dictionary
    from test_half_precision import HALF, SMALL, TOLERANCE, sentence

    arch = "transformer_" + extra[0].split("-")[2]
    args = parse_model_args(arch, SMALL + ["--encoder-layers", "2", "--decoder-layers", "2"] + extra)
    torch.manual_seed(0)
    model = build_translation_model(args, synthetic_dictionary(20), synthetic_dictionary(20))[1].eval()
    src, lengths, prev = sentence(1024, seed=3)
    with torch.no_grad():
        reference = model(src, lengths, prev)[0]
    for dtype in HALF:
        half = copy.deepcopy(model).to(dtype=dtype)
        out = half(src, lengths, prev)[0]
        out.float().log_softmax(-1)[0, :, 5].sum().backward()
        assert torch.isfinite(out).all() and all(torch.isfinite(p.grad).all() for p in half.parameters() if p.grad is not None)
        assert (out.float() - reference).abs().max() <= TOLERANCE[dtype] * reference.abs().max()


@pytest.mark.parametrize("arch,symmetric", [("transformer_alibi", True), ("transformer_kerple", True),
                                            ("transformer_fire", True), ("transformer_t5bias", False),
                                            ("transformer_rope", False)])
@torch.no_grad()
def test_which_encoders_tell_a_sentence_from_its_reversal(tiny_data_bin, arch, symmetric):
    """docs/methods/modern.md: with a symmetric bias and no position embeddings the encoder's output for a reversed
    sentence is the reversed output (so the decoder cannot tell them apart); T5's buckets and RoPE know the
    direction."""
    model, _ = build_model(arch, tiny_data_bin)
    randomize_methods(model)
    src = torch.tensor([[5, 9, 6, 11, 7]])
    forward = model.encoder(src, src_lengths=torch.tensor([5]))["encoder_out"][0]
    backward = model.encoder(src.flip(1), src_lengths=torch.tensor([5]))["encoder_out"][0]
    same = torch.allclose(backward.flip(0), forward, atol=1e-5)
    assert same == symmetric


def test_the_pages_parameter_counts_are_the_models():
    """docs/methods/modern.md's parameter table (WMT14 En-De base size, one joint 32k vocabulary) is what
    scripts/param_counts.py counts: every row's total, and its delta over fairseq's `transformer`, which the
    hand-derived 'where' column explains (T5: 2 stacks x 32 buckets x 8 heads = 512, and so on)."""
    import re
    from pathlib import Path

    from fairseq_localness.modelbuild import count_parameters, recipe_model

    page = (Path(__file__).resolve().parents[1] / "docs" / "methods" / "modern.md").read_text(encoding="utf-8")
    baseline = count_parameters(recipe_model("transformer", "wmt14"))
    assert f"added to `transformer` ({baseline:,})" in page
    rows = re.findall(r"^\| `(transformer_\w+)`(?:, `([^`]+)`)? \| ([\d,]+) \| \+([\d,]+) \|", page, re.M)
    assert len(rows) == 8
    for arch, flags, total, added in rows:
        count = count_parameters(recipe_model(arch, "wmt14", flags.split()))
        assert (f"{count:,}", f"{count - baseline:,}") == (total, added), (arch, flags)
