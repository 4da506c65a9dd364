#!/usr/bin/env bash
# WMT17 Chinese->English as in Yang et al. (2018) Sec. 4.1: "all of the available parallel corpus from
# WMT17" (about 20.62M pairs with the 50-token limit), Chinese segmented with jieba, English
# Moses-tokenised, training pairs of at most 50 tokens, newsdev2017 valid, newstest2017 test, BPE with
# 32k merges (separate per language by default). WMT17's Zh-En parallel data
# (http://www.statmt.org/wmt17/translation-task.html; the training subsets of tensorflow/datasets'
# tensorflow_datasets/translate/wmt17.py for zh-en, their archives and file layout in its wmt.py):
# News Commentary v12, the UN Parallel Corpus v1.0 and the six CWMT corpora. --nc-only prepares News
# Commentary v12 alone (a reduced corpus, recorded as such: scripts/reproduce.sh refuses it for the
# paper tables unless told otherwise).
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=zh TGT=en BPE_TOKENS=32000 JOINED=0
MAX_LEN=50 RATIO=9 NC_ONLY=0
EXTRA=()
WMT17=http://data.statmt.org/wmt17/translation-task
UN_URL=https://conferences.unite.un.org/UNCorpus
# the CWMT corpora and where tensorflow/datasets downloads them (tensorflow_datasets/translate/wmt.py)
CWMT=(casia2015 casict2011 casict2015 datum2015 datum2017 neu2017)
CWMT_URL=ftp://cwmt-wmt:cwmt-wmt@nlp.nju.edu.cn/parallel
CWMT_PAGE=http://nlp.nju.edu.cn/cwmt-wmt/

script_option() {
    case $1 in
        --nc-only) NC_ONLY=1 SHIFT=1 ;;
        --extra-corpus) need_value "$@"; EXTRA+=("$2"); SHIFT=2 ;;
        --max-len) need_value "$@"; is_int "$2" || die "--max-len must be a positive integer"; MAX_LEN=$2 SHIFT=2 ;;
    esac
}

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--nc-only] [--extra-corpus PREFIX ...] [options]

Prepares WMT17 Zh-En (jieba + Moses, max length $MAX_LEN, newsdev2017 / newstest2017) and binarises it
into DIR/data-bin. The training data is all of WMT17's Zh-En parallel data, as Yang et al. (2018)
Sec. 4.1 train on ("about 20.62 million sentence pairs" after the 50-token limit). Inputs (each
archive as downloaded, or its files extracted with the same relative paths):
  training-parallel-nc-v12.tgz  training/news-commentary-v12.zh-en.{zh,en}
                                <- $WMT17/training-parallel-nc-v12.tgz
  UNv1.0.en-zh.tar.gz           en-zh/UNv1.0.en-zh.{zh,en}    (UN Parallel Corpus v1.0; download it
                                from $UN_URL, joining the parts if it comes in parts)
  casia2015.zip casict2011.zip casict2015.zip datum2015.zip datum2017.zip neu2017.zip
                                (the CWMT corpora, each zip or its extracted directory NAME/ holding
                                *_ch.txt or *_cn.txt beside *_en.txt) <- $CWMT_URL/NAME.zip
                                (registration: $CWMT_PAGE)
  dev.tgz                       dev/newsdev2017-zhen-{src.zh,ref.en}.sgm   <- $WMT17/dev.tgz
  test.tgz                      test/newstest2017-zhen-{src.zh,ref.en}.sgm <- $WMT17/test.tgz
The UN corpus is never downloaded by this script: pass --raw-dir DIR holding it (and, offline, the
others). data-bin/prep-info.json records the corpus (wmt17-zh-en-all) and its training pairs.

Script options:
  --nc-only              News Commentary v12 alone (about 0.2M pairs): a reduced corpus, recorded as
                         wmt17-zh-en-nc-v12. scripts/reproduce.sh trains the paper tables on it only
                         with --allow-other-corpus, and marks their reports.
  --extra-corpus PREFIX  add PREFIX.zh / PREFIX.en (plain, line-aligned text) to the training data;
                         repeatable. The corpus is then recorded as <corpus>+extra (not the paper's).
  --max-len N            drop training pairs with a side longer than N tokens [$MAX_LEN, Yang et al.
                         2018 Sec. 4.1]; another N is recorded as <corpus>-maxlenN (not the paper's)

EOF
    common_usage
}

parse_args "$@"
require_modules sacremoses jieba subword_nmt fairseq_cli
if ((NC_ONLY)); then CORPUS=wmt17-zh-en-nc-v12; else CORPUS=wmt17-zh-en-all; fi
((MAX_LEN == 50)) || CORPUS+=-maxlen$MAX_LEN
((${#EXTRA[@]} == 0)) || CORPUS+=+extra
prepare_out_dir

step "Inputs ($CORPUS)"
need training-parallel-nc-v12.tgz "$WMT17/training-parallel-nc-v12.tgz" training/news-commentary-v12.zh-en.{zh,en}
need dev.tgz "$WMT17/dev.tgz" dev/newsdev2017-zhen-src.zh.sgm dev/newsdev2017-zhen-ref.en.sgm
need test.tgz "$WMT17/test.tgz" test/newstest2017-zhen-src.zh.sgm test/newstest2017-zhen-ref.en.sgm
declare -A CWMT_DIR=()
if ((!NC_ONLY)); then
    need UNv1.0.en-zh.tar.gz "" en-zh/UNv1.0.en-zh.{zh,en}
    for c in "${CWMT[@]}"; do
        if [[ -n $RAW_DIR && -d $RAW_DIR/$c ]]; then CWMT_DIR[$c]=$RAW_DIR/$c
        else need "$c.zip" "$CWMT_URL/$c.zip"
        fi
    done
fi
fetch_inputs
TRAIN_PAIRS=("$(input training/news-commentary-v12.zh-en.$SRC)" "$(input training/news-commentary-v12.zh-en.$TGT)")
if ((!NC_ONLY)); then
    TRAIN_PAIRS+=("$(input en-zh/UNv1.0.en-zh.$SRC)" "$(input en-zh/UNv1.0.en-zh.$TGT)")
    for c in "${CWMT[@]}"; do
        if [[ ! -v "CWMT_DIR[$c]" ]]; then
            rm -rf "${ORIG:?}/cwmt/$c"
            prep cwmt extract "$(input "$c.zip")" "$ORIG/cwmt/$c"
            CWMT_DIR[$c]=$ORIG/cwmt/$c
        fi
    done
fi
for prefix in "${EXTRA[@]}"; do
    [[ -f $prefix.$SRC && -f $prefix.$TGT ]] || die "--extra-corpus $prefix: expected $prefix.$SRC and $prefix.$TGT"
    TRAIN_PAIRS+=("$prefix.$SRC" "$prefix.$TGT")
done
((NC_ONLY)) && note "--nc-only: training on News Commentary v12 alone, a reduced corpus (recorded as $CORPUS)"

step "Extract text: training corpora, newsdev2017 and newstest2017 SGML"
check_parallel "${TRAIN_PAIRS[@]}"
for i in $(seq 0 2 $((${#TRAIN_PAIRS[@]} - 1))); do cat "${TRAIN_PAIRS[i]}"; done > "$RAWTXT/train.$SRC"
for i in $(seq 1 2 $((${#TRAIN_PAIRS[@]} - 1))); do cat "${TRAIN_PAIRS[i]}"; done > "$RAWTXT/train.$TGT"
if ((!NC_ONLY)); then
    cwmt_dirs=()
    for c in "${CWMT[@]}"; do cwmt_dirs+=("${CWMT_DIR[$c]}"); done
    prep cwmt pairs "$RAWTXT/train.$SRC" "$RAWTXT/train.$TGT" "${cwmt_dirs[@]}"
    check_parallel "$RAWTXT/train.$SRC" "$RAWTXT/train.$TGT"
fi
note "training text: $(wc -l < "$RAWTXT/train.$SRC") pairs before tokenisation and the length limit"
prep iwslt_xml segs \
    "$(input dev/newsdev2017-zhen-src.zh.sgm)" "$RAWTXT/valid.$SRC" "$(input dev/newsdev2017-zhen-ref.en.sgm)" "$RAWTXT/valid.$TGT" \
    "$(input test/newstest2017-zhen-src.zh.sgm)" "$RAWTXT/test.$SRC" "$(input test/newstest2017-zhen-ref.en.sgm)" "$RAWTXT/test.$TGT"
prep iwslt_xml segs --exact "$(input test/newstest2017-zhen-ref.en.sgm)" "$RAWTXT/test-ref.$TGT"
check_parallel "$RAWTXT/valid.$SRC" "$RAWTXT/valid.$TGT" "$RAWTXT/test.$SRC" "$RAWTXT/test.$TGT"

step "Tokenise (jieba for zh, Moses for en)"
jobs=()
for split in train valid test; do
    for l in $SRC $TGT; do
        dst=$TOK/$split.$l; [[ $split == train ]] && dst=$TMP/train.tok.$l
        jobs+=(--job "$l" "$RAWTXT/$split.$l" "$dst")
    done
done
prep tokenize tok --workers "$WORKERS" "${jobs[@]}"

step "Clean training data (1..$MAX_LEN tokens, ratio $RATIO)"
prep clean --ratio $RATIO --min 1 --max "$MAX_LEN" "$TMP/train.tok" $SRC $TGT "$TOK/train"

step "BPE ($BPE_TOOL, $BPE_TOKENS)"
bpe_all "$TOK" "$OUT_DIR"

step "Binarise (fairseq-preprocess)"
binarize
finish
