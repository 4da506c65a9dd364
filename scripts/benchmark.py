#!/usr/bin/env python
"""Speed and memory benchmark for fairseq translation architectures.

For every architecture in ``--archs`` and every length in ``--seq-lens`` this
script builds the model the way ``fairseq-train`` does (fairseq's own argument
parser, the ``translation`` task, a synthetic joint dictionary), then measures

* training throughput: forward + backward + Adam step on identical random
  batches, in target tokens per second (fairseq's ``wps`` convention);
* peak memory of model build + training (see "Memory" below);
* incremental-decoding throughput: fairseq's ``SequenceGenerator`` (beam
  search) with EOS forbidden until a fixed length, so every architecture
  generates exactly the same number of tokens;

and reports each figure together with its ratio to the plain fairseq
``transformer`` of the same size, measured in the same run.  The reference for
``<name>``, ``<name>_iwslt_de_en``, ``<name>_wmt_en_de`` and
``<name>_wmt_en_de_big`` is ``transformer``, ``transformer_iwslt_de_en``,
``transformer_wmt_en_de`` and ``transformer_wmt_en_de_big``; a plain fairseq
``transformer*`` architecture is its own reference; ``--baseline`` overrides.

Every measurement (one architecture at one length in one repeat) runs in a
fresh subprocess, so that memory figures are not polluted by other models or
by the allocator caches they leave behind.  Architectures are run round-robin
within each repeat (with the start rotated from repeat to repeat) so that
machine drift hits all of them alike; the reported figures are medians over
the repeats.

Memory ("peak_mem_mb"):
* CUDA: ``torch.cuda.max_memory_allocated()`` over model build + training
  steps: parameters, gradients, Adam state and activations (tensor memory,
  without the caching allocator's reserve).
* CPU: the increase of the worker's peak resident set size (Linux VmHWM,
  reset through /proc/self/clear_refs) over its resident size just before the
  model is built: the same tensors plus allocator overhead and per-thread
  scratch buffers.

Architecture specs may carry fairseq option overrides:
``ARCH@key=val,key=val`` (keys are fairseq option names, dashes or
underscores), e.g. ``--archs transformer_gaussian_local,transformer@encoder_layers=9``.

Usage:
    python scripts/benchmark.py --archs transformer_gaussian_local_iwslt_de_en \\
        --seq-lens 64,256 --json runs/bench.json
"""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import difflib
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional, Tuple

# Sizes by name suffix: the reference of ``<name><suffix>`` is ``transformer<suffix>``.
# Longest first, so that "_wmt_en_de_big" wins over "_wmt_en_de".
SIZE_SUFFIXES = ("_wmt_en_de_big", "_iwslt_de_en", "_wmt_en_de")
BASELINE_FAMILY = "transformer"

# --quick: a tiny model and a few tiny steps, for smoke tests of the harness.
QUICK_SETTINGS = dict(
    steps=2, warmup=1, repeats=1, batch_tokens=256, vocab=512,
    beam=2, decode_batch=2, max_len=8, decode_iters=1,
)
QUICK_MODEL_OVERRIDES = {
    "encoder_embed_dim": "64", "decoder_embed_dim": "64",
    "encoder_ffn_embed_dim": "128", "decoder_ffn_embed_dim": "128",
    "encoder_attention_heads": "4", "decoder_attention_heads": "4",
}  # layer counts are kept: locality methods are often placed on specific layers
DEFAULT_SETTINGS = dict(
    steps=10, warmup=2, repeats=3, batch_tokens=4096, vocab=32000,
    beam=4, decode_batch=16, max_len=None, decode_iters=1,
)

JSON_KEYS = (
    "arch", "seq_len", "train_tokens_per_s", "peak_mem_mb",
    "train_ratio_vs_baseline", "decode_tokens_per_s", "decode_ratio_vs_baseline",
)


class BenchmarkError(Exception):
    """A user error: reported as one clear line, exit status 2."""


# --------------------------------------------------------------------------
# Architecture specs
# --------------------------------------------------------------------------

_KEY_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")
_ARCH_RE = re.compile(r"^[A-Za-z0-9_.-]+$")


@dataclasses.dataclass
class Spec:
    """One model to measure: a registered fairseq arch plus option overrides."""

    arch: str
    overrides: Dict[str, str] = dataclasses.field(default_factory=dict)
    role: str = "candidate"  # "baseline" | "extra_baseline" | "candidate"
    baseline: Optional[str] = None  # label of the reference spec

    @property
    def label(self) -> str:
        if not self.overrides:
            return self.arch
        return self.arch + "@" + ",".join(f"{k}={v}" for k, v in self.overrides.items())


def _override_value(value) -> str:
    """Normalise an override value to the string fairseq's parser would get."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if value is None:
        return "None"
    return json.dumps(value)


def _normalise_key(key: str, where: str) -> str:
    key = key.strip().lstrip("-")
    if not _KEY_RE.match(key):
        raise BenchmarkError(f"bad option name {key!r} in {where}")
    return key.replace("-", "_")


def parse_specs(text: str, option: str) -> List[Spec]:
    """Parse ``ARCH[@key=val,key=val][,ARCH...]``.

    Comma-separated tokens: a token with ``@`` starts an arch with its first
    override, a following ``key=val`` token adds an override to that arch, any
    other token is a new arch.
    """
    specs: List[Spec] = []
    can_continue = False
    for raw in text.split(","):
        token = raw.strip()
        if not token:
            raise BenchmarkError(f"{option}: empty entry in {text!r}")
        if "@" in token:
            arch, _, first = token.partition("@")
            arch = arch.strip()
            if not arch or not _ARCH_RE.match(arch):
                raise BenchmarkError(f"{option}: bad architecture name {arch!r} in {token!r}")
            if "=" not in first:
                raise BenchmarkError(
                    f"{option}: expected ARCH@key=value, got {token!r}")
            spec = Spec(arch)
            key, _, val = first.partition("=")
            spec.overrides[_normalise_key(key, token)] = val.strip()
            specs.append(spec)
            can_continue = True
        elif "=" in token:
            if not can_continue:
                raise BenchmarkError(
                    f"{option}: {token!r} looks like an override but does not follow "
                    f"an ARCH@key=value entry (write ARCH@{token})")
            key, _, val = token.partition("=")
            specs[-1].overrides[_normalise_key(key, token)] = val.strip()
        else:
            if not _ARCH_RE.match(token):
                raise BenchmarkError(f"{option}: bad architecture name {token!r}")
            specs.append(Spec(token))
            can_continue = False
    return specs


def parse_seq_lens(text: str) -> List[int]:
    lens: List[int] = []
    for raw in text.split(","):
        tok = raw.strip()
        try:
            value = int(tok)
        except ValueError:
            raise BenchmarkError(
                f"--seq-lens: {tok!r} is not an integer (expected e.g. --seq-lens 64,256)")
        if value < 2:
            raise BenchmarkError(
                f"--seq-lens: {value} is too short; a sentence needs at least one "
                f"token plus EOS (>= 2)")
        if value not in lens:
            lens.append(value)
    return lens


def check_registered(specs: List[Spec], registry) -> None:
    names = sorted(registry)
    for spec in specs:
        if spec.arch in registry:
            continue
        close = difflib.get_close_matches(spec.arch, names, n=6, cutoff=0.6)
        close += [n for n in names if spec.arch in n and n not in close][: 6 - len(close)]
        hint = ("close matches: " + ", ".join(close)) if close else "no close matches"
        raise BenchmarkError(
            f"unknown architecture {spec.arch!r} ({hint}); "
            f"{len(names)} architectures are registered, see --list-archs")


def derive_baseline_arch(arch: str) -> str:
    """The plain fairseq transformer of the same size as ``arch``."""
    from fairseq.models import ARCH_CONFIG_REGISTRY, ARCH_MODEL_NAME_REGISTRY

    fn = ARCH_CONFIG_REGISTRY.get(arch)
    if (ARCH_MODEL_NAME_REGISTRY.get(arch) == BASELINE_FAMILY and fn is not None
            and fn.__module__.startswith("fairseq.")):
        return arch  # a stock fairseq transformer size is its own reference
    for suffix in SIZE_SUFFIXES:
        if arch.endswith(suffix):
            return BASELINE_FAMILY + suffix
    return BASELINE_FAMILY


# --------------------------------------------------------------------------
# Building models the way fairseq-train does
# --------------------------------------------------------------------------

def _quiet_fairseq() -> None:
    import logging
    import warnings

    warnings.filterwarnings("ignore")
    logging.getLogger().setLevel(logging.WARNING)
    for name in ("fairseq", "hydra", "fairseq_localness"):
        logging.getLogger(name).setLevel(logging.WARNING)


def fairseq_args(spec: Spec, settings: dict):
    """Parse fairseq-train arguments for ``spec``; return (args Namespace, cfg).

    Overrides are applied as parser defaults (before the architecture function
    runs, exactly like command-line flags), which also lets booleans be turned
    off.  Precedence, lowest first: --quick tiny-model settings and
    --[no-]share-all-embeddings (both skipped where an architecture lacks the
    option), --model-overrides, ARCH@key=val.  Unknown option names are an
    error.
    """
    from fairseq import options
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf

    # dest -> (raw value, strict); later entries take precedence.
    requested: Dict[str, Tuple[str, bool]] = {}
    for key, val in settings["harness_overrides"].items():
        requested[key] = (val, False)
    requested["share_all_embeddings"] = (_override_value(settings["share_all_embeddings"]), False)
    for key, val in settings["global_overrides"].items():
        requested[key] = (val, True)
    for key, val in spec.overrides.items():
        requested[key] = (val, True)

    def modify(parser: argparse.ArgumentParser) -> None:
        actions = {a.dest: a for a in parser._actions}
        defaults = {}
        for dest, (raw, _strict) in requested.items():
            action = actions.get(dest)
            if action is None:
                continue  # not (yet) known; checked after parsing
            if action.nargs == 0:  # store_true / store_false flag
                low = raw.strip().lower()
                if low in ("true", "1", "yes", "on"):
                    value = True
                elif low in ("false", "0", "no", "off"):
                    value = False
                else:
                    raise BenchmarkError(
                        f"{spec.label}: option {dest} is a flag, give true or false "
                        f"(got {raw!r})")
            else:
                value = raw
                if action.type is not None and raw != "None":
                    try:
                        converted = action.type(raw)
                    except Exception as exc:  # argparse would raise the same way
                        raise BenchmarkError(
                            f"{spec.label}: bad value {raw!r} for option {dest}: {exc}")
                else:
                    converted = None if raw == "None" else raw
                if action.choices is not None and converted not in action.choices:
                    raise BenchmarkError(
                        f"{spec.label}: option {dest} must be one of "
                        f"{list(action.choices)}, got {raw!r}")
                value = converted
            defaults[dest] = value
        parser.set_defaults(**defaults)

    input_args = [
        "/nonexistent-benchmark-data",  # the task's data dir: never read
        "--task", "translation",
        "--arch", spec.arch,
        "--criterion", settings["criterion"],
        "--optimizer", "adam",
        "--seed", str(settings["seed"]),
    ]
    if settings["criterion"] == "label_smoothed_cross_entropy":
        input_args += ["--label-smoothing", str(settings["label_smoothing"])]
    parser = options.get_training_parser()
    args = options.parse_args_and_arch(parser, input_args=input_args, modify_parser=modify)

    known = {a.dest for a in parser._actions}
    for dest, (_raw, strict) in requested.items():
        if strict and dest not in known:
            close = difflib.get_close_matches(dest, sorted(known), n=4, cutoff=0.6)
            hint = f" (close: {', '.join(close)})" if close else ""
            raise BenchmarkError(
                f"{spec.label}: {dest!r} is not a fairseq option for arch "
                f"{spec.arch}{hint}")
    cfg = convert_namespace_to_omegaconf(args)
    return args, cfg


def max_positions(cfg) -> Tuple[int, int]:
    def get(name):
        for group in (cfg.model, cfg.task):
            value = getattr(group, name, None)
            if value is not None:
                return int(value)
        return 1024

    return get("max_source_positions"), get("max_target_positions")


def model_size(cfg) -> dict:
    m = cfg.model
    keys = ("encoder_embed_dim", "encoder_ffn_embed_dim", "encoder_layers",
            "encoder_attention_heads", "decoder_embed_dim", "decoder_layers",
            "decoder_attention_heads")
    return {k: getattr(m, k, None) for k in keys}


def make_dictionary(size: int):
    from fairseq.data import Dictionary

    d = Dictionary()
    if size <= d.nspecial:
        raise BenchmarkError(f"--vocab must exceed the {d.nspecial} special symbols")
    for i in range(size - len(d)):
        d.add_symbol(f"tok{i}")
    return d


# --------------------------------------------------------------------------
# Worker: one architecture at one length, in its own process
# --------------------------------------------------------------------------

def _proc_status_mb(*fields: str) -> Dict[str, float]:
    values = {}
    with open("/proc/self/status") as f:
        for line in f:
            key, _, rest = line.partition(":")
            if key in fields:
                values[key] = int(rest.split()[0]) / 1024  # kB -> MB
    missing = set(fields) - set(values)
    if missing:
        raise OSError(f"/proc/self/status lacks {sorted(missing)}")
    return values


class CpuPeakMemory:
    """Peak growth of this process's anonymous resident memory.

    Linux: ``start()`` records the anonymous RSS and resets the kernel's
    high-water mark VmHWM to the current RSS (``/proc/self/clear_refs``);
    ``peak_mb()`` returns VmHWM minus the file-backed and shared RSS at that
    time (library code paged in while running, not workload memory) minus the
    anonymous RSS at ``start()``.  If clear_refs cannot be written, VmHWM is
    the process-lifetime peak (an over-estimate, flagged in ``method``).
    Without /proc (not Linux), the lifetime peak RSS from getrusage is
    reported as is.
    """

    def __init__(self) -> None:
        self.method = "cpu_peak_anon_rss_growth"
        self.base_anon = 0.0

    def start(self) -> None:
        if not os.path.exists("/proc/self/status"):
            self.method = "cpu_lifetime_peak_rss_total"
            return
        self.base_anon = _proc_status_mb("RssAnon")["RssAnon"]
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # reset VmHWM to the current RSS (Linux >= 4.0)
        except OSError:
            self.method = "cpu_lifetime_peak_rss_minus_anon_before_build"

    def peak_mb(self) -> float:
        if self.method == "cpu_lifetime_peak_rss_total":
            import resource

            maxrss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
            return maxrss / 2 ** 20 if sys.platform == "darwin" else maxrss / 1024
        s = _proc_status_mb("VmHWM", "RssFile", "RssShmem")
        return s["VmHWM"] - s["RssFile"] - s["RssShmem"] - self.base_anon


def _warm_up_runtime(device) -> None:
    """Start thread pools and allocator state before the memory baseline."""
    import torch

    layer = torch.nn.Linear(16, 16).to(device)
    opt = torch.optim.Adam(layer.parameters())
    layer(torch.randn(4, 16, device=device)).log_softmax(-1).sum().backward()
    opt.step()
    del layer, opt


def run_worker(job: dict) -> dict:
    _quiet_fairseq()
    import torch

    import fairseq_localness  # noqa: F401  (registers the plugin's archs)

    settings = job["settings"]
    spec = Spec(job["arch"], job["overrides"])
    seq_len = job["seq_len"]
    use_cuda = settings["device"] == "cuda"
    device = torch.device("cuda", torch.cuda.current_device()) if use_cuda else torch.device("cpu")
    torch.set_num_threads(settings["threads"])
    dtype = {"fp32": None, "fp16": torch.float16, "bf16": torch.bfloat16}[settings["dtype"]]

    def sync():
        if use_cuda:
            torch.cuda.synchronize(device)

    from fairseq.sequence_generator import SequenceGenerator
    from fairseq.tasks.translation import TranslationTask
    from fairseq import search

    _args, cfg = fairseq_args(spec, settings)
    dictionary = make_dictionary(settings["vocab"])
    task = TranslationTask(cfg.task, dictionary, dictionary)

    # ---- build + training memory window starts here
    _warm_up_runtime(device)
    cpu_mem = CpuPeakMemory()
    if use_cuda:
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats(device)
        mem_method = "cuda_max_memory_allocated"
    else:
        cpu_mem.start()
        mem_method = cpu_mem.method

    torch.manual_seed(settings["seed"])
    model = task.build_model(cfg.model).to(device)
    criterion = task.build_criterion(cfg.criterion).to(device)
    n_params = sum(p.numel() for p in model.parameters())
    max_src, max_tgt = model.max_positions()
    if seq_len > max_src or seq_len > max_tgt:
        raise BenchmarkError(
            f"{spec.label}: seq len {seq_len} exceeds the model's max positions "
            f"({max_src}, {max_tgt})")

    # Identical random batch for every architecture (seeded on its own generator).
    gen = torch.Generator().manual_seed(settings["seed"] * 1000003 + seq_len)
    bsz = settings["batch_tokens"] // seq_len
    lo, hi = dictionary.nspecial, len(dictionary)
    eos = dictionary.eos()
    src = torch.randint(lo, hi, (bsz, seq_len), generator=gen)
    tgt = torch.randint(lo, hi, (bsz, seq_len), generator=gen)
    src[:, -1] = eos
    tgt[:, -1] = eos
    prev = torch.cat([torch.full((bsz, 1), eos, dtype=tgt.dtype), tgt[:, :-1]], dim=1)
    sample = {
        "id": torch.arange(bsz).to(device),
        "nsentences": bsz,
        "ntokens": bsz * seq_len,
        "net_input": {
            "src_tokens": src.to(device),
            "src_lengths": torch.full((bsz,), seq_len, dtype=torch.long).to(device),
            "prev_output_tokens": prev.to(device),
        },
        "target": tgt.to(device),
    }

    optimizer = torch.optim.Adam(model.parameters(), lr=settings["lr"],
                                 betas=(0.9, 0.98), eps=1e-8)
    scaler = torch.amp.GradScaler("cuda") if dtype == torch.float16 else None
    autocast = (torch.autocast(device_type="cuda", dtype=dtype) if dtype is not None
                else contextlib.nullcontext())

    model.train()
    last_loss = float("nan")

    def train_step():
        nonlocal last_loss
        optimizer.zero_grad(set_to_none=True)
        with autocast:
            loss, _sample_size, _log = criterion(model, sample)
        if scaler is not None:
            scaler.scale(loss).backward()
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()
            optimizer.step()
        last_loss = loss.detach()

    for _ in range(settings["warmup"]):
        train_step()
    sync()
    t0 = time.perf_counter()
    for _ in range(settings["steps"]):
        train_step()
    sync()
    train_s = time.perf_counter() - t0
    last_loss = float(last_loss)
    if not math.isfinite(last_loss) and dtype is None:
        raise RuntimeError(f"{spec.label}: non-finite training loss {last_loss}")
    peak_mb = (torch.cuda.max_memory_allocated(device) / 2 ** 20 if use_cuda
               else cpu_mem.peak_mb())
    reserved_mb = torch.cuda.max_memory_reserved(device) / 2 ** 20 if use_cuda else None
    train_tokens = settings["steps"] * bsz * seq_len
    result = dict(
        params=n_params, size=model_size(cfg), bsz=bsz,
        train_tokens=train_tokens, train_seconds=train_s,
        train_tokens_per_s=train_tokens / train_s,
        train_loss=last_loss, peak_mem_mb=peak_mb,
        peak_mem_reserved_mb=reserved_mb, mem_method=mem_method,
    )

    # ---- incremental decoding
    if settings["decode"]:
        del optimizer, scaler
        model.zero_grad(set_to_none=True)
        dec_len = settings["max_len"] or seq_len
        if dec_len > model.max_decoder_positions() - 1:
            raise BenchmarkError(
                f"{spec.label}: decode length {dec_len} exceeds the decoder's "
                f"max positions - 1 ({model.max_decoder_positions() - 1})")
        if dtype is not None:
            model = model.to(dtype)  # pure half precision, as fairseq-generate --fp16
        model.eval()
        cfg.generation.beam = settings["beam"]
        model.prepare_for_inference_(cfg)
        dsrc = torch.randint(lo, hi, (settings["decode_batch"], seq_len), generator=gen)
        dsrc[:, -1] = eos
        dec_sample = {"net_input": {
            "src_tokens": dsrc.to(device),
            "src_lengths": torch.full((dsrc.size(0),), seq_len, dtype=torch.long).to(device),
        }}

        def generator(length):
            # min_len == max length: EOS is forbidden until the last step, so
            # every hypothesis has exactly ``length`` tokens plus EOS.
            return SequenceGenerator(
                [model], dictionary, beam_size=settings["beam"], max_len_a=0,
                max_len_b=length, min_len=length, search_strategy=search.BeamSearch(dictionary))

        with torch.no_grad():
            if settings["warmup"] > 0:
                generator(min(dec_len, 16)).generate([model], dec_sample)
            timed = generator(dec_len)
            sync()
            t0 = time.perf_counter()
            n_tokens = 0
            for _ in range(settings["decode_iters"]):
                hypos = timed.generate([model], dec_sample)
                n_tokens += sum(h[0]["tokens"].numel() for h in hypos)
            sync()
            dec_s = time.perf_counter() - t0
        expected = settings["decode_iters"] * dsrc.size(0) * (dec_len + 1)
        if n_tokens != expected:
            raise RuntimeError(
                f"{spec.label}: generated {n_tokens} tokens, expected {expected}")
        result.update(decode_tokens=n_tokens, decode_seconds=dec_s,
                      decode_tokens_per_s=n_tokens / dec_s, decode_len=dec_len)
    else:
        result.update(decode_tokens=None, decode_seconds=None,
                      decode_tokens_per_s=None, decode_len=None)
    return result


def worker_main(job_path: str) -> int:
    with open(job_path) as f:
        job = json.load(f)
    try:
        result = run_worker(job)
    except BenchmarkError as exc:
        result = {"error": str(exc)}
    with open(job["out"], "w") as f:
        json.dump(result, f)
    return 0


# --------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------

def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        description="Training/decoding speed and peak memory of fairseq translation "
                    "architectures, relative to the plain transformer of the same size.",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    p.add_argument("--archs", help="comma-separated architectures, each optionally "
                   "ARCH@key=val,key=val with fairseq option overrides")
    p.add_argument("--seq-lens", default="64,256",
                   help="comma-separated sentence lengths (source = target, incl. EOS)")
    p.add_argument("--json", metavar="PATH", help="also write the records as JSON")
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
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", job_path],
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


def _loadavg() -> Optional[float]:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def _ratio(value, ref):
    if value is None or ref is None or ref == 0:
        return None
    return value / ref


def _fmt(value, spec=None, none="-"):
    """Format a number; by default with thousands separators, and one decimal
    below 100 so that small throughputs stay readable."""
    if value is None:
        return none
    if spec is None:
        spec = "{:,.0f}" if abs(value) >= 100 else "{:.1f}"
    return spec.format(value)


def summarise(specs: List[Spec], seq_lens: List[int], runs: Dict, settings: dict,
              baselines: List[Spec]) -> List[dict]:
    def med(values):
        values = [v for v in values if v is not None]
        return statistics.median(values) if values else None

    records = []
    for seq_len in seq_lens:
        agg = {}
        for spec in specs:
            rs = runs[(spec.label, seq_len)]
            agg[spec.label] = dict(
                train=med([r["train_tokens_per_s"] for r in rs]),
                decode=med([r["decode_tokens_per_s"] for r in rs]),
                mem=med([r["peak_mem_mb"] for r in rs]),
                first=rs[0], all=rs,
            )
        # Rows grouped by reference: the baseline first, then its comparisons.
        ordered = []
        for ref in baselines:
            ordered.append(ref)
            ordered += [s for s in specs if s.baseline == ref.label and s is not ref]
        for spec in ordered:
            a, b = agg[spec.label], agg[spec.baseline]
            first = a["first"]
            records.append(dict(
                arch=spec.label,
                seq_len=seq_len,
                train_tokens_per_s=a["train"],
                peak_mem_mb=a["mem"],
                train_ratio_vs_baseline=_ratio(a["train"], b["train"]),
                decode_tokens_per_s=a["decode"],
                decode_ratio_vs_baseline=_ratio(a["decode"], b["decode"]),
                mem_ratio_vs_baseline=_ratio(a["mem"], b["mem"]),
                baseline=spec.baseline,
                role=spec.role,
                base_arch=spec.arch,
                overrides=spec.overrides,
                params=first["params"],
                size=first["size"],
                batch_sentences=first["bsz"],
                decode_len=first["decode_len"],
                train_tokens_per_s_runs=[r["train_tokens_per_s"] for r in a["all"]],
                decode_tokens_per_s_runs=[r["decode_tokens_per_s"] for r in a["all"]],
                peak_mem_mb_runs=[r["peak_mem_mb"] for r in a["all"]],
                mem_method=first["mem_method"],
                device=settings["device"], dtype=settings["dtype"],
                threads=settings["threads"], vocab=settings["vocab"],
                batch_tokens=settings["batch_tokens"], steps=settings["steps"],
                warmup=settings["warmup"], repeats=settings["repeats"],
                beam=settings["beam"], decode_batch=settings["decode_batch"],
                loadavg_before=settings.get("loadavg_before"),
                loadavg_after=settings.get("loadavg_after"),
            ))
    for record in records:
        missing = set(JSON_KEYS) - set(record)
        assert not missing, missing
    return records


def print_table(records: List[dict], settings: dict) -> None:
    cols = ("arch", "len", "params", "train tok/s", "ratio", "peak MB", "mem ratio",
            "decode tok/s", "ratio")
    rows = []
    for r in records:
        rows.append((
            ("* " if r["role"] == "baseline" else "  ") + r["arch"],
            str(r["seq_len"]),
            f"{r['params'] / 1e6:.1f}M",
            _fmt(r["train_tokens_per_s"]),
            _fmt(r["train_ratio_vs_baseline"], "{:.3f}"),
            _fmt(r["peak_mem_mb"]),
            _fmt(r["mem_ratio_vs_baseline"], "{:.3f}"),
            _fmt(r["decode_tokens_per_s"]),
            _fmt(r["decode_ratio_vs_baseline"], "{:.3f}"),
        ))
    widths = [max(len(c), *(len(row[i]) for row in rows)) for i, c in enumerate(cols)]
    line = lambda cells: "  ".join(  # noqa: E731
        c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))
    print(line(cols))
    print("  ".join("-" * w for w in widths))
    prev_len = None
    for r, row in zip(records, rows):
        if prev_len is not None and r["seq_len"] != prev_len:
            print()
        prev_len = r["seq_len"]
        print(line(row))
    mem = ("torch.cuda.max_memory_allocated over build+training"
           if settings["device"] == "cuda"
           else "growth of the worker's peak anonymous RSS over build+training")
    print(f"\n* = reference; ratios = median of this arch / median of its reference. "
          f"peak MB: {mem}.")


def print_models(specs: List[Spec], runs: Dict, seq_len: int) -> None:
    print("Models:")
    for spec in specs:
        r = runs[(spec.label, seq_len)][0]
        s = r["size"]
        print(f"  {spec.label}: {r['params']:,} params, embed {s['encoder_embed_dim']}/"
              f"{s['decoder_embed_dim']}, ffn {s['encoder_ffn_embed_dim']}, layers "
              f"{s['encoder_layers']}+{s['decoder_layers']}, heads "
              f"{s['encoder_attention_heads']}/{s['decoder_attention_heads']}"
              f"  [{spec.role}{'' if spec.role == 'baseline' else ', vs ' + spec.baseline}]")


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        return worker_main(argv[1])
    opts = build_parser().parse_args(argv)
    try:
        return drive(opts)
    except BenchmarkError as exc:
        print(f"benchmark.py: error: {exc}", file=sys.stderr)
        return 2
    except RuntimeError as exc:
        print(f"benchmark.py: error: {exc}", file=sys.stderr)
        return 1


def drive(opts) -> int:
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
    load_before = _loadavg()
    if load_before is not None and load_before > 0.5 * (os.cpu_count() or 1):
        print(f"warning: the machine is busy (1-minute load average {load_before:.1f} on "
              f"{os.cpu_count()} cores): timings will be noisy; compare ratios from one "
              f"run and consider more --repeats", file=sys.stderr)
    print(f"device {settings['device']} ({dev}), dtype {settings['dtype']}, threads "
          f"{settings['threads']}, torch {torch.__version__}; vocab {settings['vocab']}, "
          f"batch {settings['batch_tokens']} tokens, {settings['warmup']} warmup + "
          f"{settings['steps']} timed steps, {settings['repeats']} repeats; decoding: "
          + (f"beam {settings['beam']}, {settings['decode_batch']} sentences, length "
             f"{settings['max_len'] or 'seq len'}" if settings["decode"] else "off"),
          flush=True)

    runs: Dict[Tuple[str, int], List[dict]] = {(s.label, L): [] for s in specs for L in seq_lens}
    t_start = time.perf_counter()
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

    settings["loadavg_before"], settings["loadavg_after"] = load_before, _loadavg()
    records = summarise(specs, seq_lens, runs, settings, baselines)
    print()
    print_models(specs, runs, seq_lens[0])
    print()
    print_table(records, settings)
    load = "" if load_before is None else (
        f" (1-minute load average {load_before:.1f} before, {settings['loadavg_after']:.1f} after)")
    print(f"total {time.perf_counter() - t_start:.1f} s{load}")
    if opts.json:
        parent = os.path.dirname(os.path.abspath(opts.json))
        os.makedirs(parent, exist_ok=True)
        with open(opts.json, "w") as f:
            json.dump(records, f, indent=2)
            f.write("\n")
        print(f"wrote {opts.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
