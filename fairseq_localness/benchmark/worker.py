"""One measurement (one architecture at one length) in its own process: training and decoding speed, peak memory.

Run as ``python -m fairseq_localness.benchmark.worker JOB.json`` by the driver (:mod:`.cli`).
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import sys
import time
from typing import Dict

from .specs import BenchmarkError, Spec, _quiet_fairseq, fairseq_args, make_dictionary, model_size

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


if __name__ == "__main__":
    sys.exit(worker_main(sys.argv[1]))
