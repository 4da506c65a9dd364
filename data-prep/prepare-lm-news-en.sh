#!/usr/bin/env bash
# A small news-English language-modelling corpus, a stand-in for One Billion Word built offline from
# the English sides of the WMT sets in ../shared/data (newstest 2012-2017, newsdev2017, WMT22 general
# test, WMT14 train10k, Europarl 20k): detokenised where they come tokenised, Moses punctuation
# normalisation + tokenisation without escaping, cased (as 1BW); duplicates removed; shuffled; the
# held-out sentences never occur in train. Word vocabulary (words seen >= 3 times in train, 1BW's
# cut-off); fairseq-preprocess --only-source for the language_modeling task -> OUT/data-bin.
# The source list and the rules: localness_prep/lm_corpus.py. Nothing is copied into the repository.
# Options: --help. The script is the Python module localness_prep/prepare/lm_news_en.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.lm_news_en "$@"
