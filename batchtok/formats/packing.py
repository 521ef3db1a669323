"""Packing: documents (each with its EOS) concatenated and cut into rows of exactly N tokens.

Every token of every document appears once, in order; every row has N tokens except the
last, which is kept short or dropped (``keep_last``). The rows depend only on the sequence of
documents: feeding the same documents in any number of calls, cut anywhere, gives the same
rows, because the only state between calls is the fewer than N tokens not yet in a row.

**Where the runner packs: once per input file, when its shards are joined.** A row may span
the end of one shard and the start of the next, and where a shard's rows start depends on
how many tokens all earlier shards hold, which is known only once they are tokenized. Packing
inside each worker would either make the rows depend on the shard boundaries (so on the
shard size and worker count) or force the shards to run one after another. So the workers
write each shard's documents unpacked, and the step that joins a file's shards in order packs
them (a file planned as one shard is packed by its own worker, which sees it whole):

- For Megatron and datatrove files packing changes no token byte: the rows are the
  concatenated documents cut every N tokens. ``merge(parts, ..., pack_length=N,
  keep_last=...)`` copies the parts' token bytes as usual and writes an index of N-token rows
  (dropping the short tail means truncating the data file); the writers take the same two
  options.
- For Parquet, :class:`Packer` turns the parts' documents, read back in order, into rows.

A :class:`Packer` can also be carried from shard to shard in order; that gives the same rows.

**Documents stay findable in packed rows.** :meth:`Packer.add_pieces` also says which
documents each row holds: its pieces, in order (:class:`Piece`: the document's number among
those added, where in the document the piece starts, how long it is, where in the row it
starts). A document cut across rows gives one piece to each; an empty document gives none. The
pieces' lengths are a row's ``seq_lens`` (they sum to its length), what a trainer that masks
attention within documents, or resets position ids at each, needs.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any, NamedTuple


class Piece(NamedTuple):
    """The part of one document in one packed row."""

    document: int  # the document's number among those added (0-based)
    start: int  # where the piece starts in the document (its EOS counted as its last id)
    length: int
    offset: int  # where the piece starts in the row


def with_eos(ids: Any, eos: int, typecode: str = "i") -> array:
    """``ids`` with ``eos`` appended, unless the document is empty (Megatron's
    ``--append-eod`` rule)."""
    out = array(typecode, ids)
    if out:
        out.append(eos)
    return out


class Packer:
    """Cuts a stream of documents into rows of exactly ``length`` ids (int32 arrays).

    >>> p = Packer(4)
    >>> [r.tolist() for r in p.add([1, 2, 3])], [r.tolist() for r in p.add([4, 5, 6])]
    ([], [[1, 2, 3, 4]])
    >>> [r.tolist() for r in p.finish()]
    [[5, 6]]

    ``eos`` appends that id to every non-empty document first (:func:`with_eos`);
    ``keep_last=False`` drops the final short row. Memory: the pending tail (< ``length``
    ids) plus the document being added.
    """

    def __init__(
        self, length: int, keep_last: bool = True, eos: int | None = None, typecode: str = "i"
    ) -> None:
        if length < 1:
            raise ValueError(f"pack length must be at least 1, not {length}")
        self.length = length
        self.keep_last = keep_last
        self.eos = eos
        self.typecode = typecode
        self.pending = array(typecode)
        self.pending_pieces: list[Piece] = []  # the pieces of the pending tail
        self.documents = 0  # documents added so far
        self.tokens = 0  # ids added so far, EOS included
        self.finished = False

    def add(self, ids: Any) -> list[array]:
        """Add one document; returns the rows it completed (possibly none)."""
        return [row for row, _ in self.add_pieces(ids)]

    def finish(self) -> list[array]:
        """The last, short row if there is one and it is kept; the packer takes no more."""
        return [row for row, _ in self.finish_pieces()]

    def add_pieces(self, ids: Any) -> list[tuple[array, list[Piece]]]:
        """Add one document; returns the rows it completed, each with its pieces."""
        if self.finished:
            raise RuntimeError("add() after finish()")
        if self.eos is not None:
            doc = with_eos(ids, self.eos, self.typecode)
        elif isinstance(ids, array) and ids.typecode == self.typecode:
            doc = ids
        else:
            doc = array(self.typecode, ids)
        number = self.documents
        self.documents += 1
        self.tokens += len(doc)
        buf = self.pending
        n = len(doc)
        done: list[tuple[array, list[Piece]]] = []
        start = 0
        while start < n:  # the document's pieces: up to the end of the row it falls in
            at = len(buf)
            take = min(n - start, self.length - at)
            buf.extend(doc[start : start + take] if take < n else doc)
            self.pending_pieces.append(Piece(number, start, take, at))
            start += take
            if len(buf) == self.length:
                done.append((buf, self.pending_pieces))
                buf, self.pending_pieces = array(self.typecode), []
        self.pending = buf
        return done

    def finish_pieces(self) -> list[tuple[array, list[Piece]]]:
        """The last, short row with its pieces, if there is one and it is kept; the packer
        takes no more."""
        self.finished = True
        rest, self.pending = self.pending, array(self.typecode)
        pieces, self.pending_pieces = self.pending_pieces, []
        return [(rest, pieces)] if rest and self.keep_last else []


def pack(
    docs: Iterable[Any], length: int, keep_last: bool = True, eos: int | None = None
) -> Iterator[array]:
    """The rows of ``docs`` packed by one :class:`Packer`, streaming."""
    packer = Packer(length, keep_last, eos)
    for doc in docs:
        yield from packer.add(doc)
    yield from packer.finish()
