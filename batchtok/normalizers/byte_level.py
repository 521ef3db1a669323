"""ByteLevel: each UTF-8 byte of the text as its GPT-2 char."""

from __future__ import annotations

from .. import alignment
from ..alignment import Aligned
from ..utils.byte_level import byte_level_map
from .base import Normalizer, per_char


class ByteLevel(Normalizer):
    """Each UTF-8 byte of the text as its GPT-2 char."""

    def normalize(self, text: str) -> str:
        return byte_level_map(text)

    def leading_at_origin(self, text: str, count: int) -> int:
        return per_char(self.normalize, text, count)

    def align(self, s: Aligned) -> Aligned:
        return alignment.bytes_as_chars(s, byte_level_map(s.text))
