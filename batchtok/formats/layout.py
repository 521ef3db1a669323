"""Cutting a stream of documents into output files, and the seeded shuffle before it: pure
functions of the documents' lengths (in ids), the options and the seed, so the same inputs
give the same files whatever ran them, how many workers, in how many runs.

* :func:`shuffle_order`: the documents' order after ``output.shuffle_seed``'s shuffle. The
  stream is cut into **windows** of consecutive documents holding at most
  ``output.shuffle_window`` ids (a longer document is a window alone), and each window is
  permuted on its own, by a generator seeded with (seed, salt, window number). The permutation
  is an argsort of PCG64's raw 64-bit outputs, whose stream numpy keeps stable across versions
  (unlike its ``Generator`` methods').
* :func:`cut_documents`: file boundaries over the ordered lengths, greedy: a file takes
  documents while their ids fit in ``max_tokens``; a document longer than that is a file alone.
* :func:`cut_packed`: packed rows of ``pack_length`` ids, ``max_tokens // pack_length`` rows a
  file: (first id, end id) of each file in the ordered stream.

A stream without documents is one empty file: every layout names its output files whatever
they hold.
"""

from __future__ import annotations

import numpy as np


def windows(lengths: np.ndarray, window_tokens: int | None) -> np.ndarray:
    """Where each shuffle window starts (indices into ``lengths``, plan order), ending with
    ``len(lengths)``: greedy, each window holding at most ``window_tokens`` ids, a longer
    document alone; None: one window."""
    return _greedy(lengths, window_tokens)


def permutation(n: int, seed: int, salt: int, window: int) -> np.ndarray:
    """A permutation of ``range(n)``, a function of (seed, salt, window) only."""
    if n <= 1:
        return np.arange(n, dtype=np.int64)
    bits = np.random.PCG64(np.random.SeedSequence([seed, salt, window])).random_raw(n)
    return np.argsort(bits, kind="stable").astype(np.int64)


def shuffle_order(
    lengths: np.ndarray, seed: int | None, window_tokens: int | None, salt: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """(each output position's document, in plan order indices; the windows' starts, see
    :func:`windows`); without a seed, the plan order and one window."""
    n = len(lengths)
    if seed is None:
        return np.arange(n, dtype=np.int64), np.array([0, n], dtype=np.int64)
    starts = windows(lengths, window_tokens)
    order = np.empty(n, dtype=np.int64)
    for w in range(len(starts) - 1):
        first, end = int(starts[w]), int(starts[w + 1])
        order[first:end] = first + permutation(end - first, seed, salt, w)
    return order, starts


def cut_documents(ordered_lengths: np.ndarray, max_tokens: int | None) -> np.ndarray:
    """Where each file starts (positions in the ordered documents), ending with their count:
    greedy, at most ``max_tokens`` ids a file, a longer document alone; None: one file."""
    return _greedy(ordered_lengths, max_tokens)


def cut_packed(
    total: int, pack_length: int, max_tokens: int | None, keep_last: bool
) -> list[tuple[int, int]]:
    """(first id, end id) in the ordered stream of each file of packed rows: ``max_tokens //
    pack_length`` rows a file (None: one file); the short last row is dropped unless
    ``keep_last``."""
    kept = total if keep_last else total - total % pack_length
    if max_tokens is None:
        return [(0, kept)]
    per_file = max(1, max_tokens // pack_length) * pack_length
    return [(at, min(kept, at + per_file)) for at in range(0, kept, per_file)] or [(0, 0)]


def _greedy(lengths: np.ndarray, limit: int | None) -> np.ndarray:
    n = len(lengths)
    if limit is None or n == 0:
        return np.array([0, n], dtype=np.int64)
    ends = np.concatenate(([0], np.cumsum(lengths, dtype=np.int64)))
    starts = [0]
    at = 0
    while at < n:
        # the furthest end whose ids since ``at`` fit (zero-length documents ride along)
        end = int(np.searchsorted(ends, ends[at] + limit, side="right")) - 1
        at = max(end, at + 1)  # a document longer than the limit is alone
        starts.append(at)
    return np.array(starts, dtype=np.int64)
