"""WMT14 English->German (``data-prep/prepare-wmt14en2de.sh``; ~4.5M pairs), following fairseq's
examples/translation/prepare-wmt14en2de.sh: Europarl v7 + CommonCrawl + News Commentary (v12; v9 with
--icml17), Moses punctuation normalisation + non-printing-character removal + aggressive-hyphen tokenisation,
joint BPE, clean 1..250 BPE tokens with ratio 1.5. Valid = newstest2013, test = newstest2014 (full, 3003).
--stanford starts from the Stanford/Google pre-tokenised release instead."""
from __future__ import annotations

import os
import sys
from typing import List, Optional, Sequence

from .. import clean, iwslt_xml, tokenize
from ..script import Script, concatenate, run

MAX_LEN, RATIO = "250", "1.5"
STANFORD_URL = "https://nlp.stanford.edu/projects/nmt/data/wmt14.en-de"

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--stanford | --icml17] [options]

Prepares WMT14 En-De like fairseq's prepare-wmt14en2de.sh, with newstest2013 as valid and
newstest2014 (full, 3003 sentences) as test, and binarises it into DIR/data-bin.
Inputs (archive, or its files extracted with the same relative paths):
  training-parallel-europarl-v7.tgz   training/europarl-v7.de-en.{de,en}
  training-parallel-commoncrawl.tgz   commoncrawl.de-en.{de,en}
  training-parallel-nc-v12.tgz        training/news-commentary-v12.de-en.{de,en}
  dev.tgz                             dev/newstest2013.{de,en}
  test-full.tgz                       test-full/newstest2014-deen-{src.en,ref.de}.sgm

Script options:
  --icml17     News Commentary v9 instead of v12 (training-parallel-nc-v9.tgz), the data of
               fairseq's --icml17 / Vaswani et al. (2017)
  --stanford   use the Stanford NMT pre-tokenised WMT14 release ($STANFORD_URL):
               train.{en,de}, newstest2013.{en,de}, newstest2014.{en,de} (filtered, 2737). It
               is tokenised already: only "##AT##-##AT##" is mapped to Moses' "@-@" (so
               detokenisation restores the hyphen); BPE, cleaning and binarisation as above.
               No raw references: for sacreBLEU use 'sacrebleu -t wmt14 -l en-de --echo ref'.

"""


def usage(s: Script) -> str:
    return s.fill(USAGE, STANFORD_URL=STANFORD_URL) + s.common_usage()


def option(s: Script, args: List[str]) -> int:
    if args[0] in ("--stanford", "--icml17"):
        setattr(s, args[0][2:], True)
        return 1
    return 0


def map_at(src: str, dst: str) -> None:
    """The Stanford release's hyphen "##AT##-##AT##" as Moses' "@-@" (``sed 's/ ##AT##-##AT## / @-@ /g;
    s/##AT##-##AT##/@-@/g'``)."""
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        for line in fin:
            fout.write(line.replace(b" ##AT##-##AT## ", b" @-@ ").replace(b"##AT##-##AT##", b"@-@"))


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    # the training data's name in data-bin/prep-info.json
    s.corpus = "wmt14-en-de-stanford" if s.stanford else "wmt14-en-de-nc-v9" if s.icml17 else "wmt14-en-de"
    if s.stanford and s.icml17:
        s.die("--stanford and --icml17 exclude each other")
    nc, nc_archive = "news-commentary-v12", "training-parallel-nc-v12.tgz"
    nc_url = "http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz"
    if s.icml17:
        nc, nc_archive = "news-commentary-v9", "training-parallel-nc-v9.tgz"
        nc_url = "http://statmt.org/wmt14/training-parallel-nc-v9.tgz"
    s.require_modules("sacremoses", "subword_nmt", "fairseq_cli")
    s.prepare_out_dir()
    src, tgt, raw, tok, tmp = s.src, s.tgt, s.rawtxt, s.tok, s.tmp

    s.step("Inputs")
    corpora = ["training/europarl-v7.de-en", "commoncrawl.de-en", f"training/{nc}.de-en"]
    if s.stanford:
        for name in ("train", "newstest2013", "newstest2014"):
            for lang in (src, tgt):
                s.need(f"{name}.{lang}", f"{STANFORD_URL}/{name}.{lang}")
    else:
        s.need("training-parallel-europarl-v7.tgz", "http://statmt.org/wmt13/training-parallel-europarl-v7.tgz",
               "training/europarl-v7.de-en.de", "training/europarl-v7.de-en.en")
        s.need("training-parallel-commoncrawl.tgz", "http://statmt.org/wmt13/training-parallel-commoncrawl.tgz",
               "commoncrawl.de-en.de", "commoncrawl.de-en.en")
        s.need(nc_archive, nc_url, f"training/{nc}.de-en.de", f"training/{nc}.de-en.en")
        s.need("dev.tgz", "http://data.statmt.org/wmt17/translation-task/dev.tgz", "dev/newstest2013.de",
               "dev/newstest2013.en")
        s.need("test-full.tgz", "http://statmt.org/wmt14/test-full.tgz", f"test-full/newstest2014-deen-src.{src}.sgm",
               f"test-full/newstest2014-deen-ref.{tgt}.sgm")
    s.fetch_inputs()

    if s.stanford:
        s.step("Stanford release: check, map ##AT##-##AT## to @-@")
        s.check_parallel(*[s.input(f"{name}.{lang}") for name in ("train", "newstest2013", "newstest2014")
                           for lang in (src, tgt)])
        for lang in (src, tgt):
            for split, name in (("train", "train"), ("valid", "newstest2013"), ("test", "newstest2014")):
                map_at(s.input(f"{name}.{lang}"), f"{tok}/{split}.{lang}")
    else:
        s.step("Extract text: concatenate training corpora, newstest2013, newstest2014 SGML")
        s.check_parallel(*[s.input(f"{c}.{lang}") for c in corpora for lang in (src, tgt)],
                         s.input(f"dev/newstest2013.{src}"), s.input(f"dev/newstest2013.{tgt}"))
        for lang in (src, tgt):
            concatenate([s.input(f"{c}.{lang}") for c in corpora], f"{raw}/train.{lang}")
            concatenate([s.input(f"dev/newstest2013.{lang}")], f"{raw}/valid.{lang}")
        source, reference = (s.input(f"test-full/newstest2014-deen-src.{src}.sgm"),
                             s.input(f"test-full/newstest2014-deen-ref.{tgt}.sgm"))
        s.prep(iwslt_xml, "segs", source, f"{raw}/test.{src}", reference, f"{raw}/test.{tgt}")
        s.prep(iwslt_xml, "segs", "--exact", reference, f"{raw}/test-ref.{tgt}")
        s.check_parallel(f"{raw}/train.{src}", f"{raw}/train.{tgt}", f"{raw}/test.{src}", f"{raw}/test.{tgt}")

        s.step("Tokenise (Moses -a; training data punctuation-normalised first)")
        s.prep(tokenize, "tok", "--aggressive-dash", "--normalize-punct", "--remove-non-printing", "--workers",
               s.workers, "--job", src, f"{raw}/train.{src}", f"{tok}/train.{src}", "--job", tgt, f"{raw}/train.{tgt}",
               f"{tok}/train.{tgt}")
        s.prep(tokenize, "tok", "--aggressive-dash", "--workers", s.workers,
               *[p for split in ("valid", "test") for lang in (src, tgt)
                 for p in ("--job", lang, f"{raw}/{split}.{lang}", f"{tok}/{split}.{lang}")])

    s.step(f"BPE ({s.bpe_tool}, {s.bpe_tokens})")
    os.makedirs(f"{tmp}/bpe", exist_ok=True)
    s.bpe_all(tok, f"{tmp}/bpe")

    s.step(f"Clean BPE'd training data (1..{MAX_LEN} tokens, ratio {RATIO})")
    s.prep(clean, "--ratio", RATIO, "--min", "1", "--max", MAX_LEN, f"{tmp}/bpe/train", src, tgt, f"{s.out_dir}/train")
    for lang in (src, tgt):
        for split in ("valid", "test"):
            os.replace(f"{tmp}/bpe/{split}.{lang}", f"{s.out_dir}/{split}.{lang}")

    s.step("Binarise (fairseq-preprocess)")
    s.binarize()
    s.finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-wmt14en2de.sh", usage, src="en", tgt="de", bpe_tokens=32000, joined=True, option=option,
                    compound_split=True, stanford=False, icml17=False)
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
