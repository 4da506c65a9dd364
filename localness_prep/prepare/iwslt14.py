"""IWSLT14 German->English (``data-prep/prepare-iwslt14.sh``), following fairseq's
examples/translation/prepare-iwslt14.sh: TED train.tags (metadata lines removed), Moses tokenisation, clean
1..175 tokens with ratio 1.5, lowercase; valid = every 23rd training pair; test = dev2010 + TEDX.dev2012 +
tst2010-2012 (6750 pairs); joint BPE (10k merges); fairseq-preprocess --joined-dictionary."""
from __future__ import annotations

import sys
from typing import List, Optional, Sequence

from .. import clean, iwslt_xml, tokenize
from ..script import Script, concatenate, run

MAX_LEN, RATIO, VALID_EVERY = "175", "1.5", 23
URL = "http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz"
TESTSETS = ("IWSLT14.TED.dev2010", "IWSLT14.TEDX.dev2012", "IWSLT14.TED.tst2010", "IWSLT14.TED.tst2011",
            "IWSLT14.TED.tst2012")

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [options]

Prepares IWSLT14 De-En like fairseq's prepare-iwslt14.sh (tokenised, lowercased, joint BPE)
and binarises it into DIR/data-bin.
Input: de-en.tgz ($URL),
or its files de-en/train.tags.de-en.{de,en} and
de-en/IWSLT14.{TED.dev2010,TEDX.dev2012,TED.tst2010,TED.tst2011,TED.tst2012}.de-en.{de,en}.xml.

"""


def usage(s: Script) -> str:
    return s.fill(USAGE, URL=URL) + s.common_usage()


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    s.require_modules("sacremoses", "subword_nmt", "fairseq_cli")
    s.prepare_out_dir()
    src, tgt, raw, tmp, tok = s.src, s.tgt, s.rawtxt, s.tmp, s.tok

    s.step("Inputs")
    members = [f"de-en/train.tags.de-en.{src}", f"de-en/train.tags.de-en.{tgt}"]
    members += [f"de-en/{t}.de-en.{lang}.xml" for t in TESTSETS for lang in (src, tgt)]
    s.need("de-en.tgz", URL, *members)
    s.fetch_inputs()

    s.step("Extract text from train.tags and the dev/test XML")
    s.prep(iwslt_xml, "train-tags", *[p for lang in (src, tgt)
                                      for p in (s.input(f"de-en/train.tags.de-en.{lang}"), f"{raw}/train.{lang}")])
    s.prep(iwslt_xml, "segs", *[p for t in TESTSETS for lang in (src, tgt)
                                for p in (s.input(f"de-en/{t}.de-en.{lang}.xml"), f"{tmp}/{t}.{lang}")])
    s.check_parallel(f"{raw}/train.{src}", f"{raw}/train.{tgt}",
                     *[f"{tmp}/{t}.{lang}" for t in TESTSETS for lang in (src, tgt)])
    for lang in (src, tgt):
        concatenate([f"{tmp}/{t}.{lang}" for t in TESTSETS], f"{raw}/test.{lang}")
    # the references as published (entities decoded), for sacreBLEU
    s.prep(iwslt_xml, "segs", "--exact", *[p for t in TESTSETS
                                           for p in (s.input(f"de-en/{t}.de-en.{tgt}.xml"), f"{tmp}/{t}.ref.{tgt}")])
    concatenate([f"{tmp}/{t}.ref.{tgt}" for t in TESTSETS], f"{raw}/test-ref.{tgt}")

    s.step("Tokenise (Moses) and lowercase")
    s.prep(tokenize, "tok", "--lowercase", "--workers", s.workers,
           "--job", src, f"{raw}/train.{src}", f"{tmp}/train.tok.{src}", "--job", tgt, f"{raw}/train.{tgt}",
           f"{tmp}/train.tok.{tgt}", "--job", src, f"{raw}/test.{src}", f"{tok}/test.{src}", "--job", tgt,
           f"{raw}/test.{tgt}", f"{tok}/test.{tgt}")

    s.step(f"Clean training data ({MAX_LEN} tokens max, ratio {RATIO}) and split off valid "
           f"(every {VALID_EVERY}rd pair)")
    s.prep(clean, "--ratio", RATIO, "--min", "1", "--max", MAX_LEN, f"{tmp}/train.tok", src, tgt, f"{tmp}/train.clean")
    for lang in (src, tgt):
        s.split_every(VALID_EVERY, f"{tmp}/train.clean.{lang}", f"{tok}/train.{lang}", f"{tok}/valid.{lang}")
    s.check_parallel(*[f"{tok}/{split}.{lang}" for split in ("train", "valid", "test") for lang in (src, tgt)])

    s.step(f"BPE ({s.bpe_tool}, {s.bpe_tokens})")
    s.bpe_all(tok, s.out_dir)

    s.step("Binarise (fairseq-preprocess)")
    s.binarize()
    s.finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-iwslt14.sh", usage, src="de", tgt="en", bpe_tokens=10000, joined=True, lowercased=True)
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
