"""Caches that live for one test module.

Test modules cache what is costly to build (loaded tokenizers, trained vocabularies, oracle
encodings). A pytest-xdist worker runs many modules in one process, so an unbounded module-level
cache would grow with every module it ran. ``per_module_cache`` registers the cache here and
the autouse module fixture in ``tests/conftest.py`` empties them all when a module ends.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

F = TypeVar("F", bound=Callable)

_CACHES: list = []


def per_module_cache(fn: F | None = None, *, maxsize: int | None = 16):
    """``functools.lru_cache(maxsize)`` emptied at the end of each test module.

    Usable bare (``@per_module_cache``) or with a size (``@per_module_cache(maxsize=4)``)."""

    def wrap(f: F) -> F:
        cached = functools.lru_cache(maxsize=maxsize)(f)
        _CACHES.append(cached)
        return cached  # type: ignore[return-value]

    return wrap(fn) if fn is not None else wrap


def clear_module_caches() -> None:
    """Empty every cache registered with ``per_module_cache``."""
    for cached in _CACHES:
        cached.cache_clear()
