"""The Decoder interface: the list of token strings -> a list of strings, joined by decode."""

from __future__ import annotations

from ..utils.spec import Spec


class Decoder:
    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError

    def decode(self, tokens: list[str]) -> str:
        """The text of ``tokens`` (token strings), as the library's ``Decoder.decode``: the
        chain's strings joined."""
        return "".join(self.decode_chain(list(tokens)))

    def describe(self) -> str:
        return type(self).__name__

    @classmethod
    def from_spec(cls, spec: Spec) -> Decoder:
        """The decoder a JSON object describes (here: one without fields)."""
        return cls()
