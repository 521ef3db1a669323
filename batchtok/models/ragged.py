"""Many words as one flat numpy array of code points plus each word's length (a ragged array):
the layout the batched models (:mod:`.bpe_batch`, :mod:`.unigram_batch`,
:mod:`.wordpiece_batch`) read, and the way back to one Python list per word."""

from __future__ import annotations

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


def split(flat: S, counts: list[int]) -> list[S]:
    """``flat`` (a list or a tuple) cut into consecutive runs of ``counts[k]`` items, one
    slice (of its type) per word."""
    out: list[S] = []
    pos = 0
    for n in counts:
        out.append(flat[pos : pos + n])
        pos += n
    return out
