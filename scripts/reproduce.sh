#!/usr/bin/env bash
# Train and evaluate every row of a paper's table and write our numbers beside the published ones.
#
#   bash scripts/reproduce.sh PAPER TABLE [--dry-run] [--gpus N] [--work DIR] [--data-root DIR (runs/data)]
#        [--cpu-procs N] [--max-tokens T] [--rows ID,ID]
#
# PAPER: yang2018 (tables 1-4), yang2019 (1-2), xu2019 (1-2), nguyen2020 (1-3), fan2021 (1, 3, 4).
# Rows and published numbers: configs/paper_tables.yaml. Resumable: finished rows are not rerun.
# Writes WORK/PAPER/tableT.md. See README.md, "Configs, the training launcher, paper tables and the quickstart".
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
exec "$PYTHON" "$here/reproduce.py" "$@"
