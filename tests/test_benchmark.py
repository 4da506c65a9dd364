"""scripts/benchmark.py (fairseq_localness.benchmark): a --quick end-to-end run, spec parsing, and clear errors."""

import json
import math
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "scripts" / "benchmark.py"

REQUIRED_KEYS = {
    "arch", "seq_len", "train_tokens_per_s", "peak_mem_mb",
    "train_ratio_vs_baseline", "decode_tokens_per_s", "decode_ratio_vs_baseline",
}


from fairseq_localness.benchmark import cli as bench  # noqa: E402  (the package behind scripts/benchmark.py)


@pytest.mark.timeout(120)
def test_quick_run_writes_json_records(tmp_path):
    out = tmp_path / "bench.json"
    cmd = [
        sys.executable, str(SCRIPT), "--quick",
        "--archs", "transformer@decoder_layers=2",
        "--model-overrides", '{"encoder_layers": 1, "decoder_layers": 1}',
        "--seq-lens", "8", "--device", "cpu", "--json", str(out), "--run-json", str(tmp_path / "run.json"),
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=110)
    assert proc.returncode == 0, proc.stderr[-3000:]
    records = json.loads(out.read_text())
    run = json.loads((tmp_path / "run.json").read_text())  # the run as docs/results/ keeps it
    assert run["records"] == records and run["load_average"].endswith(" after") and "--quick" in run["command"]
    assert [r["arch"] for r in records] == ["transformer", "transformer@decoder_layers=2"]
    for r in records:
        assert REQUIRED_KEYS <= set(r)
        assert r["seq_len"] == 8
        assert r["device"] == "cpu" and r["threads"] == 1  # --quick default
        for key in ("train_tokens_per_s", "peak_mem_mb", "train_ratio_vs_baseline",
                    "decode_tokens_per_s", "decode_ratio_vs_baseline"):
            assert isinstance(r[key], float) and math.isfinite(r[key]) and r[key] > 0, (key, r)
        assert r["baseline"] == "transformer"
    base, cand = records
    assert base["role"] == "baseline" and cand["role"] == "candidate"
    assert base["train_ratio_vs_baseline"] == 1.0
    assert base["decode_ratio_vs_baseline"] == 1.0
    assert base["mem_ratio_vs_baseline"] == 1.0
    assert cand["train_ratio_vs_baseline"] == pytest.approx(
        cand["train_tokens_per_s"] / base["train_tokens_per_s"])
    assert cand["decode_ratio_vs_baseline"] == pytest.approx(
        cand["decode_tokens_per_s"] / base["decode_tokens_per_s"])
    # the overrides reached the models: one more decoder layer, more parameters
    assert base["size"]["decoder_layers"] == 1 and cand["size"]["decoder_layers"] == 2
    assert base["size"]["encoder_layers"] == cand["size"]["encoder_layers"] == 1
    assert cand["params"] > base["params"] > 0
    # the printed table has a row per record
    assert "transformer@decoder_layers=2" in proc.stdout and "decode tok/s" in proc.stdout


def test_parse_specs_with_overrides():
    specs = bench.parse_specs(
        "transformer_iwslt_de_en,transformer@encoder_layers=9,decoder-layers=9,foo_wmt_en_de",
        "--archs")
    assert [s.arch for s in specs] == ["transformer_iwslt_de_en", "transformer", "foo_wmt_en_de"]
    assert specs[1].overrides == {"encoder_layers": "9", "decoder_layers": "9"}
    assert specs[1].label == "transformer@encoder_layers=9,decoder_layers=9"
    assert specs[0].overrides == {} and specs[0].label == "transformer_iwslt_de_en"


@pytest.mark.parametrize("text", ["transformer,encoder_layers=3", "transformer,,x", "@a=1",
                                  "transformer@layers"])
def test_parse_specs_rejects_malformed(text):
    with pytest.raises(bench.BenchmarkError):
        bench.parse_specs(text, "--archs")


def test_seq_len_parsing():
    assert bench.parse_seq_lens("64, 256,64") == [64, 256]
    for bad in ("abc", "1", "0", "-5", "64,"):
        with pytest.raises(bench.BenchmarkError):
            bench.parse_seq_lens(bad)


def test_baseline_derived_from_size_suffix():
    derive = bench.derive_baseline_arch
    assert derive("transformer_foo") == "transformer"
    assert derive("transformer_foo_iwslt_de_en") == "transformer_iwslt_de_en"
    assert derive("transformer_foo_wmt_en_de") == "transformer_wmt_en_de"
    assert derive("transformer_foo_wmt_en_de_big") == "transformer_wmt_en_de_big"
    # stock fairseq transformer sizes are their own reference
    assert derive("transformer_wmt_en_de_big_t2t") == "transformer_wmt_en_de_big_t2t"
    assert derive("transformer_iwslt_de_en") == "transformer_iwslt_de_en"


def run_main(capsys, *argv):
    rc = bench.main(list(argv))
    return rc, capsys.readouterr().err


def test_unknown_arch_lists_close_matches(capsys):
    rc, err = run_main(capsys, "--archs", "transfomer_iwslt_de_en", "--seq-lens", "8")
    assert rc == 2
    assert "unknown architecture 'transfomer_iwslt_de_en'" in err
    assert "transformer_iwslt_de_en" in err


def test_an_existing_result_file_is_refused_before_anything_is_measured(capsys, tmp_path):
    mine = tmp_path / "mine.json"
    mine.write_text("{}\n")
    for flag in ("--json", "--run-json"):
        rc, err = run_main(capsys, "--archs", "transformer", "--seq-lens", "8", "--device", "cpu", flag, str(mine))
        assert rc == 2 and f"{flag} {mine} exists; pass --overwrite" in err
    assert mine.read_text() == "{}\n"
    rc, err = run_main(capsys, "--archs", "transformer", "--json", str(tmp_path))
    assert rc == 2 and "is a directory" in err


def test_bad_seq_len_is_a_clear_error(capsys):
    rc, err = run_main(capsys, "--archs", "transformer", "--seq-lens", "64,x")
    assert rc == 2 and "--seq-lens" in err and "'x'" in err
    rc, err = run_main(capsys, "--archs", "transformer", "--seq-lens", "4096",
                       "--device", "cpu", "--no-decode")
    assert rc == 2 and "max positions" in err


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_half_precision_on_cpu_is_refused(capsys, dtype):
    rc, err = run_main(capsys, "--archs", "transformer", "--seq-lens", "8",
                       "--device", "cpu", "--dtype", dtype)
    assert rc == 2 and f"--dtype {dtype} needs CUDA" in err


def test_unknown_override_key_suggests_option(capsys):
    rc, err = run_main(capsys, "--quick", "--device", "cpu", "--seq-lens", "8",
                       "--archs", "transformer@encoder_layerz=2")
    assert rc == 2 and "encoder_layerz" in err and "encoder_layers" in err


def test_cuda_request_without_cuda(capsys):
    if torch.cuda.is_available():
        pytest.skip("CUDA is available here")
    rc, err = run_main(capsys, "--archs", "transformer", "--device", "cuda")
    assert rc == 2 and "no CUDA device" in err


# --- interleaved mode (one process, rounds) -------------------------------------------------------------------------


def test_interleaved_ratios_are_per_round_medians():
    """Per-round ratios by hand: reference times 1, 2, 4 s against model times 2, 2, 8 s give 0.5, 1.0, 0.5:
    median 0.5, quartiles 0.5 and 0.75, min 0.5, max 1.0. A uniformly busier round cancels out of its ratio."""
    from fairseq_localness.benchmark.interleaved import ratio_summary

    summary = ratio_summary([2.0, 2.0, 8.0], [1.0, 2.0, 4.0])
    assert summary == {"median": 0.5, "q1": 0.5, "q3": 0.75, "min": 0.5, "max": 1.0, "rounds": 3}


def test_interleaved_order_rotates_every_round():
    from fairseq_localness.benchmark.interleaved import Contender, run_rounds

    calls = []
    contenders = [Contender(bench.Spec(name), lambda n=name: calls.append(n), None, 0, 0) for name in "abc"]
    run_rounds(contenders, rounds=3)
    assert calls == list("abc") + list("bca") + list("cab")
    assert all(len(c.times["train"]) == 3 and not c.times["decode"] for c in contenders)


def test_interleaved_rounds_use_the_given_clock():
    """--clock: each step's time is the difference of the clock's readings around it (here 3 s and 2 s)."""
    from fairseq_localness.benchmark.interleaved import CLOCKS, Contender, run_rounds

    readings = iter([0.0, 3.0, 10.0, 12.0])
    contender = Contender(bench.Spec("a"), lambda: None, None, 0, 0)
    run_rounds([contender], rounds=2, clock=lambda: next(readings))
    assert contender.times["train"] == [3.0, 2.0]
    assert CLOCKS["cpu"] is time.process_time and CLOCKS["wall"] is time.perf_counter


def test_flop_counts_by_hand():
    """--count-flops: a (3 x 4) @ (4 x 5) product is 2*3*4*5 = 120 FLOPs, two of them 240; the ratio is the
    reference's FLOPs over the model's (1/2), and the table prints it."""
    from fairseq_localness.benchmark.interleaved import Contender, count_flops, format_rounds, summarise_rounds

    a, b = torch.ones(3, 4), torch.ones(4, 5)
    reference = Contender(bench.Spec("ref"), lambda: a @ b, None, 0, 0)
    model = Contender(bench.Spec("model", baseline="ref"), lambda: (a @ b, a @ b), None, 0, 0)
    count_flops([reference, model])
    assert reference.flops == {"train": 120} and model.flops == {"train": 240}
    records = summarise_rounds([reference, model], seq_len=8)
    assert records[1]["train_flops_ratio"] == 0.5 and records[0]["train_flops_ratio"] == 1.0
    assert "| model | 8 | - | - | 0.500 | - |" in format_rounds(records)


def test_decode_flops_split_by_part_by_hand():
    """--count-flops splits a decoding call's FLOPs over the model's parts by module name: a (1 x 4) input
    through a 4 x 4 encoder self-attention projection is 2*1*4*4 = 32 FLOPs, a 4 x 3 cross-attention one 24,
    and a product outside every part (4 x 2) 16 goes to "other"; the parts add up to the total. Layer
    indices above 0 count too, and a module's children are not counted twice."""
    from torch import nn

    from fairseq_localness.benchmark.interleaved import Contender, count_flops

    model = nn.Module()
    model.encoder = nn.Module()
    model.encoder.layers = nn.ModuleList([nn.Module(), nn.Module()])
    model.encoder.layers[1].self_attn = nn.Sequential(nn.Linear(4, 4, bias=False))
    model.decoder = nn.Module()
    model.decoder.layers = nn.ModuleList([nn.Module()])
    model.decoder.layers[0].encoder_attn = nn.Linear(4, 3, bias=False)
    x, outside = torch.ones(1, 4), torch.ones(4, 2)

    def decode():
        with torch.no_grad():
            model.encoder.layers[1].self_attn(x)
            model.decoder.layers[0].encoder_attn(x)
            return x @ outside

    contender = Contender(bench.Spec("model"), lambda: None, decode, 0, 0, model=model)
    count_flops([contender])
    assert contender.flops["decode"] == 32 + 24 + 16
    assert contender.flops_by_part["decode"] == {
        "encoder self-attention": 32, "decoder self-attention": 0, "cross-attention": 24, "feed-forward": 0,
        "output projection": 0, "other": 16}
    assert "train" not in contender.flops_by_part  # a backward pass is not split: forward hooks cannot see it


def test_interleaved_quick_run_and_profile(tmp_path, capsys):
    """The whole mode on a toy model: the reference's own ratio is exactly 1 in every round, the table and the
    profile (top operators per model and step kind) are printed, JSON is written."""
    out, run_json = tmp_path / "speed.json", tmp_path / "run.json"
    assert bench.main(["--quick", "--archs", "transformer_gaussian_local", "--seq-lens", "16", "--max-len", "4",
                       "--device", "cpu", "--interleaved", "2", "--profile", "3", "--clock", "cpu",
                       "--count-flops", "--json", str(out), "--run-json", str(run_json)]) == 0
    records = {r["arch"]: r for r in json.loads(out.read_text())}
    # --run-json: the same records with where, when and how, as the docs' result files hold them
    from fairseq_localness.benchmark.interleaved import format_rounds
    from fairseq_localness.experiments.doc_tables import load_run

    run = load_run(run_json)
    assert run["records"] == json.loads(out.read_text())
    assert run["command"].endswith("--count-flops --json " + str(out) + " --run-json " + str(run_json))
    assert "python scripts/benchmark.py --quick --archs transformer_gaussian_local" in run["command"]
    assert run["machine"].startswith(f"{os.cpu_count()}-core CPU") and run["date"] and run["time"].endswith("UTC")
    assert "| transformer_gaussian_local | 16 |" in format_rounds(run["records"])
    assert records["transformer"]["decode_ratio"] == {"median": 1.0, "q1": 1.0, "q3": 1.0, "min": 1.0, "max": 1.0, "rounds": 2}
    assert records["transformer_gaussian_local"]["train_ratio"]["rounds"] == 2
    assert records["transformer"]["decode_flops_ratio"] == 1.0 and records["transformer"]["train_flops"] > 0
    # a real model's decoding FLOPs land in its parts, nothing outside them (embeddings have no products)
    parts = records["transformer_gaussian_local"]["decode_flops_by_part"]
    assert sum(parts.values()) == records["transformer_gaussian_local"]["decode_flops"]
    assert parts["other"] == 0 and all(parts[name] > 0 for name in parts if name != "other")
    printed = capsys.readouterr()
    assert "| transformer_gaussian_local | 16 |" in printed.out and "clock: process CPU time" in printed.out
    assert "== transformer_gaussian_local: decode ==" in printed.err


# --------------------------------------------------------------------------- one attention layer (benchmark.layer)

TINY_LAYER_MODEL = {"encoder_embed_dim": "16", "encoder_attention_heads": "4", "encoder_ffn_embed_dim": "32",
                    "decoder_embed_dim": "16", "decoder_attention_heads": "4", "decoder_ffn_embed_dim": "32"}


def test_layer_memory_is_what_autograd_keeps_for_backward():
    """The fused full layer keeps O(T) per sentence; the materialised one (attention dropout) keeps the
    (B, H, T, T) probabilities and their dropout mask on top; the banded 1D-CSAN keeps about the same at every
    length of a fixed token budget, and the dense 2D area grows with T. The parameters and the input are not counted."""
    from fairseq_localness.benchmark import layer as bench_layer

    variants = {v.name: v for v in bench_layer.CSAN_VARIANTS}
    kept = {}
    for length in (64, 128):  # whole blocks of the banded layout (32 queries) at both lengths
        for name in ("sdpa", "materialised", "1d_banded", "2d_dense"):
            module, width = bench_layer.build_layer(variants[name], TINY_LAYER_MODEL)
            x = bench_layer._batch(length, 512, width)
            kept[name, length] = bench_layer.saved_mib(module, x) * 2 ** 20
    probabilities = (512 // 128) * 4 * 128 * 128 * 4  # one float32 (B, H, T, T) tensor at T = 128
    assert kept["materialised", 128] - kept["sdpa", 128] >= probabilities
    assert kept["sdpa", 64] == kept["sdpa", 128]  # 512 tokens either way, nothing of size T x T
    # the band gathers T + M - 1 keys per sentence: all but the M - 1 edge keys scale with the tokens, not with T
    assert abs(kept["1d_banded", 64] - kept["1d_banded", 128]) < 0.02 * kept["1d_banded", 128]
    assert kept["2d_dense", 128] > 1.5 * kept["2d_dense", 64]


def test_layer_benchmark_writes_its_run_and_refuses_bad_input(tmp_path, capsys):
    from fairseq_localness.benchmark import layer as bench_layer

    out = tmp_path / "layer.json"
    argv = ["--seq-lens", "8", "--tokens", "16", "--steps", "1", "--model", json.dumps(TINY_LAYER_MODEL), "--run-json", str(out)]
    # as users run it (python -m: each case in a fresh process of the same module)
    proc = subprocess.run([sys.executable, "-m", "fairseq_localness.benchmark.layer", *argv], capture_output=True, text=True,
                          cwd=REPO)
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = json.loads(out.read_text())
    assert "python -m fairseq_localness.benchmark.layer --seq-lens 8 --tokens 16" in run["command"]
    assert [v["name"] for v in run["variants"]] == ["sdpa", "materialised", "1d_dense", "1d_banded", "2d_dense", "2d_banded"]
    (record,) = run["records"]
    assert record["length"] == 8 and set(record["milliseconds"]) == set(record["mib"]) == {v["name"] for v in run["variants"]}
    assert all(value > 0 for value in record["milliseconds"].values())
    for bad, message in ((argv, f"--run-json {out} exists; pass --overwrite"),
                         (["--seq-lens", "8,x"], "--seq-lens: 'x' is not an integer"),
                         (["--seq-lens", "64", "--tokens", "32"], "--tokens 32 is less than the longest --seq-lens 64"),
                         (["--model", "[1]"], "--model must be a JSON object"),
                         (["--model", '{"encoder_embed_dims": 16}'], "--model: transformer: 'encoder_embed_dims' is not a fairseq option")):
        with pytest.raises(SystemExit):
            bench_layer.main(bad)
        assert message in capsys.readouterr().err
