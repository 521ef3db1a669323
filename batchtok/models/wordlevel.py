"""WordLevel: one token per word, the word itself or ``unk_token``."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import EncodeError
from ..utils.spec import Spec
from .base import Model, read_vocab, refuse_shared_ids

_MISSING_UNK = "WordLevel error: Missing [UNK] token from the vocabulary"


class WordLevel(Model):
    """Looks the whole word up in the vocab; a word not found becomes ``unk_token`` (an
    EncodeError at encode time if that token is not in the vocab either, as in tokenizers)."""

    def __init__(self, vocab: dict[str, int], vocab_r: dict[int, str], unk_token: str) -> None:
        self.vocab, self.vocab_r = vocab, vocab_r
        self.unk_token = unk_token
        self._unk = vocab.get(unk_token)

    def tokenize(self, word: str) -> list[int]:
        token_id = self.vocab.get(word, self._unk)
        if token_id is None:
            raise EncodeError(_MISSING_UNK)
        return [token_id]

    def token_offsets(
        self, word: str, ids: Sequence[int] | None = None, start: int = 0
    ) -> list[tuple[int, int, int]]:
        return [(self.tokenize(word)[0], 0, len(word.encode("utf-8")))]

    def describe(self) -> str:
        return f"WordLevel(vocab={len(self.vocab)}, unk_token={self.unk_token!r})"

    @classmethod
    def from_spec(cls, spec: Spec) -> WordLevel:
        """A WordLevel model from its JSON object; ``vocab`` and ``unk_token`` are required."""
        vocab, vocab_r = read_vocab(spec)
        model = cls(vocab, vocab_r, spec.string("unk_token"))
        refuse_shared_ids(spec, vocab, vocab_r)
        return model
