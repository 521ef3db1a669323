"""Output Parquet files: schema, token-id arrays, metadata, and atomic writes.

**One output file per input file**, at the input's relative path under ``output.dir``: the
output mirrors the input layout (row *i* of ``out/a/b.parquet`` is row *i* of ``a/b.parquet``
unless ``bad_rows = "skip"`` left rows out), which is what downstream readers and ``ls``
expect, and it does not change when the shard size does. A file planned as one shard is
written directly by its worker; a file cut into several shards has each shard written as a
*part* under ``OUT/.batchtok/parts/<key>.parquet``, and the parts are joined into the output
once all are complete. Each shard starts a new row group, so an output's shards can be copied
out of it again: a re-run where one shard of a big file changed recomputes that shard only and
copies the others from the existing output.

**Nothing partial is ever visible.** Every file (output, part, record) is written under
``OUT/.batchtok/tmp/``, flushed and fsynced, then renamed into place (same file system, so the
rename is atomic), and the directory is fsynced; to an S3 output it is uploaded whole instead
(:mod:`batchtok.runner.io.stores`). A killed worker leaves at most a temporary
file, which the next run (holding the lock) deletes. Readers of ``OUT`` see complete files
only; ``.batchtok`` and ``_batchtok_summary.json`` are skipped by pyarrow datasets, Spark and
Hive (names starting with ``.`` or ``_``).

Each file's key-value metadata, under the key ``batchtok``, holds a JSON document: engine
version, tokenizer sha256 and xxh3-128, encode options, output format, the input file's
name and content hash, and its shards' cache keys.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import inspect
import json
import os
import pickle
from array import array
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import CorruptFileError, DiskFullError
from ..io import stores
from ..io.arrow_fs import StorageOptions
from ..io.names import escaped_json
from ..plan.keys import file_xxh3

METADATA_KEY = b"batchtok"
ARROW_TYPES = {"int32": pa.int32(), "uint16": pa.uint16(), "uint32": pa.uint32()}
TYPECODES = {"int32": "i", "uint16": "H", "uint32": "I"}
for _code, _size in (("i", 4), ("H", 2), ("I", 4)):
    assert array(_code).itemsize == _size, f"array typecode {_code} is not {_size} bytes here"

# Page checksums let a full read detect corruption (pyarrow >= 15).
PAGE_CHECKSUMS = "write_page_checksum" in inspect.signature(pq.ParquetWriter.__init__).parameters


def use_returning_memory_pool() -> str:
    """Make Arrow allocate from jemalloc (else the system allocator) unless the user chose a
    pool with ``ARROW_DEFAULT_MEMORY_POOL``; returns the backend's name.

    pyarrow's default on Linux, mimalloc, keeps freed pages: reading a 125 MB output back one
    row group at a time grew a process by 120 MB under mimalloc and by 30 MB under jemalloc
    or glibc (pyarrow 26). A worker reads and writes row groups for hours, so the pool has to
    give memory back. Call it in the parent before forking: the children inherit the choice.
    """
    if not os.environ.get("ARROW_DEFAULT_MEMORY_POOL"):
        try:
            pool = pa.jemalloc_memory_pool()
        except NotImplementedError:  # a pyarrow built without jemalloc (e.g. Windows)
            pool = pa.system_memory_pool()
        pa.set_memory_pool(pool)
    return pa.default_memory_pool().backend_name


#: a part's columns, before the ids, for a provenance file (output.provenance): each row's row
#: in the input and, of a JSON Lines input, its line (the input's id column follows, if any)
PART_ROW = "__batchtok_row"
PART_LINE = "__batchtok_line"


def output_schema(
    input_schema: pa.Schema, keep: Sequence[str], ids_column: str, count_column: str, dtype: str
) -> pa.Schema:
    """The kept input columns, then the ids and counts columns (always the last two: the
    writer relies on it, see :class:`AtomicParquet`)."""
    fields = [input_schema.field(name) for name in keep]
    fields.append(pa.field(ids_column, pa.list_(ARROW_TYPES[dtype])))
    fields.append(pa.field(count_column, pa.int32()))
    return pa.schema(fields)


def list_arrays(
    values: array, lengths: Sequence[int | None], dtype: str
) -> tuple[pa.Array, pa.Array]:
    """(list<dtype> array, int32 counts) over ``values`` (the rows' ids one after another,
    used in place: not copied) cut by ``lengths``; a None length is a null row in both."""
    n = len(lengths)
    sizes = [length or 0 for length in lengths]
    offsets = array("i", accumulate(sizes, initial=0))
    value_type = ARROW_TYPES[dtype]
    values_arr = pa.Array.from_buffers(value_type, len(values), [None, pa.py_buffer(values)])
    offsets_arr = pa.Array.from_buffers(pa.int32(), n + 1, [None, pa.py_buffer(offsets)])
    # (built from buffers: pa.array on a Python list imports pandas where it is installed,
    # 0.1-0.3 s of each worker's first shard)
    counts_buffer = pa.py_buffer(array("i", sizes))
    if None not in lengths:
        counts = pa.Array.from_buffers(pa.int32(), n, [None, counts_buffer])
        return pa.ListArray.from_arrays(offsets_arr, values_arr), counts
    null = bytearray((n + 7) // 8)
    for i, length in enumerate(lengths):
        if length is None:
            null[i >> 3] |= 1 << (i & 7)
    mask = pa.Array.from_buffers(pa.bool_(), n, [None, pa.py_buffer(bytes(null))])
    list_arr = pa.ListArray.from_arrays(offsets_arr, values_arr, mask=mask)
    counts = pa.Array.from_buffers(pa.int32(), n, [list_arr.buffers()[0], counts_buffer])
    return list_arr, counts


@functools.lru_cache(maxsize=16)
def leaf_paths(schema: pa.Schema) -> tuple[str, ...]:
    """The Parquet column paths of ``schema``'s leaves (``ids.list.element`` for a list)."""
    sink = pa.BufferOutputStream()
    pq.ParquetWriter(sink, schema).close()
    meta = pq.read_metadata(pa.BufferReader(sink.getvalue()))
    return tuple(meta.schema.column(i).path for i in range(meta.num_columns))


def metadata_bytes(doc: dict[str, Any]) -> bytes:
    # a file name that is not UTF-8 escaped: strict JSON readers refuse a lone surrogate
    return json.dumps(escaped_json(doc), sort_keys=True, separators=(",", ":")).encode()


@dataclass(frozen=True)
class FileOutput:
    """What every file written from one input file's shards shares (its output, or its
    parts): the output schema without metadata, and the ``batchtok`` metadata document but
    for what tells those files apart (see :meth:`shard_schema`). Made once per input file;
    its tasks hold the one object, and each worker makes its own file's metadata from it."""

    schema: pa.Schema
    doc: dict[str, Any]  # never changed (shared by the file's tasks)

    def __reduce__(self) -> tuple[Any, ...]:
        # Each task is pickled on its own (to a worker's pipe, to a Ray actor): the part its
        # file's tasks share is pickled once, and each task carries those bytes.
        return _unpack_file_output, (self._packed,)

    @functools.cached_property
    def _packed(self) -> bytes:
        return pickle.dumps((self.schema, self.doc), protocol=pickle.HIGHEST_PROTOCOL)

    def shard_schema(self, key: str, row_groups: tuple[int, int], part: str | None) -> pa.Schema:
        """The schema, with its metadata, of the file one shard is written to: the input's
        output when the shard is its only one (the document's ``shards``: that shard), else
        its part (``part``: its key, row groups and id, ``part``)."""
        shard: dict[str, Any] = {"key": key, "row_groups": list(row_groups)}
        if part is None:
            entry: dict[str, Any] = {"shards": [shard]}
        else:
            entry = {"part": {**shard, "shard": part}}
        return self.schema.with_metadata({METADATA_KEY: metadata_bytes({**self.doc, **entry})})


def _unpack_file_output(packed: bytes) -> FileOutput:
    return FileOutput(*pickle.loads(packed))


def read_metadata(path: str | os.PathLike[str]) -> tuple[dict[str, Any], pq.FileMetaData]:
    """The ``batchtok`` metadata document and the footer of an output or part file.

    Raises OSError/ArrowException for an unreadable file, :class:`CorruptFileError` (a
    ValueError) for a file without it.
    """
    footer = pq.read_metadata(stores.readable(path))
    kv = footer.metadata or {}
    raw = kv.get(METADATA_KEY)
    if raw is None:
        raise CorruptFileError("no batchtok metadata")
    try:
        doc = json.loads(raw)
    except ValueError as exc:
        raise CorruptFileError(str(exc)) from exc
    if not isinstance(doc, dict):
        raise CorruptFileError("batchtok metadata is not an object")
    return doc, footer


def full_read_ok(path: str | os.PathLike[str]) -> str | None:
    """Read every page (checksums verified where written); None if fine, else why not."""
    try:
        pf = pq.ParquetFile(stores.readable(path), page_checksum_verification=PAGE_CHECKSUMS)
        for i in range(pf.metadata.num_row_groups):
            pf.read_row_group(i, use_threads=False)
    except (OSError, pa.ArrowException, ValueError) as exc:
        return str(exc)
    return None


class AtomicParquet:
    """A Parquet writer to a temporary file that is renamed to ``dest`` only on success.

    On any failure the temporary file is deleted; ENOSPC becomes :class:`DiskFullError` naming
    the destination.
    """

    def __init__(
        self,
        dest: str,
        tmp_dir: str,
        schema: pa.Schema,
        compression: str,
        tag: str,
        guard: Callable[[], None] | None = None,
        record_file: str = "",
        no_statistics: Sequence[str | None] = (),
        options: StorageOptions | None = None,
        beat: Callable[[], None] | None = None,
    ) -> None:
        self.dest = dest
        self.options = options  # the job's [storage], for a destination in object storage
        self.beat = beat  # called as a long upload moves on
        # Columns written without min/max statistics: for a text column Arrow computes them
        # over whole values (5x a 50 MB text's size in memory) and drops them over 4 KB.
        self.no_statistics = {name for name in no_statistics if name}
        # Where to record the digest (with ``record``, filled by the writer's user), before
        # the rename: the file is never in place without it.
        self.record_file = record_file
        self.record: dict[str, Any] = {}
        self.guard = guard  # called just before the rename: raises if it must not happen
        self.digest = ""  # xxh3-128 of the file's bytes, once written
        self.tmp = os.path.join(tmp_dir, f"{tag}.{os.getpid()}.parquet.tmp")
        self.schema = schema
        self.compression = None if compression == "none" else compression
        self.writer: pq.ParquetWriter | None = None
        self.rows = 0
        self.row_groups = 0
        # finished local files published with this one, before it (a provenance file): the
        # older file at ``dest`` is removed first, so it never stands beside new companions
        self.companions: list[tuple[str, str]] = []

    def __enter__(self) -> AtomicParquet:
        os.makedirs(os.path.dirname(self.tmp), exist_ok=True)
        options: dict[str, Any] = {"write_page_checksum": True} if PAGE_CHECKSUMS else {}
        if self.no_statistics & set(self.schema.names):
            options["write_statistics"] = [
                path
                for path in leaf_paths(self.schema)
                if path.split(".", 1)[0] not in self.no_statistics
            ]
        # The ids column (output_schema's last but one) without a dictionary: a vocabulary's
        # ids fill a dictionary page that never overflows, so Parquet keeps it, and hashing
        # every id into it made the writes slower and the column larger than plain pages
        # under zstd (llama3: 30% more bytes, 25% more time).
        ids_column = self.schema.names[-2] if len(self.schema) >= 2 else None
        options["use_dictionary"] = [
            path for path in leaf_paths(self.schema) if path.split(".", 1)[0] != ids_column
        ]
        self.writer = pq.ParquetWriter(
            self.tmp, self.schema, compression=self.compression, **options
        )
        return self

    def write(self, table: pa.Table) -> None:
        """Write ``table`` as exactly one row group (none if it is empty)."""
        if table.num_rows == 0:
            return
        assert self.writer is not None
        self.writer.write_table(table, row_group_size=table.num_rows)
        self.rows += table.num_rows
        self.row_groups += 1

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is not None:
            self.abort()
            self._raise_if_disk_full(exc)
            return
        try:
            assert self.writer is not None
            self.writer.close()
            self.writer = None
            with open(self.tmp, "rb+") as f:
                os.fsync(f.fileno())
            self.digest = file_xxh3(self.tmp)
            if self.guard is not None:
                self.guard()
            if self.record_file:
                text = json.dumps({**self.record, "xxh3_128": self.digest}, sort_keys=True)
                stores.write_whole(
                    stores.as_path(self.record_file, self.options),
                    (text + "\n").encode("ascii"),
                    stores.as_path(self.tmp + ".json"),
                    durable=True,
                )
            if self.companions:
                from batchtok.formats.files import publish

                store = stores.store_of(self.dest)
                publisher = store.set_publisher(self.options or StorageOptions(), self.beat)
                (publisher or publish)([*self.companions, (self.tmp, self.dest)])
            else:
                stores.replace(self.tmp, self.dest, self.options, self.beat)
        except BaseException as err:
            self.abort()
            self._raise_if_disk_full(err)
            raise

    def _raise_if_disk_full(self, exc: BaseException | None) -> None:
        """A full disk as :class:`DiskFullError` naming the output (the run stops: every
        other shard would fail the same way)."""
        if isinstance(exc, OSError) and exc.errno == errno.ENOSPC:
            raise DiskFullError(
                errno.ENOSPC, f"no space left on device while writing {self.dest}"
            ) from exc

    def abort(self) -> None:
        if self.writer is not None:
            with contextlib.suppress(Exception):
                self.writer.close()
            self.writer = None
        for tmp in [self.tmp, *(tmp for tmp, _ in self.companions)]:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


def shard_row_groups(doc: dict[str, Any], footer: pq.FileMetaData) -> dict[str, tuple[int, int]]:
    """cache key -> [first, end) output row groups of each shard in an output file."""
    shards = doc.get("shards") or []
    if len(shards) == 1:
        return {shards[0]["key"]: (0, footer.num_row_groups)}
    out: dict[str, tuple[int, int]] = {}
    rg = 0
    for shard in shards:
        want = shard.get("rows_out")
        if not isinstance(want, int):
            return {}
        start, rows = rg, 0
        while rows < want and rg < footer.num_row_groups:
            rows += footer.row_group(rg).num_rows
            rg += 1
        if rows != want:
            return {}
        out.setdefault(shard["key"], (start, rg))
    return out if rg == footer.num_row_groups else {}


def copy_row_groups(
    sink: AtomicParquet,
    source: str,
    first: int,
    end: int,
    options: StorageOptions | None = None,
) -> Iterator[int]:
    """Copy row groups [first, end) of ``source`` (in object storage: read with ``options``)
    into ``sink`` one at a time, every page's checksum verified (the sink writes fresh ones:
    a flipped bit must be caught here or never); yields rows."""
    pf = pq.ParquetFile(stores.readable(source, options), page_checksum_verification=PAGE_CHECKSUMS)
    for i in range(first, end):
        table = pf.read_row_group(i, use_threads=False)  # a thread pool costs ~30 MB
        if not table.schema.equals(sink.schema, check_metadata=False):
            raise CorruptFileError(f"{source}: schema differs from the output's")
        sink.write(table.replace_schema_metadata(sink.schema.metadata))
        yield table.num_rows
