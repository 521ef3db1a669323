"""A trie walked from many positions of many words at once, in numpy (the batched Unigram and
WordPiece models read the pieces that start at each position with it)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from . import hash_table
from .ragged import code_points, lengths_of, starts_of

if TYPE_CHECKING:
    import numpy as np

# numpy is imported by the first batch, not with batchtok (a small call never needs it).
_CHAR_BITS = 21  # code points, surrogates included, are below 2 ** 21


class Trie:
    """Strings as trie nodes: node 0 is the root (the empty string), the others are the
    strings' prefixes, numbered depth by depth; ``nodes[k]`` is the node of ``strings[k]``.
    An edge is keyed ``parent << 21 | code point`` in a :mod:`.hash_table` whose value is the
    child. Built a depth at a time in numpy: the nodes of depth d are the distinct (node of
    depth d - 1, char d) pairs of the strings that long."""

    def __init__(self, strings: list[str]) -> None:
        import numpy as np

        count = len(strings)
        lengths = lengths_of(strings)
        points = code_points("".join(strings)).astype(np.int64)
        starts = starts_of(lengths)
        self.depth = int(lengths.max()) if count else 0
        node = np.zeros(count, dtype=np.int64)
        self.nodes = np.zeros(count, dtype=np.int64)
        edges = [np.zeros(0, dtype=np.int64)]
        active = np.arange(count, dtype=np.int64)
        size = 1
        for depth in range(1, self.depth + 1):
            active = active[lengths[active] >= depth]
            # a string's node of depth d - 1 is a parent numbered below every node of depth
            # d, so each depth's sorted edges follow the last depth's
            key = node[active] << _CHAR_BITS | points[starts[active] + depth - 1]
            unique, inverse = np.unique(key, return_inverse=True)
            edges.append(unique)
            node[active] = size + inverse
            ends = active[lengths[active] == depth]
            self.nodes[ends] = node[ends]
            size += len(unique)
        # edges of depth d number their children in order, after those of depth d - 1
        self.slot_keys, self.slot_values = hash_table.build(
            np.concatenate(edges), np.arange(1, size, dtype=np.int64)
        )
        self.size = size

    def to_bytes(self) -> dict[str, object]:
        """The trie's fields, each array as (dtype, bytes): a pickle that needs no numpy to
        load (the load cache keeps it; see :meth:`from_bytes`)."""
        return {
            name: (value.dtype.str, value.tobytes()) if hasattr(value, "tobytes") else value
            for name, value in self.__dict__.items()
        }

    @classmethod
    def from_bytes(cls, state: dict[str, object]) -> Trie:
        """The trie (of this class) that :meth:`to_bytes` gave, its arrays read in place."""
        import numpy as np

        trie = cls.__new__(cls)
        for name, value in state.items():
            if type(value) is tuple:
                dtype, data = value
                value = np.frombuffer(data, dtype)  # type: ignore[call-overload]
            setattr(trie, name, value)
        return trie

    def values(self, of_strings, missing) -> np.ndarray:  # noqa: ANN001 - numpy arrays
        """A value per node: ``of_strings[k]`` at the node of the k-th string, ``missing`` at
        the nodes that are only prefixes."""
        import numpy as np

        of_strings = np.asarray(of_strings)
        out = np.full(self.size, missing, dtype=of_strings.dtype)
        out[self.nodes] = of_strings
        return out

    def walk(
        self, points: np.ndarray, pos: np.ndarray, limit: np.ndarray
    ) -> Iterator[tuple[int, np.ndarray, np.ndarray]]:
        """For each length n >= 1, the positions of ``pos`` whose next n chars (``points``
        are the code points of all words, ``limit`` each position's word end) are a key, and
        the node of that key; a position drops out at its word's end or at the first char
        that leads to no key."""
        import numpy as np

        slot_keys, slot_values = self.slot_keys, self.slot_values
        points = points.astype(np.int64)
        node = np.zeros(len(pos), dtype=np.int64)
        for length in range(1, self.depth + 1):
            if not len(pos):
                return
            child = hash_table.lookup(
                slot_keys, slot_values, node << _CHAR_BITS | points[pos + length - 1]
            )
            hit = child >= 0
            pos, node = pos[hit], child[hit]
            yield length, pos, node
            more = pos + length < limit[pos]
            pos, node = pos[more], node[more]
