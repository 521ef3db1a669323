"""Tokenizer files of the benchmarks by name (no side effects: safe to import anywhere)."""

from __future__ import annotations

import pathlib

from tests.support.fixtures import REPO_ROOT, fixture_path


def tokenizer_path(name: str) -> pathlib.Path:
    """The tokenizer.json of a fixture name (tests/support/fixtures.py, trained.py); ``gpt2``
    is the file bundled in configs/."""
    if name == "gpt2":
        return REPO_ROOT / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"
    return fixture_path(name)
