"""WMT17 Chinese->English (``data-prep/prepare-wmt17zh2en.sh``) as in Yang et al. (2018) Sec. 4.1: "all of the
available parallel corpus from WMT17" (about 20.62M pairs with the 50-token limit), Chinese segmented with jieba,
English Moses-tokenised, training pairs of at most 50 tokens, newsdev2017 valid, newstest2017 test, BPE with 32k
merges (separate per language by default). WMT17's Zh-En parallel data
(http://www.statmt.org/wmt17/translation-task.html; the training subsets of tensorflow/datasets'
tensorflow_datasets/translate/wmt17.py for zh-en, their archives and file layout in its wmt.py): News Commentary
v12, the UN Parallel Corpus v1.0 and the six CWMT corpora. --nc-only prepares News Commentary v12 alone (a
reduced corpus, recorded as such: scripts/reproduce.sh refuses it for the paper tables unless told otherwise)."""
from __future__ import annotations

import os
import sys
from typing import Dict, List, Optional, Sequence

from .. import clean, cwmt, iwslt_xml, tokenize
from ..script import Script, concatenate, count_lines, remove, run

RATIO = "9"
WMT17 = "http://data.statmt.org/wmt17/translation-task"
UN_URL = "https://conferences.unite.un.org/UNCorpus"
# the CWMT corpora and where tensorflow/datasets downloads them (tensorflow_datasets/translate/wmt.py)
CWMT = ("casia2015", "casict2011", "casict2015", "datum2015", "datum2017", "neu2017")
CWMT_URL = "ftp://cwmt-wmt:cwmt-wmt@nlp.nju.edu.cn/parallel"
CWMT_PAGE = "http://nlp.nju.edu.cn/cwmt-wmt/"

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--nc-only] [--extra-corpus PREFIX ...] [options]

Prepares WMT17 Zh-En (jieba + Moses, max length $MAX_LEN, newsdev2017 / newstest2017) and binarises it
into DIR/data-bin. The training data is all of WMT17's Zh-En parallel data, as Yang et al. (2018)
Sec. 4.1 train on ("about 20.62 million sentence pairs" after the 50-token limit). Inputs (each
archive as downloaded, or its files extracted with the same relative paths):
  training-parallel-nc-v12.tgz  training/news-commentary-v12.zh-en.{zh,en}
                                <- $WMT17/training-parallel-nc-v12.tgz
  UNv1.0.en-zh.tar.gz           en-zh/UNv1.0.en-zh.{zh,en}    (UN Parallel Corpus v1.0; download it
                                from $UN_URL, joining the parts if it comes in parts)
  casia2015.zip casict2011.zip casict2015.zip datum2015.zip datum2017.zip neu2017.zip
                                (the CWMT corpora, each zip or its extracted directory NAME/ holding
                                *_ch.txt or *_cn.txt beside *_en.txt) <- $CWMT_URL/NAME.zip
                                (registration: $CWMT_PAGE)
  dev.tgz                       dev/newsdev2017-zhen-{src.zh,ref.en}.sgm   <- $WMT17/dev.tgz
  test.tgz                      test/newstest2017-zhen-{src.zh,ref.en}.sgm <- $WMT17/test.tgz
The UN corpus is never downloaded by this script: pass --raw-dir DIR holding it (and, offline, the
others). data-bin/prep-info.json records the corpus (wmt17-zh-en-all) and its training pairs.

Script options:
  --nc-only              News Commentary v12 alone (about 0.2M pairs): a reduced corpus, recorded as
                         wmt17-zh-en-nc-v12. scripts/reproduce.sh trains the paper tables on it only
                         with --allow-other-corpus, and marks their reports.
  --extra-corpus PREFIX  add PREFIX.zh / PREFIX.en (plain, line-aligned text) to the training data;
                         repeatable. The corpus is then recorded as <corpus>+extra (not the paper's).
  --max-len N            drop training pairs with a side longer than N tokens [$MAX_LEN, Yang et al.
                         2018 Sec. 4.1]; another N is recorded as <corpus>-maxlenN (not the paper's)

"""


def usage(s: Script) -> str:
    return s.fill(USAGE, MAX_LEN=s.max_len, WMT17=WMT17, UN_URL=UN_URL, CWMT_URL=CWMT_URL,
                  CWMT_PAGE=CWMT_PAGE) + s.common_usage()


def option(s: Script, args: List[str]) -> int:
    if args[0] == "--nc-only":
        s.nc_only = True
        return 1
    if args[0] == "--extra-corpus":
        s.need_value(args)
        s.extra.append(args[1])
        return 2
    if args[0] == "--max-len":
        s.max_len = s.integer_value(args)
        return 2
    return 0


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    s.require_modules("sacremoses", "jieba", "subword_nmt", "fairseq_cli")
    s.corpus = "wmt17-zh-en-nc-v12" if s.nc_only else "wmt17-zh-en-all"
    if int(s.max_len) != 50:
        s.corpus += f"-maxlen{s.max_len}"
    if s.extra:
        s.corpus += "+extra"
    s.prepare_out_dir()
    src, tgt, raw, tok, tmp = s.src, s.tgt, s.rawtxt, s.tok, s.tmp

    s.step(f"Inputs ({s.corpus})")
    s.need("training-parallel-nc-v12.tgz", f"{WMT17}/training-parallel-nc-v12.tgz",
           "training/news-commentary-v12.zh-en.zh", "training/news-commentary-v12.zh-en.en")
    s.need("dev.tgz", f"{WMT17}/dev.tgz", "dev/newsdev2017-zhen-src.zh.sgm", "dev/newsdev2017-zhen-ref.en.sgm")
    s.need("test.tgz", f"{WMT17}/test.tgz", "test/newstest2017-zhen-src.zh.sgm", "test/newstest2017-zhen-ref.en.sgm")
    cwmt_dir: Dict[str, str] = {}
    if not s.nc_only:
        s.need("UNv1.0.en-zh.tar.gz", "", "en-zh/UNv1.0.en-zh.zh", "en-zh/UNv1.0.en-zh.en")
        for c in CWMT:
            if s.raw_dir and os.path.isdir(f"{s.raw_dir}/{c}"):
                cwmt_dir[c] = f"{s.raw_dir}/{c}"
            else:
                s.need(f"{c}.zip", f"{CWMT_URL}/{c}.zip")
    s.fetch_inputs()
    train_pairs = [s.input(f"training/news-commentary-v12.zh-en.{lang}") for lang in (src, tgt)]
    if not s.nc_only:
        train_pairs += [s.input(f"en-zh/UNv1.0.en-zh.{src}"), s.input(f"en-zh/UNv1.0.en-zh.{tgt}")]
        for c in CWMT:
            if c not in cwmt_dir:
                remove(f"{s.orig}/cwmt/{c}")
                s.prep(cwmt, "extract", s.input(f"{c}.zip"), f"{s.orig}/cwmt/{c}")
                cwmt_dir[c] = f"{s.orig}/cwmt/{c}"
    for prefix in s.extra:
        if not (os.path.isfile(f"{prefix}.{src}") and os.path.isfile(f"{prefix}.{tgt}")):
            s.die(f"--extra-corpus {prefix}: expected {prefix}.{src} and {prefix}.{tgt}")
        train_pairs += [f"{prefix}.{src}", f"{prefix}.{tgt}"]
    if s.nc_only:
        s.note(f"--nc-only: training on News Commentary v12 alone, a reduced corpus (recorded as {s.corpus})")

    s.step("Extract text: training corpora, newsdev2017 and newstest2017 SGML")
    s.check_parallel(*train_pairs)
    concatenate(train_pairs[0::2], f"{raw}/train.{src}")
    concatenate(train_pairs[1::2], f"{raw}/train.{tgt}")
    if not s.nc_only:
        s.prep(cwmt, "pairs", f"{raw}/train.{src}", f"{raw}/train.{tgt}", *[cwmt_dir[c] for c in CWMT])
        s.check_parallel(f"{raw}/train.{src}", f"{raw}/train.{tgt}")
    s.note(f"training text: {count_lines(f'{raw}/train.{src}')} pairs before tokenisation and the length limit")
    test_reference = s.input("test/newstest2017-zhen-ref.en.sgm")
    s.prep(iwslt_xml, "segs", s.input("dev/newsdev2017-zhen-src.zh.sgm"), f"{raw}/valid.{src}",
           s.input("dev/newsdev2017-zhen-ref.en.sgm"), f"{raw}/valid.{tgt}",
           s.input("test/newstest2017-zhen-src.zh.sgm"), f"{raw}/test.{src}", test_reference, f"{raw}/test.{tgt}")
    s.prep(iwslt_xml, "segs", "--exact", test_reference, f"{raw}/test-ref.{tgt}")
    s.check_parallel(f"{raw}/valid.{src}", f"{raw}/valid.{tgt}", f"{raw}/test.{src}", f"{raw}/test.{tgt}")

    s.step("Tokenise (jieba for zh, Moses for en)")
    jobs: List[str] = []
    for split in ("train", "valid", "test"):
        for lang in (src, tgt):
            dst = f"{tmp}/train.tok.{lang}" if split == "train" else f"{tok}/{split}.{lang}"
            jobs += ["--job", lang, f"{raw}/{split}.{lang}", dst]
    s.prep(tokenize, "tok", "--workers", s.workers, *jobs)

    s.step(f"Clean training data (1..{s.max_len} tokens, ratio {RATIO})")
    s.prep(clean, "--ratio", RATIO, "--min", "1", "--max", s.max_len, f"{tmp}/train.tok", src, tgt, f"{tok}/train")

    s.step(f"BPE ({s.bpe_tool}, {s.bpe_tokens})")
    s.bpe_all(tok, s.out_dir)

    s.step("Binarise (fairseq-preprocess)")
    s.binarize()
    s.finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-wmt17zh2en.sh", usage, src="zh", tgt="en", bpe_tokens=32000, joined=False, option=option,
                    max_len="50", nc_only=False, extra=[])
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
