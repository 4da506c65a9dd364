"""Scoring (hand-checked BLEU values), compound splitting, bootstrap marks, checkpoint averaging,
and scripts/evaluate.sh end to end on a tiny model trained on the shipped zh-en sample."""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from fairseq_localness.evaluation import average, evaluate, scoring
from fairseq_localness.evaluation.scoring import compound_split, score_all
from localness_prep.tokenize import make_detokenizer, make_tokenizer

REPO = Path(__file__).resolve().parents[1]
SAMPLE = REPO / "data" / "sample-zh-en"


def bleu(hyps: list[str], refs: list[str], **kw) -> float:
    return score_all(hyps, refs, **kw)["tokenized_bleu"]["score"]


# --- tokenised BLEU, by hand ------------------------------------------------------------------

def test_tokenized_bleu_hand_checked() -> None:
    hyps = ["the cat sat on the mat", "a dog barked loudly"]
    refs = ["the cat sat on a mat", "the dog barked loudly"]
    # clipped n-gram matches / totals over both sentences:
    #   1-grams 5+3 / 6+4, 2-grams 3+2 / 5+3, 3-grams 2+1 / 4+2, 4-grams 1+0 / 3+1; lengths 10 = 10 (BP 1)
    expected = 100 * (8 / 10 * 5 / 8 * 3 / 6 * 1 / 4) ** 0.25  # = 50.0
    result = score_all(hyps, refs)["tokenized_bleu"]
    assert result["score"] == pytest.approx(expected, abs=0.005) == 50.0
    assert result["precisions"] == [80.0, 62.5, 50.0, 25.0]
    assert (result["hyp_len"], result["ref_len"], result["bp"]) == (10, 10, 1.0)


def test_tokenized_bleu_case_and_brevity() -> None:
    hyp, ref = ["The Cat sat on the mat"], ["the cat sat on the mat"]
    # cased: 1-grams 4/6 (sat on the mat), 2-grams 3/5, 3-grams 2/4, 4-grams 1/3
    assert bleu(hyp, ref) == pytest.approx(100 * (4 / 6 * 3 / 5 * 2 / 4 * 1 / 3) ** 0.25, abs=0.005)
    assert bleu(hyp, ref, lowercase=True) == 100.0
    # every n-gram matches, but 5 hypothesis tokens for 6 reference tokens: BP = exp(1 - 6/5)
    assert bleu(["the cat sat on the"], ref) == pytest.approx(100 * math.exp(1 - 6 / 5), abs=0.005)
    # multi-bleu.perl: no smoothing, a missing 4-gram match gives 0
    assert bleu(["the cat sat on a rug"], ["the cat lay on the rug"]) == 0.0
    # tokens are whitespace-separated only: "mat." is not "mat"
    assert bleu(["the cat sat on the mat."], ["the cat sat on the mat ."]) < 100


def test_tokenized_bleu_equals_fairseq_score() -> None:
    """Same numbers as fairseq's own scorer (fairseq-score) on real sentences, up to 0.05: fairseq's
    C scorer (libbleu, which compares hashed n-grams) counts one bigram match more on this data than
    an exact count (sentence 94: a reversed sentence has no bigram in common with its reference)."""
    from fairseq.data.dictionary import Dictionary
    from fairseq.scoring import bleu as fairseq_bleu

    tok = make_tokenizer("en")
    refs = [tok(x) for x in scoring.read_lines(str(SAMPLE / "valid.en"))[:300]]
    hyps = [" ".join(r.split()[1:] if i % 3 == 0 else r.split()[::-1] if i % 3 == 1 else r.split()[:-1])
            for i, r in enumerate(refs)]
    for lowercase in (False, True):
        d = Dictionary()
        scorer = fairseq_bleu.Scorer(fairseq_bleu.BleuConfig(pad=d.pad(), eos=d.eos(), unk=d.unk()))
        for h, r in zip(hyps, refs):
            h, r = (h.lower(), r.lower()) if lowercase else (h, r)
            scorer.add(d.encode_line(r, add_if_not_exist=True), d.encode_line(h, add_if_not_exist=True))
        ours = score_all([h.upper() if lowercase else h for h in hyps], refs, lowercase=lowercase)["tokenized_bleu"]
        assert ours["score"] == pytest.approx(scorer.score(), abs=0.05)
        assert 10 < ours["score"] < 90


def test_compound_split() -> None:
    assert compound_split("a long-term plan") == "a long ##AT##-##AT## term plan"
    assert compound_split("a long @-@ term plan") == "a long ##AT##-##AT## term plan"
    assert compound_split("a long ##AT##-##AT## term plan") == "a long ##AT##-##AT## term plan"
    assert compound_split("yes - no -- maybe") == "yes - no -- maybe"
    # the Perl s///g original matches non-overlapping: the second hyphen of a-b-c stays
    assert compound_split("a-b-c") == "a ##AT##-##AT## b-c"
    hyp = ["das ist eine langfristige well-known Lösung für die EU-Kommission"]
    ref = ["das ist eine langfristige well @-@ known Lösung für die EU @-@ Kommission"]
    assert bleu(hyp, ref) < 60
    assert bleu(hyp, ref, compound=True) == 100.0
    assert score_all(hyp, ref, compound=True)["tokenized_bleu"]["hyp_len"] == 13  # 9 words, 2 of them split into 3


# --- detokenised BLEU, by hand ------------------------------------------------------------------

def test_detokenized_sacrebleu_hand_checked() -> None:
    tok = ["the cat &apos;s mat is red .", "he said &quot; hello &quot; to me ."]
    detok = [make_detokenizer("en")(h) for h in tok]
    assert detok == ["the cat's mat is red.", 'he said "hello" to me.']
    refs = ["the cat's mat is red.", 'he said "hi" to me.']
    # sacreBLEU 13a splits '"' and the final '.', not the apostrophe:
    #   s1: the cat's mat is red .  (identical: 6/6 5/5 4/4 3/3)
    #   s2: he said " hello " to me .  vs  he said " hi " to me .  -> 7/8 5/7 3/6 1/5
    expected = 100 * (13 / 14 * 10 / 12 * 7 / 10 * 4 / 8) ** 0.25  # = 72.14
    scores = score_all(tok, [make_tokenizer("en")(r) for r in refs], hyp_detok=detok, ref_detok=refs, lang="en")
    assert scores["sacrebleu"]["score"] == pytest.approx(expected, abs=0.005)
    assert round(expected, 2) == 72.14
    assert scores["sacrebleu"]["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:")
    assert scores["chrf"]["signature"].startswith("nrefs:1|case:mixed|eff:yes|nc:6|nw:0|space:no|")
    assert 0 < scores["chrf"]["score"] < 100
    lower = score_all(tok, tok, hyp_detok=detok, ref_detok=[r.upper() for r in refs], lowercase=True)
    assert lower["sacrebleu"]["score"] == pytest.approx(expected, abs=0.005)
    assert "case:lc" in lower["sacrebleu"]["signature"]


# --- paired bootstrap -----------------------------------------------------------------------

@pytest.fixture(scope="module")
def refs() -> list[str]:
    tok = make_tokenizer("en")
    return [tok(x) for x in scoring.read_lines(str(SAMPLE / "test.en"))[:80]]


def test_bootstrap_marks_and_format(refs: list[str]) -> None:
    worse = [" ".join(r.split()[:-2]) for r in refs]  # drop the last two tokens of every sentence
    up = score_all(refs, refs, baseline_tok=worse, bootstrap_samples=200)
    sig = up["significance"]["tokenized_bleu"]
    assert sig["mark"] == "⇑" and sig["system"] == 100.0 and sig["delta"] > 0
    assert sig["p_value"] == pytest.approx(1 / 201, abs=1e-4)  # never beaten in 200 resamples
    assert "⇑ vs baseline" in scoring.summary(up) and "better, p < 0.01" in scoring.summary(up)
    down = score_all(worse, refs, baseline_tok=refs, bootstrap_samples=200)["significance"]["tokenized_bleu"]
    assert down["mark"] == "⇓" and down["delta"] < 0
    same = score_all(refs, refs, baseline_tok=list(refs), bootstrap_samples=200)["significance"]["tokenized_bleu"]
    assert same["mark"] == "" and same["p_value"] == 1.0
    # the mark follows the printed p (three decimals): 0.0099 prints 0.010, 50/1001 prints 0.050
    marks = [scoring.Significance("x", 2.0, 1.0, p, 1000).mark for p in (0.001, 0.0094, 0.0099, 0.01, 0.049, 50 / 1001,
                                                                          0.05, 0.5)]
    assert marks == ["⇑", "⇑", "↑", "↑", "↑", "", "", ""]
    # the difference of the scores as printed: 41.96 - 40.64, not round(41.956 - 40.6449, 2) = 1.31
    assert scoring.Significance("x", 41.956, 40.6449, 0.5, 1000).delta == 1.32
    assert scoring.Significance("x", 1.0, 2.0, 0.03, 1000).mark == "↓"
    with pytest.raises(ValueError, match="line counts differ"):
        score_all(refs, refs, baseline_tok=refs[:-1])


@pytest.mark.parametrize("lowercase", [False, True])
def test_one_output_bootstrap_is_sacrebleus_paired_test(refs: list[str], lowercase: bool) -> None:
    """With one output per system the test is sacreBLEU's ``PairedTest`` (``--paired-bs``): the same scores and the
    same p, to the last resample, on an undecided case."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.significance import PairedTest

    system = [" ".join(w for i, w in enumerate(r.split()) if i % 5 != 1) for r in refs]
    baseline = [" ".join(w for i, w in enumerate(r.split()) if i % 6 != 2) for r in refs]
    _, scores = PairedTest([("baseline", baseline), ("system", system)], {"BLEU": BLEU(lowercase=lowercase)},
                           references=[refs], test_type="bs", n_samples=300)()
    expected_baseline, expected = scores["BLEU"]
    ours = scoring.paired_bootstrap(BLEU(lowercase=lowercase), system, baseline, refs, "BLEU", 300)
    assert (ours.system, ours.baseline, ours.p_value) == (expected.score, expected_baseline.score, expected.p_value)
    assert 0.01 < ours.p_value < 0.9


def test_the_bootstrap_p_is_one_sided_in_the_observed_direction() -> None:
    """What the docs say of the marks' false-alarm rate. With no real difference, the observed difference is a
    draw around zero and the resampled ones spread around it with the same sd (here normal, sd 1, as a bootstrap
    of a long test set is). sacreBLEU's p then falls below 0.05 for about one system in nine and below 0.01 for
    about one in fifty, as a one-sided test in the observed direction would: twice the two-sided rates. Far from
    zero it is that one-sided tail: an observed +2 (2 sd) gives P(Z > 2) = 0.023, not the two-sided 0.046."""
    import numpy as np

    rng = np.random.default_rng(7)
    trials, samples = 4000, 1000
    observed = rng.normal(size=trials)
    p = np.array([scoring.bootstrap_p(rng.normal(o, 1.0, samples), o) for o in observed]).round(3)
    below_05, below_01 = float(np.mean(p < 0.05)), float(np.mean(p < 0.01))
    assert 0.09 < below_05 < 0.13 and 0.012 < below_01 < 0.03, (below_05, below_01)
    two_sd = scoring.bootstrap_p(rng.normal(2.0, 1.0, 200_000), 2.0)  # observed +2, resamples around it, sd 1
    assert two_sd == pytest.approx(0.0228, abs=0.002)


# --- a tiny trained model: averaging and evaluate.sh -----------------------------------------

def _venv_env() -> dict[str, str]:
    return dict(os.environ, PYTHON=sys.executable,
                PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict[str, Path]:
    """300/30/43 tokenised zh-en sample pairs, binarised; a 1-layer transformer trained 3 epochs.
    43 test sentences: not a multiple of fairseq's batch-size multiple (8), see evaluate.run_generate."""
    root = tmp_path_factory.mktemp("tiny-zh-en")
    raw = root / "raw"
    raw.mkdir()
    spans = {"train": (0, 300), "valid": (300, 330), "test": (330, 373)}
    for lang in ("zh", "en"):
        tok = make_tokenizer(lang)
        text = scoring.read_lines(str(SAMPLE / f"train.{lang}"))
        for split, (a, b) in spans.items():
            (raw / f"{split}.tok.{lang}").write_text("".join(tok(x) + "\n" for x in text[a:b]), encoding="utf-8")
            if split == "test":
                (raw / f"test.{lang}").write_text("".join(x + "\n" for x in text[a:b]), encoding="utf-8")
    data_bin = root / "data-bin"
    py = [sys.executable, "-m"]
    subprocess.run(py + ["fairseq_cli.preprocess", "--source-lang", "zh", "--target-lang", "en",
                         "--trainpref", raw / "train.tok", "--validpref", raw / "valid.tok", "--testpref", raw / "test.tok",
                         "--destdir", data_bin], check=True, capture_output=True)
    (data_bin / "prep-info.json").write_text(json.dumps(
        {"src": "zh", "tgt": "en", "bpe": "none", "lowercased": False, "compound_split": False,
         "tok_ref": "../raw/test.tok.en", "detok_ref": "../raw/test.en"}))
    ckpt = root / "ckpt"
    subprocess.run(py + ["fairseq_cli.train", data_bin, "--user-dir", REPO / "fairseq_localness", "--arch", "transformer",
                         "--encoder-layers", "1", "--decoder-layers", "1", "--encoder-embed-dim", "16",
                         "--decoder-embed-dim", "16", "--encoder-ffn-embed-dim", "32", "--decoder-ffn-embed-dim", "32",
                         "--encoder-attention-heads", "2", "--decoder-attention-heads", "2", "--optimizer", "adam",
                         "--lr", "0.01", "--max-tokens", "2000", "--max-epoch", "3", "--save-dir", ckpt, "--cpu",
                         "--seed", "1", "--no-progress-bar", "--disable-validation"], check=True, capture_output=True)
    return {"root": root, "data_bin": data_bin, "ckpt": ckpt, "raw": raw}


def test_average_checkpoints(trained: dict[str, Path]) -> None:
    paths = average.last_checkpoints(str(trained["ckpt"]), 2)
    assert [Path(p).name for p in paths] == ["checkpoint2.pt", "checkpoint3.pt"]
    out = trained["root"] / "avg.pt"
    average.save_checkpoint(average.average_checkpoints(paths), str(out))
    a, b = (torch.load(p, map_location="cpu")["model"] for p in paths)  # weights_only: compat allow-lists
    avg = torch.load(out, map_location="cpu")
    assert "last_optimizer_state" not in avg and avg["cfg"]["model"] is not None
    floats = [k for k, v in a.items() if v.is_floating_point()]
    assert floats and not all(torch.equal(a[k], b[k]) for k in floats)
    for k in floats:
        assert torch.allclose(avg["model"][k], (a[k] + b[k]) / 2, atol=1e-7), k
    with pytest.raises(ValueError, match=r"last 5 epoch checkpoints .* has 3: checkpoint1.pt, checkpoint2.pt, checkpoint3.pt"):
        average.last_checkpoints(str(trained["ckpt"]), 5)
    # the command: an --output in no directory is named before any checkpoint is loaded
    missing = trained["root"] / "no-dir" / "avg.pt"
    with pytest.raises(SystemExit, match=f"--output {missing}: no directory {missing.parent}"):
        average.main([str(trained["ckpt"]), "--last", "2", "--output", str(missing)])


def test_evaluate_sh_end_to_end(trained: dict[str, Path]) -> None:
    ckpt, data_bin = trained["ckpt"], trained["data_bin"]
    evaluate.main([str(ckpt), str(data_bin), "--checkpoint", "checkpoint1.pt", "--beam", "2", "--cpu"])  # baseline
    base_dir = ckpt / "eval-test-checkpoint1"
    proc = subprocess.run(["bash", REPO / "scripts" / "evaluate.sh", ckpt, data_bin, "--avg-last", "2", "--beam", "2",
                           "--lenpen", "0.6", "--cpu", "--baseline-hyp", base_dir, "--bootstrap-samples", "100"],
                          capture_output=True, text=True, env=_venv_env())
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = ckpt / "eval-test-avg2"
    scores = json.loads((out / "scores.json").read_text())
    assert scores["sentences"] == 43 and scores["source_lang"] == "zh" and scores["target_lang"] == "en"
    assert [Path(p).name for p in scores["averaged"]] == ["checkpoint2.pt", "checkpoint3.pt"]
    assert (out / "averaged-last2.pt").is_file()
    assert "--lenpen 0.6" in scores["generate"]["command"] and "--remove-bpe" not in scores["generate"]["command"]
    assert scores["detok_ref"] == str(trained["raw"] / "test.en")  # from prep-info.json
    for key in ("tokenized_bleu", "sacrebleu", "chrf"):
        assert 0 <= scores[key]["score"] <= 100
    for name in ("hyp.tok.txt", "ref.tok.txt", "hyp.detok.txt"):
        assert len(scoring.read_lines(str(out / name))) == 43
    # tokenised references from prep-info.json, not fairseq-generate's T- lines (which hold <<unk>>)
    assert scores["tok_ref"] == str(trained["raw"] / "test.tok.en")
    assert scoring.read_lines(str(out / "ref.tok.txt")) == scoring.read_lines(str(trained["raw"] / "test.tok.en"))
    t_lines = evaluate.parse_generate(str(out / "generate-test.txt"))[1]
    assert any("<<unk>>" in t for t in t_lines) and len(t_lines) == 43
    # the scores are the ones the scoring module computes from the written files
    again = score_all(scoring.read_lines(str(out / "hyp.tok.txt")), scoring.read_lines(str(out / "ref.tok.txt")))
    assert again["tokenized_bleu"]["score"] == scores["tokenized_bleu"]["score"]
    # and sacreBLEU's own: tokenized BLEU is BLEU of the tokenised files with no further tokenisation; sacreBLEU
    # and chrF score the detokenised hypotheses against the raw reference (cased)
    from sacrebleu.metrics import BLEU, CHRF
    hyp_tok, ref_tok = scoring.read_lines(str(out / "hyp.tok.txt")), scoring.read_lines(str(out / "ref.tok.txt"))
    hyp_detok, raw_ref = scoring.read_lines(str(out / "hyp.detok.txt")), scoring.read_lines(scores["detok_ref"])
    assert scores["tokenized_bleu"]["score"] == round(BLEU(tokenize="none", smooth_method="none", force=True).corpus_score(
        hyp_tok, [ref_tok]).score, 2)
    assert scores["sacrebleu"]["score"] == round(BLEU().corpus_score(hyp_detok, [raw_ref]).score, 2)
    assert scores["chrf"]["score"] == round(CHRF().corpus_score(hyp_detok, [raw_ref]).score, 2)
    sig = scores["significance"]
    assert set(sig) == {"tokenized_bleu", "sacrebleu"}
    assert sig["tokenized_bleu"]["baseline"] == json.loads((base_dir / "scores.json").read_text())["tokenized_bleu"]["score"]
    found = sig["tokenized_bleu"]  # the mark is the one its p and the sign of its difference call for
    better = found["delta"] > 0
    expected = "" if found["delta"] == 0 or found["p_value"] >= 0.05 else \
        ("⇑" if better else "⇓") if found["p_value"] < 0.01 else ("↑" if better else "↓")
    assert found["mark"] == expected, found
    assert "tokenised BLEU (cased)" in proc.stdout and "sacreBLEU" in proc.stdout and "vs baseline" in proc.stdout

    # an existing evaluation is not overwritten without --force
    before = (out / "scores.json").read_bytes()
    with pytest.raises(SystemExit, match="already holds an evaluation"):
        evaluate.main([str(ckpt), str(data_bin), "--avg-last", "2"])
    assert (out / "scores.json").read_bytes() == before


def test_parse_generate(tmp_path: Path) -> None:
    gen = tmp_path / "generate-test.txt"
    gen.write_text("2026 | INFO | noise\nS-1\tquelle\nT-1\tref one\nH-1\t-0.5\thyp one\nH-1\t-0.9\tsecond best\n"
                   "D-1\t-0.5\thyp one\nP-1\t-0.1 -0.2\nS-0\tsrc\nT-0\tref zero\nH-0\t-1.2\t\n"
                   "Generate test with beam=5: BLEU4 = 1.00\n", encoding="utf-8")
    assert evaluate.parse_generate(str(gen)) == (["", "hyp one"], ["ref zero", "ref one"])
    gen.write_text("T-0\tref\nH-0\t-1\thyp\nT-2\tref\nH-2\t-1\thyp\n", encoding="utf-8")
    with pytest.raises(evaluate.EvalError, match="incomplete"):
        evaluate.parse_generate(str(gen))


def test_evaluate_errors(trained: dict[str, Path], tmp_path: Path) -> None:
    ckpt, data_bin = str(trained["ckpt"]), str(trained["data_bin"])
    cases = [
        ([str(tmp_path / "nope"), data_bin], "checkpoint directory .*nope does not exist"),
        ([ckpt, str(tmp_path)], "has no dict"),
        ([ckpt, data_bin], r"checkpoint_best.pt does not exist \(checkpoints there: checkpoint1.pt"),
        ([ckpt, data_bin, "--avg-last", "4"], "has 3: checkpoint1.pt"),
        ([ckpt, data_bin, "--detok-ref", str(tmp_path / "missing.en")], "--detok-ref .*: no such file"),
        ([ckpt, data_bin, "--subset", "valid", "--source-lang", "de", "--target-lang", "en"], "no binarised 'valid' split for de-en"),
        ([ckpt, data_bin, "--baseline-hyp", str(tmp_path)], "must be an evaluation output directory"),
    ]
    for argv, message in cases:
        with pytest.raises(SystemExit, match=message):
            evaluate.main(argv + ["--out", str(tmp_path / "eval")])
    # files with the wrong number of lines are refused before decoding
    short = tmp_path / "short.en"
    short.write_text("only one line\n")
    for flag in ("--detok-ref", "--ref", "--baseline-hyp"):
        with pytest.raises(SystemExit, match="short.en has 1 lines but the 'test' split has 43 sentences"):
            evaluate.main([ckpt, data_bin, "--checkpoint", "checkpoint3.pt", flag, str(short),
                           "--out", str(tmp_path / "eval2")])
    assert not (tmp_path / "eval2").exists()


def test_the_generation_timer_counts_cpu_time_not_waiting() -> None:
    """timed_generate's stopwatch sums fairseq's wall-clock intervals and, beside them, the process's CPU time over
    the same intervals: a wait (here a sleep, like a stopped process or one waiting for a core) moves only the
    first, a computation both."""
    import time

    from fairseq_localness.evaluation.timed_generate import CPUTimedStopwatch

    timer = CPUTimedStopwatch()
    timer.start()
    time.sleep(0.3)
    timer.stop(7)
    assert timer.sum >= 0.3 and timer.cpu_sum < 0.1 and timer.n == 7
    timer.start()
    end = time.process_time() + 0.2
    while time.process_time() < end:  # busy: 0.2 s of CPU time
        pass
    timer.stop(5)
    assert 0.2 <= timer.cpu_sum <= timer.sum - 0.3 + 0.05 and timer.n == 12
    assert timer in CPUTimedStopwatch.made


def test_the_decoder_imports_the_package_its_user_dir_names(tmp_path) -> None:
    """evaluate.sh's decoder runs as a module of this package: run from a directory that holds another
    `fairseq_localness` (another checkout), it still imports this one, the one its --user-dir names."""
    decoy = tmp_path / "fairseq_localness"
    decoy.mkdir()
    (decoy / "__init__.py").write_text("raise ImportError('the checkout in the working directory was imported')\n")
    env = evaluate.package_first_env()
    found = subprocess.run([*evaluate.GENERATE, "--help"], cwd=tmp_path, env=env, capture_output=True, text=True)
    assert found.returncode == 0, found.stderr[-2000:]
    assert "--user-dir" in found.stdout
    # the mechanism, shown: the same module without -P and this package first imports the decoy
    plain = subprocess.run([sys.executable, "-m", "fairseq_localness.evaluation.timed_generate", "--help"],
                           cwd=tmp_path, capture_output=True, text=True)
    assert plain.returncode != 0 and "the checkout in the working directory was imported" in plain.stderr
