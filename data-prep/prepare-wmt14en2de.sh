#!/usr/bin/env bash
# WMT14 English->German (~4.5M pairs), following fairseq's examples/translation/prepare-wmt14en2de.sh:
# Europarl v7 + CommonCrawl + News Commentary (v12; v9 with --icml17), Moses punctuation
# normalisation + non-printing-character removal + aggressive-hyphen tokenisation, joint BPE,
# clean 1..250 BPE tokens with ratio 1.5. Valid = newstest2013, test = newstest2014 (full, 3003).
# --stanford starts from the Stanford/Google pre-tokenised release instead.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=en TGT=de BPE_TOKENS=32000 JOINED=1 COMPOUND_SPLIT=1
MAX_LEN=250 RATIO=1.5 STANFORD=0 ICML17=0
NC=news-commentary-v12 NC_ARCHIVE=training-parallel-nc-v12.tgz
NC_URL=http://data.statmt.org/wmt17/translation-task/training-parallel-nc-v12.tgz
STANFORD_URL=https://nlp.stanford.edu/projects/nmt/data/wmt14.en-de

script_option() {
    case $1 in
        --stanford) STANFORD=1 SHIFT=1 ;;
        --icml17) ICML17=1 SHIFT=1 ;;
    esac
}

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--stanford | --icml17] [options]

Prepares WMT14 En-De like fairseq's prepare-wmt14en2de.sh, with newstest2013 as valid and
newstest2014 (full, 3003 sentences) as test, and binarises it into DIR/data-bin.
Inputs (archive, or its files extracted with the same relative paths):
  training-parallel-europarl-v7.tgz   training/europarl-v7.de-en.{de,en}
  training-parallel-commoncrawl.tgz   commoncrawl.de-en.{de,en}
  training-parallel-nc-v12.tgz        training/news-commentary-v12.de-en.{de,en}
  dev.tgz                             dev/newstest2013.{de,en}
  test-full.tgz                       test-full/newstest2014-deen-{src.en,ref.de}.sgm

Script options:
  --icml17     News Commentary v9 instead of v12 (training-parallel-nc-v9.tgz), the data of
               fairseq's --icml17 / Vaswani et al. (2017)
  --stanford   use the Stanford NMT pre-tokenised WMT14 release ($STANFORD_URL):
               train.{en,de}, newstest2013.{en,de}, newstest2014.{en,de} (filtered, 2737). It
               is tokenised already: only "##AT##-##AT##" is mapped to Moses' "@-@" (so
               detokenisation restores the hyphen); BPE, cleaning and binarisation as above.
               No raw references: for sacreBLEU use 'sacrebleu -t wmt14 -l en-de --echo ref'.

EOF
    common_usage
}

parse_args "$@"
# the training data's name in data-bin/prep-info.json
if ((STANFORD)); then CORPUS=wmt14-en-de-stanford; elif ((ICML17)); then CORPUS=wmt14-en-de-nc-v9; else CORPUS=wmt14-en-de; fi
((STANFORD && ICML17)) && die "--stanford and --icml17 exclude each other"
if ((ICML17)); then
    NC=news-commentary-v9 NC_ARCHIVE=training-parallel-nc-v9.tgz
    NC_URL=http://statmt.org/wmt14/training-parallel-nc-v9.tgz
fi
require_modules sacremoses subword_nmt fairseq_cli
prepare_out_dir

step "Inputs"
if ((STANFORD)); then
    for f in train newstest2013 newstest2014; do
        for l in $SRC $TGT; do need "$f.$l" "$STANFORD_URL/$f.$l"; done
    done
else
    CORPORA=(training/europarl-v7.de-en commoncrawl.de-en "training/$NC.de-en")
    need training-parallel-europarl-v7.tgz http://statmt.org/wmt13/training-parallel-europarl-v7.tgz \
        training/europarl-v7.de-en.{de,en}
    need training-parallel-commoncrawl.tgz http://statmt.org/wmt13/training-parallel-commoncrawl.tgz \
        commoncrawl.de-en.{de,en}
    need "$NC_ARCHIVE" "$NC_URL" "training/$NC.de-en".{de,en}
    need dev.tgz http://data.statmt.org/wmt17/translation-task/dev.tgz dev/newstest2013.{de,en}
    need test-full.tgz http://statmt.org/wmt14/test-full.tgz \
        test-full/newstest2014-deen-src.$SRC.sgm test-full/newstest2014-deen-ref.$TGT.sgm
fi
fetch_inputs

if ((STANFORD)); then
    step "Stanford release: check, map ##AT##-##AT## to @-@"
    check_parallel "$(input train.$SRC)" "$(input train.$TGT)" "$(input newstest2013.$SRC)" \
        "$(input newstest2013.$TGT)" "$(input newstest2014.$SRC)" "$(input newstest2014.$TGT)"
    for l in $SRC $TGT; do
        for pair in train:train valid:newstest2013 test:newstest2014; do
            sed 's/ ##AT##-##AT## / @-@ /g; s/##AT##-##AT##/@-@/g' "$(input "${pair#*:}.$l")" > "$TOK/${pair%%:*}.$l"
        done
    done
else
    step "Extract text: concatenate training corpora, newstest2013, newstest2014 SGML"
    pairs=()
    for c in "${CORPORA[@]}"; do pairs+=("$(input "$c.$SRC")" "$(input "$c.$TGT")"); done
    pairs+=("$(input dev/newstest2013.$SRC)" "$(input dev/newstest2013.$TGT)")
    check_parallel "${pairs[@]}"
    for l in $SRC $TGT; do
        for c in "${CORPORA[@]}"; do cat "$(input "$c.$l")"; done > "$RAWTXT/train.$l"
        cp "$(input dev/newstest2013.$l)" "$RAWTXT/valid.$l"
    done
    prep iwslt_xml segs "$(input test-full/newstest2014-deen-src.$SRC.sgm)" "$RAWTXT/test.$SRC" \
        "$(input test-full/newstest2014-deen-ref.$TGT.sgm)" "$RAWTXT/test.$TGT"
    prep iwslt_xml segs --exact "$(input test-full/newstest2014-deen-ref.$TGT.sgm)" "$RAWTXT/test-ref.$TGT"
    check_parallel "$RAWTXT/train.$SRC" "$RAWTXT/train.$TGT" "$RAWTXT/test.$SRC" "$RAWTXT/test.$TGT"

    step "Tokenise (Moses -a; training data punctuation-normalised first)"
    prep tokenize tok --aggressive-dash --normalize-punct --remove-non-printing --workers "$WORKERS" \
        --job $SRC "$RAWTXT/train.$SRC" "$TOK/train.$SRC" --job $TGT "$RAWTXT/train.$TGT" "$TOK/train.$TGT"
    prep tokenize tok --aggressive-dash --workers "$WORKERS" \
        --job $SRC "$RAWTXT/valid.$SRC" "$TOK/valid.$SRC" --job $TGT "$RAWTXT/valid.$TGT" "$TOK/valid.$TGT" \
        --job $SRC "$RAWTXT/test.$SRC" "$TOK/test.$SRC" --job $TGT "$RAWTXT/test.$TGT" "$TOK/test.$TGT"
fi

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
mkdir -p "$TMP/bpe"
bpe_all "$TOK" "$TMP/bpe"

step "Clean BPE'd training data (1..$MAX_LEN tokens, ratio $RATIO)"
prep clean --ratio $RATIO --min 1 --max $MAX_LEN "$TMP/bpe/train" $SRC $TGT "$OUT_DIR/train"
for l in $SRC $TGT; do mv "$TMP/bpe/valid.$l" "$TMP/bpe/test.$l" "$OUT_DIR/"; done

step "Binarise (fairseq-preprocess)"
binarize
finish
