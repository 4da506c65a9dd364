"""Multi30k Task 1 German->English (``data-prep/prepare-multi30k.sh``; Elliott et al. 2016): the released
lowercased, normalised, Moses-tokenised files (data/task1/tok), train 29,000 / valid = val 1,014 / test =
test_2016_flickr 1,000 pairs; joint BPE (8k merges); fairseq-preprocess --joined-dictionary. Offline with
--raw-dir (e.g. ../shared/data/multi30k/tok), ~1 min on one core."""
from __future__ import annotations

import os
import shutil
import sys
from typing import List, Optional, Sequence

from .. import checks, multi30k
from ..script import Script, run

COMMIT = "a3d2e0d26b56f3846f66a952536ffed4e401d05a"
URL = f"https://raw.githubusercontent.com/multi30k/dataset/{COMMIT}/data/task1/tok"
TEST_SETS = ("test_2016_flickr", "test_2017_flickr", "test_2018_flickr", "test_2017_mscoco")
#: the script's options -> attributes
OPTIONS = {"--src": "src", "--tgt": "tgt", "--test": "test_set", "--raw-ref-dir": "raw_ref_dir"}

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--src de|en|fr|cs] [--tgt ...] [--test NAME] [options]

Prepares Multi30k Task 1 ($SRC->$TGT by default) from the dataset's own tokenised files
{train,val,$TEST_SET}.lc.norm.tok.{$SRC,$TGT} (in --raw-dir, else downloaded from
$URL), with joint BPE, into DIR/data-bin.
  --src L / --tgt L  languages (default $SRC / $TGT)
  --test NAME        test set: test_2016_flickr (default), test_2017_flickr, test_2018_flickr,
                     test_2017_mscoco
  --raw-ref-dir DIR  the dataset's untokenised files (data/task1/raw, gunzipped: NAME.$TGT): the test
                     set's is copied to raw/test.$TGT, the reference of sacreBLEU and chrF (scored
                     case-insensitively, as the tokenised files are lowercased)

"""


def usage(s: Script) -> str:
    return s.fill(USAGE, URL=URL, TEST_SET=s.test_set) + s.common_usage()


def option(s: Script, args: List[str]) -> int:
    if args[0] in OPTIONS:
        s.need_value(args)
        setattr(s, OPTIONS[args[0]], args[1])
        return 2
    return 0


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    src, tgt, test = s.src, s.tgt, s.test_set
    if src == tgt:
        s.die(f"--src and --tgt must differ, both are '{src}'")
    if test not in TEST_SETS:
        s.die(f"--test must be test_2016_flickr, test_2017_flickr, test_2018_flickr or test_2017_mscoco, got '{test}'")
    if s.raw_ref_dir and not os.path.isfile(f"{s.raw_ref_dir}/{test}.{tgt}"):
        s.die(f"--raw-ref-dir {s.raw_ref_dir} has no {test}.{tgt} (the untokenised test reference)")
    s.require_modules("subword_nmt", "fairseq_cli")
    s.prepare_out_dir()

    s.step("Inputs")
    for split in ("train", "val", test):
        for lang in (src, tgt):
            s.need(f"{split}.lc.norm.tok.{lang}", f"{URL}/{split}.lc.norm.tok.{lang}")
    s.fetch_inputs()

    s.step(f"Check and select the splits (train, valid = val, test = {test})")
    # the files sit side by side (in --raw-dir or OUT/orig): select reads that directory
    s.prep(multi30k, "select", "--test", test, os.path.dirname(s.input(f"train.lc.norm.tok.{src}")), s.tok, src, tgt)

    if s.raw_ref_dir:
        os.makedirs(s.rawtxt, exist_ok=True)
        s.prep(checks, "parallel", f"{s.raw_ref_dir}/{test}.{tgt}", f"{s.tok}/test.{tgt}")
        shutil.copyfile(f"{s.raw_ref_dir}/{test}.{tgt}", f"{s.rawtxt}/test.{tgt}")
        s.note(f"raw reference for sacreBLEU: {s.raw_ref_dir}/{test}.{tgt} -> {s.rawtxt}/test.{tgt}")

    s.bpe_binarize_finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-multi30k.sh", usage, src="de", tgt="en", bpe_tokens=8000, joined=True, option=option,
                    lowercased=True, test_set="test_2016_flickr", raw_ref_dir="")
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
