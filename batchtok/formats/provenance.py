"""Provenance files: ``NAME.docs.parquet``, one row per document of an output (one per
document *piece* of a packed row), saying where it came from and where it is.

Columns (:data:`COLUMNS`, then the input's id column when the job names one):

* ``source`` (string): the input's path or URI;
* ``row`` (int64): the document's row in the input, from 0; ``line`` (int64): its line in a
  JSON Lines input, from 1 (null for other inputs);
* ``tokens`` (int32): the ids of the piece (the whole document's when it is not cut);
* ``start`` (int32): where the piece starts in its document (0 unless a packed row cut it);
* ``output_row`` (int64), ``offset`` (int64): the packed row the piece is in and where in that
  row it starts; for an unpacked output, the document's number in the output and its first
  id's offset in the output's ids, one document after another.

A document that is not in the output (a bad row without ids, an empty one a format leaves out,
the dropped short last row's pieces) has no row. So the ``tokens`` of a packed row's entries
sum to its length, the entries of an output's documents follow its order, and reading
``tokens`` ids at ``offset`` of row ``output_row`` gives ids ``start`` to ``start + tokens``
of the named row's document.

:class:`DocsWriter` writes one from each document's length as the output is written: memory
is a bounded buffer of entries, the entries of an unfinished packed row at most when the short
last row may be dropped.
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # (imported where used: a job file's check reads the names without pyarrow)
    import pyarrow as pa
    import pyarrow.parquet as pq

#: the columns every provenance file has, in order, and their Arrow types
COLUMNS = ("source", "row", "line", "tokens", "start", "output_row", "offset")
_TYPES = ("string", "int64", "int64", "int32", "int32", "int64", "int64")
#: what a provenance file's name adds to its output's
SUFFIX = ".docs.parquet"
ENTRIES_PER_ROW_GROUP = 1 << 20


def docs_schema(id_field: pa.Field | None = None) -> pa.Schema:
    """The schema of a provenance file (with the input's id column, if any)."""
    import pyarrow as pa

    fields = [pa.field(name, getattr(pa, kind)()) for name, kind in zip(COLUMNS, _TYPES)]
    return pa.schema(fields + ([id_field] if id_field is not None else []))


class DocsWriter:
    """Writes a provenance file to ``tmp`` (a local temporary file the caller publishes): call
    :meth:`add` for each document of the output, in its order, then :meth:`finish`.

    ``pack_length``: the output's rows are that many ids (a document gives one entry per row
    it spans); ``keep_last=False``: the short last row is dropped, and its entries with it.
    """

    def __init__(
        self,
        tmp: str,
        source: str,
        pack_length: int | None = None,
        keep_last: bool = True,
        id_field: pa.Field | None = None,
    ) -> None:
        self.tmp = tmp
        self.source = source
        self.pack_length = pack_length
        self.keep_last = keep_last
        self.schema = docs_schema(id_field)
        # inputs whose id columns differ in type give their ids as text
        self._as_text = id_field is not None and id_field.type == "string"
        self.tokens = 0  # ids of the output so far
        self.documents = 0
        self.entries = 0
        self._columns: dict[str, list[Any]] = {name: [] for name in self.schema.names}
        self._writer: pq.ParquetWriter | None = None
        self.digest = ""

    def add(
        self,
        length: int,
        row: int,
        line: int | None = None,
        ident: Any = None,
        source: str | None = None,
        first: int = 0,
    ) -> None:
        """One document of ``length`` ids, from input row ``row`` (line ``line``; ``ident``:
        its id column's value; ``source``: its input, if not the writer's), its ids from
        ``first`` on (an earlier file holds those before)."""
        source = self.source if source is None else source
        if self.pack_length is None:
            self._entry(length, first, self.documents, self.tokens, row, line, ident, source)
        else:
            size, at, start = self.pack_length, self.tokens, 0
            while start < length:
                take = min(size - at % size, length - start)
                piece = (take, first + start, at // size, at % size)
                self._entry(*piece, row, line, ident, source)
                at += take
                start += take
        self.tokens += length
        self.documents += 1
        if len(self._columns["row"]) >= ENTRIES_PER_ROW_GROUP:
            self._flush(final=False)

    def _entry(
        self,
        tokens: int,
        start: int,
        output_row: int,
        offset: int,
        row: int,
        line: Any,
        ident: Any,
        source: str,
    ) -> None:
        c = self._columns
        c["source"].append(source)
        c["row"].append(row)
        c["line"].append(line)
        c["tokens"].append(tokens)
        c["start"].append(start)
        c["output_row"].append(output_row)
        c["offset"].append(offset)
        if len(self.schema) > len(COLUMNS):
            if self._as_text and ident is not None and not isinstance(ident, str):
                ident = str(ident)
            c[self.schema.names[-1]].append(ident)

    def _flush(self, final: bool) -> None:
        import pyarrow as pa
        import pyarrow.parquet as pq

        c = self._columns
        n = len(c["row"])
        if self.pack_length is not None and not self.keep_last:
            complete = self.tokens // self.pack_length  # rows that are whole now
            if not final:  # the unfinished row's entries wait until the end says whether
                n = next((i for i, r in enumerate(c["output_row"]) if r >= complete), n)
            else:
                n = sum(1 for r in c["output_row"] if r < complete)
        if self._writer is None:
            os.makedirs(os.path.dirname(self.tmp) or ".", exist_ok=True)
            self._writer = pq.ParquetWriter(
                self.tmp, self.schema, compression="zstd", write_page_checksum=True
            )
        if n:
            arrays = [
                pa.array(c[name][:n], self.schema.field(name).type) for name in self.schema.names
            ]
            self._writer.write_table(pa.Table.from_arrays(arrays, schema=self.schema))
            self.entries += n
        for name in c:
            del c[name][:n]
        if final:
            for name in c:
                c[name].clear()

    def finish(self) -> str:
        """Write what is left and close the file; returns its xxh3-128."""
        import xxhash

        self._flush(final=True)
        assert self._writer is not None
        self._writer.close()
        self._writer = None
        digest = xxhash.xxh3_128()
        with open(self.tmp, "rb+") as f:
            os.fsync(f.fileno())
            while chunk := f.read(1 << 20):
                digest.update(chunk)
        self.digest = digest.hexdigest()
        return self.digest

    def abort(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
            self._writer = None
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.tmp)
