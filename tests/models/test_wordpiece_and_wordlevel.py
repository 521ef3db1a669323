"""WordPiece and WordLevel against the oracle on tiny hand-built and random vocabularies: greedy
longest match, the continuing-subword prefix (empty, multi-char, a letter), the whole-word unk
and max_input_chars_per_word, and the unk token missing from the vocab (an error only when it is
needed).
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.models import (
    WORDS_SPLIT,
    model_file,
)
from tests.support.oracle import (
    assert_agree,
    pair_from_json,
)
from tests.support.tier import examples


def wordpiece(vocab, unk="[UNK]", prefix="##", max_chars=100) -> str:
    model = {
        "type": "WordPiece",
        "unk_token": unk,
        "continuing_subword_prefix": prefix,
        "max_input_chars_per_word": max_chars,
        "vocab": {t: i for i, t in enumerate(vocab)},
    }
    return model_file(
        model, {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed", "invert": False}
    )


WP_VOCAB = [
    "[UNK]",
    "a",
    "b",
    "ab",
    "abc",
    "##b",
    "##c",
    "##bc",
    "##d",
    "é",
    "##é",
    "🦀",
    "##🦀",
    "c",
    "un",
    "##aff",
    "##able",
    "##a",
]
WP_TEXTS = [
    "a b ab abc abd abcd",
    "abe",
    "aé aéé é🦀 🦀🦀",
    "unaffable un unable",
    "x",
    "ax",
    "abcx abc",
    "aaaa",
    "a" * 7,
    "ab" * 4,
    " ",
    "",
]


@pytest.mark.parametrize("prefix", ["##", "", "▁▁", "a"])
@pytest.mark.parametrize("max_chars", [0, 1, 3, 100])
def test_wordpiece_rules(prefix, max_chars):
    vocab = [t.replace("##", prefix) if t.startswith("##") else t for t in WP_VOCAB]
    vocab = list(dict.fromkeys(vocab))
    assert_agree(pair_from_json(wordpiece(vocab, prefix=prefix, max_chars=max_chars)), WP_TEXTS)


def test_wordpiece_and_wordlevel_unk_missing_fails_only_when_needed():
    wp = pair_from_json(wordpiece(["a", "##b"], unk="[UNK]"))
    wl_model = {"type": "WordLevel", "vocab": {"a": 0, "b": 1}, "unk_token": "[UNK]"}
    wl = pair_from_json(model_file(wl_model, WORDS_SPLIT))
    for pair in (wp, wl):
        assert pair[0].encode("a", False).ids == pair[1].encode("a", add_special_tokens=False).ids
        assert_agree(pair, ["a", "ab", "a c", "c", "abab", ""])
        with pytest.raises(Exception, match="Missing \\[UNK\\] token"):
            pair[0].encode("c")


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text("abcé", min_size=1, max_size=4), min_size=1, max_size=14),
    st.lists(st.text("abcé ", max_size=12), min_size=1, max_size=4),
    st.sampled_from(["##", "", "b"]),
    st.integers(0, 8),
)
def test_wordpiece_random_vocabularies(pieces, texts, prefix, max_chars):
    vocab = ["[UNK]"] + [p if i % 2 else prefix + p for i, p in enumerate(pieces)]
    assert_agree(
        pair_from_json(wordpiece(list(dict.fromkeys(vocab)), prefix=prefix, max_chars=max_chars)),
        texts,
    )
