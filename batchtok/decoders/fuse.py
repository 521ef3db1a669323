"""Fuse: all tokens joined into one string."""

from __future__ import annotations

from .base import Decoder


class Fuse(Decoder):
    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]
