"""The lengths, values and null counts of text arrays read from their buffers
(batchtok/runner/text_arrays.py) are what ``pyarrow.compute`` gives, whatever the array: a
slice, nulls (whose slots may cover bytes), large offsets, no rows, a string view, a
dictionary (its nulls in the indices or in the values), an extension type; and so are
the unknown and byte-fallback counts of the runner's token statistics. The way without numpy
(``pyarrow.compute``) gives the same."""

from __future__ import annotations

import array

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchtok.runner.inputs import text_arrays
from batchtok.runner.report.token_stats import IdCounter, TokenStats
from tests.support.tier import long_examples

VALUES = st.lists(st.none() | st.text("aé日🙂 \n", max_size=6), max_size=30)


@st.composite
def text_arrays_(draw) -> pa.Array:
    """A text array: its type, a slice of it, and null slots that may cover bytes."""
    values = draw(VALUES)
    kind = draw(
        st.sampled_from(["string", "large_string", "string_view", "dictionary", "dict_nulls"])
    )
    if kind in ("dictionary", "dict_nulls"):
        return draw(dictionaries(values, kind == "dict_nulls"))
    if kind == "string_view" and not hasattr(pa, "string_view"):
        kind = "string"
    if draw(st.booleans()) and any(v is None for v in values):
        # the same offsets and data as the values with "xy" in the null slots, then nulls
        filled = pa.array(["xy" if v is None else v for v in values], pa.string())
        mask = pa.array([v is None for v in values]).buffers()[1]
        bitmap = pa.py_buffer(bytes(~b & 0xFF for b in memoryview(mask)))
        arr = pa.StringArray.from_buffers(
            len(values), filled.buffers()[1], filled.buffers()[2], bitmap
        )
        assert arr.to_pylist() == values
        if kind != "string":
            arr = arr.cast(getattr(pa, kind)())
    else:
        arr = pa.array(values, getattr(pa, kind)())
    if draw(st.booleans()) and kind == "string":
        arr = pa.ExtensionArray.from_storage(pa.json_(pa.string()), arr)
    return sliced(draw, arr)


def sliced(draw, arr: pa.Array) -> pa.Array:
    start = draw(st.integers(0, len(arr)))
    return arr.slice(start, draw(st.integers(0, len(arr) - start)))


@st.composite
def dictionaries(draw, values: list[str | None], null_values: bool) -> pa.Array:
    """``values`` dictionary-encoded with indices of any width: each null an index that is
    null, or (``null_values``) an index to a null value of the dictionary."""
    distinct = list(dict.fromkeys(v for v in values if v is not None))
    if null_values:
        distinct.insert(draw(st.integers(0, len(distinct))), None)
    indices = [distinct.index(v) if v is not None or null_values else None for v in values]
    width = draw(st.sampled_from([pa.int8(), pa.int16(), pa.int32(), pa.int64()]))
    value_type = draw(st.sampled_from([pa.string(), pa.large_string()]))
    arr = pa.DictionaryArray.from_arrays(pa.array(indices, width), pa.array(distinct, value_type))
    assert arr.to_pylist() == values
    return sliced(draw, arr)


def reference(arr: pa.Array) -> tuple[bytes, bytes, int]:
    """(lengths as int64 with -1 for null, the non-null values' bytes, their count), by
    pyarrow.compute (which has no kernel for a string view) and to_pylist."""
    if isinstance(arr, pa.ExtensionArray):
        arr = arr.storage
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    if hasattr(pa.types, "is_string_view") and pa.types.is_string_view(arr.type):
        arr = arr.cast(pa.large_string())
    lengths = pc.binary_length(arr).cast(pa.int64()).fill_null(-1).to_pylist()
    values = b"".join(v.encode() for v in arr.to_pylist() if v is not None)
    return array.array("q", lengths).tobytes(), values, len(values)


@long_examples(1000)
@given(arr=text_arrays_())
def test_lengths_values_and_bytes_are_what_pyarrow_compute_gives(arr):
    lengths, values, size = reference(arr)
    for way in ("numpy", None):
        with pytest.MonkeyPatch.context() as mp:
            if way is None:
                mp.setattr(text_arrays, "np", None)
            got_lengths, got_values = text_arrays.lengths_and_values(arr)
            assert (bytes(got_lengths), bytes(got_values)) == (lengths, values)
            assert text_arrays.text_bytes(arr) == size


@long_examples(500)
@given(columns=st.lists(text_arrays_(), min_size=2, max_size=3))
def test_rows_with_a_null_are_counted_as_pyarrow_compute_does(columns):
    n = min(len(c) for c in columns)
    batch = pa.RecordBatch.from_arrays(
        [c.slice(0, n) for c in columns], ["a", "b", "c"][: len(columns)]
    )
    want = sum(1 for row in zip(*(c.to_pylist() for c in batch.columns)) if None in row)
    assert text_arrays.rows_with_a_null(batch, tuple(batch.schema.names)) == want
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(text_arrays, "np", None)
        assert text_arrays.rows_with_a_null(batch, tuple(batch.schema.names)) == want


@long_examples(500)
@given(
    ids=st.lists(st.integers(0, 300), max_size=60),
    unk=st.none() | st.integers(0, 300),
    byte_ids=st.lists(st.integers(0, 300), max_size=10, unique=True),
    typecode=st.sampled_from(["H", "I", "i", "q"]),
)
def test_unknown_and_byte_ids_are_counted_with_and_without_numpy(ids, unk, byte_ids, typecode):
    values = array.array(typecode, ids)
    want_unknown = ids.count(unk) if unk is not None else 0
    want_bytes = sum(1 for i in ids if i in set(byte_ids))
    found = TokenStats()
    IdCounter(unk, byte_ids).count(values, found)
    assert (found.unknown, found.byte_fallback) == (want_unknown, want_bytes)
    real_import = __import__

    def no_numpy(name, *args, **kwargs):
        if name == "numpy":
            raise ImportError("no numpy here")
        return real_import(name, *args, **kwargs)

    found = TokenStats()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr("builtins.__import__", no_numpy)
        IdCounter(unk, byte_ids).count(values, found)
    assert (found.unknown, found.byte_fallback) == (want_unknown, want_bytes)
