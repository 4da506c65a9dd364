"""Train and evaluate every row of a paper's table; write our numbers beside the published ones.

    bash scripts/reproduce.sh PAPER TABLE [--dry-run] [--gpus N] [--work DIR] [--data-root DIR]

Rows, their settings and the published numbers come from ``configs/paper_tables.yaml``.
Each row runs ``scripts/train.sh`` (the paper's benchmark setting and effective batch)
and ``scripts/evaluate.sh`` (the paper's decoding and BLEU) in
``WORK/PAPER/tableT/ROW/``; a row whose ``eval/scores.json`` exists is finished and
not rerun, and an interrupted training resumes from its last checkpoint. Rows whose
method, architecture or flags are not (yet) in the project are listed as missing,
with the reason, and are never silently skipped.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import yaml

from ..paths import CONFIG_DIR, SCRIPTS_DIR, USER_DIR
from .launch import arch_configs, benchmarks
from .runlog import stats

TABLES_FILE = CONFIG_DIR / "paper_tables.yaml"
SCRIPTS = SCRIPTS_DIR


def load_tables(path: Path = TABLES_FILE) -> Dict:
    with open(path) as handle:
        return yaml.safe_load(handle)


@dataclass
class Row:
    paper: str
    table: str
    id: str
    label: str
    benchmark: Optional[str]
    arch: Optional[str]
    overrides: List[str] = field(default_factory=list)
    baseline: Optional[str] = None
    published: Dict[str, Optional[float]] = field(default_factory=dict)

    def flags(self) -> List[str]:
        """The row's model overrides as fairseq command-line flags (model.gaussian_window=layer -> --gaussian-window layer)."""
        out: List[str] = []
        for override in self.overrides:
            key, value = override.split("=", 1)
            out += ["--" + key[len("model."):].replace("_", "-"), value.strip("'\"")]
        return out


def table_rows(tables: Dict, paper: str, table: str) -> List[Row]:
    papers = tables["papers"]
    if paper not in papers:
        raise SystemExit(f"reproduce.sh: unknown paper {paper!r}; choose from {', '.join(papers)}")
    if table not in papers[paper]["tables"]:
        raise SystemExit(f"reproduce.sh: {paper} has no table {table!r}; choose from {', '.join(papers[paper]['tables'])}")
    spec = papers[paper]["tables"][table]
    rows = []
    for row in spec["rows"]:
        benchmark = row["benchmark"] if "benchmark" in row else spec.get("benchmark")
        rows.append(Row(paper=paper, table=table, id=row["id"], label=row["label"], benchmark=benchmark,
                        arch=row.get("arch"), overrides=list(row.get("overrides") or []),
                        baseline=row.get("baseline"), published=dict(row.get("published") or {})))
    return rows


def missing_reason(row: Row) -> Optional[str]:
    """Why a row cannot run in this checkout, or None when fairseq accepts its architecture and flags."""
    if row.arch is None:
        return "method not implemented in this project"
    if row.benchmark is None:
        return "benchmark not prepared by this project's data-prep"
    if row.benchmark not in benchmarks():
        return f"no benchmark config configs/benchmark/{row.benchmark}.yaml"
    if row.arch not in arch_configs():
        return f"no architecture config configs/arch/{row.arch}.yaml"
    for override in row.overrides:
        if not override.startswith("model.") or "=" not in override:
            return f"row override {override!r} is not model.<option>=<value>"
    return parser_error(row.arch, row.flags())


def parser_error(arch: str, flags: Sequence[str]) -> Optional[str]:
    """Parse ``--arch ARCH FLAGS`` with fairseq's training parser (as fairseq-train would), then
    validate the locality placement; return the error or None."""
    import contextlib
    import io

    import fairseq_localness  # noqa: F401  (registers the architectures)
    from fairseq import options
    from fairseq.models import ARCH_MODEL_REGISTRY

    if arch not in ARCH_MODEL_REGISTRY:
        return f"architecture {arch} is not registered (not implemented yet)"
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr):
            parser = options.get_training_parser()
            args = options.parse_args_and_arch(
                parser, ["data-bin", "--task", "translation", "--user-dir", str(USER_DIR), "--arch", arch, *flags]
            )
    except SystemExit:
        message = stderr.getvalue().strip().splitlines()
        return f"fairseq rejects the flags {' '.join(flags)}: {message[-1] if message else 'parse error'}"
    if getattr(args, "locality_methods", None) is not None:
        from fairseq_localness.attention.placement import LocalityPlan
        from fairseq_localness.attention.registry import LocalityConfigError

        try:
            LocalityPlan.from_args(args)
        except LocalityConfigError as err:
            return f"invalid locality options: {err}"
    return None


@dataclass
class RowPlan:
    row: Row
    run_dir: Path
    data_bin: Path
    train: List[str]
    evaluate: List[str]

    @property
    def scores(self) -> Path:
        return self.run_dir / "eval" / "scores.json"


def plan_row(row: Row, tables: Dict, work: Path, data_root: Path, launcher: List[str]) -> RowPlan:
    decoding = tables["decoding"][row.benchmark]
    run_dir = work / row.paper / f"table{row.table}" / row.id
    data_bin = data_root / decoding["data"] / "data-bin"
    train = ["bash", str(SCRIPTS / "train.sh"), row.benchmark, row.arch, "--data", str(data_bin),
             "--save-dir", str(run_dir / "checkpoints"), *launcher, *row.overrides]
    evaluate = ["bash", str(SCRIPTS / "evaluate.sh"), str(run_dir / "checkpoints"), str(data_bin),
                "--beam", str(decoding["beam"]), "--lenpen", str(decoding["lenpen"]),
                "--compound-split" if decoding.get("compound_split") else "--no-compound-split",
                "--out", str(run_dir / "eval")]
    if int(decoding["avg_last"]) > 1:
        evaluate += ["--avg-last", str(decoding["avg_last"]), "--avg-updates"]
    else:
        evaluate += ["--checkpoint", "checkpoint_best.pt"]
    if row.baseline:
        evaluate += ["--baseline-hyp", str(run_dir.parent / row.baseline / "eval")]
    return RowPlan(row, run_dir, data_bin, train, evaluate)


def read_scores(path: Path) -> Dict:
    if not path.exists():
        return {}
    with open(path) as handle:
        return json.load(handle)


def bleu_of(scores: Dict, tokenized: bool = True) -> Optional[float]:
    """Tokenized BLEU (as the papers report it) or sacreBLEU from evaluate.sh's scores.json."""
    entry = scores.get("tokenized_bleu" if tokenized else "sacrebleu") or {}
    return entry.get("score")


def significance_of(scores: Dict, tokenized: bool = True) -> str:
    """The paper's arrow (evaluate.sh's paired bootstrap against the row's baseline)."""
    test = (scores.get("significance") or {}).get("tokenized_bleu" if tokenized else "sacrebleu") or {}
    return f" {test['mark']}" if test.get("mark") else ""


def fmt(value: Optional[float], digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def markdown(tables: Dict, rows: List[Row], plans: Dict[str, RowPlan], missing: Dict[str, str],
             failed: Optional[Dict[str, str]] = None) -> str:
    row0 = rows[0]
    spec = tables["papers"][row0.paper]["tables"][row0.table]
    lines = [
        f"## {row0.paper} Table {row0.table}: {spec['caption']}",
        "",
        tables["papers"][row0.paper]["citation"],
        "",
        f"| Row | Architecture | BLEU (ours) | BLEU (paper) | Params M (ours) | Params M (paper) "
        f"| Train wps (ours) | Speed vs baseline (ours) | Speed (paper: {spec.get('speed_unit', 'n/a')}) | Status |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    ours: Dict[str, Dict] = {}
    for row in rows:
        if row.id in plans:
            plan = plans[row.id]
            run = stats(plan.run_dir / "checkpoints")
            run.update(scores=read_scores(plan.scores))
            ours[row.id] = run
    for row in rows:
        run = ours.get(row.id, {})
        scores = run.get("scores") or {}
        tokenized = bool(tables["decoding"].get(row.benchmark or "", {}).get("tokenized_bleu", True))
        bleu = bleu_of(scores, tokenized)
        params = run.get("params")
        wps = run.get("train_wps")
        base_wps = ours.get(row.baseline or "", {}).get("train_wps")
        ratio = wps / base_wps if wps and base_wps else (1.0 if wps and not row.baseline else None)
        if row.id in missing:
            status = f"missing: {missing[row.id]}"
        elif scores:
            status = "done"
        elif failed and row.id in failed:
            status = f"failed: {failed[row.id]}"
        elif (plans[row.id].run_dir / "checkpoints" / "checkpoint_last.pt").exists():
            status = "training/evaluation incomplete"
        else:
            status = "not run"
        pub = row.published
        lines.append(
            f"| {row.label} | {row.arch or '-'} | {fmt(bleu)}{significance_of(scores, tokenized)} | {fmt(pub.get('bleu'))} "
            f"| {fmt(params / 1e6 if params else None, 1)} | {fmt(pub.get('params'), 0)} | {fmt(wps, 0)} "
            f"| {fmt(ratio)} | {fmt(pub.get('speed'))} | {status} |"
        )
    lines += ["", "BLEU (ours): from scripts/evaluate.sh, tokenized BLEU where the paper reports it (sacreBLEU "
              "otherwise); ↑ / ⇑: better than the row's baseline with p < 0.05 / 0.01 (paired bootstrap). Train wps: target tokens per second during training "
              "(fairseq's wps). n/a: not available."]
    return "\n".join(lines) + "\n"


def run(command: List[str]) -> int:
    print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
    return subprocess.call(command)


def main(argv: Sequence[str]) -> int:
    parser = argparse.ArgumentParser(prog="scripts/reproduce.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("paper", help="yang2018, yang2019, xu2019, nguyen2020 or fan2021")
    parser.add_argument("table", help="table number, e.g. 1")
    parser.add_argument("--dry-run", action="store_true", help="print every command; run nothing")
    parser.add_argument("--gpus", type=int, default=0, help="GPUs per node for training (0: CPU)")
    parser.add_argument("--cpu-procs", type=int, default=1, help="CPU training processes when --gpus is 0")
    parser.add_argument("--max-tokens", type=int, help="tokens per device and step (default: the benchmark's)")
    parser.add_argument("--work", default="runs", help="where runs and results go [runs]")
    parser.add_argument("--data-root", default="runs/data",
                        help="directory holding <dataset>/data-bin, i.e. data-prep/prepare-*.sh --out "
                        "DATA_ROOT/<dataset> [runs/data]")
    parser.add_argument("--rows", help="comma-separated row ids to run (default: all)")
    args = parser.parse_args(argv)

    tables = load_tables()
    rows = table_rows(tables, args.paper, str(args.table))
    if args.rows:
        wanted = set(args.rows.split(","))
        unknown = wanted - {r.id for r in rows}
        if unknown:
            parser.error(f"unknown row id(s): {', '.join(sorted(unknown))}")
        rows = [r for r in rows if r.id in wanted]
    work, data_root = Path(args.work).resolve(), Path(args.data_root).resolve()
    launcher = (["--gpus", str(args.gpus)] if args.gpus else ["--cpu-procs", str(args.cpu_procs)]) + \
        (["--max-tokens", str(args.max_tokens)] if args.max_tokens else [])

    missing: Dict[str, str] = {}
    plans: Dict[str, RowPlan] = {}
    for row in rows:
        reason = missing_reason(row)
        if reason:
            missing[row.id] = reason
        else:
            plans[row.id] = plan_row(row, tables, work, data_root, launcher)

    print(f"{args.paper} Table {args.table}: {len(rows)} rows, {len(plans)} runnable, {len(missing)} missing")
    for row in rows:
        if row.id in missing:
            print(f"MISSING {row.id} ({row.label}): {missing[row.id]}")
    failed: Dict[str, str] = {}
    # baselines first, so that the significance test of every other row finds their translations
    order = sorted(plans.values(), key=lambda p: p.row.baseline is not None)
    for plan in order:
        row = plan.row
        if args.dry_run:
            print(f"ROW {row.id} ({row.label})")
            print("  " + " ".join(shlex.quote(c) for c in plan.train))
            print("  " + " ".join(shlex.quote(c) for c in plan.evaluate))
            continue
        if plan.scores.exists():
            print(f"DONE {row.id}: {plan.scores} exists, not rerun")
            continue
        if not any(plan.data_bin.glob("dict.*.txt")):
            failed[row.id] = f"no binarized data in {plan.data_bin} (run data-prep/ first)"
            print(f"FAILED {row.id}: {failed[row.id]}")
            continue
        plan.run_dir.mkdir(parents=True, exist_ok=True)
        if run(plan.train) != 0:
            failed[row.id] = f"training failed (see {plan.run_dir / 'checkpoints' / 'hydra_train.log'}); rerun to resume"
        elif run(plan.evaluate) != 0:
            failed[row.id] = "evaluation failed; rerun to retry"
        if row.id in failed:
            print(f"FAILED {row.id}: {failed[row.id]}")
    if args.dry_run:
        return 0
    table_md = markdown(tables, rows, plans, missing, failed)
    out = work / args.paper / f"table{args.table}.md"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(table_md)
    print(table_md)
    print(f"written to {out}")
    return 1 if failed else 0


def console_main() -> int:
    """``fairseq-localness-reproduce`` entry point."""
    return main(sys.argv[1:])
