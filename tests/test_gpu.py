"""CUDA checks (skipped without a GPU; ``scripts/gpu_suite.sh`` runs them), the CPU-testable part of the
fused-path choice, and the GPU suite's ``--cpu-smoke`` run of the same code path."""

from __future__ import annotations

import json
from types import SimpleNamespace

import pytest
import torch

from fairseq_localness.attention.core import LocalityAttention
from fairseq_localness.gpu.families import architecture_families
from localness_testing import preprocess, write_synthetic_corpus
from test_half_precision import check_half_precision, sentence, small_model

cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU (run scripts/gpu_suite.sh there)")


def fake_block(kernel_options: str = "auto", replaces: bool = False) -> LocalityAttention:
    """A LocalityAttention stand-in with a kernel method, for the device choice alone."""
    block = LocalityAttention.__new__(LocalityAttention)
    kernel = SimpleNamespace(options=SimpleNamespace(implementation=kernel_options), replaces_attention=replaces)
    object.__setattr__(block, "_kernel", kernel)
    return block


def test_fused_path_is_chosen_on_cuda_only():
    """A band kernel with a dense bias (CSAN-1D) runs on the CPU, but on CUDA the core's fused SDPA takes its bias;
    kernels with no bias equivalent (CSAN-2D) and an explicit --csan1d-implementation banded keep the kernel."""
    cpu, gpu = torch.device("cpu"), torch.device("cuda")
    assert fake_block().uses_kernel(cpu) and not fake_block().uses_kernel(gpu)
    assert fake_block(replaces=True).uses_kernel(gpu)
    assert fake_block("banded").uses_kernel(gpu)
    no_kernel = fake_block()
    object.__setattr__(no_kernel, "_kernel", None)
    assert not no_kernel.uses_kernel(cpu)


@cuda
@pytest.mark.parametrize("arch", architecture_families())
def test_cuda_half_precision_at_1024(arch):
    check_half_precision(arch, device="cuda", lengths=(1024,))


@cuda
@pytest.mark.parametrize("arch", architecture_families())
def test_cuda_fused_path_equals_cpu_reference(arch):
    """The CUDA path (fused SDPA with the dense bias) equals the CPU reference path (banded kernels, explicit
    softmax where a method needs probabilities) in float32, at a length where CSAN's auto picks banded on CPU."""
    torch.backends.cudnn.allow_tf32 = False  # CNN families' convolutions: TF32 would round beyond the tolerance
    model = small_model(arch)
    src, lengths, prev = sentence(256, seed=7)
    with torch.no_grad():
        reference = model(src, lengths, prev)[0]
        on_gpu = model.cuda()(src.cuda(), lengths.cuda(), prev.cuda())[0].cpu()
    torch.testing.assert_close(on_gpu, reference, atol=2e-3 * reference.abs().max().item(), rtol=0)


@cuda
@pytest.mark.parametrize("arch", architecture_families())
def test_cuda_incremental_equals_full(arch):
    """Step-by-step decoding on CUDA (with a within-sentence beam reorder) equals the full forward."""
    model = small_model(arch).cuda()
    src, lengths, prev = sentence(24, seed=3)
    src, lengths, prev = (t.repeat_interleave(2, dim=0).cuda() for t in (src, lengths, prev))
    prev[1, 1:] = prev[1, 1:].flip(0)  # the two hypotheses of the sentence differ
    with torch.no_grad():
        encoder_out = model.encoder(src, src_lengths=lengths)
        state: dict = {}
        rows = torch.arange(2, device="cuda")
        for step in range(prev.size(1)):
            if step == 5:
                order = torch.tensor([1, 0], device="cuda")
                rows = rows.index_select(0, order)
                encoder_out = model.encoder.reorder_encoder_out(encoder_out, order)
                model.decoder.reorder_incremental_state_scripting(state, order)
            logits = model.decoder(prev[rows, : step + 1], encoder_out=encoder_out, incremental_state=state)[0]
            full = model(src[rows], lengths[rows], prev[rows, : step + 1])[0]
            torch.testing.assert_close(logits[:, -1], full[:, -1], atol=1e-4, rtol=0, msg=lambda m: f"{arch} step {step}: {m}")


def test_gpu_suite_cpu_smoke(tmp_path):
    """The suite's training and benchmark stages, at toy size on the CPU: same code as on the GPU."""
    from fairseq_localness.gpu.suite import main

    write_synthetic_corpus(tmp_path / "raw", train=200)
    data = preprocess(tmp_path / "raw", tmp_path / "bin")
    out = tmp_path / "out"
    status = main(["run", "--cpu-smoke", "--out", str(out), "--data", str(data), "--families", "transformer_diffwin_cross",
                   "--updates", "12", "--rounds", "1", "--parallel", "1"])
    report = json.loads((out / "gpu_suite.json").read_text())
    assert status == 0, report
    run = report["train"]["transformer_diffwin_cross fp32"]
    assert run["last_loss"] < run["first_loss"] and run["updates"] == 12
    speed = {r["arch"]: r for r in report["benchmark"]["speed"]}
    assert set(speed) == {"transformer", "transformer_diffwin_cross"}
    assert speed["transformer"]["decode_ratio"]["median"] == 1.0  # the reference against itself, same rounds
    assert "## Training" in (out / "gpu_suite.md").read_text()
