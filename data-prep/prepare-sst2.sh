#!/usr/bin/env bash
# SST-2 (Socher et al. 2013), binary, in SentEval's files, for Nguyen et al. 2020 Table 5 (the paper says only
# "Stanford Sentiment Treebank (SST)"; binary SST-2 and this split are our reading, docs/tasks.md):
# train 67,349 phrases / valid = dev 872 / test 1,821 sentences, already tokenised; word vocabulary
# (no BPE); fairseq-preprocess --only-source into fairseq's sentence_prediction layout
# OUT/data-bin/{input0,label}/. Offline with --raw-dir (e.g. ../shared/data/sst2), ~1 min on one core.
# Options: --help. The script is the Python module localness_prep/prepare/sst2.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.sst2 "$@"
