"""scripts/reproduce.sh: every table's commands and scoring options, rows not trained, resumability, the reports."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from fairseq_localness.experiments import reproduce, tables
from localness_testing import REPO, run

TABLES = reproduce.load_tables()
ALL_TABLES = [(paper, table) for paper, spec in TABLES["papers"].items() for table in spec["tables"]]


@pytest.mark.parametrize("paper,table", ALL_TABLES)
def test_dry_run_prints_every_command_and_every_row_not_trained(paper, table, capsys, tmp_path):
    assert reproduce.main([paper, table, "--dry-run", "--work", str(tmp_path), "--gpus", "8"]) == 0
    out = capsys.readouterr().out
    rows = reproduce.table_rows(TABLES, paper, table)
    kinds = {"ROW": [], "PUBLISHED-ONLY": [], "PENDING": [], "MISSING": []}
    for line in out.splitlines():
        kind = line.split(" ", 1)[0]
        if kind in kinds:
            kinds[kind].append(line.split(" ")[1])
    assert sorted(sum(kinds.values(), [])) == sorted(r.id for r in rows), out  # every row once, none skipped
    assert not kinds["MISSING"], out  # every trained row of the committed tables is accepted by fairseq
    assert kinds["PUBLISHED-ONLY"] == [r.id for r in rows if r.quoted]
    assert kinds["PENDING"] == [r.id for r in rows if r.pending]
    for row in rows:
        if row.id in kinds["ROW"]:
            evaluation = tables.evaluation_of(TABLES, row.setting)
            block = out[out.index(f"ROW {row.id} ("):].split("\nROW ")[0]
            assert f"train.sh {row.setting} {row.arch} --data" in block and f"{row.id}/checkpoints" in block
            assert f"--subset {row.split} --beam {evaluation.beam} --lenpen {evaluation.lenpen}" in block
            assert ("--compound-split" if evaluation.compound_split else "--no-compound-split") in block
            assert ("--lowercase" if evaluation.lowercase else "--no-lowercase") in block
            assert all(shlex.quote(override) in block for override in row.overrides)
    assert not list(tmp_path.iterdir())  # a dry run writes nothing


def test_each_paper_is_scored_as_it_says(capsys, tmp_path):
    def block(paper, table, row_id):
        reproduce.main([paper, table, "--dry-run", "--work", str(tmp_path), "--rows", row_id])
        return capsys.readouterr().out.split(f"ROW {row_id} (")[1]

    # Yang 2018 Tables 1-3 and 5: the WMT17 Zh-En development set (newsdev2017), best checkpoint by dev BLEU
    assert "--subset valid" in block("yang2018", "1", "query") and "wmt17_zh_en_base" in block("yang2018", "1", "query")
    # Fan 2021: compound-split tokenized BLEU on WMT14 En-De, case-insensitive on IWSLT14, beam 4/0.6 vs 5/1.0
    fan_base = block("fan2021", "1", "man-base")
    assert "--subset test --beam 4 --lenpen 0.6 --no-lowercase --compound-split --checkpoint checkpoint_best.pt" in fan_base
    assert "--beam 5 --lenpen 1.0 --lowercase --no-compound-split" in block("fan2021", "1", "man-small")
    # Nguyen 2020: the average of the last 5 checkpoints
    assert "--avg-last 5" in block("nguyen2020", "1", "all-ende")
    # the paired bootstrap test against the row's baseline
    assert "--baseline-hyp" in fan_base and "transformer-base/eval-test" in fan_base


def test_evaluation_options():
    best = tables.Evaluation(data="d", beam=4, lenpen=0.6, checkpoint="best", metric="sacrebleu", lowercase=False,
                             compound_split=True)
    assert best.evaluate_flags("valid") == ["--subset", "valid", "--beam", "4", "--lenpen", "0.6", "--no-lowercase",
                                            "--compound-split", "--checkpoint", "checkpoint_best.pt"]
    average = tables.Evaluation(data="d", beam=5, lenpen=1.0, checkpoint="last5-updates", metric="tokenized_bleu",
                                lowercase=True, compound_split=False)
    assert average.evaluate_flags("test")[-3:] == ["--avg-last", "5", "--avg-updates"]
    with pytest.raises(tables.TableError, match="checkpoint"):
        tables.Evaluation(data="d", beam=4, lenpen=1, checkpoint="latest", metric="sacrebleu", lowercase=False,
                          compound_split=False)
    with pytest.raises(tables.TableError, match="metric"):
        tables.Evaluation(data="d", beam=4, lenpen=1, checkpoint="best", metric="bleu4", lowercase=False,
                          compound_split=False)


def test_bad_flags_and_values_are_detected():
    row = reproduce.table_rows(TABLES, "yang2018", "1")[1]
    assert reproduce.missing_reason(row, TABLES) is None
    row.overrides = ["model.gaussian_windw=layer"]
    assert "rejects the flags" in reproduce.missing_reason(row) and "--gaussian-windw layer" in reproduce.missing_reason(row)
    row.overrides = ["model.gaussian_window=diagonal"]
    assert "invalid choice" in reproduce.missing_reason(row)
    row.overrides = ["model.gaussian_layers=1-9"]
    assert "out of range" in reproduce.missing_reason(row)
    row.overrides = ["gaussian_layers=1-3"]
    assert "is not model.<option>=<value>" in reproduce.missing_reason(row)
    row.arch, row.overrides = "transformer_not_yet", []
    assert "no architecture config" in reproduce.missing_reason(row)


def test_rows_are_selectable_and_unknown_rows_are_an_error(capsys, tmp_path):
    assert reproduce.main(["yang2019", "1", "--dry-run", "--rows", "base,csan2d", "--work", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "2 rows, 2 trained" in out and "ROW csan2d" in out and "ROW base" in out and "ROW csan1d" not in out
    with pytest.raises(SystemExit):
        reproduce.main(["yang2019", "1", "--dry-run", "--rows", "csan3d"])
    assert "unknown row id(s): csan3d" in capsys.readouterr().err


def fake_finished_run(run_dir: Path, split: str, metric: str, bleu: float, wps: float, params: int, mark: str = ""):
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / f"eval-{split}").mkdir()
    (run_dir / "checkpoints" / "hydra_train.log").write_text(
        f"[x][fairseq_cli.train][INFO] - num. shared model params: {params:,} (num. trained: {params:,})\n"
        f"[x][train][INFO] - epoch 001 | loss 5.1 | nll_loss 4 | ppl 16 | wps {wps} | ups 1 | wpb 100 | bsz 8 "
        "| num_updates 100 | lr 0.001\n")
    scores = {metric: {"score": bleu}, "tokenized_bleu" if metric == "sacrebleu" else "sacrebleu": {"score": bleu - 3}}
    if mark:
        scores["significance"] = {metric: {"mark": mark, "p_value": 0.001}}
    (run_dir / f"eval-{split}" / "scores.json").write_text(json.dumps(scores))


def test_finished_rows_are_not_rerun_and_the_table_is_written(tmp_path, capsys):
    work = tmp_path / "runs"
    rows = reproduce.table_rows(TABLES, "fan2021", "4")
    for i, row in enumerate(rows):
        fake_finished_run(work / "fan2021" / "table4" / row.id, "test", "tokenized_bleu", bleu=34.0 + i,
                          wps=1000.0 - 100 * i, params=36_000_000 + i * 1_000_000, mark="⇑" if row.baseline else "")
    assert reproduce.main(["fan2021", "4", "--work", str(work), "--data-root", str(tmp_path / "none")]) == 0
    out = capsys.readouterr().out
    assert out.count("DONE ") == len(rows) and "+ bash" not in out  # nothing trained or evaluated again
    table = (work / "fan2021" / "table4.md").read_text()
    # our score with our mark, the paper's, our delta beside the paper's, parameters and speed ratios
    assert "| DMAN | transformer_dman_iwslt_de_en | 37.00 ⇑ | 36.35 | +3.00 | +1.95 | 39.0 | n/a | 0.70 | n/a | done |" \
        in table
    assert "| Transformer | transformer_iwslt_de_en | 34.00 | 34.40 | n/a | n/a | 36.0 | n/a | 1.00 | n/a | done |" in table
    records = json.loads((work / "fan2021" / "table4.json").read_text())["rows"]
    assert [r["id"] for r in records] == [r.id for r in rows]
    assert records[1]["ours_delta"] == 1.0 and records[1]["paper_delta"] == pytest.approx(35.52 - 34.40)
    csv_lines = (work / "fan2021" / "table4.csv").read_text().splitlines()
    assert len(csv_lines) == len(rows) + 1 and csv_lines[0].startswith("paper,table,id,row,")


def test_the_papers_metric_and_split_are_read_back(tmp_path, capsys):
    work = tmp_path / "runs"
    fake_finished_run(work / "yang2018" / "table5" / "base-8head", "valid", "sacrebleu", bleu=22.0, wps=10, params=1)
    assert reproduce.main(["yang2018", "5", "--work", str(work), "--rows", "base-8head",
                           "--data-root", str(tmp_path / "none")]) == 0
    record = json.loads((work / "yang2018" / "table5.json").read_text())["rows"][0]
    assert record["metric"] == "sacrebleu" and record["ours"] == 22.0 and record["split"] == "valid"


def test_rows_not_trained_keep_their_numbers_and_reason(tmp_path, capsys):
    import copy

    import yaml

    edited = copy.deepcopy(TABLES)
    block = next(r for r in edited["papers"]["yang2019"]["tables"]["1"]["rows"] if r["id"] == "block")
    block["pending"] = "Block self-attention is not in the plugin yet (issue 13)"
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(edited, allow_unicode=True))
    code = reproduce.main(["yang2019", "1", "--work", str(tmp_path / "runs"), "--data-root", str(tmp_path / "none"),
                           "--rows", "base,block", "--tables", str(tmp_path / "tables.yaml")])
    out = capsys.readouterr().out
    assert code == 1 and "FAILED base: no binarized data in" in out and "run data-prep/ first" in out
    assert "PENDING block (+ Block Shen et al. (2018b)): not yet trainable: Block self-attention" in out
    table = (tmp_path / "runs" / "yang2019" / "table1.md").read_text()
    # the paper's numbers stay: BLEU, its delta, parameters (88.0 + 6.0) and speed ((1.28 - 0.33) / 1.28)
    assert "| + Block Shen et al. (2018b) | transformer_block_wmt_en_de | n/a | 27.59 | n/a | +0.28 | n/a | 94.0 | n/a " \
           "| 0.74 | not yet trainable: Block self-attention" in table
    assert "| failed: no binarized data in" in table
    assert reproduce.main(["fan2021", "1", "--work", str(tmp_path / "runs"), "--rows", "scaling-big"]) == 0
    quoted = json.loads((tmp_path / "runs" / "fan2021" / "table1.json").read_text())["rows"][0]
    assert quoted["paper"] == 29.3 and quoted["params_paper"] == 213 and quoted["status"].startswith("published only")
    with pytest.raises(SystemExit):
        reproduce.main(["fan2021", "1", "--tables", str(tmp_path / "missing.yaml")])


def test_reproduce_sh_dry_run():
    out = run(["bash", str(REPO / "scripts" / "reproduce.sh"), "fan2021", "1", "--dry-run"]).stdout
    assert "PUBLISHED-ONLY scaling-big" in out and "ROW man-big (Ours (WMT14 En-De big))" in out


TINY_TRAIN = ("task.source_lang=src task.target_lang=tgt optimization.max_update=30 checkpoint.save_interval_updates=10 "
              "model.encoder_embed_dim=32 model.decoder_embed_dim=32 model.encoder_ffn_embed_dim=64 "
              "model.decoder_ffn_embed_dim=64 dataset.num_workers=0 common.log_interval=10")


@pytest.mark.slow
def test_a_tiny_table_end_to_end_through_reproduce_sh(tmp_path, tiny_data_bin):
    """Two rows trained and scored on the development split, the significance test, the three reports, and a
    rerun that trains nothing."""
    import yaml

    tiny = {"evaluation": {"sample_zh_en_tiny": TABLES["evaluation"]["sample_zh_en_tiny"]},
            "papers": {"tiny": {"citation": "a tiny table", "tables": {"1": {
                "caption": "tiny", "split": "valid", "setting": "sample_zh_en_tiny", "print_order": ["bleu"],
                "rows": [{"id": "base", "label": "Base", "arch": "transformer", "published": {"bleu": 1.0}},
                         {"id": "local", "label": "+ Localness", "arch": "transformer_gaussian_local",
                          "overrides": ["model.gaussian_window=layer"], "baseline": "base",
                          "published": {"bleu": 2.0}},
                         {"id": "quoted", "label": "Other", "quoted": "Someone (2020)", "published": {"bleu": 3.0}}]}}}}}
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(tiny, allow_unicode=True))
    (tmp_path / "data" / "sample_zh_en").mkdir(parents=True)
    (tmp_path / "data" / "sample_zh_en" / "data-bin").symlink_to(tiny_data_bin)
    command = ["bash", str(REPO / "scripts" / "reproduce.sh"), "tiny", "1", "--tables", str(tmp_path / "tables.yaml"),
               "--work", str(tmp_path / "work"), "--data-root", str(tmp_path / "data"), "--train-args", TINY_TRAIN,
               "--eval-args", "--cpu --bootstrap-samples 100"]
    out = run(command).stdout
    assert out.count("+ bash") == 4 and "PUBLISHED-ONLY quoted" in out
    local = json.loads((tmp_path / "work" / "tiny" / "table1" / "local" / "eval-valid" / "scores.json").read_text())
    assert local["subset"] == "valid" and local["generate"]["beam"] == 4 and "significance" in local
    records = json.loads((tmp_path / "work" / "tiny" / "table1.json").read_text())["rows"]
    base, row = records[0], records[1]
    assert base["status"] == row["status"] == "done" and base["params_ours"] > 0 and row["speed_ours"] > 0
    assert row["ours_delta"] == pytest.approx(row["ours"] - base["ours"], abs=0.011) and row["paper_delta"] == 1.0
    assert records[2]["status"].startswith("published only")
    assert (tmp_path / "work" / "tiny" / "table1.csv").exists() and (tmp_path / "work" / "tiny" / "table1.md").exists()
    again = run(command).stdout
    assert "+ bash" not in again and again.count("DONE ") == 2


def test_development_set_tables_find_their_references(tmp_path):
    """evaluate.sh --subset valid scores against data-prep's tok/valid.TGT and raw/valid.TGT (newsdev2017 for Zh-En)."""
    from fairseq_localness.evaluation.evaluate import subset_reference

    for name in ("tok/test.en", "tok/valid.en", "raw/test-ref.en", "raw/valid.en"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("x\n")
    assert subset_reference(str(tmp_path / "tok/test.en"), "test", "en") == str(tmp_path / "tok/test.en")
    assert subset_reference(str(tmp_path / "tok/test.en"), "valid", "en") == str(tmp_path / "tok/valid.en")
    assert subset_reference(str(tmp_path / "raw/test-ref.en"), "valid", "en") == str(tmp_path / "raw/valid.en")
    assert subset_reference(str(tmp_path / "tok/test.en"), "valid", "de") is None  # no such file: generate's T- lines
    assert subset_reference(None, "valid", "en") is None
