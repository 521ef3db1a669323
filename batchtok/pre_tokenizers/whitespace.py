"""Whitespace (word runs and runs of other non-spaces) and WhitespaceSplit (split on spaces)."""

from __future__ import annotations

from .char_classes import CharSplit, FindAll, char_class


class Whitespace(FindAll):
    """The matches of Rust-regex ``\\w+|[^\\w\\s]+`` (word runs, runs of other non-spaces)."""

    def __init__(self) -> None:
        word, space = char_class("word"), char_class("space")
        super().__init__("Whitespace", f"[{word}]+|[^{word}{space}]+")


class WhitespaceSplit(CharSplit):
    """The runs of non-whitespace chars."""

    def __init__(self) -> None:
        super().__init__("WhitespaceSplit", char_class("whitespace"), "Removed")
