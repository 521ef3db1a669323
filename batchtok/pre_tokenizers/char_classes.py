"""Char-class pre-tokenizers. `tokenizers` splits these with a per-char predicate; each char
that satisfies it is its own match, the runs of other chars are the gaps. For such splits
every behaviour is one regex over two classes, which `re` runs far faster than split_spans.
The classes come from the oracle's own tables (_tables/pre_tokenizer.py), not unicodedata.
"""

from __future__ import annotations

import bisect
import functools
import re

from .._tables.pre_tokenizer import RANGES
from ..metaspace import AtStart
from ..utils.onig import parse_ranges, render_ranges
from .base import PreTokenizer


@functools.cache
def _ranges(name: str) -> tuple[tuple[int, int], ...]:
    return parse_ranges(RANGES[name])


@functools.cache
def char_class(name: str) -> str:
    """The body of a ``re`` character class matching the BMP chars of table ``name``; texts
    with chars beyond the BMP go through :data:`ASTRAL_TO_BMP` first. (``re`` tests a char
    against a class's non-BMP members one range at a time: with them, Whitespace cost
    ~1.5 us per char even on English.)"""
    return render_ranges([(a, min(b, 0xFFFF)) for a, b in _ranges(name) if a <= 0xFFFF])


class _AstralToBmp(dict):
    """A str.translate table: each char beyond the BMP -> a BMP char that belongs to exactly
    the same tables of RANGES (BMP chars map to themselves). Filled on first use."""

    def _signature(self, cp: int) -> tuple[bool, ...]:
        return tuple(bisect.bisect_right(bounds, cp) % 2 == 1 for bounds in self._bounds)

    def __missing__(self, cp: int) -> int:
        if cp <= 0xFFFF:
            self[cp] = cp
            return cp
        if not hasattr(self, "_reps"):
            # Flat [start, end + 1, ...] lists: a code point is in a table iff bisect is odd.
            self._bounds = [[x for a, b in _ranges(n) for x in (a, b + 1)] for n in RANGES]
            self._reps: dict[tuple[bool, ...], int] = {}
            for c in range(0x10000):
                if not 0xD800 <= c <= 0xDFFF:
                    self._reps.setdefault(self._signature(c), c)
        # Every astral class combination has a BMP member (the table test checks it).
        rep = self[cp] = self._reps[self._signature(cp)]
        return rep


ASTRAL_TO_BMP = _AstralToBmp()


def _behavior_pattern(match: str, behavior: str) -> str:
    """The regex whose findall gives the pieces of a split on the single chars of class
    ``match`` (a class body) with ``behavior``."""
    m, other = f"[{match}]", f"[^{match}]+"
    return {
        "Removed": other,
        "Isolated": f"{other}|{m}",
        "Contiguous": f"{other}|{m}+",
        "MergedWithPrevious": f"{other}{m}?|{m}",  # a match joins the gap before it
        "MergedWithNext": f"{m}?{other}|{m}",  # a match joins the gap after it
    }[behavior]


class FindAll(PreTokenizer):
    """The matches of one fixed regex (``re`` syntax) are the pieces; with ``bmp_classes``,
    the regex was built from :func:`char_class` and runs on texts mapped to the BMP."""

    def __init__(self, name: str, pattern: str, bmp_classes: bool = True) -> None:
        self.name, self.bmp_classes = name, bmp_classes
        self._regex = re.compile(pattern)

    def split_one(self, text: str) -> list[str]:
        if self.bmp_classes and text and max(text) > "\uffff":
            mapped = text.translate(ASTRAL_TO_BMP)  # same length, same classes
            return [text[m.start() : m.end()] for m in self._regex.finditer(mapped)]
        return self._regex.findall(text)

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        if self.bmp_classes and text and max(text) > "\uffff":
            text = text.translate(ASTRAL_TO_BMP)
        return [m.span() for m in self._regex.finditer(text)]

    def pre_tokenize(self, pieces: list[str], at_start: AtStart = False) -> list[str]:
        split_one = self.split_one
        if len(pieces) == 1:
            return split_one(pieces[0])
        out: list[str] = []
        for piece in pieces:
            out += split_one(piece)
        return out

    def describe(self) -> str:
        return self.name


class CharSplit(FindAll):
    """Split on every char of one class with one behaviour: the implementation Punctuation,
    Digits, CharDelimiterSplit and WhitespaceSplit share."""

    def __init__(self, name: str, match: str, behavior: str, bmp_classes: bool = True) -> None:
        pattern = _behavior_pattern(match, behavior)
        super().__init__(f"{name}({behavior})", pattern, bmp_classes)
        self.behavior = behavior
