"""BPEDecoder: the end-of-word suffix back to spaces."""

from __future__ import annotations

from ..utils.spec import Spec
from .base import Decoder


class BPEDecoder(Decoder):
    """Every ``suffix`` becomes a space, except in the last token, where it is removed.

    >>> "".join(BPEDecoder("</w>").decode_chain(["hel", "lo</w>", "world</w>"]))
    'hello world'
    """

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    def decode_chain(self, tokens: list[str]) -> list[str]:
        suffix = self.suffix
        out = [t.replace(suffix, " ") for t in tokens[:-1]]
        if tokens:
            out.append(tokens[-1].replace(suffix, ""))
        return out

    @classmethod
    def from_spec(cls, spec: Spec) -> BPEDecoder:
        return cls(spec.string("suffix"))
