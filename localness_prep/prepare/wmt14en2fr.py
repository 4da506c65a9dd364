"""WMT14 English->French (``data-prep/prepare-wmt14en2fr.sh``; ~36M pairs), following fairseq's
examples/translation/prepare-wmt14en2fr.sh, the data of Nguyen et al. (2020) Table 1 (En-Fr column; Sec. 5.1):
Europarl v7 + CommonCrawl + UN + News Commentary v9 + Giga-FrEn, Moses punctuation normalisation +
non-printing-character removal + aggressive-hyphen tokenisation, a development set of every 1333rd training
pair ("a random split from the training set"), joint BPE with 40,000 merges (shared vocabulary), BPE'd training
and development pairs cleaned to 1..250 tokens with ratio 1.5, test = newstest2014 (full, 3003 sentences)."""
from __future__ import annotations

import contextlib
import glob
import gzip
import os
import shutil
import sys
from typing import List, Optional, Sequence

from .. import clean, iwslt_xml, tokenize
from ..script import Script, concatenate, run

MAX_LEN, RATIO = "250", "1.5"
WMT13, WMT14 = "http://statmt.org/wmt13", "http://statmt.org/wmt14"
CORPORA = ("training/europarl-v7.fr-en", "commoncrawl.fr-en", "un/undoc.2000.fr-en",
           "training/news-commentary-v9.fr-en", "giga-fren.release2.fixed")

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [options]

Prepares WMT14 En-Fr like fairseq's prepare-wmt14en2fr.sh (development set: every $VALID_EVERY-th training
pair; test: newstest2014, 3003 sentences) and binarises it into DIR/data-bin.
Inputs (archive, or its files extracted with the same relative paths):
  training-parallel-europarl-v7.tgz   training/europarl-v7.fr-en.{en,fr}
  training-parallel-commoncrawl.tgz   commoncrawl.fr-en.{en,fr}
  training-parallel-un.tgz            un/undoc.2000.fr-en.{en,fr}
  training-parallel-nc-v9.tgz         training/news-commentary-v9.fr-en.{en,fr}
  training-giga-fren.tar              giga-fren.release2.fixed.{en,fr}.gz
  test-full.tgz                       test-full/newstest2014-fren-{src.en,ref.fr}.sgm
(from $WMT13/, $WMT14/ and http://statmt.org/wmt10/). About 36M training pairs: tokenising and BPE
take hours; use --workers.

Script options:
  --valid-every N   every N-th training pair goes to the development set [$VALID_EVERY, fairseq's]

"""


def usage(s: Script) -> str:
    return s.fill(USAGE, VALID_EVERY=s.valid_every, WMT13=WMT13, WMT14=WMT14) + s.common_usage()


def option(s: Script, args: List[str]) -> int:
    if args[0] == "--valid-every":
        s.valid_every = s.integer_value(args)
        return 2
    return 0


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    s.require_modules("sacremoses", "subword_nmt", "fairseq_cli")
    s.prepare_out_dir()
    src, tgt, raw, tok, tmp = s.src, s.tgt, s.rawtxt, s.tok, s.tmp

    s.step("Inputs")
    s.need("training-parallel-europarl-v7.tgz", f"{WMT13}/training-parallel-europarl-v7.tgz",
           "training/europarl-v7.fr-en.en", "training/europarl-v7.fr-en.fr")
    s.need("training-parallel-commoncrawl.tgz", f"{WMT13}/training-parallel-commoncrawl.tgz",
           "commoncrawl.fr-en.en", "commoncrawl.fr-en.fr")
    s.need("training-parallel-un.tgz", f"{WMT13}/training-parallel-un.tgz", "un/undoc.2000.fr-en.en",
           "un/undoc.2000.fr-en.fr")
    s.need("training-parallel-nc-v9.tgz", f"{WMT14}/training-parallel-nc-v9.tgz",
           "training/news-commentary-v9.fr-en.en", "training/news-commentary-v9.fr-en.fr")
    s.need("training-giga-fren.tar", "http://statmt.org/wmt10/training-giga-fren.tar", "giga-fren.release2.fixed.en.gz",
           "giga-fren.release2.fixed.fr.gz")
    s.need("test-full.tgz", f"{WMT14}/test-full.tgz", "test-full/newstest2014-fren-src.en.sgm",
           "test-full/newstest2014-fren-ref.fr.sgm")
    s.fetch_inputs()

    s.step("Extract text: concatenate the training corpora, newstest2014 SGML")
    for lang in (src, tgt):
        with gzip.open(s.input(f"giga-fren.release2.fixed.{lang}.gz"), "rb") as fin, \
                open(f"{tmp}/giga-fren.{lang}", "wb") as fout:
            shutil.copyfileobj(fin, fout, 1 << 20)
    pairs: List[str] = []
    for c in CORPORA:
        if c.startswith("giga-fren."):
            pairs += [f"{tmp}/giga-fren.{src}", f"{tmp}/giga-fren.{tgt}"]
        else:
            pairs += [s.input(f"{c}.{src}"), s.input(f"{c}.{tgt}")]
    s.check_parallel(*pairs)
    concatenate(pairs[0::2], f"{raw}/train.{src}")
    concatenate(pairs[1::2], f"{raw}/train.{tgt}")
    for path in glob.glob(f"{glob.escape(tmp)}/giga-fren.*"):
        os.remove(path)
    reference = s.input(f"test-full/newstest2014-fren-ref.{tgt}.sgm")
    s.prep(iwslt_xml, "segs", s.input(f"test-full/newstest2014-fren-src.{src}.sgm"), f"{raw}/test.{src}", reference,
           f"{raw}/test.{tgt}")
    s.prep(iwslt_xml, "segs", "--exact", reference, f"{raw}/test-ref.{tgt}")
    s.check_parallel(f"{raw}/train.{src}", f"{raw}/train.{tgt}", f"{raw}/test.{src}", f"{raw}/test.{tgt}")

    s.step("Tokenise (Moses -a; training data punctuation-normalised first)")
    s.prep(tokenize, "tok", "--aggressive-dash", "--normalize-punct", "--remove-non-printing", "--workers", s.workers,
           "--job", src, f"{raw}/train.{src}", f"{tmp}/train.tok.{src}", "--job", tgt, f"{raw}/train.{tgt}",
           f"{tmp}/train.tok.{tgt}")
    s.prep(tokenize, "tok", "--aggressive-dash", "--workers", s.workers, "--job", src, f"{raw}/test.{src}",
           f"{tok}/test.{src}", "--job", tgt, f"{raw}/test.{tgt}", f"{tok}/test.{tgt}")

    s.step(f"Development set: every {s.valid_every}th training pair")
    for lang in (src, tgt):
        s.split_every(int(s.valid_every), f"{tmp}/train.tok.{lang}", f"{tok}/train.{lang}", f"{tok}/valid.{lang}")
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"{tmp}/train.tok.{lang}")
    s.check_parallel(f"{tok}/train.{src}", f"{tok}/train.{tgt}", f"{tok}/valid.{src}", f"{tok}/valid.{tgt}")

    s.step(f"BPE ({s.bpe_tool}, {s.bpe_tokens})")
    os.makedirs(f"{tmp}/bpe", exist_ok=True)
    s.bpe_all(tok, f"{tmp}/bpe")

    s.step(f"Clean BPE'd training and development data (1..{MAX_LEN} tokens, ratio {RATIO})")
    for split in ("train", "valid"):
        s.prep(clean, "--ratio", RATIO, "--min", "1", "--max", MAX_LEN, f"{tmp}/bpe/{split}", src, tgt,
               f"{s.out_dir}/{split}")
    for lang in (src, tgt):
        os.replace(f"{tmp}/bpe/test.{lang}", f"{s.out_dir}/test.{lang}")

    s.step("Binarise (fairseq-preprocess)")
    s.binarize()
    s.finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-wmt14en2fr.sh", usage, src="en", tgt="fr", bpe_tokens=40000, joined=True, option=option,
                    valid_every="1333")
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
