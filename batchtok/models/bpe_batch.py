"""BPE merges of many words at once, in numpy: each step applies, in every word still merging,
the merge :meth:`BPE._merge_loop` applies next there (the lowest rank, the leftmost of equals).

Words never interact, so a step's merges touch disjoint slots. A word's symbols stay in the
slots of its chars (a merged symbol keeps its left slot; the right one dies), linked by
``nxt`` / ``prv``, so a slot's index orders symbols within the word and ``rank << SHIFT |
slot in word`` is a key whose per-word minimum is the next merge. One step costs a pass over
every slot (numpy) plus a few operations per merging word, so a batch of short words costs
about as many passes as its longest word has merges, instead of a Python loop per merge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .ragged import split, starts_of

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the first batch, not with batchtok (a small call never needs it).
SHIFT = 6
#: Words of at most this many symbols are merged together (a slot in its word < 2 ** SHIFT).
MAX_SYMBOLS = 1 << SHIFT
_NONE = 1 << 62  # the key of a slot without a merge


class PairTable:
    """The merges of a :class:`BPE` as arrays sorted by pair key (``left * stride + right``):
    rank and merged id, found by binary search. (An open-addressing hash table in numpy looked
    up 1.5-2x faster on large batches, but took 3x longer to build and lost on small ones.)"""

    def __init__(self, pairs: dict[int, int]) -> None:
        import numpy as np

        keys = np.fromiter(pairs.keys(), dtype=np.int64, count=len(pairs))
        packed = np.fromiter(pairs.values(), dtype=np.int64, count=len(pairs))
        order = np.argsort(keys)
        self.keys = keys[order]
        packed = packed[order]
        self.ranks = packed >> 32
        self.merged = packed & 0xFFFFFFFF

    def to_bytes(self) -> tuple[bytes, bytes, bytes]:
        """The arrays' bytes, for a pickle that does not need numpy to load."""
        return self.keys.tobytes(), self.ranks.tobytes(), self.merged.tobytes()

    @classmethod
    def from_bytes(cls, parts: tuple[bytes, bytes, bytes]) -> PairTable:
        """The table :meth:`to_bytes` gave, its arrays read in place."""
        import numpy as np

        table = cls.__new__(cls)
        table.keys, table.ranks, table.merged = (np.frombuffer(b, np.int64) for b in parts)
        return table

    def lookup(self, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(rank, merged id) of each pair key; rank ``_NONE`` where no merge has the pair."""
        import numpy as np

        if not len(self.keys):
            return np.full(len(keys), _NONE), np.zeros(len(keys), dtype=np.int64)
        at = np.searchsorted(self.keys, keys)
        np.minimum(at, len(self.keys) - 1, out=at)
        found = self.keys[at] == keys
        return np.where(found, self.ranks[at], _NONE), self.merged[at]


def merge_words(
    table: PairTable, stride: int, sym: np.ndarray, lengths: np.ndarray
) -> list[list[int]]:
    """The merged ids of each word: ``sym`` holds the ids of the words' initial symbols one
    word after another, ``lengths`` how many each has (2 to MAX_SYMBOLS)."""
    import numpy as np

    starts = starts_of(lengths)
    size = len(sym)
    sym = sym.astype(np.int64)  # a copy: merges write into it
    slot = np.arange(size, dtype=np.int64)
    in_word = slot - np.repeat(starts, lengths)
    last = starts + lengths - 1
    nxt = slot + 1
    nxt[last] = -1
    prv = slot - 1
    prv[starts] = -1
    alive = np.ones(size, dtype=bool)
    ranks, merged = table.lookup(sym[:-1] * stride + sym[1:])
    rank = np.empty(size, dtype=np.int64)
    rank[:-1] = ranks
    rank[last] = _NONE
    new = np.zeros(size, dtype=np.int64)
    new[:-1] = merged
    key = np.where(rank == _NONE, _NONE, rank << SHIFT | in_word)
    mask = (1 << SHIFT) - 1
    # the starts of the words still merging: a word without a merge at some step never has
    # one again, and its slots (all _NONE) may join the segment of the word before it
    active = starts
    while len(active):
        best = np.minimum.reduceat(key, active)
        merging = best != _NONE
        active = active[merging]
        best = best[merging]
        at = active + (best & mask)
        right = nxt[at]
        sym[at] = new[at]
        alive[right] = False
        key[right] = _NONE
        after = nxt[right]
        nxt[at] = after
        has_after = after >= 0
        prv[after[has_after]] = at[has_after]
        # the pair the merged symbol starts, and the one it ends
        key[at] = _NONE
        with_after = at[has_after]
        if len(with_after):
            r, m = table.lookup(sym[with_after] * stride + sym[after[has_after]])
            new[with_after] = m
            key[with_after] = np.where(r == _NONE, _NONE, r << SHIFT | in_word[with_after])
        before = prv[at]
        has_before = before >= 0
        before = before[has_before]
        if len(before):
            r, m = table.lookup(sym[before] * stride + sym[at[has_before]])
            new[before] = m
            key[before] = np.where(r == _NONE, _NONE, r << SHIFT | in_word[before])
    return split(sym[alive].tolist(), np.add.reduceat(alive, starts).tolist())
