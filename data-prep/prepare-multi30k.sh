#!/usr/bin/env bash
# Multi30k Task 1 German->English (Elliott et al. 2016): the released lowercased, normalised,
# Moses-tokenised files (data/task1/tok), train 29,000 / valid = val 1,014 / test = test_2016_flickr
# 1,000 pairs; joint BPE (8k merges); fairseq-preprocess --joined-dictionary. Offline with
# --raw-dir (e.g. ../shared/data/multi30k/tok), ~1 min on one core.
# Options: --help. The script is the Python module localness_prep/prepare/multi30k.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.multi30k "$@"
