"""The two comparison corpora: KFTT 30k Japanese->English (data-prep/prepare-kftt.sh, localness_prep/kftt.py) and
the whole Tatoeba cmn-eng corpus Chinese->English (data-prep/prepare-tatoeba-zh-en.sh, localness_prep/sample.py's
split).

Unit tests of the helpers run on tiny synthetic files; the script tests run on the real corpora in
``<repo>/../shared/data`` and are skipped (with the reason) where they are absent.
"""
from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path

import pytest

from localness_prep import sample
from localness_prep.checks import CheckError
from localness_prep.kftt import SPLIT_PAIRS, main as kftt_main, select_splits
from localness_testing import REPO, run

SHARED = REPO.parent / "shared" / "data"
KFTT = SHARED / "kftt30k_cicada"
CMN_ENG = SHARED / "manythings_cmn_eng"
ENV = {"PYTHON": sys.executable, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").split("\n")[:-1]


def assert_published_statistics(out: Path, name: str) -> None:
    """The counts docs/data.md publishes for this corpus (docs/results/prep/corpus-statistics.json, which the
    docs' prose is held to) are those of a fresh preparation."""
    from fairseq_localness.experiments.corpus_statistics import corpus_statistics

    published = json.loads((REPO / "docs" / "results" / "prep" / "corpus-statistics.json").read_text(encoding="utf-8"))
    (record,) = [r for r in published["records"] if r["corpus"] == name]
    assert corpus_statistics(name, out) == record, \
        f"{name}: a fresh preparation counts otherwise than corpus-statistics.json: rerun the command of its caption"


# --------------------------------------------------------------------------- KFTT helper (prep/kftt.py)


def write_kftt(directory: Path, sizes: dict[str, int] = SPLIT_PAIRS) -> Path:
    """Files named and sized like the sample; English lines end with a space as tune/dev do."""
    directory.mkdir(parents=True, exist_ok=True)
    for released, n in sizes.items():
        (directory / f"{released}.ja").write_text("".join(f"{released} 文 {i} 。\n" for i in range(n)), encoding="utf-8")
        (directory / f"{released}.en").write_text("".join(f"{released} sentence {i} . \n" for i in range(n)), encoding="utf-8")
    return directory


def test_kftt_select_copies_the_splits(tmp_path):
    raw = write_kftt(tmp_path / "raw")
    out = tmp_path / "tok"
    assert select_splits(str(raw), str(out)) == {"train": 30000, "valid": 1235, "test": 1166}
    assert sorted(p.name for p in out.iterdir()) == [f"{s}.{l}" for s in ("test", "train", "valid") for l in ("en", "ja")]
    # valid = tune, test = dev; the text is copied as it is, without the trailing spaces
    assert lines(out / "valid.en")[-1] == "tune sentence 1234 ."
    assert lines(out / "test.ja")[0] == "dev 文 0 。"
    assert len(lines(out / "train.en")) == len(lines(out / "train.ja")) == 30000


@pytest.mark.parametrize("damage, message", [
    ("truncate", r"tune\.ja: 1000 pairs, but the KFTT 30k sample's tune split has 1235"),
    ("misalign", r"line counts differ: .*dev\.ja has 1166 lines but .*dev\.en has 1165"),
    ("latin1", r"train\.en:3: not valid UTF-8"),
    ("missing", r"tune\.en: no such file"),
], ids=["truncated", "misaligned", "not-utf8", "missing"])
def test_kftt_select_names_the_bad_file_and_writes_nothing(tmp_path, damage, message):
    raw = write_kftt(tmp_path / "raw")
    if damage == "truncate":
        write_kftt(raw, {"tune": 1000})
    elif damage == "misalign":
        (raw / "dev.en").write_text("x\n" * 1165, encoding="utf-8")
    elif damage == "latin1":
        (raw / "train.en").write_bytes(b"a\nb\nd\xe9j\xe0 vu\n" + b"x\n" * 29997)
    else:
        (raw / "tune.en").unlink()
    with pytest.raises(CheckError, match=message):
        select_splits(str(raw), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    # the command line says the same, prefixed with the helper's name
    with pytest.raises(SystemExit, match="^kftt: .*" + message):
        kftt_main(["select", str(raw), str(tmp_path / "out")])
    assert not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- Tatoeba split (localness_prep/sample.py)


def synthetic_cmn_eng(n: int = 400) -> tuple[list[str], list[str]]:
    """Pairs with repeated sentences on either side (as in cmn-eng: "Hi." / "Hi!" and several translations)."""
    en = [f"Sentence number {i}." for i in range(n)]
    zh = [f"第{i}句。" for i in range(n)]
    for i in range(0, n, 5):
        en[i] = f"Sentence number {i - 1}!" if i else en[i]  # same English as the pair before, once normalised
    for i in range(2, n, 7):
        zh[i] = zh[i - 1]  # same Chinese as the pair before
    return en, zh


def assert_tatoeba_split(en: list[str], zh: list[str], n_valid: int, n_test: int) -> dict[str, list[int]]:
    n_train = len(en) - n_valid - n_test
    splits = sample.split_corpus(en, zh, n_train, n_valid, n_test)
    assert splits == sample.split_corpus(list(en), list(zh), n_train, n_valid, n_test)  # deterministic
    assert {k: len(v) for k, v in splits.items()} == {"train": n_train, "valid": n_valid, "test": n_test}
    sets = {k: set(v) for k, v in splits.items()}
    assert not (sets["train"] & sets["valid"]) and not (sets["train"] & sets["test"]) and not (sets["valid"] & sets["test"])
    assert sets["train"] | sets["valid"] | sets["test"] == set(range(len(en)))  # train = every other pair
    for side in (en, zh):
        counts: dict[str, int] = {}
        for text in side:
            counts[sample.norm(text)] = counts.get(sample.norm(text), 0) + 1
        held_out = [side[i] for i in splits["valid"] + splits["test"]]
        assert all(counts[sample.norm(text)] == 1 for text in held_out)  # unique in the whole corpus
    assert all(v == sorted(v) for v in splits.values())  # corpus order kept
    return splits


def test_tatoeba_split_synthetic():
    en, zh = synthetic_cmn_eng()
    splits = assert_tatoeba_split(en, zh, n_valid=30, n_test=30)
    assert not {1, 2, 4, 5} & set(splits["valid"] + splits["test"])  # zh of 1 = zh of 2, en of 4 ~ en of 5
    # the ranking is by content, not by position: reversing the corpus picks the same pairs
    rev = sample.split_corpus(en[::-1], zh[::-1], len(en) - 60, 30, 30)
    assert sorted(len(en) - 1 - i for i in rev["test"]) == splits["test"]
    with pytest.raises(SystemExit, match="unique pairs: cannot take"):
        sample.split_corpus(en, zh, 0, len(en), len(en))


def test_tatoeba_split_real_corpus_sizes():
    if not (CMN_ENG / "cmn-eng.en").is_file():
        pytest.skip(f"cmn-eng corpus not found at {CMN_ENG} (CI provides it at ../shared/data)")
    en, zh = (lines(CMN_ENG / f"cmn-eng.{side}") for side in ("en", "zh"))
    assert len(en) == len(zh) == 29155
    assert_tatoeba_split(en, zh, n_valid=1000, n_test=1000)


# --------------------------------------------------------------------------- the scripts on the real corpora


def binarized_size(data_bin: Path, split: str, src: str, tgt: str, lang: str) -> int:
    from fairseq.data import data_utils

    return len(data_utils.load_indexed_dataset(str(data_bin / f"{split}.{src}-{tgt}.{lang}"), None))


def test_prepare_kftt_script(tmp_path):
    """The real sample, offline, default settings: published split sizes, joined dictionary, detokenised reference."""
    if not (KFTT / "train.ja").is_file():
        pytest.skip(f"KFTT 30k sample not found at {KFTT} (CI provides it at ../shared/data)")
    out = tmp_path / "kftt"
    cmd = ["bash", str(REPO / "data-prep" / "prepare-kftt.sh"), "--raw-dir", str(KFTT), "--out", str(out)]
    proc = run(cmd, env=ENV)
    assert re.search(r"^test\s+1166\s", proc.stdout, re.M) and re.search(r"^train\s+30000\s", proc.stdout, re.M)
    for split, pairs in (("train", 30000), ("valid", 1235), ("test", 1166)):
        for lang in ("ja", "en"):
            assert len(lines(out / f"{split}.{lang}")) == pairs
            assert binarized_size(out / "data-bin", split, "ja", "en", lang) == pairs
    assert (out / "data-bin" / "dict.ja.txt").read_bytes() == (out / "data-bin" / "dict.en.txt").read_bytes()
    assert "@@ " in (out / "train.ja").read_text(encoding="utf-8")
    # the tokenised test set is the sample's dev set; raw/test.en is its detokenised copy
    assert lines(out / "tok" / "test.en") == [x.rstrip() for x in lines(KFTT / "dev.en")]
    raw = lines(out / "raw" / "test.en")
    assert len(raw) == 1166 and " ," not in raw[0] and "(Rinzai," in raw[0]
    info = json.loads((out / "data-bin" / "prep-info.json").read_text())
    expected = {"script": "prepare-kftt.sh", "src": "ja", "tgt": "en", "bpe": "subword_nmt", "lowercased": False,
                "compound_split": False, "tok_ref": "../tok/test.en", "detok_ref": "../raw/test.en"}
    assert {key: info.get(key) for key in expected} == expected
    assert_published_statistics(out, "kftt_ja_en")
    refused = run(cmd, env=ENV, check=False)
    assert refused.returncode != 0 and "already holds finished data" in refused.stderr
    missing = run(cmd[:2] + ["--out", str(tmp_path / "other")], env=ENV, check=False)
    assert missing.returncode != 0 and "--raw-dir" in missing.stderr and "kftt30k_cicada" in missing.stderr
    assert not (tmp_path / "other").exists()


def test_another_copy_of_tatoeba_is_named_as_another_split(tmp_path):
    """The split is a function of the whole file: a copy other than the published comparison's (here one pair
    dropped) is named, so that nobody takes its split for the published one."""
    import shutil

    from localness_prep.prepare.tatoeba_zh_en import differs_from_published_copy

    if not (CMN_ENG / "cmn-eng.en").is_file():
        pytest.skip(f"cmn-eng corpus not found at {CMN_ENG} (CI provides it at ../shared/data)")
    assert differs_from_published_copy(str(CMN_ENG)) == []
    for name in ("cmn-eng.en", "cmn-eng.zh"):
        text = (CMN_ENG / name).read_text(encoding="utf-8")
        (tmp_path / name).write_text(text if name.endswith("zh") else text.split("\n", 1)[1], encoding="utf-8")
    shutil.copyfile(CMN_ENG / "cmn-eng.attribution", tmp_path / "cmn-eng.attribution")
    assert differs_from_published_copy(str(tmp_path)) == ["cmn-eng.en"]


def test_prepare_tatoeba_script(tmp_path):
    """The whole cmn-eng corpus, offline, default settings: 27,155 / 1,000 / 1,000, joined dictionary, credits kept."""
    if not (CMN_ENG / "cmn-eng.en").is_file():
        pytest.skip(f"cmn-eng corpus not found at {CMN_ENG} (CI provides it at ../shared/data)")
    out = tmp_path / "tatoeba"
    cmd = ["bash", str(REPO / "data-prep" / "prepare-tatoeba-zh-en.sh"), "--raw-dir", str(CMN_ENG), "--out", str(out)]
    proc = run(cmd, env=ENV)
    assert "warning:" not in proc.stderr  # the published comparison's copy: its split
    assert re.search(r"^test\s+1000\s", proc.stdout, re.M) and re.search(r"^train\s+27155\s", proc.stdout, re.M)
    for split, pairs in (("train", 27155), ("valid", 1000), ("test", 1000)):
        for side in ("zh", "en", "attribution"):
            assert len(lines(out / "raw" / f"{split}.{side}")) == pairs
        for lang in ("zh", "en"):
            assert len(lines(out / f"{split}.{lang}")) == pairs
            assert binarized_size(out / "data-bin", split, "zh", "en", lang) == pairs
    assert (out / "data-bin" / "dict.zh.txt").read_bytes() == (out / "data-bin" / "dict.en.txt").read_bytes()
    assert all(a.startswith("CC-BY 2.0 (France) Attribution: tatoeba.org #") for a in lines(out / "raw" / "test.attribution"))
    # raw/test.en is the corpus text (the sacreBLEU reference), in corpus order
    en = lines(CMN_ENG / "cmn-eng.en")
    test_en = lines(out / "raw" / "test.en")
    wanted = set(test_en)
    index = {text: i for i, text in enumerate(en) if text in wanted}
    positions = [index[x] for x in test_en]
    assert positions == sorted(positions)
    info = json.loads((out / "data-bin" / "prep-info.json").read_text())
    assert info["script"] == "prepare-tatoeba-zh-en.sh" and (info["src"], info["tgt"]) == ("zh", "en")
    assert info["detok_ref"] == "../raw/test.en" and info["lowercased"] is False
    assert_published_statistics(out, "tatoeba_zh_en")
    refused = run(cmd, env=ENV, check=False)
    assert refused.returncode != 0 and "already holds finished data" in refused.stderr
    missing = run(cmd[:2] + ["--out", str(tmp_path / "other")], env=ENV, check=False)
    assert missing.returncode != 0 and "manythings_cmn_eng" in missing.stderr
    assert not (tmp_path / "other").exists()


# --------------------------------------------------------------------------- train short / test long (Europarl)


def test_length_split_buckets_and_limits():
    """Test takes at most per-bucket pairs of each source-length bucket; train and valid only short pairs;
    the three are disjoint and the split does not depend on the corpus order."""
    from localness_prep.length_split import bucket_of, split_by_length

    assert [bucket_of(n, [10, 20]) for n in (1, 10, 11, 20, 21, 99)] == [0, 0, 1, 1, 2, 2]
    src = [" ".join(f"w{j}" for j in range(1 + i % 45)) for i in range(400)]
    tgt = [f"t{i} " * (1 + i % 45) for i in range(400)]
    splits = split_by_length(src, tgt, max_len=12, per_bucket=5, n_valid=20, edges=[10, 20, 30])
    test_lengths = [len(src[i].split()) for i in splits["test"]]
    assert [sum(1 for n in test_lengths if bucket_of(n, [10, 20, 30]) == b) for b in range(4)] == [5, 5, 5, 5]
    assert all(len(src[i].split()) <= 12 and len(tgt[i].split()) <= 18 for i in splits["train"] + splits["valid"])
    assert len(splits["valid"]) == 20
    seen = set(splits["train"]) | set(splits["valid"]) | set(splits["test"])
    assert len(seen) == len(splits["train"]) + len(splits["valid"]) + len(splits["test"])
    reordered = split_by_length(src[::-1], tgt[::-1], max_len=12, per_bucket=5, n_valid=20, edges=[10, 20, 30])
    assert sorted(src[::-1][i] for i in reordered["test"]) == sorted(src[i] for i in splits["test"])
    with pytest.raises(CheckError, match="cannot take 500 valid"):
        split_by_length(src, tgt, max_len=12, per_bucket=5, n_valid=500, edges=[10, 20, 30])


def test_prepare_europarl_length_script(tmp_path):
    raw = REPO.parent / "shared" / "data" / "wmt14_ende" / "raw_sample_simt"
    if not (raw / "europarl_head20k.de").is_file():
        pytest.skip(f"Europarl sample not found at {raw} (CI provides the corpora at ../shared/data)")
    out = tmp_path / "europarl"
    run(["bash", str(REPO / "data-prep" / "prepare-europarl-length.sh"), "--raw-dir", str(raw), "--out", str(out)])
    sizes = {split: len((out / f"{split}.de").read_text(encoding="utf-8").splitlines()) for split in ("train", "valid", "test")}
    assert sizes == {"train": 9000, "valid": 500, "test": 1200}
    longest_train = max(len(line.split()) for line in (out / "raw" / "train.de").read_text(encoding="utf-8").splitlines())
    longest_test = max(len(line.split()) for line in (out / "raw" / "test.de").read_text(encoding="utf-8").splitlines())
    assert longest_train <= 20 < 60 < longest_test
    assert (out / "data-bin" / "dict.de.txt").read_bytes() == (out / "data-bin" / "dict.en.txt").read_bytes()
    assert json.loads((out / "data-bin" / "prep-info.json").read_text())["corpus"] == "europarl-length"  # --max-len 20
    assert_published_statistics(out, "europarl_len_de_en")


def test_another_max_len_is_another_corpus(tmp_path):
    """--max-len N other than the published 20 makes another split, and prep-info.json names it
    (europarl-length-maxlenN), as the other scripts name their variants."""
    raw = REPO.parent / "shared" / "data" / "wmt14_ende" / "raw_sample_simt"
    if not (raw / "europarl_head20k.de").is_file():
        pytest.skip(f"Europarl sample not found at {raw} (CI provides the corpora at ../shared/data)")
    out = tmp_path / "europarl12"
    run(["bash", str(REPO / "data-prep" / "prepare-europarl-length.sh"), "--raw-dir", str(raw), "--out", str(out),
         "--max-len", "12"])
    assert json.loads((out / "data-bin" / "prep-info.json").read_text())["corpus"] == "europarl-length-maxlen12"
    assert max(len(line.split()) for line in (out / "raw" / "train.de").read_text(encoding="utf-8").splitlines()) <= 12
