"""Unigram: the best-scoring segmentation of a word (Viterbi), as tokenizers computes it."""

from __future__ import annotations

import math

from ..errors import EncodeError
from ..utils.json_numbers import as_serde_float
from ..utils.spec import Spec, read_usize
from .base import Model

_MISSING_UNK = "Encountered an unknown token but `unk_id` is missing"
_UNK_PENALTY = 10.0
_PREFIX_ONLY = (-1, 0.0)  # a table entry that is a prefix of some piece but no piece itself


class Unigram(Model):
    """Segments a word by the highest total score over the vocab's pieces.

    Follows tokenizers' "optimized" Viterbi exactly: positions are visited left to right,
    pieces starting there shortest first, then (only when no one-char piece exists) an unknown
    one-char node scored ``min(score) - 10``; a candidate replaces a position's best only when
    strictly greater, so ties keep the earlier candidate. Adjacent unknown nodes are fused; a
    fused text is then looked up again, byte-fallen-back (``<0xXX>``) or mapped to ``unk_id``.
    """

    # The oracle's token strings for unknown text are the text itself, not the unk piece.
    tokens_are_vocab_strings = False

    def __init__(
        self, pieces: list[tuple[str, float]], unk_id: int | None, byte_fallback: bool
    ) -> None:
        self.pieces = pieces
        self.unk_id = unk_id
        self.byte_fallback = byte_fallback
        # A piece listed twice (transformers' converters write a special piece the trained model
        # already holds) maps to its last id and that id's score, as in tokenizers; every id
        # still decodes to its piece, and the vocab size counts both (see vocab_size).
        self.vocab = {piece: i for i, (piece, _) in enumerate(pieces)}
        self.vocab_r = {i: piece for i, (piece, _) in enumerate(pieces)}
        self.unk_score = min((s for _, s in pieces), default=math.inf) - _UNK_PENALTY
        # Every non-empty piece and every proper prefix of one, so the scan of a position stops
        # as soon as the text read so far leads to no piece (the trie walk of tokenizers; the
        # empty piece is never matched there either).
        table: dict[str, tuple[int, float]] = {}
        for piece in self.vocab:
            for end in range(1, len(piece)):
                table.setdefault(piece[:end], _PREFIX_ONLY)
        for piece, i in self.vocab.items():
            if piece:
                table[piece] = (i, pieces[i][1])
        self._table = table
        self._byte_ids = [self.vocab.get(f"<0x{b:02X}>") for b in range(256)]

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def segment(self, word: str) -> list[str]:
        """The word's pieces as text (fused unknown spans included), before id lookup."""
        size = len(word)
        if not size:
            return []
        table_get = self._table.get
        prefix_only = _PREFIX_ONLY
        unk_id, unk_score = self.unk_id, self.unk_score
        score = [0.0] * (size + 1)
        start_of: list[int] = [-1] * (size + 1)  # -1: no path ends here yet
        node_id = [0] * (size + 1)
        for start in range(size):
            here = score[start]
            has_single = False
            end = start + 1
            while end <= size:
                entry = table_get(word[start:end])
                if entry is None:
                    break
                if entry is not prefix_only:
                    candidate = entry[1] + here
                    if start_of[end] < 0 or candidate > score[end]:
                        score[end] = candidate
                        start_of[end] = start
                        node_id[end] = entry[0]
                    if end == start + 1:
                        has_single = True
                end += 1
            if not has_single:
                end = start + 1
                candidate = unk_score + here
                if start_of[end] < 0 or candidate > score[end]:
                    if unk_id is None:
                        raise EncodeError(_MISSING_UNK)
                    score[end] = candidate
                    start_of[end] = start
                    node_id[end] = unk_id
        out: list[str] = []
        end = size
        unk_end = -1  # end of the unknown span being fused, walking backwards
        while end > 0:
            start = start_of[end]
            if node_id[end] == unk_id:
                if unk_end < 0:
                    unk_end = end
            else:
                if unk_end >= 0:
                    out.append(word[end:unk_end])
                    unk_end = -1
                out.append(word[start:end])
            end = start
        if unk_end >= 0:
            out.append(word[:unk_end])
        out.reverse()
        return out

    def _ids_and_tokens(self, word: str) -> tuple[list[int], list[str]]:
        vocab = self.vocab
        ids: list[int] = []
        tokens: list[str] = []
        for text in self.segment(word):
            token_id = vocab.get(text)
            if token_id is not None:
                ids.append(token_id)
                tokens.append(text)
                continue
            if self.byte_fallback:
                byte_ids = [self._byte_ids[b] for b in text.encode("utf-8")]
                if None not in byte_ids:
                    ids += byte_ids  # type: ignore[arg-type]
                    tokens += [self.vocab_r[i] for i in byte_ids]  # type: ignore[index]
                    continue
            if self.unk_id is None:
                raise EncodeError(_MISSING_UNK)
            ids.append(self.unk_id)
            tokens.append(text)
        return ids, tokens

    def tokenize(self, word: str) -> list[int]:
        return self._ids_and_tokens(word)[0]

    def token_strings(self, word: str) -> list[str]:
        """The token strings tokenizers reports for ``word``: unknown text stays as written."""
        return self._ids_and_tokens(word)[1]

    def describe(self) -> str:
        flags = [f"vocab={len(self.pieces)}", f"unk_id={self.unk_id}"]
        if self.byte_fallback:
            flags.append("byte_fallback")
        return "Unigram(" + ", ".join(flags) + ")"

    @classmethod
    def from_spec(cls, spec: Spec) -> Unigram:
        """A Unigram model from its JSON object: ``vocab`` ([[piece, score], ...], ids are list
        positions), ``unk_id`` (null allowed) and ``byte_fallback``."""
        raw = spec.array("vocab")
        pieces: list[tuple[str, float]] = []
        for i, entry in enumerate(raw):
            if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str)):
                raise spec.fail(f"vocab[{i}]", entry, "expected a [piece, score] pair")
            piece, value = entry
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise spec.fail(f"vocab[{i}]", entry, "score must be a number")
            try:
                score = as_serde_float(value)
            except ValueError as exc:
                raise spec.fail(f"vocab[{i}]", entry, f"score is not a finite f64 ({exc})") from exc
            pieces.append((piece, score))
        unk_id = read_usize(spec, "unk_id", None, nullable=True)
        if unk_id is not None:
            if not pieces:
                raise spec.fail(
                    "unk_id", unk_id, "The vocabulary is empty but at least <unk> is needed"
                )
            if unk_id >= len(pieces):
                raise spec.fail("unk_id", unk_id, "The `unk_id` is larger than vocabulary size")
        byte_fallback = bool(spec.boolean("byte_fallback", False))
        return cls(pieces, unk_id, byte_fallback)
