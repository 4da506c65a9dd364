#!/usr/bin/env bash
# The published comparison grid (README "Results", docs/compare.md), in the order that makes partial results
# useful: the first seed of every family first, then the train-short/test-long runs (short: 9,000 pairs), the
# post-norm column, three seeds of the papers' methods, the other two language pairs, three seeds of the post-norm
# column, then three seeds of every other family. Every step resumes: finished runs are never retrained, so
# rerunning this script after an interruption continues where it stopped. Tables go to docs/results/compare/.
#
#   bash scripts/compare-published.sh [--jobs N] [--raw-root DIR]
#     --jobs N        runs at a time (default 2: two single-thread runs)
#     --raw-root DIR  the raw corpora, laid out as docs/compare.md's "The corpora" says (default ../shared/data)
set -uo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(dirname "$here")"
jobs=2
shared="$repo/../shared/data"
while (( $# )); do
  case $1 in
    --jobs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "compare-published.sh: error: --jobs needs a number of 1 or more" >&2; exit 2; }
            jobs=$2; shift 2 ;;
    --raw-root) [[ -d ${2:-} ]] || { echo "compare-published.sh: error: --raw-root needs a directory (got '${2:-}')" >&2; exit 2; }
            shared="$(cd -- "$2" && pwd)"; shift 2 ;;  # read from the caller's directory, before the cd below
    -h|--help) sed -n '2,10p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "compare-published.sh: error: unknown argument '$1': it takes --jobs N and --raw-root DIR only (each step's own options:" \
            "scripts/compare.sh --help; docs/compare.md)" >&2; exit 2 ;;
  esac
done
cd "$repo"
publish="docs/results/compare"
status=0
unprepared=" "  # corpora whose preparation failed: their steps are skipped, each saying so
step() {
  if [[ $unprepared == *" $1 "* ]]; then
    echo "step skipped, $1 was not prepared: $*"; return
  fi
  echo "==> $*"; bash "$here/compare.sh" "$@" --jobs "$jobs" --publish "$publish" || { status=1; echo "step failed: $*"; }
}
prepare() {  # prepare DATA_NAME SCRIPT ARGS...: data-prep into runs/data/DATA_NAME unless it is there
  local name=$1; shift
  [[ -f runs/data/$name/data-bin/prep-info.json ]] && return
  bash "data-prep/$1" "${@:2}" --out "runs/data/$name" || { status=1; unprepared+="$name "; echo "prepare failed: $name"; }
}

prepare multi30k_de_en prepare-multi30k.sh --raw-dir "$shared/multi30k/tok" --raw-ref-dir "$shared/multi30k/raw"
step multi30k_de_en --archs families --seeds 1
prepare europarl_len_de_en prepare-europarl-length.sh --raw-dir "$shared/wmt14_ende/raw_sample_simt"
step europarl_len_de_en --archs extrapolation --seeds 1
step multi30k_de_en --archs norm --norm post --seeds 1
step multi30k_de_en --archs papers --seeds 3
prepare kftt_ja_en prepare-kftt.sh --raw-dir "$shared/kftt30k_cicada"
step kftt_ja_en --archs papers --seeds 1
prepare tatoeba_zh_en prepare-tatoeba-zh-en.sh --raw-dir "$shared/manythings_cmn_eng"
step tatoeba_zh_en --archs papers --seeds 1
step multi30k_de_en --archs norm --norm pre,post --seeds 3
step multi30k_de_en --archs families --seeds 3
exit $status
