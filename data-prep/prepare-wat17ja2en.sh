#!/usr/bin/env bash
# WAT17 Japanese->English on ASPEC-JE as in Yang et al. (2019) Sec. 5 and Xu et al. (2019) Sec. 4, both
# following Morishita et al. (2017): the first two training sections (train-1.txt, train-2.txt; "2M
# sentence pairs"), dev.txt as valid, test.txt as test. Neither paper states a length limit, and neither
# release (baosongyang/Context-Aware-SAN, scewiner/Leveraging) has a data script: every training pair is
# kept by default (only pairs with an empty side are dropped, our choice); --max-len N filters (recorded
# as another corpus). Japanese is segmented with MeCab/UniDic-lite through fugashi (the papers used
# KyTea, whose model is not on PyPI), English Moses-tokenised; BPE with 32k merges (both papers).
# ASPEC is licensed: the script only reads the user's copy (--raw-dir).
# Options: --help. The script is the Python module localness_prep/prepare/wat17ja2en.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.wat17ja2en "$@"
