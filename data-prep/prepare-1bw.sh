#!/usr/bin/env bash
# One Billion Word (Chelba et al. 2013; Nguyen et al. 2020, Sec. 5.4 / Table 6) from the released
# 1-billion-word-language-modeling-benchmark-r13output layout, already tokenised: train = the 99
# training shards news.en-000{01..99}-of-00100, valid = held-out shard 00001, test = held-out shard
# 00000 (the benchmark's test set); a word vocabulary of 32,000 entries, the most frequent words of train
# (Nguyen et al. 2020 Sec. 5.4: "a vocabulary of 32,000 words"; --threshold 3 gives the benchmark's own
# 793,471 words instead); fairseq-preprocess --only-source for the language_modeling task -> OUT/data-bin.
# Where each choice comes from: fairseq_localness/prep/lm_corpus.py.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=txt TGT=txt BPE_TOKENS=0 JOINED=0
MAX_TRAIN_SHARDS=99 VOCAB_SIZE=32000 THRESHOLD= VOCAB_GIVEN=
URL=http://www.statmt.org/lm-benchmark/1-billion-word-language-modeling-benchmark-r13output.tar.gz

usage() {
    cat <<EOF
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
EOF
}

script_option() {
    case $1 in
        --max-train-shards) need_value "$@"; is_int "$2" && (($2 <= 99)) \
                || die "--max-train-shards must be an integer from 1 to 99, got '$2'"
            MAX_TRAIN_SHARDS=$2; SHIFT=2 ;;
        --threshold) need_value "$@"; [[ $2 =~ ^[0-9]+$ ]] || die "--threshold must be a non-negative integer, got '$2'"
            [[ -z $VOCAB_GIVEN ]] || die "--threshold and --vocab-size choose the vocabulary two ways: give one"
            THRESHOLD=$2; SHIFT=2 ;;
        --vocab-size) need_value "$@"; is_int "$2" && (($2 > 4)) \
                || die "--vocab-size must be an integer above 4 (fairseq's special symbols), got '$2'"
            [[ -z $THRESHOLD ]] || die "--threshold and --vocab-size choose the vocabulary two ways: give one"
            VOCAB_SIZE=$2 VOCAB_GIVEN=1; SHIFT=2 ;;
    esac
}

parse_args "$@"
# the training data's name in data-bin/prep-info.json: all 99 training shards, or the partial run
((MAX_TRAIN_SHARDS == 99)) && CORPUS=1bw || CORPUS=1bw-shards-1-$MAX_TRAIN_SHARDS
[[ -n $RAW_DIR ]] || die "--raw-dir DIR is required: the extracted 1-billion-word-language-modeling-benchmark-r13output
folder (from $URL)"
require_modules fairseq_cli
prepare_out_dir

step "Check the shards, write train ($MAX_TRAIN_SHARDS shard(s)), valid (held-out 00001), test (held-out 00000)"
prep lm_corpus onebw "$RAW_DIR" "$TOK" --max-train-shards "$MAX_TRAIN_SHARDS"

if [[ -n $THRESHOLD ]]; then
    step "Binarise (fairseq-preprocess --only-source --thresholdsrc $THRESHOLD)"
    lm_binarize --thresholdsrc "$THRESHOLD"
else
    step "Binarise (fairseq-preprocess --only-source --nwordssrc $VOCAB_SIZE)"
    lm_binarize --nwordssrc "$VOCAB_SIZE"
fi

step "Summary"
lm_finish
