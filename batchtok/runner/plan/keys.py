"""Content-hash cache keys (xxhash): what makes a shard the same shard in another run.

A shard's **cache key** is the xxh3-128 of

* the *content* of the text column, and of the pair column when the job has one, in the
  shard's row groups: per row, its UTF-8 bytes and length (null distinguished from empty).
  Decoded values are hashed, so re-compressing or re-encoding the input does not change the
  key, and batch sizes never do;
* the stored bytes of every other input column copied to the output (a change to any kept
  column must reach the output; hashing stored bytes is cheap and errs on the safe side: a
  re-encoded file recomputes);
* the kept columns' names and types;
* the exact bytes of the tokenizer file, the engine version, the encode options as applied
  (truncation whether from the job or the tokenizer file, special tokens) and the output
  format (dtype, column names, compression, bad-row policy, row-group size), and this module's
  :data:`CACHE_FORMAT`.

Never the worker count, paths, times, or a pickled object: the key is a JSON document of plain
values and digests (:func:`shard_key`).

The records that remember them between runs are :mod:`.records`'.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

from ..inputs import text_arrays
from ..io.arrow_fs import StorageOptions
from ..io.stores import OutPath, open_binary

CACHE_FORMAT = 1
READ_CHUNK = 1 << 20


def hex128(data: bytes) -> str:
    return xxhash.xxh3_128_hexdigest(data)


def digests(data: bytes) -> tuple[str, str]:
    """(xxh3-128, sha256) of some bytes, hex."""
    return xxhash.xxh3_128_hexdigest(data), hashlib.sha256(data).hexdigest()


def file_xxh3(path: str | os.PathLike[str] | OutPath, options: StorageOptions | None = None) -> str:
    """xxh3-128 of a file's (or an object's) bytes, hex (read in chunks: a part can be
    large)."""
    x = xxhash.xxh3_128()
    with open_binary(path, options) as f:
        while chunk := f.read(READ_CHUNK):
            x.update(chunk)
    return x.hexdigest()


# -- input content -----------------------------------------------------------------------------


class TextHasher:
    """Hash of a text column's values, independent of how they are cut into batches."""

    def __init__(self) -> None:
        self.lengths = xxhash.xxh3_128()  # int64 per row, -1 for null
        self.data = xxhash.xxh3_128()  # UTF-8 bytes of every value, concatenated
        self.rows = 0
        self.nulls = 0
        self.text_bytes = 0

    def update(self, array: pa.Array) -> None:
        if isinstance(array, pa.ChunkedArray):
            for chunk in array.chunks:
                self.update(chunk)
            return
        array = text_arrays.plain_text(array)  # a dictionary's null values are nulls too
        lengths, values = text_arrays.lengths_and_values(array)
        self.nulls += array.null_count
        self.lengths.update(lengths)
        self.data.update(values)
        self.text_bytes += len(values)
        self.rows += len(array)

    def hexdigest(self) -> str:
        return hex128(
            f"rows={self.rows};lengths={self.lengths.hexdigest()};data={self.data.hexdigest()}".encode()
        )


@dataclass(frozen=True)
class RowGroupHash:
    """The content hash of one input row group and the exact counts read while hashing."""

    digest: str
    rows: int
    nulls: int  # rows where the text (or the pair) is null
    text_bytes: int  # UTF-8 bytes of the text column (and the pair column)

    def to_json(self) -> list:
        return [self.digest, self.rows, self.nulls, self.text_bytes]

    @classmethod
    def from_json(cls, data: list) -> RowGroupHash:
        digest, rows, nulls, text_bytes = data
        return cls(str(digest), int(rows), int(nulls), int(text_bytes))


def _column_chunk_range(meta: pq.RowGroupMetaData, leaf: int) -> tuple[int, int]:
    col = meta.column(leaf)
    start = col.data_page_offset
    if col.has_dictionary_page and col.dictionary_page_offset is not None:
        start = min(start, col.dictionary_page_offset)
    return start, col.total_compressed_size


def hash_row_groups(
    source: str | BinaryIO,
    text_columns: tuple[str, ...],
    keep_leaves: tuple[int, ...],
    batch_rows: int = 8192,
    alive: Callable[[], None] | None = None,
) -> list[RowGroupHash]:
    """Content hash of every row group of one input file, a path or an open binary file
    (reads the text column and the pair column, if any: ``text_columns``, streamed);
    ``alive()`` is called after each batch read (a worker's proof of progress)."""
    with contextlib.ExitStack() as stack:
        raw = source if not isinstance(source, str) else stack.enter_context(open(source, "rb"))
        return _hash_row_groups(raw, text_columns, keep_leaves, batch_rows, alive)


def _hash_row_groups(
    raw: BinaryIO,
    text_columns: tuple[str, ...],
    keep_leaves: tuple[int, ...],
    batch_rows: int,
    alive: Callable[[], None] | None,
) -> list[RowGroupHash]:
    path = getattr(raw, "name", "input")
    pf = text_arrays.open_parquet(raw, buffer_size=READ_CHUNK)
    meta = pf.metadata
    out = []
    for i in range(meta.num_row_groups):
        hashers = [TextHasher() for _ in text_columns]
        nulls = 0
        for batch in pf.iter_batches(
            batch_size=batch_rows,
            row_groups=[i],
            columns=list(text_columns),
            use_threads=False,
        ):
            if alive is not None:
                alive()
            for hasher, name in zip(hashers, text_columns):
                hasher.update(batch.column(name))
            if len(text_columns) > 1:
                nulls += text_arrays.rows_with_a_null(batch, text_columns)
        if len(text_columns) == 1:
            nulls = hashers[0].nulls
        kept = xxhash.xxh3_128()
        rg = meta.row_group(i)
        for leaf in keep_leaves:
            start, length = _column_chunk_range(rg, leaf)
            raw.seek(start)
            remaining = length
            while remaining > 0:
                chunk = raw.read(min(READ_CHUNK, remaining))
                if not chunk:
                    raise OSError(f"{path}: truncated column chunk in row group {i}")
                kept.update(chunk)
                remaining -= len(chunk)
        text = ";pair=".join(h.hexdigest() for h in hashers)
        digest = hex128(f"text={text};kept={kept.hexdigest()}".encode())
        rows, text_bytes = hashers[0].rows, sum(h.text_bytes for h in hashers)
        out.append(RowGroupHash(digest, rows, nulls, text_bytes))
    return out


def content_hash(hashes: list[RowGroupHash]) -> str:
    """One hash for a run of row groups (a shard, or a whole file)."""
    return hex128(("|".join(h.digest for h in hashes)).encode())


# -- keys ---------------------------------------------------------------------------------------


def fingerprint(
    *,
    engine_version: str,
    tokenizer_xxh3: str,
    text_column: str,
    pair_column: str | None,
    keep_schema: pa.Schema,
    encode_options: dict[str, Any],
    output_format: dict[str, Any],
) -> str:
    """Everything but the content that a shard's output depends on, as canonical JSON."""
    doc = {
        "cache_format": CACHE_FORMAT,
        "engine_version": engine_version,
        "tokenizer_xxh3_128": tokenizer_xxh3,
        "text_column": text_column,
        "keep_columns": [[f.name, str(f.type), f.nullable] for f in keep_schema],
        "encode": encode_options,
        "output": output_format,
    }
    if pair_column is not None:
        doc["pair_column"] = pair_column
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def shard_key(fingerprint_json: str, hashes: list[RowGroupHash]) -> str:
    return hex128(f"{fingerprint_json}\n{content_hash(hashes)}".encode())
