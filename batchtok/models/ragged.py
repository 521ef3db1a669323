"""Many words as one flat numpy array of code points plus each word's length (a ragged array):
the layout the batched models (:mod:`.bpe_batch`, :mod:`.unigram_batch`,
:mod:`.wordpiece_batch`) read, and the way back to one Python list per word."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the first batch, not with batchtok (a small call never needs it).
S = TypeVar("S", list, tuple)


def code_points(text: str) -> np.ndarray:
    """The code points of ``text`` (uint32; a lone surrogate is its own code point)."""
    import numpy as np

    return np.frombuffer(text.encode("utf-32-le", "surrogatepass"), np.uint32)


def lengths_of(words: list[str]) -> np.ndarray:
    """The length in chars of each word (int64)."""
    import numpy as np

    return np.fromiter(map(len, words), np.int64, len(words))


def starts_of(lengths: np.ndarray) -> np.ndarray:
    """Where each word starts in the flat array: the running sum of the lengths before it."""
    import numpy as np

    starts = np.zeros(len(lengths), dtype=np.int64)
    np.cumsum(lengths[:-1], out=starts[1:])
    return starts


def ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """The positions ``starts[k], ..., starts[k] + lengths[k] - 1`` of every k, in order."""
    import numpy as np

    total = int(lengths.sum())
    index = (
        np.int32 if total < 1 << 31 and (not len(starts) or starts.max() < 1 << 31) else np.int64
    )
    out = np.repeat((starts - starts_of(lengths)).astype(index), lengths)
    out += np.arange(total, dtype=index)
    return out


def flat_rows(rows: Sequence[Sequence[int]]) -> tuple[np.ndarray, np.ndarray]:
    """(the ids of ``rows`` one row after another, int64; how many each row has)."""
    import numpy as np

    counts = np.fromiter(map(len, rows), np.int64, len(rows))
    return np.fromiter(chain.from_iterable(rows), np.int64, int(counts.sum())), counts


def gathered(
    groups: Sequence[tuple[np.ndarray, np.ndarray, np.ndarray]], n: int
) -> tuple[np.ndarray, np.ndarray]:
    """The rows of ``n`` words in order, as :func:`flat_rows` gives them, from ``groups``:
    (which words, their ids one after another, how many each has), every word in one group."""
    import numpy as np

    counts = np.zeros(n, np.int64)
    for which, _, group_counts in groups:
        counts[which] = group_counts
    starts = starts_of(counts)
    out = np.empty(int(counts.sum()), np.int64)
    for which, ids, group_counts in groups:
        out[ranges(starts[which], group_counts)] = ids
    return out, counts


# the first byte of a char's UTF-8 by its length in bytes (1 to 4)
_LEAD = (0, 0, 0xC0, 0xE0, 0xF0)


def with_bytes(
    points: np.ndarray, ids: np.ndarray, starts: np.ndarray, byte_ids: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The initial symbols of words of code ``points`` (one word after another, each from
    ``starts``) whose chars have the vocab ``ids`` (-1: none): a char's id, or the ids
    (``byte_ids``) of the bytes of its UTF-8 where it has none; and each word's count of
    symbols. The words' code points are not surrogates."""
    import numpy as np

    missing = ids < 0
    width = np.where(
        missing, 1 + (points >= 0x80) + (points >= 0x800) + (points >= 0x10000), 1
    ).astype(np.int64)
    of = np.repeat(np.arange(len(points)), width)  # the char each symbol comes from
    char_starts = starts_of(width)
    k = np.arange(len(of)) - char_starts[of]  # the symbol's place in its char's bytes
    n = width[of]
    point = points[of].astype(np.int64)
    byte = (point >> (6 * (n - 1 - k))) & 0x3F | 0x80  # a continuation byte
    lead = k == 0
    byte[lead] = np.asarray(_LEAD)[n[lead]] | (point[lead] >> (6 * (n[lead] - 1)))
    # (a char with its own id has a "byte" too, unused: masked to index byte_ids in range)
    symbols = np.where(missing[of], byte_ids[byte & 0xFF], ids[of])
    return symbols, np.add.reduceat(width, starts)


def split(flat: S, counts: list[int]) -> list[S]:
    """``flat`` (a list or a tuple) cut into consecutive runs of ``counts[k]`` items, one
    slice (of its type) per word."""
    out: list[S] = []
    pos = 0
    for n in counts:
        out.append(flat[pos : pos + n])
        pos += n
    return out
