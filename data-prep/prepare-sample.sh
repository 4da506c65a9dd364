#!/usr/bin/env bash
# The shipped Chinese->English quickstart sample (data/sample-zh-en, Tatoeba, CC BY 2.0 FR):
# jieba for Chinese, Moses for English, BPE per language, fairseq-preprocess. Offline, ~20 s.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=zh TGT=en BPE_TOKENS=4000 JOINED=0

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --out DIR [--bpe-tokens N] [--force] [options]

Tokenises (jieba / Moses), BPE-encodes and binarises the Chinese-English sample shipped in
data/sample-zh-en (19k train / 500 valid / 500 test Tatoeba pairs, see its ATTRIBUTION.md).
--raw-dir defaults to that directory (any directory with {train,valid,test}.{zh,en} works).

EOF
    common_usage
}

parse_args "$@"
[[ -n $RAW_DIR ]] || RAW_DIR=$REPO_DIR/data/sample-zh-en
require_modules sacremoses jieba subword_nmt fairseq_cli
prepare_out_dir

step "Inputs ($RAW_DIR)"
for split in train valid test; do for l in $SRC $TGT; do need "$split.$l" ""; done; done
fetch_inputs
pairs=()
for split in train valid test; do pairs+=("$(input "$split.$SRC")" "$(input "$split.$TGT")"); done
check_parallel "${pairs[@]}"
for split in train valid test; do for l in $SRC $TGT; do cp "$(input "$split.$l")" "$RAWTXT/$split.$l"; done; done

step "Tokenise (jieba for zh, Moses for en)"
tokenize_splits

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
bpe_all "$TOK" "$OUT_DIR"

step "Binarise (fairseq-preprocess)"
binarize
finish
