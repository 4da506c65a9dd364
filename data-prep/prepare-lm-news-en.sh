#!/usr/bin/env bash
# A small news-English language-modelling corpus, a stand-in for One Billion Word built offline from
# the English sides of the WMT sets in ../shared/data (newstest 2012-2017, newsdev2017, WMT22 general
# test, WMT14 train10k, Europarl 20k): detokenised where they come tokenised, Moses punctuation
# normalisation + tokenisation without escaping, cased (as 1BW); duplicates removed; shuffled; the
# held-out sentences never occur in train. Word vocabulary (words seen >= 3 times in train, 1BW's
# cut-off); fairseq-preprocess --only-source for the language_modeling task -> OUT/data-bin.
# The source list and the rules: fairseq_localness/prep/lm_corpus.py. Nothing is copied into the repository.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=txt TGT=txt BPE_TOKENS=0 JOINED=0
SHARED_DATA=$REPO_DIR/../shared/data VALID_SIZE=2000 TEST_SIZE=2000 SEED=1 THRESHOLD=3

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --out DIR [--shared-data DIR] [--valid-size N] [--test-size N] [--seed N]
                                [--threshold N] [--force] [--workers N]

Builds the news-English stand-in for One Billion Word and binarises it for fairseq's
language_modeling task (about 51k unique sentences, 1.3M words; ~30 s on one core).
Output: DIR/data-bin/{train,valid,test}.{bin,idx} + dict.txt, DIR/tok/{train,valid,test}.txt.
  --shared-data DIR   the shared corpora (see its README.md) [REPO/../shared/data]
  --out DIR           output directory (required)
  --valid-size N      sentences held out for valid [$VALID_SIZE]
  --test-size N       sentences held out for test [$TEST_SIZE]
  --seed N            seed of the shuffle that picks them [$SEED]
  --threshold N       keep the words seen at least N times in train [$THRESHOLD]
  --workers N         fairseq-preprocess processes [1]
  --force             rebuild even if DIR holds a finished run
EOF
}

script_option() {
    case $1 in
        --shared-data) need_value "$@"; SHARED_DATA=$2; SHIFT=2 ;;
        --valid-size) need_value "$@"; is_int "$2" || die "--valid-size must be a positive integer, got '$2'"
            VALID_SIZE=$2; SHIFT=2 ;;
        --test-size) need_value "$@"; is_int "$2" || die "--test-size must be a positive integer, got '$2'"
            TEST_SIZE=$2; SHIFT=2 ;;
        --seed) need_value "$@"; [[ $2 =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer, got '$2'"
            SEED=$2; SHIFT=2 ;;
        --threshold) need_value "$@"; [[ $2 =~ ^[0-9]+$ ]] || die "--threshold must be a non-negative integer, got '$2'"
            THRESHOLD=$2; SHIFT=2 ;;
    esac
}

parse_args "$@"
[[ -z $RAW_DIR ]] || die "$SCRIPT_NAME takes --shared-data DIR, not --raw-dir"
[[ -d $SHARED_DATA ]] || die "--shared-data '$SHARED_DATA' is not a directory (the shared corpora, ../shared/data)"
SHARED_DATA=$(realpath "$SHARED_DATA")
require_modules fairseq_cli sacremoses
prepare_out_dir

step "Read, normalise, tokenise, deduplicate and split the English sides of $SHARED_DATA"
prep lm_corpus standin "$SHARED_DATA" "$TOK" --valid-size "$VALID_SIZE" --test-size "$TEST_SIZE" --seed "$SEED"

step "Binarise (fairseq-preprocess --only-source --thresholdsrc $THRESHOLD)"
lm_binarize --thresholdsrc "$THRESHOLD"

step "Summary"
lm_finish
