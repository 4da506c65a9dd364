"""Train short, test long, German->English (``data-prep/prepare-europarl-length.sh``): the first 20,000 Europarl
v7 pairs of the WMT14 training data, split by source length (:mod:`localness_prep.length_split`): train and
valid on sentences of at most 20 words, test on held-out sentences of every length (up to 200 per bucket 1-10,
11-20, 21-30, 31-40, 41-60, >60 words). Moses tokenisation (cased), joint BPE (4k merges), one joined
dictionary. Offline only (--raw-dir, e.g. ../shared/data/wmt14_ende/raw_sample_simt, with
europarl_head20k.{de,en})."""
from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence

from .. import length_split
from ..script import Script, run

USAGE = """\
Usage: bash $SCRIPT_NAME --raw-dir DIR --out DIR [--max-len N] [options]

Prepares a train-short / test-long split of Europarl v7 German-English (free for any use, Koehn 2005)
for $SRC->$TGT into DIR/data-bin. --raw-dir (required, no download) holds europarl_head20k.{de,en}
(the first 20,000 pairs of the WMT14 de-en training data), e.g. ../shared/data/wmt14_ende/raw_sample_simt.
  --max-len N  longest training source sentence in words [$MAX_LEN]; test sentences go up to several
               times longer (localness_prep/length_split.py: deterministic, pairs ranked by SHA-1)
  raw/test.en is the reference of sacreBLEU and chrF.

"""


def usage(s: Script) -> str:
    return s.fill(USAGE, MAX_LEN=s.max_len) + s.common_usage()


def option(s: Script, args: List[str]) -> int:
    if args[0] == "--max-len":
        s.max_len = s.integer_value(args)
        return 2
    return 0


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    if not s.raw_dir:
        s.die("--raw-dir DIR is required (this script works offline only).\nPass the directory with "
              "europarl_head20k.{de,en}, e.g. --raw-dir ../shared/data/wmt14_ende/raw_sample_simt (see --help).")
    s.require_modules("sacremoses", "subword_nmt", "fairseq_cli")
    # another --max-len is another split: prep-info.json's corpus says which (the published one is 20)
    s.corpus = "europarl-length" + ("" if int(s.max_len) == 20 else f"-maxlen{s.max_len}")
    s.prepare_out_dir()

    s.step(f"Inputs ({s.raw_dir})")
    for lang in (s.src, s.tgt):
        s.need(f"europarl_head20k.{lang}", "")
    s.fetch_inputs()

    s.step(f"Split by length (train/valid at most {s.max_len} source words, test every length)")
    os.makedirs(s.rawtxt, exist_ok=True)
    s.prep(length_split, "--src", s.input(f"europarl_head20k.{s.src}"), "--tgt", s.input(f"europarl_head20k.{s.tgt}"),
           "--out", s.rawtxt, "--max-len", s.max_len, indent=True)

    s.step("Tokenise (Moses)")
    s.tokenize_splits()

    s.bpe_binarize_finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-europarl-length.sh", usage, src="de", tgt="en", bpe_tokens=4000, joined=True,
                    option=option, max_len="20")
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
