#!/usr/bin/env bash
# SentEval's ten probing tasks (Conneau et al. 2018), as Xu et al. (2019, Tables 3-4) probe them:
# data/probing/{sentence_length,word_content,...}.txt, each line "tr|va|te<TAB>label<TAB>sentence",
# 100k/10k/10k instances per task. Every file is checked (UTF-8, fields, partition names, every
# partition present, va/te labels seen in tr), then written normalised into --out. Offline with
# --raw-dir (a SentEval checkout's data/probing), seconds on one core.
# Options: --help. The script is the Python module localness_prep/prepare/senteval_probing.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.senteval_probing "$@"
