"""Subject-verb agreement, number prediction (``data-prep/prepare-sva.sh``; Linzen et al. 2016; Nguyen et al.
2020, Sec. 5.3 / Table 5 "SVA"), from Linzen's released agr_50_mostcommon_10K.tsv: the sentence up to the verb ->
singular (VBZ) / plural (VBP). Split: Linzen's 9% / 1% / 90% (--split linzen, default) or tensor2tensor's
SvaNumberPrediction (--split t2t); see :mod:`localness_prep.sva`. The text is already tokenised and lowercased:
word vocabulary, fairseq-preprocess --only-source into fairseq's sentence_prediction layout
OUT/data-bin/{input0,label}/."""
from __future__ import annotations

import sys
from typing import List, Optional, Sequence

from .. import sva
from ..script import Script, count_lines, read_lines, run

LINZEN_URL = "http://tallinzen.net/media/rnn_agreement/agr_50_mostcommon_10K.tsv.gz"

USAGE = """\
Usage: bash $SCRIPT_NAME --raw-dir DIR --out DIR [--split linzen|t2t] [--text-column sentence|orig_sentence]
                         [--force] [--workers N]

Prepares Linzen et al. (2016)'s number-prediction task from agr_50_mostcommon_10K.tsv (or .tsv.gz,
as downloaded from $LINZEN_URL) in --raw-dir.
Output: DIR/data-bin/{input0,label}/{train,valid,test}.{bin,idx} + dict.txt (fairseq's
sentence_prediction task: fairseq-train DIR/data-bin --task sentence_prediction --num-classes 2 ...),
DIR/tok/{input0,label}/SPLIT.txt (the prefixes and their labels, singular or plural).
  --raw-dir DIR        the folder holding Linzen's tsv (required: the file is not downloaded)
  --out DIR            output directory (required)
  --split NAME         linzen: Linzen's split, sentences of <= 50 words, 9% / 1% / 90% [default];
                       t2t: tensor2tensor's, 9% / 1% / the rest with only attractors as test
  --text-column NAME   sentence: rare words replaced by their part of speech, as Linzen trained
                       [default]; orig_sentence: every word
  --workers N          fairseq-preprocess processes [1]
  --force              rebuild even if DIR holds a finished run
"""


def usage(s: Script) -> str:
    return s.fill(USAGE, LINZEN_URL=LINZEN_URL)


def option(s: Script, args: List[str]) -> int:
    if args[0] == "--split":
        s.need_value(args)
        if args[1] not in ("linzen", "t2t"):
            s.die(f"--split must be linzen or t2t, got '{args[1]}'")
        s.split = args[1]
        return 2
    if args[0] == "--text-column":
        s.need_value(args)
        if args[1] not in ("sentence", "orig_sentence"):
            s.die(f"--text-column must be sentence or orig_sentence, got '{args[1]}'")
        s.text_column = args[1]
        return 2
    return 0


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    if not s.raw_dir:
        s.die("--raw-dir DIR is required: the folder holding agr_50_mostcommon_10K.tsv (or .tsv.gz,\n"
              f"from {LINZEN_URL})")
    s.require_modules("fairseq_cli")
    s.prepare_out_dir()

    s.step(f"Check the tsv, write the prefixes and labels ({s.split} split, column {s.text_column})")
    s.prep(sva, "split", s.raw_dir, s.tok, "--split", s.split, "--text-column", s.text_column)

    s.classification_binarize()

    s.step("Summary")
    for split in ("train", "valid", "test"):
        plural = sum(line == b"plural" for line in read_lines(f"{s.tok}/label/{split}.txt"))
        s.say(f"    {split:<6} {count_lines(f'{s.tok}/input0/{split}.txt'):>8} examples ({plural} plural)\n")
    s.classification_done("--criterion sentence_prediction --arch localness_classifier_tiny ...")


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-sva.sh", usage, src="input0", tgt="label", bpe_tokens=0, joined=False, option=option,
                    split="linzen", text_column="sentence")
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
