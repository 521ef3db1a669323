"""The PreTokenizer interface: a list of pieces -> a finer list of pieces."""

from __future__ import annotations

from ..alignment import Aligned, byte_to_char, char_offsets
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

    def pre_tokenize_str(self, text: str) -> list[tuple[str, tuple[int, int]]]:
        """The pieces of ``text`` as the library's ``pre_tokenize_str`` gives them: each piece
        (as the pre-tokenizer leaves it, e.g. byte-level mapped) with the char offsets in
        ``text`` of the input it stems from."""
        chars = None if text.isascii() else byte_to_char(text)
        n = len(text) if chars is None else len(chars)
        out = []
        for piece in self.split_aligned(Aligned.of(text)):
            if not piece.text:
                continue
            # the library's span of a piece: from its first char's input to its last one's
            span = (piece.align[0][0], piece.align[-1][1])
            out.append((piece.text, char_offsets(chars, n, span)))
        return out

    def byte_level_spans(self, text: str) -> list[tuple[int, int]] | None:
        """The char spans of the pieces of ``text`` when this pre-tokenizer only cuts pieces
        out and then shows each one's bytes as chars, adding none (what the offsets of a
        byte-level file can then compute without tracking each char); else None."""
        return None

    def maps_whole_pieces(self) -> bool:
        """Whether :meth:`byte_level_spans` of any text is the whole text (a ByteLevel that
        neither splits nor adds a space)."""
        return False

    def cuts_only(self) -> bool:
        """Whether this stage only cuts pieces out (its :meth:`split_aligned` is the default
        one, of :meth:`piece_spans`)."""
        return type(self).split_aligned is PreTokenizer.split_aligned

    def describe(self) -> str:
        return type(self).__name__

    @classmethod
    def from_spec(cls, spec: Spec) -> PreTokenizer:
        """The pre-tokenizer a JSON object describes (here: one without fields)."""
        return cls()
