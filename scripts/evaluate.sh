#!/usr/bin/env bash
# Evaluate a trained model: average the last N checkpoints (optional), fairseq-generate with the
# localness plugin, tokenised BLEU / sacreBLEU / chrF, paired bootstrap against a baseline.
#
#   bash scripts/evaluate.sh CHECKPOINT_DIR DATA_BIN [--avg-last N] [--beam 4 --lenpen 0.6]
#        [--detok-ref RAW_REF] [--baseline-hyp BASELINE_EVAL_DIR] [--out DIR] [...]
#
# Writes OUT/scores.json (OUT defaults to CHECKPOINT_DIR/eval-test-<checkpoint>) and prints a
# summary; --help lists every option. The logic is in fairseq_localness/evaluation/evaluate.py.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
export PYTHONPATH="$(dirname "$here")${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" -m fairseq_localness.evaluation.evaluate "$@"
