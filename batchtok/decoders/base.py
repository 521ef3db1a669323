"""The Decoder interface: the list of token strings -> a list of strings, joined by decode."""

from __future__ import annotations

from ..utils.spec import Spec


class Decoder:
    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__

    @classmethod
    def from_spec(cls, spec: Spec) -> Decoder:
        """The decoder a JSON object describes (here: one without fields)."""
        return cls()
