"""Punctuation: split on each punctuation char, with a behaviour."""

from __future__ import annotations

from ..utils.spec import Spec
from .char_classes import CharSplit, char_class
from .split import BEHAVIORS


class Punctuation(CharSplit):
    def __init__(self, behavior: str = "Isolated") -> None:
        super().__init__("Punctuation", char_class("punctuation"), behavior)

    @classmethod
    def from_spec(cls, spec: Spec) -> Punctuation:
        return cls(spec.choice("behavior", BEHAVIORS, "Isolated"))
