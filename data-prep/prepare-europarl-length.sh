#!/usr/bin/env bash
# Train short, test long (German->English): the first 20,000 Europarl v7 pairs of the WMT14 training data,
# split by source length (prep/length_split.py): train and valid on sentences of at most 20 words, test on
# held-out sentences of every length (up to 200 per bucket 1-10, 11-20, 21-30, 31-40, 41-60, >60 words).
# Moses tokenisation (cased), joint BPE (4k merges), one joined dictionary. Offline only
# (--raw-dir, e.g. ../shared/data/wmt14_ende/raw_sample_simt, with europarl_head20k.{de,en}).
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=de TGT=en BPE_TOKENS=4000 JOINED=1 LOWERCASED=0 MAX_LEN=20

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --raw-dir DIR --out DIR [--max-len N] [options]

Prepares a train-short / test-long split of Europarl v7 German-English (free for any use, Koehn 2005)
for $SRC->$TGT into DIR/data-bin. --raw-dir (required, no download) holds europarl_head20k.{de,en}
(the first 20,000 pairs of the WMT14 de-en training data), e.g. ../shared/data/wmt14_ende/raw_sample_simt.
  --max-len N  longest training source sentence in words [$MAX_LEN]; test sentences go up to several
               times longer (prep/length_split.py: deterministic, pairs ranked by SHA-1)
  raw/test.en is the reference of sacreBLEU and chrF.

EOF
    common_usage
}

script_option() {
    case $1 in
        --max-len) need_value "$@"; is_int "$2" || die "--max-len must be a positive integer, got '$2'"; MAX_LEN=$2; SHIFT=2 ;;
    esac
}

parse_args "$@"
[[ -n $RAW_DIR ]] || die "--raw-dir DIR is required (this script works offline only).
Pass the directory with europarl_head20k.{de,en}, e.g. --raw-dir ../shared/data/wmt14_ende/raw_sample_simt (see --help)."
require_modules sacremoses subword_nmt fairseq_cli
prepare_out_dir

step "Inputs ($RAW_DIR)"
for l in $SRC $TGT; do need "europarl_head20k.$l" ""; done
fetch_inputs

step "Split by length (train/valid at most $MAX_LEN source words, test every length)"
mkdir -p "$RAWTXT"
prep length_split --src "$(input europarl_head20k.$SRC)" --tgt "$(input europarl_head20k.$TGT)" --out "$RAWTXT" \
    --max-len "$MAX_LEN" | sed 's/^/    /'

step "Tokenise (Moses)"
tokenize_splits

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
bpe_all "$TOK" "$OUT_DIR"

step "Binarise (fairseq-preprocess)"
binarize
finish
