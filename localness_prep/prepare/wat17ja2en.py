"""WAT17 Japanese->English on ASPEC-JE (``data-prep/prepare-wat17ja2en.sh``)
as in Yang et al. (2019) Sec. 5 and Xu et al. (2019) Sec. 4, both following Morishita et al. (2017): the first two
training sections (train-1.txt, train-2.txt; "2M sentence pairs"), dev.txt as valid, test.txt as test. Neither
paper states a length limit, and neither release (baosongyang/Context-Aware-SAN, scewiner/Leveraging) has a data
script: every training pair is kept by default (only pairs with an empty side are dropped, our choice); --max-len N
filters (recorded as another corpus). Japanese is segmented with MeCab/UniDic-lite through fugashi (the papers used
KyTea, whose model is not on PyPI), English Moses-tokenised; BPE with 32k merges (both papers). ASPEC is licensed:
the script only reads the user's copy (--raw-dir)."""
from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence

from .. import aspec, clean, tokenize
from ..script import Script, run

RATIO = "9"
ASPEC_URL = "https://jipsti.jst.go.jp/aspec/"
FILES = ("train/train-1.txt", "train/train-2.txt", "dev/dev.txt", "test/test.txt")

USAGE = """\
Usage: bash $SCRIPT_NAME --raw-dir ASPEC_DIR --out DIR [options]

Prepares WAT17 Ja-En (ASPEC-JE train-1 + train-2, dev, test) and binarises it into DIR/data-bin.
ASPEC is distributed under a licence agreement ($ASPEC_URL) and cannot be downloaded by
this script: --raw-dir must be your ASPEC-JE directory (or its parent), holding
  $FILES
Lines are 'SCORE ||| DOC ||| SENT ||| JA ||| EN' (train) and 'DOC ||| SENT ||| JA ||| EN' (dev/test).

Script options:
  --max-len N   drop training pairs with a side longer than N tokens, or more than $RATIO times longer
                than the other side [default: keep every pair with two non-empty sides; Yang et al.
                2019 and Xu et al. 2019 state no limit]. Recorded as aspec-je-train-1-2-maxlenN, not
                the papers' corpus (aspec-je-train-1-2).

"""


def usage(s: Script) -> str:
    return s.fill(USAGE, ASPEC_URL=ASPEC_URL, FILES=" ".join(FILES), RATIO=RATIO) + s.common_usage()


def option(s: Script, args: List[str]) -> int:
    if args[0] == "--max-len":
        s.max_len = s.integer_value(args)
        return 2
    return 0


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    if not s.raw_dir:
        s.die(f"ASPEC-JE is licensed and cannot be downloaded automatically.\nRequest it at {ASPEC_URL}, unpack it, "
              f"and rerun with --raw-dir pointing to the ASPEC-JE directory\n(the one holding {' '.join(FILES)}).")
    if os.path.isdir(f"{s.raw_dir}/ASPEC-JE"):
        s.raw_dir = f"{s.raw_dir}/ASPEC-JE"
    s.require_modules("sacremoses", "fugashi", "unidic_lite", "subword_nmt", "fairseq_cli")
    s.corpus = "aspec-je-train-1-2" + (f"-maxlen{s.max_len}" if int(s.max_len) else "")
    s.prepare_out_dir()
    src, tgt, raw, tok, tmp = s.src, s.tgt, s.rawtxt, s.tok, s.tmp

    s.step("Inputs")
    for name in FILES:
        s.need(name, "")
    s.fetch_inputs()

    s.step("Extract Japanese and English columns")
    s.prep(aspec, "--job", f"{raw}/train", s.input("train/train-1.txt"), "--job", f"{raw}/train",
           s.input("train/train-2.txt"), "--job", f"{raw}/valid", s.input("dev/dev.txt"), "--job", f"{raw}/test",
           s.input("test/test.txt"))
    s.check_parallel(*[f"{raw}/{split}.{lang}" for split in ("train", "valid", "test") for lang in (src, tgt)])

    s.step("Tokenise (fugashi + UniDic-lite for ja, Moses for en)")
    jobs: List[str] = []
    for split in ("train", "valid", "test"):
        for lang in (src, tgt):
            dst = f"{tmp}/train.tok.{lang}" if split == "train" else f"{tok}/{split}.{lang}"
            jobs += ["--job", lang, f"{raw}/{split}.{lang}", dst]
    s.prep(tokenize, "tok", "--workers", s.workers, *jobs)

    if int(s.max_len):
        s.step(f"Clean training data (1..{s.max_len} tokens, ratio {RATIO})")
        s.prep(clean, "--ratio", RATIO, "--min", "1", "--max", s.max_len, f"{tmp}/train.tok", src, tgt, f"{tok}/train")
    else:
        s.step("Clean training data (pairs with an empty side only: the papers state no length limit)")
        s.prep(clean, "--ratio", "inf", "--min", "1", "--max", "1000000000", f"{tmp}/train.tok", src, tgt,
               f"{tok}/train")

    s.step(f"BPE ({s.bpe_tool}, {s.bpe_tokens})")
    s.bpe_all(tok, s.out_dir)

    s.step("Binarise (fairseq-preprocess)")
    s.binarize()
    s.finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-wat17ja2en.sh", usage, src="ja", tgt="en", bpe_tokens=32000, joined=False, option=option,
                    max_len="0")
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
