"""Where an install finds configs/ and scripts/ (fairseq_localness.paths): beside the package in a checkout, in
$FAIRSEQ_LOCALNESS_HOME otherwise; a command without either stops with a sentence naming both fixes."""

from __future__ import annotations

import sys

from localness_testing import REPO, run

PROBE = "from fairseq_localness import paths; print(paths.REPO); print(paths.require_checkout())"


def test_a_checkout_finds_its_own_configs():
    out = run([sys.executable, "-c", PROBE], env={"FAIRSEQ_LOCALNESS_HOME": ""}).stdout.split()
    assert out == [str(REPO), str(REPO)]


def test_the_home_variable_names_another_checkout(tmp_path):
    (tmp_path / "configs" / "benchmark").mkdir(parents=True)
    (tmp_path / "scripts").mkdir()
    out = run([sys.executable, "-c", PROBE], env={"FAIRSEQ_LOCALNESS_HOME": str(tmp_path)}).stdout.split()
    assert out == [str(tmp_path), str(tmp_path)]


def test_commands_without_a_checkout_say_how_to_get_one(tmp_path):
    env = {"FAIRSEQ_LOCALNESS_HOME": str(tmp_path / "nowhere")}
    for command in ([str(REPO / "scripts" / "reproduce.py"), "yang2018", "1", "--dry-run"],
                    ["-m", "fairseq_localness.experiments.compare", "multi30k_de_en", "--dry-run"]):
        proc = run([sys.executable, *command], env=env, check=False)
        assert proc.returncode == 2, proc.stderr
        assert "$FAIRSEQ_LOCALNESS_HOME is" in proc.stderr and "pip install -e" in proc.stderr, proc.stderr
    proc = run([sys.executable, str(REPO / "scripts" / "launch.py"), "train", "iwslt14_de_en",
                "transformer_iwslt_de_en", "--dry-run"], env=env, check=False)
    assert proc.returncode == 2 and "FAIRSEQ_LOCALNESS_HOME=CHECKOUT" in proc.stderr, proc.stderr
