"""CTC decoder: speech-model output collapsed into text."""

from __future__ import annotations

from ..utils.spec import Spec
from .base import Decoder
from .wordpiece import cleanup


class CTC(Decoder):
    """Speech-model output: repeated tokens collapse to one, ``pad_token`` disappears, and with
    ``cleanup`` the WordPiece cleanup runs, then ``word_delimiter_token`` becomes a space; tokens
    left empty are dropped.

    >>> "".join(CTC("<pad>", "|", True).decode_chain("<pad> h e e l l <pad> l o | | w".split()))
    'hello w'
    """

    def __init__(self, pad_token: str, word_delimiter_token: str, cleanup: bool) -> None:
        self.pad_token = pad_token
        self.word_delimiter_token = word_delimiter_token
        self.cleanup = cleanup

    def decode_chain(self, tokens: list[str]) -> list[str]:
        pad, delimiter = self.pad_token, self.word_delimiter_token
        out = []
        previous = None
        for token in tokens:
            if token == previous:
                continue
            previous = token
            token = token.replace(pad, "")
            if self.cleanup:
                token = cleanup(token).replace(delimiter, " ")
            if token:
                out.append(token)
        return out

    @classmethod
    def from_spec(cls, spec: Spec) -> CTC:
        return cls(
            spec.string("pad_token"), spec.string("word_delimiter_token"), spec.boolean("cleanup")
        )
