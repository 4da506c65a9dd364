# Sourced by the scripts: the Python that has fairseq and fairseq_localness installed.
# $PYTHON wins; then the repository's .venv; then python3 on PATH.
if [[ -z "${PYTHON:-}" ]]; then
  repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
  if [[ -x "$repo_root/.venv/bin/python" ]]; then
    PYTHON="$repo_root/.venv/bin/python"
  else
    PYTHON="$(command -v python3 || command -v python)"
  fi
fi
if ! "$PYTHON" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('fairseq') is None)" 2>/dev/null; then
  echo "error: $PYTHON cannot import fairseq; install the project (pip install -e .) or set PYTHON=" >&2
  exit 1
fi
export PYTHON
