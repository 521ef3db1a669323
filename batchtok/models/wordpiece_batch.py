"""WordPiece over many words at once, in numpy: the longest piece at each position of every
word is read with one trie walk (word starts against the vocab, other positions against the
pieces that carry the continuing prefix, prefix removed), then every word is cut greedily from
the left together, one piece per step. That is :meth:`WordPiece.tokenize`'s longest match
first: the candidates it tries from the longest down are the keys the walk passes through."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .ragged import split, starts_of
from .trie_batch import Trie

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the first batch, not with batchtok (a small call never needs it).


class PieceTrie(Trie):
    """Pieces (text -> id) as a trie; ``ids`` holds each node's piece id, -1 for a prefix
    only."""

    def __init__(self, pieces: dict[str, int]) -> None:
        strings = [piece for piece in pieces if piece]
        super().__init__(strings)
        self.ids = self.values([pieces[p] for p in strings], -1)


def longest(
    trie: PieceTrie, points: np.ndarray, pos: np.ndarray, limit: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The length (0: none) and id of the longest piece starting at each of ``pos``."""
    import numpy as np

    size = np.zeros(len(points), dtype=np.int64)
    ids = np.zeros(len(points), dtype=np.int64)
    for length, at, node in trie.walk(points, pos, limit):
        found = trie.ids[node]
        is_piece = found >= 0
        size[at[is_piece]] = length
        ids[at[is_piece]] = found[is_piece]
    return size[pos], ids[pos]


def greedy(
    first: PieceTrie, after: PieceTrie, points: np.ndarray, lengths: np.ndarray
) -> tuple[list[list[int]], np.ndarray]:
    """Each word's pieces, longest first from the left (``first`` at the word's start,
    ``after`` elsewhere), and which words have a position where no piece starts (their ids
    are the ones found before it)."""
    import numpy as np

    count = len(lengths)
    size = len(points)
    starts = starts_of(lengths)
    ends = starts + lengths
    limit = np.repeat(ends, lengths)
    first_len, first_id = longest(first, points, starts, limit)
    inside = np.ones(size, dtype=bool)
    inside[starts] = False
    rest = np.flatnonzero(inside)
    next_len = np.zeros(size, dtype=np.int64)
    next_id = np.zeros(size, dtype=np.int64)
    next_len[rest], next_id[rest] = longest(after, points, rest, limit)

    words = np.arange(count, dtype=np.int64)
    at = starts
    step_len, step_id = first_len, first_id
    bad = np.zeros(count, dtype=bool)
    taken_word, taken_id = [], []
    while len(words):
        missing = step_len == 0
        bad[words[missing]] = True
        found = ~missing
        words, at, step_id = words[found], at[found] + step_len[found], step_id[found]
        taken_word.append(words)
        taken_id.append(step_id)
        going = at < ends[words]
        words, at = words[going], at[going]
        step_len, step_id = next_len[at], next_id[at]
    word_of = np.concatenate(taken_word) if taken_word else np.zeros(0, dtype=np.int64)
    order = np.argsort(word_of, kind="stable")
    flat = np.concatenate(taken_id)[order].tolist() if taken_word else []
    return split(flat, np.bincount(word_of, minlength=count).tolist()), bad
