"""IMDB sentiment (``data-prep/prepare-imdb.sh``; Maas et al. 2011; Nguyen et al. 2020, Sec. 5.3 / Table 5),
binary, from the released aclImdb layout: train 25,000 / test 25,000 reviews; a class-balanced dev set of whole
movies is held out of train (--dev-size, --seed, --dev-split: the paper states no dev set). <br /> tags
removed, Moses-tokenised and lowercased like the SST-2 files (no escaping), word vocabulary (no BPE);
fairseq-preprocess --only-source into fairseq's sentence_prediction layout OUT/data-bin/{input0,label}/."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from typing import List, Optional, Sequence

from .. import imdb, tokenize
from ..script import Script, count_lines, is_count, is_int, run

URL = "http://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz"

USAGE = """\
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--dev-size N] [--seed N] [--dev-split movie|review]
                          [--cased] [--force] [--workers N]

Prepares binary IMDB (aclImdb: train/{pos,neg}/*.txt, test/{pos,neg}/*.txt, and train/urls_{pos,neg}.txt
for the movies; unsup/ is ignored).
--raw-dir is the extracted aclImdb folder, or a folder holding aclImdb/ or aclImdb_v1.tar.gz;
without it, $URL is downloaded into DIR/orig.
Output: DIR/data-bin/{input0,label}/{train,valid,test}.{bin,idx} + dict.txt (fairseq's
sentence_prediction task: fairseq-train DIR/data-bin --task sentence_prediction --num-classes 2 ...),
DIR/tok/{input0,label}/SPLIT.txt (the text; label 0 = neg, 1 = pos), DIR/raw/ (before tokenisation).
  --raw-dir DIR   aclImdb (the only way to run offline)
  --out DIR       output directory (required)
  --dev-size N    training reviews held out as the valid split, half from each class [$DEV_SIZE]
  --seed N        seed of that draw [$SEED]
  --dev-split S   movie: whole movies go to dev, none of them stays in train, as the release keeps train
                  and test movies apart (needs train/urls_{pos,neg}.txt) [default]; review: single reviews
  --cased         keep the case (default: lowercase, like the SST-2 files)
  --workers N     tokeniser and fairseq-preprocess processes [1]
  --force         rebuild even if DIR holds a finished run (downloads in DIR/orig are kept)
"""


def usage(s: Script) -> str:
    return s.fill(USAGE, URL=URL, DEV_SIZE=s.dev_size, SEED=s.seed)


def option(s: Script, args: List[str]) -> int:
    flag = args[0]
    if flag == "--cased":
        s.cased = True
        return 1
    if flag not in ("--dev-size", "--seed", "--dev-split"):
        return 0
    s.need_value(args)
    value = args[1]
    if flag == "--dev-size":
        if not is_int(value):
            s.die(f"--dev-size must be a positive integer, got '{value}'")
        s.dev_size = value
    elif flag == "--seed":
        if not is_count(value):
            s.die(f"--seed must be a non-negative integer, got '{value}'")
        s.seed = value
    else:
        if value not in ("movie", "review"):
            s.die(f"--dev-split must be movie or review, got '{value}'")
        s.dev_split = value
    return 2


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    s.require_modules("fairseq_cli", "sacremoses")
    s.prepare_out_dir()

    s.step("Inputs")
    raw = s.raw_dir
    if raw and os.path.isdir(f"{raw}/train") and os.path.isdir(f"{raw}/test"):
        source = raw
    elif raw and os.path.isdir(f"{raw}/aclImdb"):
        source = f"{raw}/aclImdb"
    else:
        archive = f"{raw}/aclImdb_v1.tar.gz" if raw else ""
        if not archive:
            archive = f"{s.orig}/aclImdb_v1.tar.gz"
            os.makedirs(s.orig, exist_ok=True)
            if not os.path.isfile(archive) and not s.download(URL, archive):
                s.die(f"could not download {URL} (no network?).\n"
                      "Download it yourself, extract it, and rerun with --raw-dir PATH/aclImdb")
        if not os.path.isfile(archive):
            s.die(f"--raw-dir {raw} holds neither the aclImdb layout (train/ and test/), nor aclImdb/,\n"
                  f"nor aclImdb_v1.tar.gz (from {URL})")
        s.note(f"extracting train/ and test/ of {archive} (unsup/ left out)")
        os.makedirs(s.orig, exist_ok=True)
        s.flush()
        if subprocess.run(["tar", "-xzf", archive, "-C", s.orig, "--wildcards", "aclImdb/train/pos/*",
                           "aclImdb/train/neg/*", "aclImdb/test/pos/*", "aclImdb/test/neg/*",
                           "aclImdb/train/urls_*.txt"]).returncode:
            s.die(f"could not extract {archive}")
        source = f"{s.orig}/aclImdb"
    s.note(f"reading aclImdb from {source}")

    s.step(f"Check the reviews, hold out the dev set (whole {s.dev_split}s), write input0/ and label/ text")
    s.prep(imdb, "split", source, s.rawtxt, "--dev-size", s.dev_size, "--seed", s.seed, "--dev-split", s.dev_split)

    s.step(f"Tokenise (Moses, no escaping{'' if s.cased else ', lowercased'})")
    flags = ["--no-escape"] + ([] if s.cased else ["--lowercase"])
    os.makedirs(f"{s.tok}/input0", exist_ok=True)
    os.makedirs(f"{s.tok}/label", exist_ok=True)
    jobs: List[str] = []
    for split in ("train", "valid", "test"):
        jobs += ["--job", "en", f"{s.rawtxt}/input0/{split}.txt", f"{s.tok}/input0/{split}.txt"]
        shutil.copyfile(f"{s.rawtxt}/label/{split}.txt", f"{s.tok}/label/{split}.txt")
    s.prep(tokenize, "tok", *flags, "--workers", s.workers, *jobs)

    s.classification_binarize()

    s.step("Summary")
    for split in ("train", "valid", "test"):
        path = f"{s.tok}/input0/{split}.txt"
        with open(path, "rb") as f:
            tokens = sum(len(line.split()) for line in f)
        s.say(f"    {split:<6} {count_lines(path):>7} reviews {tokens:>11} tokens\n")
    s.classification_done("--criterion sentence_prediction --shorten-method truncate "
                          "--arch localness_classifier_tiny ...")


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-imdb.sh", usage, src="input0", tgt="label", bpe_tokens=0, joined=False, option=option,
                    dev_size="2500", seed="1", dev_split="movie", cased=False)
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
