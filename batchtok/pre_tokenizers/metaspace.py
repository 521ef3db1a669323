"""Metaspace: spaces replaced and prepended per ``prepend_scheme``, optionally split."""

from __future__ import annotations

from .. import alignment
from ..alignment import Aligned
from ..metaspace import AtStart, read_metaspace
from ..metaspace import Metaspace as MetaspaceTransform
from ..utils.spec import Spec
from .base import PreTokenizer


class Metaspace(PreTokenizer):
    """The Metaspace transform on each piece (see :class:`batchtok.metaspace.Metaspace`)."""

    def __init__(self, metaspace: MetaspaceTransform) -> None:
        self.metaspace = metaspace

    def pre_tokenize(self, pieces: list[str], at_start: AtStart = False) -> list[str]:
        out: list[str] = []
        for i, piece in enumerate(pieces):
            # at_start is passed on unevaluated: only prepend_scheme "first" looks at it
            out += self.metaspace.pieces(piece, at_start if i == 0 else False)
        return out

    def split_counted(self, piece: str, count: int) -> list[tuple[str, int]]:
        return self.metaspace.pieces_counted(piece, count)

    def split_aligned(self, s: Aligned) -> list[Aligned]:
        m = self.metaspace
        r = m.replacement
        text = s.text
        s = alignment.replace_spans(s, [(i, i + 1) for i, ch in enumerate(text) if ch == " "], r)
        if m.prepend_scheme == "always" or (m.prepend_scheme == "first" and s.shift == 0):
            if not (m.skip_if_leading and s.text.startswith(r)):
                s = alignment.prepend(s, r)
        if not m.split:
            return [s]
        text = s.text
        starts = [i for i, ch in enumerate(text) if ch == r and i > 0]
        return s.spans(zip([0, *starts], [*starts, len(text)]))

    def describe(self) -> str:
        return self.metaspace.describe()

    @classmethod
    def from_spec(cls, spec: Spec) -> Metaspace:
        return cls(read_metaspace(spec))
