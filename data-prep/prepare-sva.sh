#!/usr/bin/env bash
# Subject-verb agreement, number prediction (Linzen et al. 2016; Nguyen et al. 2020, Sec. 5.3 /
# Table 5 "SVA"), from Linzen's released agr_50_mostcommon_10K.tsv: the sentence up to the verb ->
# singular (VBZ) / plural (VBP). Split: Linzen's 9% / 1% / 90% (--split linzen, default) or
# tensor2tensor's SvaNumberPrediction (--split t2t); see localness_prep/sva.py. The text is
# already tokenised and lowercased: word vocabulary, fairseq-preprocess --only-source into fairseq's
# sentence_prediction layout OUT/data-bin/{input0,label}/.
# Options: --help. The script is the Python module localness_prep/prepare/sva.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.sva "$@"
