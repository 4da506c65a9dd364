"""reproduce.sh on a cluster: every trainable row of a table as its own Slurm job, evaluation as a dependent job.

    bash scripts/reproduce.sh PAPER TABLE --slurm --partition P --nodes N --gpus-per-node G --time T [--wait]
    bash scripts/reproduce.sh PAPER TABLE [--resubmit-failed]      # later, same --work: collect

The training jobs of one request go out as one Slurm array (``--no-array``: one job each); each
row's evaluation is a job that starts after its training (``afterok``) and, for the significance
test, after its baseline's evaluation. Every submission is recorded in the row's run dir
(``ROW/cluster_jobs.json``) and the resources in ``WORK/PAPER/tableT.cluster.json``; a later
``reproduce.sh PAPER TABLE`` in the same work dir reads the jobs back instead of training on the
login node, prints the table with the finished rows, and with ``--resubmit-failed`` submits the
failed rows again with the stored resources (training resumes from its last checkpoint).
"""

from __future__ import annotations

import argparse
import json
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

from ..evaluation.outputs import HYP_TOK
from ..provenance import write_atomically
from .cluster import (RECORD_NAME, SlurmOptions, add_slurm_arguments, append_record, job_entry, job_state,
                      make_executor, options_from_args, read_record, sbatch_script, wait_for)
from .costs import gpu_hours, gpu_hours_table  # noqa: F401  (gpu_hours: re-exported for reproduce's users)
from .launch import LaunchError
from .plans import baseline_first


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_slurm_arguments(parser, nodes=True)
    group = parser.add_argument_group("collecting cluster jobs")
    group.add_argument("--resubmit-failed", action="store_true",
                       help="submit the rows whose training or evaluation job failed again")
    group.add_argument("--no-array", action="store_true", help="one Slurm job per row instead of one array")
    group.add_argument("--eval-time", help="time limit of the evaluation jobs [--time]")
    group.add_argument("--gpu-hours", action="store_true",
                       help="print the estimated GPU-hours of the table's training rows; run nothing")


def settings_path(work: Path, paper: str, table: str) -> Path:
    return work / paper / f"table{table}.cluster.json"


def row_state(plan) -> Tuple[str, str]:
    """(stage, text for the table) of a row from its scores and recorded jobs. Stages: done, training,
    evaluating, train-failed, eval-failed, trained (not evaluated yet), new (never submitted)."""
    if plan.scores.exists():
        return "done", "done"
    entries = read_record(plan.run_dir / RECORD_NAME)
    last = {entry["role"]: index for index, entry in enumerate(entries)}
    train, evaluate = last.get("train"), last.get("evaluate")
    if train is not None:
        state, detail = job_state(entries[train])
        if state == "active":
            return "training", f"training: {detail}"
        if state == "failed":
            return "train-failed", f"training failed: {detail}"
    if evaluate is not None and (train is None or evaluate > train):
        state, detail = job_state(entries[evaluate])
        if state == "active":
            return "evaluating", f"evaluating: {detail}"
        return "eval-failed", (f"evaluation failed: {detail}" if state == "failed"
                               else f"evaluation job ended without {plan.scores}")
    if train is not None:
        return "trained", "trained, evaluation not submitted"
    return "new", "not submitted"


def row_launch(plan, options: SlurmOptions):
    """The Launch of a row's train.sh command on the requested nodes, validated, with its batch split."""
    # node 0's port comes from the job id (cluster_jobs.TrainJob)
    launch = replace(plan.launch, nodes=options.nodes, master_port=0, overrides=list(plan.launch.overrides))
    launch.validate()
    return launch, launch.plan()


def cluster_table(args: argparse.Namespace, work: Path, plans: List,
                  failed: Dict[str, str]) -> Optional[Dict[str, str]]:
    """Submit and/or collect the rows' jobs; the status text per row, or None when this is no cluster run
    (no --slurm and nothing submitted for this table in WORK). Rows that failed go into ``failed``."""
    if args.gpu_hours:
        print(gpu_hours_table([plan.row for plan in plans]))
        args.dry_run = True  # an estimate only: reproduce stops here
        return {}
    requested = args.slurm or args.local_executor
    settings = settings_path(work, args.paper, str(args.table))
    if not requested and not settings.exists():
        if args.resubmit_failed:
            raise SystemExit(f"reproduce.sh: --resubmit-failed: no cluster jobs were submitted for this table "
                             f"({settings} does not exist); use --slurm ...")
        return None
    try:
        options = options_from_args(args, args.gpus, args.nodes) if requested else \
            SlurmOptions(**json.loads(settings.read_text()))
    except LaunchError as err:
        raise SystemExit(f"reproduce.sh: error: {err}") from None
    except (json.JSONDecodeError, TypeError) as err:
        raise SystemExit(f"reproduce.sh: error: {settings}: not the cluster settings reproduce.sh writes ({err}); "
                         "give --slurm with the resources again to replace it") from None
    if requested and options.executor == "slurm" and not options.gpus_per_node:
        raise SystemExit("reproduce.sh: error: --slurm trains on GPUs: give --gpus-per-node")
    submitting = requested or args.resubmit_failed
    stages = {plan.row.id: row_state(plan) for plan in plans}
    train, evaluate = [], []
    for plan in baseline_first(plans):
        stage, text = stages[plan.row.id]
        print(f"{stage.upper()} {plan.row.id}: {text}")
        if stage in ("new", "train-failed") and (requested if stage == "new" else args.resubmit_failed):
            train.append(plan)
            evaluate.append(plan)
        elif stage == "eval-failed" and args.resubmit_failed or stage == "trained" and submitting:
            evaluate.append(plan)
    folder = work / args.paper / "slurm" / f"table{args.table}"
    if args.dry_run:
        for plan in train:
            print(f"TRAIN {plan.row.id}: " + " ".join(shlex.quote(c) for c in plan.train))
        for plan in evaluate:
            print(f"EVALUATE {plan.row.id} (after its training): " + " ".join(shlex.quote(c) for c in plan.evaluate))
        if train:
            print(sbatch_script(options, folder, f"{args.paper}.table{args.table}.train"))
        return {}
    try:
        if submit_rows(args, options, folder, train, evaluate, {p.row.id: p for p in plans}, failed):
            # the resources, for --resubmit-failed; from now on a plain reproduce.sh collects this table
            write_atomically(settings, json.dumps(options.to_json(), indent=2) + "\n")
    except LaunchError as err:
        raise SystemExit(f"reproduce.sh: error: {err}") from None
    if args.wait:  # for every job of the table that may still finish, earlier submissions included
        running = [e for plan in plans for e in (active_entry(plan, "train"), active_entry(plan, "evaluate")) if e]
        print(f"waiting for {len(running)} job(s) ...", flush=True)
        wait_for(running, poll_s=2.0 if options.executor == "local" else 60.0)
    status: Dict[str, str] = {}
    for plan in plans:
        stage, text = row_state(plan)
        if stage.endswith("failed"):
            failed.setdefault(plan.row.id, text + " (rerun with --resubmit-failed)")
        if stage != "done":
            status[plan.row.id] = failed.get(plan.row.id, text)
    return status


def submit_rows(args: argparse.Namespace, options: SlurmOptions, folder: Path, train: List, evaluate: List,
                plans: Dict[str, Any], failed: Dict[str, str]) -> List[Dict[str, Any]]:
    """Submit the training jobs (one array) and the evaluation jobs; returns the new records."""
    folder.mkdir(parents=True, exist_ok=True)
    from .cluster_jobs import EvalJob, TrainJob

    name = f"{args.paper}.table{args.table}"
    specs = []
    for plan in train:
        if not any(plan.data_bin.glob("dict.*.txt")):
            failed[plan.row.id] = f"no binarized data in {plan.data_bin} (run data-prep/ first)"
            print(f"FAILED {plan.row.id}: {failed[plan.row.id]}")
            continue
        try:
            specs.append((plan, *row_launch(plan, options)))
        except LaunchError as err:
            failed[plan.row.id] = str(err)
            print(f"FAILED {plan.row.id}: {err}")
    new: Dict[Tuple[str, str], Dict[str, Any]] = {}
    if specs:
        executor = make_executor(options, folder, f"{name}.train")
        jobs_of = [TrainJob(launch, batch) for _, launch, batch in specs]
        if len(specs) > 1 and options.executor == "slurm" and not args.no_array:
            with executor.batch():
                jobs = [executor.submit(job) for job in jobs_of]
        else:
            jobs = [executor.submit(job) for job in jobs_of]
        for (plan, launch, batch), job in zip(specs, jobs):
            plan.run_dir.mkdir(parents=True, exist_ok=True)
            entry = job_entry(job, "train", options, row=plan.row.id, save_dir=launch.save_path, plan=batch)
            append_record(plan.run_dir / RECORD_NAME, entry)
            new[(plan.row.id, "train")] = entry
            print(f"SUBMITTED {plan.row.id}: training job {job.job_id} ({options.nodes} node(s) x "
                  f"{options.gpus_per_node} GPU(s), update_freq {batch['update_freq']}); log {entry['stdout']}")
    eval_options = replace(options, nodes=1, gpus_per_node=min(options.gpus_per_node, 1), cpus_per_task=None)
    if getattr(args, "eval_time", None):
        from .cluster import parse_time

        eval_options.time_min = parse_time(args.eval_time)
    for plan in evaluate:
        if plan.row.id in failed:
            continue
        after = [new.get((plan.row.id, "train"))]
        command = list(plan.evaluate)
        base = plan.row.baseline
        if base and "--baseline-hyp" in command:
            base_job = new.get((base, "evaluate")) or active_entry(plans.get(base), "evaluate")
            base_done = Path(command[command.index("--baseline-hyp") + 1], HYP_TOK).exists()
            if base_job is not None:
                after.append(base_job)
            elif not base_done:
                cut = command.index("--baseline-hyp")
                del command[cut:cut + 2]
                print(f"NOTE {plan.row.id}: baseline {base} is not evaluated nor queued; no significance test")
        after = [entry for entry in after if entry is not None]
        dependency = "afterok:" + ":".join(e["job_id"] for e in after) if after else None
        executor = make_executor(eval_options, folder, f"{name}.{plan.row.id}.eval", dependency)
        job = executor.submit(EvalJob(command, [e["result"] for e in after],
                                      [int(e["job_id"]) for e in after if e["executor"] == "local"]))
        entry = job_entry(job, "evaluate", eval_options, row=plan.row.id, dependency=dependency)
        append_record(plan.run_dir / RECORD_NAME, entry)
        new[(plan.row.id, "evaluate")] = entry
        print(f"SUBMITTED {plan.row.id}: evaluation job {job.job_id}" + (f" ({dependency})" if dependency else ""))
    return list(new.values())


def active_entry(plan, role: str) -> Optional[Dict[str, Any]]:
    """The row's latest job of ROLE if it may still succeed (a dependency for a new job), else None."""
    if plan is None:
        return None
    entries = [e for e in read_record(plan.run_dir / RECORD_NAME) if e["role"] == role]
    return entries[-1] if entries and job_state(entries[-1])[0] == "active" else None
