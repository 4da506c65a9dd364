"""The comparison command (fairseq-localness-compare) and the run-directory guard that every trainer goes through.

The end-to-end part trains a tiny slice (2 architectures x 2 seeds x a few updates) on the synthetic corpus with a
recipe file of its own, checks the table's columns, the resume after an interruption, and the guard on the run
directories it made. The significance and the statistics are checked against values computed by hand.
"""

import ast
import csv
import hashlib
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from localness_testing import (BIN, REPO, USER_DIR, hold_lock, preprocess, release_lock, run,  # noqa: E402
                               write_synthetic_corpus)

from fairseq_localness.experiments import compare  # noqa: E402
from fairseq_localness.experiments.launch import Launch, LaunchError  # noqa: E402

COMPARE = [str(BIN / "python"), "-m", "fairseq_localness.experiments.compare"]

#: a recipe of the user's own, in configs/benchmark/'s format: the shared optimiser, a 3+3-layer model (the methods' default layers 1-3 fit)
RECIPE = """\
# @package _global_
defaults:
  - /optim/compare_small
  - _self_
task:
  _name: translation
  data: ???
  source_lang: src
  target_lang: tgt
dataset:
  max_tokens: 1024
  skip_invalid_size_inputs_valid_test: true
optimization:
  max_epoch: 2
  max_update: 6
checkpoint:
  save_interval_updates: 2
lr_scheduler:
  warmup_updates: 4
model:
  encoder_layers: 3
  decoder_layers: 3
  encoder_embed_dim: 32
  decoder_embed_dim: 32
  encoder_ffn_embed_dim: 64
  decoder_ffn_embed_dim: 64
  encoder_attention_heads: 2
  decoder_attention_heads: 2
  dropout: 0.1
  share_all_embeddings: true
"""


def tree_digest(directory: Path) -> dict:
    """Every file under ``directory`` with the SHA-1 of its bytes (a check that nothing changed)."""
    return {str(p.relative_to(directory)): hashlib.sha1(p.read_bytes()).hexdigest()
            for p in sorted(directory.rglob("*")) if p.is_file()}


# --------------------------------------------------------------------------- statistics by hand


def test_mean_and_sample_sd_by_hand():
    assert compare.mean_sd([30.0, 32.0, 34.0]) == (32.0, 2.0)  # sd = sqrt((4 + 0 + 4) / 2)
    assert compare.mean_sd([20.0]) == (20.0, None)
    assert compare.mean_sd([]) == (None, None)
    assert compare.mean_sd([1.0, None, 3.0]) == (2.0, pytest.approx(2 ** 0.5))


def test_progress_rate_counts_from_the_first_log_line_and_has_none_there():
    # a run resumed at update 400 logs update 400 first: no rate yet (it used to print 0.00 updates/s)
    assert compare.update_rate((400, 100.0), 400, 160.0) is None
    assert compare.update_rate((400, 100.0), 600, 900.0) == 200 / 800


def test_training_speed_is_the_update_weighted_median_of_the_epochs(tmp_path):
    """The speed column's wps: epochs of 126 updates at 3,000, 2,800 and 2,900 wps, one paused epoch at 200 and a
    resumed partial epoch of 10 updates at 100. Sorted: 100 (10), 200 (126), 2,800 (126), 2,900 (126), 3,000 (126);
    half the 514 updates is 257, reached at 2,800 (10 + 126 + 126 = 262). The update-weighted mean would be
    (100 * 10 + 200 * 126 + 8,700 * 126) / 514 = 2,183.7, pulled down by the pause."""
    from fairseq_localness.experiments.runlog import stats, weighted_median

    line = "[2026-11-26 12:00:00,000][train][INFO] - epoch {e:03d} | loss 5.0 | wps {wps} | ups 1.0 | num_updates {u}\n"
    log = "[2026-11-26 12:00:00,000][fairseq_cli.train][INFO] - num. shared model params: 2,396,672 (num. trained: 2,396,672)\n"
    for epoch, (wps, updates) in enumerate([(3000, 126), (200, 252), (2800, 378), (2900, 504), (100, 514)], 1):
        log += line.format(e=epoch, wps=wps, u=updates)
    (tmp_path / "hydra_train.log").write_text(log)
    assert stats(tmp_path) == {"params": 2396672, "train_wps": 2800.0, "updates": 514}
    assert weighted_median([(1.0, 1), (2.0, 1)]) == 1.0  # an even split: the lower middle value
    assert weighted_median([(5.0, 0)]) is None and weighted_median([]) is None


def write_eval(directory: Path, hyps, refs) -> Path:
    directory.mkdir(parents=True)
    (directory / "hyp.tok.txt").write_text("".join(h + "\n" for h in hyps))
    (directory / "ref.tok.txt").write_text("".join(r + "\n" for r in refs))
    (directory / "scores.json").write_text(json.dumps({"target_lang": "en"}))
    return directory


REFS = ["the cat sat on the mat", "a dog ran in the park", "birds fly over the old town", "she reads a long book"]


def test_pooled_bootstrap_when_every_resample_favours_the_system(tmp_path):
    """System = references (BLEU 100) in both seeds, baseline shares no 1-gram with them (BLEU 0): every one of
    the S resamples favours the system, so sacreBLEU's p = (0 + 1) / (S + 1) and the delta is +100."""
    wrong = ["zz yy xx ww vv uu"] * 4
    system = [write_eval(tmp_path / f"sys{s}", REFS, REFS) for s in (1, 2)]
    baseline = [write_eval(tmp_path / f"base{s}", wrong, REFS) for s in (1, 2)]
    result = compare.pooled_significance(system, baseline, lowercase=False, samples=199)["tokenized_bleu"]
    assert result["system"] == 100.0 and result["baseline"] == 0.0 and result["delta"] == 100.0
    assert result["p_value"] == round(1 / 200, 3)
    assert result["mark"] == "⇑"
    reverse = compare.pooled_significance(baseline, system, lowercase=False, samples=199)["tokenized_bleu"]
    assert reverse["mark"] == "⇓" and reverse["delta"] == -100.0


def test_pooled_bootstrap_of_identical_outputs_is_no_evidence(tmp_path):
    hyps = ["the cat sat on a mat", "a dog ran in the park", "birds fly over the town", "she reads a book"]
    system = [write_eval(tmp_path / f"sys{s}", hyps, REFS) for s in (1, 2)]
    baseline = [write_eval(tmp_path / f"base{s}", hyps, REFS) for s in (1, 2)]
    result = compare.pooled_significance(system, baseline, lowercase=False, samples=100)["tokenized_bleu"]
    assert result["delta"] == 0.0 and result["p_value"] == 1.0 and result["mark"] == ""


def test_pooled_bleu_is_the_bleu_of_every_seeds_output(tmp_path):
    """The pooled system is every seed's output, in seed order; its BLEU is the corpus BLEU of their concatenation
    (not the mean of the seeds' BLEUs). Which baseline seed sits beside which system seed does not matter: the
    bootstrap resamples test sentences with all their outputs, so a baseline of the same lines in another seed
    order scores the same."""
    from sacrebleu.metrics import BLEU

    seed1 = ["the cat sat on the mat", "a dog ran", "birds fly over the old town", "she reads a long book"]
    seed2 = ["the cat sat", "a dog ran in the park", "birds fly", "she reads a long book"]
    system = [write_eval(tmp_path / "s1", seed1, REFS), write_eval(tmp_path / "s2", seed2, REFS)]
    assert compare.run_outputs(system, "hyp.tok.txt") == [seed1, seed2]
    baseline = [write_eval(tmp_path / "b1", seed2, REFS), write_eval(tmp_path / "b2", seed1, REFS)]
    result = compare.pooled_significance(system, baseline, lowercase=False, samples=50)["tokenized_bleu"]
    pooled = BLEU(tokenize="none", smooth_method="none", force=True).corpus_score(seed1 + seed2, [REFS + REFS]).score
    mean_of_seeds = sum(BLEU(tokenize="none", smooth_method="none", force=True).corpus_score(seed, [REFS]).score
                        for seed in (seed1, seed2)) / 2
    assert abs(pooled - mean_of_seeds) > 0.1  # the two readings differ on these lines, so the check below can fail
    assert result["system"] == round(pooled, 2) == result["baseline"]  # the same lines in the other seed order


def test_a_repeated_seed_is_no_new_evidence(tmp_path):
    """The resampling unit is the test sentence, with all its outputs: three seeds that translated every sentence
    alike give the scores and the p of one seed. Resampling the 3N pooled lines one by one, as if they were 3N
    sentences, would shrink p (on the published Multi30k outputs: p = 0.146 for one seed, 0.041 for the same seed
    three times)."""
    import random

    rng = random.Random(0)
    refs = [" ".join(rng.choice("abcdefgh") for _ in range(rng.randint(4, 9))) for _ in range(40)]

    def noisy(line, rate):
        return " ".join(w if rng.random() > rate else "z" for w in line.split())

    hyps, base = [noisy(r, 0.3) for r in refs], [noisy(r, 0.32) for r in refs]
    one = compare.pooled_significance([write_eval(tmp_path / "s", hyps, refs)], [write_eval(tmp_path / "b", base, refs)],
                                      lowercase=False, samples=300)["tokenized_bleu"]
    three = compare.pooled_significance([write_eval(tmp_path / f"s{k}", hyps, refs) for k in range(3)],
                                        [write_eval(tmp_path / f"b{k}", base, refs) for k in range(3)],
                                        lowercase=False, samples=300)["tokenized_bleu"]
    assert one["p_value"] == 0.08 and one["mark"] == ""  # an undecided case, where a shrinking p would show
    assert three == one
    from fairseq_localness.evaluation.scoring import paired_bootstrap, tokenized_bleu_metric

    as_if_separate = paired_bootstrap(tokenized_bleu_metric(), hyps * 3, base * 3, refs * 3, "BLEU", 300)
    assert round(as_if_separate.p_value, 3) == 0.013  # what resampling the pooled lines one by one would claim


def test_the_test_scores_as_the_columns_were_scored(tmp_path):
    """Lowercasing and compound splitting come from the runs' scores.json (what their BLEU columns used), not from
    the data-bin; runs scored differently are refused, naming both files."""
    refs = ["The Cat sat on the old mat", "a well-known dog ran in the park"]
    hyps = ["the cat sat on the old mat", "a well-known dog ran in the park"]

    def scored(name, lowercase, compound=False, signature="nrefs:1|case:mixed|eff:no|tok:13a|smooth:exp|version:2.6.0"):
        directory = write_eval(tmp_path / name, hyps, refs)
        (directory / "scores.json").write_text(json.dumps({
            "target_lang": "en", "tokenized_bleu": {"lowercase": lowercase, "compound_split": compound},
            "sacrebleu": {"signature": signature}}))
        return directory

    settings = compare.scoring_settings([scored("a", True, True, "nrefs:1|case:lc|tok:ja-mecab-0.996-IPA")], False)
    assert settings == {"lowercase": True, "compound_split": True, "sacrebleu_lowercase": True,
                        "sacrebleu_tokenize": "ja-mecab", "target_lang": "en"}
    # an evaluation that records nothing (no sacreBLEU, an older scores.json) takes the others' settings
    assert compare.scoring_settings([scored("c", True), write_eval(tmp_path / "d", hyps, refs)], False)["lowercase"]
    assert compare.scoring_settings([write_eval(tmp_path / "e", hyps, refs)], True) == {
        "lowercase": True, "compound_split": False, "sacrebleu_lowercase": True, "sacrebleu_tokenize": None,
        "target_lang": "en"}
    cased = compare.pooled_significance([scored("s", False)], [scored("b", False)], lowercase=True, samples=20)
    lowered = compare.pooled_significance([scored("s2", True)], [scored("b2", True)], lowercase=False, samples=20)
    assert 0 < cased["tokenized_bleu"]["system"] < 100.0 == lowered["tokenized_bleu"]["system"]
    with pytest.raises(compare.CompareError, match=r"s3/scores.json and .*b3/scores.json were scored differently "
                                                   r"\(lowercase: False vs True\)"):
        compare.pooled_significance([scored("s3", False)], [scored("b3", True)], lowercase=False, samples=20)


def test_the_delta_cell_names_its_test_when_it_differs_from_the_row(tmp_path):
    test = {"delta": 1.2, "mark": "↑", "p_value": 0.03}
    row = {"arch": "transformer_dman", "norm": "pre", "seeds": [1, 2, 3], "significance_seeds": [1, 2],
           "significance": {"tokenized_bleu": test}, "params": 1, "train_speed_ratio": 1.0, "decode_speed_ratio": 1.0,
           **{k: 30.0 for k in ("sacrebleu", "tokenized_bleu", "chrf", "epochs")},
           **{f"{k}_sd": None for k in ("sacrebleu", "tokenized_bleu", "chrf", "epochs")}}
    line = compare.markdown_table([row], "transformer").splitlines()[-1]
    assert "| +1.20 ↑ (p = 0.030, tokenized BLEU, seeds 1,2) |" in line and "| 30.0 |" in line
    row.update(significance={"sacrebleu": test, "tokenized_bleu": test}, significance_seeds=[1, 2, 3])
    assert "| +1.20 ↑ (p = 0.030) |" in compare.markdown_table([row], "transformer")
    # the other way round: the baseline has a seed the row lacks, so the difference is not on all of its seeds
    base = {**row, "arch": "transformer", "seeds": [1, 2, 3, 4], "significance": None, "significance_seeds": None}
    assert "| +1.20 ↑ (p = 0.030, seeds 1,2,3) |" in compare.markdown_table([base, row], "transformer")


def test_speed_ratios_pair_each_run_with_the_baselines_run_of_the_same_seed(monkeypatch):
    """Ratios by hand: each run's speed over the baseline's run of its seed, then the mean over the seeds both
    have; a seed only one of the two has does not enter (a grid's later seeds may run faster than its first)."""
    monkeypatch.setattr(compare, "pooled_significance", lambda *args, **kwargs: {})  # no test outputs here

    def record(arch, seed, wps, decode):
        return {"norm": "pre", "arch": arch, "seed": seed, "train_wps": wps, "decode_tokens_per_s": decode,
                "params": 1, "placement": "none", "eval_dir": f"pre/{arch}/seed{seed}",
                **{k: 30.0 for k in ("sacrebleu", "tokenized_bleu", "chrf", "epochs", "best_valid_loss")}}

    def ratios(records):
        rows = compare.summarize(records, "transformer", lowercase=True, samples=10)
        return [(row["arch"], row["train_speed_ratio"], row["decode_speed_ratio"], row.get("significance_seeds"))
                for row in rows]

    # the baseline's faster seed 2 does not enter DMAN's ratio: 900/1000 and 50/100, not 900/1500 and 50/200
    assert ratios([record("transformer", 1, 1000, 100), record("transformer", 2, 2000, 300),
                   record("transformer_dman", 1, 900, 50)]) == [("transformer", 1.0, 1.0, None),
                                                                ("transformer_dman", 0.9, 0.5, [1])]
    # nor DMAN's seed 2 where the baseline has none
    assert ratios([record("transformer", 1, 1000, 100), record("transformer_dman", 1, 900, 50),
                   record("transformer_dman", 2, 4000, 400)])[1] == ("transformer_dman", 0.9, 0.5, [1])
    # two seeds in common: the mean of the ratios (0.9 + 0.5) / 2 = 0.7 and (0.5 + 2/3) / 2 = 0.58, not the ratio
    # of the means 1900 / 3000 = 0.63 and 250 / 400 = 0.63; rounded once, to two decimals
    assert ratios([record("transformer", 1, 1000, 100), record("transformer", 2, 2000, 300),
                   record("transformer_dman", 1, 900, 50), record("transformer_dman", 2, 1000, 200)])[1] \
        == ("transformer_dman", 0.7, 0.58, [1, 2])
    # no seed in common: no ratio
    assert ratios([record("transformer", 1, 1000, 100), record("transformer_dman", 2, 900, 50)])[1] \
        == ("transformer_dman", None, None, None)
    # a run without its training speed (an unreadable log): the ratio of the other seed, which the cell names
    rows = compare.summarize([record("transformer", 1, 1000, 100), record("transformer", 2, 2000, 300),
                              record("transformer_dman", 1, 900, 50), record("transformer_dman", 2, None, 200)],
                             "transformer", lowercase=True, samples=10)
    assert (rows[1]["train_speed_ratio"], rows[1]["train_speed_ratio_seeds"]) == (0.9, [1])
    assert "decode_speed_ratio_seeds" not in rows[1]
    assert compare.speed_cell(rows[1], "train_speed_ratio") == "0.90 (seed 1)"
    assert compare.speed_cell(rows[1], "decode_speed_ratio") == "0.58"


def test_decoding_ratios_read_the_cpu_clock_only_where_every_pair_has_it(monkeypatch):
    """A row's decoding ratios read the generation loop's CPU time where each of its runs and the baseline's run of
    the same seed logged it (timed_generate), and fairseq's wall-clock speed for every pair otherwise: a mean of
    ratios on two clocks would mix what they measure. A table on both clocks marks the wall-clock cells."""
    monkeypatch.setattr(compare, "pooled_significance", lambda *args, **kwargs: {})

    def record(arch, seed, wall, cpu):
        return {"norm": "pre", "arch": arch, "seed": seed, "train_wps": 1000, "decode_tokens_per_s": wall,
                "decode_tokens_per_cpu_s": cpu, "params": 1, "placement": "none", "eval_dir": f"pre/{arch}/seed{seed}",
                **{k: 30.0 for k in ("sacrebleu", "tokenized_bleu", "chrf", "epochs", "best_valid_loss")}}

    # the baseline's seed 2 decoded while paused: 100 wall-clock tokens/s but 400 per CPU second
    records = [record("transformer", 1, 400, 420), record("transformer", 2, 100, 400),
               record("transformer_dman", 1, 300, 336), record("transformer_dman", 2, 320, 320),
               # an architecture whose seed 2 decoded before the CPU time was logged: both its pairs on the wall clock
               record("transformer_sman", 1, 200, 210), record("transformer_sman", 2, 50, None)]
    rows = compare.summarize(records, "transformer", lowercase=True, samples=10)
    clocks = {row["arch"]: (row["decode_speed_clock"], row["decode_speed_ratio"]) for row in rows}
    # by hand: DMAN (336/420 + 320/400) / 2 = (0.8 + 0.8) / 2; SMAN (200/400 + 50/100) / 2 = 0.5
    assert clocks == {"transformer": ("cpu", 1.0), "transformer_dman": ("cpu", 0.8), "transformer_sman": ("wall", 0.5)}
    table = compare.markdown_table(rows, "transformer")
    assert "| 1.00 | 0.80 |" in table.split("transformer_dman")[1].split("\n")[0]
    assert "| 1.00 | 0.50 (wall clock) |" in table.split("transformer_sman")[1].split("\n")[0]
    assert "per CPU second" in compare.decoding_speed_note(rows)
    # a baseline seed without the CPU time puts the baseline's own row on the wall clock: its 1.00 is not marked
    records[1]["decode_tokens_per_cpu_s"] = None
    rows = compare.summarize(records[:4], "transformer", lowercase=True, samples=10)
    assert [row["decode_speed_clock"] for row in rows] == ["wall", "wall"]
    rows = compare.summarize(records[:3], "transformer", lowercase=True, samples=10)  # DMAN's seed 1 only
    assert [row["decode_speed_clock"] for row in rows] == ["wall", "cpu"]
    assert "(wall clock)" not in compare.markdown_table(rows, "transformer")
    # every run on the wall clock (a GPU grid, or runs decoded before the CPU time was logged): no marks, the old note
    wall_only = compare.summarize([{**r, "decode_tokens_per_cpu_s": None} for r in records], "transformer",
                                  lowercase=True, samples=10)
    assert {row["decode_speed_clock"] for row in wall_only} == {"wall"}
    assert "wall clock" not in compare.markdown_table(wall_only, "transformer")
    assert compare.decoding_speed_note(wall_only) == "decoding target tokens/s (fairseq-generate)"


def test_the_decoding_cpu_speed_is_read_from_timed_generates_line(tmp_path):
    from fairseq_localness.evaluation.outputs import generation_cpu_line

    (tmp_path / compare.GENERATE_LOG).write_text(
        "INFO:fairseq_cli.generate:Translated 1,000 sentences (13,759 tokens) in 103.3s (9.68 sentences/s, 133.25 "
        "tokens/s)\nINFO:fairseq_localness.evaluation.timed_generate:" + generation_cpu_line(10.0, 13759) + "\n")
    assert compare.decoding_speed(tmp_path) == 133.25
    assert compare.decoding_cpu_speed(tmp_path) == 1375.9  # 13,759 tokens / 10 s, by hand
    (tmp_path / compare.GENERATE_LOG).write_text("Translated 1,000 sentences (13,759 tokens) in 10.0s (100.0 "
                                                 "sentences/s, 1375.90 tokens/s)\n")  # a GPU decoding: no CPU line
    assert compare.decoding_cpu_speed(tmp_path) is None


def test_each_seeds_difference_and_the_length_ratio_by_hand(monkeypatch):
    """Δ per seed: each seed's BLEU minus the baseline's of that seed, on the seeds both have (seed 3, which the
    baseline lacks, does not enter); the length ratio is the mean over the row's seeds. The pooled Δ comes from
    the test and need not be the mean of the per-seed differences."""
    pooled = {"sacrebleu": {"delta": 0.35, "mark": "", "p_value": 0.2}}
    monkeypatch.setattr(compare, "pooled_significance", lambda *args, **kwargs: pooled)

    def record(arch, seed, sacrebleu, tokenized, ratio):
        return {"norm": "pre", "arch": arch, "seed": seed, "sacrebleu": sacrebleu, "tokenized_bleu": tokenized,
                "chrf": 50.0, "length_ratio": ratio, "train_wps": 1000, "decode_tokens_per_s": 100, "params": 1,
                "placement": "none", "eval_dir": f"pre/{arch}/seed{seed}", "epochs": 10, "best_valid_loss": 3.0}

    rows = compare.summarize([record("transformer", 1, 30.0, 31.0, 0.95), record("transformer", 2, 31.0, 32.5, 0.97),
                              record("transformer_dman", 1, 31.25, 31.5, 0.99),
                              record("transformer_dman", 2, 30.5, 33.0, 1.01),
                              record("transformer_dman", 3, 40.0, 40.0, 1.2)],
                             "transformer", lowercase=True, samples=10)
    dman = rows[1]
    # 31.25 - 30.0 and 30.5 - 31.0; tokenized 31.5 - 31.0 and 33.0 - 32.5
    assert dman["seed_deltas"] == {"sacrebleu": [1.25, -0.5], "tokenized_bleu": [0.5, 0.5]}
    assert dman["length_ratio"] == 1.067 and rows[0]["length_ratio"] == 0.96  # (0.99 + 1.01 + 1.2) / 3
    assert "seed_deltas" not in rows[0]
    # paired by seed, not by position: the baseline lacks seed 1 (DMAN's first), then DMAN lacks seed 2
    shifted = compare.summarize([record("transformer", 2, 31.0, 32.5, 0.97), record("transformer", 3, 29.0, 30.0, 0.9),
                                 record("transformer_dman", 1, 40.0, 40.0, 1.0),
                                 record("transformer_dman", 2, 30.5, 33.0, 1.01),
                                 record("transformer_dman", 3, 29.75, 29.0, 1.0)],
                                "transformer", lowercase=True, samples=10)
    assert shifted[1]["seed_deltas"] == {"sacrebleu": [-0.5, 0.75], "tokenized_bleu": [0.5, -1.0]}
    missing = compare.summarize([record("transformer", 1, 30.0, 31.0, 0.95), record("transformer", 2, 31.0, 32.5, 0.97),
                                 record("transformer", 3, 29.0, 30.0, 0.9),
                                 record("transformer_dman", 1, 31.25, 31.5, 0.99),
                                 record("transformer_dman", 3, 29.75, 29.0, 1.0)],
                                "transformer", lowercase=True, samples=10)
    assert missing[1]["seed_deltas"] == {"sacrebleu": [1.25, 0.75], "tokenized_bleu": [0.5, -1.0]}
    line = compare.markdown_table(rows, "transformer").splitlines()[-1]
    assert "| 1.067 | +0.35 (p = 0.200, seeds 1,2) | +1.25, -0.50 |" in line
    # the metric of Δ: tokenized BLEU where the test had no sacreBLEU
    pooled.pop("sacrebleu")
    pooled["tokenized_bleu"] = {"delta": 0.5, "mark": "", "p_value": 0.3}
    assert compare.seed_deltas(compare.summarize([record("transformer", 1, None, 31.0, 0.9),
                                                  record("transformer_dman", 1, None, 31.5, 0.9)],
                                                 "transformer", lowercase=True, samples=10)[1]) == [0.5]


def test_the_epochs_cell_is_rounded_once(monkeypatch):
    """Epochs 21, 21 and 19: mean 20.33, sample sd sqrt(((2/3)^2 * 2 + (4/3)^2) / 2) = 1.1547, printed 20.3 ± 1.2; the
    sd rounded first to two decimals (1.15, a float just below) would print 1.1."""
    monkeypatch.setattr(compare, "pooled_significance", lambda *args, **kwargs: {})

    def record(seed, epochs):
        return {"norm": "pre", "arch": "transformer", "seed": seed, "sacrebleu": 30.0, "tokenized_bleu": 30.0,
                "chrf": 50.0, "length_ratio": 1.0, "train_wps": 1000, "decode_tokens_per_s": 100, "params": 1,
                "placement": "none", "eval_dir": f"pre/transformer/seed{seed}", "epochs": epochs, "best_valid_loss": 3.0}

    rows = compare.summarize([record(1, 21), record(2, 21), record(3, 19)], "transformer", lowercase=True, samples=10)
    assert (rows[0]["epochs"], rows[0]["epochs_sd"]) == (20.3, 1.2)
    assert compare.markdown_table(rows, "transformer").splitlines()[-1].endswith("| 20.3 ± 1.2 |")


def test_the_notes_say_which_marks_too_few_resamples_cannot_give():
    """The smallest p of S resamples is 1/(S+1), printed and marked at three decimals. S = 104: 1/105 = 0.0095
    prints 0.010 (no ⇑/⇓); S = 105: 1/106 = 0.0094 prints 0.009. S = 19: 1/20 = 0.050 (no mark at all); S = 20:
    1/21 = 0.048."""
    assert compare.too_few_resamples(1000) == compare.too_few_resamples(105) == ""
    assert compare.too_few_resamples(104) == compare.too_few_resamples(20) == "; too few for ⇑/⇓"
    assert compare.too_few_resamples(19) == compare.too_few_resamples(1) == "; too few for any mark"


def test_seeds_archs_and_norms_are_checked():
    assert compare.parse_seeds("3") == [1, 2, 3]
    assert compare.parse_seeds("1,5") == [1, 5]
    for bad in ("0", "a", "2,2"):
        with pytest.raises(compare.CompareError, match="--seeds"):
            compare.parse_seeds(bad)
    groups = compare.load_compare_config()["groups"]
    assert len(groups["families"]) == 22 and groups["families"][0] == "transformer"
    for name, archs in groups.items():  # every group names registered architectures only
        assert compare.resolve_archs(name, groups) == archs
    assert compare.resolve_archs("papers,transformer_sman", groups)[-1] == "transformer_sman"
    with pytest.raises(compare.CompareError, match="unknown architecture.*transformer_gausian"):
        compare.resolve_archs("transformer,transformer_gausian", groups)


def test_the_caption_names_the_decoding_flags_that_decoded():
    """--eval-args come after the corpus's defaults, and evaluate.sh's parser keeps an option's last value: the
    caption gives that value alone, where the option was last given."""
    corpus_then_user = ["--beam", "5", "--lenpen", "1.0", "--beam", "1", "--max-len-b", "5"]
    assert compare.effective_flags(corpus_then_user) == ["--lenpen", "1.0", "--beam", "1", "--max-len-b", "5"]
    assert compare.effective_flags(["--beam", "5", "--beam=4", "--cpu", "--cpu"]) == ["--beam=4", "--cpu"]
    assert compare.effective_flags(["--beam", "5", "--lenpen", "1.0"]) == ["--beam", "5", "--lenpen", "1.0"]
    assert compare.effective_flags([]) == []


def test_norm_placement_is_the_same_switch_for_every_architecture():
    assert compare.norm_overrides("transformer", "pre") == [
        "model.encoder_normalize_before=true", "model.decoder_normalize_before=true"]
    # the MAN layers have their own switch, which sets the same two flags (layers/man.py, apply_man_norm)
    assert compare.norm_overrides("transformer_dman", "post")[-1] == "model.man_norm=post"


def test_every_family_trains_with_the_recipe(tmp_path):
    """Every architecture of the 'families' group composes with the Multi30k recipe and fairseq accepts its flags
    (what validate() checks before anything trains)."""
    data = tmp_path / "data-bin"
    data.mkdir()
    for name in ("dict.de.txt", "dict.en.txt"):  # one joined dictionary, as the recipe's shared embeddings need
        (data / name).write_text("a 1\n")
    for name in ("train.de-en.de.idx", "test.de-en.de.idx"):
        (data / name).write_text("")
    args = compare.build_parser().parse_args(["multi30k_de_en", "--data", str(data), "--seeds", "1",
                                              "--work", str(tmp_path / "w")])
    grid = compare.grid_from_args(args)
    assert len(grid.archs) == 22
    compare.validate(grid)
    assert not (tmp_path / "w").exists()  # validation writes nothing


# --------------------------------------------------------------------------- bad input, before anything trains


@pytest.mark.parametrize("argv, message", [
    (["multi30k", "--seeds", "1"], "unknown corpus 'multi30k'"),
    (["--archs", "transformer"], "give a shipped corpus"),
    (["multi30k_de_en", "--archs", "transformer,transformer_dmann"], "unknown architecture"),
    (["multi30k_de_en", "--data", "/nonexistent/data-bin"], "--data /nonexistent/data-bin: no such directory"),
    (["multi30k_de_en", "--fp16"], "--fp16 .* --gpus"),
    (["multi30k_de_en", "--norm", "middle"], "--norm 'middle'"),
    (["multi30k_de_en", "--recipe", "nonexistent.yaml"], "--recipe nonexistent.yaml: no such file"),
    (["multi30k_de_en", "--bootstrap-samples", "0"], "argument --bootstrap-samples: 0: must be 1 or more"),
    (["multi30k_de_en", "--gpu-hours"], "--gpu-hours estimates the papers' tables"),
    (["multi30k_de_en", "--data-root", "/nonexistent"], "--data-root /nonexistent: no multi30k_de_en/data-bin there"),
])
def test_bad_input_is_named_with_exit_code_2(argv, message, tmp_path):
    proc = run(COMPARE + argv + ["--work", str(tmp_path)], check=False)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr
    import re

    assert re.search(message, proc.stderr), proc.stderr[-2000:]
    assert not any(tmp_path.iterdir())


def test_gpus_split_the_recipes_batch_and_a_split_that_does_not_divide_it_is_refused(tiny_data_bin, tmp_path):
    """The recipe trains on 4096 tokens per update (configs/optim/compare_small.yaml): 2 GPUs take 2048 each, with
    update_freq 1, not 2 x 4096; 3 GPUs cannot split 4096 evenly and are refused before anything trains. A user's
    dataset.max_tokens is the per-GPU batch, and the launcher keeps the recipe's 4096 through update_freq."""
    def grid(gpus, overrides=()):
        return compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tiny_data_bin,
                            archs=["transformer"], seeds=[1], norms=["pre"], baseline="transformer",
                            work=tmp_path / "w", gpus=gpus, train_overrides=list(overrides))

    spec = compare.RunSpec("transformer", "pre", 1)
    assert compare.launch_of(grid(2), spec).plan() == {"effective_tokens": 4096, "world_size": 2,
                                                       "max_tokens": 2048, "update_freq": 1}
    assert compare.launch_of(grid(1), spec).plan()["max_tokens"] == 4096
    assert compare.launch_of(grid(0), spec).plan() == {"effective_tokens": 4096, "world_size": 1,
                                                       "max_tokens": 4096, "update_freq": 1}
    assert compare.launch_of(grid(2, ["dataset.max_tokens=1024"]), spec).plan()["update_freq"] == 2
    with pytest.raises(compare.CompareError, match=r"--gpus 3: the recipe's 4096 tokens per update do not split"):
        compare.validate(grid(3))
    assert not (tmp_path / "w").exists()


def test_what_would_fail_only_after_training_is_refused_before(tiny_data_bin, tmp_path):
    """A decoding reference that is not there (evaluate.sh reads it once the training is over), a recipe whose
    languages the data-bin lacks (the translation task stops when the run starts), and Slurm options without GPUs
    or a time limit: exit code 2, nothing written."""
    tiny = ["--data", str(tiny_data_bin), "--archs", "transformer", "--seeds", "1", "--work", str(tmp_path / "w")]
    cases = [
        (["--recipe", "compare_multi30k_de_en", "--eval-args", "--detok-ref nope/test.en"],
         "--detok-ref nope/test.en: no such file (a relative path is read from the directory the command runs in)"),
        (["--recipe", "compare_multi30k_de_en"],
         f"--data {tiny_data_bin}: no dict.de.txt or dict.en.txt for the recipe's languages de->en "
         "(task.source_lang/target_lang); it has dict.src.txt, dict.tgt.txt"),
        (["--recipe", "compare_multi30k_de_en", "--slurm", "--time", "1:00:00"],
         "--slurm trains on GPUs: give --gpus N"),
        (["--recipe", "compare_multi30k_de_en", "--slurm", "--gpus", "1"], "--slurm needs --time"),
    ]
    from fairseq_localness.evaluation.evaluate import option_error

    assert option_error(["--no-sacrebleu", "--detok-ref", "nope/test.en"]) is None  # evaluate.sh ignores it then
    for argv, message in cases:
        proc = run(COMPARE + tiny + argv, check=False)
        assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert message in proc.stderr, proc.stderr[-2000:]
        assert not (tmp_path / "w").exists()


def test_a_dry_run_names_published_runs_and_leaves_the_recipe_open(tiny_data_bin, tmp_path):
    """A dry run says which runs a --publish folder holds (a real call restores them instead of training), and its
    copy of a recipe file does not hold the label to that recipe: only runs do. A Slurm dry run prints the jobs and
    the sbatch file."""
    recipe = tmp_path / "mine.yaml"
    recipe.write_text(RECIPE)
    own = ["--data", str(tiny_data_bin), "--recipe", str(recipe), "--archs", "transformer", "--seeds", "1",
           "--work", str(tmp_path / "w")]
    published = tmp_path / "published" / "mine" / "pre" / "transformer" / "seed1" / "eval-test"
    published.mkdir(parents=True)
    (published / "scores.json").write_text("{}")
    proc = run(COMPARE + own + ["--dry-run", "--publish", str(tmp_path / "published")])
    assert (f"[1/1] transformer (pre-norm, seed 1): published in {tmp_path / 'published'}: a real call restores it, "
            "not retrained") in proc.stdout
    recipe.write_text(RECIPE.replace("max_epoch: 2", "max_epoch: 3"))  # edited after the dry run: taken
    proc = run(COMPARE + own + ["--dry-run"])
    assert "max_epoch: 3" in (tmp_path / "w" / "mine" / "recipe" / "benchmark" / "mine.yaml").read_text()
    (tmp_path / "w" / "mine" / "pre" / "transformer" / "seed1").mkdir(parents=True)  # a run has started
    recipe.write_text(RECIPE)
    proc = run(COMPARE + own + ["--dry-run"], check=False)
    assert proc.returncode == 2 and f"--recipe {recipe} differs from the recipe the runs in" in proc.stderr
    recipe.write_text(RECIPE.replace("max_epoch: 2", "max_epoch: 3"))  # the label's recipe again
    proc = run(COMPARE + own + ["--label", "slurm", "--dry-run", "--slurm", "--gpus", "1", "--time", "1:00:00"])
    assert "TRAIN pre.transformer.seed1: bash " in proc.stdout and "#SBATCH --gpus-per-node=1" in proc.stdout
    assert not (tmp_path / "w" / "slurm" / "pre").exists() and not (tmp_path / "w" / "slurm" / "slurm").exists()
    # a Slurm dry run leaves a published run out of its jobs; with --table-only it writes no table either
    proc = run(COMPARE + own + ["--dry-run", "--slurm", "--gpus", "1", "--time", "1:00:00", "--publish",
                                str(tmp_path / "published"), "--label", "mine"], check=False)
    assert proc.returncode == 0 and "TRAIN" not in proc.stdout, proc.stdout[-2000:]
    assert "transformer (pre-norm, seed 1): published in" in proc.stdout
    proc = run(COMPARE + own + ["--dry-run", "--table-only", "--slurm", "--gpus", "1", "--time", "1:00:00",
                                "--publish", str(tmp_path / "published")])
    assert not (tmp_path / "w" / "mine" / "table.md").exists()
    # a --publish folder of another setup: refused by the dry run, as the real call refuses it
    other_setup = {"train_overrides": ["optimization.lr=[0.1]"]}
    (tmp_path / "published" / "mine" / "grid.json").write_text(json.dumps(other_setup))
    proc = run(COMPARE + own + ["--dry-run", "--publish", str(tmp_path / "published")], check=False)
    assert proc.returncode == 2 and "holds runs of another setup" in proc.stderr, proc.stderr[-2000:]
    assert "train_overrides: ['optimization.lr=[0.1]'] -> []" in proc.stderr


def test_a_recipe_key_that_does_not_exist_is_refused(tiny_data_bin, tmp_path):
    recipe = tmp_path / "mine.yaml"
    recipe.write_text(RECIPE.replace("  max_epoch: 2", "  max_epoch: 2\n  max_epochs: 3"))
    proc = run(COMPARE + ["--data", str(tiny_data_bin), "--recipe", str(recipe), "--archs", "transformer",
                          "--seeds", "1", "--work", str(tmp_path / "w")], check=False)
    assert proc.returncode == 2 and "max_epochs" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    model = tmp_path / "model.yaml"
    model.write_text(RECIPE.replace("  dropout: 0.1", "  dropout: 0.1\n  encoder_embed_dimm: 8"))
    proc = run(COMPARE + ["--data", str(tiny_data_bin), "--recipe", str(model), "--archs", "transformer",
                          "--seeds", "1", "--work", str(tmp_path / "w2")], check=False)
    assert proc.returncode == 2 and "encoder_embed_dimm" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]


def test_your_own_corpus_is_checked_before_training(tiny_data_bin, tmp_path):
    """docs/compare.md, "Your own corpus": a data-bin with a dictionary per language under a recipe that shares all
    embeddings, and a recipe with no task, are refused with exit code 2 before anything trains; a data-bin without
    a raw reference is said to give tokenized BLEU only; the dry run's train.sh command runs as printed."""
    corpus = tmp_path / "corpus"
    write_synthetic_corpus(corpus / "raw", train=60)
    separate = preprocess(corpus / "raw", corpus / "data-bin", joined=False)
    recipe = tmp_path / "mine.yaml"
    recipe.write_text(RECIPE)
    own = ["--recipe", str(recipe), "--archs", "transformer", "--seeds", "1"]
    proc = run(COMPARE + ["--data", str(separate), *own, "--work", str(tmp_path / "w1")], check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert (f"--data {separate}: dict.src.txt and dict.tgt.txt differ, and the model shares all embeddings"
            in proc.stderr and "fairseq-preprocess --joined-dictionary" in proc.stderr), proc.stderr
    assert not list((tmp_path / "w1").rglob("checkpoints"))
    # the same data-bin with the embeddings not shared passes
    proc = run(COMPARE + ["--data", str(separate), *own, "--work", str(tmp_path / "w2"), "--dry-run",
                          "--train-args", "model.share_all_embeddings=false"], check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]

    taskless = tmp_path / "taskless.yaml"
    taskless.write_text(re.sub(r"task:\n(  .*\n)+", "", RECIPE))
    assert "task:" not in taskless.read_text()
    proc = run(COMPARE + ["--data", str(tiny_data_bin), "--recipe", str(taskless), "--archs", "transformer",
                          "--seeds", "1", "--work", str(tmp_path / "w3"), "--dry-run"], check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "recipe taskless sets no task: give it a task: block" in proc.stderr, proc.stderr

    proc = run(COMPARE + ["--data", str(tiny_data_bin), *own, "--work", str(tmp_path / "w4"), "--dry-run"])
    assert (f"note: --data {tiny_data_bin} has no raw test reference (no detok_ref in its prep-info.json), and "
            "--eval-args give no --detok-ref: the table scores tokenized BLEU only") in proc.stdout
    train = next(line for line in proc.stdout.splitlines() if line.strip().startswith("train:"))
    argv = shlex.split(train.split("train:", 1)[1])
    # the grid's environment (one thread a run on the CPU), then the script by its absolute path
    assert argv[0] == "env" and "OMP_NUM_THREADS=1" in argv and "MKL_NUM_THREADS=1" in argv
    script = argv.index("bash")
    assert argv[script:script + 4] == ["bash", str(REPO / "scripts" / "train.sh"), "mine", "transformer"]
    assert argv[script + 4:script + 6] == ["--recipe-dir", str(tmp_path / "w4" / "mine" / "recipe")]
    by_hand = run(argv + ["--dry-run"], cwd=tmp_path)  # as printed, from another directory
    assert "fairseq-hydra-train" in by_hand.stdout and "benchmark=mine" in by_hand.stdout
    # with --detok-ref the note goes
    raw_ref = tmp_path / "test.tgt"
    raw_ref.write_text((corpus / "raw" / "test.tgt").read_text())
    proc = run(COMPARE + ["--data", str(tiny_data_bin), *own, "--work", str(tmp_path / "w4"), "--dry-run",
                          "--eval-args", f"--detok-ref {raw_ref}"])
    assert "note:" not in proc.stdout


def test_the_recipe_note_names_the_train_args(tiny_data_bin, tmp_path):
    """--train-args change what every run trains with: the table's recipe note names them after the recipe."""
    grid = compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tiny_data_bin, archs=["transformer"],
                        seeds=[1], norms=["pre"], baseline="transformer", work=tmp_path / "w",
                        train_overrides=["optimization.max_epoch=2", "model.dropout=0.2"])
    note = compare.recipe_summary(grid)
    assert note.startswith("recipe `compare_multi30k_de_en`: 3+3 layers, 128 dim")
    assert "; --train-args over it: `optimization.max_epoch=2 model.dropout=0.2`; norm placement: " in note
    grid.train_overrides = []
    assert "--train-args" not in compare.recipe_summary(grid)


def test_sacrebleu_significance_finds_the_reference_of_a_restored_run(tmp_path):
    """Runs restored from a published grid name a detokenised reference that lies elsewhere (another machine):
    the grid's data-bin's reference serves; with none, the error names the missing file."""
    refs = tmp_path / "test.en"
    refs.write_text("".join(r + "\n" for r in REFS))
    dirs = [write_eval(tmp_path / name, REFS, REFS) for name in ("sys", "base")]
    for directory in dirs:
        (directory / "hyp.detok.txt").write_text("".join(r + "\n" for r in REFS))
        (directory / "scores.json").write_text(json.dumps({"target_lang": "en", "detok_ref": "elsewhere/test.en"}))
    result = compare.pooled_significance(dirs[:1], dirs[1:], lowercase=False, samples=20, detok_ref=str(refs))
    assert result["sacrebleu"]["system"] == 100.0 == result["sacrebleu"]["baseline"]
    with pytest.raises(compare.CompareError, match="elsewhere/test.en"):
        compare.pooled_significance(dirs[:1], dirs[1:], lowercase=False, samples=20)


def test_a_file_written_atomically_is_whole_or_the_old_one(tmp_path, monkeypatch):
    """provenance.write_atomically, behind every result file and every file a resume trusts: the new text replaces
    the old whole; a write that fails midway leaves the old file as it was, and no half file beside it."""
    from fairseq_localness import provenance

    target = tmp_path / "scores.json"
    target.write_text("old\n")
    provenance.write_atomically(target, "new\n")
    assert target.read_text() == "new\n" and sorted(p.name for p in tmp_path.iterdir()) == ["scores.json"]
    provenance.write_atomically(target, b"\x89PNG")
    assert target.read_bytes() == b"\x89PNG"

    def full_disk(*args, **kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(provenance.os, "replace", full_disk)
    with pytest.raises(OSError, match="No space"):
        provenance.write_atomically(target, "cut\n")
    assert target.read_bytes() == b"\x89PNG" and sorted(p.name for p in tmp_path.iterdir()) == ["scores.json"]


def test_portable_paths_by_hand():
    from fairseq_localness.provenance import portable_paths

    text = ("/co/main/.venv/lib/x.py: loaded /co/main/runs/data/bin --user-dir /co/grid/fairseq_localness "
            "/home/me/.cache/y /data/home/me/z /usr/lib/python3")
    assert portable_paths(text, ["/co/main", "/co/grid"], "/co/main/.venv", "/home/me") == (
        ".venv/lib/x.py: loaded runs/data/bin --user-dir fairseq_localness ~/.cache/y /data/home/me/z /usr/lib/python3")
    # a Python environment outside every checkout; a path under no anchor stays as it was
    assert portable_paths("/opt/env/bin/python /co/main/runs", ["/co/grid"], "/opt/env", "/") == \
        "<python>/bin/python /co/main/runs"


def test_published_files_name_no_path_of_the_machine(tmp_path, monkeypatch):
    """What --publish copies reads the same wherever the checkout lies: no absolute path of the checkout, of the
    Python environment or of the home directory is left in it, and the record's eval_dir is relative."""
    checkout, home = tmp_path / "checkout", tmp_path / "home"
    (checkout / "fairseq_localness").mkdir(parents=True)
    (checkout / "pyproject.toml").write_text("")
    monkeypatch.setenv("HOME", str(home))
    grid = compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=checkout / "runs" / "data" / "bin",
                        archs=["transformer"], seeds=[1], norms=["pre"], baseline="transformer",
                        work=checkout / "runs" / "compare")
    run_dir = grid.run_dir(compare.RunSpec("transformer", "pre", 1))
    mentions = json.dumps({"out": str(run_dir / "eval-test"), "data_bin": str(grid.data_bin),
                           "cache": str(home / ".cache" / "x"), "python": sys.prefix + "/bin/python"})
    for name in ("eval-test/scores.json", "eval-test/generate-test.log", "checkpoints/.hydra/config.yaml", "trained"):
        (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / name).write_text(mentions + "\n")
    (grid.root / "runs.json").write_text(json.dumps([{"eval_dir": "pre/transformer/seed1/eval-test"}]))
    target = compare.publish(grid, tmp_path / "published")
    texts = {p: p.read_text() for p in target.rglob("*") if p.is_file()}
    assert len(texts) == 5
    for path, text in texts.items():
        assert str(tmp_path) not in text and sys.prefix not in text, (path, text)
    scores = json.loads((target / "pre" / "transformer" / "seed1" / "eval-test" / "scores.json").read_text())
    assert scores["out"] == "runs/compare/lbl/pre/transformer/seed1/eval-test"
    assert scores["data_bin"] == "runs/data/bin" and scores["cache"] == "~/.cache/x"


def test_published_runs_trained_in_another_checkout_name_no_path_of_it(tmp_path):
    """A run trained from another clone or worktree of the repository, published from this one: its config.yaml
    records that checkout's plugin (user_dir CHECKOUT/fairseq_localness), and the published copy reads as if
    it had been trained here."""
    other = tmp_path / "other-worktree"
    grid = compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tmp_path / "bin",
                        archs=["transformer"], seeds=[1], norms=["pre"], baseline="transformer",
                        work=tmp_path / "work")
    run_dir = grid.run_dir(compare.RunSpec("transformer", "pre", 1))
    config = f"common:\n  user_dir: {other}/fairseq_localness\ntask:\n  data: {other}/runs/data/bin\n"
    for name in ("eval-test/scores.json", "checkpoints/.hydra/config.yaml"):
        (run_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (run_dir / name).write_text(config)
    assert compare.training_checkout(run_dir) == str(other)
    target = compare.publish(grid, tmp_path / "published")
    published = (target / "pre" / "transformer" / "seed1" / "checkpoints" / ".hydra" / "config.yaml").read_text()
    assert published == "common:\n  user_dir: fairseq_localness\ntask:\n  data: runs/data/bin\n"
    # a relative user_dir, or none, names no checkout
    (run_dir / "checkpoints" / ".hydra" / "config.yaml").write_text("common:\n  user_dir: fairseq_localness\n")
    assert compare.training_checkout(run_dir) is None


def test_the_plateau_schedule_resumes_at_its_halved_rate(tiny_data_bin, tmp_path):
    """The comparison recipe halves the learning rate on a validation plateau (reduce_lr_on_plateau). With
    lr_threshold 1 every epoch is a plateau, so an uninterrupted run trains epoch k at 2e-3 / 2^(k-1). A run
    stopped after epoch 2 and resumed goes on exactly so: fairseq saves the epoch's checkpoint before it steps the
    schedule, and loading it takes that step (compat.resume_where_training_stopped); without it, epoch 3 trained
    at the rate of epoch 2."""
    import re

    from localness_testing import train_command

    plateau = ["--lr-scheduler", "reduce_lr_on_plateau", "--lr-shrink", "0.5", "--lr-patience", "0",
               "--lr-threshold", "1.0", "--warmup-updates", "0", "--lr", "0.002", "--max-update", "100000"]
    save = tmp_path / "checkpoints"
    first = run(train_command(tiny_data_bin, save, "transformer", [*plateau, "--max-epoch", "2"]))
    resumed = run(train_command(tiny_data_bin, save, "transformer", [*plateau, "--max-epoch", "4"]))
    rates = {int(e): float(lr) for e, lr in re.findall(r"epoch (\d+) \|.*? lr ([0-9.e-]+)",
                                                       first.stdout + first.stderr + resumed.stdout + resumed.stderr)}
    assert rates == {1: 0.002, 2: 0.001, 3: 0.0005, 4: 0.00025}, rates


def hydra_log(path: Path, schedule: dict, patience: int, epochs: list, resumed_at: int) -> Path:
    """A hydra_train.log in fairseq-hydra-train's format: its config line, then per epoch (validation loss,
    learning rate) the validation and epoch-summary lines, and a resume before epoch ``resumed_at``."""
    config = {"_name": None, "checkpoint": {"patience": patience, "maximize_best_checkpoint_metric": False},
              "lr_scheduler": schedule}
    lines = [f"[2026-11-26 04:00:00,000][fairseq_cli.train][INFO] - {config!r}"]
    for epoch, (loss, lr) in enumerate(epochs, 1):
        if epoch == resumed_at:
            lines.append(f"[2026-11-26 05:00:00,000][fairseq.trainer][INFO] - Loaded checkpoint "
                         f"{path.parent}/checkpoint_last.pt (epoch {epoch} @ {10 * (epoch - 1)} updates)")
        lines.append(f"[2026-11-26 05:00:00,000][valid][INFO] - epoch {epoch:03d} | valid on 'valid' subset | "
                     f"loss {loss} | nll_loss 1 | ppl 2 | num_updates {10 * epoch} | best_loss {loss}")
        lines.append(f"[2026-11-26 05:00:00,000][train][INFO] - epoch {epoch:03d} | loss 5 | nll_loss 4 | wps 100 | "
                     f"num_updates {10 * epoch} | lr {lr} | gnorm 1")
    path.write_text("\n".join(lines) + "\n")
    return path


PLATEAU = {"_name": "reduce_lr_on_plateau", "lr_shrink": 0.5, "lr_threshold": 0.005, "lr_patience": 0,
           "warmup_updates": 0}


def test_a_resume_that_lost_the_plateau_step_is_found(tmp_path):
    """The plateau schedule by hand (threshold 0.5% relative, patience 0, torch's best moves only on a better
    loss): 5.0; 4.9 < 4.975 better; 4.89 >= 4.8755 halves; 4.80 < 4.8755 better (best 4.80); 4.79 >= 4.776 halves,
    so epoch 6 trains at 0.0005. A resume before epoch 5 that lost epoch 4's step kept the stale best 4.9, took
    4.79 for better and trained epoch 6 at 0.001, which is the departure this finds. The uninterrupted rates
    are no departure."""
    from fairseq_localness.experiments.runlog import resume_deviations

    losses = [5.0, 4.9, 4.89, 4.80, 4.79, 4.70]
    exact = [0.002, 0.002, 0.002, 0.001, 0.001, 0.0005]
    stale = exact[:5] + [0.001]
    assert resume_deviations(hydra_log(tmp_path / "exact.log", PLATEAU, 0, list(zip(losses, exact)), 5)) == []
    assert resume_deviations(hydra_log(tmp_path / "stale.log", PLATEAU, 0, list(zip(losses, stale)), 5)) == [
        "epoch 6 trained at lr 0.001; after epoch 5's validation loss the schedule halves it (0.0005)"]
    # the same rates without a resume: fairseq's own schedule, not a resume, and nothing is reported
    assert resume_deviations(hydra_log(tmp_path / "whole.log", PLATEAU, 0, list(zip(losses, stale)), 0)) == []


def test_a_resume_that_restarted_the_patience_count_is_found(tmp_path):
    """Patience 2 (fairseq's should_stop_early: only a strictly lower loss resets the count): 5.0, then 5.1 and 5.0
    count 1 and 2, so the uninterrupted training stops after epoch 3. A resume before epoch 3 that restarted the
    count trained on to epoch 4."""
    from fairseq_localness.experiments.runlog import resume_deviations

    other = {"_name": "inverse_sqrt", "warmup_updates": 0}
    assert resume_deviations(hydra_log(tmp_path / "on.log", other, 2, [(5.0, 1), (5.1, 1), (5.0, 1), (4.0, 1)], 3)) \
        == ["trained to epoch 4; early stopping (patience 2) ends the uninterrupted training after epoch 3"]
    assert resume_deviations(hydra_log(tmp_path / "stop.log", other, 2, [(5.0, 1), (5.1, 1), (5.0, 1)], 3)) == []


def test_a_resume_with_another_configuration_is_found(tmp_path):
    """Every start logs its configuration: a resume with --fp16 added or another dropout is named; one whose
    checkout or data-bin moved (paths only) is the same training."""
    from fairseq_localness.experiments.runlog import resume_deviations

    other = {"_name": "inverse_sqrt", "warmup_updates": 0}
    log = hydra_log(tmp_path / "hydra_train.log", other, 0, [(5.0, 1), (4.0, 1), (3.0, 1)], 2)
    first = log.read_text().splitlines()[0]
    head, config = first.split(" - ", 1)
    config = ast.literal_eval(config)
    config.update(common={"fp16": False, "user_dir": "/a/fairseq_localness"}, model={"dropout": 0.3},
                  checkpoint=dict(config["checkpoint"], save_dir="runs/compare/l/pre/transformer/seed1/checkpoints"),
                  job_logging_cfg={"handlers": {"file": {
                      "filename": "runs/compare/l/pre/transformer/seed1/checkpoints/hydra_train.log"}}})

    def with_restart(common, model, moved=False):
        restart = dict(config, common=dict(config["common"], **common), model=dict(config["model"], **model))
        if moved:  # the same run from a checkout elsewhere: --work given as an absolute path
            restart["checkpoint"] = dict(config["checkpoint"], save_dir="/home/me/" + config["checkpoint"]["save_dir"])
            restart["job_logging_cfg"] = {"handlers": {"file": {
                "filename": "/home/me/" + config["job_logging_cfg"]["handlers"]["file"]["filename"]}}}
        lines = log.read_text().splitlines()
        at = next(i for i, line in enumerate(lines) if "Loaded checkpoint" in line)
        path = tmp_path / "restarted.log"
        path.write_text("\n".join([f"{head} - {config!r}", *lines[1:at], f"{head} - {restart!r}", *lines[at:]]) + "\n")
        return resume_deviations(path)

    assert with_restart({}, {}) == []
    assert with_restart({"user_dir": "/elsewhere/fairseq_localness"}, {}, moved=True) == []
    assert with_restart({"fp16": True}, {"dropout": 0.1}) == [
        "start 2 resumed with another configuration: common.fp16 False -> True; model.dropout 0.3 -> 0.1"]


def test_gpus_and_half_precision_are_part_of_a_labels_setup(tmp_path):
    """Speeds are set against the baseline's and scores trained in one precision: a label trained on the CPU is
    not continued on GPUs or in fp16. A CPU label's record has neither key, as it had before they were added."""
    def grid(**device):
        return compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tmp_path / "bin",
                            archs=["transformer"], seeds=[1], norms=["pre"], baseline="transformer",
                            work=tmp_path / "work", **device)

    cpu = compare.label_record(grid())
    assert "gpus" not in cpu and "fp16" not in cpu
    assert {key: value for key, value in compare.label_record(grid(gpus=1, fp16=True)).items()
            if key in ("gpus", "fp16")} == {"gpus": 1, "fp16": True}
    assert compare.setup_differences(cpu, compare.label_record(grid(gpus=1))) == ["gpus: (none) -> 1"]


def test_a_scores_file_cut_short_is_named_not_a_traceback(tmp_path):
    grid = compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tmp_path / "bin",
                        archs=["transformer"], seeds=[1], norms=["pre"], baseline="transformer", work=tmp_path)
    spec = compare.RunSpec("transformer", "pre", 1)
    grid.scores_path(spec).parent.mkdir(parents=True)
    grid.scores_path(spec).write_text('{"sacrebleu": {"sco')
    with pytest.raises(compare.CompareError, match=r"scores\.json is not the JSON the comparison writes .*Move it "
                                                    r"away \(its run is decoded again\)"):
        compare.collect_run(grid, spec)


def test_the_comparison_names_a_finished_run_resumed_off_its_recipe(tmp_path):
    """Of two finished runs, the one whose log shows the lost halving of the test above is named, with its
    departure; the exact one is not."""
    grid = compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tmp_path / "bin",
                        archs=["transformer", "transformer_cnns"], seeds=[1], norms=["pre"], baseline="transformer",
                        work=tmp_path)
    losses = [5.0, 4.9, 4.89, 4.80, 4.79, 4.70]
    rates = {"transformer": [0.002, 0.002, 0.002, 0.001, 0.001, 0.0005],
             "transformer_cnns": [0.002, 0.002, 0.002, 0.001, 0.001, 0.001]}
    for arch, lrs in rates.items():
        run_dir = grid.run_dir(compare.RunSpec(arch, "pre", 1))
        (run_dir / "checkpoints").mkdir(parents=True)
        (run_dir / compare.EVAL_DIR).mkdir()
        (run_dir / compare.EVAL_DIR / "scores.json").write_text("{}")
        hydra_log(run_dir / "checkpoints" / "hydra_train.log", PLATEAU, 0, list(zip(losses, lrs)), 5)
    assert compare.off_recipe_runs(grid) == [(compare.RunSpec("transformer_cnns", "pre", 1), [
        "epoch 6 trained at lr 0.001; after epoch 5's validation loss the schedule halves it (0.0005)"])]


def test_published_results_hold_no_test_text_and_credit_every_corpus():
    """What is published may be redistributed: no copy of a test set's text (reference, source lines), and the
    translations of each corpus's test sources are credited to it in docs/results/compare/README.md."""
    published = REPO / "docs" / "results" / "compare"
    assert not list(published.rglob("ref.tok.txt")) and not list(published.rglob("generate-test.txt"))
    runs = list(published.glob("*/*/*/seed*/eval-test/scores.json"))
    assert runs and all((score.parent / "source-lengths.txt").is_file() for score in runs)
    credits = (published / "README.md").read_text(encoding="utf-8")
    for label in sorted({score.relative_to(published).parts[0] for score in runs}):
        assert f"- `{label}`:" in credits, f"docs/results/compare/README.md does not say where {label}'s test set comes from"


def test_every_published_run_trained_as_if_uninterrupted():
    """The published tables compare one recipe: no published run was resumed off it (a run resumed by a plugin
    without the resume fix, read from its log). The published Multi30k and Europarl grids hold resumed runs, so
    the check reads some."""
    from fairseq_localness.experiments.runlog import resume_deviations

    logs = sorted((REPO / "docs" / "results" / "compare").glob("*/*/*/seed*/checkpoints/hydra_train.log"))
    resumed = [log for log in logs if "Loaded checkpoint" in log.read_text(errors="replace")]
    assert resumed
    departures = {str(log.relative_to(REPO)): resume_deviations(log) for log in resumed}
    assert {name: found for name, found in departures.items() if found} == {}


def published_runs() -> list:
    """(label, the recipe's model keys as its grid.json records them, run record) of every published run."""
    import csv

    found = []
    for grid_file in sorted((REPO / "docs" / "results" / "compare").glob("*/grid.json")):
        model = json.loads(grid_file.read_text())["recipe_values"]["model"]
        with open(grid_file.parent / "runs.csv", newline="") as handle:
            found += [(grid_file.parent.name, model, record) for record in csv.DictReader(handle)]
    return found


def test_published_runs_are_the_architectures_of_this_code(tiny_data_bin, tmp_path, caplog):
    """Every published row describes the code as it is: each architecture built now with the model keys its
    grid.json records and its norm placement has the run's parameters (the shared embedding aside, whose rows are the run's dictionary)
    and places its methods where the run's log says. A method default changed after a run was published (a
    layer range, sharing across layers, a size) fails here until the run is trained again."""
    import logging

    from fairseq import options, tasks

    import fairseq_localness  # noqa: F401
    from fairseq_localness.experiments.runlog import placement

    runs = published_runs()
    assert len(runs) >= 20
    built = {}
    for label, model_keys, record in runs:
        key = (label, record["arch"], record["norm"])
        if key not in built:
            keys = dict(model_keys)
            for override in compare.norm_overrides(record["arch"], record["norm"]):  # model.KEY=VALUE
                name, value = override[len("model."):].split("=")
                keys[name] = {"true": True, "false": False}.get(value, value)
            argv = [str(tiny_data_bin), "--arch", record["arch"], "--user-dir", USER_DIR, "--task", "translation"]
            for name, value in keys.items():  # fairseq's switches take no value
                flag = "--" + name.replace("_", "-")
                argv += ([flag] if value else []) if isinstance(value, bool) else [flag, str(value)]
            caplog.clear()
            with caplog.at_level(logging.INFO):
                args = options.parse_args_and_arch(options.get_training_parser(), argv)
                task = tasks.setup_task(args)
                model = task.build_model(args)
            log = tmp_path / "build.log"
            log.write_text("".join(f"] - {r.getMessage()}\n" for r in caplog.records))
            embedding = len(task.source_dictionary) * args.encoder_embed_dim
            built[key] = (sum(p.numel() for p in model.parameters()) - embedding, placement(log))
        train_log = REPO / "docs" / "results" / "compare" / label / record["norm"] / record["arch"] / \
            f"seed{record['seed']}" / "checkpoints" / "hydra_train.log"
        types = int(re.search(r"\] dictionary: (\d+) types", train_log.read_text()).group(1))
        dim = model_keys["encoder_embed_dim"]
        name = f"{label} {record['norm']} {record['arch']} seed {record['seed']}"
        assert int(record["params"]) - types * dim == built[key][0], f"{name}: parameters differ from this code's"
        assert record["placement"] == built[key][1], f"{name}: placed {record['placement']!r}, now {built[key][1]!r}"


def test_progress_reads_fairseqs_stop_lines():
    """The two ways a comparison run stops, as fairseq-hydra-train logs them (fairseq_cli/train.py)."""
    patience = ("[2026-11-26 04:00:00,000][fairseq_cli.train][INFO] - early stop since valid performance hasn't "
                "improved for last 5 runs")
    floor = ("[2026-11-26 04:00:00,000][fairseq_cli.train][INFO] - stopping training because current learning rate "
             "(0.000125) is smaller than or equal to minimum learning rate (--stop-min-lr=0.00015)")
    assert compare._STOP.search(patience).group(1) == "5" and not compare._STOP.search(floor)
    assert compare._FLOOR.search(floor).groups() == ("0.000125", "0.00015") and not compare._FLOOR.search(patience)


def test_placement_is_read_from_the_plugins_log_lines(tmp_path):
    from fairseq_localness.experiments.runlog import placement

    log = tmp_path / "hydra_train.log"
    line = ("[2026-11-26 04:54:59,633][fairseq_localness.architectures.base][INFO] - locality: cross layer 2: "
            "diffwin_cross; decoder layer 1: relpos; decoder layer 2: relpos; encoder layer 1: gaussian, relpos; "
            "encoder layer 2: relpos; encoder layer 3: gaussian, relpos\n")
    log.write_text(line + "[2026-11-26 05:10:00,000][fairseq_cli.train][INFO] - begin training epoch 2\n" + line)
    # per method, its attention types in the order encoder, decoder, cross and its layers as ranges; a resumed
    # run's second line is the same and counts once
    assert placement(log) == "gaussian: encoder 1,3; relpos: encoder 1-3, decoder 1-2; diffwin_cross: cross 2"
    log.write_text("[2026-11-26 04:00:00,000][fairseq_localness.architectures.man][INFO] - MAN layers: encoder "
                   "dman->san->ffn, decoder san,ffn->x, sizes released, attention ReLU False\n"
                   "[2026-11-26 04:00:00,001][fairseq_localness.architectures.base][INFO] - locality: no locality "
                   "methods (plain Transformer attention)\n")
    assert placement(log) == "MAN layers: encoder dman->san->ffn, decoder san,ffn->x (every layer)"
    log.write_text("2026-11-26 04:00:00 | INFO | fairseq_localness.architectures.base | locality: encoder layer 1: "
                   "csan1d; encoder layer 2: csan1d\n")  # fairseq-train's own log format
    assert placement(log) == "csan1d: encoder 1-2"
    log.write_text("[2026-11-26 04:00:00,000][fairseq_cli.train][INFO] - num. model params: 2,424,320\n")
    assert placement(log) == "none"  # fairseq's own Transformer logs no placement
    assert placement(tmp_path / "missing.log") is None


# --------------------------------------------------------------------------- the tiny grid, end to end


@pytest.fixture(scope="module")
def tiny_grid(tiny_data_bin, tmp_path_factory):
    root = tmp_path_factory.mktemp("compare")
    recipe = root / "tiny_recipe.yaml"
    recipe.write_text(RECIPE)
    argv = ["--data", str(tiny_data_bin), "--recipe", str(recipe), "--label", "tiny", "--archs",
            "transformer,transformer_gaussian_local", "--seeds", "2", "--work", str(root / "work"), "--jobs", "2",
            "--eval-args", "--beam 2 --max-len-b 20", "--bootstrap-samples", "100", "--publish", str(root / "published"),
            "--length-buckets", "5,9"]
    first = run(COMPARE + argv)
    return root, argv, first


def test_tiny_grid_table_columns_and_files(tiny_grid):
    root, _, first = tiny_grid
    out = root / "work" / "tiny"
    assert "[4/4] transformer_gaussian_local (pre-norm, seed 2)" in first.stdout
    # 1/101 prints as p = 0.010, which is not below 0.01: the notes say what 100 resamples cannot mark
    assert "1/101 is the smallest p that 100 resamples can give; too few for ⇑/⇓)" in (out / "table.md").read_text()
    assert f"written to {out}/table.md, table.json, runs.csv, runs.json, curves.csv, figure.png, curves.png, " \
        "buckets.md, buckets.csv, buckets.png and commands.json" in first.stdout
    assert "has no raw test reference" in first.stdout  # the synthetic corpus has no prep-info.json
    for name in ("table.md", "table.json", "runs.csv", "runs.json", "figure.png", "curves.csv", "curves.png",
                 "buckets.md", "buckets.csv", "buckets.png", "commands.json"):
        assert (out / name).is_file(), name
        assert (root / "published" / "tiny" / name).read_bytes() == (out / name).read_bytes()
    table = (out / "table.md").read_text()
    header = table.split("\n")[2]
    assert header.startswith("| architecture | norm | seeds | sacreBLEU | tokenized BLEU | chrF | length ratio | "
                             "Δ sacreBLEU vs baseline (p) | Δ per seed |")
    assert "training speed | decoding speed | epochs |" in header
    assert "measured" in table and "command: `fairseq-localness-compare" in table and "pre-norm for every architecture" in table
    assert "4 runs finished (of the 4 its command plans)" in table
    assert "test split decoded with --beam 2 --max-len-b 20." in table
    # each CPU training logs the allocator settings it ran with (the launcher's, where the environment sets none)
    assert ("# CPU allocator: MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TOP_PAD_=536870912 MALLOC_TRIM_THRESHOLD_=4294967296"
            in (out / "pre" / "transformer" / "seed1" / "train.log").read_text())
    history = json.loads((out / "commands.json").read_text())
    assert len(history) == 1 and history[0]["command"].endswith("--length-buckets 5,9") and len(history[0]["runs"]) == 4
    # the recipe file's defaults list is merged: its optimiser comes from configs/optim/compare_small.yaml
    assert "3+3 layers, 32 dim" in table and "patience 5 epochs" in table
    assert ("adam lr [0.002] (reduce_lr_on_plateau, 4 warm-up, lr x 0.5 after 1 epoch(s) without a validation-loss "
            "improvement of 0.5%)") in table and "or once the learning rate is at most 0.00015" in table
    rows = json.loads((out / "table.json").read_text())["rows"]
    assert [(r["arch"], r["seeds"]) for r in rows] == [("transformer", [1, 2]), ("transformer_gaussian_local", [1, 2])]
    assert rows[0]["train_speed_ratio"] == 1.0 and rows[1]["train_speed_ratio"] > 0
    assert rows[1]["significance_seeds"] == [1, 2] and "tokenized_bleu" in rows[1]["significance"]
    assert rows[1]["params"] > rows[0]["params"]  # the Gaussian predictors
    runs = json.loads((out / "runs.json").read_text())
    assert len(runs) == 4 and {r["updates"] for r in runs} == {6}
    assert all(r["decode_tokens_per_s"] for r in runs)
    # decoded on the CPU through timed_generate: every run has its CPU-clock speed, and so every row reads that clock
    assert all(r["decode_tokens_per_cpu_s"] for r in runs) and {r["decode_speed_clock"] for r in rows} == {"cpu"}
    assert "decoding target tokens per CPU second" in table and "(wall clock)" not in table
    # BLEU by source length: the synthetic test sentences have 3-12 words, so buckets 1-5, 6-9 and >9 hold all 40
    buckets = (out / "buckets.csv").read_text().splitlines()
    per_run = [line.split(",") for line in buckets[1:] if ",transformer,pre,1," in line]
    assert [row[4] for row in per_run] == ["1-5", "6-9", ">9"] and sum(int(row[5]) for row in per_run) == 40
    assert "| `transformer_gaussian_local` | pre |" in (out / "buckets.md").read_text()
    # where the methods sit, from the training logs: the Gaussian's default 1-3 is every layer of this 3-layer encoder
    assert "| `transformer` | none |" in table and "| `transformer_gaussian_local` | gaussian: encoder 1-3 |" in table
    assert {r["placement"] for r in runs} == {"none", "gaussian: encoder 1-3"}
    # every run trained with the same recipe and its own seed: the composed configs differ in the seed only
    configs = [(out / "pre" / a / f"seed{s}" / "checkpoints" / ".hydra" / "config.yaml").read_text()
               for a in ("transformer", "transformer_gaussian_local") for s in (1, 2)]
    assert all("max_update: 6" in c and "encoder_normalize_before: true" in c for c in configs)
    # the trained attention, analysed from each run's best checkpoint and published as tables (no figures)
    for arch, analyses in (("transformer", ["attention-mass"]),
                           ("transformer_gaussian_local", ["attention-mass", "gaussian-scopes"])):
        run_dir = out / "pre" / arch / "seed1"
        done = json.loads((run_dir / "analyses" / "done.json").read_text())
        assert {k: done[k] for k in ("analyses", "checkpoint")} == {"analyses": analyses, "checkpoint": "checkpoint_best.pt"}
        # when, where and how they ran: the record, and each table's caption
        assert re.fullmatch(r"(OMP_NUM_THREADS=1 )?python -m fairseq_localness\.experiments\.run_analyses .* --label "
                            + arch, done["command"])
        assert done["machine"] and done["date"] and done["time"].endswith("UTC")
        caption = (run_dir / "analyses" / "attention-mass.md").read_text().split("\n")[0]
        assert re.search(f"Measured {done['date']} .*; command: `(OMP_NUM_THREADS=1 )?python scripts/analyze.py "
                         "attention-mass ", caption), caption
        published = root / "published" / "tiny" / "pre" / arch / "seed1" / "analyses"
        assert sorted(p.name for p in published.iterdir()) == sorted(
            ["done.json", *(f"{name}.{ext}" for name in analyses for ext in ("csv", "md"))])
        mass = list(csv.DictReader(open(run_dir / "analyses" / "attention-mass.csv")))
        # 3 encoder layers x w = 1, 2, 4 of one SAN (plain or Gaussian-biased), on all 40 test sentences
        assert [(r["layer"], r["w"]) for r in mass] == [(str(l), str(w)) for l in (1, 2, 3) for w in (1, 2, 4)]
        assert {r["sentences"] for r in mass} == {"40"}
        for layer in ("1", "2", "3"):  # a wider window holds at least the mass of a narrower one
            within = [float(r["attn_s_percent"]) for r in mass if r["layer"] == layer]
            assert 0 < within[0] <= within[1] <= within[2] <= 100
    scopes = list(csv.DictReader(open(out / "pre" / "transformer_gaussian_local" / "seed1" / "analyses" /
                                      "gaussian-scopes.csv")))
    assert [r["layer"] for r in scopes] == ["1", "2", "3"] and all(float(r["mean_D"]) > 0 for r in scopes)


def test_table_only_refuses_another_setup(tiny_grid):
    """--table-only writes a table that describes this call's recipe and decoding flags: with other flags than
    the label's runs trained and decoded with (its grid.json), it is refused, and the table stays as it was."""
    root, argv, _ = tiny_grid
    table = (root / "work" / "tiny" / "table.md").read_text()
    other = list(argv[:argv.index("--publish")] + argv[argv.index("--publish") + 2:])
    other[other.index("--eval-args") + 1] = "--beam 4 --max-len-b 20"
    proc = run(COMPARE + other + ["--table-only"], check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-2000:]
    assert "holds runs of another setup (evaluate_flags:" in proc.stderr, proc.stderr[-2000:]
    assert (root / "work" / "tiny" / "table.md").read_text() == table


def test_tiny_grid_resumes_without_retraining(tiny_grid):
    """Kill the command while a run trains, start it again: the finished runs are not touched (every byte of
    their checkpoints), the killed run continues from its checkpoint_last.pt and ends at the recipe's budget."""
    import os
    import shutil
    import signal
    import time

    root, argv, _ = tiny_grid
    out = root / "work" / "tiny" / "pre"
    killed = out / "transformer_gaussian_local" / "seed2"
    shutil.rmtree(killed)
    shutil.rmtree(root / "published" / "tiny" / "pre" / "transformer_gaussian_local" / "seed2")  # else restored as finished
    finished = {d: tree_digest(d / "checkpoints") for d in (out / "transformer" / "seed1", out / "transformer" / "seed2",
                                                           out / "transformer_gaussian_local" / "seed1")}
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    proc = subprocess.Popen(COMPARE + argv, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    deadline = time.time() + 300
    while not (killed / "checkpoints" / "checkpoint_last.pt").exists() and time.time() < deadline:
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole grid: the command, its fairseq-hydra-train
    proc.wait()
    assert (killed / "checkpoints" / "checkpoint_last.pt").exists() and not (killed / "eval-test" / "scores.json").exists()
    second = run(COMPARE + argv)
    assert second.stdout.count("finished earlier, not retrained") == 3
    assert second.stdout.count("analysing its attention") == 1  # the finished runs were analysed by the first call
    assert "transformer_gaussian_local (pre-norm, seed 2): resuming from checkpoint_last.pt" in second.stdout
    # its closing line gives the time of this call only, and says so
    assert "transformer_gaussian_local (pre-norm, seed 2): done, " in second.stdout
    assert "in this call (it began in an earlier one), BLEU" in second.stdout
    assert (killed / "eval-test" / "scores.json").is_file()
    assert json.loads((killed / "result.json").read_text())["updates"] == 6
    for directory, digest in finished.items():
        assert tree_digest(directory / "checkpoints") == digest


def test_another_setup_in_the_same_label_is_refused(tiny_grid, tmp_path):
    root, argv, _ = tiny_grid
    other = list(argv)
    other[other.index("--eval-args") + 1] = "--beam 3"
    proc = run(COMPARE + other, check=False)
    assert proc.returncode == 2 and "holds runs of another setup" in proc.stderr, proc.stderr[-2000:]


def test_an_edited_recipe_is_another_setup(tiny_data_bin, tmp_path):
    """The label records the recipe's values, not only its name: a shipped recipe edited between two calls (or
    its optimiser file) is refused in --work and in --publish, naming the key that changed."""
    grid = compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tiny_data_bin, archs=["transformer"],
                        seeds=[1], norms=["pre"], baseline="transformer", work=tmp_path / "work")
    compare.claim_label(grid)  # first use: recorded
    compare.claim_label(grid)  # the same setup again: accepted
    record = json.loads((grid.root / "grid.json").read_text())
    assert record["recipe_values"]["model"]["encoder_embed_dim"] == 128
    record["recipe_values"]["optimization"]["lr"] = [0.001]
    (grid.root / "grid.json").write_text(json.dumps(record))
    with pytest.raises(compare.CompareError, match=r"--work .*recipe_values\.optimization\.lr: \[0\.001\] -> "):
        compare.claim_label(grid)
    published = tmp_path / "published" / "lbl"
    published.mkdir(parents=True)
    (published / "grid.json").write_text(json.dumps(record))
    with pytest.raises(compare.CompareError, match=r"--publish .*recipe_values\.optimization\.lr"):
        compare.restore_published(grid, tmp_path / "published")
    with pytest.raises(compare.CompareError, match=r"--publish"):
        compare.publish(grid, tmp_path / "published")


# --------------------------------------------------------------------------- the run-directory guard


def test_guard_refuses_another_architectures_run_dir(tiny_grid, tiny_data_bin):
    """train.sh with another architecture's run dir: refused before anything is written (no .hydra rewrite,
    no line appended to hydra_train.log)."""
    root, _, _ = tiny_grid
    save_dir = root / "work" / "tiny" / "pre" / "transformer" / "seed1" / "checkpoints"
    before = tree_digest(save_dir)
    proc = run(["bash", str(REPO / "scripts" / "train.sh"), "sample_zh_en_tiny", "transformer_gaussian_local",
                "--data", str(tiny_data_bin), "--save-dir", str(save_dir)], check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "holds a run of architecture transformer" in proc.stderr and "not transformer_gaussian_local" in proc.stderr
    assert "--save-dir" in proc.stderr
    assert tree_digest(save_dir) == before


def test_guard_refuses_a_training_further_along(tiny_grid, tiny_data_bin):
    root, _, _ = tiny_grid
    save_dir = root / "work" / "tiny" / "pre" / "transformer" / "seed2" / "checkpoints"
    before = tree_digest(save_dir)
    proc = run(["bash", str(REPO / "scripts" / "train.sh"), "sample_zh_en_tiny", "transformer", "--data",
                str(tiny_data_bin), "--save-dir", str(save_dir), "optimization.max_update=2"], check=False)
    assert proc.returncode == 2
    assert "holds a training at 6 updates" in proc.stderr and "max_update=2" in proc.stderr
    assert tree_digest(save_dir) == before
    # the same architecture with a larger budget continues it: allowed
    Launch("sample_zh_en_tiny", "transformer", data=str(tiny_data_bin), save_dir=str(save_dir),
           overrides=["optimization.max_update=10"]).validate()


def test_guard_reads_a_run_that_never_reached_a_checkpoint(tmp_path, tiny_data_bin):
    save_dir = tmp_path / "run"
    (save_dir / ".hydra").mkdir(parents=True)
    (save_dir / ".hydra" / "config.yaml").write_text("model:\n  _name: transformer_dman\n")
    with pytest.raises(LaunchError, match="architecture transformer_dman .*no checkpoint yet"):
        Launch("sample_zh_en_tiny", "transformer", data=str(tiny_data_bin), save_dir=str(save_dir)).validate()
    (save_dir / "checkpoint_last.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(LaunchError, match="cannot be read as a fairseq checkpoint"):
        Launch("sample_zh_en_tiny", "transformer", data=str(tiny_data_bin), save_dir=str(save_dir)).validate()


def test_a_checkpoint_cut_short_by_an_interrupted_copy(tiny_grid, tiny_data_bin, tmp_path):
    """fairseq saves checkpoint_best.pt atomically, then copies it to checkpoint_last.pt: a training killed during
    the copy leaves half a checkpoint_last.pt. train.sh refuses it, naming the intact checkpoint and the commands
    that resume from it; the comparison command restores it itself and keeps the cut file."""
    import os
    import shutil

    from fairseq_localness.experiments.rundir import restore_cut_short_checkpoint

    root, _, _ = tiny_grid
    save_dir = tmp_path / "checkpoints"
    save_dir.mkdir()
    best = save_dir / "checkpoint_best.pt"
    shutil.copyfile(root / "work" / "tiny" / "pre" / "transformer" / "seed1" / "checkpoints" / "checkpoint_best.pt", best)
    whole = best.read_bytes()
    last = save_dir / "checkpoint_last.pt"
    last.write_bytes(whole[: len(whole) // 2])
    os.utime(best, (best.stat().st_mtime - 5, best.stat().st_mtime - 5))  # saved before the copy began

    def launch(**kwargs):
        return Launch("sample_zh_en_tiny", "transformer", data=str(tiny_data_bin), save_dir=str(save_dir), **kwargs)

    before = tree_digest(save_dir)
    with pytest.raises(LaunchError) as refused:
        launch().validate()
    assert f"{last} is cut short" in str(refused.value) and "checkpoint_best.pt (6 updates) to it" in str(refused.value)
    assert f"mv {last} {last}.cut-short && cp {best} {last}" in str(refused.value)
    assert tree_digest(save_dir) == before  # the guard writes nothing
    launch(accept_cut_short=True).validate()
    assert tree_digest(save_dir) == before
    assert restore_cut_short_checkpoint(save_dir) == ("checkpoint_last.pt was cut short by an interrupted copy (kept as "
                                                      "checkpoint_last.pt.cut-short); restored from checkpoint_best.pt "
                                                      "(6 updates)")
    assert last.read_bytes() == whole and (save_dir / "checkpoint_last.pt.cut-short").read_bytes() == whole[: len(whole) // 2]
    assert restore_cut_short_checkpoint(save_dir) is None  # whole again: nothing to restore
    launch().validate()
    # an unreadable checkpoint_last.pt newer than every intact checkpoint and no copy of one (larger than them all):
    # not an interrupted copy, refused as before
    last.write_bytes(b"x" * (len(whole) + 1))
    with pytest.raises(LaunchError, match="cannot be read as a fairseq checkpoint"):
        launch(accept_cut_short=True).validate()
    assert last.read_bytes() == b"x" * (len(whole) + 1)


def test_a_run_directory_is_trained_by_one_process_at_a_time(tiny_data_bin, tmp_path):
    """train.sh refuses a save directory another process trains into, naming it, and writes nothing; a waiter gets
    the lock once the holder lets go; a killed holder leaves no stale lock."""
    from fairseq_localness.experiments.launch import run_here
    from fairseq_localness.experiments.rundir import RunDirBusy, training_lock

    save_dir = tmp_path / "checkpoints"
    holder = hold_lock(save_dir)
    try:
        with pytest.raises(RunDirBusy, match=rf"{re.escape(str(save_dir))} is being trained into by pid {holder.pid} \(and the "
                                             r"trainings it started\) on .*: wait for it to finish, stop it, or choose "
                                             "another --save-dir; nothing was written"):
            with training_lock(save_dir):
                pass
        launch = Launch("sample_zh_en_tiny", "transformer", data=str(tiny_data_bin), save_dir=str(save_dir))
        launch.validate()
        before = tree_digest(save_dir)
        with pytest.raises(LaunchError, match=f"is being trained into by pid {holder.pid} "):
            run_here(launch, launch.plan())
        assert tree_digest(save_dir) == before  # fairseq never started
        seen = []
        with training_lock(save_dir, wait=lambda who: (seen.append(who), release_lock(holder))) as fd:
            assert (save_dir / ".training.lock").read_text().startswith(f"pid {os.getpid()} ") and fd > 2
        assert len(seen) == 1 and seen[0].startswith(f"pid {holder.pid} ")
        assert holder.wait(timeout=60) == 0
    finally:
        holder.kill()
    holder = hold_lock(save_dir)
    holder.kill()
    holder.wait()
    with training_lock(save_dir):  # the kernel released the killed holder's lock
        pass


def test_the_comparison_waits_for_a_run_another_process_trains(tiny_grid):
    """A run whose directory another process holds is waited for; finished by that process, it is counted and not
    trained again (nothing in its directory changes but the lock's own text)."""
    _, argv, _ = tiny_grid
    grid = compare.grid_from_args(compare.build_parser().parse_args(argv))
    spec = compare.RunSpec("transformer", "pre", 1)
    run_dir = grid.run_dir(spec)
    lock = run_dir / "checkpoints" / ".training.lock"
    before = {k: v for k, v in tree_digest(run_dir).items() if k != "checkpoints/.training.lock"}
    holder = hold_lock(run_dir / "checkpoints")
    said = []

    class Releasing(compare.Progress):
        def say(self, text):
            said.append(text)
            if "waiting for it" in text:
                release_lock(holder)

    try:
        assert compare.run_one(grid, spec, 1, Releasing(4, 3, 1)) is None
    finally:
        holder.kill()
    assert said[0].startswith(f"[1/4] transformer (pre-norm, seed 1): another process is training it (pid {holder.pid} ")
    assert said[1] == "[1/4] transformer (pre-norm, seed 1): finished by the other process, not retrained; no run left"
    assert {k: v for k, v in tree_digest(run_dir).items() if k != "checkpoints/.training.lock"} == before
    assert lock.read_text() == ""  # released


def test_a_run_another_process_finished_since_the_list_was_made_is_not_decoded_again(tiny_grid):
    """A second process lists its runs to do when it starts; one the first process finishes before this one
    reaches it is counted under its free lock, not decoded again (that would rewrite the outputs of a run that
    already counts as finished, and a kill then would leave them half written)."""
    _, argv, _ = tiny_grid
    grid = compare.grid_from_args(compare.build_parser().parse_args(argv))
    spec = compare.RunSpec("transformer", "pre", 2)
    run_dir = grid.run_dir(spec)
    before = {k: v for k, v in tree_digest(run_dir).items() if k != "checkpoints/.training.lock"}
    said = []

    class Listening(compare.Progress):
        def say(self, text):
            said.append(text)

    assert compare.run_one(grid, spec, 2, Listening(4, 3, 1)) is None
    assert said == ["[2/4] transformer (pre-norm, seed 2): finished by another process, not retrained; no run left"]
    assert {k: v for k, v in tree_digest(run_dir).items() if k != "checkpoints/.training.lock"} == before


def test_a_checkpoint_saved_when_early_stopping_ended_the_run_is_a_finished_training(tiny_grid, tmp_path):
    """fairseq saves the checkpoint of the epoch whose validation ends the patience, then exits; resumed from it,
    it would train one more epoch (its loop asks should_stop_early only after an epoch). The plugin's count in that
    checkpoint says the training is over: train.sh and the comparison start no fairseq on it. With a larger
    patience the same checkpoint is a training to continue."""
    import shutil

    import torch

    from fairseq_localness.compat import RESUME_STATE
    from fairseq_localness.experiments.rundir import finished, read_run_state

    root, _, _ = tiny_grid
    save_dir = tmp_path / "checkpoints"
    shutil.copytree(root / "work" / "tiny" / "pre" / "transformer" / "seed1" / "checkpoints", save_dir,
                    ignore=shutil.ignore_patterns(".training.lock"))
    state = torch.load(save_dir / "checkpoint_last.pt", map_location="cpu", weights_only=False)
    state["extra_state"][RESUME_STATE]["early_stopping"] = {"best": 7.5, "num_runs": 3}
    torch.save(state, save_dir / "checkpoint_last.pt")
    run_state = read_run_state(save_dir)
    assert run_state.epochs_without_improvement == 3
    assert finished(run_state, 0, 3) == ("stopped early: its last checkpoint was saved after 3 validations without "
                                         "a better loss (checkpoint.patience=3)")
    assert finished(run_state, 0, 4) is None and finished(run_state, 0, None) is None
    launch = Launch("sample_zh_en_tiny", "transformer", data=str(root.parent / "unused"), save_dir=str(save_dir),
                    overrides=["optimization.max_update=0", "checkpoint.patience=3"])
    assert launch.requested_patience() == 3
    launch.check_save_dir()
    assert launch.already_trained and launch.trained_because.startswith("stopped early")
    more = Launch("sample_zh_en_tiny", "transformer", save_dir=str(save_dir),
                  overrides=["optimization.max_update=0", "checkpoint.patience=5"])
    more.check_save_dir()
    assert not more.already_trained


def _label_copy(tiny_grid, tmp_path):
    """The tiny grid's work and published folders, copied: tests that change them leave the module's alone."""
    import shutil

    root, argv, _ = tiny_grid
    shutil.copytree(root / "work", tmp_path / "work", ignore=shutil.ignore_patterns("*.lock"))
    shutil.copytree(root / "published", tmp_path / "published")
    argv = list(argv)
    argv[argv.index("--work") + 1] = str(tmp_path / "work")
    argv[argv.index("--publish") + 1] = str(tmp_path / "published")
    # a prepared corpus names the test reference its runs scored against, which a restore copies back
    data_bin = tmp_path / "data-bin"
    shutil.copytree(argv[argv.index("--data") + 1], data_bin)
    shutil.copyfile(root / "work" / "tiny" / "pre" / "transformer" / "seed1" / "eval-test" / "ref.tok.txt",
                    tmp_path / "test.tok.tgt")
    (data_bin / "prep-info.json").write_text(json.dumps({"tok_ref": "../test.tok.tgt"}))
    argv[argv.index("--data") + 1] = str(data_bin)
    return argv, compare.grid_from_args(compare.build_parser().parse_args(argv))


def test_a_publish_folder_of_another_setup_restores_nothing_into_the_label(tiny_grid, tmp_path):
    """The label's own setup is checked before anything is restored into it: a call whose flags match a publish
    folder of another setup is refused, and the label's runs stay as they were."""
    import shutil

    argv, grid = _label_copy(tiny_grid, tmp_path)
    spec = compare.RunSpec("transformer", "pre", 2)
    shutil.rmtree(grid.run_dir(spec))  # a run the publish folder has and the label lacks
    record = tmp_path / "published" / "tiny" / "grid.json"
    other = json.loads(record.read_text())
    other["evaluate_flags"] = ["--beam", "3", "--max-len-b", "20"]
    record.write_text(json.dumps(other))
    argv[argv.index("--eval-args") + 1] = "--beam 3 --max-len-b 20"
    before = tree_digest(tmp_path / "work")
    proc = run(COMPARE + argv, check=False)
    assert proc.returncode == 2 and f"--work {grid.root} holds runs of another setup" in proc.stderr, proc.stderr
    assert "restored from" not in proc.stdout and tree_digest(tmp_path / "work") == before


def test_a_published_run_is_not_restored_over_a_training_of_its_own(tiny_grid, tmp_path):
    """A published run that the label has begun itself (its checkpoints, its log) is not restored over it: the
    published files would sit beside another training's checkpoints, and the analyses would read those. The call
    says so and resumes its own; nothing of it changes. A run another process is training is left to it."""
    argv, grid = _label_copy(tiny_grid, tmp_path)
    own = compare.RunSpec("transformer", "pre", 2)
    for name in ("eval-test", "trained", "result.json", "analyses"):  # trained once, not yet decoded
        path = grid.run_dir(own) / name
        if path.is_dir():
            import shutil

            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
    busy = compare.RunSpec("transformer_gaussian_local", "pre", 1)
    (grid.run_dir(busy) / compare.EVAL_DIR / "scores.json").unlink()
    def digest():  # the training lock's file aside: taking the lock writes it
        return {k: v for k, v in tree_digest(grid.run_dir(own)).items() if k != "checkpoints/.training.lock"}

    kept = digest()
    holder = hold_lock(grid.run_dir(busy) / "checkpoints")
    try:
        restored = compare.restore_published(grid, tmp_path / "published")
    finally:
        holder.kill()
    assert restored == []
    assert digest() == kept and not grid.finished(own) and not grid.finished(busy)
    assert compare.own_work(grid.run_dir(own)) == "a training (checkpoint_1_2.pt, checkpoint_1_4.pt, checkpoint_best.pt, ...)"
    # the dry run says the same: the run with a training of its own is to run here, not restored
    dry = run(COMPARE + argv + ["--dry-run"])
    assert "transformer (pre-norm, seed 2): to run" in dry.stdout


def test_a_folder_that_is_no_published_comparison_is_not_written_into(tiny_grid, tmp_path):
    """--publish writes table.md, runs.csv and the rest under fixed names: a label folder that holds files but no
    grid.json (a user's own) is refused before anything trains, and its files stay as they were."""
    argv, grid = _label_copy(tiny_grid, tmp_path)
    mine = tmp_path / "mine"
    (mine / "tiny").mkdir(parents=True)
    (mine / "tiny" / ".gitkeep").write_text("")  # a hidden file alone is no one's work: accepted
    compare.check_publish_folder(grid, mine)
    (mine / "tiny" / ".gitkeep").unlink()
    (mine / "tiny" / "table.md").write_text("my own notes\n")
    argv[argv.index("--publish") + 1] = str(mine)
    for extra in ([], ["--dry-run"], ["--table-only"]):
        proc = run(COMPARE + argv + extra, check=False)
        assert proc.returncode == 2 and f"{mine / 'tiny'} holds files and is no published comparison" in proc.stderr
    with pytest.raises(compare.CompareError, match="is no published comparison"):
        compare.publish(grid, mine)
    assert [p.name for p in (mine / "tiny").iterdir()] == ["table.md"]
    assert (mine / "tiny" / "table.md").read_text() == "my own notes\n"


def test_reading_a_run_dir_keeps_the_checkpoint_allow_list(tiny_grid):
    """The guard reads checkpoints in the trainer's own process: afterwards every checkpoint still loads with
    weights_only (torch's safe_globals context would remove the plugin's allow-listed classes on exit)."""
    import argparse

    import torch

    from fairseq_localness.experiments.rundir import read_run_state

    root, _, _ = tiny_grid
    checkpoint = root / "work" / "tiny" / "pre" / "transformer" / "seed1" / "checkpoints" / "checkpoint_last.pt"
    assert read_run_state(checkpoint.parent).arch == "transformer"
    assert argparse.Namespace in torch.serialization.get_safe_globals()
    torch.load(checkpoint, map_location="cpu", weights_only=True)


def test_published_runs_are_restored_not_retrained(tiny_grid, tmp_path):
    """A fresh checkout has the published result files but no run directories: the published runs count as
    finished (their text files are copied back, the test reference from the prepared corpus) and the table is
    rebuilt from them. No test text is published: neither the reference nor fairseq-generate's source lines."""
    import shutil

    from fairseq_localness.analyses.bleu import read_translations

    root, argv, _ = tiny_grid
    published = root / "published" / "tiny"
    for name in ("trained", "result.json", "eval-test/scores.json", "eval-test/hyp.tok.txt", "checkpoints/hydra_train.log",
                 "eval-test/source-lengths.txt"):
        assert (published / "pre" / "transformer" / "seed1" / name).is_file(), name
    assert not list(published.rglob("*.pt"))  # no checkpoint is published
    assert not list(published.rglob("ref.tok.txt")) and not list(published.rglob("generate-test.txt"))
    work_eval = root / "work" / "tiny" / "pre" / "transformer" / "seed1" / "eval-test"
    lengths = [len(line.split()) for line in read_translations(str(work_eval / "generate-test.txt"), "S")]  # by id
    assert (published / "pre" / "transformer" / "seed1" / "eval-test" / "source-lengths.txt").read_text().split() \
        == [str(n) for n in lengths] and len(lengths) == 40
    fresh = list(argv)
    fresh[fresh.index("--work") + 1] = str(tmp_path / "fresh-work")
    # this data-bin names no tokenised test reference (no prep-info.json): nothing can be restored, so nothing is copied
    refused = run(COMPARE + fresh, check=False)
    assert refused.returncode == 2 and "keep no copy of the test reference" in refused.stderr
    assert not (tmp_path / "fresh-work" / "tiny" / "pre").exists()
    # a prepared corpus names the reference its evaluations scored against (here: the runs' own)
    data_bin = tmp_path / "data-bin"
    shutil.copytree(fresh[fresh.index("--data") + 1], data_bin)
    shutil.copyfile(work_eval / "ref.tok.txt", tmp_path / "test.tok.tgt")
    (data_bin / "prep-info.json").write_text(json.dumps({"tok_ref": "../test.tok.tgt"}))
    fresh[fresh.index("--data") + 1] = str(data_bin)
    again = run(COMPARE + fresh)
    assert again.stdout.count("(restored from") == 4 and again.stdout.count("finished earlier, not retrained") == 4
    assert ": training\n" not in again.stdout and "resuming" not in again.stdout
    rows = json.loads((tmp_path / "fresh-work" / "tiny" / "table.json").read_text())["rows"]
    before = json.loads((root / "work" / "tiny" / "table.json").read_text())["rows"]
    assert [(r["arch"], r["tokenized_bleu"], r["params"], r.get("significance")) for r in rows] == \
        [(r["arch"], r["tokenized_bleu"], r["params"], r.get("significance")) for r in before]
    assert (tmp_path / "fresh-work" / "tiny" / "buckets.csv").read_text() == (root / "work" / "tiny" / "buckets.csv").read_text()
    # the restored label keeps the history of the commands that trained its runs: the caption names the first
    restored = json.loads((tmp_path / "fresh-work" / "tiny" / "commands.json").read_text())
    assert [entry["command"] for entry in restored][0] == json.loads((published / "commands.json").read_text())[0]["command"]
    caption = json.loads((tmp_path / "fresh-work" / "tiny" / "table.json").read_text())["caption"]
    assert caption.count("`fairseq-localness-compare") == 1 and str(tmp_path / "fresh-work") not in caption
    assert not list((tmp_path / "fresh-work").rglob("*.pt"))
    assert not list(published.rglob("ref.tok.txt"))  # publishing the restored runs again adds no test text
    # a restore cut short before a run's scores.json leaves that run unfinished, so the next call restores it whole
    cut = list(fresh)
    cut[cut.index("--work") + 1] = str(tmp_path / "cut-work")
    grid = compare.grid_from_args(compare.build_parser().parse_args(cut[cut.index("--data"):]))
    specs = [compare.RunSpec(a, "pre", s) for a in ("transformer", "transformer_gaussian_local") for s in (1, 2)]
    whole = compare.write_atomically

    def interrupted(path, data, errors="strict"):
        if Path(path).name == "scores.json":
            raise KeyboardInterrupt
        whole(path, data, errors)

    compare.write_atomically = interrupted
    try:
        with pytest.raises(KeyboardInterrupt):
            compare.restore_published(grid, root / "published")
    finally:
        compare.write_atomically = whole
    started = [spec for spec in specs if grid.run_dir(spec).exists()]
    assert len(started) == 1 and (grid.run_dir(started[0]) / "result.json").is_file()  # the rest of it was copied
    assert not any(grid.finished(spec) for spec in specs)
    # marked: no training starts on the half-copied run (its "trained" is the published run's), the call says how
    # to complete it, and the next restore does not take the copied files for a training of its own
    assert compare.own_work(grid.run_dir(started[0])) is None
    error = compare.train_and_evaluate(grid, started[0], "[1/4]", compare.Progress(4, 0, 1), -1)
    assert error == (f"its restore from {root / 'published' / 'tiny' / 'pre' / started[0].arch / 'seed1'} was cut "
                     f"short: run again with --publish {root / 'published'} to complete it, or move "
                     f"{grid.run_dir(started[0])} away to train it here")
    # a call without --publish (local or --slurm) refuses before anything trains or is submitted
    alone = cut[:cut.index("--publish")] + cut[cut.index("--publish") + 2:]
    refused = run(COMPARE + alone + ["--dry-run"], check=False)
    assert refused.returncode == 2 and f"{started[0].name}: its restore from " in refused.stderr, refused.stderr
    assert set(compare.restore_published(grid, root / "published")) == set(specs)
    assert all(grid.finished(spec) for spec in specs)
    assert not list((tmp_path / "cut-work").rglob(compare.RESTORING))
    # a mark left beside the scores (a kill between the last copy and its removal) is the restore's whole: removed
    (grid.run_dir(specs[0]) / compare.RESTORING).write_text("elsewhere\n")
    assert compare.restore_cut_short(grid.run_dir(specs[0])) is None
    assert not (grid.run_dir(specs[0]) / compare.RESTORING).exists()
    assert compare.RUN_FILES[-1] == "eval-test/scores.json"


def test_the_eta_counts_only_runs_trained_from_their_start(capsys):
    progress = compare.Progress(total=6, done=1, jobs=2)
    assert progress.eta() == "5 run(s) left, ETA after the first run trained from its start"
    progress.finished(900.0, whole=False)  # resumed: its last quarter of an hour says nothing of a whole run
    assert progress.eta() == "4 run(s) left, ETA after the first run trained from its start"
    progress.finished(3600.0)
    progress.finished(5400.0)
    # mean 4,500 s x 2 remaining runs / 2 jobs
    assert progress.eta() == "ETA for the 2 remaining run(s): 1h15m"
    progress.finished(10.0, whole=False)
    progress.finished(10.0, whole=False)
    assert progress.eta() == "no run left"


def test_learning_curves_zoom_on_the_second_half_and_draw_every_run(tmp_path):
    spec = compare.RunSpec
    curves = {spec("transformer", "pre", 1): [(1, 8.0), (2, 5.0), (3, 4.5), (4, 4.2)],
              spec("transformer", "pre", 2): [(1, 8.1), (2, 5.2), (3, 4.4), (4, 4.3), (5, 4.25), (6, 4.24)],
              spec("transformer_dman", "post", 1): [(1, 7.9)]}
    # the longest run has 6 epochs: the panel starts at epoch 3 and spans the losses from there, 4.2 to 4.5,
    # padded by 5% of that range (0.015) and 1e-3; the one-epoch run does not reach it and is left out of the range
    zoom_from, last, low, high = compare.zoom_window(curves)
    assert (zoom_from, last) == (3, 6)
    assert low == pytest.approx(4.2 - 0.016) and high == pytest.approx(4.5 + 0.016)
    # one run of one epoch: a flat range still gets a window
    assert compare.zoom_window({spec("transformer", "pre", 1): [(1, 7.0)]}) == (1, 1, pytest.approx(6.999),
                                                                                 pytest.approx(7.001))
    compare.plot_curves(curves, tmp_path / "curves.png", "tiny")
    assert (tmp_path / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bleu_by_length_tests_each_bucket_against_the_baseline(tmp_path, monkeypatch):
    grid = compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tmp_path / "bin",
                        archs=["transformer", "transformer_gaussian_local"], seeds=[1], norms=["pre"],
                        baseline="transformer", work=tmp_path)
    # 30 sentences of 4 source words (bucket 1-5) and 5 of 6 words (bucket >5). The Gaussian translates every
    # sentence exactly (BLEU 100); the baseline misses every word of the short ones (BLEU 0) and gets the long ones.
    sources = ["a b c d"] * 30 + ["a b c d e f"] * 5
    refs = [f"w{i} x{i} y{i} z{i}" for i in range(35)]
    outputs = {"transformer": ["q q q q"] * 30 + refs[30:], "transformer_gaussian_local": refs}
    records = []
    for arch, hyps in outputs.items():
        eval_dir = grid.run_dir(compare.RunSpec(arch, "pre", 1)) / "eval-test"
        eval_dir.mkdir(parents=True)
        (eval_dir / "generate-test.txt").write_text("".join(f"S-{i}\t{s}\n" for i, s in enumerate(sources)))
        (eval_dir / "hyp.tok.txt").write_text("\n".join(hyps) + "\n")
        (eval_dir / "ref.tok.txt").write_text("\n".join(refs) + "\n")
        (eval_dir / "scores.json").write_text(json.dumps({"tokenized_bleu": {"lowercase": False}}))
        records.append({"arch": arch, "norm": "pre", "seed": 1, "eval_dir": str(eval_dir.relative_to(grid.root))})
        (eval_dir.parent / "trained").write_text("2026-11-25T23:10:00\n")
    tests = compare.bucket_significance(grid, records, compare.EvaluationTexts([5]), lowercase=False,
                                         samples=1000)
    # bucket 1-5: every resample differs by the observed 100 BLEU, so none exceeds it: p = 1 / 1001. Bucket >5
    # has 5 sentences, fewer than MIN_BUCKET_TEST_SENTENCES: no test. The baseline is not tested against itself.
    assert list(tests) == [("pre", "transformer_gaussian_local")]
    short = tests["pre", "transformer_gaussian_local"]["1-5"]
    assert (short.delta, short.p_value, short.mark) == (100.0, pytest.approx(1 / 1001), "⇑")
    assert ">5" not in tests["pre", "transformer_gaussian_local"]
    from fairseq_localness.evaluation import scoring

    reads = []
    read_lines = scoring.read_lines
    monkeypatch.setattr(scoring, "read_lines", lambda path: reads.append(path) or read_lines(path))
    compare.write_buckets(grid, records, [5], lowercase=False)
    # the BLEU per bucket and the significance tests share one read of each run's hypotheses and reference
    assert sorted(reads) == sorted({*reads}) and len(reads) == 4
    table = (grid.root / "buckets.md").read_text()
    assert "| `transformer` | pre | 0.00 (baseline) | 100.00 (baseline) |" in table
    assert "| `transformer_gaussian_local` | pre | 100.00 (+100.00 ⇑) | 100.00 |" in table
    assert "fewer than 30 sentences are not tested" in table
    assert "2 runs; measured 2026-11-25 (the days the runs finished training)" in table  # not the day it is written


def test_plots_print_no_matplotlib_debug_lines():
    """fairseq configures the root logger at DEBUG in some entry points; matplotlib logs its paths at import."""
    code = ("import logging; logging.basicConfig(level=logging.DEBUG)\n"
            "from fairseq_localness.experiments.compare import pyplot; pyplot()")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    assert "DEBUG:matplotlib" not in done.stderr + done.stdout


def test_the_caption_dates_the_runs_not_the_table(tmp_path):
    grid = compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tmp_path / "bin",
                        archs=["transformer", "transformer_dman"], seeds=[1], norms=["pre"], baseline="transformer",
                        work=tmp_path)
    records = [{"arch": "transformer", "norm": "pre", "seed": 1}, {"arch": "transformer_dman", "norm": "pre", "seed": 1}]
    for record, stamp in zip(records, ("2026-11-25T23:10:00", "2026-11-26T04:54:37")):
        marker = grid.run_dir(compare.RunSpec(record["arch"], "pre", 1)) / "trained"
        marker.parent.mkdir(parents=True)
        marker.write_text(stamp + "\n")
    assert compare.measured_dates(grid, records) == "2026-11-25 to 2026-11-26"
    assert compare.measured_dates(grid, records[1:]) == "2026-11-26"
    (grid.run_dir(compare.RunSpec("transformer_dman", "pre", 1)) / "trained").unlink()
    assert compare.measured_dates(grid, records) == "2026-11-25"


@pytest.mark.parametrize("recorded, bleu", [(True, "100.0"), (False, "0.0")])
def test_bleu_by_length_is_scored_as_the_runs_were(tmp_path, recorded, bleu):
    """The buckets follow the lowercasing the runs' scores.json records, not the data-bin's default: output
    'a b c d' against the reference 'A B C D' is BLEU 100 lowercased and 0 cased."""
    grid = compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tmp_path / "bin", archs=["transformer"],
                        seeds=[1], norms=["pre"], baseline="transformer", work=tmp_path)
    eval_dir = grid.run_dir(compare.RunSpec("transformer", "pre", 1)) / "eval-test"
    eval_dir.mkdir(parents=True)
    (eval_dir / "source-lengths.txt").write_text("4\n")
    (eval_dir / "hyp.tok.txt").write_text("a b c d\n")
    (eval_dir / "ref.tok.txt").write_text("A B C D\n")
    (eval_dir / "scores.json").write_text(json.dumps({"tokenized_bleu": {"lowercase": recorded}}))
    records = [{"arch": "transformer", "norm": "pre", "seed": 1, "eval_dir": "pre/transformer/seed1/eval-test"}]
    compare.write_buckets(grid, records, [5], lowercase=not recorded)
    assert (grid.root / "buckets.csv").read_text().splitlines()[1] == f"lbl,transformer,pre,1,1-5,1,{bleu}"
    assert "mean ± sd over seeds; 1 run; measured" in (grid.root / "buckets.md").read_text()


def test_the_caption_names_every_command_of_the_label_and_the_norms_of_its_runs(tmp_path):
    """A published grid grows over several commands (a post-norm column, more seeds): the caption names each
    command that planned a finished run, and the recipe note the norm placements of the runs the table holds."""
    def grid(archs, seeds, norms):
        return compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tmp_path / "bin", archs=archs,
                            seeds=seeds, norms=norms, baseline="transformer", work=tmp_path)

    families = grid(["transformer", "transformer_dman"], [1], ["pre"])
    post = grid(["transformer", "transformer_dman"], [1], ["post"])
    more_seeds = grid(["transformer", "transformer_dman"], [2], ["pre"])
    compare.record_command(families, "cmd families")
    compare.record_command(post, "cmd post")
    compare.record_command(more_seeds, "cmd seeds")
    compare.record_command(families, "cmd families")  # run again: once in the history, in its first place
    compare.record_command(grid(["transformer"], [1], ["pre"]), "cmd subset")  # plans nothing the first did not
    history = json.loads((tmp_path / "lbl" / "commands.json").read_text())
    assert [entry["command"] for entry in history] == ["cmd families", "cmd post", "cmd seeds", "cmd subset"]
    assert history[1]["runs"] == [["transformer", "post", 1], ["transformer_dman", "post", 1]]
    records = [{"arch": "transformer", "norm": "pre", "seed": 1}, {"arch": "transformer_dman", "norm": "pre", "seed": 1},
               {"arch": "transformer", "norm": "post", "seed": 1}]
    # no run of the seeds command has finished, and the subset's runs are the first command's: neither is named;
    # the two named plan 4 runs, 3 finished
    assert compare.table_commands(post, records, "this call") == (["cmd families", "cmd post"], 4, 0)
    # a finished run no recorded command planned (restored from a publication older than the history) is counted
    extra = records + [{"arch": "transformer_sman", "norm": "pre", "seed": 1}]
    assert compare.table_commands(post, extra, "this call") == (["cmd families", "cmd post"], 5, 1)
    assert compare.norm_placements(post, records) == "pre-norm for every architecture; post-norm for `transformer`"
    assert compare.norm_placements(post, records[:2]) == "pre-norm for every architecture"
    assert compare.norm_placements(post, []) == "post-norm for every architecture"  # nothing finished: the grid's
    # a label without a history names this call's command, and the runs it plans
    other = grid(["transformer", "transformer_dman"], [1, 2], ["pre"])
    other.label = "fresh"
    assert compare.table_commands(other, records[:1], "this call") == (["this call"], 4, 0)
    # the history of a publication joins a work directory's, the published commands first
    (tmp_path / "published").mkdir()
    (tmp_path / "published" / "commands.json").write_text(json.dumps([{"command": "cmd old", "runs": []}, history[0]]))
    compare.merge_commands(tmp_path / "published" / "commands.json", tmp_path / "lbl" / "commands.json")
    merged = json.loads((tmp_path / "lbl" / "commands.json").read_text())
    assert [entry["command"] for entry in merged] == ["cmd old", "cmd families", "cmd post", "cmd seeds", "cmd subset"]
    (tmp_path / "lbl" / "commands.json").write_text("{not json")
    with pytest.raises(compare.CompareError, match="commands.json: not the list of commands"):
        compare.record_command(families, "cmd families")


def test_rows_keep_the_order_of_the_first_command(tmp_path):
    """A later command (a post-norm column of three) does not reorder the rows of the first: the baseline, then
    the architectures as the label's commands listed them, pre-norm before post-norm."""
    def grid(archs, norms):
        return compare.Grid(label="lbl", recipe="compare_multi30k_de_en", data_bin=tmp_path / "bin", archs=archs,
                            seeds=[1], norms=norms, baseline="transformer", work=tmp_path)

    families = grid(["transformer", "transformer_dman", "transformer_alibi"], ["pre"])
    post = grid(["transformer", "transformer_sman"], ["post"])
    for spec in families.runs() + post.runs():
        (post.scores_path(spec)).parent.mkdir(parents=True)
        post.scores_path(spec).write_text("{}")
    compare.record_command(families, "cmd families")
    compare.record_command(post, "cmd post")
    assert [(s.arch, s.norm) for s in compare.finished_specs(post)] == [
        ("transformer", "pre"), ("transformer_dman", "pre"), ("transformer_alibi", "pre"),
        ("transformer", "post"), ("transformer_sman", "post")]
    (tmp_path / "lbl" / "commands.json").unlink()  # no history: this call's grid first, then the rest by name
    assert [s.arch for s in compare.finished_specs(post)][:3] == ["transformer", "transformer_alibi", "transformer_dman"]


def test_point_labels_are_placed_where_they_overprint_no_other():
    # anchors in points. Two rows at one point (a tie, as csan2d and fire at 39.61): the second label goes below
    # the point; a third there goes above-left; a fourth below-left; one far away keeps its place up-right
    width = compare.LABEL_CHAR * 4  # 4-character labels
    offsets = compare.label_offsets([(100, 100)] * 4 + [(400, 300)], ["aaaa", "bbbb", "cccc", "dddd", "eeee"])
    line = compare.LABEL_LINE
    assert offsets == [(3, 3), (3, -line - 2), (-width - 3, 3), (-width - 3, -line - 2), (3, 3)]
    # a label right of its point ends where the next point's label would start: no overlap, no move
    assert compare.label_offsets([(0, 0), (3 + width, 0)], ["aaaa", "bbbb"]) == [(3, 3), (3, 3)]
    # one more line up is enough to clear a label
    assert compare.label_offsets([(0, 0), (0, line)], ["aaaa", "bbbb"]) == [(3, 3), (3, 3)]
    # at the axes' right edge a label goes left of its point, and at the left edge right of it
    assert compare.label_offsets([(500, 100)], ["aaaa"], width_limit=510) == [(-width - 3, 3)]
    assert compare.label_offsets([(0, 100)], ["aaaa"], width_limit=510) == [(3, 3)]
    # where no place inside the axes is free, the first one free of other labels outside them is taken
    assert compare.label_offsets([(5, 100)], ["a" * 200], width_limit=100) == [(3, 3)]
    assert compare.label_offsets([(5, 100), (5, 100)], ["aaaa", "b" * 200], width_limit=100)[1] == (3, -line - 2)
    # at the right edge with both places left of the point taken, the label goes lower on the left, clear of the
    # second (a line below it: three lines below the first place)
    crowded = compare.label_offsets([(100, 100)] * 3, ["aaaa", "bbbb", "cccc"], width_limit=105)
    assert crowded == [(-width - 3, 3), (-width - 3, -line - 2), (-width - 3, 3 - 3 * line)]
