"""BPE merges of many words at once, in numpy: each step applies, in every word still merging,
the merge :meth:`BPE._merge_loop` applies next there (the lowest rank, the leftmost of equals).

Words never interact, so a step's merges touch disjoint slots. A word's symbols stay in the
slots of its chars (a merged symbol keeps its left slot; the right one dies), linked by
``nxt`` / ``prv``, so a slot's index orders symbols within the word and ``rank << SHIFT |
slot in word`` is a key whose per-word minimum is the next merge. One step costs a pass over
the slots up to the last word still merging (words go longest first) plus a few operations
per merging word, so a batch costs about as many steps as its longest word has merges,
instead of a Python loop per merge.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import hash_table
from .ragged import ranges, split, starts_of

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the first batch, not with batchtok (a small call never needs it).
SHIFT = 7
#: Words of at most this many symbols are merged together (a slot in its word < 2 ** SHIFT).
MAX_SYMBOLS = 1 << SHIFT
_NONE = 1 << 62  # the key of a slot without a merge


class PairTable:
    """The merges of a :class:`BPE` in a :mod:`.hash_table` keyed by pair (``left * stride +
    right``), each value packed as ``rank << 32 | merged id``."""

    def __init__(self, pairs: dict[int, int]) -> None:
        import numpy as np

        keys = np.fromiter(pairs.keys(), dtype=np.int64, count=len(pairs))
        packed = np.fromiter(pairs.values(), dtype=np.int64, count=len(pairs))
        self.slot_keys, self.slot_values = hash_table.build(keys, packed)

    def to_bytes(self) -> tuple[bytes, bytes]:
        """The arrays' bytes, for a pickle that does not need numpy to load."""
        return self.slot_keys.tobytes(), self.slot_values.tobytes()

    @classmethod
    def from_bytes(cls, parts: tuple[bytes, bytes]) -> PairTable:
        """The table :meth:`to_bytes` gave, its arrays read in place."""
        import numpy as np

        table = cls.__new__(cls)
        table.slot_keys, table.slot_values = (np.frombuffer(b, np.int64) for b in parts)
        return table

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """The packed ``rank << 32 | merged id`` of each pair key, -1 where no merge has it."""
        return hash_table.lookup(self.slot_keys, self.slot_values, keys)


def merge_words(
    table: PairTable, stride: int, sym: np.ndarray, lengths: np.ndarray
) -> list[tuple[int, ...]]:
    """The merged ids of each word: ``sym`` holds the ids of the words' initial symbols one
    word after another, ``lengths`` how many each has (2 to MAX_SYMBOLS)."""
    flat, counts = merge_words_flat(table, stride, sym, lengths)
    # tuples, which the piece cache keeps as they are
    return split(tuple(flat.tolist()), counts.tolist())


def merge_words_flat(
    table: PairTable, stride: int, sym: np.ndarray, lengths: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`merge_words` as arrays: (the merged ids of every word, one word after another,
    int64; how many each word has)."""
    import numpy as np

    # Longest words first: a word of n symbols merges at most n - 1 times, so the words still
    # merging after a few steps sit at the front and each step reads only the slots up to
    # the last of them.
    order = np.argsort(-lengths, kind="stable")
    given_starts = starts_of(lengths)
    lengths = lengths[order]
    starts = starts_of(lengths)
    size = len(sym)
    slot = np.arange(size, dtype=np.int64)
    sym = sym[np.repeat(given_starts[order] - starts, lengths) + slot].astype(np.int64)
    in_word = slot - np.repeat(starts, lengths)
    last = starts + lengths - 1
    nxt = slot + 1
    nxt[last] = -1
    prv = slot - 1
    prv[starts] = -1
    alive = np.ones(size, dtype=bool)
    packed = np.empty(size, dtype=np.int64)
    packed[:-1] = table.lookup(sym[:-1] * stride + sym[1:])
    packed[last] = -1
    new = packed & 0xFFFFFFFF
    key = np.where(packed < 0, _NONE, (packed >> 32) << SHIFT | in_word)
    mask = (1 << SHIFT) - 1
    # the starts of the words still merging: a word without a merge at some step never has
    # one again, and its slots (all _NONE) may join the segment of the word before it
    active, active_last = starts, last
    while len(active):
        best = np.minimum.reduceat(key[: active_last[-1] + 1], active)
        merging = best != _NONE
        active = active[merging]
        active_last = active_last[merging]
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
        # (a symbol before a merged one is not merging: a word merges once a step, so the
        # two kinds of slots are disjoint and are looked up together)
        key[at] = _NONE
        before = prv[at]
        has_before = before >= 0
        lefts = np.concatenate((at[has_after], before[has_before]))
        if len(lefts):
            rights = np.concatenate((after[has_after], at[has_before]))
            packed = table.lookup(sym[lefts] * stride + sym[rights])
            new[lefts] = packed & 0xFFFFFFFF
            key[lefts] = np.where(packed < 0, _NONE, (packed >> 32) << SHIFT | in_word[lefts])
    # back to the words' own order: sorted word k's ids go where word order[k]'s start
    counts = np.empty(len(lengths), np.int64)
    counts[order] = np.add.reduceat(alive, starts)
    out = np.empty(int(counts.sum()), np.int64)
    out[ranges(starts_of(counts)[order], counts[order])] = sym[alive]
    return out, counts
