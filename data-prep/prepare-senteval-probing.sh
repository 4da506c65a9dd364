#!/usr/bin/env bash
# SentEval's ten probing tasks (Conneau et al. 2018), as Xu et al. (2019, Tables 3-4) probe them:
# data/probing/{sentence_length,word_content,...}.txt, each line "tr|va|te<TAB>label<TAB>sentence",
# 100k/10k/10k instances per task. Every file is checked (UTF-8, fields, partition names, every
# partition present, va/te labels seen in tr), then written normalised into --out. Offline with
# --raw-dir (a SentEval checkout's data/probing), seconds on one core.
set -Eeuo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

SRC=en TGT=label BPE_TOKENS=0 JOINED=0
ALL_TASKS=sentence_length,word_content,tree_depth,top_constituents,bigram_shift,past_present,subj_number,obj_number,odd_man_out,coordination_inversion
TASKS=$ALL_TASKS
COMMIT=5d6dc117d1ac30357ddaeb7347fb5684e9b87015
URL=https://raw.githubusercontent.com/facebookresearch/SentEval/$COMMIT/data/probing

usage() {
    cat <<EOF
Usage: bash $SCRIPT_NAME --out DIR [--raw-dir DIR] [--tasks NAME,NAME] [--force]

Checks SentEval's probing files NAME.txt (in --raw-dir, else downloaded from
$URL) and writes them, normalised to three TAB-separated fields, to DIR/NAME.txt.
  --raw-dir DIR  SentEval's data/probing directory (the only way to run offline)
  --out DIR      output directory (required)
  --tasks LIST   comma-separated task names [all ten: $ALL_TASKS]
  --force        rebuild even if DIR holds a finished run
Then: fairseq-localness-probe evaluate --checkpoint CKPT --tasks DIR ...   (docs/probing.md)
EOF
}

script_option() {
    case $1 in
        --tasks) need_value "$@"; TASKS=$2; SHIFT=2 ;;
    esac
}

parse_args "$@"
prepare_out_dir
rmdir "$TOK" "$RAWTXT" 2>/dev/null || true  # lib.sh makes them for translation data; nothing goes there

step "Inputs"
IFS=, read -r -a task_list <<<"$TASKS"
((${#task_list[@]})) || die "--tasks is empty"
for task in "${task_list[@]}"; do
    [[ ,$ALL_TASKS, == *,"$task",* ]] || die "--tasks: unknown task '$task' (SentEval's are $ALL_TASKS)"
    need "$task.txt" "$URL/$task.txt"
done
fetch_inputs
IN=$(dirname "$(input "${task_list[0]}.txt")")
note "reading SentEval probing files from $IN"

step "Check the files and write them to $OUT_DIR"
for task in ${ALL_TASKS//,/ }; do rm -f -- "$OUT_DIR/$task.txt"; done  # a rebuild keeps no task of an earlier run
prep senteval copy --tasks "$TASKS" "$IN" "$OUT_DIR"

printf '%s %s | %s\n' "$SCRIPT_NAME" "$(date '+%F %T')" "$QUOTED_ARGS" > "$OUT_DIR/.prep-done"
rm -f "$OUT_DIR/.prep-started"
rmdir "$TMP" 2>/dev/null || true
printf '\nDone: %s\n  probe: fairseq-localness-probe evaluate --checkpoint CKPT --tasks %s --bpe-codes CODES ...\n' \
    "$OUT_DIR" "$OUT_DIR"
printf '         (docs/probing.md)\n'
