"""The worker's side of encoding a batch: ids appended to the output's array exactly as the
engine gives them row by row (whatever the rows: empty, failing, longer than a stream), and
special-token strings counted in texts scanned together exactly as scanned one by one."""

from __future__ import annotations

import re
from array import array
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import batchtok
from batchtok.runner.exec import encode
from batchtok.runner.exec.encode import Encoder, SpecialCounter
from tests.support.runner import GPT2
from tests.support.tier import examples

_GPT2 = batchtok.Tokenizer.from_file(GPT2)


class _Failing:
    """The GPT-2 tokenizer, except that a batch holding a text with "\\x07" fails, and so
    does that text alone (as an engine error on one row would)."""

    def __init__(self, tok: batchtok.Tokenizer) -> None:
        self.tok = tok

    def encode_batch_ids(self, texts, add_special_tokens=True, pairs=None):
        if any("\x07" in t for t in texts):
            raise ValueError("bell")
        return self.tok.encode_batch_ids(texts, add_special_tokens, pairs)

    def encode_ids_into(self, text, out, add_special_tokens=True):
        if "\x07" in text:
            raise ValueError("bell")
        return self.tok.encode_ids_into(text, out, add_special_tokens)


_TEXT = st.one_of(
    st.just(""),
    st.text(st.sampled_from("ab \n\x07é日"), max_size=30),
    st.text(max_size=20),
)


@settings(max_examples=examples(150), deadline=None)
@given(st.lists(_TEXT, max_size=25), st.integers(1, 60))
def test_encode_into_appends_each_rows_ids_as_the_engine_gives_them(
    texts: list[str], long_chars: int
) -> None:
    """Against the rows encoded one at a time: the ids one after another, their lengths, None
    and the error for a failing row; with texts over the long-row limit (encoded straight
    into the array) mixed with the others."""
    saved = encode.LONG_CHARS
    encode.LONG_CHARS = long_chars
    try:
        values = array("i", [7, 7])  # appended to, never replaced
        lengths, errors = Encoder(_Failing(_GPT2), True).encode_into(texts, None, values)
    finally:
        encode.LONG_CHARS = saved
    want_values, want_lengths = [7, 7], []
    for text in texts:
        if "\x07" in text:
            want_lengths.append(None)
            continue
        ids = _GPT2.encode_ids(text, True)
        want_values += ids
        want_lengths.append(len(ids))
    assert values.tolist() == want_values
    assert lengths == want_lengths
    assert sorted(errors) == [i for i, t in enumerate(texts) if "\x07" in t]
    assert all("bell" in message for message in errors.values())


def test_encode_into_with_pairs_appends_each_pairs_ids() -> None:
    texts, pairs = ["a b", "", "c d e"], ["x", "y z", ""]
    values = array("i")
    lengths, errors = Encoder(_GPT2, True).encode_into(texts, pairs, values)
    want = [_GPT2.encode_ids(t, True, p) for t, p in zip(texts, pairs)]
    assert not errors and lengths == [len(w) for w in want]
    assert values.tolist() == [i for w in want for i in w]


_CONTENT = st.text(st.sampled_from("<|>ab\x00\n"), max_size=5)  # "" too


@settings(max_examples=examples(300), deadline=None)
@given(
    st.lists(_CONTENT, max_size=12),
    st.lists(st.text(st.sampled_from("<|>ab\x00\x01\nc"), max_size=30), max_size=12),
    st.integers(1, 50),
)
def test_special_strings_counted_in_joined_texts_as_in_each_text_alone(
    contents: list[str], texts: list[str], join_chars: int
) -> None:
    """Contents that overlap, prefix one another, hold the usual separator (NUL) or newlines,
    more prefixes than the quick check takes; texts that begin or end inside a content; groups
    of any size, a text longer than a group alone."""
    saved = encode.JOIN_CHARS
    encode.JOIN_CHARS = join_chars
    try:
        counter = SpecialCounter(contents)
        got: Counter = Counter()
        counter.count(texts, got)
    finally:
        encode.JOIN_CHARS = saved
    want: Counter = Counter()
    if contents:
        ordered = sorted(set(contents), key=lambda c: (-len(c), c))
        pattern = re.compile("|".join(map(re.escape, ordered)))
        for text in texts:  # the definition: each text scanned by itself
            want.update(pattern.findall(text))
    assert got == want
    if counter.separator is not None:
        assert all(counter.separator not in c for c in contents)


def test_special_strings_of_many_prefixes_and_a_long_text() -> None:
    """More than 8 prefixes (no quick check), a text longer than a group."""
    contents = [f"<{c}{c}>" for c in "abcdefghijk"]
    texts = ["x<aa>" * 3, "<bb" * (encode.JOIN_CHARS // 3 + 5) + ">", "", "<kk><kk>"]
    got: Counter = Counter()
    SpecialCounter(contents).count(texts, got)
    assert got == Counter({"<aa>": 3, "<bb>": 1, "<kk>": 2})


@pytest.mark.parametrize("contents", [[], ["<s>"]])
def test_no_special_strings_counts_nothing(contents: list[str]) -> None:
    got: Counter = Counter()
    SpecialCounter(contents).count(["a", "b c"], got)
    assert got == Counter()
