"""ByteLevel: optional prefix space, optional GPT-2 split, then bytes shown as GPT-2 chars."""

from __future__ import annotations

from collections.abc import Iterator

from .. import alignment
from ..alignment import Aligned
from ..metaspace import AtStart
from ..utils.byte_level import byte_level_map
from ..utils.spec import Spec
from .base import PreTokenizer
from .split import Split

# GPT-2's split pattern, as ByteLevel(use_regex=true) uses it.
BYTE_LEVEL_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


class ByteLevel(PreTokenizer):
    """Optional prefix space, optional GPT-2 split, then bytes shown as GPT-2 chars."""

    def __init__(self, add_prefix_space: bool, use_regex: bool) -> None:
        self.add_prefix_space, self.use_regex = add_prefix_space, use_regex
        self.splitter = Split(BYTE_LEVEL_PATTERN, True, "Isolated", False) if use_regex else None

    def split_only(self, pieces: list[str]) -> list[str]:
        if self.add_prefix_space:
            pieces = [p if p.startswith(" ") else " " + p for p in pieces]
        if self.splitter is not None:
            pieces = self.splitter.pre_tokenize(pieces)
        return pieces

    def iter_split(self, text: str) -> Iterator[list[str]]:
        """:meth:`split_only` of one text (with the regex), in batches of pieces."""
        if self.add_prefix_space and not text.startswith(" "):
            text = " " + text
        assert self.splitter is not None, "iter_split needs use_regex"
        return self.splitter.iter_pieces(text)

    def pre_tokenize(self, pieces: list[str], at_start: AtStart = False) -> list[str]:
        return [byte_level_map(p) for p in self.split_only(pieces)]

    def split_counted(self, piece: str, count: int, mapped: bool = True) -> list[tuple[str, int]]:
        if self.add_prefix_space and not piece.startswith(" "):
            piece = " " + piece
            count = count + 1 if count else 0  # the space is aligned to the first char
        spans = self.splitter.piece_spans(piece) if self.splitter is not None else [(0, len(piece))]
        out = [(piece[a:b], max(0, min(b, count) - a)) for a, b in spans if b > a]
        if not mapped:
            return out
        # each byte's char is aligned to the char it comes from
        return [(byte_level_map(p), len(p[:c].encode("utf-8"))) for p, c in out]

    def maps_whole_pieces(self) -> bool:
        return not self.add_prefix_space and self.splitter is None

    def byte_level_spans(self, text: str) -> list[tuple[int, int]] | None:
        if self.add_prefix_space:
            return None  # it inserts a space
        if self.splitter is None:
            return [(0, len(text))] if text else []
        return self.splitter.piece_spans(text)

    def split_aligned(self, s: Aligned) -> list[Aligned]:
        if self.add_prefix_space and not s.text.startswith(" "):
            s = alignment.prepend(s, " ")
        pieces = s.spans(self.splitter.piece_spans(s.text)) if self.splitter is not None else [s]
        return [alignment.bytes_as_chars(p, byte_level_map(p.text)) for p in pieces if p.text]

    def describe(self) -> str:
        return f"ByteLevel(add_prefix_space={self.add_prefix_space}, use_regex={self.use_regex})"

    @classmethod
    def from_spec(cls, spec: Spec) -> ByteLevel:
        add_prefix_space = spec.boolean("add_prefix_space")
        spec.boolean("trim_offsets")  # offsets only; ids do not depend on it
        return cls(add_prefix_space, spec.boolean("use_regex", True))


class ByteLevelSplit(PreTokenizer):
    """A ByteLevel's splitting alone, without the byte -> char mapping (see
    :func:`batchtok.pre_tokenizers.splitter.split_and_map`)."""

    def __init__(self, byte_level: ByteLevel) -> None:
        self.byte_level = byte_level

    def pre_tokenize(self, pieces: list[str], at_start: AtStart = False) -> list[str]:
        return self.byte_level.split_only(pieces)

    def split_counted(self, piece: str, count: int) -> list[tuple[str, int]]:
        return self.byte_level.split_counted(piece, count, mapped=False)
