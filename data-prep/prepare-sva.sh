#!/usr/bin/env bash
# Subject-verb agreement, number prediction (Linzen et al. 2016; Nguyen et al. 2020, Sec. 5.3 /
# Table 5 "SVA"), from Linzen's released agr_50_mostcommon_10K.tsv: the sentence up to the verb ->
# singular (VBZ) / plural (VBP). Split: Linzen's 9% / 1% / 90% (--split linzen, default) or
# tensor2tensor's SvaNumberPrediction (--split t2t); see fairseq_localness/prep/sva.py. The text is
# already tokenised and lowercased: word vocabulary, fairseq-preprocess --only-source into fairseq's
# sentence_prediction layout OUT/data-bin/{input0,label}/.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=input0 TGT=label BPE_TOKENS=0 JOINED=0
SPLIT=linzen TEXT_COLUMN=sentence
LINZEN_URL=http://tallinzen.net/media/rnn_agreement/agr_50_mostcommon_10K.tsv.gz

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --raw-dir DIR --out DIR [--split linzen|t2t] [--text-column sentence|orig_sentence]
                         [--force] [--workers N]

Prepares Linzen et al. (2016)'s number-prediction task from agr_50_mostcommon_10K.tsv (or .tsv.gz,
as downloaded from $LINZEN_URL) in --raw-dir.
Output: DIR/data-bin/{input0,label}/{train,valid,test}.{bin,idx} + dict.txt (fairseq's
sentence_prediction task: fairseq-train DIR/data-bin --task sentence_prediction --num-classes 2 ...),
DIR/tok/{input0,label}/SPLIT.txt (the prefixes and their labels, singular or plural).
  --raw-dir DIR        the folder holding Linzen's tsv (required: the file is not downloaded)
  --out DIR            output directory (required)
  --split NAME         linzen: Linzen's split, sentences of <= 50 words, 9% / 1% / 90% [default];
                       t2t: tensor2tensor's, 9% / 1% / the rest with only attractors as test
  --text-column NAME   sentence: rare words replaced by their part of speech, as Linzen trained
                       [default]; orig_sentence: every word
  --workers N          fairseq-preprocess processes [1]
  --force              rebuild even if DIR holds a finished run
EOF
}

script_option() {
    case $1 in
        --split) need_value "$@"; [[ $2 == linzen || $2 == t2t ]] || die "--split must be linzen or t2t, got '$2'"
            SPLIT=$2; SHIFT=2 ;;
        --text-column) need_value "$@"; [[ $2 == sentence || $2 == orig_sentence ]] \
                || die "--text-column must be sentence or orig_sentence, got '$2'"
            TEXT_COLUMN=$2; SHIFT=2 ;;
    esac
}

parse_args "$@"
[[ -n $RAW_DIR ]] || die "--raw-dir DIR is required: the folder holding agr_50_mostcommon_10K.tsv (or .tsv.gz,
from $LINZEN_URL)"
require_modules fairseq_cli
prepare_out_dir

step "Check the tsv, write the prefixes and labels ($SPLIT split, column $TEXT_COLUMN)"
prep sva split "$RAW_DIR" "$TOK" --split "$SPLIT" --text-column "$TEXT_COLUMN"

classification_binarize

step "Summary"
for split in train valid test; do
    printf '    %-6s %8d examples (%d plural)\n' "$split" "$(wc -l < "$TOK/input0/$split.txt")" \
        "$(grep -c '^plural$' "$TOK/label/$split.txt" || true)"
done
printf '%s %s | %s\n' "$SCRIPT_NAME" "$(date '+%F %T')" "$QUOTED_ARGS" > "$OUT_DIR/.prep-done"
rm -f "$OUT_DIR/.prep-started"
printf '\nDone: %s\n  train: fairseq-train %s --user-dir %s --task sentence_prediction --num-classes 2 \\\n' \
    "$OUT_DIR" "$OUT_DIR/data-bin" "$REPO_DIR/fairseq_localness"
printf '           --criterion sentence_prediction --arch localness_classifier_tiny ...   (docs/tasks.md)\n'
