"""Prepend: a fixed string before every non-empty fragment."""

from __future__ import annotations

from .. import alignment
from ..alignment import Aligned
from ..utils.spec import Spec
from .base import Normalizer


class Prepend(Normalizer):
    def __init__(self, prepend: str) -> None:
        self.prepend = prepend

    def normalize(self, text: str) -> str:
        return self.prepend + text if text else text

    def leading_at_origin(self, text: str, count: int) -> int:
        # The prepended chars are aligned to the first char.
        return count + len(self.prepend) if count else 0

    def align(self, s: Aligned) -> Aligned:
        return alignment.prepend(s, self.prepend)

    def describe(self) -> str:
        return f"Prepend({self.prepend!r})"

    @classmethod
    def from_spec(cls, spec: Spec) -> Prepend:
        prepend = spec.string("prepend")
        if not prepend:
            raise spec.fail(
                "prepend", prepend, "an empty Prepend makes tokenizers duplicate or panic"
            )
        return cls(prepend)
