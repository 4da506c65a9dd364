"""How ``data/sample-zh-en`` was cut from the manythings.org/Tatoeba ``cmn-eng`` corpus.

Deterministic, no randomness:

1. Sentences are compared after normalisation (lowercased, punctuation and spaces removed),
   so "Hi." and "Hi!" count as the same sentence.
2. valid and test only take *unique* pairs -- whose normalised English and Chinese both occur
   exactly once in the corpus -- so no valid/test sentence (either side) occurs in train or in
   the other evaluation set.
3. Pairs are ranked by the SHA-1 of ``english TAB chinese``; test takes the first ``--test``
   unique pairs, valid the next ``--valid``, train the first ``--train`` of all the others.
   Each split keeps the corpus order; the attribution lines travel with their pairs.

Command line (run from the repository root; the result is committed under data/)::

    python -m localness_prep.sample --corpus ../shared/data/manythings_cmn_eng \\
        --out data/sample-zh-en [--train 19000 --valid 500 --test 500]
"""
from __future__ import annotations

import argparse
import hashlib
import os
import re
from collections import Counter
from typing import Sequence

_NON_WORD = re.compile(r"[\W_]+")
SIDES = ("en", "zh", "attribution")


def norm(text: str) -> str:
    return _NON_WORD.sub("", text.lower())


def split_corpus(en: Sequence[str], zh: Sequence[str], n_train: int, n_valid: int,
                 n_test: int) -> dict[str, list[int]]:
    """Line indices of each split (see the module docstring)."""
    count_en, count_zh = Counter(map(norm, en)), Counter(map(norm, zh))
    order = sorted(range(len(en)), key=lambda i: hashlib.sha1(f"{en[i]}\t{zh[i]}".encode()).hexdigest())
    unique = [i for i in order if count_en[norm(en[i])] == 1 and count_zh[norm(zh[i])] == 1]
    if len(unique) < n_valid + n_test:
        raise SystemExit(f"only {len(unique)} unique pairs: cannot take {n_valid} valid + {n_test} test")
    test, valid = unique[:n_test], unique[n_test:n_test + n_valid]
    held_out = set(test) | set(valid)
    train = [i for i in order if i not in held_out][:n_train]
    return {"train": sorted(train), "valid": sorted(valid), "test": sorted(test)}


def main(argv: Sequence[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="directory with cmn-eng.{en,zh,attribution}")
    p.add_argument("--out", required=True)
    p.add_argument("--train", type=int, default=19000)
    p.add_argument("--valid", type=int, default=500)
    p.add_argument("--test", type=int, default=500)
    a = p.parse_args(argv)
    cols = {}
    for side in SIDES:
        with open(os.path.join(a.corpus, f"cmn-eng.{side}"), encoding="utf-8", newline="\n") as f:
            cols[side] = f.read().rstrip("\n").split("\n")
    if len({len(c) for c in cols.values()}) != 1:
        raise SystemExit(f"cmn-eng files differ in length: { {s: len(c) for s, c in cols.items()} }")
    os.makedirs(a.out, exist_ok=True)
    for split, idx in split_corpus(cols["en"], cols["zh"], a.train, a.valid, a.test).items():
        for side in SIDES:
            with open(os.path.join(a.out, f"{split}.{side}"), "w", encoding="utf-8", newline="\n") as f:
                f.write("".join(cols[side][i] + "\n" for i in idx))
        print(f"{split}: {len(idx)} pairs")


if __name__ == "__main__":
    main()
