"""BertPreTokenizer: whitespace removed, each punctuation char isolated."""

from __future__ import annotations

from .char_classes import FindAll, char_class


class BertPreTokenizer(FindAll):
    """Whitespace removed, then each punctuation char isolated: the runs of other chars and
    the single punctuation chars."""

    def __init__(self) -> None:
        punct, space = char_class("punctuation"), char_class("whitespace")
        super().__init__("BertPreTokenizer", f"[^{punct}{space}]+|[{punct}]")
