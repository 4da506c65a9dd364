"""A small news-English language-modelling corpus (``data-prep/prepare-lm-news-en.sh``), a stand-in for One
Billion Word built offline from the English sides of the WMT sets in ../shared/data (newstest 2012-2017,
newsdev2017, WMT22 general test, WMT14 train10k, Europarl 20k): detokenised where they come tokenised, Moses
punctuation normalisation + tokenisation without escaping, cased (as 1BW); duplicates removed; shuffled; the
held-out sentences never occur in train. Word vocabulary (words seen >= 3 times in train, 1BW's cut-off);
fairseq-preprocess --only-source for the language_modeling task -> OUT/data-bin. The source list and the
rules: :mod:`localness_prep.lm_corpus`. Nothing is copied into the repository."""
from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence

from .. import lm_corpus
from ..script import Script, is_count, is_int, run

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--shared-data DIR] [--valid-size N] [--test-size N] [--seed N]
                                [--threshold N] [--force] [--workers N]

Builds the news-English stand-in for One Billion Word and binarises it for fairseq's
language_modeling task (about 51k unique sentences, 1.3M words; ~30 s on one core).
Output: DIR/data-bin/{train,valid,test}.{bin,idx} + dict.txt, DIR/tok/{train,valid,test}.txt.
  --shared-data DIR   the shared corpora (see its README.md) [REPO/../shared/data]
  --out DIR           output directory (required)
  --valid-size N      sentences held out for valid [$VALID_SIZE]
  --test-size N       sentences held out for test [$TEST_SIZE]
  --seed N            seed of the shuffle that picks them [$SEED]
  --threshold N       keep the words seen at least N times in train [$THRESHOLD]
  --workers N         fairseq-preprocess processes [1]
  --force             rebuild even if DIR holds a finished run
"""

#: flag -> (attribute, check, what it must be)
VALUES = {"--valid-size": ("valid_size", is_int, "a positive integer"),
          "--test-size": ("test_size", is_int, "a positive integer"),
          "--seed": ("seed", is_count, "a non-negative integer"),
          "--threshold": ("threshold", is_count, "a non-negative integer")}


def usage(s: Script) -> str:
    return s.fill(USAGE, VALID_SIZE=s.valid_size, TEST_SIZE=s.test_size, SEED=s.seed, THRESHOLD=s.threshold)


def option(s: Script, args: List[str]) -> int:
    if args[0] == "--shared-data":
        s.need_value(args)
        s.shared_data = args[1]
        return 2
    if args[0] in VALUES:
        s.need_value(args)
        attribute, check, what = VALUES[args[0]]
        if not check(args[1]):
            s.die(f"{args[0]} must be {what}, got '{args[1]}'")
        setattr(s, attribute, args[1])
        return 2
    return 0


def body(s: Script, argv: List[str]) -> None:
    s.shared_data = f"{s.repo}/../shared/data"
    s.parse_args(argv)
    if s.raw_dir:
        s.die(f"{s.name} takes --shared-data DIR, not --raw-dir")
    if not os.path.isdir(s.shared_data):
        s.die(f"--shared-data '{s.shared_data}' is not a directory (the shared corpora, ../shared/data)")
    s.shared_data = os.path.realpath(s.shared_data)
    s.require_modules("fairseq_cli", "sacremoses")
    s.prepare_out_dir()

    s.step(f"Read, normalise, tokenise, deduplicate and split the English sides of {s.shared_data}")
    s.prep(lm_corpus, "standin", s.shared_data, s.tok, "--valid-size", s.valid_size, "--test-size", s.test_size,
           "--seed", s.seed)

    s.step(f"Binarise (fairseq-preprocess --only-source --thresholdsrc {s.threshold})")
    s.lm_binarize("--thresholdsrc", s.threshold)

    s.step("Summary")
    s.lm_finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-lm-news-en.sh", usage, src="txt", tgt="txt", bpe_tokens=0, joined=False, option=option,
                    valid_size="2000", test_size="2000", seed="1", threshold="3")
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
