# shellcheck shell=bash
# The steps shared by data-prep/prepare-cnndm.sh and data-prep/prepare-gigaword.sh (Fan et al. 2021's
# summarization data, docs/summarization.md); source it after lib.sh with DATASET set (cnndm or gigaword).

SRC=source TGT=target BERT_VOCAB=""

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --raw-dir DIR --bert-vocab FILE --out DIR [--force] [--workers N]

  --raw-dir DIR      train.source train.target val.source val.target test.source test.target
                     (UTF-8, line-aligned); never downloaded
  --bert-vocab FILE  bert-base-uncased's vocab.txt (30,522 WordPiece entries; the authors' tokeniser,
                     through MASS): a download you make yourself, e.g. from the BERT release
  --out DIR          output directory (required)
  --workers N        tokeniser and fairseq-preprocess processes [1]
  --force            rebuild even if DIR holds a finished run
Output: DIR/data-bin (train/valid/test, dict.source.txt = dict.target.txt = the BERT vocabulary),
DIR/{train,valid,test}.{source,target} (WordPiece text), DIR/raw/test.{source,target} (the test text as
given). Train / generate / score: docs/summarization.md.
EOF
}

script_option() {
    case $1 in
        --bert-vocab) need_value "$@"; BERT_VOCAB=$2; SHIFT=2 ;;
    esac
}

parse_args "$@"
[[ -n $RAW_DIR ]] || die "--raw-dir DIR is required: $DATASET is never downloaded by this script (see --help)"
[[ -n $BERT_VOCAB ]] || die "--bert-vocab FILE is required (bert-base-uncased's vocab.txt; see --help)"
[[ -f $BERT_VOCAB ]] || die "--bert-vocab '$BERT_VOCAB' is not a file"
require_modules fairseq_cli
step "Check the files in $RAW_DIR"
prep summarization check "$RAW_DIR"
prepare_out_dir

step "BERT WordPiece (uncased) tokenisation"
prep summarization prepare "$RAW_DIR" "$BERT_VOCAB" "$OUT_DIR" --workers "$WORKERS"

step "Binarise (fairseq-preprocess, the BERT vocabulary as the one dictionary)"
quiet "$TMP/preprocess.log" "$PY" -m fairseq_cli.preprocess --source-lang "$SRC" --target-lang "$TGT" \
    --trainpref "$OUT_DIR/train" --validpref "$OUT_DIR/valid" --testpref "$OUT_DIR/test" \
    --destdir "$OUT_DIR/data-bin" --srcdict "$OUT_DIR/dict.txt" --tgtdict "$OUT_DIR/dict.txt" --workers "$WORKERS"
rm -f "$OUT_DIR/dict.txt"

step "Summary"
prep checks report "$OUT_DIR" "$SRC" "$TGT"
printf '%s %s | %s\n' "$SCRIPT_NAME" "$(date '+%F %T')" "$QUOTED_ARGS" > "$OUT_DIR/.prep-done"
rm -f "$OUT_DIR/.prep-started"
printf '\nDone: %s\n  train: fairseq-train %s --user-dir %s --arch transformer_dman_summarization \\\n' \
    "$OUT_DIR" "$OUT_DIR/data-bin" "$REPO_DIR/fairseq_localness"
printf '             $(python -m fairseq_localness.summarization.settings train %s)   (docs/summarization.md)\n' \
    "$DATASET"
