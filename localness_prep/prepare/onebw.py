"""One Billion Word (``data-prep/prepare-1bw.sh``; Chelba et al. 2013; Nguyen et al. 2020, Sec. 5.4 / Table 6)
from the released 1-billion-word-language-modeling-benchmark-r13output layout, already tokenised: train = the
99 training shards news.en-000{01..99}-of-00100, valid = held-out shard 00001, test = held-out shard 00000 (the
benchmark's test set); a word vocabulary of 32,000 entries, the most frequent words of train (Nguyen et al.
2020 Sec. 5.4: "a vocabulary of 32,000 words"; --threshold 3 gives the benchmark's own 793,471 words instead);
fairseq-preprocess --only-source for the language_modeling task -> OUT/data-bin. Where each choice comes
from: :mod:`localness_prep.lm_corpus`."""
from __future__ import annotations

import sys
from typing import List, Optional, Sequence

from .. import lm_corpus
from ..script import Script, is_count, is_int, run

URL = "http://www.statmt.org/lm-benchmark/1-billion-word-language-modeling-benchmark-r13output.tar.gz"

USAGE = """\
Usage: bash $SCRIPT_NAME --raw-dir DIR --out DIR [--max-train-shards N] [--vocab-size N | --threshold N] [--force] [--workers N]

Binarises One Billion Word for fairseq's language_modeling task. --raw-dir is the extracted
1-billion-word-language-modeling-benchmark-r13output folder (or its parent), from
$URL
(about 1.7 GB; the script does not download it).
Output: DIR/data-bin/{train,valid,test}.{bin,idx} + dict.txt, DIR/tok/{train,valid,test}.txt (the
text, one sentence a line; train is about 4 GB with all 99 shards).
  --raw-dir DIR           the 1BW folder (required)
  --out DIR               output directory (required)
  --max-train-shards N    train on shards 00001..N only (a partial run; the vocabulary comes from them) [$MAX_TRAIN_SHARDS]
  --vocab-size N          keep the N - 4 most frequent words of train, N entries with fairseq's 4 special symbols
                          (fairseq-preprocess --nwordssrc N; Nguyen et al. 2020 Sec. 5.4: 32,000) [$VOCAB_SIZE]
  --threshold N           instead keep every word seen at least N times in train (fairseq-preprocess
                          --thresholdsrc; 3 is the benchmark's own cut-off, 793,471 words)
  --workers N             fairseq-preprocess processes [1]
  --force                 rebuild even if DIR holds a finished run
"""

BOTH = "--threshold and --vocab-size choose the vocabulary two ways: give one"


def usage(s: Script) -> str:
    return s.fill(USAGE, URL=URL, MAX_TRAIN_SHARDS=s.max_train_shards, VOCAB_SIZE=s.vocab_size)


def option(s: Script, args: List[str]) -> int:
    flag = args[0]
    if flag not in ("--max-train-shards", "--threshold", "--vocab-size"):
        return 0
    s.need_value(args)
    value = args[1]
    if flag == "--max-train-shards":
        if not (is_int(value) and int(value) <= 99):
            s.die(f"--max-train-shards must be an integer from 1 to 99, got '{value}'")
        s.max_train_shards = value
    elif flag == "--threshold":
        if not is_count(value):
            s.die(f"--threshold must be a non-negative integer, got '{value}'")
        if s.vocab_given:
            s.die(BOTH)
        s.threshold = value
    else:
        if not (is_int(value) and int(value) > 4):
            s.die(f"--vocab-size must be an integer above 4 (fairseq's special symbols), got '{value}'")
        if s.threshold:
            s.die(BOTH)
        s.vocab_size, s.vocab_given = value, True
    return 2


def body(s: Script, argv: List[str]) -> None:
    s.parse_args(argv)
    # the training data's name in data-bin/prep-info.json: all 99 training shards, or the partial run
    s.corpus = "1bw" if int(s.max_train_shards) == 99 else f"1bw-shards-1-{s.max_train_shards}"
    if not s.raw_dir:
        s.die(f"--raw-dir DIR is required: the extracted 1-billion-word-language-modeling-benchmark-r13output\n"
              f"folder (from {URL})")
    s.require_modules("fairseq_cli")
    s.prepare_out_dir()

    s.step(f"Check the shards, write train ({s.max_train_shards} shard(s)), valid (held-out 00001), "
           "test (held-out 00000)")
    s.prep(lm_corpus, "onebw", s.raw_dir, s.tok, "--max-train-shards", s.max_train_shards)

    if s.threshold:
        s.step(f"Binarise (fairseq-preprocess --only-source --thresholdsrc {s.threshold})")
        s.lm_binarize("--thresholdsrc", s.threshold)
    else:
        s.step(f"Binarise (fairseq-preprocess --only-source --nwordssrc {s.vocab_size})")
        s.lm_binarize("--nwordssrc", s.vocab_size)

    s.step("Summary")
    s.lm_finish()


def main(argv: Optional[Sequence[str]] = None) -> int:
    script = Script("prepare-1bw.sh", usage, src="txt", tgt="txt", bpe_tokens=0, joined=False, option=option,
                    max_train_shards="99", vocab_size="32000", threshold="", vocab_given=False)
    return run(script, body, argv)


if __name__ == "__main__":
    sys.exit(main())
