"""CUDA checks (skipped without a GPU; ``scripts/gpu_suite.sh`` runs them), the CPU-testable part of the
fused-path choice, and the GPU suite's ``--cpu-smoke`` run of the same code path.

The FlexAttention half on CUDA (the CPU half is tests/test_flex.py): forward and backward of every fusable
method and placement equal to the reference path, gradients into every learned parameter, step-by-step decoding
equal to the full Flex forward, and float16/bfloat16 finite at 1,024 tokens. Flex's CUDA kernel needs a head
dimension of at least 16, so these models are 64 wide with 4 heads (the other CUDA tests' models have 16 / 4).
"""

from __future__ import annotations

import copy
import os
import subprocess
import json
from types import SimpleNamespace

import pytest
import torch

from fairseq_localness.attention.core import LocalityAttention
from fairseq_localness.attention.options import option_attr
from fairseq_localness.attention.registry import LOCALITY_METHODS
from fairseq_localness.gpu.families import architecture_families
from fairseq_localness.modelbuild import build_translation_model, parse_model_args, synthetic_dictionary
from localness_testing import preprocess, write_synthetic_corpus
from test_flex import PARAMS as FLEX_PARAMS, attention_block, choices, inputs  # noqa: F401  (choices: a fixture)
from test_half_precision import TOLERANCE, check_half_precision, sentence, small_model

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
    for dtype in ("fp32", "bf16"):  # bf16 through the suite's fairseq-train, which must not turn it into --tpu
        run = report["train"][f"transformer_diffwin_cross {dtype}"]
        assert "error" not in run, run
        assert run["last_loss"] < run["first_loss"] and run["updates"] == 12
    speed = {r["arch"]: r for r in report["benchmark"]["speed"]}
    assert set(speed) == {"transformer", "transformer_diffwin_cross"}
    assert speed["transformer"]["decode_ratio"]["median"] == 1.0  # the reference against itself, same rounds
    backends = report["backends"]["fp32"]
    assert "error" not in backends, backends.get("error")
    rows = {(r["method"], r["backend"]): r for r in backends["rows"]}
    assert set(rows) == {("transformer", "(reference)")} | {("transformer_csan1d", b) for b in ("eager", "sdpa", "flex")}
    for row in rows.values():
        assert row["train_tokens_per_s"] > 0 and row["decode_sentences_per_s"] > 0 and row["train_ratio"] > 0
    assert rows[("transformer", "(reference)")]["train_ratio"] == 1.0
    markdown = (out / "gpu_suite.md").read_text()
    assert "## Training" in markdown and "## Attention backends" in markdown and "| transformer_csan1d | 16 | flex |" in markdown
    assert report["torch"] == torch.__version__


def test_backend_specs_of_the_suite():
    from fairseq_localness.gpu.suite import BACKEND_SPECS, backend_archs, split_specs

    assert split_specs("a@x=1,y=2,b") == ["a@x=1,y=2", "b"]
    assert backend_archs(["a@x=1,y=2"], ("sdpa", "flex")) == \
        "a@locality_attention_backend=sdpa,x=1,y=2,a@locality_attention_backend=flex,x=1,y=2"
    families = set(architecture_families())
    assert {spec.split("@")[0] for spec in BACKEND_SPECS} <= families


def test_the_suites_tests_stage_runs_the_cuda_tests_not_the_cpu_smoke(monkeypatch, tmp_path):
    """The tests stage deselects the CPU smoke test (its fairseq-preprocess is not beside the interpreter on a
    machine with the wheels in a --target folder), and the report is written after every stage: a suite stopped
    during training keeps the tests' result."""
    import subprocess
    import sys

    from fairseq_localness.gpu import suite

    commands = []

    def fake_run(cmd, log, env=None, check=True):
        commands.append(list(cmd))
        return "3 passed in 1.0s\n"

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt  # the machine's time limit, during training

    monkeypatch.setattr(suite, "run", fake_run)
    monkeypatch.setattr(suite, "stage_train", stopped)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "dict.en.txt").write_text("a 1\n")
    with pytest.raises(KeyboardInterrupt):
        suite.main(["run", "--stages", "tests,train", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "data")])
    assert commands == [[sys.executable, *suite.TEST_COMMAND]]
    report = json.loads((tmp_path / "out" / "gpu_suite.json").read_text())
    assert report["tests"] == {"passed": True, "summary": "3 passed in 1.0s"}
    # a second run into the same --out is refused before any stage, keeping the first run's report
    before = (tmp_path / "out" / "gpu_suite.json").read_text()
    with pytest.raises(SystemExit) as refused:
        suite.main(["run", "--stages", "tests", "--out", str(tmp_path / "out"), "--data", str(tmp_path / "data")])
    assert refused.value.code == 2 and len(commands) == 1
    assert (tmp_path / "out" / "gpu_suite.json").read_text() == before
    # the selection pytest makes of it: every test of the two files but the smoke
    collected = subprocess.run([sys.executable, *suite.TEST_COMMAND[:-2], "--collect-only", "-p", "no:cacheprovider"],
                               capture_output=True, text=True, cwd=suite.REPO).stdout
    names = [line for line in collected.splitlines() if "::" in line]
    assert names and not [n for n in names if "cpu_smoke" in n]
    assert any("test_gpu.py::" in n for n in names) and any("test_flex.py::" in n for n in names)


# ---- FlexAttention on CUDA -------------------------------------------------------------------------------------

FLEX_DIM, FLEX_HEADS = 64, 4
#: compiled kernels sum in another order than cuBLAS: max |difference| relative to the reference's largest value
FLEX_CUDA_TOLERANCE = {"output": 1e-4, "gradient": 1e-3,
                       # a parameter's gradient below this share of the block's largest one is rounding noise
                       "noise": 1e-4}


def flex_model(arch: str, backend: str):
    """``arch`` at 64 wide, 4 heads (head dimension 16), one layer per side holding every placed method."""
    wide = ["--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", str(FLEX_DIM),
            "--decoder-embed-dim", str(FLEX_DIM), "--encoder-ffn-embed-dim", "64", "--decoder-ffn-embed-dim", "64",
            "--encoder-attention-heads", str(FLEX_HEADS), "--decoder-attention-heads", str(FLEX_HEADS), "--dropout", "0",
            "--max-source-positions", "1024", "--max-target-positions", "1024", "--share-all-embeddings",
            "--locality-attention-backend", backend]
    args = parse_model_args(arch, wide, lenient_overrides={option_attr(name, "layers"): "1" for name in LOCALITY_METHODS})
    dictionary = synthetic_dictionary(20)
    torch.manual_seed(0)
    return build_translation_model(args, dictionary, dictionary)[1].eval()


@cuda
@pytest.mark.parametrize("methods,kind", FLEX_PARAMS)
def test_cuda_flex_forward_backward_equals_reference(methods, kind, choices):  # noqa: F811
    """Compiled Flex against the reference path (SDPA with the dense bias) on CUDA in float32, in training mode
    (attention dropout 0): the outputs at real queries, and the gradients of the queries and of every parameter."""
    torch.backends.cuda.matmul.allow_tf32 = False
    block = attention_block(methods, kind, dim=FLEX_DIM, heads=FLEX_HEADS).cuda().train()
    query, key, pad, mask, real = (t.cuda() if t is not None else None for t in inputs(kind, dim=FLEX_DIM))
    weights = torch.randn(query.shape, generator=torch.Generator().manual_seed(2)).cuda() * real.unsqueeze(-1)
    results = {}
    for backend in ("sdpa", "flex"):
        block.zero_grad(set_to_none=True)
        block.backend = backend
        q = query.detach().clone().requires_grad_()
        k = q if kind != "cross" else key
        out = block(q, k, k, key_padding_mask=pad, attn_mask=mask, need_weights=False)[0]
        (out * weights).sum().backward()  # padding queries (whose Flex output differs) carry no loss
        grads = {name: param.grad.detach().clone() for name, param in block.named_parameters() if param.grad is not None}
        results[backend] = (out.detach()[real], q.grad.detach().clone(), grads)
        assert choices[-1][0] == backend, choices[-1]
    (ref_out, ref_q, ref_grads), (out, q_grad, grads) = results["sdpa"], results["flex"]
    scale = ref_out.abs().max().item()
    torch.testing.assert_close(out, ref_out, atol=FLEX_CUDA_TOLERANCE["output"] * scale, rtol=0)
    torch.testing.assert_close(q_grad, ref_q, atol=FLEX_CUDA_TOLERANCE["gradient"] * ref_q.abs().max().item(), rtol=0)
    assert set(grads) == set(ref_grads), f"parameters with a gradient differ: {set(grads) ^ set(ref_grads)}"
    largest = max(ref.abs().max().item() for ref in ref_grads.values())
    for name, ref in ref_grads.items():
        assert torch.isfinite(grads[name]).all(), name
        noise = FLEX_CUDA_TOLERANCE["noise"] * largest
        if ref.abs().max().item() <= noise:
            # zero in exact arithmetic, such as the key projection's bias (q . b_k is the same for every key of
            # a query, and softmax ignores it): both paths hold rounding noise, which no relative tolerance
            # compares (seen: 1e-9 against 1e-6 on an H200); Flex's must stay noise too
            assert grads[name].abs().max().item() <= noise, f"gradient of {name}: not ~0 as the reference's"
            continue
        torch.testing.assert_close(grads[name], ref, atol=FLEX_CUDA_TOLERANCE["gradient"] * max(ref.abs().max().item(), 1e-6),
                                   rtol=0, msg=lambda m: f"gradient of {name}: {m}")
    learned = [name for name, param in block.locality.named_parameters() if param.requires_grad]
    for name in learned:  # every learned parameter of the methods receives a gradient through the kernel
        grad = grads.get(f"locality.{name}")
        assert grad is not None and grad.abs().sum() > 0, f"no gradient reaches locality.{name} through Flex"


@cuda
@pytest.mark.parametrize("arch", architecture_families())
def test_cuda_flex_incremental_equals_full(arch):
    """Step-by-step decoding through Flex (an explicit ``flex``: one query per step, the compiled kernel's
    decoding form) equals the full forward through Flex, on CUDA."""
    model = flex_model(arch, "flex").cuda()
    src, lengths, prev = (t.cuda() for t in sentence(24, seed=3))
    with torch.no_grad():
        full = model(src, lengths, prev)[0]
        encoder_out = model.encoder(src, src_lengths=lengths)
        state: dict = {}
        for step in range(prev.size(1)):
            logits = model.decoder(prev[:, : step + 1], encoder_out=encoder_out, incremental_state=state)[0]
            torch.testing.assert_close(logits[:, -1], full[:, step], atol=1e-4 * full.abs().max().item(), rtol=0,
                                       msg=lambda m: f"{arch} step {step}: {m}")


@cuda
@pytest.mark.parametrize("arch", architecture_families())
def test_cuda_flex_half_precision_at_1024(arch):
    """float16 and bfloat16 through Flex at 1,024 tokens: finite outputs and gradients, close to float32."""
    model = flex_model(arch, "flex").cuda()
    src, lengths, prev = (t.cuda() for t in sentence(1024, seed=11))
    with torch.no_grad():
        reference = model(src, lengths, prev)[0].float()
    scale = reference.abs().max().item()
    for dtype in (torch.float16, torch.bfloat16):
        half = copy.deepcopy(model).to(dtype).train()  # dropout is 0: training only turns gradients on
        out = half(src, lengths, prev)[0]
        where = f"{arch} {dtype} at 1,024 tokens"
        assert torch.isfinite(out).all(), f"{where}: non-finite output"
        out.float().log_softmax(-1)[0, :, 5].sum().backward()
        for name, param in half.named_parameters():
            if param.grad is not None:
                assert torch.isfinite(param.grad).all(), f"{where}: non-finite gradient of {name}"
        error = (out.float() - reference).abs().max().item()
        assert error <= TOLERANCE[dtype] * scale, f"{where}: max error {error:.4g} vs float32 scale {scale:.4g}"


@pytest.mark.parametrize("script,earlier", [("gpu_suite.sh", "gpu_suite.json"),
                                            ("gpu_suite.sh", "gpu_suite_logs.tar.gz"),
                                            ("gpu_timeboxed.sh", "gpu_timeboxed_logs.tar.gz")])
def test_gpu_scripts_keep_an_earlier_run(tmp_path, script, earlier):
    """The GPU scripts refuse an $OUT holding an earlier run's files before they install or run anything (no
    GPU or .gpu/ needed to see it), naming the file and FORCE=1."""
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    (tmp_path / earlier).write_text("an earlier run\n")
    proc = subprocess.run(["bash", str(root / "scripts" / script)], capture_output=True, text=True,
                          env={**os.environ, "OUT": str(tmp_path), "PYTHON": "false"})
    assert proc.returncode == 2 and f"{tmp_path / earlier} holds an earlier" in proc.stderr and "FORCE=1" in proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == [earlier]


def test_timeboxed_backend_groups_match_their_docs():
    """``scripts/gpu_timeboxed.sh``'s BACKEND_GROUPS: the groups it runs are the ones docs/gpu.md's table lists,
    with the same models, and every model is a registered architecture."""
    import re
    from pathlib import Path

    from fairseq.models import ARCH_MODEL_REGISTRY

    import fairseq_localness  # noqa: F401  (registers the architectures)

    root = Path(__file__).resolve().parents[1]
    script = (root / "scripts" / "gpu_timeboxed.sh").read_text()
    run = dict(re.findall(r"^\s+(\w+)\) bench \w+ \"\$\(pairs ([\w ]+)\)\"", script, flags=re.M))
    doc = (root / "docs" / "gpu.md").read_text()
    table = doc[doc.index("| group | models | measures |"):]
    rows = dict(re.findall(r"^\| `(\w+)` \| ([^|]+) \|", table[: table.index("\n\n")], flags=re.M))
    assert set(run) == set(rows) == {"core", "biases", "others", "decode", "profile"}
    names = {"transformer_csan1d": "CSAN-1D", "transformer_gaussian_local": "Gaussian", "transformer_dman": "DMAN",
             "transformer_alibi": "ALiBi", "transformer_t5bias": "T5", "transformer_sman": "SMAN",
             "transformer_hybrid_local": "hybrid", "transformer_kerple": "KERPLE", "transformer_fire": "FIRE"}
    for group, archs in run.items():
        assert [names[a] for a in archs.split()] == [m.strip() for m in rows[group].split(",")], group
        assert all(a in ARCH_MODEL_REGISTRY for a in archs.split()), group
    assert re.search(r"BACKEND_GROUPS:-core biases\}", script)
