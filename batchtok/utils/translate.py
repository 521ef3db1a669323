"""``str.translate`` for tables that change few of the chars real text holds.

``str.translate`` looks every char up in the table (~70 ns a char); one compiled class finds the
chars the table changes (a few ns a char) and only those are replaced.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

# `re` tests a class of BMP chars with one table lookup but scans a list for a class holding a
# char beyond the BMP: those all take one cheap catch-all branch and are looked up.
BEYOND_BMP = "[\U00010000-\U0010ffff]"
# SparseTranslate calls str.translate when more than one char in this many is changed
_DENSE = 16


def class_char(char: str) -> str:
    """``char`` written to stand for itself inside a regex class."""
    return "\\" + char if char in "\\]^-[" else char


def char_class(chars) -> str:
    """A `re` class matching any of ``chars`` (and, if one is beyond the BMP, any char beyond
    the BMP: check the match), or "" for no chars. One class, so that a search skips in C to
    its chars; the chars beyond the BMP are one range, since `re` tests a class's ranges there
    one by one."""
    bmp = ranges(c for c in chars if c <= "\uffff")
    if any(c > "\uffff" for c in chars):
        bmp += BEYOND_BMP[1:-1]
    return f"[{bmp}]" if bmp else ""


def ranges(chars) -> str:
    """The inside of a regex class matching ``chars``, consecutive code points as ranges
    (compiling a class of thousands of single chars takes a tenth of a second)."""
    points = sorted(set(map(ord, chars)))
    out = []
    i = 0
    while i < len(points):
        j = i
        while j + 1 < len(points) and points[j + 1] == points[j] + 1:
            j += 1
        first, last = class_char(chr(points[i])), class_char(chr(points[j]))
        out.append(first if i == j else first + last if j == i + 1 else f"{first}-{last}")
        i = j + 1
    return "".join(out)


class SparseTranslate:
    """``text.translate(table)``, faster where the table changes few of the text's chars.

    >>> SparseTranslate({ord("\\n"): " ", ord("x"): None})("a\\nxb")
    'a b'
    """

    def __init__(self, table: Mapping[int, str | None]) -> None:
        by_char = {chr(c): new or "" for c, new in table.items() if new != chr(c)}
        pattern = char_class(by_char)
        self._changed = re.compile(pattern) if pattern else None
        self._by_char = by_char
        self._table = {ord(c): new for c, new in by_char.items()}
        # chars whose replacement holds no changed char: replacing them one after another
        # (str.replace, one pass each) is the same as replacing all at once
        self._plain = frozenset(c for c, new in by_char.items() if not set(new) & by_char.keys())

    def __call__(self, text: str) -> str:
        if self._changed is None:
            return text
        found = self._changed.findall(text)
        if not found:
            return text
        if len(found) * _DENSE > len(text):
            # a lookup per char (str.translate) costs less than a Python call per match
            return text.translate(self._table)
        distinct = set(found)
        if len(distinct) * 8 < len(found) and distinct <= self._plain:
            for char in distinct:
                text = text.replace(char, self._by_char[char])
            return text
        return self._changed.sub(self._replacement, text)

    def _replacement(self, match: re.Match[str]) -> str:
        char = match.group()
        return self._by_char.get(char, char)
