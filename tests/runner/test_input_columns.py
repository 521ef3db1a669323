"""Input columns the Parquet reader meets: every Arrow type a Parquet string column is read
as (string, large_string, string_view, dictionaries, an extension stored as strings) and every
Parquet string encoding is text, tokenized as ``tokenizers`` does, with invalid UTF-8 one bad
row named by its row; kept columns of those types are copied intact and a re-run redoes
nothing. Columns the reader cannot use (two of one name where a name must pick one column,
bytes without a text type, a dictionary pyarrow cannot read back) are an invalid job before
any work."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from batchtok.runner.io.lock import current_holder
from tests.support.runner import basic_job, invoke, oracle_ids, summary, texts, write_parquet

ROWS = 40
BAD_TEXT, BAD_PAIR, BAD_KEPT = 7, 12, 20  # rows holding bytes that are not UTF-8
NOT_UTF8 = b"caf\xe9 \xff\xfe"

# Arrow types, each with the type a Parquet file written from it records in its Arrow schema
KINDS = {
    "string": pa.string(),
    "large_string": pa.large_string(),
    "string_view": pa.string_view(),
    "dictionary": pa.dictionary(pa.int32(), pa.string()),
    # the stored Arrow schema keeps the indices' width, not the values' large offsets
    "dictionary_int8_large": pa.dictionary(pa.int8(), pa.string()),
    "json": pa.json_(pa.string()),
}
DICTIONARY = pa.dictionary(pa.int32(), pa.string())  # how the runner reads any dictionary


def text_array(kind: str, raw: list[bytes | None]) -> pa.Array:
    """``raw`` as a text array of ``kind``, its bytes unchecked (as other writers store
    them): binary data relabelled as text, which no Arrow call validates."""
    if kind in ("string", "json"):
        array = pa.array(raw, pa.binary()).view(pa.string())
        return pa.ExtensionArray.from_storage(KINDS["json"], array) if kind == "json" else array
    if kind == "large_string":
        return pa.array(raw, pa.large_binary()).view(pa.large_string())
    if kind == "string_view":
        return pa.array(raw, pa.binary_view()).view(pa.string_view())
    distinct = list(dict.fromkeys(r for r in raw if r is not None))
    indices = [None if r is None else distinct.index(r) for r in raw]
    if kind == "dictionary":
        values = pa.array(distinct, pa.binary()).view(pa.string())
        return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), values)
    values = pa.array(distinct, pa.large_binary()).view(pa.large_string())
    return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int8()), values)


def raw_values(column: pa.ChunkedArray) -> list[bytes | None]:
    """A text column's values as the bytes stored (not decoded, so not validated)."""
    out: list[bytes | None] = []
    for chunk in column.chunks:
        if isinstance(chunk, pa.ExtensionArray):
            chunk = chunk.storage
        if pa.types.is_dictionary(chunk.type):
            chunk = chunk.dictionary_decode()
        out += chunk.cast(pa.large_string()).view(pa.large_binary()).to_pylist()
    return out


def rows(seed: int, bad: int | None) -> list[bytes | None]:
    """UTF-8 texts (some repeated, so dictionaries have repeats; one null), one of them
    replaced by bytes that are not UTF-8."""
    raw: list[bytes | None] = [t.encode() for t in texts(ROWS, seed=seed)]
    raw[3] = raw[2]
    raw[30] = None
    if bad is not None:
        raw[bad] = NOT_UTF8
    return raw


def oracle_rows(text: list[bytes | None], pair: list[bytes | None] | None) -> dict[int, list]:
    """{row: the oracle's ids} for the rows that are neither null nor invalid UTF-8."""
    good = [
        i
        for i in range(ROWS)
        if text[i] not in (None, NOT_UTF8) and (pair is None or pair[i] not in (None, NOT_UTF8))
    ]
    pairs = None if pair is None else [pair[i].decode() for i in good]
    ids = oracle_ids([text[i].decode() for i in good], pairs=pairs)
    return dict(zip(good, ids))


def write_input(path: Path, columns: dict[str, pa.Array], **options) -> pa.Table:
    """Write the columns as Parquet (row groups of 10 rows); the table read back, its
    dictionary columns with int32 indices, as Parquet holds them (and the runner reads them:
    see test_a_dictionary_column_read_back)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path, row_group_size=10, **options)
    stored = pq.read_schema(path)
    dictionaries = [f.name for f in stored if pa.types.is_dictionary(f.type)]
    return pq.read_table(path, read_dictionary=dictionaries)


def check_run(tmp_path: Path, table: pa.Table, text, pair, kept) -> None:
    """A run (four shards of one file, joined) and a re-run of the job over ``table``: ids
    equal the oracle's, the invalid rows are bad rows by number, kept columns intact."""
    out = tmp_path / "out"
    settings = {"run__workers": 1, "run__shard_mb": 0.0001}
    if pair is not None:
        settings["input__pair_column"] = "pair"
    job = basic_job(tmp_path, **settings)
    code, output = invoke("run", job)
    assert code == 3, output
    report = summary(out)
    assert report["shards"]["total"] >= 4  # parts, then a join
    want_bad = {BAD_TEXT: "invalid UTF-8 in the text", 30: "null text"}
    if pair is not None:
        want_bad[BAD_PAIR] = "invalid UTF-8 in the pair"
    found = {e["row"]: e["reason"].split(":")[0] for e in report["bad_rows"]["examples"]}
    assert found == want_bad
    assert f"a.parquet row {BAD_TEXT}: invalid UTF-8 in the text" in output
    if pair is not None:
        assert f"a.parquet row {BAD_PAIR}: invalid UTF-8 in the pair" in output
    result = pq.read_table(out / "a.parquet")
    ids = result["input_ids"].to_pylist()
    expected = oracle_rows(text, pair)
    assert {i: ids[i] for i in expected} == expected
    assert all(ids[i] is None for i in want_bad)
    assert result.column_names == [*table.column_names, "input_ids", "num_tokens"]
    assert result["id"].equals(table["id"])
    for name in table.column_names[1:]:  # text columns copied as read: type, nulls, bytes
        assert result.schema.field(name).type == table.schema.field(name).type, name
        assert raw_values(result[name]) == raw_values(table[name]), name
    assert raw_values(result["kept"]) == kept
    before = (out / "a.parquet").stat().st_mtime_ns
    code, output = invoke("run", job)
    assert code == 3, output
    again = summary(out)
    assert again["shards"]["done"] == 0
    assert again["shards"]["cached"] == again["shards"]["total"]
    assert again["bad_rows"]["count"] == len(want_bad)
    assert (out / "a.parquet").stat().st_mtime_ns == before


@pytest.mark.parametrize("pair", [False, True], ids=["text", "pair"])
@pytest.mark.parametrize("kind", list(KINDS))
def test_each_arrow_text_type_is_text_and_invalid_utf8_a_bad_row(
    tmp_path: Path, kind: str, pair: bool
) -> None:
    text = rows(1, BAD_TEXT)
    pairs = rows(2, BAD_PAIR) if pair else None
    kept = rows(3, BAD_KEPT)  # copied, never decoded: its invalid row is not a bad row
    columns = {"id": pa.array(range(ROWS)), "text": text_array(kind, text)}
    if pairs is not None:
        columns["pair"] = text_array(kind, pairs)
    columns["kept"] = text_array(kind, kept)
    path = tmp_path / "in" / "a.parquet"
    table = write_input(path, columns)
    for name in ("text", "kept") + (("pair",) if pair else ()):
        assert pq.read_schema(path).field(name).type == KINDS[kind]
        with pytest.raises(UnicodeDecodeError):  # the invalid bytes are in the file
            table[name].to_pylist()
    check_run(tmp_path, table, text, pairs, kept)


@pytest.mark.parametrize(
    "encoding",
    ["PLAIN", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY", "no Arrow schema"],
)
def test_each_parquet_string_encoding_is_text(tmp_path: Path, encoding: str) -> None:
    text, kept = rows(4, BAD_TEXT), rows(5, BAD_KEPT)
    # pyarrow cannot read a dictionary column back from DELTA pages ("Not yet implemented")
    kept_kind = "large_string" if encoding.startswith("DELTA") else "dictionary"
    columns = {
        "id": pa.array(range(ROWS)),
        "text": text_array("string", text),
        "kept": text_array(kept_kind, kept),
    }
    if encoding == "no Arrow schema":  # as other writers: read as Parquet says (string)
        options: dict = {"store_schema": False}
    elif encoding == "RLE_DICTIONARY":  # pyarrow's default
        options = {"use_dictionary": True}
    else:
        options = {"use_dictionary": False, "column_encoding": dict.fromkeys(columns, encoding)}
        del options["column_encoding"]["id"]
    path = tmp_path / "in" / "a.parquet"
    table = write_input(path, columns, **options)
    chunks = pq.ParquetFile(path).metadata.row_group(0)
    if encoding != "no Arrow schema":
        assert encoding in chunks.column(1).encodings and encoding in chunks.column(2).encodings
    else:
        assert table.schema.field("kept").type == pa.string()
    check_run(tmp_path, table, text, None, kept)


def test_a_dictionary_column_read_back(tmp_path: Path) -> None:
    """What pyarrow gives the runner: a column written from a dictionary comes back as one
    (its stored Arrow schema says so) with the indices it was written with, and with int32
    indices under ``read_dictionary``; a string column (dictionary-encoded in Parquet, as
    pyarrow writes every column) comes back as a dictionary only when asked. Indices other
    than int32 are a cast of what Parquet holds, and that cast fails the whole read on one
    value that is not UTF-8: why the runner reads every dictionary with ``read_dictionary``."""
    path = tmp_path / "a.parquet"
    values = pa.array(["a", "b", "a", None])
    narrow = values.dictionary_encode().cast(pa.dictionary(pa.int8(), pa.string()))
    table = {"d": values.dictionary_encode(), "d8": narrow, "s": values}
    pq.write_table(pa.table(table), path)
    assert pq.read_table(path).schema.types == [DICTIONARY, narrow.type, pa.string()]
    asked = pq.read_table(path, read_dictionary=["d", "d8", "s"])
    assert asked.schema.types == [DICTIONARY] * 3
    assert asked.column("d8").to_pylist() == values.to_pylist()
    invalid = pa.array([b"a", b"caf\xe9"], pa.binary()).view(pa.string()).dictionary_encode()
    pq.write_table(pa.table({"d8": invalid.cast(narrow.type)}), path)
    with pytest.raises(pa.ArrowInvalid, match="UTF8"):
        pq.read_table(path)
    assert pq.read_table(path, read_dictionary=["d8"]).schema.types == [DICTIONARY]


def test_a_dictionary_that_outgrew_its_int8_indices_is_read(tmp_path: Path) -> None:
    """Chunks of dictionaries of under 128 values each, written into one row group: pyarrow
    cannot read the file back as its schema says (int8 indices, 300 values); the runner
    reads it, and tokenizes it as the oracle does."""
    text = [f"{t} {i}" for i, t in enumerate(texts(300, seed=8))]
    chunks = [
        pa.array(text[i : i + 100]).dictionary_encode().cast(pa.dictionary(pa.int8(), pa.string()))
        for i in range(0, 300, 100)
    ]
    path = tmp_path / "in" / "a.parquet"
    path.parent.mkdir()
    column = pa.chunked_array(chunks)
    pq.write_table(pa.table({"text": column, "kept": column}), path)
    with pytest.raises(pa.ArrowInvalid, match="not in range"):
        pq.read_table(path)
    code, output = invoke("run", basic_job(tmp_path, run__workers=1))
    assert code == 0, output
    result = pq.read_table(tmp_path / "out" / "a.parquet")
    assert result["input_ids"].to_pylist() == oracle_ids(text)
    assert result.schema.field("kept").type == DICTIONARY
    assert result["kept"].to_pylist() == text


def _assert_refused(tmp_path: Path, output: str, key: str, *words: str) -> None:
    assert "is invalid:" in output, output
    line = next(line for line in output.splitlines() if line.strip().startswith(key))
    assert str(tmp_path / "in" / "a.parquet") in line, output
    for word in words:
        assert word in line, output


@pytest.mark.parametrize("earlier_run", [False, True], ids=["new_output", "earlier_output"])
@pytest.mark.parametrize(
    ("names", "settings", "key"),  # the file's columns (the last one twice), the job, the key
    [
        pytest.param(["id", "text", "text"], {}, "input.text_column", id="text"),
        pytest.param(
            ["text", "pair", "pair"], {"input__pair_column": "pair"}, "input.pair_column", id="pair"
        ),
        pytest.param(["k", "text", "k"], {}, "output.keep_columns", id="kept_all"),
        pytest.param(
            ["k", "text", "k"], {"output__keep_columns": ["k"]}, "output.keep_columns", id="kept"
        ),
    ],
)
def test_two_columns_of_one_name_are_refused_before_any_work(
    tmp_path: Path, names: list[str], settings: dict, key: str, earlier_run: bool
) -> None:
    out = tmp_path / "out"
    job = basic_job(tmp_path, **settings)
    if earlier_run:  # an output directory a good run left: kept as it was
        write_parquet(
            tmp_path / "in" / "a.parquet", texts(10), extra={"k": [0] * 10, "pair": texts(10)}
        )
        assert invoke("run", job)[0] == 0
        before = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    columns = [pa.array(texts(10, seed=i)) for i in range(len(names))]
    (tmp_path / "in").mkdir(exist_ok=True)
    pq.write_table(pa.Table.from_arrays(columns, names=names), tmp_path / "in" / "a.parquet")
    for command in ("plan", "run"):
        code, output = invoke(command, job)
        assert code == 2, output
        _assert_refused(tmp_path, output, key, f'"{names[-1]}"')
    if not earlier_run:
        assert not out.exists()  # nothing written, no lock taken
        return
    assert current_holder(out / ".batchtok" / "lock") is None  # released
    assert summary(out)["status"] == "invalid"
    after = {p: p.stat().st_mtime_ns for p in out.rglob("*") if p.is_file()}
    changed = {p.name for p in after if before.get(p) != after[p]}
    assert changed <= {"_batchtok_summary.json", "lock"}, changed
    assert os.path.exists(out / "a.parquet")


def test_two_columns_of_one_name_that_are_not_read_are_no_problem(tmp_path: Path) -> None:
    text = texts(10, seed=3)
    columns = [pa.array([1] * 10), pa.array(text), pa.array([2] * 10)]
    (tmp_path / "in").mkdir()
    pq.write_table(
        pa.Table.from_arrays(columns, names=["k", "text", "k"]), tmp_path / "in" / "a.parquet"
    )
    code, output = invoke("run", basic_job(tmp_path, output__keep_columns=["text"]))
    assert code == 0, output
    result = pq.read_table(tmp_path / "out" / "a.parquet")
    assert result.column_names == ["text", "input_ids", "num_tokens"]
    assert result["input_ids"].to_pylist() == oracle_ids(text)


@pytest.mark.parametrize("column", ["text", "pair"])
@pytest.mark.parametrize("binary", [pa.binary(), pa.large_binary()], ids=str)
def test_a_binary_text_or_pair_column_is_refused_naming_the_types_read(
    tmp_path: Path, column: str, binary: pa.DataType
) -> None:
    """Bytes without a text type could be in any encoding: refused, saying what is read."""
    data = {"text": pa.array(texts(10)), "pair": pa.array(texts(10, seed=1))}
    data[column] = pa.array([t.encode() for t in texts(10, seed=2)], binary)
    write_input(tmp_path / "in" / "a.parquet", data)
    job = basic_job(tmp_path, input__pair_column="pair")
    code, output = invoke("run", job)
    assert code == 2, output
    _assert_refused(
        tmp_path,
        output,
        f"input.{column}_column",
        f"holds {binary}, expected strings (string, large_string or string_view, or a "
        "dictionary or extension type of strings)",
        "write the column as strings",
    )
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("encoding", ["DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY"])
@pytest.mark.parametrize("column", ["text", "kept"])
def test_a_dictionary_in_delta_pages_is_refused_before_any_work(
    tmp_path: Path, column: str, encoding: str
) -> None:
    """pyarrow cannot read a dictionary column back from DELTA pages: said at planning,
    naming the column's key, rather than failing every shard after the lock is taken."""
    data = {"text": pa.array(texts(10)), "kept": pa.array(texts(10, seed=1))}
    data[column] = data[column].dictionary_encode()
    path = tmp_path / "in" / "a.parquet"
    path.parent.mkdir()
    encodings = dict.fromkeys(data, encoding)
    pq.write_table(pa.table(data), path, use_dictionary=False, column_encoding=encodings)
    with pytest.raises(OSError, match="Not yet implemented"):
        pq.read_table(path, columns=[column])
    key = "input.text_column" if column == "text" else "output.keep_columns"
    for command in ("plan", "run"):
        code, output = invoke(command, basic_job(tmp_path))
        assert code == 2, output
        _assert_refused(
            tmp_path, output, key, f'"{column}"', f"is a dictionary stored in {encoding}"
        )
    assert not (tmp_path / "out").exists()
    code, output = invoke("run", basic_job(tmp_path, output__keep_columns=[]))
    if column == "kept":  # left out: the file is read
        assert code == 0, output
        ids = pq.read_table(tmp_path / "out" / "a.parquet")["input_ids"].to_pylist()
        assert ids == oracle_ids(texts(10))
    else:
        assert code == 2, output
