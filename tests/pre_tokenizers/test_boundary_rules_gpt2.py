"""GPT-2's pattern (ByteLevel's regex) as boundary rules, against the engine's regex (itself
proven against Oniguruma) over arbitrary text, and the byte-level files that use it against
`tokenizers`, with and without ByteLevel's prefix space."""

from __future__ import annotations

import json

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer
from batchtok.pre_tokenizers.boundary_rules import JoinedRules
from batchtok.pre_tokenizers.boundary_rules_gpt2 import BYTE_LEVEL_RULES
from batchtok.utils.onig import OnigPattern
from tests.pre_tokenizers.test_boundary_rules import (
    PARTS,
    assert_bounds_are_the_pieces,
    assert_split_by_the_rules,
    count_calls,
    text,
)
from tests.support import adversarial, corpora
from tests.support.fixtures import REPO_ROOT
from tests.support.tier import docs, examples

PATTERN = OnigPattern(BYTE_LEVEL_RULES.source())
GPT2 = REPO_ROOT / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"

# what GPT-2's rules single out: contractions (lower case only: the upper ones are not), an
# apostrophe after a space, after a newline, inside punctuation; runs of blanks before each
# kind of run and at the end; digits of several scripts; marks, which are O
DENSE = "'stmdrvelSTLx字1٣² \t\n\r\u3000.-\u0301😀"
dense = st.text(st.sampled_from(DENSE), max_size=16)
batches = st.lists(st.one_of(text, dense, st.sampled_from(PARTS)), max_size=40)


def _regex(texts: list[str]) -> list[list[str]]:
    return [PATTERN.findall(t) for t in texts]


@settings(
    max_examples=examples(4000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(texts=batches)
def test_pieces_equal_the_regex(texts: list[str]) -> None:
    found = BYTE_LEVEL_RULES.pieces(texts)
    if any("\uffff" in t for t in texts):
        assert found is None  # the joint in a text: the batch is the regex's
    else:
        assert found == _regex(texts)
    assert BYTE_LEVEL_RULES.split_many(texts, PATTERN.findall) == _regex(texts)
    assert_bounds_are_the_pieces(BYTE_LEVEL_RULES, texts)


def test_adversarial_and_corpus_text() -> None:
    texts = adversarial.adversarial_strings()
    for kind in ("english", "code", "multilingual"):
        texts += corpora.sample_docs(kind, 20, 3000)
    texts = [t for t in texts if "\uffff" not in t]
    assert BYTE_LEVEL_RULES.pieces(texts) == _regex(texts)
    assert_bounds_are_the_pieces(BYTE_LEVEL_RULES, texts)


def _gpt2(add_prefix_space: bool) -> str:
    data = json.loads(GPT2.read_text(encoding="utf-8"))
    assert data["pre_tokenizer"]["type"] == "ByteLevel"
    data["pre_tokenizer"]["add_prefix_space"] = add_prefix_space
    return json.dumps(data)


@pytest.mark.parametrize("add_prefix_space", [False, True], ids=["plain", "prefix-space"])
def test_byte_level_files_split_batches_by_the_rules_as_the_oracle(
    add_prefix_space: bool, monkeypatch
) -> None:
    calls = count_calls(monkeypatch, JoinedRules)
    data = _gpt2(add_prefix_space)
    texts = adversarial.adversarial_strings()
    for kind in ("english", "code", "multilingual"):
        texts += docs(corpora.sample_docs(kind, 200, 3000), 60_000, f"boundary-gpt2:{kind}")
    texts += [t for t in PARTS if t] + ["", " ", "'s", " 's"]
    ours = Tokenizer.from_str(data)
    oracle = tokenizers.Tokenizer.from_str(data)
    want = [e.ids for e in oracle.encode_batch(texts, add_special_tokens=False)]
    assert_split_by_the_rules(ours, texts, want, calls)
