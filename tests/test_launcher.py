"""scripts/train.sh: effective-batch arithmetic, the commands it starts, and CPU multi-process training."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from fairseq_localness.experiments import launch, train_cli  # noqa: E402
from localness_testing import REPO, run  # noqa: E402

TRAIN = ["bash", str(REPO / "scripts" / "train.sh")]


@pytest.mark.parametrize("effective,world,tokens,expected", [
    (32768, 8, 4096, 1), (32768, 1, 4096, 8), (32768, 2, 4096, 4), (32768, 4, 2048, 4), (294912, 8, 12288, 3),
])
def test_update_freq_keeps_the_effective_batch(effective, world, tokens, expected):
    assert launch.split_batch(effective, world, tokens) == expected
    assert world * tokens * expected == effective


def test_a_split_that_is_not_whole_is_refused_with_the_arithmetic():
    with pytest.raises(launch.LaunchError, match=r"32768 / 12288 = 2\.66667"):
        launch.split_batch(32768, 3, 4096)
    with pytest.raises(launch.LaunchError, match="--max-tokens values that split it on 2 device"):
        launch.split_batch(32768, 2, 3000)


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str):
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


def dry_run(*args: str, check: bool = True) -> Result:
    """train.sh --dry-run, in this process (the shell wrapper itself is tested once, below)."""
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = train_cli.train_main([*args, "--dry-run"])
    assert code == 0 or not check, err.getvalue()
    return Result(code, out.getvalue(), err.getvalue())


def test_train_sh_prints_the_command_it_would_run():
    out = run([*TRAIN, "iwslt14_de_en", "transformer_relpos_iwslt_de_en", "--data", "/d", "--dry-run"]).stdout
    assert "4096 tokens/update = 1 CPU process(s) x 4096 tokens x update_freq 1" in out
    assert "fairseq-hydra-train --config-dir" in out and "arch=transformer_relpos_iwslt_de_en" in out


def test_gpu_single_node_leaves_spawning_to_fairseq():
    out = dry_run("wmt14_en_de_base", "transformer_gaussian_local_wmt_en_de", "--data", "/d", "--gpus", "4").stdout
    assert "32768 tokens/update = 4 GPU(s) x 4096 tokens x update_freq 2" in out
    command = out.strip().splitlines()[-1]
    assert "distributed_training.distributed_world_size=4" in command and "'optimization.update_freq=[2]'" in command
    assert "common.cpu=true" not in command and "distributed_rank" not in command
    assert "benchmark=wmt14_en_de_base" in command and "task.data=/d" in command


def test_multi_node_passes_fairseqs_distributed_options():
    out = dry_run("fan2021_wmt14_en_de_big", "transformer_dman_wmt_en_de_big", "--data", "/d", "--gpus", "8",
                  "--nodes", "2", "--node-rank", "1", "--master-addr", "10.1.2.3", "--master-port", "9218").stdout
    assert "524288 tokens/update = 16 GPU(s) x 4096 tokens x update_freq 8" in out
    command = out.strip().splitlines()[-1]
    for part in ("distributed_training.distributed_world_size=16", "distributed_training.distributed_rank=8",
                 "distributed_training.distributed_init_method=tcp://10.1.2.3:9218"):
        assert part in command


def test_cpu_processes_are_one_gloo_rank_each():
    out = dry_run("iwslt14_de_en", "transformer_iwslt_de_en", "--data", "/d", "--cpu-procs", "2",
                  "--max-tokens", "2048", "model.dropout=0.2").stdout
    assert "4096 tokens/update = 2 CPU process(s) x 2048 tokens x update_freq 1" in out
    ranks = [line for line in out.splitlines() if line.startswith("[rank]")]
    assert len(ranks) == 2
    for rank, command in enumerate(ranks):
        for part in ("distributed_training.distributed_no_spawn=true", "distributed_training.distributed_backend=gloo",
                     f"distributed_training.distributed_rank={rank}", "common.cpu=true", "++model.dropout=0.2",
                     "'optimization.update_freq=[1]'", "dataset.max_tokens=2048"):
            assert part in command


def test_cpu_trainings_get_the_allocator_settings_unless_the_user_chose(tmp_path, monkeypatch):
    """A CPU training's processes see CPU_ALLOCATOR_ENV (and one thread each when several ranks share the cores);
    one MALLOC_ setting of the user's means the user chose, and none is added; a GPU training is left alone."""
    from fairseq_localness.experiments import processes

    def child_env(**kwargs) -> dict:
        out = tmp_path / "env.txt"
        command = [sys.executable, "-c", f"import json, os; open({str(out)!r}, 'w').write(json.dumps(dict(os.environ)))"]
        assert processes.run_processes([command], **kwargs) == 0
        import json

        return json.loads(out.read_text())

    for name in processes.CPU_ALLOCATOR_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("OMP_NUM_THREADS", "4")
    env = child_env(cpu_workers=False, cpu=True)
    assert {name: env[name] for name in processes.CPU_ALLOCATOR_ENV} == {
        "MALLOC_MMAP_THRESHOLD_": "33554432", "MALLOC_TOP_PAD_": "536870912", "MALLOC_TRIM_THRESHOLD_": "4294967296"}
    assert env["OMP_NUM_THREADS"] == "4"  # one process keeps the threads it was given
    assert child_env(cpu_workers=True)["OMP_NUM_THREADS"] == "1"
    assert not set(processes.CPU_ALLOCATOR_ENV) & set(child_env(cpu_workers=False))  # a GPU training
    monkeypatch.setenv("MALLOC_TOP_PAD_", "0")
    env = child_env(cpu_workers=False, cpu=True)
    assert env["MALLOC_TOP_PAD_"] == "0" and "MALLOC_MMAP_THRESHOLD_" not in env
    assert processes.allocator_line(env) == "CPU allocator: MALLOC_TOP_PAD_=0"


@pytest.mark.parametrize("args,message", [
    (["wmt14_en_de_base", "transformer_nope", "--data", "/d"], "no config for architecture 'transformer_nope'"),
    (["wmt_nope", "transformer", "--data", "/d"], "unknown benchmark 'wmt_nope'"),
    (["wmt14_en_de_base", "transformer", "--data", "/d", "--gpus", "3"], "is not a whole number"),
    (["wmt14_en_de_base", "transformer", "--data", "/d", "optimization.update_freq=[2]"], "is computed"),
    (["wmt14_en_de_base", "transformer"], "--data"),
    (["wmt14_en_de_base", "transformer", "--data", "/d", "--gpus", "8", "--nodes", "2"], "--master-port"),
])
def test_bad_requests_fail_with_a_clear_message(args, message):
    proc = dry_run(*args, check=False)
    assert proc.returncode == 2 and message in proc.stderr


def final_loss(tiny_data_bin: Path, save_dir: Path, extra) -> tuple:
    out = run([*TRAIN, "sample_zh_en_tiny", "transformer_gaussian_local", "--data", str(tiny_data_bin),
         "--save-dir", str(save_dir), "--max-tokens", "300", "--effective-tokens", "600", *extra,
         "task.source_lang=src", "task.target_lang=tgt", "model.dropout=0", "optimization.max_update=6",
         "lr_scheduler.warmup_updates=3", "checkpoint.save_interval_updates=0", "dataset.num_workers=0",
         "common.log_interval=1"], env={"OMP_NUM_THREADS": "1"}).stdout
    loss = launch.final_train_loss(save_dir)
    assert loss is not None, (save_dir / "hydra_train.log").read_text()[-2000:]
    return loss, out


def test_two_cpu_processes_match_one_process_with_update_freq_2(tiny_data_bin, tmp_path):
    """2 gloo ranks x 300 tokens and 1 process x 300 tokens x update_freq 2 see the same batches per update;
    with dropout 0 the logged training loss after 6 updates must agree."""
    two, two_out = final_loss(tiny_data_bin, tmp_path / "two", ["--cpu-procs", "2"])
    one, one_out = final_loss(tiny_data_bin, tmp_path / "one", [])
    assert "600 tokens/update = 2 CPU process(s) x 300 tokens x update_freq 1" in two_out
    assert "600 tokens/update = 1 CPU process(s) x 300 tokens x update_freq 2" in one_out
    assert two == pytest.approx(one, abs=2e-3)
    assert (tmp_path / "two" / "checkpoint_last.pt").exists()


def test_compat_lets_fairseqs_ddp_wrap_a_cpu_model(tmp_path):
    """fairseq passes device_ids=[device_id] to PyTorch's DDP, which PyTorch refuses for a CPU module;
    fairseq_localness.compat drops them on the CPU (a fresh process: it initialises torch.distributed)."""
    script = f"""
import torch, torch.distributed as dist
dist.init_process_group("gloo", init_method="file://{tmp_path}/store", world_size=1, rank=0)
from torch.nn.parallel import DistributedDataParallel
try:
    DistributedDataParallel(torch.nn.Linear(2, 2), device_ids=[0], output_device=0)
    raise SystemExit("PyTorch accepted device_ids for a CPU module: the compat fix may be unnecessary")
except ValueError:
    pass
import fairseq_localness  # noqa: F401
from fairseq.models import distributed_fairseq_model
wrapped = distributed_fairseq_model.DistributedDataParallel(torch.nn.Linear(2, 2), device_ids=[0], output_device=0)
assert wrapped.device_ids is None
print("ok")
"""
    assert run([sys.executable, "-c", script]).stdout.strip().endswith("ok")


def test_a_max_tokens_override_changes_the_device_batch_not_the_papers():
    out = dry_run("wmt14_en_de_base", "transformer_wmt_en_de", "--data", "/d", "dataset.max_tokens=2048").stdout
    assert "32768 tokens/update = 1 CPU process(s) x 2048 tokens x update_freq 16" in out


def test_max_tokens_override_reads_the_last_one_as_hydra_does():
    from fairseq_localness.experiments.launch import max_tokens_override

    assert max_tokens_override(["common.seed=2", "dataset.max_tokens=512", "dataset.max_tokens=1024"]) == 1024
    assert max_tokens_override(["common.seed=2", "dataset.max_tokens_valid=512"]) is None
    assert max_tokens_override([]) is None


@pytest.mark.parametrize("argv", [
    ["wmt14_en_de_base", "transformer_wmt_en_de", "--data", "/d/data-bin", "--save-dir", "/w/ckpt", "--cpu-procs", "2",
     "optimization.max_update=3", "common.seed=2"],
    ["wmt14_en_de_base", "transformer_wmt_en_de", "--data", "/d", "--gpus", "8", "--nodes", "2", "--node-rank", "1",
     "--master-addr", "10.0.0.1", "--master-port", "29500", "--max-tokens", "2048", "--effective-tokens", "65536",
     "common.fp16=true"],
])
def test_a_launch_renders_the_train_sh_arguments_it_was_parsed_from(argv):
    """reproduce, the comparison and Slurm build a Launch directly and print or run its train.sh command: that
    command must describe the same launch."""
    _, parsed = train_cli.parse_train(argv)
    assert parsed.train_sh_args() == argv
    _, again = train_cli.parse_train(parsed.train_sh_args())
    assert again == parsed


def test_precision_flags_become_the_overrides_fairseq_hydra_train_reads():
    assert launch.precision_overrides(["--fp16", "--bf16", "model.dropout=0.1"]) == [
        "common.fp16=true", "common.bf16=true", "model.dropout=0.1"]


def test_a_streamed_log_holds_each_line_as_soon_as_it_is_read(tmp_path):
    """A training's train.log is written line by line: a line the child printed is in the file while the child
    still runs, so a grid killed mid-run (no chance to flush) keeps every validation line it had read."""
    from fairseq_localness.experiments import processes

    log = tmp_path / "train.log"
    command = [sys.executable, "-c", "import time; print('epoch 012 | valid on', flush=True); time.sleep(60)"]
    seen = []

    def on_line(line: str) -> None:
        seen.append(log.read_text())
        raise KeyboardInterrupt  # stops the child as Ctrl-C would, before it exits by itself

    with pytest.raises(KeyboardInterrupt):
        processes.stream(command, log, dict(os.environ), on_line)
    assert len(seen) == 1 and seen[0].endswith("epoch 012 | valid on\n")
