"""The train/valid/test splits of Multi30k Task 1 (Elliott et al. 2016) from its released files.

The multi30k/dataset repository ships every split already lowercased, punctuation-normalised
and Moses-tokenised (``data/task1/tok/SPLIT.lc.norm.tok.LANG``, made by its
``scripts/task1-tokenize.sh``); this picks the splits and names them as fairseq expects:

    train.lc.norm.tok.L             -> train.L   (29,000 pairs)
    val.lc.norm.tok.L               -> valid.L   ( 1,014 pairs)
    TESTSET.lc.norm.tok.L           -> test.L    (test_2016_flickr, the usual "test2016": 1,000 pairs)

Command line::

    python -m localness_prep.multi30k select [--test test_2016_flickr] TOK_DIR OUT_DIR SRC TGT

Every file is checked (UTF-8, both sides line-aligned, the published pair count) before
anything is written, so a wrong or truncated download fails with the file's name.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Dict, Sequence

from .checks import CheckError, check_parallel

#: published pair counts of the Task 1 splits (multi30k/dataset README)
SPLIT_PAIRS: Dict[str, int] = {
    "train": 29000,
    "val": 1014,
    "test_2016_flickr": 1000,
    "test_2017_flickr": 1000,
    "test_2018_flickr": 1071,
    "test_2017_mscoco": 461,
}
TEST_SETS = tuple(name for name in SPLIT_PAIRS if name.startswith("test_"))


def released_name(split: str, lang: str) -> str:
    return f"{split}.lc.norm.tok.{lang}"


def select_splits(tok_dir: str, out_dir: str, src: str, tgt: str, test: str = "test_2016_flickr") -> Dict[str, int]:
    """Check and copy Multi30k's train/val/TEST files from ``tok_dir`` to ``out_dir``/{train,valid,test}.{src,tgt}.

    Returns the pair count per fairseq split. Raises :class:`CheckError` naming the file that is
    missing, misaligned or not the published size; nothing is written then.
    """
    if test not in TEST_SETS:
        raise CheckError(f"--test {test!r}: not a Multi30k Task 1 test set; choose one of {', '.join(TEST_SETS)}")
    plan = {"train": "train", "valid": "val", "test": test}
    counts = {}
    for split, released in plan.items():
        pair = [os.path.join(tok_dir, released_name(released, lang)) for lang in (src, tgt)]
        n = check_parallel(*pair)
        if n != SPLIT_PAIRS[released]:
            raise CheckError(f"{pair[0]}: {n} pairs, but Multi30k's {released} split has {SPLIT_PAIRS[released]}; "
                             "is the file truncated or from another release?")
        counts[split] = n
    os.makedirs(out_dir, exist_ok=True)
    for split, released in plan.items():
        for lang in (src, tgt):
            shutil.copyfile(os.path.join(tok_dir, released_name(released, lang)), os.path.join(out_dir, f"{split}.{lang}"))
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("select", help="check and copy train/valid/test")
    s.add_argument("--test", default="test_2016_flickr", choices=TEST_SETS)
    for name in ("tok_dir", "out_dir", "src", "tgt"):
        s.add_argument(name)
    a = p.parse_args(argv)
    try:
        counts = select_splits(a.tok_dir, a.out_dir, a.src, a.tgt, a.test)
    except CheckError as e:
        sys.exit(f"multi30k: {e}")
    print("  " + ", ".join(f"{split} {n} pairs" for split, n in counts.items()) + f" (test = {a.test})")


if __name__ == "__main__":
    main()
