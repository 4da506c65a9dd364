#!/usr/bin/env bash
# WMT14 English->French (~36M pairs), following fairseq's examples/translation/prepare-wmt14en2fr.sh, the
# data of Nguyen et al. (2020) Table 1 (En-Fr column; Sec. 5.1): Europarl v7 + CommonCrawl + UN +
# News Commentary v9 + Giga-FrEn, Moses punctuation normalisation + non-printing-character removal +
# aggressive-hyphen tokenisation, a development set of every 1333rd training pair ("a random split from
# the training set"), joint BPE with 40,000 merges (shared vocabulary), BPE'd training and development
# pairs cleaned to 1..250 tokens with ratio 1.5, test = newstest2014 (full, 3003 sentences).
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=en TGT=fr BPE_TOKENS=40000 JOINED=1
MAX_LEN=250 RATIO=1.5 VALID_EVERY=1333
WMT13=http://statmt.org/wmt13 WMT14=http://statmt.org/wmt14
CORPORA=(training/europarl-v7.fr-en commoncrawl.fr-en un/undoc.2000.fr-en training/news-commentary-v9.fr-en
         giga-fren.release2.fixed)

script_option() {
    case $1 in
        --valid-every) need_value "$@"; is_int "$2" || die "--valid-every must be a positive integer, got '$2'"
            VALID_EVERY=$2 SHIFT=2 ;;
    esac
}

usage() {
    cat <<EOF2
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [options]

Prepares WMT14 En-Fr like fairseq's prepare-wmt14en2fr.sh (development set: every $VALID_EVERY-th training
pair; test: newstest2014, 3003 sentences) and binarises it into DIR/data-bin.
Inputs (archive, or its files extracted with the same relative paths):
  training-parallel-europarl-v7.tgz   training/europarl-v7.fr-en.{en,fr}
  training-parallel-commoncrawl.tgz   commoncrawl.fr-en.{en,fr}
  training-parallel-un.tgz            un/undoc.2000.fr-en.{en,fr}
  training-parallel-nc-v9.tgz         training/news-commentary-v9.fr-en.{en,fr}
  training-giga-fren.tar              giga-fren.release2.fixed.{en,fr}.gz
  test-full.tgz                       test-full/newstest2014-fren-{src.en,ref.fr}.sgm
(from $WMT13/, $WMT14/ and http://statmt.org/wmt10/). About 36M training pairs: tokenising and BPE
take hours; use --workers.

Script options:
  --valid-every N   every N-th training pair goes to the development set [$VALID_EVERY, fairseq's]

EOF2
    common_usage
}

parse_args "$@"
require_modules sacremoses subword_nmt fairseq_cli
prepare_out_dir

step "Inputs"
need training-parallel-europarl-v7.tgz "$WMT13/training-parallel-europarl-v7.tgz" training/europarl-v7.fr-en.{en,fr}
need training-parallel-commoncrawl.tgz "$WMT13/training-parallel-commoncrawl.tgz" commoncrawl.fr-en.{en,fr}
need training-parallel-un.tgz "$WMT13/training-parallel-un.tgz" un/undoc.2000.fr-en.{en,fr}
need training-parallel-nc-v9.tgz "$WMT14/training-parallel-nc-v9.tgz" training/news-commentary-v9.fr-en.{en,fr}
need training-giga-fren.tar http://statmt.org/wmt10/training-giga-fren.tar giga-fren.release2.fixed.{en,fr}.gz
need test-full.tgz "$WMT14/test-full.tgz" test-full/newstest2014-fren-src.en.sgm test-full/newstest2014-fren-ref.fr.sgm
fetch_inputs

step "Extract text: concatenate the training corpora, newstest2014 SGML"
for l in $SRC $TGT; do
    gzip -dc "$(input giga-fren.release2.fixed.$l.gz)" > "$TMP/giga-fren.$l"
done
pairs=()
for c in "${CORPORA[@]}"; do
    if [[ $c == giga-fren.* ]]; then pairs+=("$TMP/giga-fren.$SRC" "$TMP/giga-fren.$TGT")
    else pairs+=("$(input "$c.$SRC")" "$(input "$c.$TGT")")
    fi
done
check_parallel "${pairs[@]}"
for i in 0 1; do
    l=$([[ $i == 0 ]] && echo $SRC || echo $TGT)
    for j in $(seq $i 2 $((${#pairs[@]} - 1))); do cat "${pairs[j]}"; done > "$RAWTXT/train.$l"
done
rm -f "$TMP"/giga-fren.*
prep iwslt_xml segs "$(input test-full/newstest2014-fren-src.$SRC.sgm)" "$RAWTXT/test.$SRC" \
    "$(input test-full/newstest2014-fren-ref.$TGT.sgm)" "$RAWTXT/test.$TGT"
prep iwslt_xml segs --exact "$(input test-full/newstest2014-fren-ref.$TGT.sgm)" "$RAWTXT/test-ref.$TGT"
check_parallel "$RAWTXT/train.$SRC" "$RAWTXT/train.$TGT" "$RAWTXT/test.$SRC" "$RAWTXT/test.$TGT"

step "Tokenise (Moses -a; training data punctuation-normalised first)"
prep tokenize tok --aggressive-dash --normalize-punct --remove-non-printing --workers "$WORKERS" \
    --job $SRC "$RAWTXT/train.$SRC" "$TMP/train.tok.$SRC" --job $TGT "$RAWTXT/train.$TGT" "$TMP/train.tok.$TGT"
prep tokenize tok --aggressive-dash --workers "$WORKERS" \
    --job $SRC "$RAWTXT/test.$SRC" "$TOK/test.$SRC" --job $TGT "$RAWTXT/test.$TGT" "$TOK/test.$TGT"

step "Development set: every ${VALID_EVERY}th training pair"
for l in $SRC $TGT; do
    split_every "$VALID_EVERY" "$TMP/train.tok.$l" "$TOK/train.$l" "$TOK/valid.$l"
    rm -f "$TMP/train.tok.$l"
done
check_parallel "$TOK/train.$SRC" "$TOK/train.$TGT" "$TOK/valid.$SRC" "$TOK/valid.$TGT"

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
mkdir -p "$TMP/bpe"
bpe_all "$TOK" "$TMP/bpe"

step "Clean BPE'd training and development data (1..$MAX_LEN tokens, ratio $RATIO)"
for split in train valid; do
    prep clean --ratio $RATIO --min 1 --max $MAX_LEN "$TMP/bpe/$split" $SRC $TGT "$OUT_DIR/$split"
done
for l in $SRC $TGT; do mv "$TMP/bpe/test.$l" "$OUT_DIR/"; done

step "Binarise (fairseq-preprocess)"
binarize
finish
