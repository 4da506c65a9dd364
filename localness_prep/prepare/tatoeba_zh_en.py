"""The whole manythings.org/Tatoeba cmn-eng corpus (``data-prep/prepare-tatoeba-zh-en.sh``; 29,155
Chinese-English pairs, CC BY 2.0 FR), split deterministically as data/sample-zh-en is (:mod:`localness_prep.sample`):
test 1,000 / valid 1,000 unique pairs, train = all other pairs; jieba for Chinese, Moses for English (cased),
joint BPE (8k merges), fairseq-preprocess --joined-dictionary. Offline only (--raw-dir, e.g.
../shared/data/manythings_cmn_eng)."""
from __future__ import annotations

import hashlib
import os
import sys
from typing import List, Optional, Sequence

from .. import sample
from ..script import Script, count_records, run

N_VALID = N_TEST = 1000

#: md5 of the copy the published comparison was prepared from (docs/results/compare/tatoeba_zh_en; 29,155 pairs).
#: The split is a function of the whole file (pairs ranked by SHA-1, uniqueness counted over the corpus): another
#: copy, even one pair longer, gives other test and valid sets.
PUBLISHED_COPY = {"cmn-eng.en": "e9ec19cc37354eca76e5d0a57a6f5920", "cmn-eng.zh": "e06481d51a237ab09f9056482fdf1205"}


def differs_from_published_copy(raw_dir: str) -> List[str]:
    """The files of ``raw_dir`` that are not the published comparison's copy (see :data:`PUBLISHED_COPY`)."""
    differ = []
    for name, digest in PUBLISHED_COPY.items():
        with open(os.path.join(raw_dir, name), "rb") as f:
            if hashlib.md5(f.read()).hexdigest() != digest:
                differ.append(name)
    return differ

USAGE = """\
Usage: bash $SCRIPT_NAME --raw-dir DIR --out DIR [options]

Prepares the whole manythings.org "cmn-eng" Tatoeba corpus (Chinese-English, CC BY 2.0 FR; the
authors of each pair are credited on its line of cmn-eng.attribution) for $SRC->$TGT into
DIR/data-bin. --raw-dir (required, no download) holds cmn-eng.{en,zh,attribution}, one pair a
line, e.g. ../shared/data/manythings_cmn_eng (29,155 pairs).
  splits (localness_prep/sample.py, deterministic: pairs ranked by SHA-1): test $N_TEST and valid
  $N_VALID pairs taken only from pairs whose English and Chinese sentences are unique in the corpus
  (after lowercasing and removing punctuation), train = every other pair (27,155 with that copy).
  raw/{train,valid,test}.{zh,en,attribution} keep the raw text and the credits of each split;
  raw/test.en is the reference of sacreBLEU and chrF.
  Tokenisation: jieba for Chinese, Moses for English (cased); joint BPE and one joined dictionary.

"""


def usage(s: Script) -> str:
    return s.fill(USAGE, N_TEST=N_TEST, N_VALID=N_VALID) + s.common_usage()


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    if not s.raw_dir:
        s.die("--raw-dir DIR is required (this script works offline only).\nPass the directory with "
              "cmn-eng.{en,zh,attribution}, e.g. --raw-dir ../shared/data/manythings_cmn_eng (see --help).")
    s.require_modules("sacremoses", "jieba", "subword_nmt", "fairseq_cli")
    s.prepare_out_dir()

    s.step(f"Inputs ({s.raw_dir})")
    for side in ("en", "zh", "attribution"):
        s.need(f"cmn-eng.{side}", "")
    s.fetch_inputs()
    s.check_parallel(s.input("cmn-eng.zh"), s.input("cmn-eng.en"), s.input("cmn-eng.en"),
                     s.input("cmn-eng.attribution"))

    s.step(f"Split (test {N_TEST}, valid {N_VALID} unique pairs, train = the rest)")
    other = differs_from_published_copy(s.raw_dir)
    if other:  # prepared all the same: a user's own release is a corpus of its own, under its own label
        warning = (f"warning: {', '.join(other)} in {s.raw_dir} differ from the copy the published comparison was "
                   "prepared from (29,155 pairs, md5 in localness_prep/prepare/tatoeba_zh_en.py): this split is "
                   "not the published one, and fairseq-localness-compare refuses to put its runs in the published "
                   "tatoeba_zh_en table (its data fingerprint differs); compare them under their own --label")
        s.note(warning)
        sys.stderr.write(warning + "\n")
    pairs = count_records(s.input("cmn-eng.en"))  # a last line without newline counts too
    s.prep(sample, "--corpus", s.raw_dir, "--out", s.rawtxt, "--train", pairs - N_VALID - N_TEST,
           "--valid", N_VALID, "--test", N_TEST, indent=True)

    s.step("Tokenise (jieba for zh, Moses for en)")
    s.tokenize_splits()

    s.bpe_binarize_finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run(Script("prepare-tatoeba-zh-en.sh", usage, src="zh", tgt="en", bpe_tokens=8000, joined=True), body, argv)


if __name__ == "__main__":
    sys.exit(main())
