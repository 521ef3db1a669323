"""Sequence: decoders applied in turn."""

from __future__ import annotations

from collections.abc import Callable

from ..utils.spec import Spec, read_components
from .base import Decoder


class Sequence(Decoder):
    def __init__(self, decoders: list[Decoder]) -> None:
        self.decoders = decoders

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for d in self.decoders:
            tokens = d.decode_chain(tokens)
        return tokens

    def describe(self) -> str:
        return "Sequence[" + ", ".join(d.describe() for d in self.decoders) + "]"

    @classmethod
    def from_spec(cls, spec: Spec, read: Callable[[object, str], Decoder]) -> Sequence:
        return cls(read_components(spec, "decoders", read))
