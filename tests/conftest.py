"""Shared fixtures: real tokenizer files loaded once per session in batchtok and the oracle."""

from __future__ import annotations

import functools

import pytest
import tokenizers

import batchtok
from tests.support.fixtures import tokenizer_path

BYTE_LEVEL_FILES = ("llama3", "qwen3", "gpt4o", "gpt35turbo")


@functools.cache
def load_pair(name: str) -> tuple[batchtok.Tokenizer, tokenizers.Tokenizer]:
    path = tokenizer_path(name)
    return batchtok.Tokenizer.from_file(path), tokenizers.Tokenizer.from_file(str(path))


@pytest.fixture(params=BYTE_LEVEL_FILES)
def byte_level_pair(request):
    return (request.param, *load_pair(request.param))
