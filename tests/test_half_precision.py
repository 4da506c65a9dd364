"""float16 / bfloat16 at fairseq's full 1,024 positions for every architecture family.

Each family is built at a small width through the package's model builder
(``fairseq_localness.modelbuild``), its methods placed in its one layer, cast to half
precision and run forward + backward on one sentence of 512 and 1,024
tokens per side. Outputs and every gradient must be finite, and outputs must
match the float32 model's. Before the fix the Gaussian family overflowed
(NaN from 512 tokens in float16) and bfloat16 rounded positions above 256.
"""

from __future__ import annotations

import copy

import pytest
import torch

from fairseq_localness.attention.context import AttentionContext
from fairseq_localness.attention.options import option_attr
from fairseq_localness.attention.registry import LOCALITY_METHODS
from fairseq_localness.gpu.families import architecture_families
from fairseq_localness.methods.gaussian import gaussian_bias
from fairseq_localness.modelbuild import build_translation_model, parse_model_args, synthetic_dictionary

LENGTHS = (512, 1024)
HALF = (torch.float16, torch.bfloat16)
#: one layer per side with every method placed in it (the overflow is per layer) keeps 1,024 tokens fast;
#: 4 heads: CSAN-2D's paper area spans 3 heads
SMALL = [
    "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
    "--encoder-ffn-embed-dim", "16", "--decoder-ffn-embed-dim", "16", "--encoder-attention-heads", "4",
    "--decoder-attention-heads", "4", "--dropout", "0", "--max-source-positions", "1024",
    "--max-target-positions", "1024", "--share-all-embeddings",
]
FIRST_LAYER = {option_attr(name, "layers"): "1" for name in LOCALITY_METHODS}
#: max |half - float32| of the output logits, relative to the float32 logits' largest magnitude. Measured over
#: every family at 512 and 1,024 tokens: at most 0.0011 (float16) and 0.0077 (bfloat16); the bounds leave about
#: 3x, and stay below what most families' terms move the logits by (dropping a term fails here, as a float16 path
#: that ignored a bias would; the overflow bugs gave NaN/inf)
TOLERANCE = {torch.float16: 0.003, torch.bfloat16: 0.02}


def sentence(length: int, seed: int):
    gen = torch.Generator().manual_seed(seed)
    src = torch.randint(4, 24, (1, length), generator=gen)
    src[:, -1] = 2  # eos
    prev = torch.randint(4, 24, (1, length), generator=gen)
    prev[:, 0] = 2
    return src, torch.tensor([length]), prev


def small_model(arch: str):
    args = parse_model_args(arch, SMALL, lenient_overrides=FIRST_LAYER)
    dictionary = synthetic_dictionary(20)
    torch.manual_seed(0)
    return build_translation_model(args, dictionary, dictionary)[1].eval()


def check_half_precision(arch: str, device: str = "cpu", lengths=LENGTHS) -> None:
    """Forward + backward of ``arch`` in float16 and bfloat16 on ``device``: finite, and close to float32 on the CPU."""
    model = small_model(arch)
    for length in lengths:
        src, lengths_, prev = sentence(length, seed=length)
        with torch.no_grad():
            reference = model(src, lengths_, prev)[0]
        scale = reference.abs().max().item()
        for dtype in HALF:
            half = copy.deepcopy(model).to(device=device, dtype=dtype)
            out = half(src.to(device), lengths_.to(device), prev.to(device))[0]
            where = f"{arch} {dtype} length {length} on {device}"
            assert torch.isfinite(out).all(), f"{where}: non-finite output"
            out.float().log_softmax(-1)[0, :, 5].sum().backward()
            for name, param in half.named_parameters():
                if param.grad is not None:
                    assert torch.isfinite(param.grad).all(), f"{where}: non-finite gradient of {name}"
            error = (out.float().cpu() - reference).abs().max().item()
            assert error <= TOLERANCE[dtype] * scale, f"{where}: max error {error:.4g} vs float32 scale {scale:.4g}"


@pytest.mark.parametrize("arch", architecture_families())
def test_half_precision_forward_backward(arch):
    check_half_precision(arch)


@pytest.mark.parametrize("dtype", HALF)
def test_gaussian_bias_exact_at_long_positions(dtype):
    """Eq. 5 by hand at positions where half precision rounds: centre P = 1001, key j = 1003, D = 4 (sigma = 2):
    G = -(1003 - 1001)^2 / (2 * 2^2) = -0.5; key 1001 gives 0; key 1013 gives -144/8 = -18.
    bfloat16 holds neither 1001 nor 1003 (before the fix: distance 0 or 4), float16 overflows 256^2."""
    keys = torch.tensor([[1001, 1003, 1013, 0]])
    center = torch.tensor([[[1001.0]]])
    window = torch.tensor([[[4.0]]])
    bias = gaussian_bias(keys, center, window, floor=-1e4, dtype=dtype)
    assert bias.dtype == dtype
    # -1001^2 / 8 = -125250.125 is clamped at the floor instead of overflowing float16 to -inf
    floor = torch.tensor(-1e4, dtype=dtype).item()  # bfloat16: -9984
    assert bias.float().flatten().tolist() == [0.0, -0.5, -18.0, floor]


def test_visible_lengths_stay_float32():
    """A decoder prefix of 1,001 tokens: bfloat16 would round the length to 1,000."""
    q = torch.zeros(1, 1, 1, 4, dtype=torch.bfloat16)
    k = torch.zeros(1, 1, 1001, 4, dtype=torch.bfloat16)
    ctx = AttentionContext(
        q=q, k=k, v=k, query_input=q[:, 0], key_input=None, key_padding_mask=None, attn_mask=None,
        causal=True, attn_type="decoder", layer=1, scaling=1.0,
    )
    assert ctx.visible_lengths.dtype == torch.float32
    assert ctx.visible_lengths.tolist() == [[1001.0]]
