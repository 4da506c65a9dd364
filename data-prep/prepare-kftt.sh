#!/usr/bin/env bash
# KFTT Japanese->English, the 30k sample of the cicada toolkit (CC BY-SA 3.0): already tokenised
# (MeCab Japanese, Moses English, cased), train 30,000 / valid = tune 1,235 / test = dev 1,166 pairs
# (KFTT's own test set is not in the sample); joint BPE (8k merges); fairseq-preprocess
# --joined-dictionary. Offline only (--raw-dir, e.g. ../shared/data/kftt30k_cicada), ~1 min on one core.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=ja TGT=en BPE_TOKENS=8000 JOINED=1 LOWERCASED=0

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --raw-dir DIR --out DIR [options]

Prepares the KFTT (Kyoto Free Translation Task) 30k Japanese-English sample of the cicada toolkit
(tarowatanabe/cicada, samples/kftt.30k/data; CC BY-SA 3.0, see its README.rst) for $SRC->$TGT, with
joint BPE, into DIR/data-bin. --raw-dir (required: there is no download URL for this sample) holds
train.{ja,en} (30,000 pairs), tune.{ja,en} (1,235) and dev.{ja,en} (1,166), decompressed, e.g.
../shared/data/kftt30k_cicada.
  splits: train = train, valid = tune, test = dev. KFTT's official test set (1,160 pairs) is NOT
  in the sample, so "test" here is KFTT's dev set.
  The text is tokenised already (Japanese by MeCab, English by Moses, cased) and is not tokenised
  again. The raw English is not in the sample: raw/test.en, the reference of sacreBLEU and chrF,
  is the tokenised test.en detokenised with the Moses detokeniser.

EOF
    common_usage
}

parse_args "$@"
[[ -n $RAW_DIR ]] || die "--raw-dir DIR is required: the KFTT 30k sample cannot be downloaded by this script.
Pass the directory with train/tune/dev.{ja,en}, e.g. --raw-dir ../shared/data/kftt30k_cicada (see --help)."
require_modules sacremoses subword_nmt fairseq_cli
prepare_out_dir

step "Inputs ($RAW_DIR)"
for split in train tune dev; do for l in $SRC $TGT; do need "$split.$l" ""; done; done
fetch_inputs

step "Check and select the splits (train, valid = tune, test = dev; already tokenised)"
prep kftt select "$RAW_DIR" "$TOK"

step "Detokenised English test reference for sacreBLEU"
prep tokenize detok --job "$TGT" "$TOK/test.$TGT" "$RAWTXT/test.$TGT"
note "raw/test.$TGT is detokenised from tok/test.$TGT (the sample has no untokenised text)"

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
bpe_all "$TOK" "$OUT_DIR"

step "Binarise (fairseq-preprocess)"
binarize
finish
