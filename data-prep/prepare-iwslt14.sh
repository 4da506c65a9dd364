#!/usr/bin/env bash
# IWSLT14 German->English, following fairseq's examples/translation/prepare-iwslt14.sh:
# TED train.tags (metadata lines removed), Moses tokenisation, clean 1..175 tokens with
# ratio 1.5, lowercase; valid = every 23rd training pair; test = dev2010 + TEDX.dev2012 +
# tst2010-2012 (6750 pairs); joint BPE (10k merges); fairseq-preprocess --joined-dictionary.
# Options: --help. The script is the Python module localness_prep/prepare/iwslt14.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.iwslt14 "$@"
