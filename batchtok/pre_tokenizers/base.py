"""The PreTokenizer interface: a list of pieces -> a finer list of pieces."""

from __future__ import annotations

from ..alignment import Aligned
from ..metaspace import AtStart
from ..utils.spec import Spec


class PreTokenizer:
    def pre_tokenize(self, pieces: list[str], at_start: AtStart = False) -> list[str]:
        """Split ``pieces``; ``at_start``: how many leading chars of the first piece stem from
        offset 0 of the input (an int, a bool, or an object with ``__index__`` that only
        Metaspace's prepend_scheme "first" evaluates)."""
        raise NotImplementedError

    def split_counted(self, piece: str, count: int) -> list[tuple[str, int]]:
        """The pieces of ``piece`` whose first ``count`` chars stem from offset 0 of the input,
        each with that count for itself: what a later Metaspace "first" needs. This default
        serves the stages that only cut pieces out (see :meth:`piece_spans`)."""
        return [(piece[a:b], max(0, min(b, count) - a)) for a, b in self.piece_spans(piece)]

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each piece of ``text``, for stages that only cut pieces out."""
        raise NotImplementedError

    def split_aligned(self, s: Aligned) -> list[Aligned]:
        """The pieces of one aligned string, each with its alignments, as `tokenizers` splits
        a ``NormalizedString`` (empty pieces dropped). This default serves the stages that only
        cut pieces out."""
        return s.spans(self.piece_spans(s.text))

    def describe(self) -> str:
        return type(self).__name__

    @classmethod
    def from_spec(cls, spec: Spec) -> PreTokenizer:
        """The pre-tokenizer a JSON object describes (here: one without fields)."""
        return cls()
