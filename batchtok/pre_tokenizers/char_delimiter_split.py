"""CharDelimiterSplit: split on one char, which is removed."""

from __future__ import annotations

import re

from ..utils.spec import Spec
from .char_classes import CharSplit


class CharDelimiterSplit(CharSplit):
    def __init__(self, delimiter: str) -> None:
        name = f"CharDelimiterSplit[{delimiter!r}]"
        super().__init__(name, re.escape(delimiter), "Removed", bmp_classes=False)
        self.delimiter = delimiter

    @classmethod
    def from_spec(cls, spec: Spec) -> CharDelimiterSplit:
        delimiter = spec.string("delimiter")
        if len(delimiter) != 1:
            raise spec.fail("delimiter", delimiter, "expected exactly one character")
        return cls(delimiter)
