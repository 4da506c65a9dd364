#!/usr/bin/env bash
# The whole manythings.org/Tatoeba cmn-eng corpus (29,155 Chinese-English pairs, CC BY 2.0 FR), split
# deterministically as data/sample-zh-en is (localness_prep/sample.py): test 1,000 / valid 1,000 unique pairs,
# train = all other pairs; jieba for Chinese, Moses for English (cased), joint BPE (8k merges),
# fairseq-preprocess --joined-dictionary. Offline only (--raw-dir, e.g. ../shared/data/manythings_cmn_eng).
# Options: --help. The script is the Python module localness_prep/prepare/tatoeba_zh_en.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.tatoeba_zh_en "$@"
