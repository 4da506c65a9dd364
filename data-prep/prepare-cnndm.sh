#!/usr/bin/env bash
# CNN/DailyMail (Hermann et al. 2015; See et al. 2017's non-anonymised version) for Fan et al. (2021),
# Sec. 3.1.2 / Table 2, prepared as the authors did through MASS: BERT uncased WordPiece on both sides,
# one dictionary (the BERT vocabulary), fairseq-preprocess. Offline only: the articles are not ours to
# redistribute (see docs/summarization.md), so --raw-dir must hold the common layout
# {train,val,test}.{source,target} (one article / one summary per line).
# Options: --help. The script is the Python module localness_prep/prepare/cnndm.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.cnndm "$@"
