"""Shared fixtures: real tokenizer files loaded once per session in batchtok and the oracle."""

from __future__ import annotations

import functools
import json

import pytest

# Detailed assertion output from the shared comparison helpers too.
pytest.register_assert_rewrite("tests.oracle", "tests.support.oracle_harness")

import tokenizers  # noqa: E402

import batchtok  # noqa: E402
from tests.support.fixtures import fixture_path, part3_names  # noqa: E402

BYTE_LEVEL_FILES = ("llama3", "qwen3", "gpt4o", "gpt35turbo")
# The SentencePiece-BPE lineage: Llama-2's layout, its Mistral-layout twin, Gemma 3.
SENTENCEPIECE_FILES = ("llama2", "llama2-mistral", "gemma3")

METASPACE_FIRST = {
    "type": "Metaspace",
    "replacement": "\u2581",
    "prepend_scheme": "first",
    "split": False,
}


def mistral_layout(llama2: dict) -> dict:
    """The Llama-2 file rewritten as transformers' converter writes Mistral v0.1: no
    normalizer, a Metaspace pre-tokenizer (prepend_scheme first, no split)."""
    data = dict(llama2)
    data["normalizer"] = None
    data["pre_tokenizer"] = dict(METASPACE_FIRST)
    return data


@functools.cache
def tokenizer_json(name: str) -> str:
    if name == "llama2-mistral":
        llama2 = json.loads(fixture_path("llama2").read_text(encoding="utf-8"))
        return json.dumps(mistral_layout(llama2), ensure_ascii=False)
    return fixture_path(name).read_text(encoding="utf-8")


# A loaded Gemma 3 holds ~450 MB in batchtok: keep only the last few files loaded, so a test
# process's memory does not grow with the number of files and modules it has run. Tests that
# take a file as a module-scoped parameter run grouped by file, so each is loaded once a module.
LOADED_FILES = 2
# The piece cache of a loaded tokenizer, in MB (the library's default sizes it for a job).
TEST_CACHE_MB = 32


@functools.lru_cache(maxsize=LOADED_FILES)
def load_pair(name: str) -> tuple[batchtok.Tokenizer, tokenizers.Tokenizer]:
    text = tokenizer_json(name)
    ours = batchtok.Tokenizer.from_str(text)
    ours.set_cache_size(TEST_CACHE_MB)
    return ours, tokenizers.Tokenizer.from_str(text)


REAL_FILES = BYTE_LEVEL_FILES + SENTENCEPIECE_FILES

# Issue-5 fixtures (tests/support/fixtures.py): the real all-MiniLM-L6-v2 file, SentencePiece
# Unigram files converted by transformers, files trained by tokenizers' own trainers, and the
# kitchen sinks.
PART3_FILES = part3_names()
ALL_FILES = REAL_FILES + PART3_FILES


@pytest.fixture(scope="module", params=REAL_FILES)
def real_pair(request):
    """(name, batchtok tokenizer, oracle tokenizer) for each real tokenizer file."""
    return (request.param, *load_pair(request.param))
