#!/usr/bin/env bash
# Train an architecture on a paper's benchmark setting with the paper's effective batch.
#
#   bash scripts/train.sh BENCHMARK ARCH --data DATA_BIN [--gpus N]
#        [--nodes N --node-rank R --master-addr A --master-port P] [--cpu-procs N]
#        [--max-tokens T] [--save-dir DIR] [--dry-run] [hydra overrides...]
#        [--slurm --partition P --nodes N --gpus-per-node G --time T [--account A] [--constraint C]
#         [--sbatch-extra K=V] [--wait] [--hydra-launcher]]     (Slurm jobs: docs/cluster.md)
#
# BENCHMARK is a file of configs/benchmark/, ARCH one of configs/arch/. update_freq is computed as
# paper_tokens / (world_size x max_tokens); a split that is not a whole number is refused.
# Examples:
#   bash scripts/train.sh wmt14_en_de_base transformer_gaussian_local_wmt_en_de --data data/wmt14_en_de/data-bin --gpus 8
#   bash scripts/train.sh iwslt14_de_en transformer_diffwin_iwslt_de_en --data data/iwslt14/data-bin --cpu-procs 2 \
#        optimization.max_update=1000
# See docs/training.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
exec "$PYTHON" "$here/launch.py" train "$@"
