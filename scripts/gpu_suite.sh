#!/usr/bin/env bash
# The GPU suite in one call on an offline GPU machine (see docs/gpu.md): CUDA tests (FlexAttention's equality
# half included), short fp16/bf16 trainings, the benchmark and the attention-backend benchmark.
#
#   scripts/gpu_suite.sh [SUITE OPTIONS]     e.g. --stages tests,train   or   --stages benchmark,backends
#
# Needs .gpu/ from `python -m fairseq_localness.gpu.suite prepare` (wheels + binarized Multi30k), copied along
# with the checkout. Installs the wheels into /tmp/site (no network, no dependencies resolved), puts the plugin on
# PYTHONPATH, runs `python -m fairseq_localness.gpu.suite run`, and leaves gpu_suite.md, gpu_suite.json and every
# log (as gpu_suite_logs.tar.gz) in $OUT if it is set, else in runs/gpu-suite; an earlier run's files there are
# kept (the script refuses to start) unless FORCE=1. SUITE_S=N stops the suite after N seconds and keeps the
# stages it finished.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo"
python="${PYTHON:-python3}"
out="${OUT:-$repo/runs/gpu-suite}"
for earlier in "$out/gpu_suite.json" "$out/gpu_suite_logs.tar.gz"; do
    if [ -e "$earlier" ] && [ "${FORCE:-0}" != 1 ]; then
        echo "gpu_suite.sh: $earlier holds an earlier run: set OUT to another folder, or FORCE=1 to replace it" >&2
        exit 2
    fi
done
wheels="$repo/.gpu/wheels"
if [ ! -d "$wheels" ]; then
    echo "gpu_suite.sh: $wheels is missing: run 'python -m fairseq_localness.gpu.suite prepare' where PyPI is reachable and carry .gpu" >&2
    exit 2
fi
site=/tmp/site
if ! PYTHONPATH="$site" "$python" -c "import fairseq, hydra, omegaconf, antlr4" 2>/dev/null; then
    "$python" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$site" "$wheels"/*.whl
    # hydra's parser runtime exists only as a source archive; the image's setuptools builds it
    "$python" -m pip install -q --no-index --no-deps --no-build-isolation --no-cache-dir --target "$site" "$wheels"/antlr4-python3-runtime-*.tar.gz
fi
export PYTHONPATH="$site:$repo${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
work="$(mktemp -d /tmp/gpu-suite.XXXXXX)"
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader || true
status=0
# SUITE_S: a time limit in seconds (default none), set below the machine's own limit so that the copying below
# still runs; the suite writes its report after every stage, so the stages that finished are kept
timeout -k 10 "${SUITE_S:-0}" "$python" -m fairseq_localness.gpu.suite run --out "$work" "$@" || status=$?
mkdir -p "$out"
cp "$work"/gpu_suite.md "$work"/gpu_suite.json "$out"/ 2>/dev/null || true
tar -czf "$out/gpu_suite_logs.tar.gz.partial" -C "$work" . \
    && mv "$out/gpu_suite_logs.tar.gz.partial" "$out/gpu_suite_logs.tar.gz"
cat "$work/gpu_suite.md" 2>/dev/null || true
exit $status
