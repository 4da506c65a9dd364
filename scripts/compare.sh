#!/usr/bin/env bash
# One controlled comparison of locality architectures: one recipe, several seeds, significance.
#
#   bash scripts/compare.sh CORPUS [--archs families|papers|A,B] [--seeds 3] [--norm pre[,post]] [--jobs 2]
#        [--work runs/compare] [--data-root runs/data] [--gpus N --fp16] [--dry-run] [--table-only] [--slurm ...]
#   bash scripts/compare.sh --data DATA_BIN --recipe BENCHMARK_OR_YAML --archs A,B ...   (your own corpus)
#
# CORPUS is one of configs/compare.yaml (multi30k_de_en, kftt_ja_en, tatoeba_zh_en, europarl_len_de_en). Finished runs are
# never retrained; an interrupted run resumes. --help lists every option; docs/compare.md explains them.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
export PYTHONPATH="$(dirname "$here")${PYTHONPATH:+:$PYTHONPATH}"
exec "$PYTHON" -m fairseq_localness.experiments.compare "$@"
