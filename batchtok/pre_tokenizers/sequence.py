"""Sequence: pre-tokenizers applied in turn, carrying Metaspace "first"'s start count."""

from __future__ import annotations

import operator
from collections.abc import Callable

from ..alignment import Aligned
from ..metaspace import AtStart
from ..utils.spec import Spec, read_components
from .base import PreTokenizer
from .metaspace import Metaspace


class Sequence(PreTokenizer):
    def __init__(self, pretokenizers: list[PreTokenizer]) -> None:
        self.pretokenizers = pretokenizers
        # The stages up to the last one after the first that has a Metaspace "first" run
        # counting, for each piece, its leading chars that stem from offset 0 of the input.
        later = [i for i, p in enumerate(pretokenizers) if i and uses_start(p)]
        self._counted = later[-1] + 1 if later else 0

    def pre_tokenize(self, pieces: list[str], at_start: AtStart = False) -> list[str]:
        stages = self.pretokenizers
        if self._counted and pieces:
            count = operator.index(at_start)
            if count:
                counted = [(pieces[0], count)] + [(p, 0) for p in pieces[1:]]
                for stage in stages[: self._counted]:
                    counted = [x for p, c in counted for x in stage.split_counted(p, c)]
                pieces = [p for p, _ in counted]
                stages = stages[self._counted :]
            at_start = False
        for i, p in enumerate(stages):
            pieces = p.pre_tokenize(pieces, at_start if i == 0 else False)
        return pieces

    def stage_pieces(self, pieces: list[str], at_start: AtStart = False) -> list[list[str]]:
        """The pieces after each pre-tokenizer in turn (the last list is :meth:`pre_tokenize`'s):
        what ``pre_tokenizer[i].pre_tokenize`` leaves in `tokenizers` when each runs on the
        same PreTokenizedString. For explaining a text; encode never asks."""
        stages = self.pretokenizers
        return [
            Sequence(stages[: i + 1]).pre_tokenize(pieces, at_start) for i in range(len(stages))
        ]

    def split_counted(self, piece: str, count: int) -> list[tuple[str, int]]:
        counted = [(piece, count)]
        for stage in self.pretokenizers:
            counted = [x for p, c in counted for x in stage.split_counted(p, c)]
        return counted

    def byte_level_spans(self, text: str) -> list[tuple[int, int]] | None:
        *cutters, last = self.pretokenizers or [None]
        if last is None or not all(c.cuts_only() for c in cutters):
            return None
        spans = [(0, len(text))] if text else []
        for stage in cutters:
            spans = [(a + x, a + y) for a, b in spans for x, y in stage.piece_spans(text[a:b])]
        if last.maps_whole_pieces():
            return spans
        out: list[tuple[int, int]] = []
        for a, b in spans:
            found = last.byte_level_spans(text[a:b])
            if found is None:
                return None
            out += [(a + x, a + y) for x, y in found]
        return out

    def split_aligned(self, s: Aligned) -> list[Aligned]:
        pieces = [s]
        for stage in self.pretokenizers:
            pieces = [x for p in pieces for x in stage.split_aligned(p) if x.text]
        return pieces

    def describe(self) -> str:
        return "Sequence[" + ", ".join(p.describe() for p in self.pretokenizers) + "]"

    @classmethod
    def from_spec(cls, spec: Spec, read: Callable[[object, str], PreTokenizer]) -> Sequence:
        return cls(read_components(spec, "pretokenizers", read))


def uses_start(pre: PreTokenizer) -> bool:
    """Whether ``pre`` has a Metaspace "first", the one stage that asks where pieces start."""
    if isinstance(pre, Metaspace):
        return pre.metaspace.prepend_scheme == "first"
    return isinstance(pre, Sequence) and any(map(uses_start, pre.pretokenizers))
