"""WordPiece: greedy longest-match-first over a word, with a prefix on non-initial pieces."""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import EncodeError
from ..utils.spec import Spec, read_usize
from .base import Model, read_vocab, refuse_shared_ids
from .ragged import code_points, lengths_of

_MISSING_UNK = "WordPiece error: Missing [UNK] token from the vocabulary"
# tokenize_many cuts this many words or more together
_BATCH_MIN = 512


class WordPiece(Model):
    """Splits a word into the longest vocab pieces from the left; the whole word becomes
    ``unk_token`` when it is longer than ``max_input_chars_per_word`` chars or when some
    position has no piece at all (pieces already found are dropped, as in tokenizers)."""

    def __init__(
        self,
        vocab: dict[str, int],
        vocab_r: dict[int, str],
        *,
        unk_token: str,
        continuing_subword_prefix: str,
        max_input_chars_per_word: int,
    ) -> None:
        self.vocab, self.vocab_r = vocab, vocab_r
        self.unk_token = unk_token
        self.prefix = continuing_subword_prefix
        self.max_input_chars_per_word = max_input_chars_per_word
        # No candidate longer than the longest token can match, so the inner loop starts there
        # instead of at the word's end (same first match, far fewer slices for long words).
        n = len(continuing_subword_prefix)
        self._longest_first = max((len(t) for t in vocab), default=0)
        self._longest_next = max(
            (len(t) - n for t in vocab if t.startswith(continuing_subword_prefix)), default=0
        )
        self._tries = None  # wordpiece_batch.PieceTrie of all pieces and of continuations

    def tokenize(self, word: str) -> list[int]:
        size = len(word)
        if size > self.max_input_chars_per_word:
            return [self._unk_id()]
        get = self.vocab.get
        prefix = self.prefix
        ids: list[int] = []
        start = 0
        longest = self._longest_first
        while start < size:
            end = min(size, start + longest)
            while end > start:
                token_id = get(prefix + word[start:end] if start else word[:end])
                if token_id is not None:
                    break
                end -= 1
            else:
                return [self._unk_id()]
            ids.append(token_id)
            start = end
            longest = self._longest_next
        return ids

    def token_offsets(
        self, word: str, ids: Sequence[int] | None = None, start: int = 0
    ) -> list[tuple[int, int, int]]:
        ids = self.tokenize(word)
        n = len(self.prefix)
        pieces = [self.vocab_r[i] if k == 0 else self.vocab_r[i][n:] for k, i in enumerate(ids)]
        if "".join(pieces) != word:
            # the unk token stands for the whole word
            return [(ids[0], 0, len(word.encode("utf-8")))]
        out = []
        at = 0
        for token_id, piece in zip(ids, pieces):
            size = len(piece.encode("utf-8"))
            out.append((token_id, at, at + size))
            at += size
        return out

    tokenizes_many = True

    _TABLES = "_tries"

    def _build_tables(self):  # noqa: ANN202 - (PieceTrie of all pieces, of the continuations)
        from .wordpiece_batch import PieceTrie

        first = PieceTrie(self.vocab)
        prefix, cut = self.prefix, len(self.prefix)
        after = first
        if prefix:
            after = PieceTrie({t[cut:]: i for t, i in self.vocab.items() if t.startswith(prefix)})
        return first, after

    def _tables_to_bytes(self, tables) -> object:  # noqa: ANN001
        first, after = tables
        return first.to_bytes(), None if after is first else after.to_bytes()

    def _tables_from_bytes(self, kept):  # noqa: ANN001, ANN202
        from .wordpiece_batch import PieceTrie

        first = PieceTrie.from_bytes(kept[0])
        return first, first if kept[1] is None else PieceTrie.from_bytes(kept[1])

    def tokenize_many(self, words: list[str]) -> list[list[int]]:
        """:meth:`tokenize` of each word. When there are enough of them, the words of 1 to
        ``max_input_chars_per_word`` chars are cut together (:mod:`.wordpiece_batch`); a word
        with a position no piece starts at is the unk token (or the one-by-one error)."""
        if len(words) < _BATCH_MIN:
            return [self.tokenize(w) for w in words]
        most = self.max_input_chars_per_word

        def fits(word: str) -> bool:
            return 0 < len(word) <= most

        return self._each_together(words, fits, self._cut_together)

    def _cut_together(self, batch: list[str]) -> list[list[int] | None]:
        import numpy as np

        from .wordpiece_batch import greedy

        found, bad = greedy(*self._batch_tables(), code_points("".join(batch)), lengths_of(batch))
        for k in np.flatnonzero(bad).tolist():
            found[k] = [self._unk_id()]
        return found  # type: ignore[return-value]

    def _unk_id(self) -> int:
        token_id = self.vocab.get(self.unk_token)
        if token_id is None:
            raise EncodeError(_MISSING_UNK)
        return token_id

    def describe(self) -> str:
        return (
            f"WordPiece(vocab={len(self.vocab)}, unk_token={self.unk_token!r}, "
            f"continuing_subword_prefix={self.prefix!r}, "
            f"max_input_chars_per_word={self.max_input_chars_per_word})"
        )

    @classmethod
    def from_spec(cls, spec: Spec) -> WordPiece:
        """A WordPiece model from its JSON object; tokenizers requires all four fields."""
        unk_token = spec.string("unk_token")
        prefix = spec.string("continuing_subword_prefix")
        max_chars = read_usize(spec, "max_input_chars_per_word")
        vocab, vocab_r = read_vocab(spec)
        refuse_shared_ids(spec, vocab, vocab_r)
        return cls(
            vocab,
            vocab_r,
            unk_token=unk_token,
            continuing_subword_prefix=prefix,
            max_input_chars_per_word=max_chars,
        )
