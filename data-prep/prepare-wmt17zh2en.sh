#!/usr/bin/env bash
# WMT17 Chinese->English as in Yang et al. (2018): Chinese segmented with jieba, English
# Moses-tokenised, training pairs of at most 50 tokens, newsdev2017 valid, newstest2017 test,
# BPE with 32k merges (separate per language by default).
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=zh TGT=en BPE_TOKENS=32000 JOINED=0
MAX_LEN=50 RATIO=9
EXTRA=()
WMT17=http://data.statmt.org/wmt17/translation-task

script_option() {
    case $1 in
        --extra-corpus) need_value "$@"; EXTRA+=("$2"); SHIFT=2 ;;
        --max-len) need_value "$@"; is_int "$2" || die "--max-len must be a positive integer"; MAX_LEN=$2 SHIFT=2 ;;
    esac
}

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--extra-corpus PREFIX ...] [options]

Prepares WMT17 Zh-En (jieba + Moses, max length $MAX_LEN, newsdev2017 / newstest2017) and
binarises it into DIR/data-bin.
Inputs (archive, or its files extracted with the same relative paths):
  training-parallel-nc-v12.tgz  training/news-commentary-v12.zh-en.{zh,en}
  dev.tgz                       dev/newsdev2017-zhen-{src.zh,ref.en}.sgm
  test.tgz                      test/newstest2017-zhen-{src.zh,ref.en}.sgm
(from $WMT17/).

Script options:
  --extra-corpus PREFIX  add PREFIX.zh / PREFIX.en (plain, line-aligned text) to the training
                         data; repeatable. Yang et al. (2018) used all WMT17 Zh-En data
                         (20.6M pairs): besides News Commentary that is the UN Parallel Corpus
                         v1.0 and the CWMT corpora, which need registration -- extract them and
                         pass each with --extra-corpus.
  --max-len N            drop training pairs with a side longer than N tokens [$MAX_LEN]

EOF
    common_usage
}

parse_args "$@"
require_modules sacremoses jieba subword_nmt fairseq_cli
prepare_out_dir

step "Inputs"
need training-parallel-nc-v12.tgz "$WMT17/training-parallel-nc-v12.tgz" training/news-commentary-v12.zh-en.{zh,en}
need dev.tgz "$WMT17/dev.tgz" dev/newsdev2017-zhen-src.zh.sgm dev/newsdev2017-zhen-ref.en.sgm
need test.tgz "$WMT17/test.tgz" test/newstest2017-zhen-src.zh.sgm test/newstest2017-zhen-ref.en.sgm
fetch_inputs
TRAIN_PAIRS=("$(input training/news-commentary-v12.zh-en.$SRC)" "$(input training/news-commentary-v12.zh-en.$TGT)")
for prefix in "${EXTRA[@]}"; do
    [[ -f $prefix.$SRC && -f $prefix.$TGT ]] || die "--extra-corpus $prefix: expected $prefix.$SRC and $prefix.$TGT"
    TRAIN_PAIRS+=("$prefix.$SRC" "$prefix.$TGT")
done
((${#EXTRA[@]})) || note "training on News Commentary v12 only; see --extra-corpus for the full WMT17 data"

step "Extract text: training corpora, newsdev2017 and newstest2017 SGML"
check_parallel "${TRAIN_PAIRS[@]}"
for i in $(seq 0 2 $((${#TRAIN_PAIRS[@]} - 1))); do cat "${TRAIN_PAIRS[i]}"; done > "$RAWTXT/train.$SRC"
for i in $(seq 1 2 $((${#TRAIN_PAIRS[@]} - 1))); do cat "${TRAIN_PAIRS[i]}"; done > "$RAWTXT/train.$TGT"
prep iwslt_xml segs \
    "$(input dev/newsdev2017-zhen-src.zh.sgm)" "$RAWTXT/valid.$SRC" "$(input dev/newsdev2017-zhen-ref.en.sgm)" "$RAWTXT/valid.$TGT" \
    "$(input test/newstest2017-zhen-src.zh.sgm)" "$RAWTXT/test.$SRC" "$(input test/newstest2017-zhen-ref.en.sgm)" "$RAWTXT/test.$TGT"
prep iwslt_xml segs --exact "$(input test/newstest2017-zhen-ref.en.sgm)" "$RAWTXT/test-ref.$TGT"
check_parallel "$RAWTXT/valid.$SRC" "$RAWTXT/valid.$TGT" "$RAWTXT/test.$SRC" "$RAWTXT/test.$TGT"

step "Tokenise (jieba for zh, Moses for en)"
jobs=()
for split in train valid test; do
    for l in $SRC $TGT; do
        dst=$TOK/$split.$l; [[ $split == train ]] && dst=$TMP/train.tok.$l
        jobs+=(--job "$l" "$RAWTXT/$split.$l" "$dst")
    done
done
prep tokenize tok --workers "$WORKERS" "${jobs[@]}"

step "Clean training data (1..$MAX_LEN tokens, ratio $RATIO)"
prep clean --ratio $RATIO --min 1 --max "$MAX_LEN" "$TMP/train.tok" $SRC $TGT "$TOK/train"

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
bpe_all "$TOK" "$OUT_DIR"

step "Binarise (fairseq-preprocess)"
binarize
finish
