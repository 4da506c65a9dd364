#!/usr/bin/env bash
# Multi30k Task 1 German->English (Elliott et al. 2016): the released lowercased, normalised,
# Moses-tokenised files (data/task1/tok), train 29,000 / valid = val 1,014 / test = test_2016_flickr
# 1,000 pairs; joint BPE (8k merges); fairseq-preprocess --joined-dictionary. Offline with
# --raw-dir (e.g. ../shared/data/multi30k/tok), ~1 min on one core.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=de TGT=en BPE_TOKENS=8000 JOINED=1 LOWERCASED=1 TEST_SET=test_2016_flickr RAW_REF_DIR=""
COMMIT=a3d2e0d26b56f3846f66a952536ffed4e401d05a
URL=https://raw.githubusercontent.com/multi30k/dataset/$COMMIT/data/task1/tok

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--src de|en|fr|cs] [--tgt ...] [--test NAME] [options]

Prepares Multi30k Task 1 ($SRC->$TGT by default) from the dataset's own tokenised files
{train,val,$TEST_SET}.lc.norm.tok.{$SRC,$TGT} (in --raw-dir, else downloaded from
$URL), with joint BPE, into DIR/data-bin.
  --src L / --tgt L  languages (default $SRC / $TGT)
  --test NAME        test set: test_2016_flickr (default), test_2017_flickr, test_2018_flickr,
                     test_2017_mscoco
  --raw-ref-dir DIR  the dataset's untokenised files (data/task1/raw, gunzipped: NAME.$TGT): the test
                     set's is copied to raw/test.$TGT, the reference of sacreBLEU and chrF (scored
                     case-insensitively, as the tokenised files are lowercased)

EOF
    common_usage
}

script_option() {
    case $1 in
        --src) need_value "$@"; SRC=$2; SHIFT=2 ;;
        --tgt) need_value "$@"; TGT=$2; SHIFT=2 ;;
        --test) need_value "$@"; TEST_SET=$2; SHIFT=2 ;;
        --raw-ref-dir) need_value "$@"; RAW_REF_DIR=$2; SHIFT=2 ;;
    esac
}

parse_args "$@"
[[ $SRC != "$TGT" ]] || die "--src and --tgt must differ, both are '$SRC'"
case $TEST_SET in
    test_2016_flickr|test_2017_flickr|test_2018_flickr|test_2017_mscoco) ;;
    *) die "--test must be test_2016_flickr, test_2017_flickr, test_2018_flickr or test_2017_mscoco, got '$TEST_SET'" ;;
esac
if [[ -n $RAW_REF_DIR && ! -f $RAW_REF_DIR/$TEST_SET.$TGT ]]; then
    die "--raw-ref-dir $RAW_REF_DIR has no $TEST_SET.$TGT (the untokenised test reference)"
fi
require_modules subword_nmt fairseq_cli
prepare_out_dir

step "Inputs"
for split in train val "$TEST_SET"; do
    for l in $SRC $TGT; do need "$split.lc.norm.tok.$l" "$URL/$split.lc.norm.tok.$l"; done
done
fetch_inputs

step "Check and select the splits (train, valid = val, test = $TEST_SET)"
# the files sit side by side (in --raw-dir or OUT/orig): select reads that directory
prep multi30k select --test "$TEST_SET" "$(dirname "$(input "train.lc.norm.tok.$SRC")")" "$TOK" $SRC $TGT

if [[ -n $RAW_REF_DIR ]]; then
    mkdir -p "$RAWTXT"
    prep checks parallel "$RAW_REF_DIR/$TEST_SET.$TGT" "$TOK/test.$TGT" >/dev/null
    cp "$RAW_REF_DIR/$TEST_SET.$TGT" "$RAWTXT/test.$TGT"
    note "raw reference for sacreBLEU: $RAW_REF_DIR/$TEST_SET.$TGT -> $RAWTXT/test.$TGT"
fi

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
bpe_all "$TOK" "$OUT_DIR"

step "Binarise (fairseq-preprocess)"
binarize
finish
