#!/usr/bin/env bash
# IWSLT14 German->English, following fairseq's examples/translation/prepare-iwslt14.sh:
# TED train.tags (metadata lines removed), Moses tokenisation, clean 1..175 tokens with
# ratio 1.5, lowercase; valid = every 23rd training pair; test = dev2010 + TEDX.dev2012 +
# tst2010-2012 (6750 pairs); joint BPE (10k merges); fairseq-preprocess --joined-dictionary.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=de TGT=en BPE_TOKENS=10000 JOINED=1 LOWERCASED=1
MAX_LEN=175 RATIO=1.5 VALID_EVERY=23
URL=http://dl.fbaipublicfiles.com/fairseq/data/iwslt14/de-en.tgz
TESTSETS=(IWSLT14.TED.dev2010 IWSLT14.TEDX.dev2012 IWSLT14.TED.tst2010 IWSLT14.TED.tst2011 IWSLT14.TED.tst2012)

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [options]

Prepares IWSLT14 De-En like fairseq's prepare-iwslt14.sh (tokenised, lowercased, joint BPE)
and binarises it into DIR/data-bin.
Input: de-en.tgz ($URL),
or its files de-en/train.tags.de-en.{de,en} and
de-en/IWSLT14.{TED.dev2010,TEDX.dev2012,TED.tst2010,TED.tst2011,TED.tst2012}.de-en.{de,en}.xml.

EOF
    common_usage
}

parse_args "$@"
require_modules sacremoses subword_nmt fairseq_cli
prepare_out_dir

step "Inputs"
members=(de-en/train.tags.de-en.$SRC de-en/train.tags.de-en.$TGT)
for t in "${TESTSETS[@]}"; do for l in $SRC $TGT; do members+=("de-en/$t.de-en.$l.xml"); done; done
need de-en.tgz "$URL" "${members[@]}"
fetch_inputs

step "Extract text from train.tags and the dev/test XML"
args=()
for l in $SRC $TGT; do args+=("$(input de-en/train.tags.de-en.$l)" "$RAWTXT/train.$l"); done
prep iwslt_xml train-tags "${args[@]}"
args=()
for t in "${TESTSETS[@]}"; do for l in $SRC $TGT; do args+=("$(input "de-en/$t.de-en.$l.xml")" "$TMP/$t.$l"); done; done
prep iwslt_xml segs "${args[@]}"
pairs=("$RAWTXT/train.$SRC" "$RAWTXT/train.$TGT")
for t in "${TESTSETS[@]}"; do pairs+=("$TMP/$t.$SRC" "$TMP/$t.$TGT"); done
check_parallel "${pairs[@]}"
for l in $SRC $TGT; do
    for t in "${TESTSETS[@]}"; do cat "$TMP/$t.$l"; done > "$RAWTXT/test.$l"
done
args=()  # the references as published (entities decoded), for sacreBLEU
for t in "${TESTSETS[@]}"; do args+=("$(input "de-en/$t.de-en.$TGT.xml")" "$TMP/$t.ref.$TGT"); done
prep iwslt_xml segs --exact "${args[@]}"
for t in "${TESTSETS[@]}"; do cat "$TMP/$t.ref.$TGT"; done > "$RAWTXT/test-ref.$TGT"

step "Tokenise (Moses) and lowercase"
prep tokenize tok --lowercase --workers "$WORKERS" \
    --job $SRC "$RAWTXT/train.$SRC" "$TMP/train.tok.$SRC" --job $TGT "$RAWTXT/train.$TGT" "$TMP/train.tok.$TGT" \
    --job $SRC "$RAWTXT/test.$SRC" "$TOK/test.$SRC" --job $TGT "$RAWTXT/test.$TGT" "$TOK/test.$TGT"

step "Clean training data ($MAX_LEN tokens max, ratio $RATIO) and split off valid (every ${VALID_EVERY}rd pair)"
prep clean --ratio $RATIO --min 1 --max $MAX_LEN "$TMP/train.tok" $SRC $TGT "$TMP/train.clean"
for l in $SRC $TGT; do split_every $VALID_EVERY "$TMP/train.clean.$l" "$TOK/train.$l" "$TOK/valid.$l"; done
check_parallel "$TOK/train.$SRC" "$TOK/train.$TGT" "$TOK/valid.$SRC" "$TOK/valid.$TGT" \
    "$TOK/test.$SRC" "$TOK/test.$TGT"

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
bpe_all "$TOK" "$OUT_DIR"

step "Binarise (fairseq-preprocess)"
binarize
finish
