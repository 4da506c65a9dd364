"""scripts/quickstart.sh in its shortened CI mode: prepares the shipped sample, trains and evaluates
two tiny models, prints the side-by-side table; a second run skips every finished step."""

from __future__ import annotations

import json
import re

from localness_testing import REPO, run

QUICKSTART = ["bash", str(REPO / "scripts" / "quickstart.sh")]


def test_quickstart_smoke_runs_end_to_end_and_resumes(tmp_path):
    work = tmp_path / "qs"
    out = run([*QUICKSTART, "--smoke", "--work", str(work)], env={"OMP_NUM_THREADS": "2"}).stdout
    for step in ("[1/5] Data", "[2/5] Train the plain Transformer", "[3/5] Train transformer_gaussian_local",
                 "[4/5] Evaluate both", "[5/5] Results"):
        assert step in out, out[-3000:]
    assert re.search(r"transformer: update \d+/10|done training", out)
    table = (work / "quickstart-10.md").read_text()
    lines = [line for line in table.splitlines() if line.startswith("| transformer")]
    assert len(lines) == 2 and lines[0].startswith("| transformer |") and "transformer_gaussian_local" in lines[1]
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        assert cells[4].endswith("M") and cells[6] == "10", line  # parameters, updates
        assert re.match(r"\d+(\.\d+)?", cells[5]), line  # training speed
        assert re.match(r"\d+\.\d\d", cells[1]), line  # sacreBLEU
    scores = json.loads((work / "transformer_gaussian_local" / "eval-10" / "scores.json").read_text())
    assert "significance" in scores  # compared against the plain Transformer's translations
    assert table in out

    again = run([*QUICKSTART, "--smoke", "--work", str(work)]).stdout
    assert "already prepared, skipped" in again
    assert again.count("already trained, skipped") == 2 and again.count("already evaluated, skipped") == 2
    assert "effective batch" not in again  # nothing was trained again

    # fewer updates than the directory holds: the run-directory guard refuses, and quickstart says so
    before = {path: path.read_bytes() for path in work.rglob("*") if path.is_file()}
    fewer = run([*QUICKSTART, "--updates", "5", "--work", str(work)], check=False)
    assert fewer.returncode == 2, fewer.stderr[-2000:]
    assert "further than the requested max_update=5" in fewer.stdout + fewer.stderr
    assert "train.sh refused, for the reason printed above" in fewer.stderr
    assert "hydra_train.log" not in fewer.stderr
    after = {path: path.read_bytes() for path in work.rglob("*") if path.is_file()}
    assert after == before


def test_quickstart_rejects_bad_flags(tmp_path):
    for args, message in ((["--updates", "ten"], "--updates must be a positive integer"),
                          (["--arch", "transformer_nope"], "no configs/arch/transformer_nope.yaml"),
                          (["--bogus"], "unknown argument --bogus")):
        proc = run([*QUICKSTART, *args, "--work", str(tmp_path / "w")], check=False)
        assert proc.returncode == 2 and message in proc.stderr
    assert "--smoke" in run([*QUICKSTART, "--help"]).stdout


def test_the_side_by_side_table_names_bad_runs_and_keeps_an_existing_file(tmp_path, capsys):
    """launch.py compare (the quickstart's step 5): a save directory that is not there, or an evaluation without
    scores.json, is one error naming it (it used to print a row of n/a); an existing OUT is kept unless
    --overwrite, checked before any run is read."""
    import pytest

    from fairseq_localness.experiments.runlog import compare_main

    save, evaluated = tmp_path / "save", tmp_path / "eval"
    save.mkdir()
    evaluated.mkdir()
    (evaluated / "scores.json").write_text(json.dumps({"sacrebleu": {"score": 12.345}}))
    out = tmp_path / "table.md"
    for runs, named in (([f"base={tmp_path / 'nosave'}:{evaluated}"], f"base: SAVE_DIR {tmp_path / 'nosave'}: no such"),
                        ([f"base={save}:{save}"], f"base: EVAL_DIR {save} holds no scores.json")):
        with pytest.raises(SystemExit) as refused:
            compare_main([str(out), *runs])
        assert refused.value.code == 2 and named in capsys.readouterr().err and not out.exists()
    assert compare_main([str(out), f"base={save}:{evaluated}"]) == 0
    assert "| base | 12.35 |" in out.read_text()
    out.write_text("mine\n")
    with pytest.raises(SystemExit):
        compare_main([str(out), f"base={save}:{evaluated}"])
    assert out.read_text() == "mine\n" and f"{out} exists; pass --overwrite" in capsys.readouterr().err
    assert compare_main([str(out), f"base={save}:{evaluated}", "--overwrite"]) == 0 and "| base |" in out.read_text()
