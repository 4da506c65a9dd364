#!/usr/bin/env bash
# One Billion Word (Chelba et al. 2013; Nguyen et al. 2020, Sec. 5.4 / Table 6) from the released
# 1-billion-word-language-modeling-benchmark-r13output layout, already tokenised: train = the 99
# training shards news.en-000{01..99}-of-00100, valid = held-out shard 00001, test = held-out shard
# 00000 (the benchmark's test set); a word vocabulary of 32,000 entries, the most frequent words of train
# (Nguyen et al. 2020 Sec. 5.4: "a vocabulary of 32,000 words"; --threshold 3 gives the benchmark's own
# 793,471 words instead); fairseq-preprocess --only-source for the language_modeling task -> OUT/data-bin.
# Where each choice comes from: localness_prep/lm_corpus.py.
# Options: --help. The script is the Python module localness_prep/prepare/onebw.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.onebw "$@"
