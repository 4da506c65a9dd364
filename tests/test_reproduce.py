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
            evaluation = tables.evaluation_of(TABLES, row.scored_by)
            block = out[out.index(f"ROW {row.id} ("):].split("\nROW ")[0]
            assert f"train.sh {row.setting} {row.arch} --data" in block and f"{row.id}/checkpoints" in block
            training = tables.evaluation_of(TABLES, row.setting)  # probing: the encoder's translation data
            assert f"/{training.data}/data-bin" in block
            if evaluation.task == "probing":
                assert f"--probing-tasks {Path('runs/data').resolve()}/{evaluation.data} --prep-dir " in block
            if evaluation.task == "translation":
                assert f"evaluate.sh {tmp_path}/{paper}/" in block
                assert f"--subset {row.split} --beam {evaluation.beam} --lenpen {evaluation.lenpen}" in block
                assert ("--compound-split" if evaluation.compound_split else "--no-compound-split") in block
                assert ("--lowercase" if evaluation.lowercase else "--no-lowercase") in block
            else:
                assert f"score_task.sh {tmp_path}/{paper}/" in block and "--baseline-hyp" not in block
                assert f"--task {evaluation.task} --subset {row.split}" in block
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


def test_each_task_is_trained_and_scored_with_its_own_flags(capsys, tmp_path):
    """Nguyen 2020 Tables 5-6: the tiny classifier recipes (3k / 10k / 10k updates, Sec. 5.3) and the LM recipe,
    scored by score_task.sh with the exact flags; Fan 2021 Table 2 (summarization) and Xu 2019 Tables 3-4 (probing)."""
    def block(table, row_id):
        assert reproduce.main(["nguyen2020", table, "--dry-run", "--work", str(tmp_path), "--rows", row_id,
                               "--data-root", "/d"]) == 0
        return capsys.readouterr().out.split(f"ROW {row_id} (")[1]

    run_dir = f"{tmp_path}/nguyen2020/table5/aw-imdb"
    assert (f"train.sh nguyen2020_imdb_tiny localness_classifier_tiny_diffwin_aw --data /d/imdb/data-bin "
            f"--save-dir {run_dir}/checkpoints --cpu-procs 1\n") in block("5", "aw-imdb")
    assert (f"score_task.sh {run_dir}/checkpoints /d/imdb/data-bin --task classification --subset test "
            f"--checkpoint checkpoint_best.pt --out {run_dir}/eval-test\n") in block("5", "aw-imdb")
    assert "train.sh nguyen2020_sva_tiny localness_classifier_tiny_gaussian --data /d/sva/data-bin" in block("5", "local-sva")
    assert "train.sh nguyen2020_sst_tiny localness_classifier_tiny --data /d/sst2/data-bin" in block("5", "base-sst")
    run_dir = f"{tmp_path}/nguyen2020/table6/mw"
    assert (f"score_task.sh {run_dir}/checkpoints /d/lm1b/data-bin --task language_modeling --subset test "
            "--tokens-per-sample 512 --sample-break-mode eos --context-window 0 --checkpoint checkpoint_best.pt "
            f"--out {run_dir}/eval-test\n") in block("6", "mw")
    assert "train.sh nguyen2020_lm1b_base transformer_lm_diffwin --data /d/lm1b/data-bin" in block("6", "mw")
    # the recipes behind those names (Sec. 5.3 updates, tensor2tensor's transformer_tiny batch and lr; Sec. 5.4)
    from fairseq_localness.experiments.launch import compose

    for setting, updates in (("nguyen2020_sst_tiny", 3000), ("nguyen2020_imdb_tiny", 10000), ("nguyen2020_sva_tiny", 10000)):
        cfg = compose(setting, "localness_classifier_tiny", ["task.data=/d"])
        assert cfg.task._name == "sentence_prediction" and cfg.criterion._name == "sentence_prediction"
        assert cfg.optimization.max_update == updates and cfg.dataset.max_tokens * cfg.optimization.update_freq[0] == 4096
        assert cfg.optimization.lr[0] == pytest.approx(2.0 / (128 * 8000) ** 0.5) and cfg.lr_scheduler.warmup_updates == 8000
        assert cfg.checkpoint.best_checkpoint_metric == "accuracy" and cfg.checkpoint.maximize_best_checkpoint_metric
    # Table 6: Sec. 5.4 (4 virtual GPUs, 100,000 updates) and the authors' train_v2.sh (lr 7e-4, 4096 tokens a GPU,
    # label smoothing 0.1, untied embeddings, fairseq's LM without a final LayerNorm)
    cfg = compose("nguyen2020_lm1b_base", "transformer_lm_diffwin", ["task.data=/d"])
    assert cfg.task._name == "language_modeling" and cfg.criterion._name == "label_smoothed_cross_entropy"
    assert cfg.criterion.label_smoothing == 0.1 and cfg.optimization.lr == [0.0007]
    assert cfg.optimization.max_update == 100000 and cfg.dataset.max_tokens * cfg.optimization.update_freq[0] == 4 * 4096
    assert (cfg.task.sample_break_mode, cfg.task.tokens_per_sample) == ("eos", 512)
    assert not cfg.model.share_decoder_input_output_embed and cfg.model.no_decoder_final_norm
    # Fan 2021 Table 2: the data set's recipe (Sec. 3.1.2), decoded and scored by score_task.sh (ROUGE)
    assert reproduce.main(["fan2021", "2", "--dry-run", "--work", str(tmp_path), "--rows", "man-gigaword",
                           "--data-root", "/d"]) == 0
    run_dir = f"{tmp_path}/fan2021/table2/man-gigaword"
    out = capsys.readouterr().out
    assert (f"train.sh fan2021_gigaword_summarization transformer_dman_summarization --data /d/gigaword/data-bin "
            f"--save-dir {run_dir}/checkpoints --cpu-procs 1\n") in out
    assert (f"score_task.sh {run_dir}/checkpoints /d/gigaword/data-bin --task summarization --subset test --dataset "
            f"gigaword --variant released --checkpoint checkpoint_best.pt --out {run_dir}/eval-test\n") in out
    # Xu 2019 Tables 3-4: the Table 1 En-De encoder trained as in Table 1, then probed on SentEval's files
    assert reproduce.main(["xu2019", "3", "--dry-run", "--work", str(tmp_path), "--rows", "local", "--data-root", "/d"]) == 0
    run_dir = f"{tmp_path}/xu2019/table3/local"
    out = capsys.readouterr().out
    assert (f"train.sh xu2019_wmt14_en_de_base transformer_hybrid_local_wmt_en_de --data /d/wmt14_en_de/data-bin "
            f"--save-dir {run_dir}/checkpoints --cpu-procs 1 model.hybrid_combine=local\n") in out
    assert (f"score_task.sh {run_dir}/checkpoints /d/wmt14_en_de/data-bin --task probing --subset test --checkpoint "
            f"checkpoint_best.pt --out {run_dir}/eval-test --probing-tasks /d/senteval_probing --prep-dir /d/wmt14_en_de\n") in out
    assert not list(tmp_path.iterdir())


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
    classify = tables.Evaluation(task="classification", data="sst2", checkpoint="best", metric="accuracy")
    assert classify.evaluate_flags("test") == ["--task", "classification", "--subset", "test", "--checkpoint",
                                               "checkpoint_best.pt"]
    lm = tables.Evaluation(task="language_modeling", data="lm1b", checkpoint="best", metric="ppl",
                           tokens_per_sample=256, sample_break_mode="eos", context_window=0)
    assert lm.evaluate_flags("valid")[:4] == ["--task", "language_modeling", "--subset", "valid"]
    assert lm.published_field == "ppl" and classify.published_field == "accuracy" and best.published_field == "bleu"
    with pytest.raises(tables.TableError, match="classification setting must be accuracy"):
        tables.Evaluation(task="classification", data="d", checkpoint="best", metric="sacrebleu")
    with pytest.raises(tables.TableError, match="tokens_per_sample"):
        tables.Evaluation(task="language_modeling", data="d", checkpoint="best", metric="ppl")
    with pytest.raises(tables.TableError, match="checkpoint_best"):
        tables.Evaluation(task="classification", data="d", checkpoint="last5", metric="accuracy")
    with pytest.raises(tables.TableError, match="task must be"):
        tables.Evaluation(task="parsing", data="d", checkpoint="best", metric="accuracy")
    summarize = tables.Evaluation(task="summarization", data="gigaword", checkpoint="best", metric="rouge", decode="paper")
    assert summarize.evaluate_flags("test") == ["--task", "summarization", "--subset", "test", "--dataset", "gigaword",
                                                "--variant", "paper", "--checkpoint", "checkpoint_best.pt"]
    with pytest.raises(tables.TableError, match="needs data cnndm or gigaword and decode released or paper"):
        tables.Evaluation(task="summarization", data="xsum", checkpoint="best", metric="rouge", decode="released")


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


def corpus_data_bin(data_root: Path, data: str, corpus=None) -> Path:
    """A binarized data set (its dictionaries) whose prep-info.json records ``corpus`` (none when None)."""
    data_bin = data_root / data / "data-bin"
    data_bin.mkdir(parents=True)
    for lang in ("zh", "en"):
        (data_bin / f"dict.{lang}.txt").write_text("a 1\n")
    info = {"script": "prepare-wmt17zh2en.sh", "src": "zh", "tgt": "en"}
    if corpus is not None:
        info.update(corpus=corpus, train_pairs=1000)
    (data_bin / "prep-info.json").write_text(json.dumps(info))
    return data_bin


ZH_EN_TABLES = [("yang2018", "1"), ("yang2018", "2"), ("yang2018", "3"), ("yang2018", "4"), ("yang2018", "5"),
                ("yang2019", "2")]


@pytest.mark.parametrize("paper,table", ZH_EN_TABLES)
def test_dry_run_of_a_zh_en_table_names_the_full_corpus(paper, table, capsys, tmp_path):
    """Yang 2018 Sec. 4.1: all of WMT17's Zh-En parallel data (20.62M pairs): the corpus the rows must train on."""
    assert reproduce.main([paper, table, "--dry-run", "--work", str(tmp_path / "w"), "--data-root", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert (f"CORPUS wmt17_zh_en: the paper's training data is wmt17-zh-en-all; {tmp_path}/wmt17_zh_en/data-bin is not "
            "prepared yet") in out
    assert TABLES["evaluation"]["wmt17_zh_en_base"]["corpus"] == TABLES["evaluation"]["wmt17_zh_en_big"]["corpus"] \
        == "wmt17-zh-en-all"


def test_a_reduced_corpus_stops_training_unless_allowed(capsys, tmp_path):
    """An NC-only WMT17 data-bin: exit 2 with the reason (nothing trained); --allow-other-corpus trains and marks the
    report; the paper's corpus passes; a data-bin recording no corpus is refused like another corpus."""
    data_root, work = tmp_path / "data", tmp_path / "runs"
    data_bin = corpus_data_bin(data_root, "wmt17_zh_en", "wmt17-zh-en-nc-v12")
    args = ["yang2018", "1", "--work", str(work), "--data-root", str(data_root)]
    assert reproduce.main(args) == 2
    captured = capsys.readouterr()
    assert f"ERROR: {data_bin} holds wmt17-zh-en-nc-v12, not the paper's wmt17-zh-en-all" in captured.err
    assert "--allow-other-corpus" in captured.err and "+ bash" not in captured.out and not work.exists()
    assert reproduce.main(args + ["--dry-run"]) == 0  # a dry run says so and prints the commands
    out = capsys.readouterr().out
    assert f"CORPUS wmt17_zh_en: the paper's training data is wmt17-zh-en-all; {data_bin} holds wmt17-zh-en-nc-v12" in out
    assert "NOTE: training would stop here" in out and "ROW query" in out

    rows = reproduce.table_rows(TABLES, "yang2018", "1")
    for i, row in enumerate(rows):  # finished runs: the allowed table is reported without training anything
        fake_finished_run(work / "yang2018" / "table1" / row.id, "valid", "sacrebleu", bleu=20.0 + i, wps=100, params=1)
    assert reproduce.main(args + ["--allow-other-corpus"]) == 0
    out = capsys.readouterr().out
    mark = "[trained on wmt17-zh-en-nc-v12, not the paper's wmt17-zh-en-all]"
    assert "NOTE: --allow-other-corpus: wmt17_zh_en is wmt17-zh-en-nc-v12" in out and "+ bash" not in out
    assert (work / "yang2018" / "table1.md").read_text().startswith(f"## yang2018 Table 1: ") and \
        mark in (work / "yang2018" / "table1.md").read_text().splitlines()[0]
    assert mark in json.loads((work / "yang2018" / "table1.json").read_text())["table"]

    info = json.loads((data_bin / "prep-info.json").read_text())
    (data_bin / "prep-info.json").write_text(json.dumps({**info, "corpus": "wmt17-zh-en-all"}))
    assert reproduce.main(args) == 0 and mark not in (work / "yang2018" / "table1.md").read_text()
    (data_bin / "prep-info.json").write_text(json.dumps({"script": "prepare-wmt17zh2en.sh"}))
    assert reproduce.main(args) == 2 and "holds an unrecorded corpus" in capsys.readouterr().err


@pytest.mark.parametrize("paper,table,row_id,data,corpus,expected", [
    ("yang2018", "4", "base-zhen", "wmt17_zh_en", "wmt17-zh-en-nc-v12", "wmt17-zh-en-all"),
    ("xu2019", "2", "base-jaen", "wat17_ja_en", "aspec-je-train-1-2-maxlen50", "aspec-je-train-1-2"),
])
def test_reduced_corpus_refusal_through_reproduce_sh(tmp_path, paper, table, row_id, data, corpus, expected):
    """The refusal is an error message and exit status 2, not a traceback; nothing is trained."""
    corpus_data_bin(tmp_path / "data", data, corpus)
    proc = run(["bash", str(REPO / "scripts" / "reproduce.sh"), paper, table, "--rows", row_id, "--work",
                str(tmp_path / "runs"), "--data-root", str(tmp_path / "data")], check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr and "+ bash" not in proc.stdout
    assert f"holds {corpus}, not the paper's {expected}" in proc.stderr


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
    assert len(csv_lines) == len(rows) + 1 and csv_lines[0].startswith("publication,table,id,row,")


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
    assert quoted["publication"] == "fan2021"  # the paper's key and its published score are separate fields
    with pytest.raises(SystemExit):
        reproduce.main(["fan2021", "1", "--tables", str(tmp_path / "missing.yaml")])


def test_reproduce_sh_dry_run():
    out = run(["bash", str(REPO / "scripts" / "reproduce.sh"), "fan2021", "1", "--dry-run"]).stdout
    assert "PUBLISHED-ONLY scaling-big" in out and "ROW man-big (Ours (WMT14 En-De big))" in out


TINY_TRAIN = ("task.source_lang=src task.target_lang=tgt optimization.max_update=30 checkpoint.save_interval_updates=10 "
              "model.encoder_embed_dim=32 model.decoder_embed_dim=32 model.encoder_ffn_embed_dim=64 "
              "model.decoder_ffn_embed_dim=64 dataset.num_workers=0 common.log_interval=10")


def test_a_tables_file_of_your_own_reads_no_sweeps_unless_asked(tmp_path, capsys):
    """The shipped sweep figures belong to the shipped tables' papers: --tables alone must not check them, and an
    explicit --sweeps naming papers the tables file lacks is refused with both files' names."""
    import yaml

    own = {"evaluation": {"sample_zh_en_tiny": TABLES["evaluation"]["sample_zh_en_tiny"]},
           "papers": {"mine": {"citation": "my table", "tables": {"1": {
               "caption": "mine", "split": "valid", "setting": "sample_zh_en_tiny", "print_order": ["bleu"],
               "rows": [{"id": "base", "label": "Base", "arch": "transformer", "published": {"bleu": 1.0}}]}}}}}
    (tmp_path / "tables.yaml").write_text(yaml.safe_dump(own))
    common = ["mine", "1", "--tables", str(tmp_path / "tables.yaml"), "--dry-run", "--work", str(tmp_path / "w"),
              "--data-root", "/d"]
    assert reproduce.main(common) == 0
    assert "train.sh sample_zh_en_tiny transformer --data /d/sample_zh_en/data-bin" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        reproduce.main([*common, "--sweeps", str(REPO / "configs" / "paper_sweeps.yaml")])
    assert "sweeps file: unknown paper 'yang2019'; the tables file has mine" in capsys.readouterr().err


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


# --- scripts/score_task.sh (fairseq_localness/evaluation/task_scores.py): accuracy and perplexity by hand ---

EVAL_LM_LOG = """2026-11-23 08:00:00 | INFO | fairseq_cli.eval_lm | num. model params: 1,234
2026-11-23 08:00:01 | INFO | fairseq_cli.eval_lm | Evaluated 4 tokens in 0.0s (400.00 tokens/s)
2026-11-23 08:00:01 | INFO | fairseq_cli.eval_lm | Loss (base 2): 2.5000, Perplexity: 5.66
"""


def test_accuracy_and_perplexity_records_by_hand():
    from fairseq_localness.evaluation import task_scores

    assert task_scores.accuracy_record(3, 4) == {"score": 75.0, "correct": 3, "total": 4}
    assert task_scores.accuracy_record(1821, 1821)["score"] == 100.0
    with pytest.raises(task_scores.ScoreError, match="empty"):
        task_scores.accuracy_record(0, 0)
    # four tokens with probabilities 1/2, 1/4, 1/8, 1/16: mean base-2 loss (1 + 2 + 3 + 4) / 4 = 2.5 bits,
    # perplexity 2 ** 2.5 = 5.657, which eval-lm prints as 5.66
    assert task_scores.parse_eval_lm(EVAL_LM_LOG) == {"score": 5.66, "loss_base2": 2.5}
    with pytest.raises(task_scores.ScoreError, match="2 \\*\\* loss"):
        task_scores.parse_eval_lm(EVAL_LM_LOG.replace("Perplexity: 5.66", "Perplexity: 6.00"))
    with pytest.raises(task_scores.ScoreError, match="printed no"):
        task_scores.parse_eval_lm("Traceback (most recent call last):\n")


def write_indexed(prefix: Path, lines, dictionary) -> None:
    """A split in fairseq-preprocess's binary layout (PREFIX.bin / .idx), each line with its </s>."""
    from fairseq.data import indexed_dataset

    builder = indexed_dataset.make_builder(f"{prefix}.bin", impl="mmap", vocab_size=len(dictionary))
    for line in lines:
        builder.add_item(dictionary.encode_line(line, add_if_not_exist=False, append_eos=True).long())
    builder.finalize(f"{prefix}.idx")


def dictionary_of(words, path: Path):
    from fairseq.data import Dictionary

    dictionary = Dictionary()
    for word in words:
        dictionary.add_symbol(word)
    path.parent.mkdir(parents=True, exist_ok=True)
    dictionary.save(str(path))
    return dictionary


def save_untrained(model, args, path: Path) -> None:
    """The model as fairseq-train's checkpoint_utils.save_state lays out a checkpoint."""
    import torch
    from fairseq.dataclass.utils import convert_namespace_to_omegaconf
    from omegaconf import OmegaConf

    path.parent.mkdir(parents=True, exist_ok=True)
    torch.save({"cfg": OmegaConf.to_container(convert_namespace_to_omegaconf(args), resolve=True, enum_to_str=True),
                "args": None, "model": model.state_dict(), "extra_state": {"train_iterator": {"epoch": 1}},
                "optimizer_history": [{"criterion_name": "x", "optimizer_name": "Adam",
                                       "lr_scheduler_state": {"best": None}, "num_updates": 0}]}, path)


def built(data: Path, arch: str, task_flags):
    from fairseq import options, tasks

    from fairseq_localness.paths import USER_DIR

    args = options.parse_args_and_arch(options.get_training_parser(),
                                       [str(data), "--user-dir", str(USER_DIR), "--arch", arch, *task_flags])
    return args, tasks.setup_task(args).build_model(args)


def test_classification_accuracy_is_exact_on_a_hand_made_case(tmp_path):
    """A classifier whose head always says class 1 (zero weights, bias [0, 1]) on four test sentences labelled
    1, 1, 0, 1: exactly 3 of 4 right, 75.00 (fairseq-validate would log 75.0)."""
    import torch

    from fairseq_localness.evaluation import task_scores

    data = tmp_path / "data-bin"
    words = dictionary_of(["good", "bad", "film", "plot"], data / "input0" / "dict.txt")
    labels = dictionary_of(["0", "1"], data / "label" / "dict.txt")  # class c is label symbol nspecial + c
    sentences = ["good film", "bad plot plot", "good", "film plot bad good"]
    for split in ("train", "test"):
        write_indexed(data / "input0" / split, sentences, words)
        write_indexed(data / "label" / split, ["1", "1", "0", "1"], labels)
    args, model = built(data, "localness_classifier_tiny", ["--task", "sentence_prediction", "--num-classes", "2",
                                                             "--criterion", "sentence_prediction"])
    head = model.classification_heads["sentence_classification_head"].out_proj
    with torch.no_grad():
        head.weight.zero_()
        head.bias.copy_(torch.tensor([0.0, 1.0]))
    save_untrained(model, args, tmp_path / "checkpoints" / "checkpoint_best.pt")
    assert task_scores.main([str(tmp_path / "checkpoints"), str(data), "--task", "classification", "--cpu"]) == 0
    scores = json.loads((tmp_path / "checkpoints" / "eval-test" / "scores.json").read_text())
    assert scores["accuracy"] == {"score": 75.0, "correct": 3, "total": 4} and scores["subset"] == "test"
    with pytest.raises(SystemExit):  # a checkpoint that is not there is named
        task_scores.main([str(tmp_path / "checkpoints"), str(data), "--task", "classification", "--checkpoint", "x.pt"])


def test_perplexity_of_a_uniform_language_model_is_its_vocabulary_size(tmp_path):
    """Zero (tied) embeddings give every next token the same probability 1 / |V|: fairseq-eval-lm's perplexity
    must be |V| = 16 exactly (12 words + 4 special symbols), its base-2 loss log2(16) = 4."""
    import torch

    from fairseq_localness.evaluation import task_scores

    data = tmp_path / "data-bin"
    words = [f"w{i}" for i in range(12)]
    dictionary = dictionary_of(words, data / "dict.txt")
    assert len(dictionary) == 16
    for split in ("train", "test"):
        write_indexed(data / split, ["w1 w2 w3", "w4 w5", "w6 w7 w8 w9 w10 w11"], dictionary)
    args, model = built(data, "transformer_lm_localness", [
        "--task", "language_modeling", "--tokens-per-sample", "64", "--sample-break-mode", "eos",
        "--decoder-layers", "1", "--decoder-embed-dim", "16", "--decoder-ffn-embed-dim", "32",
        "--decoder-attention-heads", "2", "--share-decoder-input-output-embed"])
    with torch.no_grad():
        model.decoder.embed_tokens.weight.zero_()  # also the output projection (tied)
    save_untrained(model, args, tmp_path / "checkpoints" / "checkpoint_best.pt")
    out = tmp_path / "eval"
    assert task_scores.main([str(tmp_path / "checkpoints"), str(data), "--task", "language_modeling",
                             "--tokens-per-sample", "64", "--out", str(out), "--cpu"]) == 0
    scores = json.loads((out / "scores.json").read_text())["ppl"]
    assert scores["score"] == 16.0 and scores["loss_base2"] == 4.0
    assert (scores["sample_break_mode"], scores["context_window"]) == ("eos", 0)
    assert "Loss (base 2): 4.0000, Perplexity: 16.00" in (out / "eval-lm-test.log").read_text()


@pytest.mark.slow
def test_classification_and_language_model_rows_end_to_end(tmp_path):
    """Nguyen 2020 Tables 5 and 6 through reproduce.sh on toy data: train.sh (a few updates) and score_task.sh,
    the table written with accuracy / perplexity beside the paper's, and a rerun that trains nothing."""
    data = tmp_path / "data"
    words = [f"w{i}" for i in range(12)]
    sentences = [" ".join(words[(i * 5 + j) % 12] for j in range(2 + i % 5)) for i in range(40)]
    vocab = dictionary_of(words, data / "sst2" / "data-bin" / "input0" / "dict.txt")
    labels = dictionary_of(["0", "1"], data / "sst2" / "data-bin" / "label" / "dict.txt")
    lm_vocab = dictionary_of(words, data / "lm1b" / "data-bin" / "dict.txt")
    for split in ("train", "valid", "test"):
        write_indexed(data / "sst2" / "data-bin" / "input0" / split, sentences, vocab)
        write_indexed(data / "sst2" / "data-bin" / "label" / split, [str(i % 2) for i in range(40)], labels)
        write_indexed(data / "lm1b" / "data-bin" / split, sentences, lm_vocab)
    (data / "lm1b" / "data-bin" / "prep-info.json").write_text(json.dumps({"corpus": "1bw"}))  # as prepare-1bw.sh
    common = ["--work", str(tmp_path / "work"), "--data-root", str(data), "--eval-args=--cpu"]
    classify = ["bash", str(REPO / "scripts" / "reproduce.sh"), "nguyen2020", "5", "--rows", "base-sst,aw-sst",
                "--train-args", "optimization.max_update=2", *common]
    out = run(classify).stdout
    assert out.count("+ bash") == 4 and "score_task.sh" in out
    records = json.loads((tmp_path / "work" / "nguyen2020" / "table5.json").read_text())["rows"]
    aw = next(r for r in records if r["id"] == "aw-sst")
    assert aw["metric"] == "accuracy" and aw["paper"] == 82.13 and aw["paper_delta"] == pytest.approx(82.13 - 79.36)
    assert aw["status"] == "done" and 0 <= aw["ours"] <= 100 and aw["params_ours"] > 0
    assert "+ bash" not in run(classify).stdout
    lm = ["bash", str(REPO / "scripts" / "reproduce.sh"), "nguyen2020", "6", "--rows", "base,mw", "--train-args",
          "optimization.max_update=2 model.decoder_layers=2 model.decoder_embed_dim=32 model.decoder_ffn_embed_dim=64 "
          "model.decoder_attention_heads=2", *common]
    run(lm)
    record = json.loads((tmp_path / "work" / "nguyen2020" / "table6.json").read_text())["rows"][0]
    assert record["metric"] == "ppl" and record["paper"] == 46.37 and record["status"] == "done"
    scores = json.loads((tmp_path / "work" / "nguyen2020" / "table6" / "base" / "eval-test" / "scores.json").read_text())
    assert record["ours"] == scores["ppl"]["score"] > 1  # 2 updates from a random init: not yet near |V| = 16
    assert record["ours"] == pytest.approx(2 ** scores["ppl"]["loss_base2"], abs=0.01 + 1e-3 * record["ours"])
    # the Dec (MW) row trains the recipe's model: the window in every layer (its override), untied, no final norm
    import torch

    state = torch.load(tmp_path / "work" / "nguyen2020" / "table6" / "mw" / "checkpoints" / "checkpoint_best.pt",
                       map_location="cpu", weights_only=False)
    model_cfg = state["cfg"]["model"]
    model_cfg = model_cfg if isinstance(model_cfg, dict) else vars(model_cfg)  # a Namespace for add_args models
    assert (model_cfg["diffwin_dec_layers"], model_cfg["no_decoder_final_norm"]) == ("all", True)
    assert not model_cfg["share_decoder_input_output_embed"] and state["cfg"]["criterion"]["label_smoothing"] == 0.1
    assert not any(key.startswith("decoder.layer_norm.") for key in state["model"])
    assert all(f"decoder.layers.{i}.self_attn.locality.0.query_proj.weight" in state["model"] for i in range(2))


PROBE_RESULTS = {  # scripts/probe.py's results.json (accuracies as fractions): the paper's TRANSFORMER row
    "tasks": {name: {"test_accuracy": value, "dev_accuracy": 0.5} for name, value in (
        ("sentence_length", 0.901), ("word_content", 0.634), ("tree_depth", 0.439), ("top_constituents", 0.785),
        ("bigram_shift", 0.716), ("past_present", 0.887), ("subj_number", 0.858), ("obj_number", 0.85),
        ("odd_man_out", 0.517), ("coordination_inversion", 0.632))},
    "group_averages": {"surface": 0.7675, "syntactic": 0.6467, "semantic": 0.7488},
}


def test_probe_results_become_xu2019s_columns():
    from fairseq_localness.evaluation import task_scores

    record = task_scores.probing_record(PROBE_RESULTS)
    assert record["SeLn"] == pytest.approx(90.1) and record["CoIn"] == pytest.approx(63.2)
    assert (record["surf"], record["sync"], record["semc"]) == pytest.approx((76.75, 64.67, 74.88))
    assert record["score"] == record["surf"] and len(record) == 14
    only_two = {"tasks": {"bigram_shift": {"test_accuracy": 0.75}, "word_content": {"test_accuracy": 0.5}}}
    assert task_scores.probing_record(only_two) == {"score": 50.0, "WC": 50.0, "BShif": 75.0}  # no full group
    with pytest.raises(task_scores.ScoreError, match="unknown parse_depth"):
        task_scores.probing_record({"tasks": {"parse_depth": {"test_accuracy": 0.5}}})


def test_tables_with_several_numbers_per_model_keep_them_all(tmp_path, capsys):
    """Xu 2019 Table 4 (ten probing tasks) and Fan 2021 Table 2 (R-1/2/L/avg): the first printed column is the
    Ours / Paper column, every other one is kept in the records and in the markdown."""
    from fairseq_localness.evaluation import task_scores

    run_dir = tmp_path / "xu2019" / "table4" / "base"
    fake_finished_run(run_dir, "test", "tokenized_bleu", bleu=0, wps=10, params=1)
    (run_dir / "eval-test" / "scores.json").write_text(json.dumps({"probing_accuracy": task_scores.probing_record(
        PROBE_RESULTS)}))
    assert reproduce.main(["xu2019", "4", "--work", str(tmp_path), "--rows", "base"]) == 0
    record = json.loads((tmp_path / "xu2019" / "table4.json").read_text())["rows"][0]
    assert record["metric"] == "probing_accuracy" and record["paper"] == 90.1 and record["ours"] == pytest.approx(90.1)
    assert (record["paper_WC"], record["paper_CoIn"]) == (63.4, 63.2) and "paper_SeLn" not in record
    assert record["ours_CoIn"] == pytest.approx(63.2) and record["status"] == "done"
    assert ("| 90.10 | WC 63.4, TDep 43.9, ToCo 78.5, BShif 71.6, Tense 88.7, SubN 85.8, ObjN 85.0, SoMo 51.7, CoIn 63.2 "
            "| 90.10 | WC 63.4, TDep 43.9, ToCo 78.5, BShif 71.6, Tense 88.7, SubN 85.8, ObjN 85.0, SoMo 51.7, CoIn 63.2 |") \
        in (tmp_path / "xu2019" / "table4.md").read_text()
    for row_id, rouge1 in (("transformer-gigaword", 36.5), ("man-gigaword", 37.25)):  # score_task.sh's "rouge" entry
        run_dir = tmp_path / "fan2021" / "table2" / row_id
        fake_finished_run(run_dir, "test", "tokenized_bleu", bleu=0, wps=10, params=1)
        (run_dir / "eval-test" / "scores.json").write_text(json.dumps({"rouge": {
            "score": rouge1, "rouge1": rouge1, "rouge2": 18.0, "rougeL": 34.0, "rouge_avg": (rouge1 + 52.0) / 3}}))
    assert reproduce.main(["fan2021", "2", "--work", str(tmp_path), "--rows", "transformer-gigaword,man-gigaword"]) == 0
    record = json.loads((tmp_path / "fan2021" / "table2.json").read_text())["rows"][-1]
    assert (record["paper"], record["paper_rouge2"], record["paper_rougeL"], record["paper_rouge_avg"]) == \
        (38.28, 19.46, 35.46, 31.06)
    assert record["paper_delta"] == pytest.approx(38.28 - 37.57) and record["metric"] == "rouge"
    assert (record["ours"], record["ours_rouge2"], record["ours_rougeL"], record["ours_rouge_avg"]) == (37.25, 18.0, 34.0, 29.75)
    assert record["ours_delta"] == 0.75 and record["status"] == "done"


def test_rows_run_their_scripts_with_this_interpreter(monkeypatch):
    """The row's bash scripts take $PYTHON first: reproduce passes its own interpreter unless $PYTHON is set."""
    import sys

    seen = []
    monkeypatch.setattr(reproduce.subprocess, "call", lambda command, env: seen.append(env["PYTHON"]) or 0)
    monkeypatch.delenv("PYTHON", raising=False)
    assert reproduce.run(["bash", "scripts/train.sh"]) == 0
    monkeypatch.setenv("PYTHON", "/opt/other/python")
    reproduce.run(["bash", "scripts/evaluate.sh"])
    assert seen == [sys.executable, "/opt/other/python"]
