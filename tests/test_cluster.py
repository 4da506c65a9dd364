"""Cluster runs without a cluster: the sbatch files and submitit parameters of 1x1, 1x8 and 4x8 GPU jobs,
the per-node commands, job states, and one real job through submitit's LocalExecutor (a tiny table row
trained, preempted, requeued, resumed, evaluated by a dependent job and collected by reproduce)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

import pytest

from fairseq_localness.experiments import cluster, launch, reproduce, train_cli
from fairseq_localness.experiments.cluster_jobs import TrainJob

pytest.importorskip("submitit")


def call(main, *args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


def sbatch_fields(script: str) -> dict:
    """{option: value} of the '#SBATCH --option=value' lines."""
    fields = {}
    for line in script.splitlines():
        match = re.fullmatch(r"#SBATCH --([\w-]+)(?:=(.*))?", line)
        if match:
            fields[match.group(1)] = match.group(2) if match.group(2) is not None else True
    return fields


@pytest.mark.parametrize("text,minutes", [("90", 90), ("30:30", 31), ("48:00:00", 2880), ("2-00:00:00", 2880),
                                          ("1-12", 2160), ("0-00:05", 5)])
def test_slurm_time_formats_in_minutes(text, minutes):
    assert cluster.parse_time(text) == minutes


def test_bad_time_and_extra_options_are_refused_with_the_flag():
    with pytest.raises(launch.LaunchError, match="--time '2 days'"):
        cluster.parse_time("2 days")
    with pytest.raises(launch.LaunchError, match="--sbatch-extra '=x'"):
        cluster.parse_extra(["=x"])
    assert cluster.parse_extra(["qos=high", "--mail_type=END", "exclusive"]) == \
        {"qos": "high", "mail-type": "END", "exclusive": True}


# benchmark, arch, nodes, GPUs per node, --max-tokens, update_freq worked out by hand:
#   wmt14_en_de_base is 32768 tokens/update (4096 x 8); fan2021_wmt14_en_de_big 524288 (4096 x 128)
JOBS = [
    ("wmt14_en_de_base", "transformer_wmt_en_de", 1, 1, None, 8),  # 32768 / (1 x 4096)
    ("wmt14_en_de_base", "transformer_gaussian_local_wmt_en_de", 1, 8, None, 1),  # 32768 / (8 x 4096)
    ("fan2021_wmt14_en_de_big", "transformer_dman_wmt_en_de_big", 4, 8, None, 4),  # 524288 / (32 x 4096)
    ("wmt14_en_de_base", "transformer_wmt_en_de", 4, 8, 1024, 1),  # 32768 / (32 x 1024)
]


@pytest.mark.parametrize("benchmark,arch,nodes,gpus,max_tokens,update_freq", JOBS)
def test_sbatch_file_of_a_training_job_field_by_field(tmp_path, benchmark, arch, nodes, gpus, max_tokens, update_freq):
    args = [benchmark, arch, "--data", "/d", "--save-dir", str(tmp_path / "run"), "--slurm", "--partition", "gpu",
            "--nodes", str(nodes), "--gpus-per-node", str(gpus), "--time", "2-00:00:00", "--account", "nmt",
            "--constraint", "a100", "--sbatch-extra", "qos=high", "--slurm-setup", "module load cuda", "--dry-run"]
    args += ["--max-tokens", str(max_tokens)] if max_tokens else []
    code, out, err = call(train_cli.train_main, *args)
    assert code == 0, err
    tokens = max_tokens or 4096
    assert f"= {nodes * gpus} GPU(s) x {tokens} tokens x update_freq {update_freq}" in out
    fields = sbatch_fields(out)
    folder = tmp_path / "run" / "slurm"
    assert fields == {
        "job-name": f"{benchmark}.{arch}", "partition": "gpu", "account": "nmt", "constraint": "a100", "qos": "high",
        "nodes": str(nodes), "ntasks-per-node": "1", "gpus-per-node": str(gpus), "cpus-per-task": str(4 * gpus),
        "time": "2880", "signal": "USR2@120", "open-mode": "append", "wckey": "submitit",
        "output": f"{folder}/%j_0_log.out", "error": f"{folder}/%j_0_log.err",
    }
    assert "\nmodule load cuda\n" in out
    srun = next(line for line in out.splitlines() if line.startswith("srun "))
    assert srun.endswith(f"-m submitit.core._submit {folder}") and "--unbuffered" in srun


@pytest.mark.parametrize("benchmark,arch,nodes,gpus,max_tokens,update_freq", JOBS)
def test_each_node_of_a_job_runs_its_rank_with_the_papers_batch(monkeypatch, benchmark, arch, nodes, gpus,
                                                                   max_tokens, update_freq):
    """The job function on node 2 (or the only node) of Slurm job 1234 with nodes gpu[01-04]."""
    import submitit

    lau = launch.Launch(benchmark=benchmark, arch=arch, data="/d", gpus=gpus, nodes=nodes, master_port=0,
                        max_tokens=max_tokens)
    lau.validate()
    plan = lau.plan()
    assert plan["update_freq"] == update_freq
    node = 2 if nodes > 1 else 0
    for key, value in {"SUBMITIT_EXECUTOR": "slurm", "SLURM_JOB_ID": "1234", "SLURM_NODEID": str(node),
                       "SLURM_JOB_NUM_NODES": str(nodes), "SLURM_JOB_NODELIST": "gpu[01-04]",
                       "SLURM_PROCID": str(node), "SLURM_NTASKS": str(nodes), "SLURM_LOCALID": "0"}.items():
        monkeypatch.setenv(key, value)
    (command,) = TrainJob(lau, plan).node_launch(submitit.JobEnvironment()).commands(plan)
    assert f"optimization.update_freq=[{update_freq}]" in command
    assert f"dataset.max_tokens={max_tokens or 4096}" in command
    assert f"distributed_training.distributed_world_size={nodes * gpus}" in command
    if nodes > 1:
        assert f"distributed_training.distributed_rank={2 * gpus}" in command
        # node 0's host, and a port from the job id: 20000 + 1234 % 20000
        assert "distributed_training.distributed_init_method=tcp://gpu01:21234" in command
    else:
        assert not any("distributed_rank" in c or "init_method" in c for c in command)


def test_a_training_job_refuses_a_save_dir_another_process_trains_into(monkeypatch, tmp_path):
    """Node 0 of a job holds its save directory's training lock while it trains (a job requeued while its
    predecessor still stops waits LOCK_PATIENCE_S for it); held by another process, the job fails naming that
    process, before fairseq starts."""
    from fairseq_localness.experiments import cluster_jobs
    from localness_testing import hold_lock

    save_dir = tmp_path / "checkpoints"
    lau = launch.Launch(benchmark="wmt14_en_de_base", arch="transformer_wmt_en_de", data="/d", gpus=1,
                        master_port=0, save_dir=str(save_dir))
    lau.validate()
    for key, value in {"SUBMITIT_EXECUTOR": "slurm", "SLURM_JOB_ID": "1234", "SLURM_NODEID": "0",
                       "SLURM_JOB_NUM_NODES": "1", "SLURM_JOB_NODELIST": "gpu01", "SLURM_PROCID": "0",
                       "SLURM_NTASKS": "1", "SLURM_LOCALID": "0"}.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setattr(cluster_jobs, "LOCK_PATIENCE_S", 1.0)
    started = []

    class Started(Exception):
        pass

    def start(self, commands, env=None, pass_fds=()):  # in place of fairseq: what it would have been given
        started.append((pass_fds, (save_dir / ".training.lock").read_text()))
        raise Started

    monkeypatch.setattr(TrainJob, "_run", start)
    holder = hold_lock(save_dir)
    try:
        with pytest.raises(RuntimeError, match=f"is being trained into by pid {holder.pid} "):
            with contextlib.redirect_stdout(io.StringIO()):
                TrainJob(lau, lau.plan())()
    finally:
        holder.kill()
        holder.wait()
    assert started == []  # fairseq never started
    with pytest.raises(Started), contextlib.redirect_stdout(io.StringIO()):
        TrainJob(lau, lau.plan())()
    ((fds, text),) = started
    assert len(fds) == 1 and text.startswith(f"pid {os.getpid()} ")  # held here, and passed to the training


def test_several_nodes_without_slurm_print_every_nodes_command():
    code, out, err = call(train_cli.train_main, "wmt14_en_de_base", "transformer_wmt_en_de", "--data", "/d",
                          "--gpus", "8", "--nodes", "2", "--max-tokens", "2048", "--master-addr", "10.0.0.1",
                          "--master-port", "29500", "--dry-run")
    assert code == 0, err
    assert "32768 tokens/update = 16 GPU(s) x 2048 tokens x update_freq 1" in out
    nodes = [line for line in out.splitlines() if line.startswith("[node ")]
    assert len(nodes) == 2
    for rank, line in enumerate(nodes):
        assert line.startswith(f"[node {rank}] ")
        for part in ("distributed_training.distributed_world_size=16", f"distributed_training.distributed_rank={8 * rank}",
                     "distributed_training.distributed_init_method=tcp://10.0.0.1:29500", "'optimization.update_freq=[1]'"):
            assert part in line
    assert nodes[1].endswith("/node1") and "hydra.run.dir" not in nodes[0]  # node 0 logs beside the checkpoints
    same = [line.split("] ", 1)[1].replace(f"distributed_rank={8 * rank}", "RANK").split(" hydra.run.dir")[0]
            for rank, line in enumerate(nodes)]
    assert same[0] == same[1]  # the same command on every node but for the rank (and its log dir)


def test_hydra_launcher_command_keeps_the_batch_and_passes_the_resources():
    code, out, err = call(train_cli.train_main, "fan2021_wmt14_en_de_big", "transformer_wmt_en_de_big", "--data", "/d",
                          "--save-dir", "/s", "--slurm", "--hydra-launcher", "--nodes", "4", "--gpus-per-node", "8",
                          "--time", "24:00:00", "--partition", "gpu", "--sbatch-extra", "qos=high", "--dry-run")
    assert code == 0, err
    command = out.strip().splitlines()[-1]
    for part in ("--multirun", "hydra/launcher=localness_slurm", "hydra.launcher.nodes=4", "hydra.launcher.gpus_per_node=8",
                 "hydra.launcher.timeout_min=1440", "hydra.launcher.partition=gpu", "hydra.launcher.cpus_per_task=32",
                 "+hydra.launcher.additional_parameters.qos=high", "'optimization.update_freq=[4]'",
                 "distributed_training.distributed_world_size=32", "distributed_training.distributed_port=29500",
                 "hydra.sweep.dir=/s", "hydra.sweep.subdir=."):
        assert part in command


def test_hydra_launcher_config_composes_with_our_configs():
    pytest.importorskip("hydra_plugins.hydra_submitit_launcher")
    cfg = launch.compose("wmt14_en_de_base", "transformer_wmt_en_de",
                         ["checkpoint.save_dir=/s", "hydra/launcher=localness_slurm",
                          "hydra.launcher.nodes=4", "hydra.launcher.gpus_per_node=8"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert (launcher.nodes, launcher.gpus_per_node, launcher.tasks_per_node) == (4, 8, 1)
    assert (launcher.max_num_timeout, launcher.signal_delay_s) == (10, 120)
    assert launcher.submitit_folder == "/s/slurm/%j"


@pytest.mark.parametrize("args,message", [
    (["--slurm", "--gpus", "8", "--partition", "gpu"], "--slurm needs --time"),
    (["--slurm", "--time", "60"], "give --gpus-per-node"),
    (["--slurm", "--gpus", "8", "--time", "60"], "--local-executor runs the same job here"),  # no srun here
    (["--local-executor", "--time", "10", "--data", "/d"], "--data /d: no such directory"),  # before a job queues
])
def test_slurm_requests_fail_with_a_clear_message(tmp_path, tiny_data_bin, args, message):
    if message.startswith("--local") and __import__("shutil").which("srun"):
        pytest.skip("srun exists on this machine")
    code, _, err = call(train_cli.train_main, "wmt14_en_de_base", "transformer_wmt_en_de", "--data",
                        str(tiny_data_bin), "--save-dir", str(tmp_path / "save"), *args,
                        "task.source_lang=src", "task.target_lang=tgt")  # the tiny data-bin's languages
    assert code == 2 and message in err, err
    if "--data" in args:
        assert not (tmp_path / "save").exists()  # refused before the job's folder is made


def test_slurm_without_submitit_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setitem(sys.modules, "submitit", None)  # import submitit raises ImportError
    code, _, err = call(train_cli.train_main, "wmt14_en_de_base", "transformer_wmt_en_de", "--data", "/d",
                        "--save-dir", str(tmp_path), "--slurm", "--gpus", "8", "--time", "60")
    assert code == 2 and '[cluster]' in err and 'pip install -e ".[cluster]"' in err


@pytest.mark.parametrize("output,state,verdict", [
    ("RUNNING\n", "RUNNING", "active"), ("PENDING\n", "PENDING", "active"),
    ("CANCELLED by 1000\n", "CANCELLED", "failed"), ("TIMEOUT\n", "TIMEOUT", "failed"), ("", None, None),
])
def test_slurm_state_from_sacct(tmp_path, monkeypatch, output, state, verdict):
    assert cluster.parse_sacct(output) == state
    if verdict is None:
        return
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "sacct").write_text(f"#!/bin/sh\nprintf '{output}'\n")
    (fake / "sacct").chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake}:{os.environ['PATH']}")
    entry = {"job_id": "77", "executor": "slurm", "result": str(tmp_path / "none.pkl"), "stdout": "o", "stderr": "e"}
    assert cluster.job_state(entry)[0] == verdict


# --- one real job through submitit's LocalExecutor ------------------------------------------------------

TRAIN_ARGS = ("task.source_lang=src task.target_lang=tgt optimization.max_update=12 checkpoint.save_interval_updates=3 "
              "model.encoder_embed_dim=32 model.decoder_embed_dim=32 model.encoder_ffn_embed_dim=64 "
              "model.decoder_ffn_embed_dim=64 dataset.num_workers=0 common.log_interval=3")


def tiny_table(monkeypatch, tmp_path, tiny_data_bin):
    tables = reproduce.load_tables()
    tables["papers"]["tiny"] = {"citation": "test", "tables": {"1": {
        "caption": "tiny", "split": "test", "setting": "sample_zh_en_tiny",
        "rows": [{"id": "base", "label": "Base", "arch": "transformer"}]}}}
    monkeypatch.setattr(reproduce, "load_tables", lambda *a, **k: tables)
    (tmp_path / "data" / "sample_zh_en").mkdir(parents=True)
    (tmp_path / "data" / "sample_zh_en" / "data-bin").symlink_to(tiny_data_bin)
    return ["tiny", "1", "--work", str(tmp_path / "work"), "--data-root", str(tmp_path / "data"),
            "--train-args", TRAIN_ARGS]


def wait_until(condition, timeout_s: float, what: str):
    deadline = time.time() + timeout_s
    while not condition():
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.5)


def test_a_local_job_is_preempted_requeued_resumed_evaluated_and_collected(monkeypatch, tmp_path, tiny_data_bin):
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    table = tiny_table(monkeypatch, tmp_path, tiny_data_bin)
    code, out, err = call(reproduce.main, *table, "--local-executor", "--time", "10")
    assert code == 0, out + err
    run_dir = tmp_path / "work" / "tiny" / "table1" / "base"
    record = cluster.read_record(run_dir / cluster.RECORD_NAME)
    assert [e["role"] for e in record] == ["train", "evaluate"]
    train, evaluate = record
    assert f"SUBMITTED base: training job {train['job_id']}" in out
    assert evaluate["dependency"] == f"afterok:{train['job_id']}"
    assert re.search(r"\| Base \|.*\| training: running as local job", out)  # returned at once, table printed

    # preemption: submitit's signal to the job process once fairseq has saved a checkpoint
    checkpoints = run_dir / "checkpoints"
    wait_until(lambda: (checkpoints / "checkpoint_last.pt").exists(), 120, "the first checkpoint")
    controller = int(train["job_id"])
    task = int(Path(f"/proc/{controller}/task/{controller}/children").read_text().split()[0])
    os.kill(task, signal.SIGUSR2)
    wait_until(lambda: cluster.job_state(evaluate)[0] != "active", 240, "training and evaluation")

    log = (checkpoints / "hydra_train.log").read_text()
    resumed = re.findall(r"Loaded checkpoint .*checkpoint_last\.pt \(epoch \d+ @ (\d+) updates\)", log)
    assert resumed and int(resumed[-1]) >= 3, log[-3000:]  # the requeued job resumed, not restarted
    assert "resuming from checkpoint_last.pt" in Path(train["stdout"]).read_text()
    assert re.findall(r"num_updates (\d+)", log)[-1] == "12"
    assert cluster.job_state(train)[0] == "done" and cluster.job_state(evaluate)[0] == "done"

    # a later reproduce.sh in the same work dir collects (and trains nothing here)
    code, out, err = call(reproduce.main, *table)
    assert code == 0, out + err
    assert "DONE base" in out and "SUBMITTED" not in out
    table_json = json.loads((tmp_path / "work" / "tiny" / "table1.json").read_text())
    assert "done" in json.dumps(table_json)
    assert (run_dir / "eval-test" / "scores.json").exists()


@pytest.mark.parametrize("setting,arch,hours", [
    # 100000 updates x 32768 tokens / (1.28 steps/s x 4096 tokens per GPU) / 3600 s (Yang et al. 2019, Table 2)
    ("wmt14_en_de_base", "transformer_wmt_en_de", 100000 * 32768 / (1.28 * 4096) / 3600),  # 173.6
    ("wmt14_en_de_big", "transformer_wmt_en_de_big", 300000 * 32768 / (0.61 * 4096) / 3600),  # 1092.9
    # epoch-trained: Fan et al. (2021) Sec. 3.1.1's 80k updates x 12288 x 24 tokens at the base rate
    ("fan2021_wmt14_en_de_base", "transformer_wmt_en_de", 80000 * 294912 / (1.28 * 4096) / 3600),  # 1250
])
def test_gpu_hours_of_a_row(setting, arch, hours):
    from types import SimpleNamespace

    from fairseq_localness.experiments.cluster_tables import gpu_hours

    assert gpu_hours(SimpleNamespace(setting=setting, arch=arch))[3] == pytest.approx(hours)
    assert round(hours) in (174, 1093, 1250)


def fake_result(path: Path, outcome: str, value) -> str:
    import cloudpickle

    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(cloudpickle.dumps((outcome, value)))
    return str(path)


def test_a_cut_short_cluster_settings_file_is_named(monkeypatch, tmp_path, tiny_data_bin):
    """table1.cluster.json (written whole, but a user may edit it) that does not parse: one error naming it,
    no traceback; a plain reproduce.sh collects through it."""
    table = tiny_table(monkeypatch, tmp_path, tiny_data_bin)
    work = tmp_path / "work" / "tiny"
    work.mkdir(parents=True)
    for broken in ('{"time_min": 10, "exec', '{"no_such_option": 1}'):
        (work / "table1.cluster.json").write_text(broken)
        with pytest.raises(SystemExit) as refused:
            call(reproduce.main, *table)
        assert str(refused.value).startswith(f"reproduce.sh: error: {work / 'table1.cluster.json'}: not the cluster "
                                             "settings reproduce.sh writes")
    assert not (work / "table1").exists()


@pytest.mark.parametrize("train_ok,resubmitted", [(False, ["TRAIN base", "EVALUATE base"]), (True, ["EVALUATE base"])])
def test_collecting_lists_failed_rows_and_resubmits_them_on_request(monkeypatch, tmp_path, tiny_data_bin,
                                                                     train_ok, resubmitted):
    table = tiny_table(monkeypatch, tmp_path, tiny_data_bin)
    work = tmp_path / "work" / "tiny"
    (work).mkdir(parents=True)
    (work / "table1.cluster.json").write_text(json.dumps(cluster.SlurmOptions(time_min=10, executor="local").to_json()))
    run_dir, logs = work / "table1" / "base", work / "slurm" / "table1"
    entries = [{"role": "train", "job_id": "5", "executor": "local", "stdout": "o", "stderr": str(logs / "5_0_log.err"),
                "result": fake_result(logs / "5_0_result.pkl", "success" if train_ok else "error",
                                      {} if train_ok else "Traceback\nRuntimeError: training exited with code 1")},
               {"role": "evaluate", "job_id": "6", "executor": "local", "stdout": "o", "stderr": "e",
                "result": fake_result(logs / "6_0_result.pkl", "error", "Traceback\nRuntimeError: evaluation exited")}]
    for entry in entries:
        cluster.append_record(run_dir / cluster.RECORD_NAME, entry)

    code, out, err = call(reproduce.main, *table)  # collect only: nothing is submitted or trained
    assert code == 1, out + err
    stage = "TRAIN-FAILED base: training failed: job 5: RuntimeError: training exited with code 1" if not train_ok \
        else "EVAL-FAILED base: evaluation failed: job 6: RuntimeError: evaluation exited"
    assert stage in out and "SUBMITTED" not in out and "TRAIN base" not in out
    assert "(rerun with --resubmit-failed)" in (work / "table1.md").read_text()

    code, out, err = call(reproduce.main, *table, "--resubmit-failed", "--dry-run")
    assert code == 0, out + err
    assert [line.split(":")[0].split(" (")[0] for line in out.splitlines()
            if line.startswith(("TRAIN ", "EVALUATE "))] == resubmitted
