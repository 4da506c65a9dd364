"""Train and score every row of a paper's table; write our numbers beside the published ones.

    bash scripts/reproduce.sh PAPER TABLE [--dry-run] [--rows ID,ID] [--gpus N] [--work DIR] [--data-root DIR]

Rows, their settings and the published numbers come from ``configs/paper_tables.yaml``
(:mod:`.tables`). Each trained row runs ``scripts/train.sh`` (its setting's recipe and effective
batch) and, in ``WORK/PAPER/tableT/ROW/``, ``scripts/evaluate.sh`` for translation (the paper's split,
decoding and metric) or ``scripts/score_task.sh`` for classification (accuracy), language
modelling (perplexity), probing (accuracy of probes on the frozen encoder) and summarization
(files2rouge's ROUGE of the decoded test set), as the row's ``evaluation`` entry names its task.
A row whose ``eval-SPLIT/scores.json`` exists is finished and not rerun; an interrupted training
resumes from its last checkpoint. Rows the paper only quotes are listed
with their numbers; rows whose method is not in the plugin yet (``pending``) or that fairseq
rejects are listed with the reason. Nothing is skipped silently. A data-bin whose recorded corpus
(``prep-info.json``) is not the one the setting's ``corpus`` names stops the run before training
(exit status 2) unless ``--allow-other-corpus``, which marks the report. The table is written as
``WORK/PAPER/tableT.{md,csv,json}``.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from . import report
from ..cli import int_at_least
from ..evaluation.outputs import HYP_TOK
from ..paths import CheckoutError, require_checkout
from ..provenance import directory_problem
from .launch import LaunchError, precision_overrides
from .fairseq_options import parser_error, setting_task_flags  # noqa: F401  (re-exported: reproduce's vocabulary)
from .plans import (  # noqa: F401  (re-exported: reproduce's vocabulary)
    SCRIPTS,
    CorpusCheck,
    RowPlan,
    baseline_first,
    corpus_checks,
    has_binarized_data,
    missing_reason,
    plan_row,
    read_scores,
    recorded_corpus,
    row_metrics,
    status_of,
)
from .runlog import stats
from .tables import (
    SWEEPS_FILE,
    TABLES_FILE,
    Row,
    TableError,
    evaluation_of,
    load_tables,
    overrides_as_flags,
    setting_model_flags,
    table_dirname,
    table_rows,
    table_spec,
    table_title,
    with_sweeps,
)

__all__ = ["TABLES_FILE", "load_tables", "overrides_as_flags", "table_rows", "missing_reason", "plan_row", "main"]


def run(command: List[str]) -> int:
    """Run a row's ``bash scripts/...`` command with this interpreter: the scripts take ``$PYTHON`` first, so a
    reproduce started from another environment does not train its rows with the checkout's .venv."""
    print("+ " + " ".join(shlex.quote(c) for c in command), flush=True)
    return subprocess.call(command, env={**os.environ, "PYTHON": os.environ.get("PYTHON") or sys.executable})



def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="scripts/reproduce.sh", description=__doc__.split("\n\n")[0])
    parser.add_argument("paper", help="yang2018, yang2019, xu2019, nguyen2020 or fan2021")
    parser.add_argument("table", help="table number, e.g. 1, or a sweep figure of --sweeps, e.g. fig2")
    parser.add_argument("--dry-run", action="store_true", help="print every command; run and write nothing")
    parser.add_argument("--rows", help="comma-separated row ids to run (default: all); the table lists them all")
    parser.add_argument("--gpus", "--gpus-per-node", type=int, default=0, help="GPUs per node for training (0: CPU)")
    parser.add_argument("--cpu-procs", type=int_at_least(1), default=1,
                        help="CPU training processes when --gpus is 0")
    parser.add_argument("--max-tokens", type=int_at_least(1),
                        help="tokens per device and step (default: the setting's)")
    parser.add_argument("--work", default="runs", help="where runs and results go [runs]")
    parser.add_argument("--data-root", default="runs/data",
                        help="directory holding <dataset>/data-bin, i.e. data-prep/prepare-*.sh --out "
                        "DATA_ROOT/<dataset> [runs/data]")
    parser.add_argument("--train-args", default="",
                        help="extra Hydra overrides for every row's training, one quoted string "
                        "(e.g. 'optimization.max_update=100' for a smoke run)")
    parser.add_argument("--eval-args", default="",
                        help="extra scripts/evaluate.sh (translation) or scripts/score_task.sh (classification, "
                        "language modelling, probing, summarization) options, one quoted string (--eval-args=--cpu)")
    parser.add_argument("--tables", type=Path, default=TABLES_FILE,
                        help="the tables file, e.g. tables of your own in the same format [%(default)s]")
    parser.add_argument("--sweeps", type=Path, default=None,
                        help="the sweep figures (fig<N>, trained like tables, no published numbers) [with the shipped "
                        f"tables file: {SWEEPS_FILE}; with your own --tables: none]")
    parser.add_argument("--allow-other-corpus", action="store_true",
                        help="train even where a data-bin's corpus (its prep-info.json) is not the one the paper trained "
                        "on, e.g. WMT17 Zh-En prepared with --nc-only; the report is marked 'trained on <corpus>, not the "
                        "paper's'")
    from .cluster_tables import add_arguments as add_cluster_arguments  # --slurm ... (docs/cluster.md)

    add_cluster_arguments(parser)
    return parser


def main(argv: Sequence[str]) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        require_checkout()
    except CheckoutError as err:
        parser.error(str(err))
    if not args.tables.is_file():
        parser.error(f"--tables {args.tables}: no such file")
    if args.sweeps is None and args.tables.resolve() == TABLES_FILE.resolve():
        args.sweeps = SWEEPS_FILE  # the shipped figures belong to the shipped tables' papers
    if args.sweeps is not None and not args.sweeps.is_file():
        parser.error(f"--sweeps {args.sweeps}: no such file")
    try:
        tables = with_sweeps(load_tables(args.tables), load_tables(args.sweeps) if args.sweeps else None)
    except TableError as err:
        parser.error(str(err))
    try:
        spec = table_spec(tables, args.paper, str(args.table))
        rows = table_rows(tables, args.paper, str(args.table))
    except TableError as err:
        parser.error(str(err))
    selected = rows
    if args.rows:
        wanted = [r for r in args.rows.split(",") if r]
        unknown = sorted(set(wanted) - {r.id for r in rows})
        if unknown:
            parser.error(f"unknown row id(s): {', '.join(unknown)}; the table's rows: {', '.join(r.id for r in rows)}")
        selected = [r for r in rows if r.id in wanted]
    for flag, directory in (("--work", args.work), ("--data-root", args.data_root)):
        problem = directory_problem(directory, flag)  # as given: resolving first would follow a link to nothing
        if problem:
            parser.error(problem)
    work, data_root = Path(args.work).resolve(), Path(args.data_root).resolve()
    train_args = precision_overrides(shlex.split(args.train_args))
    flags = [a for a in train_args if a.startswith("-")]
    if flags:
        parser.error(f"--train-args takes Hydra overrides (KEY=VALUE), not {' '.join(flags)}; "
                     "give --gpus, --cpu-procs and --max-tokens to reproduce.sh itself")

    reasons: Dict[str, str] = {}
    plans: Dict[str, RowPlan] = {}
    for row in rows:
        reason = missing_reason(row, tables)
        if reason:
            reasons[row.id] = reason
        else:
            plan = plan_row(row, tables, work, data_root, gpus=args.gpus, cpu_procs=args.cpu_procs,
                            max_tokens=args.max_tokens or None)
            plan.launch.overrides += train_args
            plan.evaluate += shlex.split(args.eval_args)
            plans[row.id] = plan
    translated = any(plan.evaluate[1].endswith("evaluate.sh") for plan in plans.values())
    if args.eval_args and translated:  # else each row would train, then fail to decode (score_task.sh: its own)
        from ..evaluation.evaluate import option_error

        problem = option_error(shlex.split(args.eval_args))
        if problem:
            parser.error(f"--eval-args {args.eval_args!r}: evaluate.sh refuses it: {problem}")
    for plan in plans.values():
        if "--baseline-hyp" in plan.evaluate and plan.row.baseline not in plans:  # a baseline not trained (yet)
            cut = plan.evaluate.index("--baseline-hyp")
            del plan.evaluate[cut:cut + 2]

    title = f"{table_title(args.paper, str(args.table))}: {spec['caption']}"
    trained = [r for r in selected if r.id in plans]
    print(f"{title}\n{len(selected)} rows, {len(trained)} trained, {len(selected) - len(trained)} not trained "
          f"({spec['split']} split)")
    for row in selected:
        if row.id in reasons:
            kind = "PUBLISHED-ONLY" if row.quoted else ("PENDING" if row.pending else "MISSING")
            print(f"{kind} {row.id} ({row.name}): {reasons[row.id]}")

    # the paper's training corpus, where data-prep also makes a reduced one (configs/paper_tables.yaml, `corpus`)
    checks = corpus_checks([plans[r.id] for r in trained], tables)
    for check in checks:
        print(check.line())
    other = [c for c in checks if c.other]
    if other and not args.allow_other_corpus:
        message = "; ".join(f"{c.data_bin} holds {c.found_name}, not the paper's {c.expected}" for c in other)
        if args.dry_run:
            print(f"NOTE: training would stop here: {message} (rerun data-prep for the paper's corpus, or pass "
                  "--allow-other-corpus)")
        else:
            print(f"ERROR: {message}.\nThe paper's numbers come from the corpus its setting names: prepare it (see "
                  "docs/data.md), or pass --allow-other-corpus to train on this data anyway (the report is then marked "
                  "as trained on another corpus).", file=sys.stderr)
            return 2
    for check in other:
        title += f" [trained on {check.found_name}, not the paper's {check.expected}]"
        print(f"NOTE: --allow-other-corpus: {check.data} is {check.found_name}, not the paper's {check.expected}; "
              "the report says so")

    for plan in [plans[r.id] for r in trained if not plans[r.id].scores.exists()]:  # (a done row is not rerun)
        try:  # every row's training is checked before the first starts
            plan.launch.validate()
        except LaunchError as err:
            print(f"reproduce.sh: error: row {plan.row.id}: {err}", file=sys.stderr)
            return 2
    failed: Dict[str, str] = {}
    # cluster runs (docs/cluster.md): --slurm submits the rows as jobs; a work dir with submitted jobs is collected
    from .cluster_tables import cluster_table

    cluster_status = cluster_table(args, work, [plans[r.id] for r in trained], failed)
    if cluster_status is not None:
        if args.dry_run:
            return 0
        trained = []  # submitted to or collected from the cluster: nothing trains on this machine
    for plan in baseline_first([plans[r.id] for r in trained]):
        row = plan.row
        if args.dry_run:
            print(f"ROW {row.id} ({row.name})")
            print("  " + " ".join(shlex.quote(c) for c in plan.train))
            print("  " + " ".join(shlex.quote(c) for c in plan.evaluate))
            continue
        if plan.scores.exists():
            print(f"DONE {row.id}: {plan.scores} exists, not rerun")
            continue
        if not has_binarized_data(plan.data_bin):
            failed[row.id] = f"no binarized data in {plan.data_bin} (run data-prep/ first)"
            print(f"FAILED {row.id}: {failed[row.id]}")
            continue
        evaluate = list(plan.evaluate)
        base_plan = plans.get(row.baseline or "")
        if base_plan is not None and "--baseline-hyp" in evaluate and not (base_plan.eval_dir / HYP_TOK).exists():
            cut = evaluate.index("--baseline-hyp")
            del evaluate[cut:cut + 2]
            print(f"NOTE {row.id}: baseline {row.baseline} has no translations yet; no significance test")
        plan.run_dir.mkdir(parents=True, exist_ok=True)
        if run(plan.train) != 0:
            failed[row.id] = f"training failed (see {plan.run_dir / 'checkpoints' / 'hydra_train.log'}); rerun to resume"
        elif run(evaluate) != 0:
            failed[row.id] = "evaluation failed; rerun to retry"
        if row.id in failed:
            print(f"FAILED {row.id}: {failed[row.id]}")
    if args.dry_run:
        return 0

    runs = {}
    for row_id, plan in plans.items():
        run_stats = stats(plan.run_dir / "checkpoints")
        run_stats["scores"] = read_scores(plan.scores)
        runs[row_id] = run_stats
    status = {row.id: status_of(plans.get(row.id), reasons.get(row.id), failed, row) for row in rows}
    status.update(cluster_status or {})
    metrics = row_metrics(rows, tables)
    records = report.row_results(selected, runs, status, metrics)
    citation = tables["papers"][args.paper]["citation"]
    out = work / args.paper / table_dirname(str(args.table))
    out.parent.mkdir(parents=True, exist_ok=True)
    table_md = report.markdown(title, citation, records, spec.get("paper_marks", ""))
    out.with_suffix(".md").write_text(table_md, encoding="utf-8")
    out.with_suffix(".csv").write_text(report.to_csv(records), encoding="utf-8")
    out.with_suffix(".json").write_text(report.to_json(title, citation, records), encoding="utf-8")
    print(table_md)
    print(f"written to {out}.md, .csv and .json")
    return 1 if failed else 0


def console_main() -> int:
    """``fairseq-localness-reproduce`` entry point."""
    return main(sys.argv[1:])

