"""Sequence: post-processors applied in turn, each to the list the previous one returned."""

from __future__ import annotations

from collections.abc import Callable

from ..encoding import Encoding
from ..utils.spec import Spec, read_components
from .base import PostProcessor


class Sequence(PostProcessor):
    def __init__(self, processors: list[PostProcessor]) -> None:
        self.processors = processors

    def added_tokens(self, is_pair: bool) -> int:
        return sum(p.added_tokens(is_pair) for p in self.processors)

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        # each processor sees the list the previous one returned: after a template that is
        # one encoding per template piece, so the next template may pick its pair template
        for p in self.processors:
            encodings = p.process_encodings(encodings, add_special_tokens)
        return encodings

    def describe(self) -> str:
        return "Sequence[" + ", ".join(p.describe() for p in self.processors) + "]"

    @classmethod
    def from_spec(cls, spec: Spec, read: Callable[[object, str], PostProcessor]) -> Sequence:
        return cls(read_components(spec, "processors", read))
