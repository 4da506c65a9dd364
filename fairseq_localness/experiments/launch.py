"""Start fairseq-hydra-train on a benchmark setting of configs/ with the paper's effective batch.

Every benchmark file in ``configs/benchmark/`` is written for one device:
``dataset.max_tokens x optimization.update_freq`` is the number of tokens the
paper put into one update (e.g. Yang et al. 2018: 8 GPUs x 4096 tokens =
4096 x update_freq 8). On W devices with T tokens each, the launcher sets

    update_freq = paper_tokens / (W * T)

and refuses a split that is not a whole number, so that every run, on one CPU
or 64 GPUs, takes the same optimisation steps as the paper.

Used by ``scripts/train.sh`` (``python scripts/launch.py train ...``, or the
``fairseq-localness-launch`` entry point), ``scripts/reproduce.sh`` and
``scripts/quickstart.sh``; :mod:`.runlog` reads runs back (``stats``, ``progress``, ``compare``).
"""

from __future__ import annotations

import argparse
import os
import shlex
import signal
import socket
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from ..paths import CONFIG_DIR, USER_DIR
from .runlog import compare_main, final_train_loss, progress_main, stats, stats_main  # noqa: F401  (re-exported)
PRIMARY_CONFIG = "localness"


class LaunchError(RuntimeError):
    """A bad request (unknown benchmark or arch, impossible batch split); printed without a traceback."""


def benchmarks() -> List[str]:
    return sorted(p.stem for p in (CONFIG_DIR / "benchmark").glob("*.yaml"))


def arch_configs() -> List[str]:
    return sorted(p.stem for p in (CONFIG_DIR / "arch").glob("*.yaml"))


def recipe_path(benchmark: str, recipe_dir: Optional[Path] = None) -> Path:
    """The file of a benchmark setting: RECIPE_DIR/benchmark/NAME.yaml where given and present, else configs/'s."""
    if recipe_dir is not None and (Path(recipe_dir) / "benchmark" / f"{benchmark}.yaml").is_file():
        return Path(recipe_dir) / "benchmark" / f"{benchmark}.yaml"
    return CONFIG_DIR / "benchmark" / f"{benchmark}.yaml"


def check_names(benchmark: str, arch: str, recipe_dir: Optional[Path] = None) -> None:
    if not recipe_path(benchmark, recipe_dir).is_file():
        raise LaunchError(f"unknown benchmark {benchmark!r}; configs/benchmark/ has: {', '.join(benchmarks())}")
    if arch not in arch_configs():
        raise LaunchError(
            f"no config for architecture {arch!r} in configs/arch/; available: {', '.join(arch_configs())}"
        )


def compose(benchmark: str, arch: str, overrides: Sequence[str] = (), return_hydra_config: bool = False,
            recipe_dir: Optional[Path] = None):
    """The config fairseq-hydra-train would run (Hydra's compose API with fairseq's schema registered).

    Leaves no global Hydra state behind: fairseq 0.12 itself still calls ``hydra.experimental.initialize``
    (``convert_namespace_to_omegaconf``), which fails in a process where Hydra stays initialised or where a
    ``version_base`` of 1.2 or later was declared, so both are restored on the way out.
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.version import VersionBase

    _register_fairseq_schema()
    previous_base = VersionBase.instance().getbase()
    try:
        with warnings.catch_warnings(), initialize_config_dir(config_dir=str(CONFIG_DIR), version_base=None):
            # fairseq validates the primary config against its schema by name (deprecated in Hydra, still supported)
            warnings.simplefilter("ignore", UserWarning)
            return hydra_compose(PRIMARY_CONFIG, overrides=[f"benchmark={benchmark}", f"arch={arch}",
                                                            *search_path(recipe_dir), *hydra_overrides(overrides)],
                                 return_hydra_config=return_hydra_config)
    finally:
        VersionBase.instance().version_base = previous_base


_schema_registered = False


def _register_fairseq_schema() -> None:
    global _schema_registered
    if not _schema_registered:
        from fairseq.dataclass.initialize import hydra_init

        hydra_init(PRIMARY_CONFIG)
        _schema_registered = True


def search_path(recipe_dir: Optional[Path]) -> List[str]:
    """Hydra's override that adds a directory of recipes (``DIR/benchmark/NAME.yaml``) to the config search path."""
    return [f"hydra.searchpath=[file://{Path(recipe_dir).resolve()}]"] if recipe_dir is not None else []


def hydra_overrides(overrides: Sequence[str]) -> List[str]:
    """Model options are open-ended (every method adds its own), so ``model.x=v`` is sent as ``++model.x=v``
    (set, or add when the architecture config does not mention it)."""
    return [f"++{o}" if o.startswith("model.") else o for o in overrides]


def benchmark_values(benchmark: str, recipe_dir: Optional[Path] = None) -> Dict:
    """A benchmark file with the files of its defaults list merged in (read as plain YAML, so that the
    launcher's arithmetic needs neither fairseq nor Hydra; tests check it against :func:`compose`)."""
    import yaml

    def load(path: Path) -> Dict:
        data = yaml.safe_load(path.read_text()) or {}
        merged: Dict = {}
        for entry in data.pop("defaults", []):
            if isinstance(entry, str) and entry != "_self_":
                merge(merged, load(CONFIG_DIR / (entry.lstrip("/") + ".yaml")))
        return merge(merged, data)

    def merge(into: Dict, other: Dict) -> Dict:
        for key, value in other.items():
            if isinstance(value, dict) and isinstance(into.get(key), dict):
                merge(into[key], value)
            else:
                into[key] = value
        return into

    return load(recipe_path(benchmark, recipe_dir))


def split_batch(effective_tokens: int, world_size: int, max_tokens: int) -> int:
    """update_freq such that world_size x update_freq x max_tokens == effective_tokens."""
    if world_size < 1 or max_tokens < 1:
        raise LaunchError(f"world size and max tokens must be positive, got {world_size} and {max_tokens}")
    per_step = world_size * max_tokens
    if effective_tokens % per_step:
        fits = [t for t in range(256, effective_tokens // world_size + 1, 256)
                if (effective_tokens // world_size) % t == 0 and effective_tokens % world_size == 0]
        hint = (f"--max-tokens values that split it on {world_size} device(s): {', '.join(map(str, fits[-6:]))}"
                if fits else f"{effective_tokens} tokens cannot be split evenly over {world_size} devices; "
                "change the number of devices")
        raise LaunchError(
            f"the paper's effective batch of {effective_tokens} tokens per update is not a whole number of "
            f"{world_size} device(s) x {max_tokens} tokens: {effective_tokens} / {per_step} = "
            f"{effective_tokens / per_step:g}. {hint}"
        )
    return effective_tokens // per_step


@dataclass
class Launch:
    """Everything needed to start one training run."""

    benchmark: str
    arch: str
    data: Optional[str] = None
    save_dir: Optional[str] = None
    gpus: int = 0
    nodes: int = 1
    node_rank: int = 0
    master_addr: str = "127.0.0.1"
    master_port: Optional[int] = None
    cpu_procs: int = 1
    max_tokens: Optional[int] = None
    effective_tokens: Optional[int] = None
    overrides: List[str] = field(default_factory=list)
    recipe_dir: Optional[Path] = None  # a directory with benchmark/NAME.yaml recipes beside configs/ (compare --recipe)

    def validate(self) -> None:
        check_names(self.benchmark, self.arch, self.recipe_dir)
        for override in self.overrides:
            key = override.lstrip("+~").split("=", 1)[0]
            if "=" not in override:
                raise LaunchError(f"overrides are key=value (Hydra syntax), got {override!r}")
            if key == "optimization.update_freq":
                raise LaunchError("optimization.update_freq is computed from the paper's effective batch; "
                                  "set --max-tokens (or --effective-tokens) instead")
            if key.startswith("distributed_training."):
                raise LaunchError(f"{key} is set by the launcher from --gpus/--nodes/--cpu-procs")
        if self.gpus < 0 or self.cpu_procs < 1 or self.nodes < 1:
            raise LaunchError("--gpus must be >= 0, --cpu-procs and --nodes >= 1")
        if self.gpus and self.cpu_procs > 1:
            raise LaunchError("--cpu-procs is for CPU training; do not combine it with --gpus")
        if self.nodes > 1 and not self.gpus:
            raise LaunchError("--nodes needs --gpus (GPUs per node); multi-node CPU training is not supported")
        if self.nodes > 1 and self.master_port is None:
            raise LaunchError("--nodes > 1 needs --master-addr and --master-port (the same on every node)")
        if not 0 <= self.node_rank < self.nodes:
            raise LaunchError(f"--node-rank must be in 0..{self.nodes - 1}")
        if self.data is None and not any(o.startswith("task.data=") for o in self.overrides):
            raise LaunchError("give the binarized data with --data DIR (the data-bin/ written by data-prep/)")
        self.check_save_dir()

    def requested_max_update(self) -> Optional[int]:
        """optimization.max_update as this launch sets it (an override, else the benchmark's; 0: no limit)."""
        for override in reversed(self.overrides):
            if override.lstrip("+").startswith("optimization.max_update="):
                return int(override.split("=", 1)[1])
        return int((benchmark_values(self.benchmark, self.recipe_dir).get("optimization") or {}).get("max_update") or 0)

    def check_save_dir(self) -> None:
        """The run-directory guard (:mod:`.rundir`): nothing is written into another architecture's run,
        or into a run further along than requested."""
        from .rundir import RunDirError, check_run_dir

        try:
            check_run_dir(Path(self.save_path), self.arch, self.requested_max_update())
        except RunDirError as err:
            raise LaunchError(str(err)) from None

    @property
    def world_size(self) -> int:
        return self.gpus * self.nodes if self.gpus else self.cpu_procs

    @property
    def save_path(self) -> str:
        return self.save_dir or str(Path("checkpoints") / self.benchmark / self.arch)

    def plan(self) -> Dict[str, int]:
        """Effective-batch arithmetic for this launch."""
        values = benchmark_values(self.benchmark, self.recipe_dir)
        config_tokens = int(values["dataset"]["max_tokens"])
        effective = self.effective_tokens or config_tokens * int(values["optimization"]["update_freq"][0])
        # a dataset.max_tokens override is the per-device batch, like --max-tokens; the paper's batch stays
        for override in self.overrides:
            if override.startswith("dataset.max_tokens="):
                config_tokens = int(override.split("=", 1)[1])
        max_tokens = self.max_tokens or config_tokens
        update_freq = split_batch(effective, self.world_size, max_tokens)
        return {"effective_tokens": effective, "world_size": self.world_size,
                "max_tokens": max_tokens, "update_freq": update_freq}

    def base_command(self, plan: Dict[str, int]) -> List[str]:
        hydra_train = Path(sys.executable).parent / "fairseq-hydra-train"
        program = [str(hydra_train)] if hydra_train.exists() else [sys.executable, "-m", "fairseq_cli.hydra_train"]
        command = program + [
            "--config-dir", str(CONFIG_DIR), "--config-name", PRIMARY_CONFIG,
            f"benchmark={self.benchmark}", f"arch={self.arch}",
            f"checkpoint.save_dir={os.path.abspath(self.save_path)}",
            f"common.user_dir={USER_DIR}",
            f"dataset.max_tokens={plan['max_tokens']}",
            f"optimization.update_freq=[{plan['update_freq']}]",
            *search_path(self.recipe_dir),
        ]
        if self.data is not None:
            command.append(f"task.data={os.path.abspath(self.data)}")
        if not self.gpus:
            command.append("common.cpu=true")
        return command + hydra_overrides(self.overrides)

    def commands(self, plan: Dict[str, int]) -> List[List[str]]:
        """One command per process to start on this machine."""
        base = self.base_command(plan)
        if self.gpus:
            if self.nodes == 1:
                # fairseq spawns one process per GPU itself
                return [base + [f"distributed_training.distributed_world_size={self.gpus}"]]
            return [base + [
                f"distributed_training.distributed_world_size={self.world_size}",
                f"distributed_training.distributed_rank={self.node_rank * self.gpus}",
                f"distributed_training.distributed_init_method=tcp://{self.master_addr}:{self.master_port}",
            ] + ([f"hydra.run.dir={os.path.abspath(self.save_path)}/node{self.node_rank}"] if self.node_rank else [])]
            # (node 0 logs to hydra_train.log beside the checkpoints; the other nodes' logs go to nodeR/)
        if self.cpu_procs == 1:
            return [base]
        port = self.master_port or free_port()
        # fairseq cannot spawn CPU workers (it spawns one per CUDA device): start one process per rank
        return [
            base + [
                f"distributed_training.distributed_world_size={self.cpu_procs}",
                f"distributed_training.distributed_rank={rank}",
                "distributed_training.distributed_no_spawn=true",
                "distributed_training.distributed_backend=gloo",
                f"distributed_training.distributed_init_method=tcp://127.0.0.1:{port}",
                "distributed_training.device_id=0",
            ] + ([f"hydra.run.dir={os.path.abspath(self.save_path)}/rank{rank}"] if rank else [])
            for rank in range(self.cpu_procs)
        ]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def describe(launch: Launch, plan: Dict[str, int]) -> str:
    device = "GPU" if launch.gpus else "CPU process"
    return (f"effective batch: {plan['effective_tokens']} tokens/update = {plan['world_size']} {device}(s) x "
            f"{plan['max_tokens']} tokens x update_freq {plan['update_freq']}")


def run_processes(commands: List[List[str]], cpu_workers: bool) -> int:
    """Start every command, wait for all; if one fails, stop the others. Returns the first non-zero code."""
    env = dict(os.environ)
    if cpu_workers:
        env["OMP_NUM_THREADS"] = "1"  # one thread per rank: the ranks share the cores
    procs = [subprocess.Popen(cmd, env=env, start_new_session=cpu_workers) for cmd in commands]
    code = 0
    try:
        for proc in procs:
            rc = proc.wait()
            if rc and not code:
                code = rc
                for other in procs:
                    if other.poll() is None:
                        other.terminate()
    except KeyboardInterrupt:
        for proc in procs:
            if proc.poll() is None:
                proc.send_signal(signal.SIGINT)
        for proc in procs:
            proc.wait()
        return 130
    return code


# --- command line -----------------------------------------------------------------------------------

def parse_train(argv: Sequence[str]) -> Tuple[argparse.Namespace, Launch]:
    """train.sh's arguments: the parsed options and the Launch they ask for (not yet validated)."""
    parser = argparse.ArgumentParser(
        prog="scripts/train.sh",
        description="Train ARCH on a benchmark setting of configs/benchmark with the paper's effective batch "
        "(world size x update_freq x max_tokens). Extra KEY=VALUE arguments are Hydra overrides for "
        "fairseq-hydra-train, e.g. optimization.max_update=1000 common.fp16=true.",
    )
    parser.add_argument("benchmark", help="configs/benchmark/<name>.yaml, e.g. wmt14_en_de_base")
    parser.add_argument("arch", help="configs/arch/<name>.yaml, e.g. transformer_gaussian_local_wmt_en_de")
    parser.add_argument("--data", help="binarized data (data-prep's OUT/data-bin)")
    parser.add_argument("--save-dir", help="checkpoint directory (default: checkpoints/BENCHMARK/ARCH)")
    parser.add_argument("--gpus", "--gpus-per-node", type=int, default=0, help="GPUs per node (0: train on the CPU)")
    parser.add_argument("--nodes", type=int, default=1, help="number of nodes (run the command on every node)")
    parser.add_argument("--node-rank", type=int, default=0, help="this node's rank, 0..nodes-1")
    parser.add_argument("--master-addr", default="127.0.0.1", help="address of node 0")
    parser.add_argument("--master-port", type=int, help="a free TCP port on node 0")
    parser.add_argument("--cpu-procs", type=int, default=1,
                        help="CPU training with N processes (gloo, one thread each)")
    parser.add_argument("--max-tokens", type=int, help="tokens per device and step (default: the config's)")
    parser.add_argument("--effective-tokens", type=int,
                        help="tokens per update to keep (default: the paper's, max_tokens x update_freq of the config)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the command(s) without running them (every node's, with --nodes; "
                        "the sbatch file, with --slurm)")
    from .cluster import add_slurm_arguments

    add_slurm_arguments(parser)
    args, overrides = parser.parse_known_args(argv)
    unknown = [o for o in overrides if o.startswith("-")]
    if unknown:
        parser.error(f"unknown option(s): {' '.join(unknown)}")
    launch = Launch(
        benchmark=args.benchmark, arch=args.arch, data=args.data, save_dir=args.save_dir, gpus=args.gpus,
        nodes=args.nodes, node_rank=args.node_rank, master_addr=args.master_addr, master_port=args.master_port,
        cpu_procs=args.cpu_procs, max_tokens=args.max_tokens, effective_tokens=args.effective_tokens,
        overrides=overrides,
    )
    return args, launch


def train_main(argv: Sequence[str]) -> int:
    from .cluster import node_commands, submit_training

    args, launch = parse_train(argv)
    on_cluster = args.slurm or args.local_executor
    if on_cluster and launch.master_port is None:
        launch.master_port = 0  # a Slurm job derives node 0's port from its job id (cluster_jobs.TrainJob)
    try:
        launch.validate()
        plan = launch.plan()
        if on_cluster:
            print(describe(launch, plan), flush=True)
            return submit_training(launch, plan, args, dry_run=args.dry_run)
    except LaunchError as err:
        print(f"train.sh: error: {err}", file=sys.stderr)
        return 2
    commands = launch.commands(plan)
    print(describe(launch, plan), flush=True)
    if launch.nodes > 1 and args.dry_run:
        # one command per node, identical but for the rank: start each on its node (docs/cluster.md)
        for rank, command in node_commands(launch, plan):
            print(f"[node {rank}] " + " ".join(shlex.quote(c) for c in command), flush=True)
        return 0
    for command in commands:
        print(("" if len(commands) == 1 else "[rank] ") + " ".join(shlex.quote(c) for c in command), flush=True)
    if args.dry_run:
        return 0
    Path(launch.save_path).mkdir(parents=True, exist_ok=True)
    return run_processes(commands, cpu_workers=not launch.gpus and launch.cpu_procs > 1)


def main(argv: Sequence[str]) -> int:
    commands = {"train": train_main, "stats": stats_main, "progress": progress_main, "compare": compare_main}
    if not argv or argv[0] not in commands:
        print(f"usage: launch.py {{{','.join(commands)}}} ...", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


def console_main() -> int:
    """``fairseq-localness-launch`` entry point."""
    return main(sys.argv[1:])
