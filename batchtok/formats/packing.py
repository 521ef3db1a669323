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
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator
from typing import Any


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
        self.tokens = 0  # ids added so far, EOS included
        self.finished = False

    def add(self, ids: Any) -> list[array]:
        """Add one document; returns the rows it completed (possibly none)."""
        if self.finished:
            raise RuntimeError("add() after finish()")
        if self.eos is not None:
            doc = with_eos(ids, self.eos, self.typecode)
        elif isinstance(ids, array) and ids.typecode == self.typecode:
            doc = ids
        else:
            doc = array(self.typecode, ids)
        self.tokens += len(doc)
        buf = self.pending
        buf.extend(doc)
        full = len(buf) - len(buf) % self.length
        rows = [buf[i : i + self.length] for i in range(0, full, self.length)]
        self.pending = buf[full:]
        return rows

    def finish(self) -> list[array]:
        """The last, short row if there is one and it is kept; the packer takes no more."""
        self.finished = True
        rest, self.pending = self.pending, array(self.typecode)
        return [rest] if rest and self.keep_last else []


def pack(
    docs: Iterable[Any], length: int, keep_last: bool = True, eos: int | None = None
) -> Iterator[array]:
    """The rows of ``docs`` packed by one :class:`Packer`, streaming."""
    packer = Packer(length, keep_last, eos)
    for doc in docs:
        yield from packer.add(doc)
    yield from packer.finish()
