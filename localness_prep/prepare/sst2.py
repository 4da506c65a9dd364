"""SST-2 (``data-prep/prepare-sst2.sh``; Socher et al. 2013), binary, in SentEval's files, for Nguyen et al. 2020
Table 5 (the paper says only "Stanford Sentiment Treebank (SST)"; binary SST-2 and this split are our reading,
docs/tasks.md): train 67,349 phrases / valid = dev 872 / test 1,821 sentences, already tokenised; word
vocabulary (no BPE); fairseq-preprocess --only-source into fairseq's sentence_prediction layout
OUT/data-bin/{input0,label}/. Offline with --raw-dir (e.g. ../shared/data/sst2), ~1 min on one core."""
from __future__ import annotations

import sys
from typing import List, Optional, Sequence

from .. import sst
from ..script import Script, count_lines, run

COMMIT = "84b5b4c1c1ca20b6af19fc78cae005a1818ec571"
URL = f"https://raw.githubusercontent.com/PrincetonML/SIF/{COMMIT}/data"

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--force] [--workers N]

Prepares binary SST-2 from SentEval's files (sentence<TAB>label per line): train.tsv, dev.tsv,
test.tsv (or SentEval's names sentiment-train, sentiment-dev, sentiment-test) in --raw-dir, else
downloaded from $URL/sentiment-{train,dev,test}.
Output: DIR/data-bin/{input0,label}/{train,valid,test}.{bin,idx} + dict.txt (fairseq's
sentence_prediction task: fairseq-train DIR/data-bin --task sentence_prediction --num-classes 2 ...),
DIR/tok/{input0,label}/SPLIT.txt (the text).
  --raw-dir DIR  the SentEval files (the only way to run offline)
  --out DIR      output directory (required)
  --workers N    fairseq-preprocess processes [1]
  --force        rebuild even if DIR holds a finished run
"""


def usage(s: Script) -> str:
    return s.fill(USAGE, URL=URL)


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    s.require_modules("fairseq_cli")
    s.prepare_out_dir()

    s.step("Inputs")
    if s.raw_dir:
        source = s.raw_dir
        s.note(f"reading SentEval SST-2 files from {source}")
    else:
        for split in ("train", "dev", "test"):
            s.need(f"sentiment-{split}", f"{URL}/sentiment-{split}")
        s.fetch_inputs()
        source = s.orig

    s.step("Check the files, write input0/ and label/ text")
    s.prep(sst, "split", source, s.tok)

    s.classification_binarize()

    s.step("Summary")
    for split in ("train", "valid", "test"):
        s.say(f"    {split:<6} {count_lines(f'{s.tok}/input0/{split}.txt'):>7} examples\n")
    s.classification_done("--criterion sentence_prediction --arch localness_classifier_tiny ...")


def main(argv: Optional[Sequence[str]] = None) -> int:
    return run(Script("prepare-sst2.sh", usage, src="input0", tgt="label", bpe_tokens=0, joined=False), body, argv)


if __name__ == "__main__":
    sys.exit(main())
