#!/usr/bin/env bash
# The quickstart: on the Chinese-English sample shipped in data/sample-zh-en (Tatoeba, CC BY),
# prepare the data, train a plain Transformer and a localness Transformer of a tiny size on the
# CPU, evaluate both and print them side by side (BLEU, parameters, training speed).
#
#   bash scripts/quickstart.sh [--updates N] [--arch ARCH] [--work DIR] [--cpu-procs N] [--smoke]
#
#   --updates N     training updates per model (default 800: the whole run about 17 minutes on 2 idle cores)
#   --arch ARCH     the localness architecture to compare (default transformer_gaussian_local);
#                   any bare name of configs/arch/, sized by configs/benchmark/sample_zh_en_tiny.yaml
#   --work DIR      where data, checkpoints and results go (default runs/quickstart)
#   --cpu-procs N   train each model with N CPU processes (gloo) instead of one
#   --smoke         a check that everything runs, in a couple of minutes (10 updates, greedy search)
#
# Safe to re-run: finished steps are skipped, an interrupted training resumes from its last
# checkpoint, and a larger --updates continues the earlier training. Nothing is overwritten.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
source "$here/python.sh"

updates=800
arch=transformer_gaussian_local
work=runs/quickstart
cpu_procs=1
smoke=0
beam=4
max_tokens=2048
bootstrap=1000

usage() { sed -n '2,16p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while [[ $# -gt 0 ]]; do
  case "$1" in
    --updates) updates="${2:?--updates needs a number}"; shift 2 ;;
    --arch) arch="${2:?--arch needs an architecture}"; shift 2 ;;
    --work) work="${2:?--work needs a directory}"; shift 2 ;;
    --cpu-procs) cpu_procs="${2:?--cpu-procs needs a number}"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "quickstart.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
if [[ $smoke == 1 ]]; then
  updates=10 beam=1 max_tokens=1024 bootstrap=100
  [[ $work == runs/quickstart ]] && work=runs/quickstart-smoke
fi
[[ $updates =~ ^[1-9][0-9]*$ ]] || { echo "quickstart.sh: --updates must be a positive integer" >&2; exit 2; }
[[ $cpu_procs =~ ^[1-9][0-9]*$ ]] || { echo "quickstart.sh: --cpu-procs must be a positive integer" >&2; exit 2; }
# each process takes an equal share of the update's tokens (train.sh refuses an uneven split): say so before the data
(( max_tokens % cpu_procs == 0 )) || {
  echo "quickstart.sh: --cpu-procs $cpu_procs does not divide the $max_tokens tokens of an update; choose a divisor (1, 2, 4, ...)" >&2
  exit 2
}
[[ -f "$repo/configs/arch/$arch.yaml" ]] || {
  echo "quickstart.sh: no configs/arch/$arch.yaml; choose a bare architecture name such as transformer_gaussian_local" >&2
  exit 2
}
mkdir -p "$work"
work="$(cd "$work" && pwd)"
data="$work/data"
start=$SECONDS

step() { printf '\n==> [%s] %s  (%s, %ds elapsed)\n' "$1" "$2" "$(date +%H:%M:%S)" $((SECONDS - start)); }

step 1/5 "Data: the shipped zh-en sample -> $data/data-bin"
if [[ -f "$data/data-bin/prep-info.json" ]]; then
  echo "    already prepared, skipped"
else
  bash "$repo/data-prep/prepare-sample.sh" --out "$data"
fi

train() {  # train ARCH into $work/ARCH for $updates updates (resumes; skipped when done)
  local name="$1" dir="$work/$1"
  if [[ -f "$dir/trained-$updates" ]]; then
    echo "    $name: $updates updates already trained, skipped"
    return
  fi
  # OMP_NUM_THREADS unset: a single process uses every core; the launcher pins 1 thread per rank
  local status=0
  bash "$here/train.sh" sample_zh_en_tiny "$name" --data "$data/data-bin" --save-dir "$dir" \
      --cpu-procs "$cpu_procs" --max-tokens $((max_tokens / cpu_procs)) --effective-tokens "$max_tokens" \
      "optimization.max_update=$updates" "checkpoint.save_interval_updates=$(( updates > 200 ? 200 : updates ))" \
      common.log_interval=25 2>&1 | "$PYTHON" "$here/launch.py" progress "$name" "$updates" || status=$?
  if (( status == 2 )); then
    # train.sh's own checks (the run-directory guard, the options) exit 2 before fairseq starts, so
    # hydra_train.log holds nothing about it: its one-line reason is printed above
    echo "quickstart.sh: $name was not trained: train.sh refused, for the reason printed above" >&2
    exit 2
  elif (( status != 0 )); then
    echo "quickstart.sh: training $name failed; see $dir/hydra_train.log" >&2
    exit 1
  fi
  touch "$dir/trained-$updates"
}

evaluate() {  # evaluate.sh on the last checkpoint into $work/ARCH/eval-$updates
  local name="$1" out="$work/$1/eval-$updates"; shift
  if [[ -f "$out/scores.json" ]]; then
    echo "    $name: already evaluated, skipped"
    return
  fi
  bash "$here/evaluate.sh" "$work/$name" "$data/data-bin" --checkpoint checkpoint_last.pt --cpu \
    --beam "$beam" --max-len-a 1.5 --max-len-b 10 --bootstrap-samples "$bootstrap" --out "$out" "$@"
}

step 2/5 "Train the plain Transformer (tiny: 3+3 layers, 128 dim) for $updates updates"
train transformer
step 3/5 "Train $arch (same size and settings) for $updates updates"
train "$arch"
step 4/5 "Evaluate both on the 500 test sentences (beam $beam)"
evaluate transformer
evaluate "$arch" --baseline-hyp "$work/transformer/eval-$updates"

step 5/5 "Results"
"$PYTHON" "$here/launch.py" compare --overwrite "$work/quickstart-$updates.md" \
  "transformer=$work/transformer:$work/transformer/eval-$updates" \
  "$arch=$work/$arch:$work/$arch/eval-$updates"
if [[ $arch == *gaussian* ]]; then  # its learned windows, as Yang et al. (2018) Figure 3 (docs/analyses.md)
  step extra "Learned Gaussian windows of $arch on the validation set -> $work/analyses"
  if [[ -f "$work/analyses/windows-$updates.png" ]]; then
    echo "    already drawn, skipped"
  else
    "$PYTHON" "$here/analyze.py" gaussian-scopes --checkpoint "$arch=$work/$arch/checkpoint_last.pt" \
      --data "$data/data-bin" --split valid --device cpu --out "$work/analyses" --name "windows-$updates" --quiet
  fi
fi
printf '\ndone in %ds; table saved to %s\n' $((SECONDS - start)) "$work/quickstart-$updates.md"
