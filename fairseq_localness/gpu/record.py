"""Result files of a GPU run, in the docs' format (:mod:`fairseq_localness.experiments.doc_tables`).

    python -m fairseq_localness.gpu.record tests LOG [LOG ...] --out docs/results/gpu/NAME.json --machine ... \\
        --torch ... --command ... [--note ...]
    python -m fairseq_localness.gpu.record train SUITE_JSON|SUITE_FOLDER --out ... (same metadata)
    python -m fairseq_localness.gpu.record curve TRAIN_LOG --arch ARCH --out ... (same metadata)
    python -m fairseq_localness.gpu.record backends BENCHMARK_LOG --out ... (same metadata)

``tests`` reads pytest's ``-v`` output (also cut short: a test that started but never reported is
``not finished``) and keeps one record per test id; ``train`` keeps the ``train`` stage of a
``gpu_suite.json``, each failed run with its error's last line (the cause, not the command that failed), or,
where the suite was stopped before writing it, the runs whose logs in the suite's folder say they finished;
``curve`` keeps the validation loss per epoch of a fairseq training log (with its median training words per
second) or of the comparison command's progress log; ``backends`` keeps the per-measurement lines that the
benchmark's subprocess mode prints as it goes (so a run stopped by a time limit keeps what it measured), with
each model's ratios to the baseline measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from ..experiments.runlog import validation_points
from ..provenance import result_file_problem, write_atomically
from .suite import UPDATES, SuiteFailure, check_training, error_cause

#: "[gw3] [ 41%] PASSED tests/test_gpu.py::test_x[param] " (xdist) or "tests/test_gpu.py::test_x[param] PASSED [ 41%]"
_XDIST = re.compile(r"(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS) (tests/[\w/]+\.py::[^\s]+)")
_PLAIN = re.compile(r"^(tests/[\w/]+\.py::[^\s]+) (PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")
#: a test id that pytest -v announced (the id alone on a line, or before its outcome)
_STARTED = re.compile(r"^(tests/[\w/]+\.py::[^\s]+)")


def pytest_outcomes(text: str) -> Dict[str, str]:
    """test id -> passed / failed / error / skipped / not finished, from ``pytest -v`` output."""
    outcomes: Dict[str, str] = {}
    for line in text.splitlines():
        for outcome, test in _XDIST.findall(line):
            outcomes[test] = outcome.lower()
        plain = _PLAIN.match(line)
        if plain:
            outcomes[plain.group(1)] = plain.group(2).lower()
        started = _STARTED.match(line)
        if started and started.group(1) not in outcomes:
            outcomes[started.group(1)] = "not finished"
    return outcomes


def outcome_records(logs: Sequence[Path]) -> List[dict]:
    """One record per test id over ``logs`` (a later log's outcome replaces an earlier one's)."""
    outcomes: Dict[str, str] = {}
    for log in logs:
        for test, outcome in pytest_outcomes(log.read_text(encoding="utf-8", errors="replace")).items():
            if outcome != "not finished" or test not in outcomes:
                outcomes[test] = outcome
    records = []
    for test, outcome in sorted(outcomes.items()):
        function, _, params = test.partition("[")
        records.append({"test": function, "params": params.rstrip("]"), "outcome": outcome})
    return records


#: the suite's log of one training run: train_{arch}_{dtype}.log
_TRAIN_LOG = re.compile(r"^train_(\w+)_(fp16|bf16|fp32)\.log$")
#: fairseq-train's last line of a run that finished
_DONE = re.compile(r"done training in [\d.]+ seconds")


def finished_train_records(folder: Path) -> List[dict]:
    """The suite's ``train`` stage from its run logs, where it was stopped before writing gpu_suite.json: the
    runs whose log says fairseq finished, checked as the suite checks them."""
    records = []
    for log in sorted(folder.iterdir()):
        name = _TRAIN_LOG.match(log.name)
        text = log.read_text(encoding="utf-8", errors="replace") if name else ""
        if not _DONE.search(text):
            continue  # not started, or stopped by the time limit: not a result
        arch, dtype = name.groups()
        updates = max([int(u) for u in UPDATES.findall(text)] or [0])
        try:
            result = check_training(text, f"{arch} {dtype}", updates)
        except SuiteFailure as err:
            records.append({"arch": arch, "dtype": dtype, "error": str(err)})
            continue
        records.append({"arch": arch, "dtype": dtype, **result})
    return records


def train_records(suite_json: Path) -> List[dict]:
    """The suite's ``train`` stage, one record per (architecture, dtype)."""
    if suite_json.is_dir():
        return finished_train_records(suite_json)
    report = json.loads(suite_json.read_text(encoding="utf-8"))
    records = []
    for label, result in report.get("train", {}).items():
        arch, _, dtype = label.rpartition(" ")
        record = {"arch": arch, "dtype": dtype}
        if "error" in result:
            log = suite_json.parent / f"train_{arch}_{dtype}.log"  # the run's whole log, where the suite left it
            record["error"] = error_cause(log.read_text(encoding="utf-8", errors="replace") if log.is_file()
                                          else result["error"])
        else:
            record.update({key: result.get(key) for key in ("first_loss", "last_loss", "updates", "overflows")})
        records.append(record)
    return records


def _upper_median(values: Sequence[Optional[float]]) -> Optional[float]:
    """The middle value of the known ones (the upper of the two middle ones for an even count), None for none."""
    known = sorted(v for v in values if v is not None)
    return known[len(known) // 2] if known else None


#: fairseq's training-progress line's speed
_WPS = re.compile(r"train_inner.*? wps=([\d.]+)")


#: the comparison command's progress line at the end of an epoch
_COMPARE_EPOCH = re.compile(r"epoch (\d+) done, update (\d+), valid loss ([\d.]+)")


def curve_records(log: Path) -> dict:
    """Validation loss per epoch of a fairseq training log, and the median of its logged training wps; or of the
    comparison command's progress log (one run), which logs no words per second."""
    text = log.read_text(encoding="utf-8", errors="replace")
    points = [{"epoch": e, "updates": u, "valid_loss": loss} for e, u, loss in validation_points(log)]
    if not points:
        points = [{"epoch": int(e), "updates": int(u), "valid_loss": float(loss)}
                  for e, u, loss in _COMPARE_EPOCH.findall(text)]
    return {"records": points, "train_wps_median": _upper_median([float(w) for w in _WPS.findall(text)])}


#: the benchmark's subprocess mode, one line per measurement (", decode ... tok/s" unless --no-decode):
#: "[1/1] L=1024 transformer_dman@locality_attention_backend=flex: train 6,463 tok/s, peak 5,027 MB (67.5 s)"
_MEASUREMENT = re.compile(r"^\[\d+/\d+\] L=(\d+) (\S+): train ([\d,.]+|-) tok/s, peak ([\d,.]+|-) MB"
                          r"(?:, decode ([\d,.]+|-) tok/s)?", re.M)


def _number(text: str) -> Optional[float]:
    return None if text == "-" else float(text.replace(",", ""))


def backend_records(log: Path, baseline: str) -> List[dict]:
    """One record per measured model and length (the median over repeats), with its ratios to ``baseline``;
    decoding figures where the benchmark decoded."""
    measured: Dict[tuple, List[tuple]] = {}
    for seq_len, spec, *figures in _MEASUREMENT.findall(log.read_text(encoding="utf-8", errors="replace")):
        measured.setdefault((spec, int(seq_len)), []).append(tuple(_number(f) if f else None for f in figures))
    # per key: the median training speed, peak memory and decoding speed, and the number of repeats
    rows = {key: tuple(_upper_median([v[i] for v in values]) for i in range(3)) + (len(values),)
            for key, values in measured.items()}

    def ratio(value, base):
        return round(value / base, 3) if value and base else None

    if not rows:  # e.g. the profile group's log: one interleaved round prints a table, not these lines
        raise SystemExit(f"{log}: no measurement line of the benchmark's subprocess mode ('[i/n] L=LEN ARCH: train "
                         "... tok/s, peak ... MB'); an interleaved or --profile run prints tables, read them there")
    records = []
    for (spec, seq_len), (speed, memory, decode, repeats) in rows.items():
        arch, _, options = spec.partition("@")
        base_speed, base_memory, base_decode, _ = rows.get((baseline, seq_len), (None, None, None, 0))
        record = {
            "arch": arch, "options": options, "seq_len": seq_len, "repeats": repeats,
            "train_tokens_per_s": speed, "peak_mem_mb": memory,
            "train_ratio": ratio(speed, base_speed), "memory_ratio": ratio(memory, base_memory),
        }
        if decode is not None:  # the median of the known decoding speeds: None where none was printed
            record.update(decode_tokens_per_s=decode, decode_ratio=ratio(decode, base_decode))
        records.append(record)
    if not any(r["arch"] == baseline for r in records):
        raise SystemExit(f"{log}: no measurement of the baseline {baseline!r}: ratios need it (--baseline)")
    return records


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fairseq_localness.gpu.record", description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=("tests", "train", "curve", "backends"))
    parser.add_argument("inputs", nargs="+", type=Path,
                        help="pytest -v logs (tests), one gpu_suite.json or the suite's --out folder (train), one "
                             "training or comparison log (curve), one benchmark log (backends)")
    parser.add_argument("--out", type=Path, required=True, help="the result file to write (refused where it exists)")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    parser.add_argument("--machine", required=True, help="the GPU, e.g. 'NVIDIA H200 (CUDA 13.0)'")
    parser.add_argument("--torch", required=True)
    parser.add_argument("--command", required=True, help="the command(s) that produced the inputs")
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d", time.gmtime()))
    parser.add_argument("--note", default="")
    parser.add_argument("--arch", default="transformer",
                        help="curve: the architecture trained (its CPU run is shown beside it)")
    parser.add_argument("--baseline", default="transformer", help="backends: the model the ratios divide by")
    opts = parser.parse_args(argv)
    for path in opts.inputs:
        if not (path.is_file() or (opts.kind == "train" and path.is_dir())):
            parser.error(f"{path}: no such file")
    if opts.kind != "tests" and len(opts.inputs) != 1:
        parser.error(f"{opts.kind}: give one file")
    problem = result_file_problem(str(opts.out), "--out", opts.overwrite)
    if problem:
        parser.error(problem)
    extra: dict = {}
    if opts.kind == "tests":
        records = outcome_records(opts.inputs)
    elif opts.kind == "train":
        try:
            records = train_records(opts.inputs[0])
        except json.JSONDecodeError as err:
            parser.error(f"{opts.inputs[0]}: not a gpu_suite.json ({err}); give the suite's file or its --out folder")
    elif opts.kind == "backends":
        records = backend_records(opts.inputs[0], opts.baseline)
        extra = {"baseline": opts.baseline}
    else:
        extra = curve_records(opts.inputs[0])
        extra["arch"] = opts.arch
        records = extra.pop("records")
    source = {"tests": "pytest -v outcomes",
              "train": "the finished runs' logs of the suite's train stage" if opts.inputs[0].is_dir()
              else "the train stage of gpu_suite.json",
              "curve": "a training log", "backends": "the benchmark's per-measurement lines"}[opts.kind]
    source += f", read by `python -m fairseq_localness.gpu.record {opts.kind}`"
    if not records:  # nothing of the expected kind in the file: a result file of 0 records would say nothing
        parser.error(f"{', '.join(map(str, opts.inputs))}: no {opts.kind} results in it (it should hold "
                     f"{source.split(',')[0]}); nothing was written")
    run = {"date": opts.date, "machine": opts.machine, "torch": opts.torch, "command": opts.command,
           "source": source, **extra, "records": records}
    if opts.note:
        run["note"] = opts.note
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(opts.out, json.dumps(run, indent=2) + "\n")
    print(f"wrote {opts.out} ({len(records)} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
