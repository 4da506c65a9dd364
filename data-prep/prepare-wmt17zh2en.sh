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
# Options: --help. The script is the Python module localness_prep/prepare/wmt17zh2en.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.wmt17zh2en "$@"
