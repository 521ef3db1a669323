"""UnicodeScripts: split where the script changes, with the oracle's script table."""

from __future__ import annotations

import bisect
import functools
import re

from .._tables.pre_tokenizer import SCRIPTS
from ..metaspace import AtStart
from .base import PreTokenizer


class _ScriptClasses(dict):
    """code point -> ordinal of a char naming its UnicodeScripts class (0 for Any), looked up
    in the generated table on first use (a full dict would cost ~100 MB); a str.translate
    table."""

    def __init__(self) -> None:
        super().__init__()
        starts, classes = [], []
        for item in "".join(SCRIPTS).split():
            start, _, k = item.partition(":")
            starts.append(int(start, 16))
            classes.append(int(k, 16))
        self._starts, self._classes = starts, classes

    def __missing__(self, cp: int) -> int:
        k = self[cp] = self._classes[bisect.bisect_right(self._starts, cp) - 1]
        return k


# A piece starts at each char whose script is not Any and differs from the last non-Any
# script; Any chars join the piece before them, and leading ones are dropped.
_SCRIPT_RUN = re.compile(r"([^\x00])(?:\1|\x00)*")


class UnicodeScripts(PreTokenizer):
    """Split where the script changes (Hiragana, Katakana and U+30FC count as Han; spaces and
    unknown chars as Any, which never start a piece)."""

    def __init__(self) -> None:
        self._classes = _script_classes()

    def pre_tokenize(self, pieces: list[str], at_start: AtStart = False) -> list[str]:
        out: list[str] = []
        for piece in pieces:
            out += [piece[a:b] for a, b in self.piece_spans(piece)]
        return out

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        starts = [m.start() for m in _SCRIPT_RUN.finditer(text.translate(self._classes))]
        if not starts:
            return []
        starts.append(len(text))
        return list(zip(starts, starts[1:]))


@functools.cache
def _script_classes() -> _ScriptClasses:
    return _ScriptClasses()
