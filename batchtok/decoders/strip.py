"""Strip decoder: a given char removed from the start and end of each token."""

from __future__ import annotations

from ..errors import DecodeError
from ..utils.spec import Spec
from .base import Decoder


class Strip(Decoder):
    def __init__(self, content: str, start: int, stop: int) -> None:
        self.content, self.start, self.stop = content, start, stop

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for token in tokens:
            left = 0
            while left < self.start and left < len(token) and token[left] == self.content:
                left += 1
            right = len(token)
            for i in range(self.stop):
                index = len(token) - i - 1
                if index < 0:
                    raise DecodeError("Strip decoder: stop runs past the token (tokenizers panics)")
                if token[index] != self.content:
                    break
                right = index
            if right < left:
                raise DecodeError("Strip decoder: start and stop cuts cross (tokenizers panics)")
            out.append(token[left:right])
        return out

    @classmethod
    def from_spec(cls, spec: Spec) -> Strip:
        content = spec.string("content")
        if len(content) != 1:
            raise spec.fail("content", content, "expected exactly one character")
        return cls(content, spec.uint("start"), spec.uint("stop"))
