"""WordPiece decoder: continuation prefixes removed, spaces between words, optional cleanup."""

from __future__ import annotations

from ..utils.spec import Spec
from .base import Decoder

# WordPiece's cleanup, in the library's order (the order matters: " ' " before " 's").
_CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


def cleanup(text: str) -> str:
    """``text`` with the spaces before punctuation and English contractions removed.

    >>> cleanup("it 's a test , is n't it ?")
    "it's a test, isn't it?"
    """
    if " " not in text:  # every pattern starts with a space; nothing can match
        return text
    for old, new in _CLEANUP:
        text = text.replace(old, new)
    return text


class WordPiece(Decoder):
    """Continuation tokens lose ``prefix``, the others get a space before them; the first token
    is left as it is, even when it starts with ``prefix``.

    >>> "".join(WordPiece("##", True).decode_chain(["##un", "aff", "##able", "."]))
    '##un affable.'
    """

    def __init__(self, prefix: str, cleanup: bool) -> None:
        self.prefix, self.cleanup = prefix, cleanup

    def decode_chain(self, tokens: list[str]) -> list[str]:
        prefix, cut = self.prefix, len(self.prefix)
        out = []
        for i, token in enumerate(tokens):
            if i:
                token = token[cut:] if token.startswith(prefix) else " " + token
            out.append(cleanup(token) if self.cleanup else token)
        return out

    @classmethod
    def from_spec(cls, spec: Spec) -> WordPiece:
        return cls(spec.string("prefix"), spec.boolean("cleanup"))
