"""SST-2 in SentEval's layout -> the text files of fairseq's ``sentence_prediction`` task.

Input (SentEval / PrincetonML SIF ``sentiment-{train,dev,test}``, already tokenised): one example
a line, ``sentence<TAB>label`` with label 0 (negative) or 1 (positive); files ``train.tsv``,
``dev.tsv``, ``test.tsv`` (SentEval's own names ``sentiment-train`` etc. are accepted too).
Output, to be binarised by ``fairseq-preprocess --only-source`` (data-prep/prepare-sst2.sh)::

    OUT/input0/{train,valid,test}.txt     one sentence a line
    OUT/label/{train,valid,test}.txt      its label (0 or 1)

Command line::

    python -m localness_prep.sst split RAW_DIR OUT_DIR

Every file is read and checked (UTF-8, two TAB-separated fields, a 0/1 label, no empty
sentence) before anything is written; an error names the file and line.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Sequence, Tuple

from .checks import CheckError

#: fairseq split -> accepted file names in RAW_DIR (first found wins)
SPLIT_FILES: Dict[str, Tuple[str, ...]] = {
    "train": ("train.tsv", "sentiment-train"),
    "valid": ("dev.tsv", "sentiment-dev"),
    "test": ("test.tsv", "sentiment-test"),
}
LABELS = ("0", "1")


def find_split(raw_dir: str, split: str) -> str:
    for name in SPLIT_FILES[split]:
        path = os.path.join(raw_dir, name)
        if os.path.isfile(path):
            return path
    raise CheckError(f"{raw_dir}: no {split} file (looked for {' or '.join(SPLIT_FILES[split])}); "
                     "--raw-dir must hold SentEval's SST-2 files (sentence<TAB>label per line)")


def read_examples(path: str) -> List[Tuple[str, str]]:
    """(sentence, label) pairs of a SentEval SST file; raises :class:`CheckError` naming a bad line."""
    examples = []
    with open(path, "rb") as f:
        for n, raw in enumerate(f, 1):
            try:
                line = raw.decode("utf-8").rstrip("\r\n")
            except UnicodeDecodeError as e:
                raise CheckError(f"{path}:{n}: not valid UTF-8 ({e.reason})") from None
            fields = line.split("\t")
            if len(fields) != 2:
                raise CheckError(f"{path}:{n}: expected 'sentence<TAB>label', found {len(fields)} TAB-separated "
                                 f"field(s): {line[:80]!r}")
            sentence, label = " ".join(fields[0].split()), fields[1].strip()
            if label not in LABELS:
                raise CheckError(f"{path}:{n}: label {label!r} is not 0 or 1 (binary SST-2)")
            if not sentence:
                raise CheckError(f"{path}:{n}: empty sentence")
            examples.append((sentence, label))
    if not examples:
        raise CheckError(f"{path}: empty file")
    return examples


def split_sst(raw_dir: str, out_dir: str) -> Dict[str, int]:
    """Write ``out_dir``/{input0,label}/{train,valid,test}.txt; returns the example count per split."""
    paths = {split: find_split(raw_dir, split) for split in SPLIT_FILES}  # every file present, then every line valid
    data = {split: read_examples(path) for split, path in paths.items()}
    for key in ("input0", "label"):
        os.makedirs(os.path.join(out_dir, key), exist_ok=True)
    for split, examples in data.items():
        for key, column in (("input0", 0), ("label", 1)):
            with open(os.path.join(out_dir, key, f"{split}.txt"), "w", encoding="utf-8", newline="\n") as f:
                f.write("".join(example[column] + "\n" for example in examples))
    return {split: len(examples) for split, examples in data.items()}


def main(argv: Sequence[str] = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m localness_prep.sst", description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("split", help="check SentEval SST-2 files and write input0/ and label/ text files")
    cmd.add_argument("raw_dir")
    cmd.add_argument("out_dir")
    args = parser.parse_args(argv)
    try:
        counts = split_sst(args.raw_dir, args.out_dir)
    except CheckError as e:
        sys.exit(f"ERROR: {e}")
    for split, n in counts.items():
        print(f"{split}: {n} examples")


if __name__ == "__main__":
    main()
