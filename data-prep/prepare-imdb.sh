#!/usr/bin/env bash
# IMDB sentiment (Maas et al. 2011; Nguyen et al. 2020, Sec. 5.3 / Table 5), binary, from the released
# aclImdb layout: train 25,000 / test 25,000 reviews; a class-balanced dev set of whole movies is held
# out of train (--dev-size, --seed, --dev-split: the paper states no dev set). <br /> tags removed, Moses-tokenised and
# lowercased like the SST-2 files (no escaping), word vocabulary (no BPE); fairseq-preprocess
# --only-source into fairseq's sentence_prediction layout OUT/data-bin/{input0,label}/.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=input0 TGT=label BPE_TOKENS=0 JOINED=0
URL=http://ai.stanford.edu/~amaas/data/sentiment/aclImdb_v1.tar.gz
DEV_SIZE=2500 SEED=1 DEV_SPLIT=movie CASED=0

usage() {
    cat <<EOF
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
EOF
}

script_option() {
    case $1 in
        --dev-size) need_value "$@"; is_int "$2" || die "--dev-size must be a positive integer, got '$2'"
            DEV_SIZE=$2; SHIFT=2 ;;
        --seed) need_value "$@"; [[ $2 =~ ^[0-9]+$ ]] || die "--seed must be a non-negative integer, got '$2'"
            SEED=$2; SHIFT=2 ;;
        --dev-split) need_value "$@"; [[ $2 == movie || $2 == review ]] \
                || die "--dev-split must be movie or review, got '$2'"; DEV_SPLIT=$2; SHIFT=2 ;;
        --cased) CASED=1; SHIFT=1 ;;
    esac
}

parse_args "$@"
require_modules fairseq_cli sacremoses
prepare_out_dir

step "Inputs"
if [[ -n $RAW_DIR && -d $RAW_DIR/train && -d $RAW_DIR/test ]]; then IN=$RAW_DIR
elif [[ -n $RAW_DIR && -d $RAW_DIR/aclImdb ]]; then IN=$RAW_DIR/aclImdb
else
    archive=${RAW_DIR:+$RAW_DIR/aclImdb_v1.tar.gz}
    if [[ -z $archive ]]; then
        archive=$ORIG/aclImdb_v1.tar.gz
        mkdir -p "$ORIG"
        [[ -f $archive ]] || download "$URL" "$archive" || die "could not download $URL (no network?).
Download it yourself, extract it, and rerun with --raw-dir PATH/aclImdb"
    fi
    [[ -f $archive ]] || die "--raw-dir $RAW_DIR holds neither the aclImdb layout (train/ and test/), nor aclImdb/,
nor aclImdb_v1.tar.gz (from $URL)"
    note "extracting train/ and test/ of $archive (unsup/ left out)"
    mkdir -p "$ORIG"
    tar -xzf "$archive" -C "$ORIG" --wildcards 'aclImdb/train/pos/*' 'aclImdb/train/neg/*' \
        'aclImdb/test/pos/*' 'aclImdb/test/neg/*' 'aclImdb/train/urls_*.txt' || die "could not extract $archive"
    IN=$ORIG/aclImdb
fi
note "reading aclImdb from $IN"

step "Check the reviews, hold out the dev set (whole ${DEV_SPLIT}s), write input0/ and label/ text"
prep imdb split "$IN" "$RAWTXT" --dev-size "$DEV_SIZE" --seed "$SEED" --dev-split "$DEV_SPLIT"

step "Tokenise (Moses, no escaping$( ((CASED)) || echo ', lowercased'))"
jobs=() tok_flags=(--no-escape)
((CASED)) || tok_flags+=(--lowercase)
mkdir -p "$TOK/input0" "$TOK/label"
for split in train valid test; do
    jobs+=(--job en "$RAWTXT/input0/$split.txt" "$TOK/input0/$split.txt")
    cp "$RAWTXT/label/$split.txt" "$TOK/label/$split.txt"
done
prep tokenize tok "${tok_flags[@]}" --workers "$WORKERS" "${jobs[@]}"

classification_binarize

step "Summary"
for split in train valid test; do
    printf '    %-6s %7d reviews %11d tokens\n' "$split" "$(wc -l < "$TOK/input0/$split.txt")" \
        "$(wc -w < "$TOK/input0/$split.txt")"
done
printf '%s %s | %s\n' "$SCRIPT_NAME" "$(date '+%F %T')" "$QUOTED_ARGS" > "$OUT_DIR/.prep-done"
rm -f "$OUT_DIR/.prep-started"
printf '\nDone: %s\n  train: fairseq-train %s --user-dir %s --task sentence_prediction --num-classes 2 \\\n' \
    "$OUT_DIR" "$OUT_DIR/data-bin" "$REPO_DIR/fairseq_localness"
printf '           --criterion sentence_prediction --shorten-method truncate --arch localness_classifier_tiny ...   (docs/tasks.md)\n'
