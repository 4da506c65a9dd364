"""A resumed training goes on as the uninterrupted one: ``--patience`` counts across a resume
(compat.resume_where_training_stopped; the plateau schedule's half of it:
tests/test_compare.py::test_the_plateau_schedule_resumes_at_its_halved_rate), and the resumed epochs train on the
uninterrupted training's batches, to the same weights (compat.batches_of_the_first_epoch).

With a learning rate of 0 the model never changes, so every validation loss equals the first: the first epoch
sets the best, and each later epoch adds one to fairseq's count of validations without improvement. With
``--patience 3`` an uninterrupted training stops after epoch 4. A training stopped after epoch 2 and resumed must
stop after epoch 4 too: two more epochs. Without the saved state fairseq took the resumed run's first validation
as the best and counted from zero: four more epochs, stopping after epoch 6.
"""

import re

import torch

import fairseq_localness  # noqa: F401  (allow-lists fairseq's checkpoint classes for torch.load)
from fairseq_localness.compat import RESUME_STATE
from localness_testing import run, train_command

FROZEN = ["--lr", "0", "--lr-scheduler", "fixed", "--patience", "3"]


def validated_epochs(output: str) -> list:
    """The epochs that ended in a validation, from fairseq-train's log."""
    return [int(e) for e in re.findall(r"epoch (\d+) \| valid on 'valid' subset", output)]


def train(data_bin, save_dir, max_epoch: int, flags=FROZEN) -> str:
    command = train_command(data_bin, save_dir, "transformer", [*flags, "--max-epoch", str(max_epoch)], updates=100000)
    proc = run(command)
    return proc.stdout + proc.stderr


def test_patience_counts_across_a_resume(tiny_data_bin, tmp_path):
    whole = train(tiny_data_bin, tmp_path / "whole", max_epoch=10)
    assert validated_epochs(whole) == [1, 2, 3, 4]
    assert "early stop since valid performance hasn't improved for last 3 runs" in whole

    first = train(tiny_data_bin, tmp_path / "split", max_epoch=2)
    assert validated_epochs(first) == [1, 2]
    state = torch.load(tmp_path / "split" / "checkpoint_last.pt")["extra_state"][RESUME_STATE]
    assert state["early_stopping"]["num_runs"] == 1  # epoch 2 did not improve on epoch 1
    rest = train(tiny_data_bin, tmp_path / "split", max_epoch=10)
    assert validated_epochs(rest) == [3, 4]
    assert "early stop since valid performance hasn't improved for last 3 runs" in rest


def test_a_resumed_training_ends_with_the_uninterrupted_ones_weights(tiny_data_bin, tmp_path):
    """Three epochs in one training, and one epoch then a resume for two more, end with bit-identical weights on
    the CPU. The synthetic corpus has many sentences of each length (3-12 words), so a resume that builds its
    batches under epoch 2's seed (fairseq's own) puts other sentences into them and ends elsewhere. With dropout,
    as the comparison's recipes train: its masks are drawn from the random state fairseq seeds at every update
    (seed + update number), which a resume must restore alike."""
    learning = ("--dropout", "0.3", "--attention-dropout", "0.1")  # the test suite's learning rate, and dropout
    whole = train(tiny_data_bin, tmp_path / "whole", 3, learning)
    assert validated_epochs(whole) == [1, 2, 3]
    assert validated_epochs(train(tiny_data_bin, tmp_path / "split", 1, learning)) == [1]
    resumed = train(tiny_data_bin, tmp_path / "split", 3, learning)
    assert validated_epochs(resumed) == [2, 3] and "Loaded checkpoint" in resumed
    one = torch.load(tmp_path / "whole" / "checkpoint_last.pt")["model"]
    other = torch.load(tmp_path / "split" / "checkpoint_last.pt")["model"]
    assert one.keys() == other.keys()
    assert [name for name in one if not torch.equal(one[name], other[name])] == []
