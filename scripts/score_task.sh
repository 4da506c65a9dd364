#!/usr/bin/env bash
# Score a trained classifier (exact accuracy), language model (fairseq-eval-lm perplexity), translation
# encoder (SentEval probing accuracy) or summarizer (files2rouge's ROUGE-1/2/L F1) on one split; writes
# OUT/scores.json like scripts/evaluate.sh does for translation.
#
#   bash scripts/score_task.sh CHECKPOINT_DIR DATA_BIN --task classification|language_modeling|probing|summarization
#        [--subset test] [--checkpoint checkpoint_best.pt] [--out DIR] [--tokens-per-sample N
#        --sample-break-mode eos --context-window N] [--probing-tasks DIR --prep-dir DIR]
#        [--dataset cnndm|gigaword --variant released|paper --scorer auto|perl|python] [--cpu]
#
# The logic is in fairseq_localness/evaluation/task_scores.py; --help lists every option.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
export PYTHONPATH="$(dirname "$here")${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" -m fairseq_localness.evaluation.task_scores "$@"
