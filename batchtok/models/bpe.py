"""BPE: merges applied by rank to the chars (or byte-fallback tokens) of a word.

:mod:`batchtok.models.bpe_boundary` holds the load-time proof that lets the tokenizer cut long
words where BPE merges the two sides independently.
"""

from __future__ import annotations

import heapq
from array import array
from bisect import bisect_left
from itertools import compress, repeat
from operator import is_
from typing import TYPE_CHECKING, NamedTuple

from xxhash import xxh3_64_intdigest

from ..alignment import AlignmentMismatch, char_sizes
from ..errors import EncodeError, NotReproducibleError, TokenizerFileError
from ..utils.json_numbers import as_serde_f32
from ..utils.spec import Spec
from . import hash_table
from .base import Model, read_vocab, refuse_shared_ids
from .bpe_batch import MAX_SYMBOLS, PairTable, merge_words, merge_words_flat
from .bpe_boundary import CharCut, PairCut
from .ragged import code_points, flat_rows, gathered, lengths_of, starts_of, with_bytes

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import numpy as np

# Words longer than this (in symbols) merge with a heap: O(n log n) instead of O(n^2).
_HEAP_THRESHOLD = 256
# Byte-level words at least this long (in symbols) are cut where merges provably cannot
# cross (CharCut), and each part merged on its own through the segment cache.
_CUT_MIN = 36
# Parts of cut words kept (cleared when full): a part repeats far more than a whole word.
_SEGMENT_ENTRIES = 1 << 16
# Words at least this long (in chars) are cut where no vocab token holds two adjacent chars
# (PairCut: vocabularies that are not byte-level).
_PAIR_CUT_MIN = 4


_NEVER = 1 << 62  # the rank of a pair that has no merge
# While a pickle's merge dict is unread, one-word merges read the batch tables' hash table
# (hash_table.Probe, ~6x slower a lookup) for up to this many symbols, then read the dict: the
# few words a batch leaves to them (longer than MAX_SYMBOLS) never pay its 0.1-0.13 s
# (Gemma 3), and a process merging word by word pays at most about twice that.
_PROBE_SYMBOLS = 100_000
# tokenize_many merges words together (numpy) from this many on; fewer go one by one (the
# two cost the same at ~200 words of held-out code with gemma3, llama3 and llama2).
_BATCH_MIN = 256


def _merges_maybe(word: str) -> bool:
    """Whether merges may apply to a word: two symbols or more (a shorter one is its ids)."""
    return len(word) >= 2


# :meth:`BPE._merge_together` merges words a chunk of about this many chars at a time (85k
# distinct pieces of held-out text of 27 languages: 0.52 s in one chunk, 0.42 s in chunks of
# 32k chars with llama2, 0.66 and 0.54 s with llama3; 2^14 to 2^16 chars do about as well).
_CHUNK_CHARS = 1 << 15


def _length_chunks(lengths: np.ndarray) -> list[np.ndarray]:
    """The indices of words of ``lengths``, longest first, cut into chunks of about
    :data:`_CHUNK_CHARS` chars (see :meth:`BPE._merge_together`)."""
    import numpy as np

    order = np.argsort(-lengths, kind="stable")
    ends = np.cumsum(lengths[order])
    last = int(ends[-1]) if len(ends) else 0
    cuts = np.searchsorted(ends, np.arange(_CHUNK_CHARS, last, _CHUNK_CHARS))
    return np.split(order, np.unique(cuts[cuts > 0]))


class MergeStep(NamedTuple):
    """One merge BPE applied: ``left`` and ``right`` (symbols ``at`` and ``at + 1``) became
    ``merged``; ``rank``: the merge's line in the file's ``merges`` (0 first)."""

    rank: int
    left: str
    right: str
    merged: str
    at: int


class BPE(Model):
    def __init__(
        self,
        vocab: dict[str, int],
        vocab_r: dict[int, str],
        merges: list[tuple[str, str]],
        *,
        unk_token: str | None = None,
        continuing_subword_prefix: str | None = None,
        end_of_word_suffix: str | None = None,
        fuse_unk: bool = False,
        byte_fallback: bool = False,
        ignore_merges: bool = False,
        where: str = "model",
    ) -> None:
        self.vocab, self.vocab_r = vocab, vocab_r
        self.unk_token = unk_token
        self.prefix = continuing_subword_prefix or ""
        self.suffix = end_of_word_suffix or ""
        self.fuse_unk, self.byte_fallback, self.ignore_merges = (
            fuse_unk,
            byte_fallback,
            ignore_merges,
        )
        prefix_bytes = len(self.prefix.encode("utf-8"))
        # Merges keyed by the pair of ids, packed as one int (left * stride + right); the value
        # packs (rank, merged id) as rank << 32 | id, so the smallest value is the lowest rank.
        # A later duplicate pair overwrites the earlier one, as in tokenizers.
        self.stride = max(vocab_r, default=0) + 1
        self.pairs: dict[int, int] = {}
        pairs = self.pairs
        stride = self.stride
        for rank, (a, b) in enumerate(merges):
            id_a, id_b = vocab.get(a), vocab.get(b)
            if id_a is None or id_b is None:
                missing = a if id_a is None else b
                raise TokenizerFileError(
                    f"{where}.merges[{rank}]", [a, b], f"token {missing!r} is not in the vocab"
                )
            new = _strip_prefix_bytes(b, prefix_bytes) if prefix_bytes else b
            id_new = None if new is None else vocab.get(a + new)
            if id_new is None:
                _refuse_merge(f"{where}.merges[{rank}]", a, b, prefix_bytes, vocab)
            pairs[id_a * stride + id_b] = rank << 32 | id_new
        self._byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
        # What encoding reads: the ids of the vocab entries a word's initial symbols can be
        # (every one-char token, the byte-fallback tokens and the unk token; with a subword
        # prefix or suffix, the whole vocab). A pickle may then leave the whole vocab to be
        # read on first use (see _deferred_names): a runner worker never reads it.
        self.symbol_vocab = self._symbol_vocab_of(vocab)
        self._size = len(vocab)
        self._vocab_hashes: bytes | None = None  # see _may_hold
        self._char_cut = CharCut.for_model(self)
        self._pair_cut = PairCut.for_model(self) if self._char_cut is None else None
        self._segments: dict[str, list[int]] = {}
        # for tokenize_many, built on first use (see _batch_tables): the merges' PairTable;
        # the id of each char that is a vocab token, by code point (-1: none)
        self._tables: tuple[PairTable, np.ndarray] | None = None
        self._segment_misses = 0  # chars of the parts merged because the segment cache lacked them

    # -- encoding -----------------------------------------------------------------------------

    def _symbol_vocab_of(self, vocab: dict[str, int]) -> dict[str, int]:
        if self.prefix or self.suffix:
            return vocab
        found = {t: i for t, i in vocab.items() if len(t) == 1}
        for token in (*self._byte_tokens, self.unk_token):
            if token is not None and token in vocab:
                found[token] = vocab[token]
        return found

    def _symbols(self, word: str) -> list[str]:
        """Initial symbols: chars (with prefix / suffix), byte fallback, unk handling."""
        vocab = self.symbol_vocab
        if not self.prefix and not self.suffix:
            if all(map(vocab.__contains__, word)):
                return list(word)
        return [symbol for symbol, _ in self._symbol_lengths(word)]

    def token_offsets(
        self, word: str, ids: Sequence[int] | None = None, start: int = 0
    ) -> list[tuple[int, int, int]]:
        """Each token's offsets: the sum of the byte lengths of the initial symbols it merges
        (found by their strings: a merge's string is the left one's and the right one's
        without the subword prefix), as the library's ``Word`` counts them. ``ids``: the
        word's ids at ``start`` of a list that goes on past them (an encode's), which saves
        merging the word again: read as far as the word's symbols go, each checked against
        them."""
        if self.ignore_merges and word in self.vocab:
            return [(self.vocab[word], 0, len(word.encode("utf-8")))]
        symbols = self._symbol_lengths(word)
        prefix_bytes = len(self.prefix.encode("utf-8"))
        out = []
        j = at = 0
        if ids is None:
            ids, start = self.tokenize(word), 0
        for k in range(start, len(ids)):
            if j >= len(symbols):
                break
            token_id = ids[k]
            target = self.vocab_r.get(token_id)
            text, size = symbols[j]
            j += 1
            while text != target and j < len(symbols) and len(text) < len(target):
                more, more_size = symbols[j]
                j += 1
                stripped = _strip_prefix_bytes(more, prefix_bytes) if prefix_bytes else more
                text += more if stripped is None else stripped
                size += more_size
            if text != target:
                raise AlignmentMismatch(
                    f"batchtok bug: the offsets walk found no BPE token {target!r} in {word!r}"
                )
            out.append((token_id, at, at + size))
            at += size
        if j < len(symbols):
            raise AlignmentMismatch(f"batchtok bug: the offsets walk ran out of ids in {word!r}")
        return out

    def _symbol_lengths(self, word: str) -> list[tuple[str, int]]:
        """:meth:`_symbols` with the byte length the library gives each: a char's own (not its
        prefix's or suffix's), 1 for a byte-fallback token, the chars' for an unk."""
        vocab = self.symbol_vocab
        sizes = char_sizes(word)
        if not self.prefix and not self.suffix and all(map(vocab.__contains__, word)):
            return list(zip(word, sizes))
        out: list[tuple[str, int]] = []
        pending = 0
        last = len(word) - 1
        for i, ch in enumerate(word):
            size = sizes[i]
            piece = ch
            if i > 0 and self.prefix:
                piece = self.prefix + piece
            if i == last and self.suffix:
                piece = piece + self.suffix
            if piece in vocab:
                if pending:
                    out.append((self._unk(), pending))
                    pending = 0
                out.append((piece, size))
                continue
            if self.byte_fallback:
                tokens = [self._byte_tokens[b] for b in piece.encode("utf-8")]
                if all(t in vocab for t in tokens):
                    out += [(t, 1) for t in tokens]
                    continue
            if self.unk_token is None:
                continue
            if pending and not self.fuse_unk:
                out.append((self._unk(), pending))
                pending = 0
            pending += size
        if pending:
            out.append((self._unk(), pending))
        return out

    def byte_token_strings(self) -> list[str]:
        """The 256 byte-fallback token strings, ``<0x00>`` to ``<0xFF>``."""
        return self._byte_tokens

    def _unk(self) -> str:
        if self.unk_token not in self.symbol_vocab:
            raise EncodeError(f"Unk token `{self.unk_token}` not found in the vocabulary")
        return self.unk_token  # type: ignore[return-value]

    def tokenize(self, word: str) -> list[int]:
        if self.ignore_merges and word in self.vocab:
            return [self.vocab[word]]
        vocab = self.symbol_vocab
        if not self.prefix and not self.suffix:
            ids = list(map(vocab.get, word))
            if None not in ids:
                # each char a symbol of its own (the case of every byte-level word)
                n = len(ids)
                if n < 2:
                    return ids
                pair_cut = self._pair_cut
                if pair_cut is not None and n >= _PAIR_CUT_MIN and pair_cut.wanted():
                    parts = pair_cut.split(word)
                    if len(parts) > 1:
                        missed = self._segment_misses
                        found = self._merge_parts(parts)
                        pair_cut.account(n, self._segment_misses - missed)
                        return found
                    return self._merge(ids)
                if n <= _HEAP_THRESHOLD and n < _CUT_MIN:
                    return self._merge_loop(ids)
                cut = self._char_cut
                if cut is not None and cut.applies(word):
                    return self._merge_parts(cut.split(word))
                return self._merge(ids)
        return self._merge([vocab[s] for s in self._symbols(word)])

    tokenizes_many = True

    def tokenize_many(self, words: list[str]) -> list[Sequence[int]]:
        """:meth:`tokenize` of each word. When there are enough of them, the words whose chars
        are all vocab tokens (no subword prefix or suffix), 2 to ``MAX_SYMBOLS`` of them, are
        merged together in numpy (:mod:`.bpe_batch`); the cuts of :meth:`tokenize` give the
        whole word's merges, so merging whole words gives the same ids. The ids of a word are
        a list or, merged together, a tuple."""
        if self.prefix or self.suffix or len(words) < _BATCH_MIN:
            return [self.tokenize(w) for w in words]
        if not self.ignore_merges:
            fits = None if all(words) else _merges_maybe
            return self._each_together(words, fits, self._merge_together)
        # a word in the vocab is its id, merges ignored (as tokenize has it): all looked up in
        # one pass, and only the others merged
        whole = list(map(self.vocab.get, words))
        out: list[Sequence[int]] = [[i] for i in whole]
        rest = list(compress(range(len(words)), map(is_, whole, repeat(None))))
        if rest:
            found = self._each_together(
                list(map(words.__getitem__, rest)), _merges_maybe, self._merge_together
            )
            for i, ids in zip(rest, found):
                out[i] = ids
        return out

    def _merge_together(self, batch: list[str]) -> list[Sequence[int] | None]:
        """The merges of each (non-empty) word that :func:`merge_words` can take, else None.

        The words go longest first, a chunk of about :data:`_CHUNK_CHARS` chars at a time: a
        chunk's arrays stay in the CPU's cache, where a whole batch's span many MB that each
        step of the merges reads at scattered places, and a chunk's words, of about one
        length, stop merging at about the same step."""
        import numpy as np

        lengths = lengths_of(batch)
        if int(lengths.sum()) <= _CHUNK_CHARS:
            return self._merge_chunk(batch, lengths)
        chunks = _length_chunks(lengths)
        found: list[Sequence[int] | None] = []
        for chunk in chunks:
            found += self._merge_chunk(list(map(batch.__getitem__, chunk.tolist())), lengths[chunk])
        return list(map(found.__getitem__, np.argsort(np.concatenate(chunks)).tolist()))

    def _merge_chunk(self, batch: list[str], lengths: np.ndarray) -> list[Sequence[int] | None]:
        """:meth:`_merge_together` of one chunk (``lengths``: its words' lengths)."""
        out: list[Sequence[int] | None] = [None] * len(batch)
        where, sym, counts = self._chunk_symbols(batch, lengths, out)
        if where:
            table = self._batch_tables()[0]
            for k, found in zip(where, merge_words(table, self.stride, sym, counts)):
                out[k] = found
        return out

    def tokenize_many_flat(self, words: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`tokenize_many` as arrays: (the ids of every word, one word after another;
        how many each has), without a list or tuple per word where the words merge together."""
        import numpy as np

        n = len(words)
        if self.prefix or self.suffix or n < _BATCH_MIN:
            return flat_rows([self.tokenize(w) for w in words])
        # (which words, their ids one word after another, how many each)
        groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        todo = np.arange(n)
        if self.ignore_merges:  # a word in the vocab is its id (as tokenize has it)
            whole = np.fromiter(map(self.vocab.get, words, repeat(-1)), np.int64, n)
            known = whole >= 0
            groups.append((todo[known], whole[known], np.ones(int(known.sum()), np.int64)))
            todo = todo[~known]
        lengths = lengths_of(words)[todo]
        merging = lengths >= 2  # a shorter word has no merge: tokenize
        alone = todo[~merging].tolist()
        todo, lengths = todo[merging], lengths[merging]
        table = self._batch_tables()[0]
        for in_todo in _length_chunks(lengths):
            chunk = todo[in_todo]
            batch = list(map(words.__getitem__, chunk.tolist()))
            out: list[Sequence[int] | None] = [None] * len(batch)
            where, sym, counts = self._chunk_symbols(batch, lengths[in_todo], out)
            if where:
                groups.append((chunk[where], *merge_words_flat(table, self.stride, sym, counts)))
            taken = set(where)
            for k, ids in enumerate(out):
                if k in taken:
                    continue
                if ids is None:
                    alone.append(int(chunk[k]))
                else:
                    groups.append(
                        (chunk[k : k + 1], np.asarray(ids, np.int64), np.array([len(ids)]))
                    )
        if alone:
            flat, counts = flat_rows([self.tokenize(words[k]) for k in alone])
            groups.append((np.array(alone, np.int64), flat, counts))
        return gathered(groups, n)

    def _chunk_symbols(
        self, batch: list[str], lengths: np.ndarray, out: list[Sequence[int] | None]
    ) -> tuple[list[int], np.ndarray, np.ndarray]:
        """Of a chunk of words (``lengths``: theirs): (the words :func:`merge_words` takes,
        their initial symbols one word after another, how many each has); the ids of a word of
        fewer than two symbols set in ``out``. A word whose chars are all vocab tokens starts
        as their ids, read for the whole chunk at once, and so does one with chars that fall
        back to their bytes when every byte has its token (:func:`.ragged.with_bytes`); one
        with other chars (unknown) starts as :meth:`_symbols`, as :meth:`tokenize` merges
        it. A word left out of both (too many symbols, an unk token not in the vocab) is
        :meth:`tokenize`'s."""
        import numpy as np

        chars = self._batch_tables()[1]
        points = code_points("".join(batch))
        ids = chars[np.minimum(points, len(chars) - 1)]
        starts = starts_of(lengths)
        whole = np.minimum.reduceat(ids, starts) >= 0  # every char a token
        out: list[Sequence[int] | None] = [None] * len(batch)
        if not whole.all() and (byte_ids := self.byte_fallback_ids()) is not None:
            # a lone surrogate has no UTF-8 bytes: its word is left to tokenize, which raises
            bytes_ok = np.maximum.reduceat((points >> 11) == 0x1B, starts) == 0
            ids, lengths = with_bytes(points, ids, starts, np.array(byte_ids, dtype=np.int64))
            whole = bytes_ok
        ok = lengths >= 2
        ok &= lengths <= MAX_SYMBOLS
        ok &= whole
        where = np.flatnonzero(ok).tolist()
        sym, counts = ids[np.repeat(ok, lengths)], lengths[ok]
        if not whole.all():
            more, more_counts, more_ids = self._symbol_ids(
                batch, np.flatnonzero(~whole).tolist(), out
            )
            if more:
                where += more
                sym = np.concatenate([sym, np.array(more_ids, dtype=sym.dtype)])
                counts = np.concatenate([counts, np.array(more_counts, dtype=counts.dtype)])
        return where, sym, counts

    def byte_fallback_ids(self) -> tuple[int, ...] | None:
        """The ids of the 256 byte-fallback tokens, by byte, when ``byte_fallback`` is on and
        the vocab has all of them (a char that is no token then always becomes its bytes);
        else None."""
        ids = tuple(map(self.symbol_vocab.get, self._byte_tokens))
        return ids if self.byte_fallback and None not in ids else None

    def _symbol_ids(
        self, batch: list[str], which: list[int], out: list[Sequence[int] | None]
    ) -> tuple[list[int], list[int], list[int]]:
        """Of the words ``which`` of ``batch`` (each with a char that is no vocab token): the
        ones :func:`merge_words` takes, their counts of symbols and their symbol ids one word
        after another. A word of fewer than two symbols has its ids set in ``out``; one whose
        symbols fail (an unk token not in the vocab) or that has too many is left to
        :meth:`tokenize`, which raises or merges it."""
        vocab = self.symbol_vocab
        taken: list[int] = []
        counts: list[int] = []
        symbols: list[int] = []
        for k in which:
            try:
                found = [vocab[s] for s in self._symbols(batch[k])]
            except EncodeError:
                continue
            if len(found) < 2:
                out[k] = found
            elif len(found) <= MAX_SYMBOLS:
                taken.append(k)
                counts.append(len(found))
                symbols += found
        return taken, counts, symbols

    _TABLES = "_tables"
    # read only by the one-word merges (the batch reads its PairTable)
    _DEFERRED = ("pairs",)

    def _unread_pairs_get(self, symbols: int) -> Callable[..., int | None]:
        """The lookup of a pair's packed merge for a one-word merge of ``symbols`` symbols
        while a pickle has left the merge dict unread: once a batch has read the batch
        tables, their hash table's (see _PROBE_SYMBOLS), else the dict's, read now."""
        found = self.__dict__
        probe = found.get("_probe")
        tables = found.get("_tables")
        if probe is None and tables is not None:  # (read by a batch: numpy is imported)
            table = tables[0]
            probe = self._probe = [0, hash_table.Probe(table.slot_keys, table.slot_values)]
        if probe is not None and probe[0] + symbols <= _PROBE_SYMBOLS:
            probe[0] += symbols
            return probe[1].get
        return self.pairs.get

    def __getstate__(self) -> dict:
        """:meth:`Model.__getstate__`, with the hashes :meth:`_may_hold` reads when the vocab
        is deferred, and without the probe (views of the tables: built again on first use)."""
        if "vocab" in self._deferred_names() and self._vocab_hashes is None:
            self._vocab_hashes = _hashes_of(self.vocab)
        state = super().__getstate__()
        state.pop("_probe", None)
        return state

    def _deferred_names(self) -> tuple[str, ...]:
        """Also the whole vocab, when encoding reads only :attr:`symbol_vocab` (no subword
        prefix or suffix, no ``ignore_merges``' whole-word lookup): unpickling Gemma 3's
        262k entries takes 70-140 ms of each run's start-up, which then only a lookup of
        another token (:meth:`token_id`), decoding or full Encodings pay, on first use."""
        vocab = self.__dict__.get("vocab")
        if vocab is None or vocab is self.symbol_vocab or self.ignore_merges:
            return self._DEFERRED  # (a deferred vocab stays so: see Model.__getstate__)
        return (*self._DEFERRED, "vocab")

    @property
    def vocab_size(self) -> int:
        return self._size

    def max_id(self) -> int:
        return self.stride - 1  # (stride: the largest id + 1, or 1 for an empty vocab)

    def token_id(self, token: str) -> int | None:
        """The id of vocab entry ``token``, or None; read from the whole vocab only when it is
        loaded already or ``token`` may be in it (:meth:`_may_hold`)."""
        vocab = self.__dict__.get("vocab")
        if vocab is not None:
            return vocab.get(token)
        found = self.symbol_vocab.get(token)
        if found is not None or not self._may_hold(token):
            return found
        return self.vocab.get(token)

    def _may_hold(self, token: str) -> bool:
        """False when ``token`` is certainly no vocab entry: the sorted 64-bit hashes of the
        entries (kept beside a pickle that defers the vocab) lack its hash."""
        hashes = memoryview(self._vocab_hashes or b"").cast("B").cast("Q")
        h = _hash(token)
        at = bisect_left(hashes, h)
        return at < len(hashes) and hashes[at] == h

    def _build_tables(self) -> tuple[PairTable, np.ndarray]:
        return PairTable(self.pairs), _char_id_table(self.symbol_vocab)

    def _tables_to_bytes(self, tables: tuple[PairTable, np.ndarray]) -> tuple:
        table, chars = tables
        return table.to_bytes(), chars.tobytes()

    def _tables_from_bytes(self, kept: tuple) -> tuple[PairTable, np.ndarray]:
        import numpy as np

        return PairTable.from_bytes(kept[0]), np.frombuffer(kept[1], np.int64)

    def prepare_batches(self) -> None:
        super().prepare_batches()
        if self._char_cut is not None:
            self._char_cut.prepare()

    def _merge(self, ids: list[int]) -> list[int]:
        if len(ids) < 2:
            return ids
        if len(ids) > _HEAP_THRESHOLD:
            return self._merge_heap(ids)
        return self._merge_loop(ids)

    def _merge_parts(self, parts: list[str]) -> list[int]:
        """The merges of each part (every char a vocab token) on its own, concatenated."""
        vocab = self.symbol_vocab
        segments = self._segments
        out: list[int] = []
        for part in parts:
            ids = segments.get(part)
            if ids is None:
                self._segment_misses += len(part)
                if len(segments) >= _SEGMENT_ENTRIES:
                    segments.clear()
                ids = segments[part] = self._merge(list(map(vocab.__getitem__, part)))
            out += ids
        return out

    def _merge_loop(self, word: list[int]) -> list[int]:
        """Apply the lowest-ranked merge present, leftmost first, until none applies.

        The packed (rank, merged id) of each adjacent pair is kept in a list beside the ids,
        so each step is a C-level ``min`` and ``index`` plus two lookups for the new pairs.
        """
        pairs = self.__dict__.get("pairs")
        get = pairs.get if pairs is not None else self._unread_pairs_get(len(word))
        stride = self.stride
        never = _NEVER
        ranks = [get(word[i] * stride + word[i + 1], never) for i in range(len(word) - 1)]
        while ranks:
            best = min(ranks)
            if best == never:
                break
            i = ranks.index(best)
            new = best & 0xFFFFFFFF
            word[i : i + 2] = [new]
            del ranks[i]
            if i < len(ranks):
                ranks[i] = get(new * stride + word[i + 1], never)
            if i > 0:
                ranks[i - 1] = get(word[i - 1] * stride + new, never)
        return word

    def _merge_heap(self, ids: list[int]) -> list[int]:
        """The same merges for long words, with a heap of (packed rank, position)."""
        pairs = self.__dict__.get("pairs")
        get = pairs.get if pairs is not None else self._unread_pairs_get(len(ids))
        stride = self.stride
        n = len(ids)
        nxt = list(range(1, n + 1))
        nxt[-1] = -1
        prv = list(range(-1, n - 1))
        alive = [True] * n
        heap = []
        for i in range(n - 1):
            r = get(ids[i] * stride + ids[i + 1])
            if r is not None:
                heap.append((r, i))
        heapq.heapify(heap)
        while heap:
            packed, i = heapq.heappop(heap)
            if not alive[i]:
                continue
            j = nxt[i]
            if j == -1 or get(ids[i] * stride + ids[j]) != packed:
                continue
            ids[i] = packed & 0xFFFFFFFF
            alive[j] = False
            k = nxt[j]
            nxt[i] = k
            if k != -1:
                prv[k] = i
                r = get(ids[i] * stride + ids[k])
                if r is not None:
                    heapq.heappush(heap, (r, i))
            p = prv[i]
            if p != -1:
                r = get(ids[p] * stride + ids[i])
                if r is not None:
                    heapq.heappush(heap, (r, p))
        return [t for t, ok in zip(ids, alive) if ok]

    def merge_steps(self, word: str) -> tuple[list[str], list[MergeStep]]:
        """(initial symbols, the merges applied to them in order) for ``word``: each step
        joins the adjacent pair of lowest rank, the leftmost of equals, as :meth:`tokenize`
        does (the symbols left at the end are its tokens). Slow, for explaining a word."""
        if self.ignore_merges and word in self.vocab:
            return [word], []
        symbols = self._symbols(word)
        vocab, vocab_r, stride = self.vocab, self.vocab_r, self.stride
        ids = [vocab[s] for s in symbols]
        steps: list[MergeStep] = []
        while len(ids) > 1:
            packed = [self.pairs.get(a * stride + b, _NEVER) for a, b in zip(ids, ids[1:])]
            best = min(packed)
            if best == _NEVER:
                break
            at = packed.index(best)
            new = best & 0xFFFFFFFF
            steps.append(
                MergeStep(best >> 32, vocab_r[ids[at]], vocab_r[ids[at + 1]], vocab_r[new], at)
            )
            ids[at : at + 2] = [new]
        return symbols, steps

    def describe(self) -> str:
        flags = [
            f"vocab={len(self.vocab)}",
            f"merges={len(self.pairs)}",
            f"unk_token={self.unk_token!r}",
        ]
        for name in ("fuse_unk", "byte_fallback", "ignore_merges"):
            if getattr(self, name):
                flags.append(name)
        if self.prefix:
            flags.append(f"continuing_subword_prefix={self.prefix!r}")
        if self.suffix:
            flags.append(f"end_of_word_suffix={self.suffix!r}")
        return "BPE(" + ", ".join(flags) + ")"

    @classmethod
    def from_spec(cls, spec: Spec) -> BPE:
        """A BPE model from its JSON object; ``vocab`` and ``merges`` are required, the rest
        may be missing or null. A nonzero dropout is refused last, once every check
        tokenizers makes has passed (:class:`NotReproducibleError`)."""
        raw = spec.number("dropout", None, nullable=True)
        dropout = None
        if raw is not None:
            # tokenizers holds dropout as an f32: a tiny value is 0.0 (no dropout)
            try:
                dropout = as_serde_f32(raw)
            except ValueError as exc:
                raise spec.fail("dropout", raw, f"not a finite number ({exc})") from exc
            if not 0 <= dropout <= 1:
                raise spec.fail("dropout", raw, "Dropout should be between 0 and 1, inclusive")
        vocab, vocab_r = read_vocab(spec)
        merges = read_merges(spec)
        model = cls(
            vocab,
            vocab_r,
            merges,
            unk_token=spec.string("unk_token", None, nullable=True),
            continuing_subword_prefix=spec.string("continuing_subword_prefix", None, nullable=True),
            end_of_word_suffix=spec.string("end_of_word_suffix", None, nullable=True),
            fuse_unk=bool(spec.boolean("fuse_unk", False, nullable=True)),
            byte_fallback=bool(spec.boolean("byte_fallback", False, nullable=True)),
            ignore_merges=bool(spec.boolean("ignore_merges", False, nullable=True)),
            where=spec.path,
        )
        refuse_shared_ids(spec, vocab, vocab_r)
        if dropout:
            raise NotReproducibleError(
                spec.at("dropout"),
                raw,
                "dropout makes encoding random; batchtok only reproduces deterministic files",
            )
        return model


def _hash(token: str) -> int:
    return xxh3_64_intdigest(token.encode("utf-8", "surrogatepass"))


def _hashes_of(vocab: dict[str, int]) -> bytes:
    """The sorted distinct 64-bit hashes of the vocab's entries, as native uint64 bytes."""
    return array("Q", sorted(set(map(_hash, vocab)))).tobytes()


def _char_id_table(vocab: dict[str, int]):  # noqa: ANN201 - a numpy array
    """The vocab id of each char that is a token, indexed by code point; -1 elsewhere, and
    in the last entry, which stands for every code point past the table."""
    import numpy as np

    # the one-char tokens found by their lengths in C: a Python pass over a large vocab costs
    # a tenth of a second
    tokens = list(vocab)
    lengths = np.fromiter(map(len, tokens), np.int64, len(tokens))
    chars = {ord(tokens[k]): vocab[tokens[k]] for k in np.flatnonzero(lengths == 1).tolist()}
    table = np.full(max(chars, default=0) + 2, -1, dtype=np.int64)
    if chars:
        table[np.fromiter(chars.keys(), np.int64)] = np.fromiter(chars.values(), np.int64)
    return table


def _refuse_merge(where: str, a: str, b: str, prefix_bytes: int, vocab: dict[str, int]) -> None:
    """Refuse the merge of ``a`` and ``b`` (both in the vocab) whose merged token is not, as
    tokenizers' ``BpeBuilder::build`` fails: it writes the merged bytes into a buffer as long
    as the longest token and panics when they do not fit (``b`` shorter than the prefix, or
    the merge longer than any token); otherwise the lookup fails, also for bytes cut inside a
    char (they match no token). Only the lookup is an error an untagged reading falls past."""
    size = len(a.encode("utf-8")) + len(b.encode("utf-8")) - prefix_bytes
    if len(b.encode("utf-8")) < prefix_bytes:
        raise NotReproducibleError(
            where,
            [a, b],
            "right token is shorter than continuing_subword_prefix (tokenizers panics)",
        )
    if size > max(len(token.encode("utf-8")) for token in vocab):
        raise NotReproducibleError(
            where, [a, b], "merged token longer than any vocab token (tokenizers panics)"
        )
    tail = _strip_prefix_bytes(b, prefix_bytes)
    merged = repr(a + tail) if tail is not None else "(cut inside a char)"
    raise TokenizerFileError(where, [a, b], f"merged token {merged} is not in the vocab")


def _strip_prefix_bytes(token: str, n: int) -> str | None:
    """``token`` without its first ``n`` UTF-8 bytes, as tokenizers slices it (None if it
    cannot: too short, or the cut falls inside a char)."""
    raw = token.encode("utf-8")
    if len(raw) < n:
        return None
    try:
        return raw[n:].decode("utf-8")
    except UnicodeDecodeError:
        return None


def read_merges(spec: Spec) -> list[tuple[str, str]]:
    raw = spec.array("merges")
    merges: list[tuple[str, str]] = []
    if all(isinstance(m, str) for m in raw):
        line = 0
        for m in raw:
            if m.startswith("#version"):
                continue
            line += 1
            parts = m.split(" ")
            if len(parts) != 2:
                raise spec.fail(
                    "merges", m, f"merge line {line} must be two tokens separated by one space"
                )
            merges.append((parts[0], parts[1]))
        return merges
    for i, m in enumerate(raw):
        if not (isinstance(m, list) and len(m) == 2 and all(isinstance(x, str) for x in m)):
            raise spec.fail(
                f"merges[{i}]", m, "expected a pair of strings (all merges in one form)"
            )
        merges.append((m[0], m[1]))
    return merges
