# Sourced by the scripts: the Python that has fairseq installed (and fairseq_localness, or the checkout on PYTHONPATH).
# $PYTHON wins; then the repository's .venv; then python3 on PATH.
if [[ -z "${PYTHON:-}" ]]; then
  repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [[ -x "$repo_root/.venv/bin/python" ]]; then
    PYTHON="$repo_root/.venv/bin/python"
  else
    PYTHON="$(command -v python3 || command -v python || true)"
  fi
fi
if [[ -z "$PYTHON" ]]; then
  echo "error: no python3 or python on PATH; install the project (pip install -e .) or set PYTHON=" >&2
  exit 1
fi
# fairseq only: compare.sh, evaluate.sh and score_task.sh put the checkout on PYTHONPATH after this check
if ! "$PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('fairseq') is None)" 2>/dev/null; then
  echo "error: $PYTHON cannot import fairseq; install the project (pip install -e .) or set PYTHON=" >&2
  exit 1
fi
export PYTHON
