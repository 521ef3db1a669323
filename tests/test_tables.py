"""The committed Unicode tables (``batchtok/_tables/``, written by ``tools/gen_*_tables.py``) are
what the installed oracle says, and the pattern translator uses them."""

from __future__ import annotations

import pytest
import regex
from hypothesis import given, settings
from hypothesis import strategies as st
from tokenizers import Regex
from tokenizers.pre_tokenizers import Split

from batchtok._tables import bert as _bert_tables
from batchtok._tables import onig as _onig_tables
from batchtok._tables import pre_tokenizer as _pre_tokenizer_tables
from batchtok._tables import unicode as _unicode_tables
from batchtok.utils import onig
from batchtok.utils.onig import OnigPattern, PatternError
from tests.support import tier
from tools import gen_bert_tables, gen_pre_tokenizer_tables
from tools import gen_onig_tables as gen

# The code points probed: all of them in the full tier, every 7th in the default tier (the
# oracle answers one char at a time, so a whole table is minutes of one core).
EVERY_CHAR = gen._all_chars()
CHARS = "".join(tier.spread(EVERY_CHAR, len(EVERY_CHAR) // 7))
POINTS = frozenset(map(ord, CHARS))


def _within(encoded: str, points: frozenset[int] = POINTS) -> str:
    """Hex ranges as the tables write them (``"41-5a 61"``), restricted to ``points``."""
    kept = set()
    for item in encoded.split():
        first, _, last = item.partition("-")
        kept.update(range(int(first, 16), int(last or first, 16) + 1))
    return gen.encode_ranges(gen.to_ranges(kept & points))


def test_onig_class_tables_match_the_oracle():
    assert gen.table(CHARS) == {k: _within(v) for k, v in _onig_tables.RANGES.items()}


def test_normalizer_tables_match_the_oracle():
    want = {
        form: {cp: out for cp, out in table.items() if cp in POINTS}
        for form, table in _unicode_tables.DIFFERENCES.items()
    }
    assert gen.normalizer_differences(CHARS) == want


def test_bert_normalizer_tables_match_the_oracle():
    expected = gen_bert_tables.classes(CHARS)
    for name, ranges in expected.items():
        assert _within(getattr(_bert_tables, name)).split() == ranges.split(), name


def test_pre_tokenizer_tables_match_the_oracle():
    want = {k: _within(v) for k, v in _pre_tokenizer_tables.RANGES.items()}
    assert gen_pre_tokenizer_tables.char_classes(CHARS) == want
    want = " ".join(f"{cp:x}:{k:x}" for cp, k in gen_pre_tokenizer_tables.script_classes())
    assert want == "".join(_pre_tokenizer_tables.SCRIPTS)


@pytest.mark.parametrize(
    "pattern",
    [
        r"\p{L}+",
        r"[^\s\p{L}\p{N}]+",
        r"\w+",
        r"\d",
        r"\h+",
        r"\p{Lu}\p{Ll}*",
        r"[\P{L}x]+",
        r"\p{Letter}+",
        r"\p{Mn}",
        r"[^\p{Lo}]+",
        r"[^\w\s]+",  # inside brackets \w leaves out ²³¹¼½¾, unlike a bare \w
        r"[\W]",
        r"[a\w]+",
    ],
)
def test_every_path_agrees_with_the_oracle_on_every_code_point(pattern):
    """native, exact and ascii renderings give the oracle's matches on every code point (every
    7th in the default tier)."""
    text = CHARS
    compiled = OnigPattern(pattern)
    expected = sorted(c for c in gen.members(pattern, text))
    # the native path alone would differ on newer code points: the suspect check must route
    # this text (which holds code points of every plane) to the exact pattern.
    got = sorted({ord(c) for piece in compiled.findall(text) or [] for c in piece})
    assert got == expected
    ascii_text = "".join(map(chr, range(128)))
    got_ascii = sorted({ord(c) for piece in compiled.findall(ascii_text) or [] for c in piece})
    assert got_ascii == sorted(gen.members(pattern, ascii_text))


def test_whitespace_pattern_keeps_digit_like_signs_with_punctuation():
    r"""Whitespace's pattern: '¼' is \w alone but also in [^\w\s], so ':¼' stays one piece."""
    pattern = r"\w+|[^\w\s]+"
    for text in [":¼", "x:¹ ²", "a½b", "³"]:
        oracle = Split(Regex(pattern), "removed", invert=True).pre_tokenize_str(text)
        assert OnigPattern(pattern).findall(text) == [piece for piece, _ in oracle]


@pytest.mark.parametrize(
    "pattern",
    [r"(a)\1", r"\bx", r"[[:alpha:]]", r"\p{Han}", r"(?x) a", r"[a-z&&[^aeiou]]", r"a(?i)b"],
)
def test_constructs_that_are_refused(pattern):
    with pytest.raises(PatternError):
        OnigPattern(pattern)


def test_suspect_chars_are_where_regex_and_the_table_disagree():
    """The chars a pattern checks with its exact class: those the ``regex`` module's native
    class and the oracle's table disagree on, found from ranges, as from whole sets."""
    for name in sorted(_onig_tables.RANGES):
        native = onig._ClassRef(name, False).native()
        try:
            in_regex = {ord(c) for c in regex.findall(native, EVERY_CHAR)}
        except regex.error:
            continue  # rendered as explicit ranges, never natively
        table = onig._table(name)
        in_table = {c for a, b in table for c in range(a, b + 1)}
        assert onig._differing(onig._native_ranges(native), table) == in_regex ^ in_table, name


LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*"
    r"|\s*[\r\n]+|\s+(?!\S)|\s+"
)


@settings(max_examples=tier.examples(300), deadline=None)
@given(data=st.data())
def test_the_suspect_scan_finds_what_a_set_of_the_text_finds(data):
    """A text goes to the exact pattern exactly when it holds a suspect char: the class scan
    (suspects beyond the BMP as one range, then checked) against the set of the text's chars,
    over texts mixing suspects, other chars beyond the BMP and ordinary text."""
    compiled = OnigPattern(LLAMA3_SPLIT)
    suspects = sorted(compiled._suspect)
    assert suspects
    alphabet = suspects[:: max(1, len(suspects) // 200)] + list("a é中\n🙂\U0001f600\U00020000")
    text = "".join(data.draw(st.lists(st.sampled_from(alphabet), max_size=30)))
    assert compiled._has_suspect(text) == (not compiled._suspect.isdisjoint(text))


def test_every_char_is_the_same_string_with_numpy_loaded_or_not(monkeypatch):
    """``onig.every_char`` builds its string with numpy once numpy is imported, else from an
    array of ints: both are every code point but the surrogates, in order."""
    import sys

    import numpy  # noqa: F401 - the fast path's condition

    from batchtok.utils import onig

    onig._all_chars.cache_clear()
    with_numpy = onig.every_char()
    onig._all_chars.cache_clear()
    monkeypatch.delitem(sys.modules, "numpy")
    without = onig.every_char()
    onig._all_chars.cache_clear()
    assert with_numpy == without
    assert len(without) == 0x110000 - 0x800
    assert [ord(c) for c in (without[0xD7FF], without[0xD800])] == [0xD7FF, 0xE000]
