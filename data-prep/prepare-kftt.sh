#!/usr/bin/env bash
# KFTT Japanese->English, the 30k sample of the cicada toolkit (CC BY-SA 3.0): already tokenised
# (MeCab Japanese, Moses English, cased), train 30,000 / valid = tune 1,235 / test = dev 1,166 pairs
# (KFTT's own test set is not in the sample); joint BPE (8k merges); fairseq-preprocess
# --joined-dictionary. Offline only (--raw-dir, e.g. ../shared/data/kftt30k_cicada), ~1 min on one core.
# Options: --help. The script is the Python module localness_prep/prepare/kftt.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.kftt "$@"
