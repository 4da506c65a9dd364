#!/usr/bin/env bash
# Train and score every row of a paper's table as the paper did; write our numbers beside the published ones.
#
#   bash scripts/reproduce.sh PAPER TABLE [--dry-run] [--rows ID,ID] [--gpus N | --cpu-procs N] [--max-tokens T]
#        [--work DIR (runs)] [--data-root DIR (runs/data)] [--train-args '...'] [--eval-args '...']
#        [--tables FILE] [--gpu-hours] [--slurm ...] [--allow-other-corpus]
#
# PAPER TABLE: yang2018 1-5, yang2019 1-2, xu2019 1-4, nguyen2020 1-6, fan2021 1-4 (Fan 2 is summarization:
# docs/summarization.md); the sweep figures, trained like tables: yang2019 fig2, xu2019 fig2
# (configs/paper_sweeps.yaml).
# Rows, recipes, scoring and published numbers: configs/paper_tables.yaml. Resumable: finished rows are not rerun.
# A data-bin whose corpus (its prep-info.json) is not the paper's, e.g. WMT17 Zh-En prepared with --nc-only, stops the
# run (exit 2) unless --allow-other-corpus, which marks the report. Writes WORK/PAPER/tableT.{md,csv,json}. See docs/reproduce.md.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$here/python.sh"
exec "$PYTHON" "$here/reproduce.py" "$@"
