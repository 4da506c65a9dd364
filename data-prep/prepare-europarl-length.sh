#!/usr/bin/env bash
# Train short, test long (German->English): the first 20,000 Europarl v7 pairs of the WMT14 training data,
# split by source length (localness_prep/length_split.py): train and valid on sentences of at most 20 words, test on
# held-out sentences of every length (up to 200 per bucket 1-10, 11-20, 21-30, 31-40, 41-60, >60 words).
# Moses tokenisation (cased), joint BPE (4k merges), one joined dictionary. Offline only
# (--raw-dir, e.g. ../shared/data/wmt14_ende/raw_sample_simt, with europarl_head20k.{de,en}).
# Options: --help. The script is the Python module localness_prep/prepare/europarl_length.py (docs/data.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source "$here/python.sh"
LOCALNESS_PREP_SCRIPT=$0 exec "$PYTHON" -m localness_prep.prepare.europarl_length "$@"
