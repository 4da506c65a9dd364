"""The failures a new user meets in the first hour end in one sentence that names the cause, with exit status 2
and no traceback: fp16 on the CPU, --gpus beyond the visible devices, a misspelt Hydra override, a bad locality
option under fairseq-train; docs/training.md's Troubleshooting quotes fairseq-generate's error without --user-dir."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path
from typing import List

import pytest

from fairseq_localness.attention import LocalityConfigError
from fairseq_localness.experiments import launch, train_cli
from localness_testing import BIN, REPO, build_model, run, train_command

TRAIN = ["bash", str(REPO / "scripts" / "train.sh")]
TINY_RUN = ["sample_zh_en_tiny", "transformer_gaussian_local"]


def train_sh(*args: str, env=None):
    """scripts/train.sh in a subprocess (what a user sees: stderr and the exit status)."""
    return run([*TRAIN, *args], check=False, env=env)


def in_process(*args: str):
    """train.sh's main in this process: (exit status, stdout, stderr)."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = train_cli.train_main(list(args))
    return code, out.getvalue(), err.getvalue()


def assert_one_clear_error(code: int, stderr: str, *named: str) -> None:
    assert code == 2, stderr
    assert "Traceback" not in stderr, stderr
    errors = [line for line in stderr.splitlines() if "error:" in line]
    assert len(errors) == 1, stderr
    for text in named:
        assert text in errors[0], errors[0]


# --- 1. fp16 on the CPU --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("flag,key", [
    ("common.fp16=true", "common.fp16=true"),
    ("--fp16", "common.fp16=true (--fp16)"),  # fairseq-train's flag is taken as its override
    ("common.amp=true", "common.amp=true"),
])
def test_fp16_on_the_cpu_is_refused_before_training(tmp_path, flag, key):
    proc = train_sh(*TINY_RUN, "--data", "/d", "--save-dir", str(tmp_path / "run"), flag, "--dry-run")
    assert_one_clear_error(proc.returncode, proc.stderr, key, "needs a CUDA GPU", "common.bf16=true")
    assert "fairseq-hydra-train" not in proc.stdout  # nothing would be started


def test_memory_efficient_fp16_on_the_cpu_is_refused_too(tmp_path):
    code, _, err = in_process(*TINY_RUN, "--data", "/d", "--save-dir", str(tmp_path),
                              "common.memory_efficient_fp16=true", "--dry-run")
    assert_one_clear_error(code, err, "common.memory_efficient_fp16=true", "needs a CUDA GPU")


def test_fp16_with_gpus_and_bf16_on_the_cpu_are_accepted(tmp_path):
    code, out, err = in_process(*TINY_RUN, "--data", "/d", "--save-dir", str(tmp_path), "--gpus", "1",
                                "common.fp16=true", "--dry-run")
    assert code == 0 and "common.fp16=true" in out, err
    code, out, err = in_process(*TINY_RUN, "--data", "/d", "--save-dir", str(tmp_path), "--bf16", "--dry-run")
    assert code == 0 and "common.bf16=true" in out and "common.cpu=true" in out, err


@pytest.fixture(scope="module")
def bf16_run(tiny_data_bin, tmp_path_factory) -> Path:
    """2 updates of the tiny quickstart model through train.sh with common.bf16=true on the CPU (its directory)."""
    save_dir = tmp_path_factory.mktemp("bf16")
    out = run([*TRAIN, *TINY_RUN, "--data", str(tiny_data_bin), "--save-dir", str(save_dir), "--max-tokens", "300",
               "--effective-tokens", "600", "common.bf16=true", "task.source_lang=src", "task.target_lang=tgt",
               "optimization.max_update=2", "checkpoint.save_interval_updates=0", "dataset.num_workers=0",
               "common.log_interval=1"]).stdout
    assert "common.bf16=true" in out and "common.cpu=true" in out
    return save_dir


def test_the_suggested_bf16_trains_on_the_cpu(bf16_run):
    """The fp16 message suggests common.bf16=true on the CPU: fairseq 0.12 trains there (the model in bfloat16,
    fp32 master weights in its FP16Optimizer) through train.sh."""
    log = (bf16_run / "hydra_train.log").read_text()
    assert "'bf16': True" in log and "'cpu': True" in log and "num_updates=2" in log, log[-2000:]
    assert launch.final_train_loss(bf16_run) is not None
    assert (bf16_run / "checkpoint_last.pt").exists()


def test_a_cpu_training_is_deterministic(tiny_data_bin, tmp_path):
    """The README's claim: on the CPU, the quickstart's training is reproducible. Two trainings of its model
    (dropout 0.1, the Gaussian's learned predictors) in fresh directories, through train.sh, end with
    bit-identical parameters; a third with another seed does not, so the comparison can fail. They run on two
    threads, as the quickstart's single process does on a 2-core machine (it leaves OMP_NUM_THREADS unset)."""
    import torch

    def train(name: str, seed: int) -> dict:
        save_dir = tmp_path / name
        run([*TRAIN, *TINY_RUN, "--data", str(tiny_data_bin), "--save-dir", str(save_dir), "--max-tokens", "300",
             "--effective-tokens", "600", "task.source_lang=src", "task.target_lang=tgt", f"common.seed={seed}",
             "optimization.max_update=4", "checkpoint.save_interval_updates=0", "dataset.num_workers=0"],
            env={"OMP_NUM_THREADS": "2"})
        return torch.load(save_dir / "checkpoint_last.pt", map_location="cpu")["model"]

    first, second, other = train("a", 1), train("b", 1), train("c", 2)
    assert first.keys() == second.keys()
    assert any(k.endswith("u_p.weight") for k in first), list(first)  # the Gaussian's U_p (Eq. 10) is trained too
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert not all(torch.equal(first[k], other[k]) for k in first)


def test_data_that_is_not_binarized_is_refused_before_anything_is_written(tmp_path):
    """A missing --data directory, one without fairseq-preprocess's dictionaries, or the same given as a
    task.data override: one error naming the flag and the directory, and no save directory (Hydra writes its
    logs there before fairseq would fail). A dry run only prints the commands, so it does not check."""
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "train.de").write_text("raw text, not binarized\n")
    cases = [(["--data", str(tmp_path / "missing")], ("--data", "missing: no such directory")),
             (["--data", str(empty)], ("--data", "empty: no fairseq-preprocess dictionary there")),
             ([f"task.data={empty}"], ("task.data", "empty: no fairseq-preprocess dictionary")),
             ]
    for number, (given, named) in enumerate(cases):
        save = tmp_path / f"save{number}"
        code, _, err = in_process(*TINY_RUN, *given, "--save-dir", str(save))
        assert_one_clear_error(code, err, *named)
        assert not save.exists()
    code, out, _ = in_process(*TINY_RUN, "--data", str(tmp_path / "missing"), "--save-dir", str(tmp_path / "dry"),
                              "--dry-run")
    assert code == 0 and "fairseq-hydra-train" in out and not (tmp_path / "dry").exists()


# --- 2. --gpus beyond the visible devices --------------------------------------------------------------------------

def test_more_gpus_than_visible_is_refused_before_the_batch_arithmetic(tmp_path):
    # no device is visible, whatever the machine; --gpus 2 on the tiny recipe would fail the batch split instead
    for gpus in ("1", "2"):
        proc = train_sh(*TINY_RUN, "--data", "/nonexistent", "--save-dir", str(tmp_path / gpus), "--gpus", gpus,
                        env={"CUDA_VISIBLE_DEVICES": ""})
        assert_one_clear_error(proc.returncode, proc.stderr, f"--gpus {gpus}: only 0 CUDA device(s) visible",
                               "without --gpus")
        assert not (tmp_path / gpus).exists()


def test_device_count_is_not_checked_for_a_dry_run_or_a_cluster_submission(tmp_path, monkeypatch):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: 0)
    code, out, err = in_process("wmt14_en_de_base", "transformer_wmt_en_de", "--data", "/d", "--save-dir",
                                str(tmp_path), "--gpus", "4", "--dry-run")
    assert code == 0 and "4 GPU(s)" in out, err
    code, out, err = in_process("wmt14_en_de_base", "transformer_wmt_en_de", "--data", "/d", "--save-dir",
                                str(tmp_path), "--slurm", "--partition", "gpu", "--gpus-per-node", "8", "--time", "60",
                                "--dry-run")
    assert code == 0 and "#SBATCH" in out, err


@pytest.mark.parametrize("visible,requested,message", [
    (1, 2, "--gpus 2: only 1 CUDA device(s) visible"),
    (0, 1, "--gpus 1: only 0 CUDA device(s) visible"),
])
def test_check_devices_counts_the_visible_devices(monkeypatch, visible, requested, message):
    import torch

    monkeypatch.setattr(torch.cuda, "device_count", lambda: visible)
    lau = launch.Launch(benchmark="wmt14_en_de_base", arch="transformer", data="/d", gpus=requested)
    with pytest.raises(launch.LaunchError, match=re.escape(message)):
        lau.check_devices()
    lau.gpus = visible or 0
    lau.check_devices()  # as many as are visible (or the CPU): fine


# --- 3. misspelt Hydra overrides -----------------------------------------------------------------------------------

@pytest.mark.parametrize("override,suggestion", [
    ("optimisation.max_update=1", "optimization.max_update"),
    ("optimization.max_updat=1", "optimization.max_update"),
])
def test_a_misspelt_key_is_caught_by_the_dry_run_with_the_closest_key(tmp_path, override, suggestion):
    proc = train_sh(*TINY_RUN, "--data", "/d", "--save-dir", str(tmp_path), override, "--dry-run")
    key = override.split("=")[0]
    assert_one_clear_error(proc.returncode, proc.stderr, f"no config key {key!r}", f"did you mean {suggestion!r}")
    assert "+" + key not in proc.stderr  # not Hydra's advice to append the misspelt key


@pytest.mark.parametrize("override,named", [
    ("model.dropot=0.1", ["model.dropot=0.1", "did you mean 'model.dropout'"]),
    ("optimization.max_update=abc", ["optimization.max_update=abc", "could not be converted to Integer"]),
    ("model.gaussian_layers=7", ["--gaussian-layers", "out of range", "the model has 3 layers"]),
    ("model.locality_methods=gausian", ["unknown locality method 'gausian'"]),
])
def test_bad_values_and_model_keys_are_named(tmp_path, override, named):
    code, _, err = in_process(*TINY_RUN, "--data", "/d", "--save-dir", str(tmp_path), override, "--dry-run")
    assert_one_clear_error(code, err, *named)


def test_correct_overrides_still_pass_the_check(tmp_path):
    code, out, err = in_process(*TINY_RUN, "--data", "/d", "--save-dir", str(tmp_path), "model.dropout=0.2",
                                "model.gaussian_layers=1-2", "task.source_lang=src", "common.seed=3",
                                "optimization.max_update=10", "--dry-run")
    assert code == 0 and "++model.gaussian_layers=1-2" in out, err


# --- 4. a bad locality option under fairseq-train ------------------------------------------------------------------

def test_fairseq_train_reports_a_bad_locality_option_without_a_traceback(tiny_data_bin, tmp_path):
    proc = run(train_command(tiny_data_bin, tmp_path, "transformer_gaussian_local", ["--gaussian-layers", "7", "--cpu"],
                             updates=1), check=False)
    assert_one_clear_error(proc.returncode, proc.stderr,
                           "fairseq-train: error: --gaussian-layers: layer(s) [7] out of range")
    assert "Traceback" not in proc.stdout


def test_the_error_stays_an_exception_outside_fairseqs_commands(tiny_data_bin):
    """Called from Python (tests, notebooks), building the model raises LocalityConfigError as before."""
    with pytest.raises(LocalityConfigError, match="unknown locality method 'gausian'"):
        build_model("transformer_gaussian_local", tiny_data_bin, {"locality_methods": "gausian"})


# --- 5. fairseq-generate without --user-dir ------------------------------------------------------------------------

def troubleshooting() -> str:
    return (REPO / "docs" / "training.md").read_text().split("## Troubleshooting", 1)[1]


def generate_without_the_plugin(data_bin: Path, checkpoint: Path) -> List[str]:
    return [str(BIN / "fairseq-generate"), str(data_bin), "--path", str(checkpoint), "--beam", "2", "--max-len-b", "5",
            "--cpu"]


@pytest.mark.parametrize("trained_by,quoted", [
    ("train.sh", ['KeyError: "\'encoder_layers\'"']),
    ("fairseq-train", ["_pickle.UnpicklingError: Weights only load failed",
                       "Unsupported global: GLOBAL argparse.Namespace"]),
])
def test_troubleshooting_quotes_fairseq_generates_error_without_the_plugin(trained_by, quoted, tiny_data_bin, bf16_run,
                                                                           tmp_path):
    """docs/training.md names the error fairseq-generate really gives on a plugin checkpoint without --user-dir
    (a fairseq-hydra-train checkpoint, or a fairseq-train one holding an argparse.Namespace), and the fix works."""
    section = troubleshooting()
    assert "--user-dir $(fairseq-localness-dir)" in section
    if trained_by == "train.sh":
        checkpoint = bf16_run / "checkpoint_last.pt"
    else:
        run(train_command(tiny_data_bin, tmp_path, "transformer_gaussian_local", ["--cpu"], updates=1))
        checkpoint = tmp_path / "checkpoint_last.pt"
    proc = run(generate_without_the_plugin(tiny_data_bin, checkpoint), check=False)
    assert proc.returncode != 0
    for text in quoted:
        assert text in section, text
        assert text in proc.stderr, proc.stderr[-1500:]
    user_dir = run([str(BIN / "fairseq-localness-dir")]).stdout.strip()
    fixed = run([*generate_without_the_plugin(tiny_data_bin, checkpoint), "--user-dir", user_dir])
    assert "BLEU4" in fixed.stdout


def test_docs_name_the_launchers_messages():
    section = troubleshooting()
    for text in ("needs a CUDA GPU", "CUDA device(s) visible", "no config key", "did you mean"):
        assert text in section, text

