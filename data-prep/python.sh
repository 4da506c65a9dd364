# Sourced by the data-prep/prepare-*.sh scripts (after setting `here`, their directory): the checkout goes on
# PYTHONPATH (the scripts are the package localness_prep, which imports neither torch nor fairseq) and PYTHON is
# the interpreter that runs them: $PYTHON wins; then the repository's .venv; then python3 on PATH. Unlike
# scripts/python.sh it does not check for fairseq: a script's --help needs none, and each script names the
# modules it lacks after checking its arguments.
LOCALNESS_PREP_REPO=$(dirname "$here")
if [[ -z ${PYTHON:-} ]]; then
    if [[ -x $LOCALNESS_PREP_REPO/.venv/bin/python ]]; then
        PYTHON=$LOCALNESS_PREP_REPO/.venv/bin/python
    else
        PYTHON=$(command -v python3 || command -v python) \
            || { printf '\nERROR: %s\n' "no python found: put python3 on PATH or set PYTHON=/path/to/python" >&2; exit 1; }
    fi
fi
export LOCALNESS_PREP_REPO PYTHONPATH=$LOCALNESS_PREP_REPO${PYTHONPATH:+:$PYTHONPATH}
