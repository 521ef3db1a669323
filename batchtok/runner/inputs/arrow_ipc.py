"""Arrow IPC inputs (``*.arrow``, ``*.arrows``, ``*.feather``: the file format, Feather v2
being that format, and the stream format) and Hugging Face ``datasets`` directories.

**Record batches play the part of row groups.** A batch is the unit of shards (whole batches),
of content hashes and of output row groups, as a Parquet row group is. Which format a file is
in is told by its first bytes, not its name: ``ARROW1`` opens the file format, anything else is
read as a stream (which says so if it is not one). A Feather v1 file (``FEA1``, pyarrow's
format before 0.17, with no record batches) is refused at planning, saying how to write it
again.

- A **file** ends in a footer listing its batches, so planning opens it and reads each batch
  with only the text (and pair) column: their row counts and text sizes.
- A **stream** has no footer: planning reads it once, from start to end, noting where each
  batch's message lies. The input's record keeps that layout while the file's stat is
  unchanged, so a re-run does not read the file again; a worker seeks straight to its shard's
  first batch (a stream holding dictionary columns is read from its start instead, since its
  dictionaries come before the batches that use them).

A local file is memory-mapped through the descriptor the run opened and checks (the file read
is the one whose stat was planned); batches are then views of the mapping, read without a copy.
Objects (``s3://``, fsspec URIs) are read through their file system, a shard's batches only.

**Content hashes** (:func:`hash_batches`): per batch, the text (and pair) column's decoded
values, as for Parquet (:class:`~batchtok.runner.plan.keys.TextHasher`), and every other kept
column's type and Arrow buffers (decompressed, when the file is compressed; a dictionary's
values with it). An unchanged file is never encoded again, and a changed batch re-encodes only
its shard.

**A ``datasets`` directory** (what ``Dataset.save_to_disk`` writes: ``state.json``,
``dataset_info.json`` and ``data-*.arrow`` stream files) is recognised by its ``state.json``
(:func:`dataset_files`): its inputs are the files ``_data_files`` lists, in that order, and
nothing else there. Which directories are taken that way is
:mod:`batchtok.runner.inputs.discovery`'s.
"""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.ipc as ipc
import xxhash

from ..errors import CorruptFileError
from ..plan.keys import RowGroupHash, TextHasher, hex128
from . import text_arrays

SUFFIXES = (".arrow", ".arrows", ".feather")
FILE, STREAM = "file", "stream"  # the two IPC formats (InputFile.arrow)
FILE_MAGIC = b"ARROW1"
FEATHER_V1_MAGIC = b"FEA1"
PARQUET_MAGIC = b"PAR1"
STATE_FILE = "state.json"  # what marks a datasets save_to_disk directory


def is_arrow(path: str) -> bool:
    """Whether a name is an Arrow IPC input's (``.arrow``, ``.arrows``, ``.feather``, any
    case)."""
    return path.lower().endswith(SUFFIXES)


def output_name(rel: str) -> str:
    """The output's name for an Arrow input's: ``a/b.arrow`` -> ``a/b.parquet``."""
    if not is_arrow(rel):
        return rel
    return rel.rsplit(".", 1)[0] + ".parquet"


@dataclass(frozen=True)
class Batch:
    """One record batch of an input: where its message lies in a stream (``offset`` -1 in
    the file format, where batches are read by their number), its rows, and estimates of its
    text's bytes and of all its columns' bytes."""

    offset: int
    length: int
    rows: int
    text_bytes: int
    total_bytes: int

    def to_json(self) -> list[int]:
        return [self.offset, self.length, self.rows, self.text_bytes, self.total_bytes]


@dataclass(frozen=True)
class Layout:
    """What planning needs of an Arrow input: its format, schema and batches."""

    kind: str  # FILE or STREAM
    schema: pa.Schema
    batches: tuple[Batch, ...]


# -- opening -----------------------------------------------------------------------------------


def readable(raw: Any) -> pa.NativeFile:
    """An Arrow reader over an open input, from its start: a local file memory-mapped through
    its open descriptor (zero-copy reads of the file whose stat was taken), an Arrow file (an
    object's) as it is."""
    if isinstance(raw, pa.NativeFile):
        raw.seek(0)
        return raw
    try:
        fileno = raw.fileno()
    except (AttributeError, OSError):  # a file-like object without a descriptor
        raw.seek(0)
        return pa.PythonFile(raw, mode="r")
    if os.fstat(fileno).st_size == 0:  # mmap refuses an empty file; the reader says it is
        return pa.BufferReader(b"")
    mapped = mmap.mmap(fileno, 0, access=mmap.ACCESS_READ)
    # The mapping lives as long as a buffer (a batch read from it) does: never closed here.
    return pa.BufferReader(pa.py_buffer(mapped))


def kind_of(source: pa.NativeFile) -> str:
    """FILE or STREAM, by the first bytes; ``pa.ArrowInvalid`` for a Feather v1 file."""
    source.seek(0)
    head = source.read(8)
    source.seek(0)
    if head.startswith(FILE_MAGIC):
        return FILE
    if head.startswith(PARQUET_MAGIC):
        raise pa.ArrowInvalid("it is a Parquet file: name it *.parquet")
    if head.startswith(FEATHER_V1_MAGIC):
        raise pa.ArrowInvalid(
            "it is a Feather v1 file (pyarrow before 0.17), which has no record batches to "
            "cut into shards: write it again as Feather v2 "
            "(pyarrow.feather.write_feather(pyarrow.feather.read_table(path), path)), "
            "or as Parquet"
        )
    return STREAM


def _indices(schema: pa.Schema, names: tuple[str, ...]) -> list[int]:
    return [i for i, f in enumerate(schema) if f.name in names]


def _has_dictionary(t: pa.DataType) -> bool:
    if pa.types.is_dictionary(t):
        return True
    if isinstance(t, pa.BaseExtensionType):
        return _has_dictionary(t.storage_type)
    return any(_has_dictionary(t.field(i).type) for i in range(t.num_fields))


def _file_reader(source: pa.NativeFile, fields: list[int] | None) -> ipc.RecordBatchFileReader:
    """The file format's reader, reading only the columns ``fields`` (None: all)."""
    if not fields:
        return ipc.open_file(source)
    return ipc.open_file(source, options=ipc.IpcReadOptions(included_fields=fields))


# -- planning ----------------------------------------------------------------------------------


def _text_size(batch: pa.RecordBatch, names: tuple[str, ...]) -> int:
    return sum(batch.column(i).nbytes for i in _indices(batch.schema, names))


def scan(raw: Any, text_columns: tuple[str, ...], size: int) -> Layout:
    """An Arrow input's format, schema and batches (``raw``: the input, open; ``size``: its
    bytes). A file reads each batch's text columns (their row counts and sizes); a stream is
    read whole, once."""
    source = readable(raw)
    kind = kind_of(source)
    if kind == FILE:
        schema = ipc.open_file(source).schema
        reader = _file_reader(source, _indices(schema, text_columns))
        found = []  # (rows, text bytes) of each batch, one batch held at a time
        for i in range(reader.num_record_batches):
            batch = reader.get_batch(i)
            found.append((batch.num_rows, _text_size(batch, text_columns)))
        total_rows = sum(rows for rows, _ in found)
        # all columns' bytes: the file's, shared by rows (the other columns are not read)
        batches = tuple(
            Batch(-1, 0, rows, text, size * rows // total_rows if total_rows else 0)
            for rows, text in found
        )
        return Layout(kind, schema, batches)
    stream = ipc.open_stream(source)
    out = []
    start = source.tell()
    for batch in stream:
        end = source.tell()
        out.append(
            Batch(
                start,
                end - start,
                batch.num_rows,
                _text_size(batch, text_columns),
                batch.nbytes,
            )
        )
        start = end
    return Layout(kind, stream.schema, tuple(out))


def schema_of(raw: Any, kind: str) -> pa.Schema:
    """An Arrow input's schema alone (a file's footer, a stream's first message)."""
    source = readable(raw)
    if kind_of(source) != kind:
        raise pa.ArrowInvalid(f"not an Arrow {kind} as an earlier run found")
    return (ipc.open_file(source) if kind == FILE else ipc.open_stream(source)).schema


def batches_of(data: Any) -> tuple[Batch, ...] | None:
    """Batches remembered as :meth:`Batch.to_json` wrote them (None if they are not)."""
    try:
        return tuple(Batch(*map(int, b)) for b in data)
    except (TypeError, ValueError):
        return None


# -- reading -----------------------------------------------------------------------------------


def _sliced(batch: pa.RecordBatch, rows: int) -> Iterator[pa.RecordBatch]:
    for at in range(0, batch.num_rows, rows):
        yield batch.slice(at, rows)


def _checked(batch: pa.RecordBatch, i: int, rows: int | None, path: str) -> pa.RecordBatch:
    if rows is not None and batch.num_rows != rows:
        raise CorruptFileError(
            f"{path}: record batch {i} holds {batch.num_rows} rows, {rows} when it was planned"
        )
    return batch


def read_batches(
    raw: Any,
    kind: str,
    span: tuple[int, int],
    planned: tuple[Batch, ...],
    wanted: set[str],
    batch_rows: int,
) -> Iterator[pa.RecordBatch]:
    """The rows of batches ``[first, end)`` of an Arrow input (``planned``: those batches as
    planned, their offsets in a stream), columns ``wanted`` only in the file's order, in
    record batches of at most ``batch_rows`` rows."""
    path = getattr(raw, "name", None) or "input"
    source = readable(raw)
    if kind_of(source) != kind:
        raise CorruptFileError(f"{path}: no longer an Arrow {kind} as when it was planned")
    first, end = span
    rows = [b.rows for b in planned] if len(planned) == end - first else [None] * (end - first)
    if kind == FILE:
        schema = ipc.open_file(source).schema
        reader = _file_reader(source, _indices(schema, tuple(wanted)))
        if end > reader.num_record_batches:
            raise CorruptFileError(f"{path}: fewer record batches than when it was planned")
        for i in range(first, end):
            batch = _checked(reader.get_batch(i), i, rows[i - first], path)
            yield from _sliced(batch, batch_rows)
        return
    stream = ipc.open_stream(source)
    schema = stream.schema
    columns = [f.name for f in schema if f.name in wanted]
    seekable = len(planned) == end - first and all(b.offset >= 0 for b in planned)
    if seekable and not any(_has_dictionary(f.type) for f in schema):
        for i, b in zip(range(first, end), planned):
            source.seek(b.offset)
            message = ipc.read_message(source)
            if message.type != "record batch":
                raise CorruptFileError(f"{path}: no record batch {i} where it was planned")
            batch = _checked(ipc.read_record_batch(message, schema), i, b.rows, path)
            yield from _sliced(batch.select(columns), batch_rows)
        return
    seen = 0
    for i, batch in enumerate(stream):  # dictionaries come first: read from the start
        if i >= end:
            return
        seen = i + 1
        if i >= first:
            batch = _checked(batch, i, rows[i - first], path)
            yield from _sliced(batch.select(columns), batch_rows)
    if seen < end:
        raise CorruptFileError(f"{path}: fewer record batches than when it was planned")


def read_column(path: str, column: str) -> list[Any]:
    """The values of one column of a local Arrow file, every batch in order."""
    with open(path, "rb") as raw:
        source = readable(raw)
        if kind_of(source) == FILE:
            reader = ipc.open_file(source)
            found = (reader.get_batch(i) for i in range(reader.num_record_batches))
        else:
            found = ipc.open_stream(source)
        return [v for batch in found for v in batch.column(column).to_pylist()]


# -- hashing -----------------------------------------------------------------------------------


class _Sink:
    """A file-like object that hashes what is written to it."""

    def __init__(self, x: Any) -> None:
        self.x = x
        self.closed = False

    def write(self, data: Any) -> int:
        self.x.update(data)
        return len(data)

    def flush(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def _hash_column(x: Any, array: pa.Array) -> None:
    """Feed a kept column of one batch to ``x``: its type and its buffers (a dictionary's
    values too: a column holding one anywhere is hashed as its Arrow IPC stream)."""
    x.update(f"{array.type}|{len(array)}|{array.offset};".encode())
    if _has_dictionary(array.type):
        batch = pa.RecordBatch.from_arrays([array], ["c"])
        with ipc.new_stream(_Sink(x), batch.schema) as writer:
            writer.write_batch(batch)
        return
    for buf in array.buffers():
        if buf is None:
            x.update(b"-;")
        else:
            x.update(f"{buf.size};".encode())
            x.update(buf)


def hash_batches(
    raw: Any,
    text_columns: tuple[str, ...],
    keep_fields: tuple[int, ...],
    alive: Callable[[], None] | None = None,
) -> list[RowGroupHash]:
    """Content hash of every record batch of an Arrow input (open, local or an object): its
    text (and pair) column's values and the kept columns ``keep_fields`` (field numbers
    other than the text columns); ``alive()`` after each batch."""
    source = readable(raw)
    if kind_of(source) == FILE:
        schema = ipc.open_file(source).schema
        fields = sorted({*_indices(schema, text_columns), *keep_fields})
        reader = _file_reader(source, fields)
        found: Any = (reader.get_batch(i) for i in range(reader.num_record_batches))
    else:
        found = ipc.open_stream(source)
        schema = found.schema
    kept = [schema.field(i).name for i in keep_fields]
    out = []
    for batch in found:
        hashers = [TextHasher() for _ in text_columns]
        for hasher, name in zip(hashers, text_columns):
            hasher.update(batch.column(name))
        if len(text_columns) > 1:
            nulls = text_arrays.rows_with_a_null(batch, text_columns)
        else:
            nulls = hashers[0].nulls
        x = xxhash.xxh3_128()
        for name in kept:
            _hash_column(x, batch.column(name))
        text = ";pair=".join(h.hexdigest() for h in hashers)
        digest = hex128(f"text={text};kept={x.hexdigest()}".encode())
        out.append(RowGroupHash(digest, batch.num_rows, nulls, sum(h.text_bytes for h in hashers)))
        if alive is not None:
            alive()
    return out


# -- datasets directories ----------------------------------------------------------------------


def dataset_files(data: bytes) -> list[str] | None:
    """The data files a ``datasets`` ``state.json`` lists (``_data_files``), in its order,
    as names relative to its directory; None if the JSON is not such a state (a
    ``state.json`` of something else). ``ValueError`` if an entry names no file inside the
    directory."""
    try:
        doc = json.loads(data)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("_data_files"), list):
        return None
    names = []
    for entry in doc["_data_files"]:
        name = entry.get("filename") if isinstance(entry, dict) else None
        parts = name.split("/") if isinstance(name, str) else []
        if not parts or name.startswith("/") or any(p in ("", ".", "..") for p in parts):
            raise ValueError(f"an entry of _data_files names no file of the directory: {entry}")
        names.append(name)
    return names
