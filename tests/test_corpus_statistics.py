"""experiments.corpus_statistics on a prepared corpus small enough to count by hand, and its errors."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from fairseq_localness.experiments import corpus_statistics as cs


def write(path: Path, lines) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")


@pytest.fixture
def translation(tmp_path) -> Path:
    root = tmp_path / "de_en"
    write(root / "tok" / "train.de", ["a b c", "d e", "f g h i"])  # the longest training source: 4 words
    write(root / "tok" / "train.en", ["A", "B", "C"])
    write(root / "tok" / "valid.de", ["d e", "x"])  # "d e" with train's English: a source and a pair in train
    write(root / "tok" / "valid.en", ["B", "Y"])
    # "a b c" in train with another English (a source, not a pair); "f ... k" 6 words, longer than any in train;
    # "d e" with train's English (a pair)
    write(root / "tok" / "test.de", ["a b c", "f g h i j k", "d e"])
    write(root / "tok" / "test.en", ["Z", "W", "B"])
    # BPE: under --max-len-a 2 --max-len-b 10 the second source (6 tokens) allows 2 * 7 + 10 = 24 target tokens and
    # its reference has 25; the third (2 tokens) allows 2 * 3 + 10 = 16 and its reference has exactly 16
    write(root / "train.de", ["a b c", "d e", "f g h@@ i"])  # BPE: 3 + 2 + 4 tokens, mean 3
    write(root / "valid.de", ["d e", "x"])  # mean 1.5
    write(root / "test.de", ["a b c", "f g h i j k", "d e"])  # mean 11 / 3 = 3.67
    write(root / "test.en", ["Z", " ".join(["w"] * 25), " ".join(["b"] * 16)])
    write(root / "raw" / "test.en", ["It is 4:00 now.", "At 12:30, not 3:1.", "Tokenised 4 : 00 is no time."])
    for lang in ("de", "en"):
        write(root / "data-bin" / f"dict.{lang}.txt", [f"{w} 1" for w in "abcde"])
    (root / "data-bin" / "prep-info.json").write_text(json.dumps({"src": "de", "tgt": "en"}))
    return root


def test_translation_counts_by_hand(translation):
    r = cs.corpus_statistics("toy", translation)
    assert r["pairs"] == {"train": 3, "valid": 2, "test": 3}
    assert r["dictionary_words"] == {"de": 5, "en": 5} and r["joined_dictionary"] is True
    assert r["source_bpe_tokens_mean"] == {"train": 3.0, "valid": 1.5, "test": 3.67}
    assert (r["train_source_words_max"], r["test_source_words_max"], r["test_sources_longer_than_train"]) == (4, 6, 1)
    assert r["test"] == {"sources_in_train": 2, "pairs_in_train": 1, "sources_in_train_words_max": 3}
    assert r["valid"] == {"sources_in_train": 1, "pairs_in_train": 1, "sources_in_train_words_max": 2}
    assert r["test_reference_bpe_max"] == 25
    assert r["test_references_over_cap"] == {"max_len_a=0,max_len_b=200": 0, "max_len_a=2,max_len_b=10": 1}
    assert r["test_references_with_clock_time"] == 2  # 4:00 and 12:30; not 3:1 nor the tokenised "4 : 00"


def test_separate_dictionaries_and_no_raw_reference(translation):
    write(translation / "data-bin" / "dict.en.txt", ["A 1", "B 1"])
    (translation / "raw" / "test.en").unlink()
    r = cs.corpus_statistics("toy", translation)
    assert r["dictionary_words"] == {"de": 5, "en": 2} and r["joined_dictionary"] is False
    assert "test_references_with_clock_time" not in r


def test_classification_counts(tmp_path):
    root = tmp_path / "sst"
    for split, n in (("train", 3), ("valid", 1), ("test", 2)):
        write(root / "tok" / "input0" / f"{split}.txt", ["w"] * n)
    write(root / "data-bin" / "input0" / "dict.txt", ["a 1", "b 1", "c 1", "d 1"])
    assert cs.corpus_statistics("sst", root) == {"corpus": "sst", "kind": "classification",
                                                 "examples": {"train": 3, "valid": 1, "test": 2},
                                                 "dictionary_words": 4}


def test_the_command_writes_its_result_file(translation, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)  # the command line would name it
    assert cs.main(["--data", "toy=de_en", "--json", "out/stats.json"]) == 0
    run = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert run["command"] == ("python -m fairseq_localness.experiments.corpus_statistics --data toy=de_en "
                              "--json out/stats.json")
    assert {"date", "time", "machine", "load_average", "source"} <= set(run)
    assert [r["corpus"] for r in run["records"]] == ["toy"]
    with pytest.raises(SystemExit):  # an existing result file is kept
        cs.main(["--data", "toy=de_en", "--json", "out/stats.json"])
    assert "--json out/stats.json exists; pass --overwrite" in capsys.readouterr().err
    assert cs.main(["--data", "toy=de_en", "--json", "out/stats.json", "--overwrite"]) == 0


@pytest.mark.parametrize("argv, message", [
    (["--data", "de_en"], "--data de_en: expected NAME=DIR"),
    (["--data", "toy=nowhere"], "--data toy=nowhere: nowhere is not a directory"),
    (["--data", "a=de_en", "--data", "a=de_en"], "--data: a name given twice"),
    (["--data", "toy=."], "--data toy=.: neither ./data-bin/prep-info.json"),
])
def test_bad_input_names_the_flag(argv, message, translation, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit):
        cs.main(argv)
    assert message in capsys.readouterr().err


def test_a_missing_file_is_named(translation, capsys):
    (translation / "tok" / "valid.en").unlink()
    with pytest.raises(SystemExit):
        cs.main(["--data", f"toy={translation}"])
    err = capsys.readouterr().err
    assert f"--data toy={translation}: {translation / 'tok' / 'valid.en'} is missing" in err
