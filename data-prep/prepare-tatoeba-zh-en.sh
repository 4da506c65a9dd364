#!/usr/bin/env bash
# The whole manythings.org/Tatoeba cmn-eng corpus (29,155 Chinese-English pairs, CC BY 2.0 FR), split
# deterministically as data/sample-zh-en is (prep/sample.py): test 1,000 / valid 1,000 unique pairs,
# train = all other pairs; jieba for Chinese, Moses for English (cased), joint BPE (8k merges),
# fairseq-preprocess --joined-dictionary. Offline only (--raw-dir, e.g. ../shared/data/manythings_cmn_eng).
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=zh TGT=en BPE_TOKENS=8000 JOINED=1 LOWERCASED=0 N_VALID=1000 N_TEST=1000

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --raw-dir DIR --out DIR [options]

Prepares the whole manythings.org "cmn-eng" Tatoeba corpus (Chinese-English, CC BY 2.0 FR; the
authors of each pair are credited on its line of cmn-eng.attribution) for $SRC->$TGT into
DIR/data-bin. --raw-dir (required, no download) holds cmn-eng.{en,zh,attribution}, one pair a
line, e.g. ../shared/data/manythings_cmn_eng (29,155 pairs).
  splits (prep/sample.py, deterministic: pairs ranked by SHA-1): test $N_TEST and valid $N_VALID pairs
  taken only from pairs whose English and Chinese sentences are unique in the corpus (after
  lowercasing and removing punctuation), train = every other pair (27,155 with that copy).
  raw/{train,valid,test}.{zh,en,attribution} keep the raw text and the credits of each split;
  raw/test.en is the reference of sacreBLEU and chrF.
  Tokenisation: jieba for Chinese, Moses for English (cased); joint BPE and one joined dictionary.

EOF
    common_usage
}

parse_args "$@"
[[ -n $RAW_DIR ]] || die "--raw-dir DIR is required (this script works offline only).
Pass the directory with cmn-eng.{en,zh,attribution}, e.g. --raw-dir ../shared/data/manythings_cmn_eng (see --help)."
require_modules sacremoses jieba subword_nmt fairseq_cli
prepare_out_dir

step "Inputs ($RAW_DIR)"
for side in en zh attribution; do need "cmn-eng.$side" ""; done
fetch_inputs
check_parallel "$(input cmn-eng.zh)" "$(input cmn-eng.en)" "$(input cmn-eng.en)" "$(input cmn-eng.attribution)"

step "Split (test $N_TEST, valid $N_VALID unique pairs, train = the rest)"
pairs=$(awk "END { print NR }" "$(input cmn-eng.en)")   # a last line without newline counts too
prep sample --corpus "$RAW_DIR" --out "$RAWTXT" --train $((pairs - N_VALID - N_TEST)) --valid "$N_VALID" --test "$N_TEST" \
    | sed 's/^/    /'

step "Tokenise (jieba for zh, Moses for en)"
tokenize_splits

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
bpe_all "$TOK" "$OUT_DIR"

step "Binarise (fairseq-preprocess)"
binarize
finish
