"""``scripts/train.sh`` and the ``fairseq-localness-launch`` entry point: parse the command line into a
:class:`.launch.Launch`, validate it, and train here (:func:`.launch.run_here`) or submit it to Slurm (:mod:`.cluster`).

    fairseq-localness-launch {train,stats,progress,compare} ...
"""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path
from typing import Sequence, Tuple

from ..cli import int_at_least
from ..paths import CheckoutError, require_checkout
from .cluster import add_slurm_arguments, node_commands, submit_training
from .launch import Launch, LaunchError, describe, precision_overrides, run_here
from .runlog import compare_main, progress_main, stats_main


def parse_train(argv: Sequence[str]) -> Tuple[argparse.Namespace, Launch]:
    """train.sh's arguments: the parsed options and the Launch they ask for (not yet validated)."""
    parser = argparse.ArgumentParser(
        prog="scripts/train.sh",
        description="Train ARCH on a benchmark setting of configs/benchmark with the paper's effective batch "
        "(world size x update_freq x max_tokens). Extra KEY=VALUE arguments are Hydra overrides for "
        "fairseq-hydra-train, e.g. optimization.max_update=1000 common.fp16=true (fairseq-train's --fp16, "
        "--memory-efficient-fp16, --amp and --bf16 are taken as common.fp16=true and so on).",
    )
    parser.add_argument("benchmark", help="configs/benchmark/<name>.yaml, e.g. wmt14_en_de_base")
    parser.add_argument("arch", help="configs/arch/<name>.yaml, e.g. transformer_gaussian_local_wmt_en_de")
    parser.add_argument("--data", help="binarized data (data-prep's OUT/data-bin)")
    parser.add_argument("--save-dir", help="checkpoint directory (default: checkpoints/BENCHMARK/ARCH)")
    parser.add_argument("--recipe-dir", type=Path,
                        help="a directory with benchmark/BENCHMARK.yaml, searched before configs/ (the comparison's "
                        "WORK/LABEL/recipe, where it copies a --recipe file)")
    parser.add_argument("--gpus", "--gpus-per-node", type=int, default=0, help="GPUs per node (0: train on the CPU)")
    parser.add_argument("--nodes", type=int, default=1, help="number of nodes (run the command on every node)")
    parser.add_argument("--node-rank", type=int, default=0, help="this node's rank, 0..nodes-1")
    parser.add_argument("--master-addr", default="127.0.0.1", help="address of node 0")
    parser.add_argument("--master-port", type=int, help="a free TCP port on node 0")
    parser.add_argument("--cpu-procs", type=int_at_least(1), default=1,
                        help="CPU training with N processes (gloo, one thread each)")
    parser.add_argument("--max-tokens", type=int_at_least(1),
                        help="tokens per device and step (default: the config's)")
    parser.add_argument("--effective-tokens", type=int_at_least(1),
                        help="tokens per update to keep (default: the paper's, max_tokens x update_freq of the config)")
    parser.add_argument("--dry-run", action="store_true",
                        help="print the command(s) without running them (every node's, with --nodes; "
                        "the sbatch file, with --slurm)")
    add_slurm_arguments(parser)
    args, overrides = parser.parse_known_args(argv)
    overrides = precision_overrides(overrides)  # --fp16 -> common.fp16=true (fairseq-train's flags)
    unknown = [o for o in overrides if o.startswith("-")]
    if unknown:
        parser.error(f"unknown option(s): {' '.join(unknown)}")
    launch = Launch(
        benchmark=args.benchmark, arch=args.arch, data=args.data, save_dir=args.save_dir, gpus=args.gpus,
        nodes=args.nodes, node_rank=args.node_rank, master_addr=args.master_addr, master_port=args.master_port,
        cpu_procs=args.cpu_procs, max_tokens=args.max_tokens, effective_tokens=args.effective_tokens,
        overrides=overrides, recipe_dir=args.recipe_dir,
    )
    return args, launch


def train_main(argv: Sequence[str]) -> int:
    try:
        require_checkout()
    except CheckoutError as err:
        print(f"train.sh: error: {err}", file=sys.stderr)
        return 2
    args, launch = parse_train(argv)
    on_cluster = args.slurm or args.local_executor
    if on_cluster and launch.master_port is None:
        launch.master_port = 0  # a Slurm job derives node 0's port from its job id (cluster_jobs.TrainJob)
    try:
        launch.validate()
        if not args.dry_run and not on_cluster:
            launch.check_devices()  # a dry run or a Slurm submission may be prepared on a machine without GPUs
            launch.check_data()  # (a submission checks it once its own options pass: cluster.submit_training)
        plan = launch.plan()
        if on_cluster:
            print(describe(launch, plan), flush=True)
            return submit_training(launch, plan, args, dry_run=args.dry_run)
    except LaunchError as err:
        print(f"train.sh: error: {err}", file=sys.stderr)
        return 2
    if launch.nodes > 1 and args.dry_run:
        # one command per node, identical but for the rank: start each on its node (docs/cluster.md)
        print(describe(launch, plan), flush=True)
        for rank, command in node_commands(launch, plan):
            print(f"[node {rank}] " + " ".join(shlex.quote(c) for c in command), flush=True)
        return 0
    try:
        return run_here(launch, plan, dry_run=args.dry_run)
    except LaunchError as err:  # another process trains into --save-dir
        print(f"train.sh: error: {err}", file=sys.stderr)
        return 2


def main(argv: Sequence[str]) -> int:
    commands = {"train": train_main, "stats": stats_main, "progress": progress_main, "compare": compare_main}
    if not argv or argv[0] not in commands:
        print(f"usage: launch.py {{{','.join(commands)}}} ...", file=sys.stderr)
        return 2
    return commands[argv[0]](argv[1:])


def console_main() -> int:
    """``fairseq-localness-launch`` entry point."""
    return main(sys.argv[1:])
