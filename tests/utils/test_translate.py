"""SparseTranslate replaces only the chars a table changes, and must equal ``str.translate``
with that table on any text: chained replacements (a replacement holding a changed char),
deletions, chars beyond the BMP, regex-special chars, dense and sparse hits (each of the
three ways it replaces)."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok.utils.translate import _DENSE, SparseTranslate, ranges
from tests.support.tier import examples

CHARS = st.sampled_from(list("ab-]^[\\\n\t xyé\u0301\uffff\U00010000\U0001f600\u2581"))
TABLES = st.dictionaries(CHARS.map(ord), st.none() | st.text(CHARS, max_size=3), max_size=8)


@settings(max_examples=examples(500), deadline=None)
@given(TABLES, st.text(CHARS | st.characters(codec="utf-8", exclude_categories=("Cs",))))
def test_sparse_translate_equals_str_translate(table, text):
    sparse = SparseTranslate(table)
    # "\0" is never changed: it thins the hits out below the share that takes str.translate
    filler = "\0" * (_DENSE * len(text))
    for probe in (
        text,  # hits of any share: dense ones take str.translate
        text + filler,  # sparse hits, a Python call each
        (text + filler) * 9,  # sparse hits of few distinct chars: str.replace per char
    ):
        assert sparse(probe) == probe.translate(table)


@given(
    st.sets(
        st.characters(codec="utf-8", exclude_categories=("Cs",), max_codepoint=0xFFFF), min_size=1
    )
)
def test_ranges_match_exactly_their_chars(chars):
    pattern = re.compile(f"[{ranges(chars)}]")
    probe = "".join(chars) + "ab-]^[\\\u00e9\u0000\uffff"
    assert [c for c in probe if pattern.fullmatch(c)] == [c for c in probe if c in chars]
