"""The ids of a batch's pieces, looked up as arrays: the batch path's piece cache.

:meth:`Tokenizer.encode_batch_ids` on a file whose pre-tokenizer is evaluated by boundary rules
(:mod:`.pre_tokenizers.boundary_rules`) gets each chunk of texts as one array of code points
and the bounds of its pieces. Looking each piece up in a dict would need a Python string per
piece, a dict probe per piece and a list extended per piece: on text that does not repeat,
most of a cold batch's time after the split. :class:`PieceTable` keeps instead, in numpy, the
code points and the ids of the pieces it has seen, and finds a chunk's pieces all at once:

1. a 63-bit hash of each piece (a polynomial over its code points, from running sums);
2. one probe of an open-addressing table (:mod:`.models.hash_table`) per hash;
3. **every hit checked**: its length and every code point against the piece kept under that
   hash. A hash is only a way to find a candidate; the ids are never taken on its word. A
   chunk with a piece whose hash names another piece (two pieces of one hash, in the table or
   in the chunk) is not looked up here at all: the caller splits it into strings, as before;
4. the misses, grouped by hash (and checked equal within a group), made strings once each,
   tokenized together by the caller's ``compute`` and kept;
5. the ids of all the pieces gathered into one flat array.

So the ids are the ones the strings would get, whatever the hashes. Memory is bounded as the
dict cache's: ``limit`` entries a generation; when a chunk would pass it, the entries not read
since the last switch go, and a chunk's own pieces always fit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from .models import hash_table
from .models.ragged import ranges, starts_of

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the first batch, not with batchtok (a small call never needs it).
_JOINT = 0xFFFF  # no piece holds it: the rules leave a text holding one to the regex
_BASE = 0x100000001B3  # odd, so its powers have inverses modulo 2 ** 64
_MIX = 0x9E3779B97F4A7C15
#: Estimated bytes of memory an entry takes (slots, entry arrays, ~7 code points, ~2 ids).
ENTRY_BYTES = 160
_FIRST_CAPACITY = 1 << 14  # entries the arrays first have room for


class PieceTable:
    """Pieces (as code points) -> their ids, in numpy arrays; see the module docstring."""

    def __init__(self, limit: int) -> None:
        self.limit = max(1, limit)
        # pieces looked up, and of them the distinct misses computed (benchmarks read them:
        # the hit rate is 1 - computed / looked_up)
        self.looked_up = self.computed = 0
        # one call at a time: a call's entries must not move (a new generation) under it
        self._lock = threading.Lock()
        self.clear()

    def clear(self) -> None:
        """Forget every piece."""
        with self._lock:
            self._count = self._capacity = 0
            self._slots = None  # the arrays are made by the first lookup (numpy is imported then)

    def __len__(self) -> int:
        return self._count

    def ids(
        self,
        points: np.ndarray,
        starts: np.ndarray,
        ends: np.ndarray,
        compute: Callable[[list[str]], tuple[np.ndarray, np.ndarray]],
    ) -> tuple[np.ndarray, np.ndarray] | None:
        """(the ids of every piece ``points[starts[k]:ends[k]]``, one piece after another; how
        many each has), the pieces this table lacks tokenized by ``compute`` (strings -> (their
        ids one after another, how many each has), in order). None when two different pieces
        share a hash (see the module docstring): the caller then looks the chunk up by
        strings."""
        import numpy as np

        with self._lock:
            if self._slots is None:
                self._rebuild(None, 0)
            self.looked_up += len(starts)
            lengths = ends - starts
            hashes = piece_hashes(points, starts, ends)
            entry = hash_table.lookup(*self._slots, hashes)
            hit = np.flatnonzero(entry >= 0)
            if len(hit) and not same_pieces(
                points,
                starts[hit],
                lengths[hit],
                self._points.data,
                self._key_starts[entry[hit]],
                self._key_lengths[entry[hit]],
            ):
                return None
            missed = np.flatnonzero(entry < 0)
            if len(hit):
                self._used[entry[hit]] = True
            if len(missed):
                # one entry per distinct missed piece: each piece equal to the first of its hash
                starts, lengths = starts[missed], lengths[missed]
                distinct, first, which = np.unique(
                    hashes[missed], return_index=True, return_inverse=True
                )
                other = first[which]
                if len(first) < len(missed) and not same_pieces(
                    points, starts, lengths, points, starts[other], lengths[other]
                ):
                    return None
                moved = self._make_room(len(distinct), entry[hit])
                if moved is not None and len(hit):
                    entry[hit] = moved[entry[hit]]
                    self._used[entry[hit]] = True
                new = self._add(points, starts[first], lengths[first], distinct, compute)
                entry[missed] = new[which]
            counts = self._id_lengths[entry]
            return self._ids.data[ranges(self._id_starts[entry], counts)], counts

    def _add(
        self,
        points: np.ndarray,
        starts: np.ndarray,
        lengths: np.ndarray,
        hashes: np.ndarray,
        compute: Callable[[list[str]], tuple[np.ndarray, np.ndarray]],
    ) -> np.ndarray:
        """Keep the distinct pieces (``points`` from ``starts``, ``lengths`` long, of
        ``hashes``, none of them kept yet, room made for them), their ids from ``compute``;
        their entries."""
        import numpy as np

        flat, counts = compute(strings_of(points, starts, lengths))
        self.computed += len(counts)
        flat = flat.astype(np.int32, copy=False)
        return self._put(hashes, points[ranges(starts, lengths)], lengths, flat, counts)

    def _put(
        self,
        hashes: np.ndarray,
        points: np.ndarray,
        lengths: np.ndarray,
        ids: np.ndarray,
        counts: np.ndarray,
    ) -> np.ndarray:
        """New entries of ``hashes``: their pieces' code points (``points``, one piece after
        another, ``lengths`` each) and ids (``ids``, ``counts`` each); their indices."""
        import numpy as np

        new = np.arange(self._count, self._count + len(hashes))
        self._hashes[new] = hashes
        self._key_starts[new] = self._points.append(points) + starts_of(lengths)
        self._key_lengths[new] = lengths
        self._id_starts[new] = self._ids.append(ids) + starts_of(counts)
        self._id_lengths[new] = counts
        self._count += len(hashes)
        hash_table.insert(*self._slots, hashes, new)
        return new

    def _make_room(self, pieces: int, needed: np.ndarray) -> np.ndarray | None:
        """Room for ``pieces`` more entries beside the entries ``needed`` (the chunk's hits,
        repeats allowed). The
        arrays start small and double up to ``limit`` entries; past it, a new generation
        keeps only the entries read since the last one, or only those needed when they and
        the new ones would not fit. Where entries moved, the new place of each old one (-1:
        gone), else None."""
        import numpy as np

        need = self._count + pieces
        if need <= self._capacity:
            return None
        if not self._count:
            self._rebuild(None, max(min(self.limit, _FIRST_CAPACITY), pieces))
            return None
        if need <= self.limit:  # the same entries, in the same places, with more room
            used = self._used[: self._count].copy()
            self._rebuild(np.arange(self._count), min(max(2 * self._capacity, need), self.limit))
            self._used[: len(used)] = used
            return None
        keep = np.flatnonzero(self._used[: self._count])
        if len(keep) + pieces > self.limit:
            keep = np.unique(needed)
        moved = np.full(self._count, -1, dtype=np.int64)
        moved[keep] = np.arange(len(keep))
        self._rebuild(keep, max(self.limit, len(keep) + pieces))
        return moved

    def _rebuild(self, keep: np.ndarray | None, capacity: int) -> None:
        """New arrays with room for ``capacity`` entries, holding the entries ``keep`` (none
        when None) in that order, none of them read yet."""
        import numpy as np

        old = None if keep is None or not len(keep) else self._kept(keep)
        self._capacity = capacity
        self._slots = hash_table.empty(capacity)
        self._hashes = np.empty(capacity, np.int64)
        self._key_starts = np.empty(capacity, np.int64)
        self._key_lengths = np.empty(capacity, np.int64)
        self._id_starts = np.empty(capacity, np.int64)
        self._id_lengths = np.empty(capacity, np.int64)
        self._used = np.zeros(capacity, dtype=bool)
        self._points = _Column(np.uint32)
        self._ids = _Column(np.int32)
        self._count = 0
        if old is not None:
            self._put(*old)

    def _kept(self, keep: np.ndarray) -> tuple[np.ndarray, ...]:
        """(hashes, code points, lengths, ids, id counts) of the entries ``keep``."""
        key_lengths, id_lengths = self._key_lengths[keep], self._id_lengths[keep]
        return (
            self._hashes[keep],
            self._points.data[ranges(self._key_starts[keep], key_lengths)],
            key_lengths,
            self._ids.data[ranges(self._id_starts[keep], id_lengths)],
            id_lengths,
        )


def piece_hashes(points: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """A hash (int64 >= 0) of each piece ``points[starts[k]:ends[k]]``: the sum of its code
    points times powers of :data:`_BASE` from its start (modulo 2 ** 64, from running sums
    over ``points``), with its length, mixed."""
    import numpy as np

    powers, inverses = _powers(len(points) + 1)
    with np.errstate(over="ignore"):
        sums = np.zeros(len(points) + 1, np.uint64)
        np.cumsum(points.astype(np.uint64) * powers[: len(points)], out=sums[1:])
        hashes = (sums[ends] - sums[starts]) * inverses[starts]
        hashes += (ends - starts).astype(np.uint64)
        hashes *= np.uint64(_MIX)
        hashes ^= hashes >> np.uint64(31)
    return (hashes >> np.uint64(1)).astype(np.int64)


_POWERS: list = []  # [powers of _BASE, of its inverse], as long as the longest chunk yet


def _powers(n: int) -> tuple[np.ndarray, np.ndarray]:
    """(``_BASE ** k``, ``_BASE ** -k``) modulo 2 ** 64 for k < n (or more), uint64."""
    import numpy as np

    if _POWERS and len(_POWERS[0]) >= n:
        return _POWERS[0], _POWERS[1]
    size = 1 << max(16, (n - 1).bit_length())
    out = []
    for base in (_BASE, pow(_BASE, -1, 1 << 64)):
        # by doubling: the powers from k to 2k are those below k times base ** k (a running
        # product, multiply.accumulate, is ~10 times slower: 0.1 s for a 4 MB chunk)
        powers = np.empty(size, np.uint64)
        powers[0] = 1
        k = 1
        with np.errstate(over="ignore"):
            while k < size:
                np.multiply(powers[:k], np.uint64(pow(base, k, 1 << 64)), out=powers[k : 2 * k])
                k *= 2
        out.append(powers)
    _POWERS[:] = out
    return out[0], out[1]


def same_pieces(
    points: np.ndarray,
    starts: np.ndarray,
    lengths: np.ndarray,
    other_points: np.ndarray,
    other_starts: np.ndarray,
    other_lengths: np.ndarray,
) -> bool:
    """Whether each piece ``points[starts[k]:starts[k] + lengths[k]]`` equals piece k of
    ``other_points`` (from ``other_starts``, ``other_lengths`` long), every code point
    compared."""
    import numpy as np

    if not np.array_equal(other_lengths, lengths):
        return False
    mine = points[ranges(starts, lengths)]
    return np.array_equal(other_points[ranges(other_starts, lengths)], mine)


def strings_of(points: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> list[str]:
    """The pieces ``points[starts[k]:starts[k] + lengths[k]]`` as strings (none holds
    U+FFFF), decoded at once."""
    import numpy as np

    if not len(starts):
        return []
    spaced = np.full(int(lengths.sum()) + len(starts), _JOINT, np.uint32)
    spaced[ranges(starts_of(lengths + 1), lengths)] = points[ranges(starts, lengths)]
    return spaced.tobytes().decode("utf-32-le").split("\uffff")[:-1]


class _Column:
    """A numpy array appended to, its room doubled as it grows."""

    def __init__(self, dtype: type) -> None:
        import numpy as np

        self.data = np.empty(0, dtype)
        self.used = 0

    def append(self, values: np.ndarray) -> int:
        """Where ``values`` start once appended."""
        import numpy as np

        at, end = self.used, self.used + len(values)
        if end > len(self.data):
            grown = np.empty(max(end, 2 * len(self.data)), self.data.dtype)
            grown[:at] = self.data[:at]
            self.data = grown
        self.data[at:end] = values
        self.used = end
        return at
