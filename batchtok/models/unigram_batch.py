"""Unigram's Viterbi over many words at once, in numpy: the same visits and comparisons as
:meth:`Unigram._best_ids`, one numpy pass per char offset instead of a Python loop per
(start, piece) of each word.

Every word's chars sit in one array. The trie walk that finds the pieces starting at each
position runs for all positions together, one step per piece length: a position whose text
read so far leads to no piece drops out. The forward pass then visits offset 0, 1, 2, ... of
every word at once. Words never interact, and the nodes starting at one offset of one word
all end at different places, so a step's updates touch disjoint ends; as in the library, a
candidate replaces an end's best only when strictly greater (or when none reached it yet),
and ends are only reached from earlier offsets, so every tie keeps the earlier start.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .ragged import split, starts_of
from .trie_batch import Trie

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the first batch, not with batchtok (a small call never needs it).


class UnigramTrie(Trie):
    """A Unigram's pieces (its ``vocab``: piece -> the id looked up, ``pieces``: (piece,
    score) by id) as a trie, with each node's piece id (-1: a prefix only) and score."""

    def __init__(self, vocab: dict[str, int], pieces: list[tuple[str, float]]) -> None:
        import numpy as np

        strings = [piece for piece in vocab if piece]  # the empty piece is never matched
        super().__init__(strings)
        ids = np.fromiter(map(vocab.__getitem__, strings), np.int64, len(strings))
        self.piece = self.values(ids, -1)
        self.score = self.values([pieces[i][1] for i in ids.tolist()], 0.0)


def best_paths(
    trie: UnigramTrie,
    unk_id: int,
    unk_score: float,
    points: np.ndarray,
    lengths: np.ndarray,
    fused: Callable[[int, int], int] | None = None,
    fused_ends: bool = False,
) -> tuple[list[list[int]], list[list[int]] | None, np.ndarray]:
    """The best path of each word: its node ids and (when some node is ``unk_id`` and there
    is no ``fused``) the char offset where each node ends, per word; and which words hold a
    char that is no one-char piece (an unknown node there, scored ``unk_score``, is a
    candidate). ``points`` holds the words' code points one word after another, ``lengths``
    their lengths (each >= 1). With ``fused``, adjacent ``unk_id`` nodes become one node:
    ``fused(begin, end)`` gives the id of such a run of several nodes (offsets into
    ``points``); a run of one keeps ``unk_id``; ``fused_ends``: give the ends of the fused
    nodes too, when some node is ``unk_id``."""
    import numpy as np

    count = len(lengths)
    size = len(points)
    starts = starts_of(lengths)
    word_of = np.repeat(np.arange(count, dtype=np.int64), lengths)
    limit = np.repeat(starts + lengths, lengths)  # the end of each position's word
    offset = np.arange(size, dtype=np.int64) - np.repeat(starts, lengths)

    # Every piece starting at every position: (position, length, id, score).
    found_at, found_len, found_id, found_score = [], [], [], []
    single = np.zeros(size, dtype=bool)
    everywhere = np.arange(size, dtype=np.int64)
    for length, pos, node in trie.walk(points, everywhere, limit):
        piece = trie.piece[node]
        is_piece = piece >= 0
        found_at.append(pos[is_piece])
        found_len.append(np.full(int(is_piece.sum()), length, dtype=np.int64))
        found_id.append(piece[is_piece])
        found_score.append(trie.score[node[is_piece]])
        if length == 1:
            single[pos[is_piece]] = True
    unknown = np.flatnonzero(~single)
    needs_unk = np.zeros(count, dtype=bool)
    needs_unk[word_of[unknown]] = True
    found_at.append(unknown)
    found_len.append(np.ones(len(unknown), dtype=np.int64))
    found_id.append(np.full(len(unknown), unk_id, dtype=np.int64))
    found_score.append(np.full(len(unknown), unk_score, dtype=np.float64))
    at = np.concatenate(found_at)
    by_offset = np.argsort(offset[at], kind="stable")
    at = at[by_offset]
    # boundaries: a word of n chars has n + 1, numbered one word after another
    begin = at + word_of[at]
    end = begin + np.concatenate(found_len)[by_offset]
    ids = np.concatenate(found_id)[by_offset]
    scores = np.concatenate(found_score)[by_offset]
    steps = np.searchsorted(offset[at], np.arange(int(lengths.max()) + 1))

    first = starts + np.arange(count, dtype=np.int64)  # each word's first boundary
    best = np.full(size + count, -np.inf)
    best[first] = 0.0
    start_of = np.full(size + count, -1, dtype=np.int64)
    node_id = np.zeros(size + count, dtype=np.int64)
    with np.errstate(over="ignore"):  # a sum past the f64 range is -inf, as in the library
        for lo, hi in zip(steps[:-1].tolist(), steps[1:].tolist()):
            if lo == hi:
                continue
            here, there = begin[lo:hi], end[lo:hi]
            candidate = scores[lo:hi] + best[here]
            better = (candidate > best[there]) | (start_of[there] < 0)
            won = there[better]
            best[won] = candidate[better]
            start_of[won] = here[better]
            node_id[won] = ids[lo:hi][better]

    on_path = np.zeros(size + count, dtype=bool)
    ptr = first + lengths
    origin = first
    while len(ptr):
        on_path[ptr] = True
        ptr = start_of[ptr]
        going = ptr != origin
        ptr, origin = ptr[going], origin[going]
    kept = np.add.reduceat(on_path, first)
    path = np.flatnonzero(on_path)
    ids = node_id[path]
    ends = None
    is_unk = ids == unk_id
    if fused is not None and is_unk.any():
        word = np.repeat(np.arange(count, dtype=np.int64), kept)
        # a node that goes on the unknown run of the node before it (same word)
        goes_on = np.zeros(len(path), dtype=bool)
        goes_on[1:] = is_unk[1:] & is_unk[:-1] & (word[1:] == word[:-1])
        if goes_on.any():
            followed = np.zeros(len(path), dtype=bool)
            followed[:-1] = goes_on[1:]
            heads = np.flatnonzero(is_unk & ~goes_on & followed)
            tails = np.flatnonzero(goes_on & ~followed)
            # boundary b of word w stands after char b - w of the words joined
            begins = (start_of[path[heads]] - word[heads]).tolist()
            finals = (path[tails] - word[tails]).tolist()
            ids[heads] = list(map(fused, begins, finals))
            ids = ids[~goes_on]
            kept = np.bincount(word[~goes_on], minlength=count)
            if fused_ends:
                path = path.copy()
                path[heads] = path[tails]  # a run ends where its last node does
                path = path[~goes_on]
        if fused_ends:
            ends = (path - np.repeat(first, kept)).tolist()
    elif is_unk.any():
        ends = (path - np.repeat(first, kept)).tolist()
    counts = kept.tolist()
    return split(ids.tolist(), counts), None if ends is None else split(ends, counts), needs_unk
