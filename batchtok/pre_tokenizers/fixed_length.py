"""FixedLength: consecutive chunks of a fixed number of chars."""

from __future__ import annotations

from ..metaspace import AtStart
from ..utils.spec import Spec
from .base import PreTokenizer


class FixedLength(PreTokenizer):
    """Consecutive chunks of ``length`` chars (the last one shorter)."""

    def __init__(self, length: int) -> None:
        self.length = length

    def pre_tokenize(self, pieces: list[str], at_start: AtStart = False) -> list[str]:
        n = self.length
        return [piece[i : i + n] for piece in pieces for i in range(0, len(piece), n)]

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        n = self.length
        return [(i, min(i + n, len(text))) for i in range(0, len(text), n)]

    def describe(self) -> str:
        return f"FixedLength({self.length})"

    @classmethod
    def from_spec(cls, spec: Spec) -> FixedLength:
        length = spec.uint("length", 5)
        if length == 0:
            raise spec.fail("length", 0, "length 0 makes tokenizers panic on any non-empty text")
        return cls(length)
