"""Data-prep of the classification and language-modelling tasks of Nguyen et al. (2020) Tables 5-6:
data-prep/prepare-imdb.sh, prepare-sva.sh, prepare-1bw.sh, prepare-lm-news-en.sh and their helpers
localness_prep/{imdb,sva,lm_corpus}.py (docs/tasks.md).

Hand-made fixtures in tmp dirs, expected outputs written out by hand; one real-data run of the
news-English stand-in when ../shared/data is there (about 25 s of CPU).
"""
from __future__ import annotations

import csv
import gzip
import json
import random
from pathlib import Path

import pytest

from localness_prep.checks import CheckError
from localness_prep.imdb import clean_review, split_imdb
from localness_prep.lm_corpus import STANDIN_SOURCES, build_standin, onebw_files, prepare_onebw
from localness_prep.sva import linzen_split, py2_shuffle, read_examples, split_sva, t2t_split
from localness_testing import BIN, REPO, run

ENV = {"PYTHON": str(BIN / "python")}
SHARED_DATA = REPO.parent / "shared" / "data"


def script(name: str, *args: str, check: bool = True):
    return run(["bash", str(REPO / "data-prep" / name), *args], env=ENV, check=check)


def lines(path: Path) -> list:
    return path.read_text(encoding="utf-8").splitlines()


# ---------------------------------------------------------------- IMDB (aclImdb layout)

#: review file -> (raw text, Moses-tokenised and lowercased by hand)
IMDB = {
    "train/neg/1_1.txt": ("Awful.<br/>Just awful.", "awful . just awful ."),
    "train/neg/5_2.txt": ("Boring plot.", "boring plot ."),
    "train/neg/6_3.txt": ("I hated it.", "i hated it ."),
    "train/neg/7_4.txt": ("Not good.", "not good ."),
    "train/pos/2_8.txt": ("Wonderful acting!", "wonderful acting !"),
    "train/pos/3_7.txt": ("Good fun.", "good fun ."),
    "train/pos/4_10.txt": ('Best "movie" ever.', 'best " movie " ever .'),
    "train/pos/10_9.txt": ("A great film.<br /><br />I loved it, didn't you?", "a great film . i loved it , didn 't you ?"),
    "test/neg/0_2.txt": ("Terrible film, Mr. Smith.", "terrible film , mr. smith ."),
    "test/pos/0_10.txt": ("Loved it.<BR />Really.", "loved it . really ."),
    "train/unsup/0_0.txt": ("Not a labelled review.", None),
}
#: the movie (IMDb URL, line ID of train/urls_CLASS.txt) of each training review: tt1 has one review of each
#: class, tt2 two negative ones, tt3 one negative, tt4 one positive, tt5 two positive
MOVIES = {"neg": {1: "tt1", 5: "tt2", 6: "tt2", 7: "tt3"}, "pos": {2: "tt1", 3: "tt4", 4: "tt5", 10: "tt5"}}


def write_imdb(root: Path) -> Path:
    for name, (text, _) in IMDB.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    for cls, movies in MOVIES.items():
        urls = [f"http://www.imdb.com/title/{movies.get(i, 'tt99')}/usercomments" for i in range(max(movies) + 1)]
        (root / "train" / f"urls_{cls}.txt").write_text("\n".join(urls) + "\n")
    return root


@pytest.fixture(scope="module")
def imdb_prep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("imdb")
    write_imdb(root / "aclImdb")
    script("prepare-imdb.sh", "--raw-dir", str(root), "--out", str(root / "prep"), "--dev-size", "2")
    return root


def test_imdb_exact_lines_labels_and_dev_split(imdb_prep):
    tok = imdb_prep / "prep" / "tok"
    for split in ("train", "valid", "test"):
        for key in ("input0", "label"):
            assert (imdb_prep / "prep" / "data-bin" / key / f"{split}.bin").is_file()
    # test: the released test set, neg (label 0) then pos (1)
    assert lines(tok / "input0" / "test.txt") == ["terrible film , mr. smith .", "loved it . really ."]
    assert lines(tok / "label" / "test.txt") == ["0", "1"]
    # valid: one review of each class, of whole movies: tt1 (1_1, 2_8) or tt3 + tt4 (7_4, 3_7), the only
    # movie sets with one review of each class; train keeps the rest, in numeric id order (2 < 10)
    neg = [IMDB[f"train/neg/{n}"][1] for n in ("1_1.txt", "5_2.txt", "6_3.txt", "7_4.txt")]
    pos = [IMDB[f"train/pos/{n}"][1] for n in ("2_8.txt", "3_7.txt", "4_10.txt", "10_9.txt")]
    valid = lines(tok / "input0" / "valid.txt")
    assert lines(tok / "label" / "valid.txt") == ["0", "1"] and valid in ([neg[0], pos[0]], [neg[3], pos[1]])
    assert lines(tok / "input0" / "train.txt") == [x for x in neg if x not in valid] + [x for x in pos if x not in valid]
    assert lines(tok / "label" / "train.txt") == ["0"] * 3 + ["1"] * 3
    again = script("prepare-imdb.sh", "--raw-dir", str(imdb_prep), "--out", str(imdb_prep / "prep"), check=False)
    assert again.returncode != 0 and "already holds finished data" in again.stderr


def test_imdb_dev_split_is_seeded(tmp_path):
    raw = write_imdb(tmp_path / "aclImdb")
    picks = {}
    for name, by in (("a", "movie"), ("b", "movie"), ("c", "review"), ("d", "review")):
        split_imdb(str(raw), str(tmp_path / name), dev_size=3, seed=3, by=by)
        picks[name] = (tmp_path / name / "input0" / "valid.txt").read_text()
        assert lines(tmp_path / name / "label" / "valid.txt") == ["0", "1", "1"]  # 3 // 2 neg, the rest pos
    assert picks["a"] == picks["b"] and picks["c"] == picks["d"]
    # and the seed is what decides: other seeds draw other reviews (a fixed or ignored seed would draw one set)
    for seed in range(8):
        split_imdb(str(raw), str(tmp_path / f"seed{seed}"), dev_size=3, seed=seed, by="review")
    assert len({(tmp_path / f"seed{seed}" / "input0" / "valid.txt").read_text() for seed in range(8)}) > 1
    for cls in MOVIES:  # every review in one movie: it does not fit a 1 + 1 dev set (an error, not half a movie)
        (raw / "train" / f"urls_{cls}.txt").write_text("http://www.imdb.com/title/tt7/usercomments\n" * 11)
    with pytest.raises(CheckError, match="whole movies of the training set do not add up"):
        split_imdb(str(raw), str(tmp_path / "e"), dev_size=2)
    (raw / "train" / "urls_pos.txt").write_text("http://www.imdb.com/title/tt7/usercomments\n" * 4)
    with pytest.raises(CheckError, match=r"train/pos/4_10\.txt: review 4 has no line in train/urls_pos\.txt"):
        split_imdb(str(raw), str(tmp_path / "e"), dev_size=2)
    (raw / "train" / "urls_neg.txt").unlink()
    with pytest.raises(CheckError, match=r"train/urls_neg\.txt: no such file; .* use --dev-split review"):
        split_imdb(str(raw), str(tmp_path / "e"), dev_size=2)
    assert not (tmp_path / "e").exists()


def test_imdb_cleaning():
    assert clean_review("One.<br /><br />Two<br>three <BR/>four\nfive") == "One. Two three four five"


def test_imdb_errors_name_the_directory_or_file(tmp_path):
    raw = write_imdb(tmp_path / "aclImdb")
    out = tmp_path / "out"
    (raw / "train" / "neg" / "7_4.txt").write_bytes(b"caf\xe9")
    with pytest.raises(CheckError, match=r"train/neg/7_4\.txt: not valid UTF-8"):
        split_imdb(str(raw), str(out), dev_size=2)
    (raw / "train" / "neg" / "7_4.txt").write_text("   <br />  ")
    with pytest.raises(CheckError, match=r"train/neg/7_4\.txt: empty review"):
        split_imdb(str(raw), str(out), dev_size=2)
    with pytest.raises(CheckError, match=r"--dev-size 9 takes 4 'neg' reviews .* has only 4"):
        (raw / "train" / "neg" / "7_4.txt").write_text("Fine.")
        split_imdb(str(raw), str(out), dev_size=9)
    for path in (raw / "train" / "pos").iterdir():
        path.unlink()
    with pytest.raises(CheckError, match=r"train/pos: no review \(\*\.txt\) in class 'pos' of the train set"):
        split_imdb(str(raw), str(out), dev_size=2)
    for path in (raw / "test" / "neg").iterdir():
        path.unlink()
    (raw / "test" / "neg").rmdir()
    with pytest.raises(CheckError, match=r"missing directory: .*test/neg"):
        split_imdb(str(raw), str(out), dev_size=2)
    assert not out.exists()  # nothing is written before every file passed
    proc = script("prepare-imdb.sh", "--raw-dir", str(tmp_path / "nowhere"), "--out", str(out), check=False)
    assert proc.returncode != 0 and "--raw-dir" in proc.stderr and "is not a directory" in proc.stderr


# ---------------------------------------------------------------- subject-verb agreement (Linzen's tsv)

HEADER = ("sentence orig_sentence pos_sentence subj verb subj_pos has_rel has_nsubj verb_pos subj_index verb_index "
          "n_intervening last_intervening n_diff_intervening distance max_depth all_nouns nouns_up_to_verb").split()


def row(sentence: str, verb_index: int, verb_pos: str, n_intervening: int = 1, n_diff: int = 1) -> list:
    words = sentence.split()
    return [sentence, sentence, " ".join("X" for _ in words), words[1], words[verb_index - 1], "NN", "False",
            "False", verb_pos, 2, verb_index, n_intervening, "NN", n_diff, verb_index - 2, 0, "x", "x"]


def write_tsv(path: Path, rows, header=HEADER) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", newline="", encoding="utf-8") as f:  # as rnnagr/utils.py:deps_to_tsv writes it
        writer = csv.writer(f, delimiter="\t", lineterminator="\n")
        writer.writerow(header)
        writer.writerows(rows)
    return path


def test_sva_prefix_and_label_of_a_linzen_row(tmp_path):
    # one line as it stands in agr_50_mostcommon_10K.tsv (rare words replaced by their POS in `sentence`)
    text = "\t".join(HEADER) + "\n" + "\t".join([
        "the keys to the NN are on the table .", "the keys to the cabinet are on the table .",
        "DT NNS TO DT NN VBP IN DT NN .", "keys", "are", "NNS", "False", "False", "VBP", "2", "6", "1", "NN", "1", "4",
        "1", "keys cabinet table", "keys cabinet"]) + "\n"
    (tmp_path / "agr.tsv").write_text(text)
    [(prefix, label, _)] = read_examples(str(tmp_path / "agr.tsv"))
    assert (prefix, label) == ("the keys to the NN", "plural")
    [(prefix, label, _)] = read_examples(str(tmp_path / "agr.tsv"), text_column="orig_sentence")
    assert (prefix, label) == ("the keys to the cabinet", "plural")
    with gzip.open(tmp_path / "agr.tsv.gz", "wt") as f:  # the file as downloaded
        f.write(text.replace("VBP\t2\t6", "VBZ\t2\t6"))
    assert read_examples(str(tmp_path / "agr.tsv.gz"))[0][:2] == ("the keys to the NN", "singular")


def test_py2_shuffle_by_hand():
    # random.Random(1).random(): 0.1344, 0.8474, 0.7638, 0.2551, ... Python 2.7: j = int(random() * (i + 1))
    items = [0, 1, 2]
    py2_shuffle(items, random.Random(1))  # i=2: j=int(.1344*3)=0 -> [2,1,0]; i=1: j=int(.8474*2)=1
    assert items == [2, 1, 0]
    items = [0, 1, 2]
    random.Random(1).shuffle(items)
    assert items != [2, 1, 0]  # Python 3's shuffle gives another order: hence py2_shuffle
    items = list(range(5))  # i=4: j=0 -> [4,1,2,3,0]; i=3: j=3; i=2: j=2; i=1: j=int(.2551*2)=0 -> [1,4,2,3,0]
    py2_shuffle(items, random.Random(1))
    assert items == [1, 4, 2, 3, 0]


def example(name: str, label: str, n_words: int = 8, n_int: str = "1", n_diff: str = "1"):
    return (name, label, {"n_words": str(n_words), "n_intervening": n_int, "n_diff_intervening": n_diff})


def test_linzen_and_t2t_splits_by_hand():
    a, b, c, d = (example("A", "singular"), example("B", "plural"), example("C", "singular"), example("D", "plural"))
    too_long = example("E", "singular", n_words=51)
    # Linzen: E dropped (51 > 50 words); singular [A,C] -> i=1: j=int(.1344*2)=0 -> [C,A]; plural [B,D] ->
    # j=int(.8474*2)=1 -> [B,D]; [C,A,B,D] -> i=3: j=int(.7638*4)=3; i=2: j=int(.2551*3)=0 -> [B,A,C,D];
    # i=1: j=int(.4954*2)=0 -> [A,B,C,D]. n_train = int(0.1*4) = 0: all four are test.
    assert linzen_split([a, b, c, d, too_long]) == {"train": [], "valid": [], "test": [a, b, c, d]}
    # t2t: [A,B,C,D,E] -> [B,E,C,D,A] (as in test_py2_shuffle_by_hand); 0 train, 0 valid; test keeps
    # only n_intervening == n_diff_intervening
    b_same = example("B", "plural", n_int="2", n_diff="1")
    assert t2t_split([a, b_same, c, d, too_long]) == {"train": [], "valid": [], "test": [too_long, c, d, a]}
    # sizes: Linzen 20 -> n_train int(2.0)=2, Keras split_at int(2*0.9)=1: 1 / 1 / 18;
    # t2t 200 -> int(200*0.09)=18 train, int(200*0.01)=2 valid
    many = [example(str(i), "singular" if i % 2 else "plural") for i in range(20)]
    assert [len(v) for v in linzen_split(many).values()] == [1, 1, 18]
    many = [example(str(i), "plural") for i in range(200)]
    assert [len(v) for v in t2t_split(many).values()] == [18, 2, 180]


@pytest.fixture(scope="module")
def sva_prep(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("sva")
    rows = [row(f"the {'dogs' if i % 2 else 'dog'} near the NN {'bark' if i % 2 else 'barks'} w{i} .", 6,
                "VBP" if i % 2 else "VBZ") for i in range(20)]
    write_tsv(root / "raw" / "agr_50_mostcommon_10K.tsv", rows)
    script("prepare-sva.sh", "--raw-dir", str(root / "raw"), "--out", str(root / "prep"))
    return root


def test_sva_script_layout(sva_prep):
    tok = sva_prep / "prep" / "tok"
    for split, n in (("train", 1), ("valid", 1), ("test", 18)):
        prefixes, labels = lines(tok / "input0" / f"{split}.txt"), lines(tok / "label" / f"{split}.txt")
        assert len(prefixes) == len(labels) == n
        for prefix, label in zip(prefixes, labels):  # the prefix stops before the verb; its number is the label
            assert prefix == ("the dogs near the NN" if label == "plural" else "the dog near the NN")
        assert (sva_prep / "prep" / "data-bin" / "input0" / f"{split}.bin").is_file()
    again = script("prepare-sva.sh", "--raw-dir", str(sva_prep / "raw"), "--out", str(sva_prep / "prep"), check=False)
    assert again.returncode != 0 and "already holds finished data" in again.stderr


def test_sva_errors_name_the_column_or_line(tmp_path):
    good = [row("the dog near the NN barks .", 6, "VBZ")] * 3
    tsv = write_tsv(tmp_path / "a.tsv", good, header=[h if h != "verb_index" else "verb_idx" for h in HEADER])
    with pytest.raises(CheckError, match=r"a\.tsv:1: header lacks column\(s\) verb_index"):
        read_examples(str(tsv))
    cases = [(good[0][:5], r":3: 5 TAB-separated fields, the header has 18"),
             (row("the dog near the NN barks .", 6, "VBD"), r":3: verb_pos 'VBD' is not VBZ or VBP"),
             (row("the dog near the NN barks .", 6, "VBZ")[:10] + [9] + good[0][11:],
              r":3: verb_index '9' is not a word position after the first in a 7-word sentence")]
    for bad, message in cases:
        tsv = write_tsv(tmp_path / "b.tsv", [good[0], bad, good[0]])
        with pytest.raises(CheckError, match=r"b\.tsv" + message):
            split_sva(str(tsv), str(tmp_path / "out"))
    tsv = write_tsv(tmp_path / "c.tsv", [row("the dog near the NN barks .", 6, "VBZ", n_intervening="x")])
    with pytest.raises(CheckError, match=r"c\.tsv:2: n_intervening 'x' is not a count"):
        split_sva(str(tsv), str(tmp_path / "out"), split="t2t")
    with pytest.raises(CheckError, match="too few for a non-empty train split"):
        split_sva(str(write_tsv(tmp_path / "d.tsv", good)), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()
    proc = script("prepare-sva.sh", "--out", str(tmp_path / "o"), check=False)
    assert proc.returncode != 0 and "--raw-dir DIR is required" in proc.stderr
    proc = script("prepare-sva.sh", "--raw-dir", str(tmp_path), "--out", str(tmp_path / "o2"), check=False)
    assert proc.returncode != 0 and "no agr_50_mostcommon_10K.tsv or agr_50_mostcommon_10K.tsv.gz" in proc.stderr


# ---------------------------------------------------------------- One Billion Word (released layout)

def write_onebw(root: Path, train_shards: int = 3) -> Path:
    top = root / "1-billion-word-language-modeling-benchmark-r13output"
    (top / "training-monolingual.tokenized.shuffled").mkdir(parents=True)
    (top / "heldout-monolingual.tokenized.shuffled").mkdir(parents=True)
    for i in range(1, train_shards + 1):
        (top / "training-monolingual.tokenized.shuffled" / f"news.en-{i:05d}-of-00100").write_text(
            f"the cat sat .\nthe dog ran {i} .\n")
    (top / "heldout-monolingual.tokenized.shuffled" / "news.en.heldout-00000-of-00050").write_text("the cat ran .\n")
    (top / "heldout-monolingual.tokenized.shuffled" / "news.en.heldout-00001-of-00050").write_text("a dog sat .\n")
    return top


def test_onebw_script_splits_and_vocabulary(tmp_path):
    write_onebw(tmp_path / "raw")
    proc = script("prepare-1bw.sh", "--raw-dir", str(tmp_path / "raw"), "--out", str(tmp_path / "prep"),
                  "--max-train-shards", "3")
    tok = tmp_path / "prep" / "tok"
    assert lines(tok / "train.txt") == ["the cat sat .", "the dog ran 1 .", "the cat sat .", "the dog ran 2 .",
                                        "the cat sat .", "the dog ran 3 ."]
    assert lines(tok / "valid.txt") == ["a dog sat ."] and lines(tok / "test.txt") == ["the cat ran ."]
    for split in ("train", "valid", "test"):
        assert (tmp_path / "prep" / "data-bin" / f"{split}.bin").is_file()
    # a partial run records a corpus of its own: scripts/reproduce.sh trains Nguyen 2020 Table 6 only on "1bw"
    info = json.loads((tmp_path / "prep" / "data-bin" / "prep-info.json").read_text())
    assert (info["corpus"], info["train_sentences"]) == ("1bw-shards-1-3", 6)

    def words(prep: Path) -> list:
        return sorted(x.split()[0] for x in lines(prep / "data-bin" / "dict.txt") if not x.startswith("madeupword"))

    # train counts: ". 6, the 6, cat 3, dog 3, ran 3, sat 3, 1 1, 2 1, 3 1"
    # default: Nguyen 2020's 32,000 entries, more than the 9 words here: every word is kept
    assert words(tmp_path / "prep") == [".", "1", "2", "3", "cat", "dog", "ran", "sat", "the"]
    assert "Binarise (fairseq-preprocess --only-source --nwordssrc 32000)" in proc.stdout
    # --vocab-size 6: 6 entries with <s> <pad> </s> <unk>, so the 2 most frequent words
    script("prepare-1bw.sh", "--raw-dir", str(tmp_path / "raw"), "--out", str(tmp_path / "six"),
           "--max-train-shards", "3", "--vocab-size", "6")
    assert words(tmp_path / "six") == [".", "the"]
    # --threshold 3 (the benchmark's cut-off): the words seen at least 3 times
    proc = script("prepare-1bw.sh", "--raw-dir", str(tmp_path / "raw"), "--out", str(tmp_path / "three"),
                  "--max-train-shards", "3", "--threshold", "3")
    assert words(tmp_path / "three") == [".", "cat", "dog", "ran", "sat", "the"]
    assert "valid.txt: 1 sents, 5 tokens, 20.0% replaced by <unk>" in proc.stdout  # "a" of "a dog sat . </s>"
    for flags in (["--threshold", "3", "--vocab-size", "6"], ["--vocab-size", "6", "--threshold", "3"]):
        proc = script("prepare-1bw.sh", "--raw-dir", str(tmp_path / "raw"), "--out", str(tmp_path / "both"), *flags,
                      check=False)
        assert proc.returncode != 0 and "--threshold and --vocab-size choose the vocabulary two ways" in proc.stderr
    proc = script("prepare-1bw.sh", "--raw-dir", str(tmp_path / "raw"), "--out", str(tmp_path / "four"),
                  "--vocab-size", "4", check=False)
    assert proc.returncode != 0 and "--vocab-size must be an integer above 4" in proc.stderr


def test_onebw_missing_shards_are_named(tmp_path):
    top = write_onebw(tmp_path, train_shards=3)
    assert len(onebw_files(str(tmp_path), 3)["train"]) == 3  # the folder's parent works too
    (top / "training-monolingual.tokenized.shuffled" / "news.en-00002-of-00100").unlink()
    (top / "heldout-monolingual.tokenized.shuffled" / "news.en.heldout-00001-of-00050").unlink()
    with pytest.raises(CheckError, match=r"(?s)3 One Billion Word file\(s\) missing:.*news\.en-00002-of-00100.*"
                                         r"news\.en-00004-of-00100.*news\.en\.heldout-00001-of-00050"):
        onebw_files(str(top), 4)
    (top / "heldout-monolingual.tokenized.shuffled" / "news.en.heldout-00001-of-00050").write_text("ok\n")
    (top / "training-monolingual.tokenized.shuffled" / "news.en-00002-of-00100").write_bytes(b"fine\nbad \xff\n")
    with pytest.raises(CheckError, match=r"news\.en-00002-of-00100:2: not valid UTF-8"):
        prepare_onebw(str(top), str(tmp_path / "out"), 3)
    proc = script("prepare-1bw.sh", "--raw-dir", str(top), "--out", str(tmp_path / "o"), "--max-train-shards", "100",
                  check=False)
    assert proc.returncode != 0 and "--max-train-shards must be an integer from 1 to 99, got '100'" in proc.stderr
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    proc = script("prepare-1bw.sh", "--raw-dir", str(top), "--out", str(tmp_path / "mine"), check=False)
    assert proc.returncode != 0 and "refusing to write into it" in proc.stderr
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


# ---------------------------------------------------------------- news-English stand-in

def test_standin_normalises_deduplicates_and_holds_out(tmp_path):
    (tmp_path / "a.en").write_text("It's a test.\nThe U.S. economy grew.\n\nA well-known fact.\n")
    (tmp_path / "b.tok.en").write_text("It &apos;s a test .\nShe said &quot; no &quot; .\n")
    (tmp_path / "c.tok.en").write_text("a well ##AT##-##AT## known FACT .\nPrices rose 5 % .\n")
    sources = (("a.en", "raw"), ("b.tok.en", "moses"), ("c.tok.en", "stanford"))
    result = build_standin(str(tmp_path), str(tmp_path / "out"), valid_size=1, test_size=1, seed=1, sources=sources)
    # (lines read, unique kept): the moses line "It 's a test" and the stanford "well-known FACT" are duplicates
    assert result["sources"] == [("a.en", 4, 3), ("b.tok.en", 2, 1), ("c.tok.en", 2, 1)]
    out = {split: lines(tmp_path / "out" / f"{split}.txt") for split in ("train", "valid", "test")}
    # normalize-punctuation.perl -l en (1BW's pipeline) moves a full stop inside the quotes: '"no".' -> 'no."'
    assert sorted(out["train"] + out["valid"] + out["test"]) == sorted([
        "It 's a test .", "The U.S. economy grew .", "A well-known fact .", 'She said " no . "', "Prices rose 5 % ."])
    assert len(out["valid"]) == len(out["test"]) == 1 and len(out["train"]) == 3
    with pytest.raises(CheckError, match="leave no training sentence"):
        build_standin(str(tmp_path), str(tmp_path / "o"), valid_size=2, test_size=3, sources=sources)
    with pytest.raises(CheckError, match=r"(?s)2 stand-in source\(s\) missing:.*x\.en.*y\.en"):
        build_standin(str(tmp_path), str(tmp_path / "o"), sources=(("x.en", "raw"), ("a.en", "raw"), ("y.en", "raw")))
    proc = script("prepare-lm-news-en.sh", "--out", str(tmp_path / "o"), "--shared-data", str(tmp_path / "no"),
                  check=False)
    assert proc.returncode != 0 and "--shared-data" in proc.stderr and "is not a directory" in proc.stderr


def test_standin_on_the_shared_corpora(tmp_path):
    """The real stand-in (docs/tasks.md gives these sizes): ~25 s of CPU."""
    missing = [rel for rel, _ in STANDIN_SOURCES if not (SHARED_DATA / rel).is_file()]
    if missing:
        pytest.skip(f"the shared corpora are not at {SHARED_DATA} (missing {missing[0]} and {len(missing) - 1} more)")
    proc = script("prepare-lm-news-en.sh", "--out", str(tmp_path / "lm"))
    tok = tmp_path / "lm" / "tok"
    split = {name: lines(tok / f"{name}.txt") for name in ("train", "valid", "test")}
    assert [len(v) for v in split.values()] == [47296, 2000, 2000]
    train = set(split["train"])
    assert len(train) == len(split["train"]) and not train & set(split["valid"]) and not train & set(split["test"])
    assert not set(split["valid"]) & set(split["test"])
    assert "vocabulary: 18059 words" in proc.stdout
