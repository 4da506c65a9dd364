"""Probe a translation checkpoint's frozen encoder on SentEval-format tasks (Xu et al. 2019, Tables 3-4).

For each task file: encode its tr/va/te sentences with :func:`.encode.encode_sentences`, fit the
classifier of :mod:`.classifier` on tr with the grid searched on va, and report the accuracy on te.
Results go to stdout (per task, then the averages of Conneau et al.'s three groups as Xu et al.'s
Table 3 reports them) and, with an output directory, to ``results.json`` and one
``<task>.predictions.tsv`` per task (``gold<TAB>predicted<TAB>sentence`` for every te line).
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import asdict
from typing import Dict, List, Optional, Sequence

import torch

from localness_prep.checks import CheckError
from localness_prep.senteval import GROUPS, SPLITS, TASKS, ProbingTask, check_task, read_task, task_name

from ..provenance import write_atomically
from .classifier import ClassifierConfig, ProbeResult, probe_features
from .encode import FrozenEncoder, Preprocessing, ProbingError, encode_sentences


def find_task_files(paths: Sequence[str]) -> List[str]:
    """Task files from files and directories (a directory: its SentEval task files, in Xu's Table 4 order,
    then any other *.txt)."""
    files: List[str] = []
    for path in paths:
        if os.path.isdir(path):
            names = sorted(n for n in os.listdir(path) if n.endswith(".txt"))
            known = [f"{t}.txt" for t in TASKS if f"{t}.txt" in names]
            found = known + [n for n in names if n not in known]
            if not found:
                raise ProbingError(f"--tasks {path}: no *.txt task files in this directory")
            files.extend(os.path.join(path, n) for n in found)
        elif os.path.isfile(path):
            files.append(path)
        else:
            raise ProbingError(f"--tasks {path}: no such file or directory")
    names = [task_name(f) for f in files]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ProbingError(f"--tasks: task name(s) {', '.join(duplicates)} given twice")
    return files


def load_tasks(files: Sequence[str], limit: Optional[int] = None) -> List[ProbingTask]:
    """Read and check every file before any encoding starts (a bad line costs no encoder time);
    ``limit`` keeps the first N lines of every partition (a quick look)."""
    tasks = []
    for path in files:
        try:
            task = read_task(path)
        except CheckError as exc:
            raise ProbingError(str(exc)) from None
        if limit:
            task.splits = {s: rows[:limit] for s, rows in task.splits.items()}
            try:
                check_task(task)
            except CheckError as exc:
                raise ProbingError(f"{exc} (after --limit {limit})") from None
        tasks.append(task)
    return tasks


def probe_task(frozen: FrozenEncoder, task: ProbingTask, preprocess, cfg: ClassifierConfig,
               batch_size: int = 128) -> ProbeResult:
    labels = task.labels()
    index = {label: k for k, label in enumerate(labels)}
    x: Dict[str, torch.Tensor] = {}
    y: Dict[str, torch.Tensor] = {}
    for split in SPLITS:
        rows = task.splits[split]
        x[split] = encode_sentences(frozen, [s for _, s in rows], preprocess, batch_size,
                                    where=f"{task.path} ({split}):").to(frozen.device)
        y[split] = torch.tensor([index[label] for label, _ in rows], dtype=torch.long, device=frozen.device)
    return probe_features(task.name, labels, x, y, cfg)


def group_averages(results: Sequence[ProbeResult]) -> Dict[str, float]:
    """Mean test accuracy of each of Conneau et al.'s groups whose every task was probed (Xu et al. Table 3)."""
    by_name = {r.task: r.test_accuracy for r in results}
    return {group: sum(by_name[t] for t in tasks) / len(tasks)
            for group, tasks in GROUPS.items() if all(t in by_name for t in tasks)}


def format_table(results: Sequence[ProbeResult], counts: Dict[str, Dict[str, int]]) -> str:
    lines = [f"{'task':<24}{'paper name':<16}{'accuracy':>9}{'%':>8}{'dev %':>8}{'test n':>8}  best (nhid, dropout, L2)"]
    for r in results:
        paper = "/".join(TASKS[r.task]) if r.task in TASKS else "-"
        lines.append(f"{r.task:<24}{paper:<16}{r.test_accuracy:>9.4f}{100 * r.test_accuracy:>8.2f}"
                     f"{100 * r.dev_accuracy:>8.2f}{counts[r.task]['te']:>8}  ({r.hidden}, {r.dropout}, {r.l2:g})")
    for group, value in group_averages(results).items():
        lines.append(f"{'average ' + group:<40}{value:>9.4f}{100 * value:>8.2f}")
    return "\n".join(lines)


def write_outputs(out_dir: str, results: Sequence[ProbeResult], tasks: Sequence[ProbingTask], meta: dict) -> None:
    os.makedirs(out_dir, exist_ok=True)
    for result, task in zip(results, tasks):
        with open(os.path.join(out_dir, f"{task.name}.predictions.tsv"), "w", encoding="utf-8", newline="\n") as f:
            for (gold, sentence), predicted in zip(task.splits["te"], result.predictions):
                f.write(f"{gold}\t{predicted}\t{sentence}\n")
    summary = {
        **meta,
        "tasks": {r.task: {k: v for k, v in asdict(r).items() if k not in ("task", "predictions")} | {
            "counts": t.counts(), "predictions": f"{t.name}.predictions.tsv"} for r, t in zip(results, tasks)},
        "group_averages": group_averages(results),
    }
    write_atomically(os.path.join(out_dir, "results.json"), json.dumps(summary, indent=1))


def run_probing(frozen: FrozenEncoder, tasks: Sequence[ProbingTask], prep: Preprocessing, cfg: ClassifierConfig,
                out_dir: Optional[str] = None, batch_size: int = 128, log=sys.stderr) -> List[ProbeResult]:
    preprocess = prep.build()
    results = []
    for task in tasks:
        start = time.time()
        result = probe_task(frozen, task, preprocess, cfg, batch_size)
        results.append(result)
        print(f"[probe] {task.name}: test accuracy {result.test_accuracy:.4f} (dev {result.dev_accuracy:.4f}, "
              f"{len(cfg.grid())} grid point(s), {time.time() - start:.1f}s)", file=log, flush=True)
    if out_dir:
        meta = {"checkpoint": os.path.abspath(frozen.path), "preprocessing": asdict(prep),
                "classifier": asdict(cfg), "pooling": "mean of the top encoder layer over real positions (incl. EOS)"}
        write_outputs(out_dir, results, tasks, meta)
    return results
