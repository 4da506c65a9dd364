#!/usr/bin/env bash
# WMT14 English->German (~4.5M pairs), following fairseq's examples/translation/prepare-wmt14en2de.sh:
# Europarl v7 + CommonCrawl + News Commentary (v12; v9 with --icml17), Moses punctuation
# normalisation + non-printing-character removal + aggressive-hyphen tokenisation, joint BPE,
# clean 1..250 BPE tokens with ratio 1.5. Valid = newstest2013, test = newstest2014 (full, 3003).
# --stanford starts from the Stanford/Google pre-tokenised release instead.
# Options: --help. The script is the Python module localness_prep/prepare/wmt14en2de.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.wmt14en2de "$@"
