# shellcheck shell=bash
# Shared library of the data-prep/prepare-*.sh scripts; source it after `set -Eeuo pipefail`.
#
# A script sets its defaults (SRC, TGT, BPE_TOKENS, JOINED; optionally LOWERCASED, COMPOUND_SPLIT) and a
# `script_option` function for its own flags), then calls, in order:
#   parse_args "$@"; require_modules ...; prepare_out_dir
#   need ...; fetch_inputs          # locate inputs in --raw-dir (or download them)
#   ... its own extraction / tokenisation steps, writing $TOK/{train,valid,test}.{$SRC,$TGT} ...
#   bpe_all "$TOK" "$OUT_DIR"; binarize; finish
#
# Layout of --out DIR:  orig/ (downloads, extracted archive members)  raw/ (plain text before
# tokenisation; raw/test-ref.$TGT or raw/test.$TGT is the reference for sacreBLEU)  tmp/ (scratch)
# tok/ (tokenised text)  {train,valid,test}.{src,tgt} (BPE text)  code* or spm*.model (BPE model)
# data-bin/ (fairseq-preprocess output)  .prep-done (marks a finished run).

PREP_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(dirname "$PREP_LIB_DIR")
# The helpers in fairseq_localness/prep/ are run as the top-level package `prep`: importing them
# as fairseq_localness.prep.* would run fairseq_localness/__init__.py, which imports torch and
# fairseq (seconds per call). They need nothing else from the package, and this works without
# `pip install` too.
PREP_PYTHONPATH="$REPO_DIR/fairseq_localness${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONIOENCODING=utf-8
# same choice as scripts/python.sh: $PYTHON, else the repository's .venv, else python3 on PATH
if [[ -n ${PYTHON:-} ]]; then PY=$PYTHON
elif [[ -x $REPO_DIR/.venv/bin/python ]]; then PY=$REPO_DIR/.venv/bin/python
else PY=$(command -v python3 || command -v python || true)
fi
SCRIPT_NAME=$(basename "$0")

RAW_DIR="" OUT_DIR="" BPE_TOOL=subword-nmt FORCE=0 WORKERS=1
# the training corpus, recorded in data-bin/prep-info.json ("corpus"): a script names its variants (e.g.
# wmt17-zh-en-all vs wmt17-zh-en-nc-v12); scripts/reproduce.sh refuses a paper table whose data is not the
# corpus its evaluation entry names (configs/paper_tables.yaml, `corpus`)
CORPUS=${SCRIPT_NAME%.sh}; CORPUS=${CORPUS#prepare-}
STEP_NO=0 STEP_NAME="start"
declare -A FILE_OF=()    # input name (archive member or file) -> path on disk
PENDING=()               # "archive|url|member" still to extract or download
OUTPUT_NAMES=(data-bin raw tmp tok train.* valid.* test.* code code.* spm.* .prep-done)

die() { printf '\nERROR: %s\n' "$*" >&2; exit 1; }
note() { printf '    %s\n' "$*"; }
step() {
    STEP_NO=$((STEP_NO + 1)) STEP_NAME=$*
    printf '\n==> [%d] %s  (%s)\n' "$STEP_NO" "$*" "$(date +%H:%M:%S)"
}
trap 'printf "\nFAILED in step [%s] %s. %s is incomplete; rerunning the same command starts over.\n" \
      "$STEP_NO" "$STEP_NAME" "${OUT_DIR:-the output directory}" >&2' ERR

# prep HELPER ARGS... : run the helper fairseq_localness/prep/HELPER.py
prep() { PYTHONPATH=$PREP_PYTHONPATH "$PY" -m "prep.$1" "${@:2}"; }

# tokenize_splits : tokenise RAW/{train,valid,test}.{SRC,TGT} into TOK/ (prep/tokenize.py picks the segmenter
# by language: jieba for zh, fugashi for ja, Moses otherwise), in one call
tokenize_splits() {
    local jobs=() split l
    for split in train valid test; do
        for l in $SRC $TGT; do jobs+=(--job "$l" "$RAWTXT/$split.$l" "$TOK/$split.$l"); done
    done
    prep tokenize tok --workers "$WORKERS" "${jobs[@]}"
}

# quiet LOG CMD... : run CMD with its output in LOG; show the end of LOG if it fails
quiet() {
    local log=$1; shift
    "$@" >"$log" 2>&1 || { tail -n 20 "$log" >&2; die "failed: $* (log: $log)"; }
}

common_usage() {
    cat <<EOF
Common options:
  --raw-dir DIR          already-downloaded inputs (archives as downloaded, or their extracted
                         files); the only way to run offline. Without it, inputs are downloaded
                         into OUT/orig from the official URLs (wget or curl).
  --out DIR              output directory (required)
  --bpe-tokens N         BPE merges (subword-nmt) or vocabulary size (sentencepiece) [${BPE_TOKENS}]
  --bpe TOOL             subword-nmt (default) or sentencepiece
  --joined-dictionary    one BPE model and one dictionary for both languages (shared embeddings)
  --no-joined-dictionary separate BPE models and dictionaries      [default: $( ((JOINED)) && echo joined || echo separate)]
  --workers N            processes for tokenisation, BPE and fairseq-preprocess [1]
  --force                rebuild even if OUT holds a finished run (replaces only this script's
                         outputs; downloads in OUT/orig are kept)
  -h, --help             this help
Environment: PYTHON=/path/to/python (default: the repository's .venv, else python3 on PATH);
it needs fairseq, sacremoses, subword-nmt (and jieba / fugashi+unidic-lite / sentencepiece).
EOF
}

need_value() { [[ $# -ge 2 && -n $2 && $2 != --* ]] || die "$1 needs a value (see --help)"; }
is_int() { [[ $1 =~ ^[1-9][0-9]*$ ]]; }

parse_args() {
    ORIG_ARGS=("$@")
    printf -v QUOTED_ARGS '%q ' "$@"; QUOTED_ARGS=${QUOTED_ARGS% }
    while (($#)); do
        if [[ $1 == --*=* ]]; then set -- "${1%%=*}" "${1#*=}" "${@:2}"; fi
        case $1 in
            --raw-dir) need_value "$@"; RAW_DIR=$2; shift 2 ;;
            --out) need_value "$@"; OUT_DIR=$2; shift 2 ;;
            --bpe-tokens) need_value "$@"; is_int "$2" || die "--bpe-tokens must be a positive integer, got '$2'"
                BPE_TOKENS=$2; shift 2 ;;
            --bpe) need_value "$@"; [[ $2 == subword-nmt || $2 == sentencepiece ]] \
                || die "--bpe must be subword-nmt or sentencepiece, got '$2'"; BPE_TOOL=$2; shift 2 ;;
            --joined-dictionary) JOINED=1; shift ;;
            --no-joined-dictionary) JOINED=0; shift ;;
            --workers) need_value "$@"; is_int "$2" || die "--workers must be a positive integer, got '$2'"
                WORKERS=$2; shift 2 ;;
            --force) FORCE=1; shift ;;
            -h|--help) usage; exit 0 ;;
            *)  SHIFT=0
                if declare -F script_option >/dev/null; then script_option "$@"; fi
                ((SHIFT > 0)) || die "unknown option '$1' (see $SCRIPT_NAME --help)"
                shift "$SHIFT" ;;
        esac
    done
    [[ -n $OUT_DIR ]] || die "--out DIR is required (see $SCRIPT_NAME --help)"
    [[ -z $RAW_DIR || -d $RAW_DIR ]] || die "--raw-dir '$RAW_DIR' is not a directory"
    [[ -n $PY ]] || die "no python found: put python3 on PATH or set PYTHON=/path/to/python"
    OUT_DIR=$(realpath -m "$OUT_DIR")
    if [[ -n $RAW_DIR ]]; then
        RAW_DIR=$(realpath "$RAW_DIR")
        case $RAW_DIR/ in
            "$OUT_DIR"/orig/*) ;;
            "$OUT_DIR"/*) die "--raw-dir must not be --out or inside it (other than OUT/orig): outputs there may be replaced" ;;
        esac
    fi
    ORIG=$OUT_DIR/orig TMP=$OUT_DIR/tmp TOK=$OUT_DIR/tok RAWTXT=$OUT_DIR/raw
}

# require_modules MODULE... : fail listing every python module that cannot be found
require_modules() {
    local missing
    [[ $BPE_TOOL == sentencepiece ]] && set -- "$@" sentencepiece
    missing=$("$PY" -c 'import importlib.util as u, sys
print(" ".join(m for m in sys.argv[1:] if u.find_spec(m) is None))' "$@") \
        || die "cannot run $PY"
    [[ -z $missing ]] || die "python ($PY) lacks module(s): $missing. Install the package with its extras \
(pip install -e '.[ja]' in the repository) or set PYTHON to the right interpreter."
}

# Refuse to touch a finished run (unless --force) or a foreign non-empty directory.
prepare_out_dir() {
    local rerun="$0 $QUOTED_ARGS --force"
    if [[ -e $OUT_DIR/.prep-done ]]; then
        ((FORCE)) || die "$OUT_DIR already holds finished data ($(head -n1 "$OUT_DIR/.prep-done")).
Nothing was changed. To rebuild it, rerun with --force:
  bash $rerun
or choose another --out."
        note "--force: replacing the previous outputs in $OUT_DIR (downloads in orig/ are kept)"
    elif [[ -d $OUT_DIR && -n $(ls -A "$OUT_DIR") && ! -e $OUT_DIR/.prep-started ]]; then
        ((FORCE)) || die "$OUT_DIR is not empty and was not created by $SCRIPT_NAME; refusing to write into it.
Choose a new or empty --out, or pass --force to write there anyway (only these names are replaced:
${OUTPUT_NAMES[*]})."
    fi
    local name
    if [[ -d $OUT_DIR ]]; then
        for name in "${OUTPUT_NAMES[@]}"; do
            # shellcheck disable=SC2086  # the names are globs on purpose
            (cd "$OUT_DIR" && rm -rf -- $name)
        done
    fi
    mkdir -p "$OUT_DIR" "$TMP" "$TOK" "$RAWTXT"
    printf '%s %s\n' "$SCRIPT_NAME" "$(date '+%F %T')" > "$OUT_DIR/.prep-started"
}

# need SOURCE URL [MEMBER...]
#   SOURCE is an archive holding MEMBERs (paths inside it), or a plain file when no MEMBER is
#   given. Each needed file is taken from --raw-dir (extracted file or the archive), else
#   downloaded from URL into OUT/orig. URL "" means it cannot be downloaded (licensed data).
need() {
    local source=$1 url=$2 m; shift 2
    (($#)) || set -- "$source"
    for m in "$@"; do
        if [[ -n $RAW_DIR && -f $RAW_DIR/$m ]]; then
            FILE_OF[$m]=$RAW_DIR/$m
        else
            PENDING+=("$source|$url|$m")
        fi
    done
}

download() {
    local url=$1 dst=$2
    note "downloading $url"
    if command -v wget >/dev/null; then
        wget -q --tries=2 --timeout=60 -O "$dst.part" "$url" && mv "$dst.part" "$dst" && return 0
    elif command -v curl >/dev/null; then
        curl -fsSL --retry 1 --connect-timeout 60 -o "$dst.part" "$url" && mv "$dst.part" "$dst" && return 0
    else
        note "neither wget nor curl is installed"; return 2
    fi
    rm -f "$dst.part"; return 1
}

# Resolve everything asked for with `need`: locate (or download) each source, then extract.
# Everything that is missing is reported in one message.
fetch_inputs() {
    local entry source url m s sources=() problems=()
    declare -A url_of=() members_of=() path_of=()
    for entry in "${PENDING[@]}"; do
        IFS='|' read -r source url m <<<"$entry"
        [[ -v "url_of[$source]" ]] || sources+=("$source")
        url_of[$source]=$url
        [[ $m == "$source" ]] || members_of[$source]+="$m "
    done
    for s in "${sources[@]}"; do
        local what="$s${members_of[$s]:+ (or its files: ${members_of[$s]% })}"
        if [[ -n $RAW_DIR && -f $RAW_DIR/$s ]]; then path_of[$s]=$RAW_DIR/$s
        elif [[ -n $RAW_DIR ]]; then problems+=("$what")
        elif [[ -f $ORIG/$s ]]; then path_of[$s]=$ORIG/$s      # downloaded by an earlier run
        elif [[ -z ${url_of[$s]} ]]; then problems+=("$what: cannot be downloaded, pass --raw-dir")
        elif mkdir -p "$ORIG" && download "${url_of[$s]}" "$ORIG/$s"; then path_of[$s]=$ORIG/$s
        else problems+=("$s  <- ${url_of[$s]}")
        fi
    done
    if ((${#problems[@]})) && [[ -n $RAW_DIR ]]; then
        die "missing input(s) in --raw-dir $RAW_DIR:
$(printf '  %s\n' "${problems[@]}")
Expected inside $RAW_DIR$( ((${#members_of[@]})) && echo ": each archive as downloaded, or the listed files
extracted from it (same relative paths)." || echo " (same relative paths).")$(for s in "${sources[@]}"; do [[ -z ${url_of[$s]} ]] || printf '\n  %s  <- %s' "$s" "${url_of[$s]}"; done)"
    elif ((${#problems[@]})); then
        die "could not download (no network, or the URL moved):
$(printf '  %s\n' "${problems[@]}")
Fetch these files yourself into a directory DIR and rerun with --raw-dir DIR, e.g.
  bash $0 $QUOTED_ARGS --raw-dir DIR"
    fi
    for s in "${sources[@]}"; do
        local members=()
        read -r -a members <<<"${members_of[$s]:-}"
        if ((${#members[@]} == 0)); then FILE_OF[$s]=${path_of[$s]}; continue; fi
        mkdir -p "$ORIG"
        tar -xf "${path_of[$s]}" -C "$ORIG" -- "${members[@]}" 2>/dev/null || true
        local absent=()
        for m in "${members[@]}"; do
            if [[ -f $ORIG/$m ]]; then FILE_OF[$m]=$ORIG/$m; else absent+=("$m"); fi
        done
        ((${#absent[@]} == 0)) || die "archive ${path_of[$s]} lacks: ${absent[*]}
(its first entries: $(tar -tf "${path_of[$s]}" 2>/dev/null | head -n 8 | tr '\n' ' '))"
        note "extracted ${#members[@]} file(s) from ${path_of[$s]}"
    done
    PENDING=()
}

# input NAME : path of a file asked for with `need`
input() { printf '%s' "${FILE_OF[$1]:?internal error: $1 was not requested with need}"; }

# check_parallel SRC TGT [SRC TGT ...] : equal line counts and valid UTF-8
check_parallel() { prep checks parallel "$@"; }

# split_every N IN KEEP EVERY : every N-th line of IN to EVERY, the others to KEEP (fairseq's valid split)
split_every() {
    awk -v n="$1" -v keep="$3" -v every="$4" '{ if (NR % n == 0) print > every; else print > keep }' "$2"
}

# bpe_all IN_DIR OUT_DIR : learn BPE on IN_DIR/train.*, apply it to IN_DIR/{train,valid,test}.*
bpe_all() {
    local in=$1 out=$2 l split model
    local groups=("$SRC $TGT")
    ((JOINED)) || groups=("$SRC" "$TGT")
    local g
    for g in "${groups[@]}"; do
        local langs=($g) suffix=""
        ((JOINED)) || suffix=.${langs[0]}
        local train_files=()
        for l in "${langs[@]}"; do train_files+=("$in/train.$l"); done
        if [[ $BPE_TOOL == subword-nmt ]]; then
            model=$OUT_DIR/code$suffix
            note "learning $BPE_TOKENS BPE merges (subword-nmt) on ${train_files[*]}"
            cat "${train_files[@]}" > "$TMP/bpe-train.txt"
            quiet "$TMP/learn_bpe.log" "$PY" -m subword_nmt.learn_bpe -s "$BPE_TOKENS" -i "$TMP/bpe-train.txt" -o "$model"
            rm -f "$TMP/bpe-train.txt"
            for l in "${langs[@]}"; do for split in train valid test; do
                "$PY" -m subword_nmt.apply_bpe -c "$model" --num-workers "$WORKERS" \
                    -i "$in/$split.$l" -o "$out/$split.$l"
            done; done
        else
            model=$OUT_DIR/spm$suffix
            note "training a $BPE_TOKENS-piece sentencepiece BPE model on ${train_files[*]}"
            prep spm train --model-prefix "$model" --vocab-size "$BPE_TOKENS" --threads "$WORKERS" "${train_files[@]}"
            local pairs=()
            for l in "${langs[@]}"; do for split in train valid test; do
                pairs+=("$in/$split.$l" "$out/$split.$l")
            done; done
            prep spm encode --model "$model.model" "${pairs[@]}"
        fi
        note "BPE model: $model$([[ $BPE_TOOL == sentencepiece ]] && echo .model)"
    done
}

# binarize : fairseq-preprocess OUT/{train,valid,test} into OUT/data-bin
binarize() {
    local args=()
    ((JOINED)) && args+=(--joined-dictionary)
    rm -rf "$OUT_DIR/data-bin"
    quiet "$TMP/preprocess.log" "$PY" -m fairseq_cli.preprocess --source-lang "$SRC" --target-lang "$TGT" \
        --trainpref "$OUT_DIR/train" --validpref "$OUT_DIR/valid" --testpref "$OUT_DIR/test" \
        --destdir "$OUT_DIR/data-bin" --workers "$WORKERS" "${args[@]}"
    note "fairseq-preprocess done$( ((JOINED)) && echo ' (joined dictionary)') -> $OUT_DIR/data-bin"
}

# The raw test reference for sacreBLEU, relative to data-bin: raw/test-ref.TGT (the published
# text, where the tokeniser input raw/test.TGT was altered as fairseq does), else raw/test.TGT.
detok_ref_name() {
    if [[ -f $RAWTXT/test-ref.$TGT ]]; then echo "../raw/test-ref.$TGT"
    elif [[ -f $RAWTXT/test.$TGT ]]; then echo "../raw/test.$TGT"
    fi
}

# finish : final report, mark the run as finished
finish() {
    step "Summary"
    prep checks report "$OUT_DIR" "$SRC" "$TGT"
    # read by scripts/evaluate.sh for its defaults (BPE type, target language, casing, reference) and by
    # scripts/reproduce.sh (corpus: the training data's name; train_pairs: its sentence pairs after cleaning)
    "$PY" -c 'import json, sys
keys = ("script", "src", "tgt", "bpe", "lowercased", "compound_split", "tok_ref", "detok_ref", "corpus", "train_pairs")
info = dict(zip(keys, sys.argv[1:]))
info["lowercased"], info["compound_split"] = info["lowercased"] == "1", info["compound_split"] == "1"
info["detok_ref"] = info["detok_ref"] or None
info["train_pairs"] = int(info["train_pairs"])
json.dump(info, open(sys.argv[-1], "w"), indent=1)' "$SCRIPT_NAME" "$SRC" "$TGT" "${BPE_TOOL/-/_}" \
        "${LOWERCASED:-0}" "${COMPOUND_SPLIT:-0}" "../tok/test.$TGT" \
        "$(detok_ref_name)" "$CORPUS" "$(wc -l < "$OUT_DIR/train.$SRC")" "$OUT_DIR/data-bin/prep-info.json"
    note "corpus: $CORPUS, $(wc -l < "$OUT_DIR/train.$SRC") training pairs (data-bin/prep-info.json)"
    printf '%s %s | %s\n' "$SCRIPT_NAME" "$(date '+%F %T')" "$QUOTED_ARGS" > "$OUT_DIR/.prep-done"
    rm -f "$OUT_DIR/.prep-started"
    printf '\nDone: %s\n  train:    fairseq-train %s --user-dir %s ...\n  evaluate: bash %s CHECKPOINT_DIR %s\n' \
        "$OUT_DIR" "$OUT_DIR/data-bin" "$REPO_DIR/fairseq_localness" "$REPO_DIR/scripts/evaluate.sh" \
        "$OUT_DIR/data-bin"
}

# --- sentence classification (prepare-sst2.sh, prepare-imdb.sh, prepare-sva.sh): $TOK/{input0,label}/{train,valid,test}.txt ---

# classification_binarize : fairseq-preprocess --only-source of input0/ and label/ into OUT/data-bin, the
# layout of fairseq's sentence_prediction task
classification_binarize() {
    step "Binarise (fairseq-preprocess --only-source, input0 and label)"
    local key
    for key in input0 label; do
        quiet "$TMP/preprocess-$key.log" "$PY" -m fairseq_cli.preprocess --only-source \
            --trainpref "$TOK/$key/train.txt" --validpref "$TOK/$key/valid.txt" --testpref "$TOK/$key/test.txt" \
            --destdir "$OUT_DIR/data-bin/$key" --workers "$WORKERS"
    done
    note "-> $OUT_DIR/data-bin (input0 vocabulary: $(wc -l < "$OUT_DIR/data-bin/input0/dict.txt") words)"
}

# --- language-model corpora (prepare-1bw.sh, prepare-lm-news-en.sh): $TOK/{train,valid,test}.txt ---

# lm_binarize VOCAB_ARGS... : fairseq-preprocess --only-source (language_modeling) into OUT/data-bin, with the
# vocabulary options given (--thresholdsrc N: the words seen at least N times in train; --nwordssrc N: N entries)
lm_binarize() {
    rm -rf "$OUT_DIR/data-bin"
    quiet "$TMP/preprocess.log" "$PY" -m fairseq_cli.preprocess --only-source "$@" \
        --trainpref "$TOK/train.txt" --validpref "$TOK/valid.txt" --testpref "$TOK/test.txt" \
        --destdir "$OUT_DIR/data-bin" --workers "$WORKERS"
}

# lm_finish : sizes (sentences, tokens, <unk> rates from fairseq-preprocess; vocabulary), data-bin/prep-info.json
# (script, corpus, train_sentences), mark the run finished
lm_finish() {
    "$PY" -c 'import json, sys
json.dump({"script": sys.argv[1], "corpus": sys.argv[2], "train_sentences": int(sys.argv[3])}, open(sys.argv[4], "w"),
          indent=1)' "$SCRIPT_NAME" "$CORPUS" "$(wc -l < "$TOK/train.txt")" "$OUT_DIR/data-bin/prep-info.json"
    note "corpus: $CORPUS, $(wc -l < "$TOK/train.txt") training sentences (data-bin/prep-info.json)"
    # fairseq-preprocess's own counts: tokens include one </s> a sentence
    grep -o '[^/]*\.txt: [0-9]* sents, [0-9]* tokens, [0-9.]*% replaced' "$TMP/preprocess.log" \
        | sed 's/^/    /; s/replaced$/replaced by <unk>/' || true
    note "vocabulary: $(grep -vc '^madeupword' "$OUT_DIR/data-bin/dict.txt") words ($OUT_DIR/data-bin/dict.txt, \
padded with madeupword* to a multiple of 8; fairseq adds 4 special symbols)"
    printf '%s %s | %s\n' "$SCRIPT_NAME" "$(date '+%F %T')" "$QUOTED_ARGS" > "$OUT_DIR/.prep-done"
    rm -f "$OUT_DIR/.prep-started"
    printf '\nDone: %s\n  train: fairseq-train %s --user-dir %s --task language_modeling --arch transformer_lm_diffwin ...\n' \
        "$OUT_DIR" "$OUT_DIR/data-bin" "$REPO_DIR/fairseq_localness"
    printf '  (docs/tasks.md)\n'
}
