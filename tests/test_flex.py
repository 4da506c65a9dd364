"""The FlexAttention backend on the CPU: every fusable method's Flex forward equals the reference path, and the
backend is chosen (and falls back) by the documented rules.

Flex runs eager here (``torch.nn.attention.flex_attention`` without ``torch.compile``, inference only: torch has
no Flex backward on the CPU): compiling it costs about 25 s per score_mod on this project's CPU machines, and the
eager form evaluates the same score_mods and mask_mods. The expected values come from the reference path of the
same module (``backend="sdpa"``: the methods' dense ``logit_bias`` through ``scaled_dot_product_attention``, or
their own kernels), never from Flex. The CUDA half (compiled kernels, gradients, block skipping) is
``tests/test_gpu.py``, run by ``scripts/gpu_suite.sh``.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
from typing import Dict, List, Sequence, Tuple

import pytest
import torch

import fairseq_localness  # noqa: F401  (registers the methods)
from fairseq_localness.attention import backends, core
from fairseq_localness.attention.backends import FLEX_BLOCK, BlockMaskCache, CallFacts, choose_backend, read_backend
from fairseq_localness.attention.core import LocalityAttention
from fairseq_localness.attention.errors import LocalityConfigError
from fairseq_localness.attention.fusion import Band, FlexTerms
from fairseq_localness.attention.protocol import AttentionSpec
from fairseq_localness.attention.registry import get_locality_method

pytestmark = pytest.mark.filterwarnings("ignore")

DIM, HEADS, MAX_POSITIONS = 32, 4, 512
#: fp32 equality (the brief's tolerance); bf16/fp16 compare Flex with the reference path in the same dtype,
#: relative to the output's largest magnitude (docs/gpu.md, "Backends")
ATOL = {torch.float32: 1e-5, torch.bfloat16: 3e-2, torch.float16: 4e-3}

ENC, DEC, CROSS = "encoder", "decoder", "cross"
#: (case id, [(method, option overrides)], attention types)
CASES: List[Tuple[str, List[Tuple[str, Dict]], Sequence[str]]] = [
    ("gaussian-query", [("gaussian", {})], (ENC, DEC, CROSS)),
    ("gaussian-layer", [("gaussian", {"window": "layer"})], (ENC, DEC, CROSS)),
    ("gaussian-fixed", [("gaussian", {"window": "fixed", "fixed_window": 3.0})], (ENC, CROSS)),
    ("gaussian-head", [("gaussian", {"window": "head"})], (ENC, DEC)),
    ("neighbor", [("neighbor", {"window_init": 3.0})], (ENC, DEC)),
    ("neighbor-per-layer", [("neighbor", {"per_head": False})], (ENC,)),
    ("localhard-bias", [("localhard", {"gaussian": "bias", "window": 2.0})], (ENC, DEC, CROSS)),
    ("bidirect", [("bidirect", {})], (ENC,)),
    ("csan1d", [("csan1d", {"window": 5})], (ENC, DEC)),
    ("csan1d-centred", [("csan1d", {"window": 5, "decoder_window": "centred"})], (DEC,)),
    ("hybrid-gate", [("hybrid", {})], (ENC, DEC)),
    ("hybrid-gate-per-head-query", [("hybrid", {"gate_per_head": True, "gate_input": "query", "window": 2})], (ENC,)),
    ("hybrid-concat-output", [("hybrid", {"combine": "concat"})], (ENC,)),
    ("hybrid-concat-projection", [("hybrid", {"combine": "concat", "concat_into": "projection"})], (DEC,)),
    ("hybrid-local", [("hybrid", {"combine": "local", "window": 2})], (ENC, DEC)),
    ("block-release", [("block", {})], (ENC,)),
    ("block-blosan", [("block", {"form": "blosan", "length": 3})], (ENC,)),
    ("block-blosan-auto-directional", [("block", {"form": "blosan", "length": 0, "directional": True})], (ENC,)),
    ("dman", [("dman", {})], (ENC, DEC)),
    ("dman-min-mask", [("dman", {"min_mask": 1e-10})], (ENC,)),
    ("sman-sqrt", [("sman", {})], (ENC, DEC)),
    ("sman-fixed", [("sman", {"window": "fixed", "width": 2.0})], (ENC, DEC)),
    ("relpos-keys", [("relpos", {"values": False, "max_distance": 3})], (ENC, DEC)),
    ("alibi", [("alibi", {})], (ENC, DEC)),
    ("kerple-log", [("kerple", {})], (ENC, DEC)),
    ("kerple-power", [("kerple", {"kernel": "power"})], (ENC,)),
    ("fire", [("fire", {})], (ENC, DEC)),
    ("t5bias", [("t5bias", {"num_buckets": 8, "max_distance": 12})], (ENC, DEC)),
    ("rope", [("rope", {})], (ENC, DEC)),
    ("cnns", [("cnns", {"num_convs": 1, "kernel_size": 3})], (ENC,)),
    ("gaussian+relpos-keys", [("gaussian", {}), ("relpos", {"values": False})], (ENC,)),
    ("csan1d+dman", [("csan1d", {"window": 3}), ("dman", {})], (ENC, DEC)),
    ("rope+sman", [("rope", {}), ("sman", {})], (DEC,)),
]
PARAMS = [pytest.param(methods, kind, id=f"{case}-{kind}") for case, methods, kinds in CASES for kind in kinds]


def attention_block(methods, kind: str, dropout: float = 0.0, backend: str = "sdpa", seed: int = 0, dim: int = DIM,
                    heads: int = HEADS, max_positions: int = MAX_POSITIONS) -> LocalityAttention:
    """A LocalityAttention with ``methods`` [(name, overrides)] in a ``kind`` block, random but fixed weights."""
    built = []
    for name, overrides in methods:
        cls = get_locality_method(name)
        built.append((cls, cls.Options(**{"attention": kind, "layers": "1", **overrides})))
    spec = AttentionSpec(embed_dim=dim, num_heads=heads, attn_type=kind, layer=1, kdim=dim, max_positions=max_positions)
    torch.manual_seed(seed)
    cross = kind == CROSS
    block = LocalityAttention(dim, heads, spec, built, backend=backend, dropout=dropout, self_attention=not cross,
                              encoder_decoder_attention=cross, kdim=dim if cross else None, vdim=dim if cross else None)
    with torch.no_grad():  # move learned parameters off their (often symmetric or zero) initialisation
        for name, param in block.locality.named_parameters():
            param.add_(0.1 * torch.randn_like(param))
    return block.eval()


def inputs(kind: str, length: int = 19, source: int = 23, seed: int = 1, dim: int = DIM):
    """(query, key, key_padding_mask, attn_mask, real query rows (T, B)): batch of 2, the second sentence padded
    as fairseq pads it (sources on the left, targets on the right)."""
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(length, 2, dim, generator=gen)
    if kind == ENC:
        pad = torch.zeros(2, length, dtype=torch.bool)
        pad[1, :4] = True
        return x, x, pad, None, ~pad.t()
    target_pad = torch.zeros(2, length, dtype=torch.bool)
    target_pad[1, -5:] = True
    if kind == DEC:
        future = torch.triu(torch.full((length, length), float("-inf")), 1)
        return x, x, target_pad, future, ~target_pad.t()
    memory = torch.randn(source, 2, dim, generator=gen)
    source_pad = torch.zeros(2, source, dtype=torch.bool)
    source_pad[1, :6] = True
    return x, memory, source_pad, None, ~target_pad.t()


def run(block: LocalityAttention, kind: str, backend: str, dtype=torch.float32, **kw):
    query, key, pad, mask, real = inputs(kind, **kw)
    block = block.to(dtype)
    block.backend = backend
    query, key = query.to(dtype), key.to(dtype)
    mask = mask.to(dtype) if mask is not None else None
    with torch.no_grad():
        out = block(query, key, key, key_padding_mask=pad, attn_mask=mask, need_weights=False)[0]
    return out.float(), real


@pytest.fixture
def choices(monkeypatch):
    """Every (backend, reason) the attention core chooses while the test runs."""
    seen: List[Tuple[str, str]] = []

    def spy(facts):
        result = choose_backend(facts)
        seen.append(result)
        return result

    monkeypatch.setattr(core, "choose_backend", spy)
    return seen


@pytest.mark.parametrize("methods,kind", PARAMS)
def test_flex_forward_equals_reference(methods, kind, choices):
    block = attention_block(methods, kind)
    expected, real = run(block, kind, "sdpa")
    got, _ = run(block, kind, "flex")
    assert choices[-1][0] == "flex", choices[-1]
    assert torch.isfinite(expected[real]).all()
    torch.testing.assert_close(got[real], expected[real], atol=ATOL[torch.float32], rtol=0)


#: the half-precision comparisons (tests/measure_flex_margins.py measures their margins too)
HALF_PRECISION_PARAMS = [
    pytest.param([("gaussian", {})], CROSS, id="gaussian-cross"),
    pytest.param([("dman", {})], DEC, id="dman-decoder"),
    pytest.param([("csan1d", {"window": 5})], ENC, id="csan1d-encoder"),
    pytest.param([("t5bias", {})], ENC, id="t5bias-encoder"),
    pytest.param([("hybrid", {})], DEC, id="hybrid-decoder"),
]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("methods,kind", HALF_PRECISION_PARAMS)
def test_flex_half_precision_close_to_reference(methods, kind, dtype, choices):
    """Half precision on the CPU: Flex (float32 scores inside) against the reference path in the same dtype."""
    block = attention_block(methods, kind)
    expected, real = run(block, kind, "sdpa", dtype)
    got, _ = run(block, kind, "flex", dtype)
    assert choices[-1][0] == "flex"
    scale = expected[real].abs().max().item()
    torch.testing.assert_close(got[real], expected[real], atol=ATOL[dtype] * scale, rtol=0)


def test_dropping_a_term_is_caught(monkeypatch):
    """The comparison can fail: Flex without the Gaussian's score_mod differs from the reference."""
    block = attention_block([("gaussian", {})], ENC)
    expected, real = run(block, ENC, "sdpa")
    monkeypatch.setattr(type(block.locality[0]), "flex_terms", lambda self, ctx: None)
    got, _ = run(block, ENC, "flex")
    assert (got[real] - expected[real]).abs().max() > 1e-3


# ---- block masks -----------------------------------------------------------------------------------------------


@pytest.fixture
def block_masks(monkeypatch):
    """The block_mask of every flex call while the test runs."""
    seen = []
    kernel = backends.flex_kernel

    def spy(device):
        real = kernel(device)

        def call(*args, **kwargs):
            seen.append(kwargs.get("block_mask"))
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(backends, "flex_kernel", spy)
    return seen


@pytest.mark.parametrize("methods,kind", [
    pytest.param([("csan1d", {"window": 11})], ENC, id="csan1d-encoder"),
    pytest.param([("csan1d", {"window": 11})], DEC, id="csan1d-decoder"),
    pytest.param([("sman", {})], ENC, id="sman-sqrt"),
    pytest.param([("block", {"form": "blosan", "length": 0})], ENC, id="block-auto"),
    pytest.param([("hybrid", {"combine": "local", "window": 3})], ENC, id="hybrid-local"),
    pytest.param([("localhard", {"gaussian": "bias", "window": 10.0})], ENC, id="localhard-encoder"),
    pytest.param([("localhard", {"gaussian": "bias", "window": 10.0})], CROSS, id="localhard-cross"),
    pytest.param([("alibi", {})], DEC, id="causal-only"),
])
def test_block_mask_keeps_every_visible_key(methods, kind, block_masks):
    """At 300 tokens (three 128-blocks) the block mask of the Flex call keeps every block that holds a key the
    reference lets a real query see (its logits above the methods' floors), and skips blocks where it can."""
    block = attention_block(methods, kind)
    query, key, pad, mask, real = inputs(kind, length=300, source=280)
    with torch.no_grad():
        block.backend = "flex"
        block(query, key, key, key_padding_mask=pad, attn_mask=mask, need_weights=False)
        block.backend = "sdpa"
        logits = block(query, key, key, key_padding_mask=pad, attn_mask=mask, before_softmax=True)[0]
    (mask_used,) = block_masks
    assert mask_used is not None
    kept = mask_used.to_dense().bool()  # (B|1, H|1, query blocks, key blocks)
    visible = (logits > -1e8) & real.t()[:, None, :, None]  # (B, H, T, S)
    b, h, q, kv = visible.nonzero(as_tuple=True)
    blocks = kept.expand(visible.size(0), visible.size(1), -1, -1)[b, h, q // FLEX_BLOCK, kv // FLEX_BLOCK]
    assert blocks.all(), f"{int((~blocks).sum())} visible (query, key) pairs fall into skipped blocks"
    assert not kept.all(), "nothing is skipped"


def test_band_masks_are_cached_per_length_bucket():
    cache = BlockMaskCache()
    band = Band(5, 5)
    first = cache.get(band, 300, torch.device("cpu"))
    cache.get(band, 290, torch.device("cpu"))  # same bucket of 384: cropped, not rebuilt
    again = cache.get(band, 300, torch.device("cpu"))
    assert cache.built == 1 and again is first
    cache.get(band, 400, torch.device("cpu"))
    cache.get(Band(3, 0), 300, torch.device("cpu"))
    assert cache.built == 3
    assert first.shape[-2:] == (300, 300)


def test_cropped_band_mask_is_declared_at_the_call_length(monkeypatch):
    """torch 2.11's ``BlockMask._adjust`` cropped the block tables but kept the bucket's lengths, and
    flex_attention refused the mask for the shorter call (seen on CUDA). Simulated here: the cache's crop
    must still declare the call's length, keep the band's blocks, and run."""
    from torch.nn.attention.flex_attention import BlockMask, create_block_mask, flex_attention

    adjust = BlockMask._adjust

    def adjust_keeping_lengths(self, new_q_len, new_kv_len):  # torch 2.11: lengths from the block tables
        new = adjust(self, new_q_len, new_kv_len)
        return BlockMask.from_kv_blocks(new.kv_num_blocks, new.kv_indices, new.full_kv_num_blocks,
                                        new.full_kv_indices, BLOCK_SIZE=new.BLOCK_SIZE, mask_mod=new.mask_mod)

    monkeypatch.setattr(BlockMask, "_adjust", adjust_keeping_lengths)
    band = Band(5, 5)
    mask = BlockMaskCache().get(band, 300, torch.device("cpu"))
    assert mask.shape[-2:] == (300, 300)
    exact = create_block_mask(backends._band_mask_mod(band), None, None, 300, 300, device="cpu", BLOCK_SIZE=FLEX_BLOCK)
    assert torch.equal(mask.to_dense(), exact.to_dense())
    q, k, v = torch.randn(3, 1, 2, 300, 16).unbind(0)
    torch.testing.assert_close(flex_attention(q, k, v, block_mask=mask), flex_attention(q, k, v, block_mask=exact))


def test_compiled_flex_specialises_floats():
    """The compiled kernel's dynamo settings: floats are constants (a symbolic softmax scale or captured floor
    broke the kernel's fake-tensor pass on CUDA with torch 2.11) and a recompilation per score_mod is allowed."""
    config = backends.flex_compile_config()
    assert config["specialize_float"] is True
    assert max(v for k, v in config.items() if k != "specialize_float") >= backends.FLEX_RECOMPILE_LIMIT


def test_flex_model_equals_reference():
    """A whole model (encoder, decoder, cross attention, MAN layers) with every block on Flex equals the reference."""
    from test_half_precision import sentence, small_model

    for arch in ("transformer_gaussian_local", "transformer_csan1d", "transformer_hybrid_local", "transformer_dman",
                 "transformer_t5bias"):
        model = small_model(arch)
        src, lengths, prev = sentence(40, seed=5)
        blocks = [m for m in model.modules() if isinstance(m, LocalityAttention)]
        assert blocks
        outputs = {}
        for backend in ("sdpa", "flex"):
            for block in blocks:
                block.backend = backend
            with torch.no_grad():
                outputs[backend] = model(src, lengths, prev)[0]
        torch.testing.assert_close(outputs["flex"], outputs["sdpa"], atol=1e-5 * outputs["sdpa"].abs().max().item(),
                                   rtol=0, msg=lambda m: f"{arch}: {m}")


# ---- the choice of a backend -----------------------------------------------------------------------------------


def facts(**kw) -> CallFacts:
    return CallFacts(**{"requested": "auto", "device": "cuda", **kw})


@pytest.mark.parametrize("given,expected", [
    (dict(), ("flex", "every method has a Flex form")),
    (dict(device="cpu"), ("sdpa", "auto on cpu")),
    (dict(requested="flex", device="cpu"), ("flex", "requested")),
    (dict(need_probs=True), ("eager", "attention probabilities")),
    (dict(requested="flex", need_probs=True), ("eager", "attention probabilities")),
    (dict(requested="eager"), ("eager", "requested")),
    (dict(requested="sdpa"), ("sdpa", "requested")),
    (dict(unfusable="csan2d: heads"), ("sdpa", "csan2d: heads")),
    (dict(requested="flex", dropout=True), ("sdpa", "attention dropout")),
    (dict(requested="flex", device="cpu", grad_on_cpu=True), ("sdpa", "gradients are needed on the CPU")),
    (dict(incremental=True), ("sdpa", "incremental decoding under auto")),
    (dict(requested="flex", incremental=True), ("flex", "requested")),
    (dict(other_mask=True), ("sdpa", "attention mask")),
    (dict(capture=True), ("sdpa", "analysis capture")),
    (dict(flex_missing=True), ("sdpa", "no FlexAttention")),
    (dict(own_kernel="csan1d's own kernel"), ("sdpa", "csan1d's own kernel")),
    (dict(training_fallback="relpos: gradients differed"), ("sdpa", "relpos: gradients differed")),
    (dict(requested="flex", training_fallback="relpos: gradients differed"), ("flex", "requested")),
])
def test_choice_rules(given, expected):
    backend, reason = choose_backend(facts(**given))
    assert backend == expected[0] and expected[1] in reason, (backend, reason)


def test_unknown_backend_names_the_flag():
    with pytest.raises(LocalityConfigError, match="--locality-attention-backend: 'fast' is not one of auto, eager, sdpa, flex"):
        read_backend(argparse.Namespace(locality_attention_backend="fast"))  # a Hydra config skips argparse's choices
    with pytest.raises(LocalityConfigError, match="--locality-attention-backend"):
        attention_block([("gaussian", {})], ENC, backend="fast")
    assert read_backend(argparse.Namespace()) == "auto"


def test_flag_reaches_every_block(capsys):
    from fairseq_localness.modelbuild import build_translation_model, parse_model_args, synthetic_dictionary

    small = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
             "--encoder-ffn-embed-dim", "16", "--decoder-ffn-embed-dim", "16", "--encoder-attention-heads", "4",
             "--decoder-attention-heads", "4", "--gaussian-layers", "1", "--gaussian-attention", "encoder,decoder,cross"]
    args = parse_model_args("transformer_gaussian_local", small + ["--locality-attention-backend", "eager"])
    dictionary = synthetic_dictionary(20)
    model = build_translation_model(args, dictionary, dictionary)[1]
    assert [m.backend for m in model.modules() if isinstance(m, LocalityAttention)] == ["eager"] * 3
    with pytest.raises(SystemExit):
        parse_model_args("transformer_gaussian_local", small + ["--locality-attention-backend", "fast"])
    assert "--locality-attention-backend" in capsys.readouterr().err


@pytest.mark.parametrize("methods,kind,reason", [
    ([("csan2d", {"heads": 3})], ENC, "heads"),
    ([("diffwin_enc", {})], ENC, "cumulative sums"),
    ([("diffwin_cross", {})], CROSS, "cumulative sums"),
    ([("csan1d", {"implementation": "banded"})], ENC, "own kernel"),
    ([("csan1d", {"implementation": "dense"})], ENC, "own kernel"),
])
def test_unfusable_methods_fall_back_to_sdpa(methods, kind, reason, choices):
    block = attention_block(methods, kind)
    expected, real = run(block, kind, "eager")
    got, _ = run(block, kind, "flex")
    backend, why = choices[-1]
    assert backend == "sdpa" and reason in why, (backend, why)
    torch.testing.assert_close(got[real], expected[real], atol=1e-5, rtol=0)


@pytest.mark.parametrize("methods,kind,reason", [
    ([("diffwin_dec", {})], DEC, "multiplicative window"),
    ([("localhard", {})], ENC, "Luong's Eq. 10"),
    ([("relpos", {})], ENC, "Shaw's value term"),
])
def test_probability_methods_use_eager(methods, kind, reason, choices):
    block = attention_block(methods, kind)
    run(block, kind, "flex")
    assert choices[-1] == ("eager", "attention probabilities are needed")
    assert reason in block.locality[0].flex_unfusable()


def call_block(block, kind, *, need_weights=False, incremental_state=None, length=19):
    query, key, pad, mask, _ = inputs(kind, length=length)
    return block(query, key, key, key_padding_mask=pad, attn_mask=mask, need_weights=need_weights,
                 incremental_state=incremental_state)


def test_fallbacks_of_a_call(choices):
    block = attention_block([("gaussian", {})], ENC, backend="flex")
    with torch.no_grad():
        call_block(block, ENC, need_weights=True)
    assert choices[-1] == ("eager", "attention probabilities are needed")

    block.train()  # attention dropout 0: training alone does not stop Flex, gradients on the CPU do
    call_block(block, ENC)
    assert choices[-1][0] == "sdpa" and "gradients are needed on the CPU" in choices[-1][1]
    with torch.no_grad():
        call_block(block, ENC)
    assert choices[-1][0] == "flex"

    dropping = attention_block([("gaussian", {})], ENC, dropout=0.1, backend="flex").train()
    with torch.no_grad():
        call_block(dropping, ENC)
    assert choices[-1][0] == "sdpa" and "dropout" in choices[-1][1]
    dropping.eval()
    with torch.no_grad():
        call_block(dropping, ENC)
    assert choices[-1][0] == "flex"

    for backend in ("eager", "sdpa"):  # the flag overrides
        block.eval().backend = backend
        with torch.no_grad():
            call_block(block, ENC)
        assert choices[-1] == (backend, "requested")
    block.backend = "auto"
    with torch.no_grad():
        call_block(block, ENC)
    assert choices[-1][0] == "sdpa" and "auto on cpu" in choices[-1][1]


def test_encoder_attention_mask_falls_back(choices):
    block = attention_block([("alibi", {})], ENC, backend="flex")
    query, key, pad, _, _ = inputs(ENC)
    with torch.no_grad():
        block(query, key, key, key_padding_mask=pad, attn_mask=torch.zeros(19, 19), need_weights=False)
    assert choices[-1][0] == "sdpa" and "attention mask" in choices[-1][1]


def test_capture_falls_back(choices):
    from fairseq_localness.attention.core import capture_locality

    block = attention_block([("gaussian", {})], ENC, backend="flex")
    with torch.no_grad(), capture_locality(block) as captured:
        call_block(block, ENC)
    assert choices[-1][0] == "sdpa" and "capture" in choices[-1][1]
    assert captured.get("gaussian_center", ENC, 1).shape == (2, 19, HEADS)


STEP_PARAMS = [pytest.param(methods, kind, id=f"{case}-{kind}") for case, methods, kinds in CASES for kind in kinds
               if kind in (DEC, CROSS)]


def decode_steps(block: LocalityAttention, kind: str, backend: str, length: int = 9) -> torch.Tensor:
    """(T, B, C) outputs of decoding one query at a time through ``backend`` (fairseq's incremental state)."""
    query, key, pad, _, _ = inputs(kind, length=length)
    block.backend = backend
    state: dict = {}
    outputs = []
    with torch.no_grad():
        for step in range(length):
            row = query[step:step + 1]
            if kind == CROSS:
                out = block(row, key, key, key_padding_mask=pad, incremental_state=state, static_kv=True,
                            need_weights=False)[0]
            else:
                out = block(row, row, row, incremental_state=state, need_weights=False)[0]
            outputs.append(out)
    return torch.cat(outputs)


@pytest.mark.parametrize("methods,kind", STEP_PARAMS)
def test_flex_decoding_steps_equal_full_reference(methods, kind, choices):
    """An explicit ``flex`` decodes through Flex, one query per step (the band's block mask built from its
    tables), and every step equals the same position of the full reference forward (``auto`` keeps SDPA for
    steps: test_choice_rules)."""
    block = attention_block(methods, kind)
    query, key, pad, mask, _ = inputs(kind, length=9)
    if kind == DEC:
        pad = None  # decoding has no padding among the target prefix
    with torch.no_grad():
        full = block(query, key, key, key_padding_mask=pad, attn_mask=mask, need_weights=False)[0]
    steps = decode_steps(block, kind, "flex")
    assert set(choices[1:]) == {("flex", "requested")}, choices
    torch.testing.assert_close(steps, full, atol=ATOL[torch.float32], rtol=0)


def test_decoding_step_band_mask_keeps_the_band():
    """A decoding step's band block mask (the query is the last of S keys) keeps the blocks create_block_mask
    keeps, and the attention over it is the softmax over the band's keys alone, computed densely."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention

    band = Band(left=130, right=0)
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(1, 1, 1, 16, generator=gen)
    for src_len in (5, 129, 300):
        k, v = torch.randn(2, 1, 1, src_len, 16, generator=gen).unbind(0)
        call = backends.FlexCall(q, k, v, 0.25, [FlexTerms(band=band)], key_valid=None, causal=False)
        mask = call.block_mask(call.terms)
        exact = create_block_mask(backends._band_mask_mod(band, src_len - 1), None, None, 1, src_len, device="cpu",
                                  BLOCK_SIZE=FLEX_BLOCK)
        assert torch.equal(mask.to_dense(), exact.to_dense()), src_len
        logits = (q @ k.transpose(-1, -2)) * 0.25
        logits[..., : max(0, src_len - 1 - band.left)] = float("-inf")  # keys left of the band
        expected = torch.softmax(logits, dim=-1) @ v
        got = flex_attention(q, k, v, block_mask=mask, scale=0.25)
        torch.testing.assert_close(got, expected, atol=1e-6, rtol=0, msg=lambda m: f"S={src_len}: {m}")


def test_backend_is_logged_once_per_choice(caplog):
    backends._LOGGED.clear()
    block = attention_block([("kerple", {})], ENC, backend="flex")
    with caplog.at_level(logging.INFO, logger="fairseq_localness.attention.backends"), torch.no_grad():
        for _ in range(3):
            call_block(block, ENC)
    lines = [r.getMessage() for r in caplog.records if "attention backend for kerple" in r.getMessage()]
    assert lines == ["attention backend for kerple (encoder attention): flex, requested"]


#: the plugin's methods (tests may register more)
PAPER_METHODS = ("alibi", "bidirect", "block", "cnns", "csan1d", "csan2d", "diffwin_cross", "diffwin_dec", "diffwin_enc",
                 "dman", "fire", "gaussian", "hybrid", "kerple", "localhard", "neighbor", "relpos", "rope", "sman",
                 "t5bias")


def test_every_method_declares_its_fusion():
    """Each of the plugin's methods either has a Flex form or says why not in its own words (docs/gpu.md lists them)."""
    from fairseq_localness.attention.registry import LOCALITY_METHODS

    plugin = {name for name, cls in LOCALITY_METHODS.items() if cls.__module__.startswith("fairseq_localness.methods.")}
    assert plugin == set(PAPER_METHODS)
    spec = AttentionSpec(embed_dim=DIM, num_heads=HEADS, attn_type=ENC, layer=1, kdim=DIM, max_positions=64)
    unfusable = {}
    for name in PAPER_METHODS:
        cls = get_locality_method(name)
        kind = sorted(cls.supported_attention)[0]
        method = cls(cls.Options(attention=kind), AttentionSpec(**{**spec.__dict__, "attn_type": kind}))
        reason = method.flex_unfusable()
        unfusable[name] = reason
        assert reason is None or "declares no FlexAttention form" not in reason, name
    assert {name for name, reason in unfusable.items() if reason} == {
        "csan2d", "diffwin_enc", "diffwin_cross", "diffwin_dec", "localhard", "relpos"}  # at their paper defaults



@pytest.mark.parametrize("method", ["relpos", "gaussian"])
def test_auto_trains_a_method_with_a_training_fallback_on_sdpa(monkeypatch, method):
    """Shaw's key term (a Flex backward not yet run on a GPU in its present form) and the Gaussian (whose training
    a GPU measured slower through Flex, docs/gpu.md): the block tells the rules so whenever a call needs
    gradients, and only then; a method without a fallback never says so."""
    seen = []

    def record(facts):
        seen.append(facts)
        return backends.choose_backend(facts)

    monkeypatch.setattr(core, "choose_backend", record)
    options = {"values": False} if method == "relpos" else {}
    block = attention_block([(method, options)], ENC, backend="auto").train()
    call_block(block, ENC)
    assert seen[-1].training_fallback and seen[-1].training_fallback.startswith(f"{method}: ")
    with torch.no_grad():
        call_block(block, ENC)
    assert seen[-1].training_fallback is None
    alibi = attention_block([("alibi", {})], ENC, backend="auto").train()
    call_block(alibi, ENC)
    assert seen[-1].training_fallback is None
    on_cuda = dataclasses.replace(seen[-1], device="cuda", grad_on_cpu=False, training_fallback=f"{method}: why")
    assert backends.choose_backend(on_cuda) == ("sdpa", f"{method}: why")
    assert backends.choose_backend(dataclasses.replace(on_cuda, requested="flex")) == ("flex", "requested")
    assert backends.choose_backend(dataclasses.replace(on_cuda, training_fallback=None))[0] == "flex"


def test_published_margins_cover_every_comparison():
    """docs/gpu.md's margins table (docs/results/testing/flex-cpu-margins.json) holds one record per comparison
    above, so a case added here without measuring it again fails; and its measurement still runs."""
    import json
    from pathlib import Path

    import measure_flex_margins

    published = json.loads((Path(__file__).resolve().parents[1] / "docs/results/testing/flex-cpu-margins.json")
                           .read_text())["records"]
    expected = [(p.id, "float32") for p in PARAMS] + [(p.id, d) for d in ("bfloat16", "float16")
                                                      for p in HALF_PRECISION_PARAMS]
    assert [(r["case"], r["dtype"]) for r in published] == expected, \
        "run: python tests/measure_flex_margins.py --run-json docs/results/testing/flex-cpu-margins.json --overwrite"
    methods, kind = HALF_PRECISION_PARAMS[0].values
    assert 0 < measure_flex_margins.largest_difference(methods, kind, torch.bfloat16) < ATOL[torch.bfloat16]
