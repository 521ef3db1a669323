"""A batch's pieces as arrays, and the split that gives them: what the ids path's piece table
(:mod:`batchtok.piece_table`) reads instead of a string per piece."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import numpy as np


class PieceBounds(NamedTuple):
    """The pieces of some texts joined by a separator: piece k is ``points[starts[k]:ends[k]]``;
    text t's pieces are ``first[t]`` to ``first[t + 1]``, wrong for the texts in ``redo``
    (sorted), which the splitter leaves to its one-text split. No piece holds U+FFFF: the
    piece table joins pieces by it (a splitter gives None for texts holding one)."""

    points: np.ndarray
    starts: np.ndarray
    ends: np.ndarray
    first: np.ndarray
    redo: list[int]


class BatchSplit:
    """Fragments -> the pieces of each (a call), or their bounds as arrays (:meth:`bounds`).

    ``split_many``: texts -> the pieces of each; ``bounds``: texts -> :class:`PieceBounds`, or
    None where the texts must be split as strings; ``fallback``: one text -> its pieces, for
    the texts the bounds leave to it (``redo``); ``prefix_space``: each fragment is given a
    space first, as ByteLevel.split_only does."""

    def __init__(
        self,
        split_many: Callable[[list[str]], list[list[str]]],
        bounds: Callable[[list[str]], PieceBounds | None],
        fallback: Callable[[str], list[str]],
        prefix_space: bool = False,
    ) -> None:
        self.split_prepared = split_many
        self.bounds = bounds
        self.fallback = fallback
        self.prefix_space = prefix_space

    def prepared(self, fragments: list[str]) -> list[str]:
        """The texts the split reads: ``fragments``, each with its space where one is given."""
        if not self.prefix_space:
            return fragments
        return [f if f.startswith(" ") else " " + f for f in fragments]

    def __call__(self, fragments: list[str]) -> list[list[str]]:
        return self.split_prepared(self.prepared(fragments))
