"""Result files of a GPU run, in the docs' format (:mod:`fairseq_localness.experiments.doc_tables`).

    python -m fairseq_localness.gpu.record tests LOG [LOG ...] --out docs/results/gpu/NAME.json --machine ... \\
        --torch ... --command ... [--note ...]
    python -m fairseq_localness.gpu.record train SUITE_JSON --out ... (same metadata)
    python -m fairseq_localness.gpu.record curve HYDRA_TRAIN_LOG --out ... (same metadata)

``tests`` reads pytest's ``-v`` output (also cut short: a test that started but never reported is
``not finished``) and keeps one record per test id; ``train`` keeps the ``train`` stage of a
``gpu_suite.json``, each failed run with its error's last line (the cause, not the command that failed);
``curve`` keeps a training log's validation loss per epoch and its median training words per second.
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


def error_cause(message: str) -> str:
    """The last exception line of a failed run's message (the suite keeps the tail of its log there)."""
    lines = [line.strip() for line in message.splitlines() if line.strip()]
    causes = [line for line in lines if re.match(r"^[\w.]*(Error|Exception)\b", line)]
    return (causes[-1] if causes else lines[-1] if lines else "")[:300]


def train_records(suite_json: Path) -> List[dict]:
    """The suite's ``train`` stage, one record per (architecture, dtype)."""
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


#: fairseq's training-progress line's speed
_WPS = re.compile(r"train_inner.*? wps=([\d.]+)")


def curve_records(log: Path) -> dict:
    """Validation loss per epoch of a fairseq training log, and the median of its logged training wps."""
    points = [{"epoch": e, "updates": u, "valid_loss": loss} for e, u, loss in validation_points(log)]
    speeds = sorted(float(w) for w in _WPS.findall(log.read_text(encoding="utf-8", errors="replace")))
    return {"records": points, "train_wps_median": speeds[len(speeds) // 2] if speeds else None}


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fairseq_localness.gpu.record", description=__doc__.split("\n")[0])
    parser.add_argument("kind", choices=("tests", "train", "curve"))
    parser.add_argument("inputs", nargs="+", type=Path,
                        help="pytest -v logs (tests), one gpu_suite.json (train) or one training log (curve)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--machine", required=True, help="the GPU, e.g. 'NVIDIA H200 (CUDA 13.0)'")
    parser.add_argument("--torch", required=True)
    parser.add_argument("--command", required=True, help="the command(s) that produced the inputs")
    parser.add_argument("--date", default=time.strftime("%Y-%m-%d", time.gmtime()))
    parser.add_argument("--note", default="")
    opts = parser.parse_args(argv)
    for path in opts.inputs:
        if not path.is_file():
            parser.error(f"{path}: no such file")
    if opts.kind != "tests" and len(opts.inputs) != 1:
        parser.error(f"{opts.kind}: give one file")
    extra: dict = {}
    if opts.kind == "tests":
        records = outcome_records(opts.inputs)
    elif opts.kind == "train":
        records = train_records(opts.inputs[0])
    else:
        extra = curve_records(opts.inputs[0])
        records = extra.pop("records")
    source = {"tests": "pytest -v outcomes", "train": "the train stage of gpu_suite.json",
              "curve": "a fairseq training log"}[opts.kind] + f", read by `python -m fairseq_localness.gpu.record {opts.kind}`"
    run = {"date": opts.date, "machine": opts.machine, "torch": opts.torch, "command": opts.command,
           "source": source, **extra, "records": records}
    if opts.note:
        run["note"] = opts.note
    opts.out.parent.mkdir(parents=True, exist_ok=True)
    opts.out.write_text(json.dumps(run, indent=2) + "\n", encoding="utf-8")
    print(f"wrote {opts.out} ({len(records)} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
