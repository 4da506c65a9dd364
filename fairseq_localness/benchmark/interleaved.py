"""Speed ratios that hold on a busy machine: every model in one process, measured round by round.

The subprocess mode (:mod:`.cli`) gives each model a fresh process, which is
what peak memory needs, but its speed figures are separated by minutes: on a
shared machine the load changes in between and ratios swing by 2x. Here all
models are built once in one process; each *round* times one training step
(forward + backward + Adam) and one beam-search call of every model, in an
order rotated from round to round, so a model and its reference are measured
seconds apart. Each round gives one ratio per model (reference time / model
time, i.e. throughput ratio); the median over rounds is the figure, the
interquartile range and min-max its spread. Peak memory is not measured here
(models share one allocator: memory freed by one is reused by the next); the
subprocess mode measures it. ``profile`` prints the top operators per model
(torch.profiler, one step of each kind).
"""

from __future__ import annotations

import contextlib
import re
import statistics
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional

from .specs import Spec, fairseq_args, make_dictionary
from .worker import _warm_up_runtime


@dataclass
class Contender:
    """One model ready to be timed: its training step and decoding call."""

    spec: Spec
    train_step: Callable[[], None]
    decode: Optional[Callable[[], int]]
    params: int
    train_tokens: int
    times: Dict[str, List[float]] = field(default_factory=lambda: {"train": [], "decode": []})
    #: floating-point operations of one call per kind (``count_flops``), when counted
    flops: Dict[str, int] = field(default_factory=dict)
    #: the decoding call's count split over the model's parts (``FLOP_PARTS``), when counted
    flops_by_part: Dict[str, Dict[str, int]] = field(default_factory=dict)
    #: the model itself, for counting FLOPs per part
    model: Optional[object] = None


def random_batches(dictionary, settings: dict, seq_len: int, device):
    """(training sample, decoding sample): identical random tokens for every model (own seeded generator)."""
    import torch

    gen = torch.Generator().manual_seed(settings["seed"] * 1000003 + seq_len)
    bsz = max(settings["batch_tokens"] // seq_len, 1)
    lo, hi, eos = dictionary.nspecial, len(dictionary), dictionary.eos()
    src = torch.randint(lo, hi, (bsz, seq_len), generator=gen)
    tgt = torch.randint(lo, hi, (bsz, seq_len), generator=gen)
    src[:, -1] = tgt[:, -1] = eos
    prev = torch.cat([torch.full((bsz, 1), eos, dtype=tgt.dtype), tgt[:, :-1]], dim=1)
    lengths = torch.full((bsz,), seq_len, dtype=torch.long)
    train = {
        "id": torch.arange(bsz).to(device), "nsentences": bsz, "ntokens": bsz * seq_len, "target": tgt.to(device),
        "net_input": {"src_tokens": src.to(device), "src_lengths": lengths.to(device), "prev_output_tokens": prev.to(device)},
    }
    dsrc = torch.randint(lo, hi, (settings["decode_batch"], seq_len), generator=gen)
    dsrc[:, -1] = eos
    decode = {"net_input": {"src_tokens": dsrc.to(device),
                            "src_lengths": torch.full((dsrc.size(0),), seq_len, dtype=torch.long).to(device)}}
    return train, decode


def build_contender(spec: Spec, settings: dict, seq_len: int, device) -> Contender:
    import torch
    from fairseq import search
    from fairseq.sequence_generator import SequenceGenerator
    from fairseq.tasks.translation import TranslationTask

    _args, cfg = fairseq_args(spec, settings)
    dictionary = make_dictionary(settings["vocab"])
    task = TranslationTask(cfg.task, dictionary, dictionary)
    torch.manual_seed(settings["seed"])
    model = task.build_model(cfg.model).to(device)
    criterion = task.build_criterion(cfg.criterion).to(device)
    train_sample, decode_sample = random_batches(dictionary, settings, seq_len, device)
    optimizer = torch.optim.Adam(model.parameters(), lr=settings["lr"], betas=(0.9, 0.98), eps=1e-8)

    def train_step() -> None:
        model.train()
        optimizer.zero_grad(set_to_none=True)
        loss, _size, _log = criterion(model, train_sample)
        loss.backward()
        optimizer.step()

    for _ in range(max(settings["warmup"], 1)):
        train_step()
    optimizer.zero_grad(set_to_none=True)

    decode: Optional[Callable[[], int]] = None
    if settings["decode"]:
        length = settings["max_len"] or seq_len
        # min_len = max length: EOS is forbidden until the end, so every model generates the same tokens
        generator = SequenceGenerator([model], dictionary, beam_size=settings["beam"], max_len_a=0, max_len_b=length,
                                      min_len=length, search_strategy=search.BeamSearch(dictionary))

        def beam_search() -> int:
            model.eval()
            with torch.no_grad():
                hypos = generator.generate([model], decode_sample)
            return sum(h[0]["tokens"].numel() for h in hypos)

        decode = beam_search

    tokens = train_sample["ntokens"]
    return Contender(spec, train_step, decode, sum(p.numel() for p in model.parameters()), tokens, model=model)


def rotated(items: List, offset: int) -> List:
    offset %= max(len(items), 1)
    return items[offset:] + items[:offset]


#: --clock: wall time, or the CPU time this process used (all its threads), which does not count the time
#: a busy machine makes the process wait for a core
CLOCKS: Dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}


def run_rounds(contenders: List[Contender], rounds: int, sync: Callable[[], None] = lambda: None,
               clock: Callable[[], float] = time.perf_counter) -> None:
    """Time one training step and one decoding call of every contender per round, order rotated each round."""
    for number in range(rounds):
        for contender in rotated(contenders, number):
            for kind, call in (("train", contender.train_step), ("decode", contender.decode)):
                if call is None:
                    continue
                sync()
                start = clock()
                call()
                sync()
                contender.times[kind].append(clock() - start)


#: the parts of an encoder-decoder a decoding call's FLOPs are split over (``count_flops``), each a pattern
#: over the model's module names (``named_modules``); everything else is ``other``
FLOP_PARTS = (
    ("encoder self-attention", r"encoder\.layers\.\d+\.self_attn"),
    ("decoder self-attention", r"decoder\.layers\.\d+\.self_attn"),
    ("cross-attention", r"decoder\.layers\.\d+\.encoder_attn"),
    ("feed-forward", r"(en|de)coder\.layers\.\d+\.fc[12]"),
    ("output projection", r"decoder\.output_projection"),
)
OTHER_PART = "other"


def part_of(module_name: str) -> Optional[str]:
    """The FLOP_PARTS part a module (by its ``named_modules`` name) belongs to, or None."""
    for part, pattern in FLOP_PARTS:
        if re.fullmatch(pattern, module_name):
            return part
    return None


@contextlib.contextmanager
def counting_parts(model, counter, parts: Dict[str, int]):
    """While open, add to ``parts`` the FLOPs ``counter`` (an open ``FlopCounterMode``) counts inside each part.

    Forward hooks read the counter's running total when a part's module starts and ends. torch's own
    per-module counts cannot serve: fairseq's generator calls the encoder and decoder outside
    ``Module.__call__``, so torch names the layers by class and every layer of a stack gets one name.
    Only forward calls are seen, which is all of a decoding call.
    """
    handles, started = [], {}

    def enter(module, _inputs):
        started[module] = counter.get_total_flops()

    def leave(part):
        def hook(module, _inputs, _output):
            parts[part] += counter.get_total_flops() - started.pop(module)
        return hook

    for name, module in model.named_modules():
        part = part_of(name)
        if part is not None:
            handles += [module.register_forward_pre_hook(enter), module.register_forward_hook(leave(part))]
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def count_flops(contenders: List[Contender]) -> None:
    """Count the floating-point operations of one training step and one decoding call of every contender.

    torch's ``FlopCounterMode`` counts matrix products (2 x M x N x K for an (M x K) @ (K x N) product), the
    arithmetic that bounds a CPU step; element-wise work is not counted, and neither, on a CPU, is
    ``scaled_dot_product_attention`` without attention dropout (torch 2.13 has a formula for its CUDA kernels only;
    with dropout its math fallback is counted), so the score products of such an attention are missing from the
    count, the baseline's and a method's alike.
    Deterministic, so the ratio is the speed a model could at best reach against its reference where
    matrix products dominate. A decoding call's count is also split over the model's parts
    (``FLOP_PARTS``; the parts add up to the total).
    """
    from torch.utils.flop_counter import FlopCounterMode

    for contender in contenders:
        for kind, call in (("train", contender.train_step), ("decode", contender.decode)):
            if call is None:
                continue
            parts = {part: 0 for part, _pattern in FLOP_PARTS}
            split = kind == "decode" and contender.model is not None
            with FlopCounterMode(display=False) as counter:
                with counting_parts(contender.model, counter, parts) if split else contextlib.nullcontext():
                    call()
            contender.flops[kind] = counter.get_total_flops()
            if split:
                parts[OTHER_PART] = contender.flops[kind] - sum(parts.values())
                contender.flops_by_part[kind] = parts


def ratio_summary(times: List[float], reference: List[float]) -> Dict[str, float]:
    """Median and spread of per-round throughput ratios (reference time / own time, same round)."""
    ratios = sorted(ref / own for own, ref in zip(times, reference))
    if not ratios:
        return {}
    quartiles = statistics.quantiles(ratios, n=4, method="inclusive") if len(ratios) > 1 else [ratios[0]] * 3
    return {"median": statistics.median(ratios), "q1": quartiles[0], "q3": quartiles[2],
            "min": ratios[0], "max": ratios[-1], "rounds": len(ratios)}


def summarise_rounds(contenders: List[Contender], seq_len: int) -> List[dict]:
    by_label = {c.spec.label: c for c in contenders}
    records = []
    for contender in contenders:
        reference = by_label[contender.spec.baseline or contender.spec.label]
        record = {"arch": contender.spec.label, "baseline": reference.spec.label, "seq_len": seq_len,
                  "params": contender.params}
        for kind in ("train", "decode"):
            times = contender.times[kind]
            if not times:
                continue
            record[f"{kind}_seconds_median"] = statistics.median(times)
            record[f"{kind}_ratio"] = ratio_summary(times, reference.times[kind])
        for kind, flops in contender.flops.items():
            record[f"{kind}_flops"] = flops
            record[f"{kind}_flops_ratio"] = reference.flops[kind] / flops if flops else None
        for kind, parts in contender.flops_by_part.items():
            record[f"{kind}_flops_by_part"] = parts
        records.append(record)
    return records


def format_rounds(records: List[dict]) -> str:
    """A markdown table: median ratio [interquartile range, min-max] per kind."""
    def cell(summary: Optional[dict]) -> str:
        if not summary:
            return "-"
        return (f"{summary['median']:.2f} [{summary['q1']:.2f}-{summary['q3']:.2f}, "
                f"{summary['min']:.2f}-{summary['max']:.2f}]")

    counted = any("train_flops_ratio" in r or "decode_flops_ratio" in r for r in records)
    header = "| arch | seq len | train ratio [IQR, min-max] | decode ratio [IQR, min-max] |"
    lines = [header + (" train FLOP ratio | decode FLOP ratio |" if counted else ""),
             "| --- | --- | --- | --- |" + (" --- | --- |" if counted else "")]
    for r in records:
        line = f"| {r['arch']} | {r['seq_len']} | {cell(r.get('train_ratio'))} | {cell(r.get('decode_ratio'))} |"
        if counted:
            line += "".join(f" {r[key]:.3f} |" if r.get(key) is not None else " - |"
                            for key in ("train_flops_ratio", "decode_flops_ratio"))
        lines.append(line)
    return "\n".join(lines)


def profile_contenders(contenders: List[Contender], top: int, on_gpu: bool = False,
                       sync: Callable[[], None] = lambda: None) -> str:
    """The ``top`` operators of one training step and one decoding call, per model: by self CPU time, or on a
    GPU by self GPU time (the host's time there is mostly kernel launches, not the work)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if on_gpu else [])
    sort_by = "self_device_time_total" if on_gpu else "self_cpu_time_total"
    blocks = []
    for contender in contenders:
        for kind, call in (("train", contender.train_step), ("decode", contender.decode)):
            if call is None:
                continue
            with profile(activities=activities) as prof:
                call()
                sync()  # the GPU's kernels finish inside the profiled region
            table = prof.key_averages().table(sort_by=sort_by, row_limit=top)
            blocks.append(f"== {contender.spec.label}: {kind} ==\n{table}")
    return "\n".join(blocks)


def run_interleaved(specs: List[Spec], seq_lens: List[int], settings: dict, rounds: int,
                    profile_top: int = 0, log: Callable[[str], None] = print, clock: str = "wall",
                    flops: bool = False) -> List[dict]:
    """Build every model per length in this process, run ``rounds`` interleaved rounds; records per model."""
    import torch

    device = torch.device("cuda", torch.cuda.current_device()) if settings["device"] == "cuda" else torch.device("cpu")
    if clock not in CLOCKS:
        raise ValueError(f"--clock must be one of {', '.join(CLOCKS)}, got {clock!r}")
    if clock == "cpu" and device.type == "cuda":
        raise ValueError("--clock cpu times the host's CPU work only, not the GPU's: use --clock wall on CUDA")
    torch.set_num_threads(settings["threads"])
    _warm_up_runtime(device)

    def sync() -> None:
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    autocast = contextlib.nullcontext()
    if settings["dtype"] != "fp32":
        dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[settings["dtype"]]
        autocast = torch.autocast(device_type=device.type, dtype=dtype)
    records: List[dict] = []
    for seq_len in seq_lens:
        contenders = []
        for spec in specs:
            log(f"building {spec.label} (seq len {seq_len})")
            with autocast:
                contenders.append(build_contender(spec, settings, seq_len, device))
        with autocast:
            run_rounds(contenders, rounds, sync, CLOCKS[clock])
            if flops:
                count_flops(contenders)
            if profile_top > 0:
                log(profile_contenders(contenders, profile_top, on_gpu=device.type == "cuda", sync=sync))
        records.extend(summarise_rounds(contenders, seq_len))
        del contenders
    return records
