"""Subject-verb agreement, number prediction (Linzen et al. 2016) -> sentence_prediction text.

Input: Linzen's released dependency file ``agr_50_mostcommon_10K.tsv`` (or the ``.tsv.gz`` as
downloaded), written by ``rnnagr/utils.py:deps_to_tsv`` of github.com/TalLinzen/rnn_agreement: a
header row, then one dependency a row, TAB-separated (Python ``csv``), columns ``sentence
orig_sentence pos_sentence subj verb subj_pos has_rel has_nsubj verb_pos subj_index verb_index
n_intervening last_intervening n_diff_intervening distance max_depth all_nouns nouns_up_to_verb``.
``sentence`` is the lowercased sentence with the words outside the 10k most common replaced by
their part of speech; ``verb_index`` is the 1-based position of the agreeing verb.

The task (``PredictVerbNumber`` in ``rnnagr/agreement_acceptor.py``): the input is the sentence
*up to* the verb, ``sentence.split()[:verb_index - 1]``; the label is the verb's number,
``VBZ`` -> ``singular``, ``VBP`` -> ``plural``. Output::

    OUT/input0/{train,valid,test}.txt     the prefix, one a line
    OUT/label/{train,valid,test}.txt      singular or plural

Splits (Nguyen et al. 2020 Sec. 5.3 do not give theirs):

* ``linzen`` (default), Linzen's experiments (``rnnagr/experiments.py``, ``predict_number``):
  dependencies whose sentence has more than 50 words are dropped (``maxlen=50``); the VBZ and the VBP
  examples are shuffled, concatenated and shuffled again with ``random.seed(1)``; the first 10%
  (``prop_train=0.1``) are for training, of which Keras' ``validation_split=0.1`` takes the last
  10% for validation; the other 90% are the test set: 9% / 1% / 90%.
* ``t2t``, tensor2tensor's ``SvaNumberPrediction`` (the toolkit of Nguyen et al.'s footnote 4): no
  length limit, all rows shuffled with ``random.seed(1)``, 9% train, 1% valid, and the test set is
  the rest restricted to ``n_intervening == n_diff_intervening``.

Both programs ran under Python 2 (Linzen's uses ``print`` statements; tensor2tensor's loader hands
a binary gzip stream to ``csv``, which only Python 2 accepts), whose ``random.shuffle`` differs
from Python 3's; :func:`py2_shuffle` is Python 2.7's algorithm, so the splits hold the same examples.

Command line::

    python -m localness_prep.sva split TSV OUT_DIR [--split linzen|t2t] [--text-column sentence]

The whole file is read and checked before anything is written; an error names the file and line.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import os
import random
import sys
from typing import Dict, List, MutableSequence, Sequence, Tuple

from .checks import CheckError

FILE_NAMES = ("agr_50_mostcommon_10K.tsv", "agr_50_mostcommon_10K.tsv.gz")
LABELS = {"VBZ": "singular", "VBP": "plural"}  # Linzen's class_to_code order: VBZ 0, VBP 1
MAX_WORDS = 50          # rnn_model.py RNNModel(maxlen=50): longer sentences are skipped (Linzen split)
SPLITS = ("linzen", "t2t")
TEXT_COLUMNS = ("sentence", "orig_sentence")

Example = Tuple[str, str, Dict[str, str]]  # (prefix, label, the row)


def py2_shuffle(items: MutableSequence, rng: random.Random) -> None:
    """Python 2.7's ``random.shuffle`` (Python 3 draws ``j`` with ``_randbelow`` instead)."""
    for i in reversed(range(1, len(items))):
        j = int(rng.random() * (i + 1))
        items[i], items[j] = items[j], items[i]


def find_tsv(raw_dir: str) -> str:
    for name in FILE_NAMES:
        path = os.path.join(raw_dir, name)
        if os.path.isfile(path):
            return path
    raise CheckError(f"{raw_dir}: no {' or '.join(FILE_NAMES)} (Linzen et al.'s dependency file, "
                     "github.com/TalLinzen/rnn_agreement)")


def read_examples(path: str, text_column: str = "sentence", need_attractors: bool = False) -> List[Example]:
    """Every row as (prefix, label, row); raises :class:`CheckError` naming the line of a bad row."""
    required = [text_column, "verb_index", "verb_pos"] + (["n_intervening", "n_diff_intervening"]
                                                          if need_attractors else [])
    raw = gzip.open(path, "rb") if path.endswith(".gz") else open(path, "rb")
    examples: List[Example] = []
    with raw, io.TextIOWrapper(raw, encoding="utf-8", newline="") as text:
        reader = csv.reader(text, delimiter="\t")
        try:
            header = next(reader, None)
            if header is None:
                raise CheckError(f"{path}: empty file")
            missing = [c for c in required if c not in header]
            if missing:
                raise CheckError(f"{path}:1: header lacks column(s) {', '.join(missing)} (found: "
                                 f"{' '.join(header)[:200]}); expected Linzen's agr_50_mostcommon_10K.tsv header")
            column = {name: header.index(name) for name in required}
            start = reader.line_num + 1
            for row in reader:
                n = start
                start = reader.line_num + 1
                if not row:
                    continue  # a blank line: csv.DictReader (Linzen's reader) skips it too
                if len(row) != len(header):
                    raise CheckError(f"{path}:{n}: {len(row)} TAB-separated fields, the header has {len(header)}")
                words = row[column[text_column]].split()
                verb_index, verb_pos = row[column["verb_index"]], row[column["verb_pos"]]
                if not verb_index.isdigit() or not 2 <= int(verb_index) <= len(words):
                    raise CheckError(f"{path}:{n}: verb_index {verb_index!r} is not a word position after the "
                                     f"first in a {len(words)}-word {text_column}")
                if verb_pos not in LABELS:
                    raise CheckError(f"{path}:{n}: verb_pos {verb_pos!r} is not VBZ or VBP")
                fields = {name: row[i] for name, i in column.items()}
                for name in ("n_intervening", "n_diff_intervening") if need_attractors else ():
                    if not fields[name].isdigit():
                        raise CheckError(f"{path}:{n}: {name} {fields[name]!r} is not a count")
                fields["n_words"] = str(len(words))
                examples.append((" ".join(words[:int(verb_index) - 1]), LABELS[verb_pos], fields))
        except UnicodeDecodeError as e:
            raise CheckError(f"{path}:{reader.line_num + 1}: not valid UTF-8 ({e.reason})") from None
        except csv.Error as e:
            raise CheckError(f"{path}:{reader.line_num}: {e}") from None
    if not examples:
        raise CheckError(f"{path}: a header but no dependency")
    return examples


def linzen_split(examples: List[Example]) -> Dict[str, List[Example]]:
    """Linzen's PredictVerbNumber(prop_train=0.1) split: 9% train, 1% valid, 90% test."""
    kept = [e for e in examples if int(e[2]["n_words"]) <= MAX_WORDS]
    by_class = {label: [e for e in kept if e[1] == label] for label in LABELS.values()}
    rng = random.Random(1)
    py2_shuffle(by_class["singular"], rng)
    py2_shuffle(by_class["plural"], rng)
    ordered = by_class["singular"] + by_class["plural"]
    py2_shuffle(ordered, rng)
    n_train = int(0.1 * len(ordered))
    split_at = int(n_train * (1. - 0.1))  # Keras 1: validation_split takes the last 10% of the training data
    return {"train": ordered[:split_at], "valid": ordered[split_at:n_train], "test": ordered[n_train:]}


def t2t_split(examples: List[Example]) -> Dict[str, List[Example]]:
    """tensor2tensor SvaNumberPrediction: 9% train, 1% valid, test = the rest with only attractors."""
    ordered = list(examples)
    py2_shuffle(ordered, random.Random(1))
    n_train = int(len(ordered) * 0.09)
    n_val = n_train + int(len(ordered) * 0.01)
    test = [e for e in ordered[n_val:] if e[2]["n_intervening"] == e[2]["n_diff_intervening"]]
    return {"train": ordered[:n_train], "valid": ordered[n_train:n_val], "test": test}


def split_sva(tsv: str, out_dir: str, split: str = "linzen", text_column: str = "sentence") -> Dict[str, int]:
    """Write ``out_dir``/{input0,label}/{train,valid,test}.txt; returns the example count per split."""
    if split not in SPLITS:
        raise CheckError(f"--split must be one of {', '.join(SPLITS)}, got {split!r}")
    if text_column not in TEXT_COLUMNS:
        raise CheckError(f"--text-column must be one of {', '.join(TEXT_COLUMNS)}, got {text_column!r}")
    examples = read_examples(tsv, text_column, need_attractors=split == "t2t")
    data = (linzen_split if split == "linzen" else t2t_split)(examples)
    for name, part in data.items():
        if not part:
            raise CheckError(f"{tsv}: only {len(examples)} dependencies, too few for a non-empty {name} split")
    for key in ("input0", "label"):
        os.makedirs(os.path.join(out_dir, key), exist_ok=True)
    for name, part in data.items():
        for key, column in (("input0", 0), ("label", 1)):
            with open(os.path.join(out_dir, key, f"{name}.txt"), "w", encoding="utf-8", newline="\n") as f:
                f.write("".join(example[column] + "\n" for example in part))
    return {name: len(part) for name, part in data.items()}


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m localness_prep.sva", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("split", help="check Linzen's tsv, write the number-prediction input0/ and label/ files")
    cmd.add_argument("tsv", help="agr_50_mostcommon_10K.tsv[.gz], or the directory holding it")
    cmd.add_argument("out_dir")
    cmd.add_argument("--split", choices=SPLITS, default="linzen")
    cmd.add_argument("--text-column", choices=TEXT_COLUMNS, default="sentence",
                     help="sentence: rare words replaced by their POS, as Linzen trained; orig_sentence: all words")
    args = parser.parse_args(argv)
    try:
        tsv = find_tsv(args.tsv) if os.path.isdir(args.tsv) else args.tsv
        counts = split_sva(tsv, args.out_dir, args.split, args.text_column)
    except CheckError as e:
        sys.exit(f"ERROR: {e}")
    for name, n in counts.items():
        print(f"{name}: {n} examples")


if __name__ == "__main__":
    main()
