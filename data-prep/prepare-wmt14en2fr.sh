#!/usr/bin/env bash
# WMT14 English->French (~36M pairs), following fairseq's examples/translation/prepare-wmt14en2fr.sh, the
# data of Nguyen et al. (2020) Table 1 (En-Fr column; Sec. 5.1): Europarl v7 + CommonCrawl + UN +
# News Commentary v9 + Giga-FrEn, Moses punctuation normalisation + non-printing-character removal +
# aggressive-hyphen tokenisation, a development set of every 1333rd training pair ("a random split from
# the training set"), joint BPE with 40,000 merges (shared vocabulary), BPE'd training and development
# pairs cleaned to 1..250 tokens with ratio 1.5, test = newstest2014 (full, 3003 sentences).
# Options: --help. The script is the Python module localness_prep/prepare/wmt14en2fr.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.wmt14en2fr "$@"
