#!/usr/bin/env bash
# SST-2 (Socher et al. 2013), binary, in SentEval's files, for Nguyen et al. 2020 Table 5 (the paper says only
# "Stanford Sentiment Treebank (SST)"; binary SST-2 and this split are our reading, docs/tasks.md):
# train 67,349 phrases / valid = dev 872 / test 1,821 sentences, already tokenised; word vocabulary
# (no BPE); fairseq-preprocess --only-source into fairseq's sentence_prediction layout
# OUT/data-bin/{input0,label}/. Offline with --raw-dir (e.g. ../shared/data/sst2), ~1 min on one core.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=input0 TGT=label BPE_TOKENS=0 JOINED=0
COMMIT=84b5b4c1c1ca20b6af19fc78cae005a1818ec571
URL=https://raw.githubusercontent.com/PrincetonML/SIF/$COMMIT/data

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--force] [--workers N]

Prepares binary SST-2 from SentEval's files (sentence<TAB>label per line): train.tsv, dev.tsv,
test.tsv (or SentEval's names sentiment-train, sentiment-dev, sentiment-test) in --raw-dir, else
downloaded from $URL/sentiment-{train,dev,test}.
Output: DIR/data-bin/{input0,label}/{train,valid,test}.{bin,idx} + dict.txt (fairseq's
sentence_prediction task: fairseq-train DIR/data-bin --task sentence_prediction --num-classes 2 ...),
DIR/tok/{input0,label}/SPLIT.txt (the text).
  --raw-dir DIR  the SentEval files (the only way to run offline)
  --out DIR      output directory (required)
  --workers N    fairseq-preprocess processes [1]
  --force        rebuild even if DIR holds a finished run
EOF
}

parse_args "$@"
require_modules fairseq_cli
prepare_out_dir

step "Inputs"
if [[ -n $RAW_DIR ]]; then
    IN=$RAW_DIR
    note "reading SentEval SST-2 files from $IN"
else
    for split in train dev test; do need "sentiment-$split" "$URL/sentiment-$split"; done
    fetch_inputs
    IN=$ORIG
fi

step "Check the files, write input0/ and label/ text"
prep sst split "$IN" "$TOK"

classification_binarize

step "Summary"
for split in train valid test; do printf '    %-6s %7d examples\n' "$split" "$(wc -l < "$TOK/input0/$split.txt")"; done
printf '%s %s | %s\n' "$SCRIPT_NAME" "$(date '+%F %T')" "$QUOTED_ARGS" > "$OUT_DIR/.prep-done"
rm -f "$OUT_DIR/.prep-started"
printf '\nDone: %s\n  train: fairseq-train %s --user-dir %s --task sentence_prediction --num-classes 2 \\\n' \
    "$OUT_DIR" "$OUT_DIR/data-bin" "$REPO_DIR/fairseq_localness"
printf '           --criterion sentence_prediction --arch localness_classifier_tiny ...   (docs/tasks.md)\n'
