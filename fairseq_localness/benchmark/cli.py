"""The benchmark's command line: options, planning the references, running every measurement round-robin."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

from ..provenance import command_line, load_average, result_file_problem, run_header, utc_now, write_result_file
from .report import _fmt, format_models, print_table, summarise
from .specs import (
    DEFAULT_SETTINGS, QUICK_MODEL_OVERRIDES, QUICK_SETTINGS, BenchmarkError, Spec, _normalise_key, _override_value,
    _quiet_fairseq, check_registered, derive_baseline_arch, fairseq_args, max_positions, parse_seq_lens, parse_specs,
)
from .interleaved import format_rounds, run_interleaved
from .worker import worker_main

class DefaultsOnceFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Adds "(default: X)" only where the help text does not already say the default and there is one."""

    def _get_help_string(self, action):
        text = action.help or ""
        if "default" in text or action.default in (None, False, argparse.SUPPRESS):
            return text
        return super()._get_help_string(action)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Training/decoding speed and peak memory of fairseq translation "
                    "architectures, relative to the plain transformer of the same size.",
        formatter_class=DefaultsOnceFormatter)
    p.add_argument("--archs", help="comma-separated architectures, each optionally "
                   "ARCH@key=val,key=val with fairseq option overrides")
    p.add_argument("--seq-lens", default="64,256",
                   help="comma-separated sentence lengths (source = target, incl. EOS)")
    p.add_argument("--json", metavar="PATH", help="also write the records as JSON")
    p.add_argument("--run-json", metavar="PATH",
                   help="also write the run as JSON: the records with the date, machine, load average and command "
                        "(the format of docs/results/benchmark/, which the docs' tables are generated from)")
    p.add_argument("--overwrite", action="store_true", help="replace an existing --json / --run-json file")
    p.add_argument("--baseline", metavar="ARCH",
                   help="reference for every arch, instead of the transformer of the "
                        "same size derived from the name suffix")
    p.add_argument("--extra-baselines", metavar="ARCH[,ARCH]",
                   help="further reference models to measure, same syntax as --archs "
                        "(e.g. transformer@encoder_layers=9,decoder_layers=9)")
    p.add_argument("--model-overrides", metavar="JSON", default="{}",
                   help="fairseq options applied to every model, baselines included, "
                        "e.g. '{\"dropout\": 0.3}'; ARCH@... overrides take precedence")
    p.add_argument("--vocab", type=int, help="joint dictionary size incl. specials "
                   f"(default {DEFAULT_SETTINGS['vocab']}, --quick {QUICK_SETTINGS['vocab']})")
    p.add_argument("--share-all-embeddings", action=argparse.BooleanOptionalAction,
                   default=True, help="tie encoder/decoder/output embeddings")
    p.add_argument("--batch-tokens", type=int, help="tokens per training batch "
                   "(per side); batch = batch_tokens // seq_len sentences "
                   f"(default {DEFAULT_SETTINGS['batch_tokens']})")
    p.add_argument("--steps", type=int, help="timed training steps per measurement "
                   f"(default {DEFAULT_SETTINGS['steps']})")
    p.add_argument("--warmup", type=int, help="untimed training steps before timing "
                   f"(default {DEFAULT_SETTINGS['warmup']})")
    p.add_argument("--repeats", type=int, help="round-robin repeats; medians are reported "
                   f"(default {DEFAULT_SETTINGS['repeats']})")
    p.add_argument("--criterion", default="label_smoothed_cross_entropy",
                   help="fairseq criterion for the training loss")
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--lr", type=float, default=5e-4, help="Adam learning rate")
    p.add_argument("--beam", type=int, help=f"beam size (default {DEFAULT_SETTINGS['beam']})")
    p.add_argument("--max-len", type=int, help="generated tokens per sentence, EOS "
                   "excluded; identical for all archs (default: the seq len)")
    p.add_argument("--decode-batch", type=int, help="source sentences per generate() "
                   f"call (default {DEFAULT_SETTINGS['decode_batch']})")
    p.add_argument("--decode-iters", type=int, help="timed generate() calls per "
                   f"measurement (default {DEFAULT_SETTINGS['decode_iters']})")
    p.add_argument("--no-decode", action="store_true", help="skip the decoding benchmark")
    p.add_argument("--device", choices=("auto", "cpu", "cuda"), default="auto")
    p.add_argument("--dtype", choices=("fp32", "fp16", "bf16"), default="fp32",
                   help="fp16/bf16 (CUDA only): autocast training, half-precision decoding")
    p.add_argument("--threads", type=int,
                   help="torch CPU threads (default: all cores; 1 with --quick)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--quick", action="store_true",
                   help="smoke test: tiny model, vocab, batches and step counts")
    p.add_argument("--interleaved", type=int, metavar="ROUNDS",
                   help="measure every model in this one process, ROUNDS rounds of one training step and "
                        "one decoding call each, order rotated per round; prints the median and "
                        "interquartile range of per-round ratios (stable on a busy machine; "
                        "--steps/--repeats are not used)")
    p.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                   help="with --interleaved: time each step by wall clock, or by the CPU time of this process "
                        "(CPU device only; unaffected by waiting for a core on a shared machine, the "
                        "single-core latency with --threads 1)")
    p.add_argument("--count-flops", action="store_true",
                   help="with --interleaved: also count the matrix-product FLOPs of one training step and one "
                        "decoding call per model (torch's FlopCounterMode) and print their ratios to the "
                        "baseline: the speed ratio a model can reach where matrix products dominate; the JSON also "
                        "splits the decoding call's count over the model's parts (decode_flops_by_part)")
    p.add_argument("--profile", type=int, metavar="TOP", default=0,
                   help="with --interleaved: print the TOP operators per model and step kind, by self CPU time "
                   "(by self GPU time on CUDA)")
    p.add_argument("--list-archs", action="store_true",
                   help="list the registered architectures and exit")
    return p


def resolve_settings(opts: argparse.Namespace) -> dict:
    import torch

    base = QUICK_SETTINGS if opts.quick else DEFAULT_SETTINGS
    s = {k: (getattr(opts, k) if getattr(opts, k) is not None else v) for k, v in base.items()}
    for name in ("steps", "repeats", "batch_tokens", "vocab", "beam",
                 "decode_batch", "decode_iters"):
        if s[name] < 1:
            raise BenchmarkError(f"--{name.replace('_', '-')} must be >= 1")
    if s["warmup"] < 0:
        raise BenchmarkError("--warmup must be >= 0")
    if s["max_len"] is not None and s["max_len"] < 1:
        raise BenchmarkError("--max-len must be >= 1")

    if opts.device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    elif opts.device == "cuda" and not torch.cuda.is_available():
        raise BenchmarkError("--device cuda: no CUDA device is available")
    else:
        device = opts.device
    if opts.dtype != "fp32":
        if device != "cuda":
            raise BenchmarkError(f"--dtype {opts.dtype} needs CUDA; on CPU use --dtype fp32")
        if opts.dtype == "bf16" and not torch.cuda.is_bf16_supported():
            raise BenchmarkError("--dtype bf16: this GPU does not support bfloat16")

    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    # --quick defaults to one thread: smoke tests run on shared CI machines,
    # where OpenMP threads that wait on each other slow down by orders of magnitude.
    threads = opts.threads if opts.threads is not None else (1 if opts.quick else cores)
    if threads < 1:
        raise BenchmarkError("--threads must be >= 1")

    try:
        global_overrides = json.loads(opts.model_overrides)
    except json.JSONDecodeError as exc:
        raise BenchmarkError(f"--model-overrides is not valid JSON: {exc}")
    if not isinstance(global_overrides, dict):
        raise BenchmarkError("--model-overrides must be a JSON object")
    global_overrides = {_normalise_key(k, "--model-overrides"): _override_value(v)
                        for k, v in global_overrides.items()}

    s.update(
        device=device, dtype=opts.dtype, threads=threads, seed=opts.seed,
        criterion=opts.criterion, label_smoothing=opts.label_smoothing, lr=opts.lr,
        share_all_embeddings=opts.share_all_embeddings, decode=not opts.no_decode,
        global_overrides=global_overrides,
        harness_overrides=dict(QUICK_MODEL_OVERRIDES) if opts.quick else {},
    )
    return s


def plan_specs(opts, registry) -> Tuple[List[Spec], List[Spec]]:
    """Return (all specs to measure, baselines) with roles and references set."""
    candidates = parse_specs(opts.archs, "--archs")
    extras = parse_specs(opts.extra_baselines, "--extra-baselines") if opts.extra_baselines else []
    fixed = None
    if opts.baseline:
        fixed_list = parse_specs(opts.baseline, "--baseline")
        if len(fixed_list) != 1:
            raise BenchmarkError("--baseline takes exactly one architecture")
        fixed = fixed_list[0]
    check_registered(candidates + extras + ([fixed] if fixed else []), registry)

    by_label: Dict[str, Spec] = {}
    order: List[Spec] = []

    def add(spec: Spec) -> Spec:
        if spec.label in by_label:
            existing = by_label[spec.label]
            if spec.role == "baseline":
                existing.role = "baseline"
            return existing
        by_label[spec.label] = spec
        order.append(spec)
        return spec

    for spec in extras:
        spec.role = "extra_baseline"
    baselines: List[Spec] = []
    for spec in candidates + extras:
        if fixed is not None:
            ref = Spec(fixed.arch, dict(fixed.overrides))
        else:
            ref_arch = derive_baseline_arch(spec.arch)
            if ref_arch not in registry:
                raise BenchmarkError(
                    f"derived reference {ref_arch!r} for {spec.label!r} is not registered; "
                    f"name one with --baseline")
            ref = Spec(ref_arch)
        ref.role = "baseline"
        ref = add(ref)
        if ref not in baselines:
            baselines.append(ref)
        spec = add(spec)
        spec.baseline = ref.label
    for ref in baselines:
        ref.baseline = ref.label
    return order, baselines


def run_job(spec: Spec, seq_len: int, settings: dict, workdir: str) -> dict:
    job_path = os.path.join(workdir, "job.json")
    out_path = os.path.join(workdir, "result.json")
    if os.path.exists(out_path):
        os.remove(out_path)
    with open(job_path, "w") as f:
        json.dump(dict(arch=spec.arch, overrides=spec.overrides, seq_len=seq_len,
                       settings=settings, out=out_path), f)
    env = dict(os.environ)
    env["OMP_NUM_THREADS"] = env["MKL_NUM_THREADS"] = str(settings["threads"])
    env.setdefault("PYTHONWARNINGS", "ignore")
    proc = subprocess.run([sys.executable, "-m", "fairseq_localness.benchmark.worker", job_path],
                          env=env, capture_output=True, text=True)
    if proc.returncode != 0 or not os.path.exists(out_path):
        tail = "\n".join((proc.stderr or proc.stdout).strip().splitlines()[-25:])
        raise RuntimeError(
            f"measurement of {spec.label} at seq len {seq_len} failed "
            f"(exit status {proc.returncode}):\n{tail}")
    with open(out_path) as f:
        result = json.load(f)
    if "error" in result:
        raise BenchmarkError(result["error"])
    return result


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker_main(argv[1])
    opts = build_parser().parse_args(argv)
    opts.argv = list(argv)
    try:
        return drive(opts)
    except BenchmarkError as exc:
        print(f"benchmark.py: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"benchmark.py: error: {exc}", file=sys.stderr)
        return 1


def check_outputs(opts) -> None:
    """Before anything is measured: the --json / --run-json files can be written and replace nothing a user has."""
    for flag, path in (("--json", opts.json), ("--run-json", opts.run_json)):
        problem = path and result_file_problem(path, flag, opts.overwrite)
        if problem:
            raise BenchmarkError(problem)


def drive(opts) -> int:
    check_outputs(opts)
    if not opts.list_archs:
        if not opts.archs:
            raise BenchmarkError("--archs is required (see --list-archs)")
        seq_lens = parse_seq_lens(opts.seq_lens)
    settings = resolve_settings(opts)

    _quiet_fairseq()
    import torch
    from fairseq.models import ARCH_MODEL_REGISTRY

    import fairseq_localness  # noqa: F401  (registers the plugin's archs)

    if opts.list_archs:
        print("\n".join(sorted(ARCH_MODEL_REGISTRY)))
        return 0

    specs, baselines = plan_specs(opts, ARCH_MODEL_REGISTRY)
    for seq_len in seq_lens:
        if seq_len > settings["batch_tokens"]:
            raise BenchmarkError(
                f"seq len {seq_len} exceeds --batch-tokens {settings['batch_tokens']}: "
                f"a batch must hold at least one sentence")
    # Validate options and lengths up front (cheap: no model is built here).
    for spec in specs:
        _args, cfg = fairseq_args(spec, settings)
        max_src, max_tgt = max_positions(cfg)
        for seq_len in seq_lens:
            dec_len = settings["max_len"] or seq_len
            if seq_len > min(max_src, max_tgt) or (settings["decode"] and dec_len > max_tgt - 1):
                raise BenchmarkError(
                    f"{spec.label}: seq len {seq_len} (decode length {dec_len}) does not fit "
                    f"max positions (source {max_src}, target {max_tgt}; decoding needs "
                    f"length + 1); raise them with --model-overrides "
                    f"'{{\"max_source_positions\": N, \"max_target_positions\": N}}'")

    dev = torch.cuda.get_device_name() if settings["device"] == "cuda" else "cpu"
    load_before = load_average()
    if load_before is not None and load_before > 0.5 * (os.cpu_count() or 1):
        print(f"warning: the machine is busy (1-minute load average {load_before:.1f} on "
              f"{os.cpu_count()} cores): timings will be noisy; compare ratios from one "
              f"run and consider more --repeats", file=sys.stderr)
    print(f"device {settings['device']} ({dev}), dtype {settings['dtype']}, threads "
          f"{settings['threads']}, torch {torch.__version__}; vocab {settings['vocab']}, "
          f"batch {settings['batch_tokens']} tokens, {settings['warmup']} warmup + "
          + (f"{opts.interleaved} interleaved rounds of one step" if opts.interleaved is not None
             else f"{settings['steps']} timed steps, {settings['repeats']} repeats") + "; decoding: "
          + (f"beam {settings['beam']}, {settings['decode_batch']} sentences, length "
             f"{settings['max_len'] or 'seq len'}" if settings["decode"] else "off"),
          flush=True)

    if opts.interleaved is not None:
        return drive_interleaved(opts, specs, seq_lens, settings)
    runs: Dict[Tuple[str, int], List[dict]] = {(s.label, L): [] for s in specs for L in seq_lens}
    t_start, started = time.perf_counter(), utc_now()
    with tempfile.TemporaryDirectory(prefix="fl-bench-") as workdir:
        for rep in range(settings["repeats"]):
            for seq_len in seq_lens:
                k = rep % len(specs)  # rotate the start so no arch is always first
                for spec in specs[k:] + specs[:k]:
                    t0 = time.perf_counter()
                    r = run_job(spec, seq_len, settings, workdir)
                    runs[(spec.label, seq_len)].append(r)
                    dec = (f", decode {_fmt(r['decode_tokens_per_s'])} tok/s"
                           if r["decode_tokens_per_s"] is not None else "")
                    print(f"[{rep + 1}/{settings['repeats']}] L={seq_len} {spec.label}: "
                          f"train {_fmt(r['train_tokens_per_s'])} tok/s, peak "
                          f"{_fmt(r['peak_mem_mb'])} MB{dec} ({time.perf_counter() - t0:.1f} s)",
                          file=sys.stderr, flush=True)

    settings["loadavg_before"], settings["loadavg_after"] = load_before, load_average()
    records = summarise(specs, seq_lens, runs, settings, baselines)
    print()
    print(format_models([r for r in records if r["seq_len"] == seq_lens[0]]))
    print()
    print_table(records, settings)
    load = "" if load_before is None else (
        f" (1-minute load average {load_before:.1f} before, {settings['loadavg_after']:.1f} after)")
    print(f"total {time.perf_counter() - t_start:.1f} s{load}")
    if opts.json:
        write_result_file(opts.json, records)
    if opts.run_json:
        write_run_json(opts, records, settings, started, load_before, settings["loadavg_after"])
    return 0


def write_run_json(opts, records: List[dict], settings: dict, started, load_before: Optional[float],
                   load_after: Optional[float]) -> None:
    """The run as docs/results/benchmark/ keeps it: the records and where, when and how they were measured."""
    import torch

    header = run_header(started, load_before, load_after, command_line("python scripts/benchmark.py", getattr(opts, "argv", [])),
                        gpus=1 if settings["device"] == "cuda" else 0, torch_version=torch.__version__)
    write_result_file(opts.run_json, {**header, "source": "written by the command (--run-json)", "records": records})


def drive_interleaved(opts, specs: List[Spec], seq_lens: List[int], settings: dict) -> int:
    """The --interleaved mode (see :mod:`.interleaved`)."""
    if opts.interleaved < 1:
        raise BenchmarkError("--interleaved must be >= 1 round")
    if opts.profile < 0:
        raise BenchmarkError("--profile must be >= 0")
    start, started, load_before = time.perf_counter(), utc_now(), load_average()
    if opts.clock == "cpu" and settings["device"] == "cuda":
        raise BenchmarkError("--clock cpu times the host's CPU work only, not the GPU's: use --clock wall on CUDA")
    records = run_interleaved(specs, seq_lens, settings, opts.interleaved, opts.profile,
                              log=lambda line: print(line, file=sys.stderr, flush=True), clock=opts.clock,
                              flops=opts.count_flops)
    print(format_rounds(records))
    print(f"clock: {'process CPU time' if opts.clock == 'cpu' else 'wall time'}")
    load_after = load_average()
    load = "" if load_before is None else f" (1-minute load average {load_before:.1f} before, {load_after:.1f} after)"
    print(f"{opts.interleaved} interleaved rounds, total {time.perf_counter() - start:.1f} s{load}")
    if opts.json:
        write_result_file(opts.json, records)
    if opts.run_json:
        write_run_json(opts, records, settings, started, load_before, load_after)
    return 0


def console_main() -> int:
    """``fairseq-localness-benchmark`` entry point."""
    return main(sys.argv[1:])
