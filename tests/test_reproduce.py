"""scripts/reproduce.sh: every table's commands, missing rows, resumability, the markdown table."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairseq_localness.experiments import reproduce  # noqa: E402
from localness_testing import REPO, run  # noqa: E402

TABLES = reproduce.load_tables()
ALL_TABLES = [("yang2018", t) for t in "1234"] + [("yang2019", t) for t in "12"] + [("xu2019", t) for t in "12"] \
    + [("nguyen2020", t) for t in "123"] + [("fan2021", t) for t in "134"]


def test_the_data_file_has_every_table_of_the_issue():
    have = {(paper, table) for paper, spec in TABLES["papers"].items() for table in spec["tables"]}
    assert have == set(ALL_TABLES)


@pytest.mark.parametrize("paper,table", ALL_TABLES)
def test_dry_run_prints_every_command_and_lists_missing_rows(paper, table, capsys, tmp_path):
    assert reproduce.main([paper, table, "--dry-run", "--work", str(tmp_path), "--gpus", "8"]) == 0
    out = capsys.readouterr().out
    rows = reproduce.table_rows(TABLES, paper, table)
    missing = [line for line in out.splitlines() if line.startswith("MISSING ")]
    runnable = [line for line in out.splitlines() if line.startswith("ROW ")]
    assert len(missing) + len(runnable) == len(rows), out  # no row is skipped silently
    assert f"{len(rows)} rows, {len(runnable)} runnable, {len(missing)} missing" in out
    for row in rows:
        if reproduce.missing_reason(row) is None:
            assert f"ROW {row.id} (" in out
            assert f"train.sh {row.benchmark} {row.arch} --data" in out
            assert f"{row.id}/checkpoints" in out and "evaluate.sh" in out
        else:
            assert f"MISSING {row.id} (" in out
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_every_row_is_accepted_by_fairseqs_parser_or_reported_missing():
    for paper, table in ALL_TABLES:
        for row in reproduce.table_rows(TABLES, paper, table):
            reason = reproduce.missing_reason(row)
            if row.arch is None or row.benchmark is None:
                assert reason is not None
            else:
                # every architecture and flag named by the tables exists in this checkout
                assert reason is None, f"{paper} table {table} row {row.id}: {reason}"


def test_bad_flags_and_values_are_detected():
    row = reproduce.table_rows(TABLES, "yang2018", "1")[1]
    assert reproduce.missing_reason(row) is None
    row.overrides = ["model.gaussian_windw=layer"]
    assert "rejects the flags --gaussian-windw layer" in reproduce.missing_reason(row)
    row.overrides = ["model.gaussian_window=diagonal"]
    assert "invalid choice" in reproduce.missing_reason(row)
    row.overrides = ["model.gaussian_layers=1-9"]
    assert "out of range" in reproduce.missing_reason(row)
    row.arch = "transformer_not_yet"
    row.overrides = []
    assert "no architecture config" in reproduce.missing_reason(row)


def test_published_numbers_are_numbers_or_null():
    for paper, table in ALL_TABLES:
        for row in reproduce.table_rows(TABLES, paper, table):
            assert set(row.published) == {"bleu", "params", "speed"}, (paper, table, row.id)
            assert all(v is None or isinstance(v, (int, float)) for v in row.published.values())


def fake_finished_run(run_dir: Path, bleu: float, wps: float, params: int, mark: str = "") -> None:
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / "eval").mkdir()
    (run_dir / "checkpoints" / "hydra_train.log").write_text(
        f"[x][fairseq_cli.train][INFO] - num. shared model params: {params:,} (num. trained: {params:,})\n"
        f"[x][train][INFO] - epoch 001 | loss 5.1 | nll_loss 4 | ppl 16 | wps {wps} | ups 1 | wpb 100 | bsz 8 "
        "| num_updates 100 | lr 0.001\n")
    scores = {"tokenized_bleu": {"score": bleu}, "sacrebleu": {"score": bleu - 1}}
    if mark:
        scores["significance"] = {"tokenized_bleu": {"mark": mark, "p_value": 0.001}}
    (run_dir / "eval" / "scores.json").write_text(json.dumps(scores))


def test_finished_rows_are_not_rerun_and_the_table_is_written(tmp_path, capsys):
    work = tmp_path / "runs"
    rows = reproduce.table_rows(TABLES, "fan2021", "1")
    for i, row in enumerate(rows):
        fake_finished_run(work / "fan2021" / "table1" / row.id, bleu=30.0 + i, wps=1000.0 - 100 * i,
                          params=36_000_000 + i * 1_000_000, mark="⇑" if row.baseline else "")
    assert reproduce.main(["fan2021", "1", "--work", str(work), "--data-root", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert out.count("DONE ") == len(rows) and "+ bash" not in out  # nothing trained or evaluated again
    table = (work / "fan2021" / "table1.md").read_text()
    assert "| IWSLT De-En MAN | transformer_dman_iwslt_de_en | 31.00 ⇑ | 36.30 | 37.0 | 37 | 900 | 0.90 |" in table
    assert "| IWSLT De-En Transformer (small) | transformer_iwslt_de_en | 30.00 | n/a | 36.0 | 36 | 1000 | 1.00 |" \
        in table


def test_a_row_without_data_fails_clearly_and_others_go_on(tmp_path, capsys):
    code = reproduce.main(["fan2021", "4", "--work", str(tmp_path / "runs"), "--data-root", str(tmp_path / "none")])
    out = capsys.readouterr().out
    assert code == 1 and out.count("FAILED ") == 3 and "run data-prep/ first" in out
    table = (tmp_path / "runs" / "fan2021" / "table4.md").read_text()
    assert "| DMAN | transformer_dman_iwslt_de_en | n/a |" in table and "| failed: no binarized data in" in table


def test_reproduce_sh_dry_run():
    out = run(["bash", str(REPO / "scripts" / "reproduce.sh"), "yang2019", "1", "--dry-run"]).stdout
    assert "MISSING block" in out and "MISSING cnns" in out and "ROW csan2d (+ 2D-CSAN)" in out
