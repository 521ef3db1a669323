"""Digits: numeric chars split off, each alone or in runs."""

from __future__ import annotations

from ..utils.spec import Spec
from .char_classes import CharSplit, char_class


class Digits(CharSplit):
    def __init__(self, individual_digits: bool) -> None:
        behavior = "Isolated" if individual_digits else "Contiguous"
        super().__init__("Digits", char_class("numeric"), behavior)

    @classmethod
    def from_spec(cls, spec: Spec) -> Digits:
        return cls(spec.boolean("individual_digits"))
