"""Pytest fixtures and hooks shared by the whole suite (helpers live in tests/support/)."""

from __future__ import annotations

import pytest

# Detailed assertion output from the shared comparison helpers too.
pytest.register_assert_rewrite("tests.support.oracle", "tests.support.models")

from hypothesis import settings  # noqa: E402

from tests.support import tier  # noqa: E402
from tests.support.caches import clear_module_caches  # noqa: E402
from tests.support.oracle import REAL_FILES, pair_for  # noqa: E402

# The default tier (CI's) draws the same hypothesis examples on every run, so whether a
# submission lands does not depend on luck; --full draws new ones each run and keeps exploring.
settings.register_profile("default-tier", derandomize=True)
settings.register_profile("full-tier", derandomize=False)
settings.load_profile("full-tier" if tier.FULL else "default-tier")


@pytest.fixture(scope="module", params=REAL_FILES)
def real_pair(request):
    """(name, batchtok tokenizer, oracle tokenizer) for each real tokenizer file."""
    return (request.param, *pair_for(request.param))


@pytest.fixture(autouse=True, scope="module")
def _empty_module_caches():
    """Caches registered with ``per_module_cache`` do not outlive their module."""
    yield
    clear_module_caches()
