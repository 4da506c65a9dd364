#!/usr/bin/env bash
# WAT17 Japanese->English on ASPEC-JE as in Yang et al. (2019) Sec. 5 and Xu et al. (2019) Sec. 4, both
# following Morishita et al. (2017): the first two training sections (train-1.txt, train-2.txt; "2M
# sentence pairs"), dev.txt as valid, test.txt as test. Neither paper states a length limit, and neither
# release (baosongyang/Context-Aware-SAN, scewiner/Leveraging) has a data script: every training pair is
# kept by default (only pairs with an empty side are dropped, our choice); --max-len N filters (recorded
# as another corpus). Japanese is segmented with MeCab/UniDic-lite through fugashi (the papers used
# KyTea, whose model is not on PyPI), English Moses-tokenised; BPE with 32k merges (both papers).
# ASPEC is licensed: the script only reads the user's copy (--raw-dir).
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=ja TGT=en BPE_TOKENS=32000 JOINED=0
MAX_LEN=0 RATIO=9
ASPEC_URL=https://jipsti.jst.go.jp/aspec/
FILES=(train/train-1.txt train/train-2.txt dev/dev.txt test/test.txt)

script_option() {
    case $1 in
        --max-len) need_value "$@"; is_int "$2" || die "--max-len must be a positive integer"; MAX_LEN=$2 SHIFT=2 ;;
    esac
}

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --raw-dir ASPEC_DIR --out DIR [options]

Prepares WAT17 Ja-En (ASPEC-JE train-1 + train-2, dev, test) and binarises it into DIR/data-bin.
ASPEC is distributed under a licence agreement ($ASPEC_URL) and cannot be downloaded by
this script: --raw-dir must be your ASPEC-JE directory (or its parent), holding
  ${FILES[*]}
Lines are 'SCORE ||| DOC ||| SENT ||| JA ||| EN' (train) and 'DOC ||| SENT ||| JA ||| EN' (dev/test).

Script options:
  --max-len N   drop training pairs with a side longer than N tokens, or more than $RATIO times longer
                than the other side [default: keep every pair with two non-empty sides; Yang et al.
                2019 and Xu et al. 2019 state no limit]. Recorded as aspec-je-train-1-2-maxlenN, not
                the papers' corpus (aspec-je-train-1-2).

EOF
    common_usage
}

parse_args "$@"
[[ -n $RAW_DIR ]] || die "ASPEC-JE is licensed and cannot be downloaded automatically.
Request it at $ASPEC_URL, unpack it, and rerun with --raw-dir pointing to the ASPEC-JE directory
(the one holding ${FILES[*]})."
[[ -d $RAW_DIR/ASPEC-JE ]] && RAW_DIR=$RAW_DIR/ASPEC-JE
require_modules sacremoses fugashi unidic_lite subword_nmt fairseq_cli
CORPUS=aspec-je-train-1-2
((MAX_LEN == 0)) || CORPUS+=-maxlen$MAX_LEN
prepare_out_dir

step "Inputs"
for f in "${FILES[@]}"; do need "$f" ""; done
fetch_inputs

step "Extract Japanese and English columns"
prep aspec --job "$RAWTXT/train" "$(input train/train-1.txt)" --job "$RAWTXT/train" "$(input train/train-2.txt)" \
    --job "$RAWTXT/valid" "$(input dev/dev.txt)" --job "$RAWTXT/test" "$(input test/test.txt)"
check_parallel "$RAWTXT/train.$SRC" "$RAWTXT/train.$TGT" "$RAWTXT/valid.$SRC" "$RAWTXT/valid.$TGT" \
    "$RAWTXT/test.$SRC" "$RAWTXT/test.$TGT"

step "Tokenise (fugashi + UniDic-lite for ja, Moses for en)"
prep tokenize tok --workers "$WORKERS" \
    --job $SRC "$RAWTXT/train.$SRC" "$TMP/train.tok.$SRC" --job $TGT "$RAWTXT/train.$TGT" "$TMP/train.tok.$TGT" \
    --job $SRC "$RAWTXT/valid.$SRC" "$TOK/valid.$SRC" --job $TGT "$RAWTXT/valid.$TGT" "$TOK/valid.$TGT" \
    --job $SRC "$RAWTXT/test.$SRC" "$TOK/test.$SRC" --job $TGT "$RAWTXT/test.$TGT" "$TOK/test.$TGT"

if ((MAX_LEN)); then
    step "Clean training data (1..$MAX_LEN tokens, ratio $RATIO)"
    prep clean --ratio $RATIO --min 1 --max "$MAX_LEN" "$TMP/train.tok" $SRC $TGT "$TOK/train"
else
    step "Clean training data (pairs with an empty side only: the papers state no length limit)"
    prep clean --ratio inf --min 1 --max 1000000000 "$TMP/train.tok" $SRC $TGT "$TOK/train"
fi

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
bpe_all "$TOK" "$OUT_DIR"

step "Binarise (fairseq-preprocess)"
binarize
finish
