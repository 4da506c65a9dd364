"""Training on a cluster: Slurm jobs through submitit, and the per-node commands of a multi-node run.

``scripts/train.sh BENCHMARK ARCH --data D --slurm --partition P --nodes N --gpus-per-node G --time T``
submits one job that runs :class:`~.cluster_jobs.TrainJob`: one Slurm task per node, each
starting the launcher's fairseq-hydra-train command for its node (fairseq spawns one process
per GPU), with the effective batch of :func:`.launch.split_batch` for N x G GPUs. On
preemption or at the time limit submitit calls the job's ``checkpoint``, which stops fairseq
and requeues the same job; fairseq then resumes from ``checkpoint_last.pt`` in the save dir.

What was submitted (job id, log files, sbatch parameters) is printed and appended to
``SAVE_DIR/cluster_jobs.json``; :func:`job_state` reads a record back (submitit's result
file, else ``sacct``/``squeue``, or the local process) for ``reproduce.sh``'s collection.

submitit is an optional extra (``pip install -e ".[cluster]"``); this module imports it only
when a job is submitted or read back, so the rest of the launcher works without it.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from .cluster_jobs import TrainJob
from .launch import Launch, LaunchError
from .processes import process_alive, run_processes

EXTRA_HINT = 'pip install -e ".[cluster]"'
#: record of every job submitted for a run, beside its checkpoints (or a table row's run dir)
RECORD_NAME = "cluster_jobs.json"
#: Slurm states in which a job may still finish (sacct/squeue spelling)
ACTIVE_STATES = {"PENDING", "RUNNING", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "CONFIGURING", "COMPLETING",
                 "RESIZING", "SUSPENDED", "STAGE_OUT", "SIGNALING", "PREEMPTED"}


def require_submitit():
    """submitit, or a LaunchError that names the extra to install."""
    try:
        import submitit
    except ImportError:
        raise LaunchError(f"--slurm needs the optional extra [cluster] (submitit): {EXTRA_HINT} "
                          "(or pip install submitit hydra-submitit-launcher)") from None
    return submitit


def parse_time(text: str) -> int:
    """Slurm's --time formats (MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS) in whole minutes, rounded up."""
    match = re.fullmatch(r"(?:(\d+)-)?(\d+)(?::(\d+))?(?::(\d+))?", text.strip())
    if not match:
        raise LaunchError(f"--time {text!r}: use Slurm's format, e.g. 2880, 48:00:00 or 2-00:00:00")
    days, first, second, third = (int(g) if g is not None else None for g in match.groups())
    if days is not None:  # D-HH[:MM[:SS]]
        seconds = days * 86400 + first * 3600 + (second or 0) * 60 + (third or 0)
    elif third is not None:  # HH:MM:SS
        seconds = first * 3600 + second * 60 + third
    else:  # MM or MM:SS
        seconds = first * 60 + (second or 0)
    if seconds <= 0:
        raise LaunchError(f"--time {text!r} must be positive")
    return -(-seconds // 60)


def parse_extra(items: Sequence[str]) -> Dict[str, Union[str, bool]]:
    """--sbatch-extra KEY=VALUE (or a bare KEY for a flag such as exclusive) as sbatch options."""
    extra: Dict[str, Union[str, bool]] = {}
    for item in items:
        key, sep, value = item.partition("=")
        key = key.strip().lstrip("-")
        if not re.fullmatch(r"[a-z][a-z0-9_-]*", key):
            raise LaunchError(f"--sbatch-extra {item!r}: expected KEY=VALUE with an sbatch option name, "
                              "e.g. qos=high or mail-type=END")
        extra[key.replace("_", "-")] = value if sep else True
    return extra


@dataclass
class SlurmOptions:
    """Resources and submission settings of the jobs (one set for every job of a request)."""

    time_min: int
    partition: Optional[str] = None
    nodes: int = 1
    gpus_per_node: int = 0
    account: Optional[str] = None
    constraint: Optional[str] = None
    cpus_per_task: Optional[int] = None
    mem_gb: Optional[int] = None
    extra: Dict[str, Union[str, bool]] = field(default_factory=dict)
    setup: List[str] = field(default_factory=list)
    #: requeues after the time limit (submitit's max_num_timeout; preempted jobs are always requeued)
    max_requeues: int = 10
    #: "slurm", or "local": submitit's LocalExecutor (the same job code as subprocesses here, for testing)
    executor: str = "slurm"

    @property
    def tasks_cpus(self) -> int:
        """CPUs of the one task per node: 4 per GPU unless given (the fairseq process of each GPU and its
        data loading; Slurm's default of 1 CPU would make the GPUs' processes share one core)."""
        return self.cpus_per_task or 4 * max(self.gpus_per_node, 1)

    def slurm_parameters(self, name: str, dependency: Optional[str] = None) -> Dict[str, Any]:
        """submitit's SlurmExecutor parameters (its sbatch names) for one job."""
        params: Dict[str, Any] = {
            "job_name": name, "time": self.time_min, "nodes": self.nodes, "ntasks_per_node": 1,
            "cpus_per_task": self.tasks_cpus,
            # USR2 this long before the time limit: time for fairseq to stop and the job to requeue itself
            "signal_delay_s": 120,
        }
        optional = {"partition": self.partition, "account": self.account, "constraint": self.constraint,
                    "gpus_per_node": self.gpus_per_node or None,
                    "mem": f"{self.mem_gb}GB" if self.mem_gb else None, "setup": self.setup or None}
        params.update({key: value for key, value in optional.items() if value is not None})
        additional = dict(self.extra)
        if dependency:
            # a failed dependency cancels the job instead of leaving it pending forever
            additional.update({"dependency": dependency, "kill-on-invalid-dep": "yes"})
        if additional:
            params["additional_parameters"] = additional
        return params

    def to_json(self) -> Dict[str, Any]:
        return dict(self.__dict__)


def sbatch_script(options: SlurmOptions, folder: Path, name: str, dependency: Optional[str] = None) -> str:
    """The sbatch file submitit writes for a job with these options (for --dry-run and the tests)."""
    require_submitit()
    from submitit.slurm.slurm import _make_sbatch_string

    command = f"{shlex.quote(sys.executable)} -u -m submitit.core._submit {shlex.quote(str(folder))}"
    return _make_sbatch_string(command=command, folder=folder, **options.slurm_parameters(name, dependency))


def make_executor(options: SlurmOptions, folder: Path, name: str, dependency: Optional[str] = None):
    """A submitit executor for one job (or one array) with these options."""
    submitit = require_submitit()
    folder.mkdir(parents=True, exist_ok=True)
    if options.executor == "local":
        executor = submitit.LocalExecutor(folder, max_num_timeout=options.max_requeues)
        if options.nodes > 1:
            raise LaunchError("--local-executor runs on this machine only: use --nodes 1")
        executor.update_parameters(timeout_min=options.time_min, gpus_per_node=options.gpus_per_node,
                                   tasks_per_node=1)
        return executor
    if options.executor != "slurm":
        raise LaunchError(f"unknown executor {options.executor!r}")
    try:
        executor = submitit.SlurmExecutor(folder, max_num_timeout=options.max_requeues)
    except RuntimeError as err:  # no srun on this machine
        raise LaunchError(f"--slurm: {err} (submit from a Slurm login node; --local-executor runs the "
                          "same job here)") from None
    executor.update_parameters(**options.slurm_parameters(name, dependency))
    return executor


# --- records of submitted jobs ------------------------------------------------------------------------

def job_entry(job, role: str, options: SlurmOptions, **info: Any) -> Dict[str, Any]:
    paths = job.paths
    return {"role": role, "job_id": str(job.job_id), "executor": options.executor, "folder": str(paths.folder),
            "stdout": str(paths.stdout), "stderr": str(paths.stderr), "result": str(paths.result_pickle),
            "submitted": time.strftime("%Y-%m-%d %H:%M:%S"), "nodes": options.nodes,
            "gpus_per_node": options.gpus_per_node, **info}


def append_record(path: Path, entry: Dict[str, Any]) -> None:
    """Add a submission to PATH (a JSON list, oldest first); earlier submissions are kept."""
    entries = read_record(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(entries + [entry], indent=2) + "\n")
    tmp.replace(path)


def read_record(path: Path) -> List[Dict[str, Any]]:
    return json.loads(path.read_text()) if path.exists() else []


def latest(path: Path, role: str) -> Optional[Dict[str, Any]]:
    entries = [e for e in read_record(path) if e.get("role") == role]
    return entries[-1] if entries else None


def job_state(entry: Dict[str, Any]) -> Tuple[str, str]:
    """("done" | "active" | "failed", detail) of a recorded job, from submitit's result file when the job
    function returned or raised, otherwise from the scheduler (Slurm) or the process table (local)."""
    result = Path(entry["result"])
    if result.exists():
        require_submitit()  # its cloudpickle reads the result
        import cloudpickle

        with open(result, "rb") as handle:
            outcome, value = cloudpickle.load(handle)
        if outcome == "success":
            return "done", f"job {entry['job_id']} finished"
        last = [line for line in str(value).strip().splitlines() if line.strip()]
        return "failed", f"job {entry['job_id']}: {last[-1] if last else 'error'} (log: {entry['stderr']})"
    if entry.get("executor") == "local":
        if process_alive(int(entry["job_id"])):
            return "active", f"running as local job {entry['job_id']}"
        return "failed", f"local job {entry['job_id']} ended without a result (log: {entry['stderr']})"
    state = slurm_state(entry["job_id"])
    if state is None:
        return "active", f"job {entry['job_id']} (state unknown: no sacct/squeue answer)"
    if state in ACTIVE_STATES:
        return "active", f"{state.lower()} as Slurm job {entry['job_id']} (log: {entry['stdout']})"
    return "failed", f"Slurm job {entry['job_id']} ended {state} without a result (log: {entry['stderr']})"


def parse_sacct(output: str) -> Optional[str]:
    """The job's state from ``sacct -X -n -P -o State`` (first line; "CANCELLED by 123" -> CANCELLED)."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[0].split()[0].upper() if lines else None


def slurm_state(job_id: str) -> Optional[str]:
    for command in (["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "State"],
                    ["squeue", "-h", "-j", job_id, "-o", "%T"]):
        try:
            out = subprocess.run(command, capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.TimeoutExpired):
            continue
        state = parse_sacct(out.stdout) if out.returncode == 0 else None
        if state:
            return state
        if command[0] == "squeue" and out.returncode == 0:
            return "ENDED"  # no longer queued, and sacct knows nothing: it ended
    return None


# --- train.sh --slurm ---------------------------------------------------------------------------------

def add_slurm_arguments(parser: argparse.ArgumentParser, nodes: bool = False) -> None:
    """The Slurm option group of train.sh and reproduce.sh (``nodes``: add --nodes, for reproduce.sh)."""
    group = parser.add_argument_group("cluster (Slurm through submitit; docs/cluster.md)")
    group.add_argument("--slurm", action="store_true", help="submit as Slurm job(s) instead of running here")
    group.add_argument("--partition", help="Slurm partition")
    if nodes:
        group.add_argument("--nodes", type=int, default=1, help="nodes per training job [1]")
    group.add_argument("--time", help="time limit per job, Slurm format (e.g. 48:00:00 or 2-00:00:00); "
                       "a run longer than that is requeued and resumes from its last checkpoint")
    group.add_argument("--account", help="Slurm account to charge")
    group.add_argument("--constraint", help="Slurm node constraint, e.g. volta32gb")
    group.add_argument("--cpus-per-task", type=int, help="CPUs per node [4 per GPU]")
    group.add_argument("--mem-gb", type=int, help="memory per node in GB [the partition's default]")
    group.add_argument("--sbatch-extra", action="append", default=[], metavar="KEY=VALUE",
                       help="any other sbatch option, e.g. qos=high or mail-type=END (repeatable)")
    group.add_argument("--slurm-setup", action="append", default=[], metavar="COMMAND",
                       help="shell command run in the job before training, e.g. 'module load cuda' (repeatable)")
    group.add_argument("--max-requeues", type=int, default=10,
                       help="times a job that reaches its time limit is requeued (preempted jobs always are) [10]")
    if not nodes:
        group.add_argument("--slurm-folder", help="where submitit writes job logs [SAVE_DIR/slurm]")
    group.add_argument("--wait", action="store_true", help="wait for the job(s) to end")
    group.add_argument("--local-executor", action="store_true",
                       help="run the job(s) through submitit's LocalExecutor on this machine (to try the setup)")
    if not nodes:
        group.add_argument("--hydra-launcher", action="store_true",
                           help="submit through fairseq-hydra-train --multirun and hydra-submitit-launcher "
                           "(configs/hydra/launcher/localness_slurm.yaml) instead; waits for the job")


def options_from_args(args: argparse.Namespace, gpus_per_node: int, nodes: int) -> SlurmOptions:
    if not args.time:
        raise LaunchError("--slurm needs --time (the job's time limit; Slurm's default may be minutes)")
    return SlurmOptions(
        time_min=parse_time(args.time), partition=args.partition, nodes=nodes, gpus_per_node=gpus_per_node,
        account=args.account, constraint=args.constraint, cpus_per_task=args.cpus_per_task, mem_gb=args.mem_gb,
        extra=parse_extra(args.sbatch_extra), setup=list(args.slurm_setup), max_requeues=args.max_requeues,
        executor="local" if args.local_executor else "slurm")


def submit_training(launch: Launch, plan: Dict[str, int], args: argparse.Namespace, dry_run: bool) -> int:
    """train.sh --slurm: submit one training job (or print its sbatch file with --dry-run)."""
    options = options_from_args(args, launch.gpus, launch.nodes)
    if options.gpus_per_node == 0 and options.executor == "slurm":
        raise LaunchError("--slurm trains on GPUs: give --gpus-per-node (--gpus)")
    if args.hydra_launcher:
        command = hydra_command(launch, plan, options)
        print(" ".join(shlex.quote(c) for c in command), flush=True)
        if dry_run:
            return 0
        launch.check_data()
        return run_processes([command], cpu_workers=False)
    save_dir = Path(launch.save_path).resolve()
    # the job may start in another directory: paths as the user meant them here
    launch = replace(launch, save_dir=str(save_dir), data=os.path.abspath(launch.data) if launch.data else None)
    folder = Path(args.slurm_folder).resolve() if args.slurm_folder else save_dir / "slurm"
    name = f"{launch.benchmark}.{launch.arch}"
    if dry_run:
        print(sbatch_script(options, folder, name))
        return 0
    require_submitit()  # the missing extra first: it is what a user of --slurm needs to hear before anything else
    launch.check_data()  # before the job queues (and its folder is made): fairseq would fail on it only once it starts
    executor = make_executor(options, folder, name)
    job = executor.submit(TrainJob(launch, plan, port_from_job=args.master_port is None))
    entry = job_entry(job, "train", options, save_dir=str(save_dir), plan=plan)
    append_record(save_dir / RECORD_NAME, entry)
    print(f"submitted training job {job.job_id} ({options.nodes} node(s) x {options.gpus_per_node} GPU(s))")
    print(f"  job log:      {entry['stdout']}\n  job errors:   {entry['stderr']}")
    print(f"  training log: {save_dir / 'hydra_train.log'}\n  record:       {save_dir / RECORD_NAME}")
    if not args.wait:
        return 0
    return 0 if wait_for([entry])[0][0] == "done" else 1


def wait_for(entries: List[Dict[str, Any]], poll_s: float = 10.0) -> List[Tuple[str, str]]:
    """Poll until no job is active; returns each job's final (state, detail)."""
    while True:
        states = [job_state(entry) for entry in entries]
        if all(state != "active" for state, _ in states):
            for state, detail in states:
                print(f"{state}: {detail}", flush=True)
            return states
        time.sleep(poll_s)


def hydra_command(launch: Launch, plan: Dict[str, int], options: SlurmOptions) -> List[str]:
    """fairseq-hydra-train --multirun with hydra-submitit-launcher: the launcher's command (same batch split)
    with the resources as ``hydra.launcher.*`` overrides; fairseq finds the nodes from Slurm's environment."""
    base = launch.base_command(plan)
    cut = base.index("--config-dir")
    save_dir = os.path.abspath(launch.save_path)
    slurm = options.executor == "slurm"
    command = base[:cut] + ["--multirun"] + base[cut:] + [
        f"hydra/launcher={'localness_slurm' if slurm else 'submitit_local'}",
        f"hydra.launcher.nodes={options.nodes}", f"hydra.launcher.timeout_min={options.time_min}",
        f"hydra.sweep.dir={save_dir}", "hydra.sweep.subdir=.",
        f"distributed_training.distributed_world_size={plan['world_size']}",
    ]
    if options.gpus_per_node:
        command.append(f"hydra.launcher.gpus_per_node={options.gpus_per_node}")
    if not slurm:
        return command + [f"hydra.launcher.submitit_folder={save_dir}/slurm/%j"]
    command.append(f"hydra.launcher.cpus_per_task={options.tasks_cpus}")
    command.append(f"hydra.launcher.max_num_timeout={options.max_requeues}")
    for key in ("partition", "account", "constraint"):
        if getattr(options, key):
            command.append(f"hydra.launcher.{key}={getattr(options, key)}")
    if options.mem_gb:
        command.append(f"hydra.launcher.mem_gb={options.mem_gb}")
    if options.setup:
        command.append("hydra.launcher.setup=[" + ",".join(json.dumps(c) for c in options.setup) + "]")
    for key, value in options.extra.items():
        value = "true" if value is True else value
        command.append(f"+hydra.launcher.additional_parameters.{key.replace('-', '_')}={value}")
    if options.nodes > 1:
        # > 0 makes fairseq read the nodes and its rank from Slurm (one task per node, a process per GPU)
        command.append(f"distributed_training.distributed_port={launch.master_port or 29500}")
    return command


# --- several nodes without Slurm ----------------------------------------------------------------------

def node_commands(launch: Launch, plan: Dict[str, int]) -> List[Tuple[int, List[str]]]:
    """(node rank, command) for every node of a multi-node launch: the same command except the rank."""
    return [(rank, replace(launch, node_rank=rank).commands(plan)[0]) for rank in range(launch.nodes)]
