"""KFTT Japanese->English (``data-prep/prepare-kftt.sh``), the 30k sample of the cicada toolkit (CC BY-SA 3.0):
already tokenised (MeCab Japanese, Moses English, cased), train 30,000 / valid = tune 1,235 / test = dev 1,166
pairs (KFTT's own test set is not in the sample); joint BPE (8k merges); fairseq-preprocess --joined-dictionary.
Offline only (--raw-dir, e.g. ../shared/data/kftt30k_cicada), ~1 min on one core."""
from __future__ import annotations

import sys
from typing import List, Optional, Sequence

from .. import kftt, tokenize
from ..script import Script, run

USAGE = """\
Usage: bash $SCRIPT_NAME --raw-dir DIR --out DIR [options]

Prepares the KFTT (Kyoto Free Translation Task) 30k Japanese-English sample of the cicada toolkit
(tarowatanabe/cicada, samples/kftt.30k/data; CC BY-SA 3.0, see its README.rst) for $SRC->$TGT, with
joint BPE, into DIR/data-bin. --raw-dir (required: there is no download URL for this sample) holds
train.{ja,en} (30,000 pairs), tune.{ja,en} (1,235) and dev.{ja,en} (1,166), decompressed, e.g.
../shared/data/kftt30k_cicada.
  splits: train = train, valid = tune, test = dev. KFTT's official test set (1,160 pairs) is NOT
  in the sample, so "test" here is KFTT's dev set.
  The text is tokenised already (Japanese by MeCab, English by Moses, cased) and is not tokenised
  again. The raw English is not in the sample: raw/test.en, the reference of sacreBLEU and chrF,
  is the tokenised test.en detokenised with the Moses detokeniser.

"""


def usage(s: Script) -> str:
    return s.fill(USAGE) + s.common_usage()


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    if not s.raw_dir:
        s.die("--raw-dir DIR is required: the KFTT 30k sample cannot be downloaded by this script.\n"
              "Pass the directory with train/tune/dev.{ja,en}, e.g. --raw-dir ../shared/data/kftt30k_cicada "
              "(see --help).")
    s.require_modules("sacremoses", "subword_nmt", "fairseq_cli")
    s.prepare_out_dir()

    s.step(f"Inputs ({s.raw_dir})")
    for split in ("train", "tune", "dev"):
        for lang in (s.src, s.tgt):
            s.need(f"{split}.{lang}", "")
    s.fetch_inputs()

    s.step("Check and select the splits (train, valid = tune, test = dev; already tokenised)")
    s.prep(kftt, "select", s.raw_dir, s.tok)

    s.step("Detokenised English test reference for sacreBLEU")
    s.prep(tokenize, "detok", "--job", s.tgt, f"{s.tok}/test.{s.tgt}", f"{s.rawtxt}/test.{s.tgt}")
    s.note(f"raw/test.{s.tgt} is detokenised from tok/test.{s.tgt} (the sample has no untokenised text)")

    s.bpe_binarize_finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run(Script("prepare-kftt.sh", usage, src="ja", tgt="en", bpe_tokens=8000, joined=True), body, argv)


if __name__ == "__main__":
    sys.exit(main())
