"""The settings evaluation actually uses: defaults read from the data's prep-info.json, and the decoding every
paper-table row passes to evaluation (fairseq_localness/experiments/reproduce.py).

fairseq-generate is replaced by a stub that writes a fixed output, so only the settings are checked here
(the BLEU computation itself is checked in tests/test_evaluate.py).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fairseq_localness.evaluation import evaluate, scoring

SENTENCES = 40  # the synthetic corpus' test split (tests/localness_testing.py)


@pytest.fixture
def eval_dirs(tiny_data_bin, tmp_path):
    data_bin = tmp_path / "data-bin"
    shutil.copytree(tiny_data_bin, data_bin)
    (tmp_path / "tok").mkdir()
    (tmp_path / "tok" / "test.tgt").write_text("".join(f"REF-{i} A-B\n" for i in range(SENTENCES)))
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    (checkpoints / "checkpoint_best.pt").write_bytes(b"")  # never loaded: generation is stubbed
    return data_bin, checkpoints


@pytest.fixture
def recorded(monkeypatch):
    """Stub fairseq-generate; record what generation and scoring were asked to do."""
    calls: dict = {}

    def fake_generate(a, checkpoint, src, tgt, remove_bpe, out_txt):
        calls["generate"] = {"beam": a.beam, "lenpen": a.lenpen, "remove_bpe": remove_bpe, "src": src, "tgt": tgt}
        with open(out_txt, "w") as out:
            for i in range(SENTENCES):
                out.write(f"T-{i}\tgenerated-ref {i}\nH-{i}\t-0.5\tx y z w a-b {i}\n")
        return ["fairseq-generate", "(stub)"]

    real_score_all = scoring.score_all

    def spy(hyps, refs, **kwargs):
        calls["score"] = {"refs": list(refs), **kwargs}
        return real_score_all(hyps, refs, **kwargs)

    monkeypatch.setattr(evaluate, "run_generate", fake_generate)
    monkeypatch.setattr(evaluate.scoring, "score_all", spy)
    return calls


def run_evaluate(checkpoints: Path, data_bin: Path, *flags: str) -> dict:
    args = evaluate.build_parser().parse_args([str(checkpoints), str(data_bin), "--no-sacrebleu",
                                              "--bootstrap-samples", "0", "--out", str(checkpoints / "eval"), "--force",
                                              *flags])
    return evaluate.evaluate(args)


PREP_INFO = {"script": "prepare-x.sh", "src": "src", "tgt": "tgt", "bpe": "sentencepiece", "lowercased": True,
             "compound_split": True, "tok_ref": "../tok/test.tgt", "detok_ref": None}


def test_defaults_come_from_prep_info(eval_dirs, recorded):
    data_bin, checkpoints = eval_dirs
    (data_bin / "prep-info.json").write_text(json.dumps(PREP_INFO))
    scores = run_evaluate(checkpoints, data_bin)
    assert recorded["generate"]["remove_bpe"] == "sentencepiece"
    assert recorded["score"]["lowercase"] is True and recorded["score"]["compound"] is True
    assert recorded["score"]["refs"][:2] == ["REF-0 A-B", "REF-1 A-B"]  # tok_ref, relative to DATA_BIN
    assert scores["tok_ref"] == str((data_bin.parent / "tok" / "test.tgt").resolve())


def test_flags_override_prep_info(eval_dirs, recorded):
    data_bin, checkpoints = eval_dirs
    (data_bin / "prep-info.json").write_text(json.dumps(PREP_INFO))
    run_evaluate(checkpoints, data_bin, "--no-lowercase", "--no-compound-split", "--remove-bpe", "none",
                 "--beam", "4", "--lenpen", "0.6")
    assert recorded["generate"] == {"beam": 4, "lenpen": 0.6, "remove_bpe": "none", "src": "src", "tgt": "tgt"}
    assert recorded["score"]["lowercase"] is False and recorded["score"]["compound"] is False


def test_without_prep_info_nothing_is_assumed(eval_dirs, recorded):
    data_bin, checkpoints = eval_dirs
    run_evaluate(checkpoints, data_bin)
    assert recorded["generate"]["remove_bpe"] == "subword_nmt"
    assert recorded["score"]["lowercase"] is False and recorded["score"]["compound"] is False
    assert recorded["score"]["refs"][0] == "generated-ref 0"  # fairseq-generate's T- lines


def test_compound_split_changes_the_score_as_expected(eval_dirs, recorded):
    """'a-b' is split into 'a ##AT##-##AT## b' on both sides only with compound splitting on. Every sentence is
    'x y z w a-b i' against the reference 'x y z w a-c i', so BLEU's n-gram precisions are, by hand:
    plain (6 tokens)  5/6, 3/5, 2/4, 1/3: BLEU = 100 * (1/12) ** (1/4) = 53.73;
    split (8 tokens)  7/8, 5/7, 4/6, 3/5: BLEU = 100 * (1/4) ** (1/4) = 70.71 (no brevity penalty either way)."""
    data_bin, checkpoints = eval_dirs
    (data_bin / "prep-info.json").write_text(json.dumps(dict(PREP_INFO, lowercased=False)))
    (data_bin.parent / "tok" / "test.tgt").write_text("".join(f"x y z w a-c {i}\n" for i in range(SENTENCES)))
    split = run_evaluate(checkpoints, data_bin)["tokenized_bleu"]
    plain = run_evaluate(checkpoints, data_bin, "--no-compound-split")["tokenized_bleu"]
    assert (split["compound_split"], plain["compound_split"]) == (True, False)
    assert split["score"] == pytest.approx(100 * (1 / 4) ** (1 / 4), abs=0.01)
    assert plain["score"] == pytest.approx(100 * (1 / 12) ** (1 / 4), abs=0.01)


def test_an_output_directory_holding_files_no_evaluation_wrote_is_refused(eval_dirs, recorded):
    """A hand-made --out holding a hyp.tok.txt (say, a baseline's) is not overwritten without --force; an evaluation
    of ours that stopped before its scores.json is redone in place; --out naming a file is refused."""
    data_bin, checkpoints = eval_dirs
    out = checkpoints / "mine"
    out.mkdir()
    (out / "hyp.tok.txt").write_text("my baseline\n")
    args = [str(checkpoints), str(data_bin), "--no-sacrebleu", "--bootstrap-samples", "0", "--out", str(out)]
    with pytest.raises(evaluate.EvalError, match="hyp.tok.txt exists and no evaluation wrote it; pass --force"):
        evaluate.evaluate(evaluate.build_parser().parse_args(args))
    assert (out / "hyp.tok.txt").read_text() == "my baseline\n" and "generate" not in recorded
    (out / ".evaluation").write_text("")  # ours, interrupted: no scores.json yet
    evaluate.evaluate(evaluate.build_parser().parse_args(args))  # redone: the scores and hypotheses below are new
    assert (out / "scores.json").is_file() and (out / "hyp.tok.txt").read_text().startswith("x y z w a-b 0")
    (checkpoints / "a-file").write_text("")
    with pytest.raises(evaluate.EvalError, match="a-file: a file, not a directory"):
        evaluate.evaluate(evaluate.build_parser().parse_args([*args[:-1], str(checkpoints / "a-file")]))


def test_a_bootstrap_without_resamples_is_refused_by_every_door(eval_dirs, recorded, tmp_path, capsys):
    """With no resample the paired bootstrap's p would be 1 whatever the systems did: evaluate refuses it against
    a baseline before decoding, the scoring door before reading, and the library function itself."""
    data_bin, checkpoints = eval_dirs
    (tmp_path / "hyp").write_text("a b\n")
    args = [str(checkpoints), str(data_bin), "--baseline-hyp", str(tmp_path / "hyp"), "--bootstrap-samples", "0"]
    with pytest.raises(evaluate.EvalError, match="--bootstrap-samples 0 with --baseline-hyp"):
        evaluate.evaluate(evaluate.build_parser().parse_args(args))
    assert "generate" not in recorded
    with pytest.raises(SystemExit) as exit:
        scoring.main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "hyp"), "--baseline-hyp",
                      str(tmp_path / "hyp"), "--bootstrap-samples", "0"])
    assert exit.value.code == 2 and "--bootstrap-samples 0 with --baseline-hyp" in capsys.readouterr().err
    with pytest.raises(ValueError, match="at least 1 resample, got 0"):
        scoring.paired_bootstrap(scoring.tokenized_bleu_metric(), ["a b"], ["a b"], ["a b"], "BLEU", 0)


def test_the_scoring_door_never_replaces_a_json_file(tmp_path, capsys):
    (tmp_path / "hyp").write_text("a b\n")
    (tmp_path / "mine.json").write_text("{}\n")
    with pytest.raises(SystemExit) as exit:
        scoring.main(["--hyp", str(tmp_path / "hyp"), "--ref", str(tmp_path / "hyp"), "--json", str(tmp_path / "mine.json")])
    assert exit.value.code == 2 and "mine.json exists" in capsys.readouterr().err
    assert (tmp_path / "mine.json").read_text() == "{}\n"


def test_bad_option_values_are_refused_before_any_decoding(capsys):
    for flag, value, why in (("--sacrebleu-tokenize", "bogus", "not a sacreBLEU tokenizer: none, zh, 13a"),
                             ("--bootstrap-samples", "-1", "must be 0 or more"),
                             ("--generate-args", "--nbest '2", "No closing quotation")):
        with pytest.raises(SystemExit) as exit:
            evaluate.build_parser().parse_args(["CK", "DATA", flag, value])
        error = capsys.readouterr().err
        assert exit.value.code == 2 and f"argument {flag}" in error and why in error, error


# --- the decoding each paper-table row passes to evaluation -------------------------------------------------------

#: (beam, length penalty, lowercased BLEU, En-De compound splitting) each paper decoded and scored with,
#: written out from the papers (and the tools they name where a paper is silent):
#: Yang et al. 2018/2019 and Xu et al. 2019 used THUMT (Yang 2018 Sec. 4.1, Xu 2019 App. A.1), whose
#: decoding defaults are beam 4, alpha 0.6; case-sensitive BLEU (Xu 2019 Sec. 4). Nguyen et al. 2020:
#: case-sensitive tokenized BLEU (Sec. 5.1), beam 5 and lenpen 0.6 from the authors' released decoding script
#: (tree_fairseq/runs/infer_model_v2.sh), without compound splitting (the paper names none).
#: Fan et al. 2021 Sec. 3.1.1: beam 4 / lenpen 0.6 for base and big (WMT14 En-De, compound-split by the
#: released test scripts), beam 5 / lenpen 1.0 for small (IWSLT14 De-En, case-insensitive, Sec. 3.2.1).
THUMT = (4, 0.6, False, False)
EXPECTED_DECODING = {
    "yang2018": lambda setting: THUMT,
    "yang2019": lambda setting: THUMT,
    "xu2019": lambda setting: THUMT,
    "nguyen2020": lambda setting: (5, 0.6, False, False),  # the authors' infer_model_v2.sh: BEAM=5, LENPEN=0.6
    "fan2021": lambda setting: (5, 1.0, True, False) if "iwslt14" in setting else (4, 0.6, False, True),
}


def planned_rows():
    from fairseq_localness.experiments import reproduce

    tables = reproduce.load_tables()
    for paper, spec in tables["papers"].items():
        for table in spec["tables"]:
            for row in reproduce.table_rows(tables, paper, table):
                # translation rows only: classifiers and LMs (Nguyen 2020 Tables 5-6) go to scripts/score_task.sh
                if not (row.quoted or row.pending) and row.setting and row.arch \
                        and reproduce.evaluation_of(tables, row.scored_by).task == "translation":
                    yield tables, row


def test_every_row_passes_its_papers_decoding_to_evaluation(tmp_path):
    """The evaluation command of each trained row, parsed by evaluation's own parser, carries the paper's
    beam, length penalty, casing and compound splitting explicitly (never left to prep-info defaults)."""
    from fairseq_localness.experiments import reproduce

    checked = {}
    for tables, row in planned_rows():
        plan = reproduce.plan_row(row, tables, tmp_path / "work", tmp_path / "data")
        assert plan.evaluate[:2] == ["bash", str(reproduce.SCRIPTS / "evaluate.sh")]
        a = evaluate.build_parser().parse_args([str(x) for x in plan.evaluate[2:]])
        got = (a.beam, a.lenpen, a.lowercase, a.compound_split)
        assert got == EXPECTED_DECODING[row.paper](row.setting), f"{row.paper} table {row.table} row {row.id}"
        checked[row.paper] = checked.get(row.paper, 0) + 1
    assert set(checked) == set(EXPECTED_DECODING), checked  # every paper has trained rows
