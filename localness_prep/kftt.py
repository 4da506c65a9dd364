"""The train/valid/test splits of the KFTT 30k Japanese-English sample (tarowatanabe/cicada).

The sample (``samples/kftt.30k/data`` of the cicada toolkit, CC BY-SA 3.0) holds the first 30,000
training pairs of the Kyoto Free Translation Task with at most 30 words, and KFTT's official tune
and dev sets. It is tokenised already -- Japanese segmented with MeCab, English Moses-tokenised
(Penn-Treebank style) and cased -- so it is not tokenised again; this picks the splits and names
them as fairseq expects:

    train.L  -> train.L   (30,000 pairs)
    tune.L   -> valid.L   ( 1,235 pairs)
    dev.L    -> test.L    ( 1,166 pairs)

KFTT's official test set (1,160 pairs) is not part of the sample: ``test`` is KFTT's dev set.
Lines are copied with their trailing spaces removed (the tune/dev files end every line with one);
nothing else changes.

Command line::

    python -m localness_prep.kftt select KFTT_DIR OUT_DIR

Every file is checked (UTF-8, both sides line-aligned, the published pair count) before
anything is written, so a wrong or truncated file fails with its name.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, Sequence

from .checks import CheckError, check_parallel

SRC, TGT = "ja", "en"
#: pair counts of the files of the cicada KFTT 30k sample
SPLIT_PAIRS: Dict[str, int] = {"train": 30000, "tune": 1235, "dev": 1166}
#: fairseq split -> file of the sample
PLAN: Dict[str, str] = {"train": "train", "valid": "tune", "test": "dev"}


def select_splits(kftt_dir: str, out_dir: str) -> Dict[str, int]:
    """Check and copy ``kftt_dir``/{train,tune,dev}.{ja,en} to ``out_dir``/{train,valid,test}.{ja,en}.

    Returns the pair count per fairseq split. Raises :class:`CheckError` naming the file that is
    missing, not UTF-8, misaligned or not the published size; nothing is written then.
    """
    counts = {}
    for split, released in PLAN.items():
        pair = [os.path.join(kftt_dir, f"{released}.{lang}") for lang in (SRC, TGT)]
        n = check_parallel(*pair)
        if n != SPLIT_PAIRS[released]:
            raise CheckError(f"{pair[0]}: {n} pairs, but the KFTT 30k sample's {released} split has "
                             f"{SPLIT_PAIRS[released]}; is the file truncated or from another release?")
        counts[split] = n
    os.makedirs(out_dir, exist_ok=True)
    for split, released in PLAN.items():
        for lang in (SRC, TGT):
            with open(os.path.join(kftt_dir, f"{released}.{lang}"), encoding="utf-8", newline="\n") as fin, \
                    open(os.path.join(out_dir, f"{split}.{lang}"), "w", encoding="utf-8", newline="\n") as fout:
                fout.writelines(line.rstrip() + "\n" for line in fin)
    return counts


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("select", help="check and copy train/valid/test")
    s.add_argument("kftt_dir", help="directory with {train,tune,dev}.{ja,en}")
    s.add_argument("out_dir")
    a = p.parse_args(argv)
    try:
        counts = select_splits(a.kftt_dir, a.out_dir)
    except CheckError as e:
        sys.exit(f"kftt: {e}")
    print("  " + ", ".join(f"{split} {n} pairs" for split, n in counts.items())
          + " (valid = tune, test = dev; KFTT's test set is not in the sample)")


if __name__ == "__main__":
    main()
