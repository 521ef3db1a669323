"""Unigram: the best-scoring segmentation of a word (Viterbi), as tokenizers computes it."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from functools import reduce
from itertools import chain, pairwise
from operator import add

from ..errors import EncodeError
from ..utils.json_numbers import as_serde_float
from ..utils.spec import Spec, read_usize
from .base import Model
from .ragged import code_points, lengths_of

_MISSING_UNK = "Encountered an unknown token but `unk_id` is missing"
_UNK_PENALTY = 10.0
_PREFIX_ONLY = (-1, 0.0)  # a table entry that is a prefix of some piece but no piece itself
# Unit roundoff of an f64 addition, and the number of cached segments kept (two generations).
_ROUNDOFF = 2.0**-53
_SEGMENT_CACHE = 1 << 18
# A part of a word whose robustness is above this is cut safely in any word under ~10^7 chars
# (for scores up to ~100); smaller ones are checked against the word's length.
_WEAK = 1e-6
_MARK = "\u2581"  # SentencePiece's word-boundary mark, never inside a piece in most vocabs
# Parts longer than this are not cached whole (their pieces are).
_LONG_PART = 256
# Shorter words (a pre-tokenizer's, cached by the tokenizer) go through one lattice: cutting
# them into new pieces costs more than it saves on multilingual text.
_SHORT_WORD = 16
# tokenize_many runs one numpy Viterbi over this many words or more, each this long at most
_BATCH_MIN = 256  # (the two paths cost the same at ~128 words of T5's multilingual misses)
_BATCH_CHARS = 256


def _fits_batch(word: str) -> bool:
    return 0 < len(word) <= _BATCH_CHARS


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
        self._cuts = _Cuts.for_model(self)
        # parts of words: their ids; the robustness of the weak ones; node scores (see _Cuts)
        self._ids: dict[str, tuple[int, ...]] = {}
        self._weak: dict[str, float] = {}
        self._scores: dict[str, list[float]] = {}
        self._trie = None  # unigram_batch.UnigramTrie, built by the first batch

    @property
    def vocab_size(self) -> int:
        return len(self.pieces)

    def segment(self, word: str) -> list[str]:
        """The word's pieces as text (fused unknown spans included), before id lookup."""
        return self._lattice(word)[0]

    def _lattice(self, word: str, origin: float = 0.0) -> tuple[list[str], float, list[float]]:
        """:meth:`segment` of ``word`` read with the score ``origin`` before it; the smallest
        margin by which a node of the best path beat the other candidates ending where it
        ends (``inf`` where it had none); and the scores of the path's nodes in order (an
        unknown span counts one node per char). See :class:`_Cuts`."""
        size = len(word)
        if not size:
            return [], math.inf, []
        table_get = self._table.get
        prefix_only = _PREFIX_ONLY
        unk_id, unk_score = self.unk_id, self.unk_score
        # An end no path reached yet holds -inf, so a candidate there wins by the first test
        # (a sum that overflowed to -inf still wins, by the second)
        score = [-math.inf] * (size + 1)
        score[0] = origin
        second = [-math.inf] * (size + 1)  # the best losing candidate of each end
        start_of: list[int] = [-1] * (size + 1)  # -1: no path ends here yet
        node_id = [0] * (size + 1)
        node_score = [0.0] * (size + 1)
        unknown = (unk_id, unk_score)
        for start in range(size):
            here = score[start]
            # the one-char piece first, or (when there is none) an unknown one-char node; then
            # the longer pieces, shortest first, up to ``last`` (this end when none starts here)
            entry = table_get(word[start])
            last = size if entry is not None else start + 1
            if entry is None or entry is prefix_only:
                if unk_id is None and (
                    unk_score + here > score[start + 1] or start_of[start + 1] < 0
                ):
                    raise EncodeError(_MISSING_UNK)
                entry = unknown
            end = start + 1
            while True:
                if entry is not prefix_only:
                    candidate = entry[1] + here
                    if candidate > score[end] or start_of[end] < 0:
                        second[end] = score[end]
                        score[end] = candidate
                        start_of[end] = start
                        node_id[end], node_score[end] = entry
                    elif candidate > second[end]:
                        second[end] = candidate
                if end == last:
                    break
                end += 1
                entry = table_get(word[start:end])
                if entry is None:
                    break
        scores: list[float] = []
        end = size
        margin = math.inf
        while end > 0:
            gap = score[end] - second[end]
            if gap < margin:
                margin = gap
            scores.append(node_score[end])
            end = start_of[end]
        scores.reverse()
        return _path_strings(word, start_of, node_id, unk_id), margin, scores

    def _best_ids(self, word: str) -> list[int]:
        """The ids of ``word``'s best path, by the same visits and comparisons as
        :meth:`_lattice` without its margins and node scores. A path holding an unknown node
        (or the unk piece) has its text fused and looked up by :meth:`_ids_of`."""
        size = len(word)
        if not size:
            return []
        table_get = self._table.get
        prefix_only = _PREFIX_ONLY
        unk_id, unk_score = self.unk_id, self.unk_score
        score = [-math.inf] * (size + 1)
        score[0] = 0.0
        start_of = [-1] * (size + 1)
        node_id = [0] * (size + 1)
        for start in range(size):
            here = score[start]
            # the one-char node (an unknown one when no one-char piece exists), then the
            # longer pieces, shortest first, while the text read leads to some piece
            entry = table_get(word[start])
            end = start + 1
            if entry is None or entry is prefix_only:
                node, candidate = unk_id, unk_score + here
            else:
                node, candidate = entry[0], entry[1] + here
            if candidate > score[end] or start_of[end] < 0:
                if node is None:
                    raise EncodeError(_MISSING_UNK)
                score[end] = candidate
                start_of[end] = start
                node_id[end] = node
            if entry is None:
                continue
            for end in range(start + 2, size + 1):
                entry = table_get(word[start:end])
                if entry is None:
                    break
                if entry is not prefix_only:
                    candidate = entry[1] + here
                    if candidate > score[end] or start_of[end] < 0:
                        score[end] = candidate
                        start_of[end] = start
                        node_id[end] = entry[0]
        ids: list[int] = []
        end = size
        while end:
            found = node_id[end]
            if found == unk_id:
                strings = _path_strings(word, start_of, node_id, unk_id)
                return list(self._ids_of(word, strings))
            ids.append(found)
            end = start_of[end]
        ids.reverse()
        return ids

    tokenizes_many = True

    _TABLES = "_trie"

    def _build_tables(self):  # noqa: ANN202 - a UnigramTrie
        from .unigram_batch import UnigramTrie

        return UnigramTrie(self.vocab, self.pieces)

    def _tables_to_bytes(self, tables) -> object:  # noqa: ANN001
        return tables.to_bytes()

    def _tables_from_bytes(self, kept):  # noqa: ANN001, ANN202
        from .unigram_batch import UnigramTrie

        return UnigramTrie.from_bytes(kept)

    def tokenize_many(self, words: list[str]) -> list[list[int]]:
        """:meth:`tokenize` of each word. When there are enough of them, the words of 1 to
        ``_BATCH_CHARS`` chars go through one Viterbi together (:mod:`.unigram_batch`), with
        the visits and comparisons of :meth:`_best_ids`; a word with an unknown char when
        there is no ``unk_id`` (which may fail) and the longer ones take :meth:`tokenize`."""
        if len(words) < _BATCH_MIN:
            return [self.tokenize(w) for w in words]
        return self._each_together(words, _fits_batch, self._best_together)

    def tokenize_many_with_strings(
        self, words: list[str]
    ) -> tuple[list[list[int]], dict[str, list[str]]]:
        """:meth:`tokenize_many`, and the :meth:`token_strings` of the words whose ids hold
        ``unk_id`` that the batch read on the way (the texts of its fused nodes)."""
        if len(words) < _BATCH_MIN or self.byte_fallback or self.unk_id is None:
            return self.tokenize_many(words), {}
        strings: dict[str, list[str]] = {}
        found = self._each_together(
            words, _fits_batch, lambda batch: self._best_together(batch, strings)
        )
        return found, strings

    def _best_together(
        self, batch: list[str], strings: dict[str, list[str]] | None = None
    ) -> list[list[int] | None]:
        import numpy as np

        unk_id = -1 if self.unk_id is None else self.unk_id
        joined = "".join(batch)
        fused = None
        if not self.byte_fallback and self.unk_id is not None:
            # a fused unknown text is looked up again, else unk (see _ids_and_tokens)
            get = self.vocab.get

            def fused(begin: int, end: int) -> int:
                return get(joined[begin:end], unk_id)

        found, ends, needs_unk = self._paths_together(
            joined, batch, fused, fused_ends=fused is not None and strings is not None
        )
        paths: list[list[int] | None] = found  # type: ignore[assignment]
        if self.unk_id is None:
            for k in np.flatnonzero(needs_unk).tolist():
                paths[k] = None  # tokenize raises, or finds a path without the unknown
        elif ends is not None and fused is None:
            for k, ids in enumerate(found):
                if unk_id in ids:
                    word = batch[k]
                    paths[k] = list(self._ids_of(word, _fused(word, ends[k], ids, unk_id)))
        elif ends is not None and strings is not None:
            # a node's text is its piece, or the unknown text a fused node covers
            for k, ids in enumerate(found):
                if unk_id in ids:
                    word, cuts = batch[k], ends[k]
                    strings[word] = [word[a:b] for a, b in zip([0, *cuts], cuts)]
        return paths

    def token_strings_many(self, words: list[str]) -> list[list[str]]:
        """:meth:`token_strings` of each word; when there are enough of them, the words of 1
        to ``_BATCH_CHARS`` chars read their best paths together, unknown nodes unfused, and
        fuse them as :meth:`segment` does (the same visits and comparisons, so the same
        path)."""
        if len(words) < _BATCH_MIN:
            return [self.token_strings(w) for w in words]
        return self._each_together(words, _fits_batch, self._strings_together, self.token_strings)

    def _strings_together(self, batch: list[str]) -> list[list[str] | None]:
        unk_id = -1 if self.unk_id is None else self.unk_id
        found, ends, needs_unk = self._paths_together("".join(batch), batch)
        vocab_r = self.vocab_r
        out: list[list[str] | None] = []
        for k, (ids, unknown) in enumerate(zip(found, needs_unk.tolist())):
            if unknown and self.unk_id is None:
                out.append(None)  # token_strings raises, or finds a path without the unknown
            elif ends is not None and unk_id in ids:
                word = batch[k]
                out.append(self._ids_and_tokens(word, _fused(word, ends[k], ids, unk_id))[1])
            else:
                out.append([vocab_r[i] for i in ids])
        return out

    def _paths_together(
        self,
        joined: str,
        batch: list[str],
        fused=None,  # noqa: ANN001
        fused_ends: bool = False,
    ) -> tuple:
        """:func:`.unigram_batch.best_paths` of the words of ``batch`` (``joined``: them
        joined), an unknown char as ``unk_id`` (-1 without one)."""
        from .unigram_batch import best_paths

        unk_id = -1 if self.unk_id is None else self.unk_id
        chars, lengths = code_points(joined), lengths_of(batch)
        trie = self._batch_tables()
        return best_paths(trie, unk_id, self.unk_score, chars, lengths, fused, fused_ends)

    def _ids_and_tokens(
        self, word: str, strings: list[str] | None = None
    ) -> tuple[list[int], list[str]]:
        vocab = self.vocab
        ids: list[int] = []
        tokens: list[str] = []
        for text in self.segment(word) if strings is None else strings:
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
        cuts = self._cuts
        # A cached part's ids hold at any offset of a word this long only if its best path
        # won each comparison by more than the rounding there can move (see _Cuts).
        threshold = math.inf if cuts is None else cuts.threshold * (len(word) + 2)
        if threshold >= _WEAK or len(word) < _SHORT_WORD:
            return self._best_ids(word)
        if len(self._ids) >= _SEGMENT_CACHE:
            self._ids, self._weak, self._scores = {}, {}, {}
        parts = cuts.coarse(word)  # type: ignore[union-attr]
        weak = self._weak
        if len(parts) == 1:
            ids = self._ids.get(word) or self._learn(word)
            if weak and weak.get(word, math.inf) <= threshold:
                found = [ids]
                self._exact(parts, found, {word}, threshold)
                ids = found[0]
            return list(ids)
        found = list(map(self._ids.get, parts))
        if None in found:
            for i, ids in enumerate(found):
                if ids is None:
                    found[i] = self._learn(parts[i])
        if weak and not weak.keys().isdisjoint(parts):
            fragile = {part for part in weak.keys() & set(parts) if weak[part] <= threshold}
            if fragile:
                self._exact(parts, found, fragile, threshold)
        return list(chain.from_iterable(found))  # type: ignore[arg-type]

    def _ids_of(self, word: str, strings: list[str]) -> tuple[int, ...]:
        """The ids of ``word``'s lattice strings (unknown ones byte-fallen-back or unk)."""
        ids = tuple(map(self.vocab.get, strings))
        if None in ids:
            return tuple(self._ids_and_tokens(word, strings)[0])
        return ids  # type: ignore[return-value]

    def _learn(self, part: str) -> Sequence[int]:
        """The ids of ``part`` read from score zero, each of its pieces at the finer cuts and
        ``part`` itself cached; a part whose best path won a comparison by little (robustness
        = margin / (length + 1) at most _WEAK) is remembered with its robustness."""
        pieces = self._cuts.fine(part)  # type: ignore[union-attr]
        if len(pieces) == 1:
            return self._learn_piece(part)
        known, weak = self._ids, self._weak
        get, learn = known.get, self._learn_piece
        out: list[int] = []
        for piece in pieces:
            out += get(piece) or learn(piece)
        if weak and not weak.keys().isdisjoint(pieces):
            weak[part] = min(weak.get(piece, math.inf) for piece in pieces)
        if len(part) > _LONG_PART:
            return out
        found = known[part] = tuple(out)
        return found

    def _learn_piece(self, piece: str) -> tuple[int, ...]:
        """:meth:`_learn` for a piece without safe cuts inside: one lattice."""
        strings, margin, scores = self._lattice(piece)
        ids = self._ids_of(piece, strings)
        self._scores[piece] = scores
        if margin / (len(piece) + 1) <= _WEAK:
            self._weak[piece] = margin / (len(piece) + 1)
        if len(piece) <= _LONG_PART:
            self._ids[piece] = ids
        return ids

    def _exact(self, parts: list[str], found: list, fragile: set[str], threshold: float) -> None:
        """Fill ``found`` (the ids of each of ``parts``) where a part is ``fragile``: each of
        its pieces not robust enough at ``threshold`` is read from the score the library has
        at its start, the rounded sum of the node scores before it in order."""
        weak = self._weak
        origin = 0.0
        done = 0  # the node scores of parts[:done] are in origin
        for i, part in enumerate(parts):
            if part not in fragile:
                continue
            for before in parts[done:i]:
                origin = reduce(add, self._node_scores(before), origin)
            ids: list[int] = []
            for piece in self._cuts.fine(part):  # type: ignore[union-attr]
                if weak.get(piece, math.inf) > threshold:
                    ids += self._ids.get(piece) or self._learn_piece(piece)
                    origin = reduce(add, self._node_scores(piece), origin)
                    continue
                strings, _, scores = self._lattice(piece, origin)
                ids += self._ids_and_tokens(piece, strings)[0]
                origin = reduce(add, scores, origin)
            found[i] = ids
            done = i + 1

    def _node_scores(self, part: str) -> list[float]:
        """The scores of the nodes of ``part``'s best path read from zero, in order."""
        found = self._scores.get(part)
        if found is None:
            found = []
            for piece in self._cuts.fine(part):  # type: ignore[union-attr]
                found += self._scores.get(piece) or self._lattice(piece)[2]
            self._scores[part] = found
        return found

    def token_offsets(
        self, word: str, ids: Sequence[int] | None = None, start: int = 0
    ) -> list[tuple[int, int, int]]:
        """Each piece's offsets; the byte-fallback tokens of an unknown piece all get the
        piece's, as in the library."""
        out = []
        at = 0
        for text in self.segment(word):
            size = len(text.encode("utf-8"))
            ids, _ = self._ids_and_tokens(text, [text])
            out += [(i, at, at + size) for i in ids]
            at += size
        return out

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


class _Cuts:
    """Where a word may be cut so that Viterbi on each part alone gives the word's ids.

    A cut between two chars ``a`` and ``b`` is *safe* when (1) no piece holds ``a`` followed
    by ``b``, so no lattice node spans the cut and every path passes through it, and (2) the
    nodes on its two sides cannot both be unknown nodes (or the unk piece itself), which the
    library would fuse into one token: an unknown node only covers a char that is no one-char
    piece.

    Then, in exact arithmetic, the best path of the word is the best paths of its parts
    joined: every score after the cut is the score at the cut plus the part's own, and the
    first-wins tie rule compares the same differences. The library's scores are f64 sums,
    though, rounded differently at a large offset than from zero. A part's result is used only
    where each node of its best path beat every other candidate ending there by more than
    twice the rounding either sum can carry: at most one unit roundoff of the largest sum
    ``(n + 1) * max|score|`` per lattice position, for an n-char word. Otherwise (ties above
    all) the whole word goes through one lattice, exactly as the library computes it.

    Cuts come in two passes: a regex finds the cuts that hold whatever the neighbour (after a
    char no piece continues, before a char no piece leads to), and a scan of char pairs cuts
    the parts the cache has not seen yet.
    """

    @staticmethod
    def for_model(model: Unigram) -> _Cuts | None:
        scores = [s for _, s in model.pieces] + [model.unk_score]
        if model.unk_id is None or not all(math.isfinite(s) for s in scores):
            # without unk_id a lattice fails wherever an unknown node wins anywhere, even off
            # the best path: keep the whole word
            return None
        return _Cuts(model, max(abs(s) for s in scores))

    def __init__(self, model: Unigram, largest: float) -> None:
        self.threshold = 4 * _ROUNDOFF * largest * 2  # per char of the word; doubled for slack
        pairs: set[tuple[str, str]] = set()
        singles: set[str] = set()
        for piece in model.vocab:
            pairs.update(pairwise(piece))
            if len(piece) == 1:
                singles.add(piece)
        unk_piece = model.pieces[model.unk_id][0]  # type: ignore[index]
        # chars that end (start) no unknown node: one-char pieces other than the unk piece's
        # last (first) char, when matching the unk piece gives unk_id
        known_left, known_right = set(singles), set(singles)
        if unk_piece and model.vocab.get(unk_piece) == model.unk_id:
            known_left.discard(unk_piece[-1])
            known_right.discard(unk_piece[0])
        self.pairs = frozenset(pairs)
        self.known_left, self.known_right = frozenset(known_left), frozenset(known_right)
        followed = {a for a, _ in pairs}
        preceded = {b for _, b in pairs}
        after = known_left - followed  # a cut after each of these, whatever comes next
        before = known_right - preceded  # and before each of these
        self._marks_only = False
        if not after and not before:
            self._coarse = None
            return
        if _MARK in before:
            # Cutting before each mark alone keeps the regex simple and fast (a big class costs
            # 5x more) and gives parts that repeat as words do; fine() does the rest on a miss.
            self._coarse = re.compile(f"[^{_MARK}]+|{_MARK}[^{_MARK}]*")
            self._marks_only = True
            return
        both = _char_class(after | before)
        ends = after - before
        pattern = "." + (f"[^{both}]*") + (f"[{_char_class(ends)}]?" if ends else "")
        if after:
            pattern = f"[{_char_class(after)}]|" + pattern
        self._coarse = re.compile(pattern, re.DOTALL)

    def coarse(self, word: str) -> list[str]:
        """``word`` cut where the cut is safe whatever the other neighbour is."""
        if self._coarse is None or (self._marks_only and word.find(_MARK, 1) < 0):
            return [word]
        return self._coarse.findall(word)

    def fine(self, part: str) -> list[str]:
        """``part`` cut at every safe cut between two of its chars."""
        pairs, left, right = self.pairs, self.known_left, self.known_right
        if all(map(pairs.__contains__, pairwise(part))):
            return [part]
        out: list[str] = []
        start = 0
        for i, pair in enumerate(pairwise(part), 1):
            if pair not in pairs and (pair[0] in left or pair[1] in right):
                out.append(part[start:i])
                start = i
        out.append(part[start:])
        return out


def _path_strings(
    word: str, start_of: list[int], node_id: list[int], unk_id: int | None
) -> list[str]:
    """The texts of the best path that ends at each position at ``start_of`` (its start) with
    the node ``node_id``, in order; adjacent unknown nodes (``unk_id``) fused into one text."""
    ends: list[int] = []
    end = len(word)
    while end > 0:
        ends.append(end)
        end = start_of[end]
    ends.reverse()
    return _fused(word, ends, [node_id[e] for e in ends], unk_id)


def _fused(word: str, ends: list[int], ids: list[int], unk_id: int) -> list[str]:
    """The texts of a path whose nodes end at ``ends`` with ``ids``, as :func:`_path_strings`
    gives them: adjacent ``unk_id`` nodes fused into one text."""
    out: list[str] = []
    begin = 0
    unk_from = -1  # start of the unknown span being fused
    for end, node in zip(ends, ids):
        if node == unk_id:
            if unk_from < 0:
                unk_from = begin
        else:
            if unk_from >= 0:
                out.append(word[unk_from:begin])
                unk_from = -1
            out.append(word[begin:end])
        begin = end
    if unk_from >= 0:
        out.append(word[unk_from:])
    return out


def _char_class(chars: set[str]) -> str:
    return "".join(re.escape(c) for c in sorted(chars))
