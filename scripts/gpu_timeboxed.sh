#!/usr/bin/env bash
# The GPU checks in one time-boxed pass, for a GPU at hand for minutes rather than hours (see docs/gpu.md).
#
#   scripts/gpu_timeboxed.sh            # about 9.5 minutes; results in $OUT (else runs/gpu-timeboxed)
#
# Phase A runs the correctness checks side by side on the one GPU, each under its own time limit:
#   the CUDA tests (tests/test_gpu.py, tests/test_flex.py) in 8 pytest-xdist workers; the suite's `train` stage
#   (every family, --fp16 and --bf16); and the comparison command with --gpus 1 --fp16 on Multi30k
#   (Transformer and DMAN, seed 1; needs runs/data/multi30k_de_en from data-prep/prepare-multi30k.sh).
# Phase B then times the attention backends alone on the GPU, at base size in fp16, in the benchmark's subprocess
#   mode (a fresh process per model; `python -m fairseq_localness.gpu.record backends LOG` turns its lines into
#   ratios to fairseq's transformer measured in the same run). BACKEND_GROUPS (default "core biases") picks the
#   groups: core, biases, others (training at 1,024 tokens, flex against sdpa), decode (beam search, 64 tokens) and
#   profile (DMAN's top GPU kernels per step, both backends).
# Every log is packed into $OUT/gpu_timeboxed_logs.tar.gz after each phase (written whole, then renamed), so a
# pass cut short keeps what finished; an earlier pass's tarball there is kept (the script refuses to start) unless
# FORCE=1. Needs .gpu/ from `python -m fairseq_localness.gpu.suite prepare`, as scripts/gpu_suite.sh does.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
python="${PYTHON:-python3}"
out="${OUT:-$repo/runs/gpu-timeboxed}"
if [ -e "$out/gpu_timeboxed_logs.tar.gz" ] && [ "${FORCE:-0}" != 1 ]; then
    echo "gpu_timeboxed.sh: $out/gpu_timeboxed_logs.tar.gz holds an earlier pass: set OUT to another folder," \
        "or FORCE=1 to replace it" >&2
    exit 2
fi
phase_a_s="${PHASE_A_S:-200}"
# on an H200 one model took 11-16 s through SDPA and 37-68 s through Flex (its compile included), so a group of
# seven needs about 200 s; the defaults keep the whole pass within 600 s
phase_b_s="${PHASE_B_S:-170}"
# kept after the run, checkpoints included: a later command on the same machine can still read it
work="$(mktemp -d /tmp/gpu-timeboxed.XXXXXX)"
mkdir -p "$out"
start=$(date +%s)
mark() { echo "[$(( $(date +%s) - start )) s] $*" | tee -a "$work/timeline.txt"; }
# logs and result files only: checkpoints and binarized data would exceed what a short run can copy back
pack() {
    tar -czf "$out/gpu_timeboxed_logs.tar.gz.partial" --exclude='*.pt' --exclude='*.bin' --exclude='*.idx' \
        -C "$work" . 2>/dev/null && mv "$out/gpu_timeboxed_logs.tar.gz.partial" "$out/gpu_timeboxed_logs.tar.gz"
}

wheels="$repo/.gpu/wheels"
[ -d "$wheels" ] || { echo "gpu_timeboxed.sh: $wheels is missing: run 'python -m fairseq_localness.gpu.suite prepare' and carry .gpu" >&2; exit 2; }
site=/tmp/site
if ! PYTHONPATH="$site" "$python" -c "import fairseq, hydra, omegaconf, antlr4" 2>/dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$wheels"/*.whl || exit 3
    "$python" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target "$site" \
        "$wheels"/antlr4-python3-runtime-*.tar.gz || exit 3
fi
export PYTHONPATH="$site:$repo${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 PYTHONWARNINGS=ignore PYTHON="$python"
{ date -u; nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
  "$python" -c "import torch, fairseq; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(), 'fairseq', fairseq.__version__)"
} > "$work/machine.txt" 2>&1
cat "$work/machine.txt"
mark "installed"

# ---- phase A: correctness, side by side -------------------------------------------------------------------------
xdist=()
"$python" -c "import xdist" 2>/dev/null && xdist=(-n 8)
( timeout -k 10 "$phase_a_s" "$python" -m pytest -v -p no:cacheprovider "${xdist[@]}" tests/test_gpu.py tests/test_flex.py \
      -k "not cpu_smoke" > "$work/tests.log" 2>&1; mark "tests exit $?" ) &
( OMP_NUM_THREADS=1 timeout -k 10 "$phase_a_s" "$python" -m fairseq_localness.gpu.suite run --out "$work/train" \
      --stages train --updates 300 --parallel 10 > "$work/train.log" 2>&1; mark "train exit $?" ) &
if [ -d runs/data/multi30k_de_en/data-bin ]; then
    ( OMP_NUM_THREADS=1 timeout -k 10 "$phase_a_s" "$python" -m fairseq_localness.experiments.compare multi30k_de_en \
          --archs transformer,transformer_dman --seeds 1 --gpus 1 --fp16 --jobs 2 --work "$work/compare" \
          > "$work/compare.log" 2>&1; mark "compare exit $?" ) &
fi
wait
pack
mark "phase A done"

# ---- phase B: attention backends, timed alone ------------------------------------------------------------------
# the benchmark's subprocess mode: one fresh process per model (its Flex compile included in the warmup), one line
# per measurement as it goes, so a run stopped by its limit keeps what it measured (gpu.record backends reads them)
bench() {  # NAME ARCHS BENCHMARK-OPTIONS...: fp16, one fresh process per model
    local name=$1 archs=$2
    shift 2
    timeout -k 10 "$phase_b_s" "$python" scripts/benchmark.py --archs "$archs" --dtype fp16 --device cuda --repeats 1 \
        "$@" --json "$work/backends_$name.json" > "$work/backends_$name.log" 2>&1
    mark "backends $name exit $?"
    pack
}
f=locality_attention_backend
pairs() {  # transformer, then every ARCH through flex and through sdpa
    local list=transformer arch
    for arch in "$@"; do list+=",$arch@$f=flex,$arch@$f=sdpa"; done
    echo "$list"
}
train_1024=(--seq-lens 1024 --steps 10 --warmup 2 --no-decode)  # training at 1,024 tokens, 10 timed steps
# decoding: beam 4, 64 tokens per sentence; --locality-attention-backend flex decodes through Flex, sdpa does not
decode_64=(--seq-lens 64 --steps 1 --warmup 1 --beam 4 --max-len 64)
# BACKEND_GROUPS picks the groups, in order (each gets PHASE_B_S); the default fits in 600 s with phase A
for group in ${BACKEND_GROUPS:-core biases}; do
    case $group in
        # DMAN first: a group's time limit stops its last models, and DMAN's flex/sdpa pair is the open question
        core) bench core "$(pairs transformer_dman transformer_csan1d transformer_gaussian_local)" "${train_1024[@]}" ;;
        biases) bench biases "$(pairs transformer_alibi transformer_t5bias transformer_sman)" "${train_1024[@]}" ;;
        others) bench others "$(pairs transformer_hybrid_local transformer_kerple transformer_fire)" "${train_1024[@]}" ;;
        decode) bench decode "$(pairs transformer_csan1d transformer_dman transformer_t5bias)" "${decode_64[@]}" ;;
        # where DMAN's training time goes: one interleaved round, the top kernels by GPU time per model
        profile) bench profile "$(pairs transformer_dman)" --seq-lens 1024 --interleaved 1 --profile 15 --no-decode ;;
        *) echo "gpu_timeboxed.sh: BACKEND_GROUPS: unknown group '$group' (core, biases, others, decode, profile)" >&2 ;;
    esac
done

# ---- summary ---------------------------------------------------------------------------------------------------
echo "== timeline"; cat "$work/timeline.txt"
echo "== tests"; grep -E "(FAILED|ERROR) " "$work/tests.log" | head -40; tail -3 "$work/tests.log"
echo "== train"; grep -h -E "loss=" "$work"/train/train_*.log 2>/dev/null | wc -l; tail -5 "$work/train.log"
cat "$work/train/gpu_suite.md" 2>/dev/null | sed -n '/## Training/,$p'
echo "== compare"; tail -25 "$work/compare.log"
for log in "$work"/backends_*.log; do echo "== ${log##*/}"; tail -25 "$log"; done
pack
