#!/usr/bin/env bash
# The shipped Chinese->English quickstart sample (data/sample-zh-en, Tatoeba, CC BY 2.0 FR):
# jieba for Chinese, Moses for English, BPE per language, fairseq-preprocess. Offline, under a minute (docs/data.md).
# Options: --help. The script is the Python module localness_prep/prepare/sample.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.sample "$@"
