#!/usr/bin/env bash
# IMDB sentiment (Maas et al. 2011; Nguyen et al. 2020, Sec. 5.3 / Table 5), binary, from the released
# aclImdb layout: train 25,000 / test 25,000 reviews; a class-balanced dev set of whole movies is held
# out of train (--dev-size, --seed, --dev-split: the paper states no dev set). <br /> tags removed, Moses-tokenised and
# lowercased like the SST-2 files (no escaping), word vocabulary (no BPE); fairseq-preprocess
# --only-source into fairseq's sentence_prediction layout OUT/data-bin/{input0,label}/.
# Options: --help. The script is the Python module localness_prep/prepare/imdb.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.imdb "$@"
