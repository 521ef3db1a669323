"""Text columns as the runner reads them: which Arrow types are text, and the row lengths,
validity and bytes of a text array, read from its buffers with numpy.

Text is every type Arrow gives a Parquet string column (``string``, ``large_string``,
``string_view``, a dictionary of strings, an extension type stored as strings such as
``arrow.json``); :func:`plain_text` turns any of them into ``string`` or ``large_string``
without checking the bytes, so a value that is not UTF-8 stays one row's problem
(the worker makes it a bad row) rather than failing its batch. ``binary`` is not text: it
has no encoding to trust. Every Parquet input is opened with :func:`open_parquet`, which
reads dictionary columns as Parquet holds them (see there).

``pyarrow.compute`` gives the same (``binary_length``, ``is_valid``, ``fill_null``), but
importing it costs about 40 ms, in the parent and in every worker: a tenth of a small run's
start-up. numpy is imported by pyarrow already; a process without it (a declared dependency,
but a Parquet run works without it) takes the ``pyarrow.compute`` way.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

try:
    import numpy as np
except ImportError:
    np = None


TEXT_TYPES = "string, large_string or string_view, or a dictionary or extension type of strings"


def _is_view(t: pa.DataType) -> bool:
    return hasattr(pa.types, "is_string_view") and pa.types.is_string_view(t)


def is_text(t: pa.DataType) -> bool:
    """Whether a column of type ``t`` holds text the runner can encode."""
    if isinstance(t, pa.BaseExtensionType):
        return is_text(t.storage_type)
    if pa.types.is_dictionary(t):
        return is_text(t.value_type)
    return pa.types.is_string(t) or pa.types.is_large_string(t) or _is_view(t)


def plain_text(array: pa.Array) -> pa.Array:
    """A text array (see :func:`is_text`) as ``string`` or ``large_string``, the same rows
    and nulls (a dictionary's null values included). Arrow's casts here copy bytes without
    validating them, so invalid UTF-8 is carried, not raised."""
    if isinstance(array, pa.ExtensionArray):
        return plain_text(array.storage)
    if pa.types.is_string(array.type) or pa.types.is_large_string(array.type):
        return array
    # string_view and dictionaries: large offsets, since a dictionary's repeated values
    # may decode to more than 2 GB
    return array.cast(pa.large_string())


def open_parquet(source: Any, **options: Any) -> pq.ParquetFile:
    """``pq.ParquetFile(source, **options)``, its dictionary columns read with int32
    indices, as Parquet stores them (``read_dictionary``). A file written from a dictionary
    with other indices (int8, int64) records them in its Arrow schema, and pyarrow's reader
    then casts each dictionary it reads: that cast fails the whole read on one value that is
    not UTF-8 (and on a row group whose dictionary outgrew the indices), where the worker
    needs one bad row. The schema planned and the batches read come from this one view, so
    a kept dictionary column is written with int32 indices, its values as they are."""
    pf = pq.ParquetFile(source, **options)
    names = [f.name for f in pf.schema_arrow if pa.types.is_dictionary(f.type)]
    if not names:
        return pf
    read_dictionary = list(dict.fromkeys(names))
    return pq.ParquetFile(source, metadata=pf.metadata, read_dictionary=read_dictionary, **options)


def lengths_and_values(array: pa.Array) -> tuple[bytes, memoryview]:
    """(the UTF-8 bytes of each row as int64, -1 where it is null; the bytes of the rows
    that hold a value, one after another). A null row's slot may cover bytes: they are not
    its value."""
    array = plain_text(array)
    if np is None:
        return _computed_lengths_and_values(array)
    found = _offsets(array)
    lengths = found[1:] - found[:-1]
    data = array.buffers()[2] if len(array) else None
    values = memoryview(data)[int(found[0]) : int(found[-1])] if data else memoryview(b"")
    valid = validity(array)
    if valid is not None:
        if lengths[~valid].any():  # null slots covering bytes: keep only the values' bytes
            raw = np.frombuffer(values, dtype=np.uint8)[np.repeat(valid, lengths)]
            values = memoryview(raw.tobytes())
        lengths[~valid] = -1
    return lengths.tobytes(), values


def text_bytes(array: pa.Array) -> int:
    """The UTF-8 bytes of the rows that hold a value."""
    array = plain_text(array)
    if np is None:
        import pyarrow.compute as pc

        return pc.sum(pc.binary_length(array)).as_py() or 0
    found = _offsets(array)
    valid = validity(array)
    if valid is None:
        return int(found[-1] - found[0])
    return int((found[1:] - found[:-1])[valid].sum())


def rows_with_a_null(batch: pa.RecordBatch, names: tuple[str, ...]) -> int:
    """The rows of ``batch`` where any of the text columns ``names`` is null."""
    columns = [plain_text(batch.column(name)) for name in names]
    if np is None:
        import pyarrow.compute as pc

        valid = pc.is_valid(columns[0])
        for column in columns[1:]:
            valid = pc.and_(valid, pc.is_valid(column))
        return len(batch) - (pc.sum(valid).as_py() or 0)
    every = np.ones(len(batch), dtype=bool)
    for column in columns:
        found = validity(column)
        if found is not None:
            every &= found
    return len(batch) - int(np.count_nonzero(every))


def validity(array: pa.Array) -> Any:
    """Whether each row holds a value (a numpy bool per row), or None when no row is null."""
    if not array.null_count:
        return None
    bitmap = array.buffers()[0]
    if bitmap is None:  # nulls without a bitmap: every row is null
        return np.zeros(len(array), dtype=bool)
    bits = np.unpackbits(np.frombuffer(bitmap, dtype=np.uint8), bitorder="little")
    return bits[array.offset : array.offset + len(array)].astype(bool)


def _offsets(array: pa.Array) -> Any:
    """The ``len(array) + 1`` offsets of the rows' bytes in the data buffer, as int64."""
    if not len(array):
        return np.zeros(1, dtype=np.int64)
    width = np.int64 if pa.types.is_large_string(array.type) else np.int32
    start = array.offset
    found = np.frombuffer(array.buffers()[1], dtype=width)[start : start + len(array) + 1]
    return found.astype(np.int64)


def _computed_lengths_and_values(array: pa.Array) -> tuple[bytes, memoryview]:
    import pyarrow.compute as pc

    lengths = pc.binary_length(array).cast(pa.int64())
    if array.null_count:
        lengths = lengths.fill_null(-1)
        array = array.fill_null("")
    lengths_bytes = bytes(memoryview(lengths.buffers()[1])[: 8 * len(lengths)])
    if not len(array):
        return lengths_bytes, memoryview(b"")
    width = 8 if pa.types.is_large_string(array.type) else 4
    offsets = memoryview(array.buffers()[1]).cast("q" if width == 8 else "i")
    start, end = offsets[array.offset], offsets[array.offset + len(array)]
    data = array.buffers()[2]
    values = memoryview(data)[start:end] if data is not None else memoryview(b"")
    return lengths_bytes, values
