"""ByteLevel decoder: GPT-2 chars back to bytes."""

from __future__ import annotations

from ..utils.byte_level import CHAR_TO_BYTE
from ..utils.spec import Spec
from .base import Decoder


class ByteLevel(Decoder):
    """GPT-2 chars back to bytes; a token with any char outside the table keeps its UTF-8."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = bytearray()
        table = CHAR_TO_BYTE
        for token in tokens:
            try:
                out += bytes([table[c] for c in token])
            except KeyError:
                out += token.encode("utf-8")
        return [out.decode("utf-8", "replace")]

    @classmethod
    def from_spec(cls, spec: Spec) -> ByteLevel:
        spec.boolean("add_prefix_space")
        spec.boolean("trim_offsets")
        spec.boolean("use_regex", True)
        return cls()
