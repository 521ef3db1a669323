"""Strip (whitespace at either end) and StripAccents (combining marks)."""

from __future__ import annotations

import functools

from .. import alignment
from .._tables import bert as bert_tables
from ..alignment import Aligned
from ..utils.spec import Spec
from ..utils.translate import SparseTranslate
from .base import Normalizer, per_char

# Rust's char::is_whitespace (the White_Space property).
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class Strip(Normalizer):
    def __init__(self, left: bool, right: bool) -> None:
        self.left, self.right = left, right

    def normalize(self, text: str) -> str:
        if self.left:
            text = text.lstrip(WHITE_SPACE)
        if self.right:
            text = text.rstrip(WHITE_SPACE)
        return text

    def leading_at_origin(self, text: str, count: int) -> int:
        # The kept chars keep their own alignments.
        lead = len(text) - len(text.lstrip(WHITE_SPACE)) if self.left else 0
        end = len(text.rstrip(WHITE_SPACE)) if self.right else len(text)
        return max(0, min(count, end) - lead)

    def align(self, s: Aligned) -> Aligned:
        return alignment.strip(s, self.left, self.right, WHITE_SPACE)

    def describe(self) -> str:
        return f"Strip(left={self.left}, right={self.right})"

    @classmethod
    def from_spec(cls, spec: Spec) -> Strip:
        return cls(spec.boolean("strip_left"), spec.boolean("strip_right"))


def ranges_table(ranges: str, value: str | None) -> dict[int, str | None]:
    """A ``str.translate`` table sending every code point of ``ranges`` (generated hex ranges)
    to ``value``."""
    table: dict[int, str | None] = {}
    for item in ranges.split():
        first, _, last = item.partition("-")
        for cp in range(int(first, 16), int(last or first, 16) + 1):
            table[cp] = value
    return table


class StripAccents(Normalizer):
    """Deletes combining marks (the library's Mn/Mc/Me table); does not decompose first."""

    _marks = ranges_table(bert_tables.COMBINING_MARKS, None)

    def normalize(self, text: str) -> str:
        return text if text.isascii() else _sparse_marks()(text)

    def leading_at_origin(self, text: str, count: int) -> int:
        return per_char(self.normalize, text, count)

    def align(self, s: Aligned) -> Aligned:
        marks = self._marks
        return alignment.filter_chars(s, lambda ch: ord(ch) not in marks)


@functools.cache
def _sparse_marks() -> SparseTranslate:
    return SparseTranslate(StripAccents._marks)
