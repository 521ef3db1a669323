"""The JSON Lines reader against a reference reading written here, on generated files.

Files are drawn from lines of every kind: objects with and without a string text field, valid
JSON of other kinds, JSON nested past Python's recursion limit, random bytes, invalid UTF-8,
lone surrogates, whitespace-only lines of every whitespace and line-ending character (``\\r``,
``\\x0b``, ``\\x0c``, ``\\x1c``-``\\x1e``, U+0085, U+2028, U+2029, NUL, a BOM) and those characters
put anywhere in a valid line; lines end in ``\\n`` or ``\\r\\n``, the last maybe in nothing; the
file is stored plain (cut in blocks of a few bytes, so that blocks end between any two lines),
gzip- or zstd-compressed (in one member or frame, or two).

:func:`reference` is the definition the runner must agree with, as simply as it can be said:
lines are what lies between ``\\n`` bytes; a line of only space, tab and ``\\r`` is no row; every
other line is one row, good if it is UTF-8 holding (after an optional BOM) one JSON object, by
Python's :mod:`json` at any depth and with integers of any length, whose ``text`` is a string
or null, else bad with its line number. Planning's row count, the rows read, their kept values,
and the bad rows with their line numbers must all equal the reference's; nothing else may come
out of the reader (a corrupt compressed file may fail planning with an error that the planner
reports as "cannot read").
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import json.scanner
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pyarrow as pa
from hypothesis import given
from hypothesis import strategies as st

from batchtok.runner.inputs import jsonl as jsonl_module
from batchtok.runner.inputs.jsonl import open_stream, read_rows, scan_blocks
from tests.support.tier import FULL, long_examples

FIELDS = ("text", "meta")  # the text field, then a kept field
SCHEMA = pa.schema([pa.field(name, pa.string()) for name in FIELDS])
# what planning reports as "cannot read PATH" (see inputs.read_jsonl_input)
PLANNING_ERRORS = (OSError, pa.ArrowException, EOFError)
ODD_CHARACTERS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029\x00\ufeff\t "
# valid JSON that json.loads refuses: integers longer than int() converts by default
LONG_NUMBERS = ["1" + "0" * 4300, "-" + "9" * 5000, "[" + "3" * 4301 + ", 1.5]"]
DEPTHS = [0, 1, 2, 50, 998, 999, 1000, 1001, 3000] + ([20_000] if FULL else [])


# -- the reference reading ----------------------------------------------------------------------


@dataclass(frozen=True)
class Row:
    line: int
    values: tuple[str | None, ...]  # the kept values; all None for a bad row
    bad: str  # the kind of bad row ("" for a good one): a phrase its reason holds


@contextlib.contextmanager
def _unbounded() -> Iterator[None]:
    """Room for the pure-Python json scanner (whose Python-to-Python calls take no C stack),
    and for integers of any length."""
    limit, digits = sys.getrecursionlimit(), sys.get_int_max_str_digits()
    sys.setrecursionlimit(max(limit, 1_000_000))
    sys.set_int_max_str_digits(0)
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)
        sys.set_int_max_str_digits(digits)


def _python_decoder() -> json.JSONDecoder:
    """json's decoder with its pure-Python scanner (numbers of ASCII digits, as the C one has)."""
    decoder = json.JSONDecoder()
    pattern = json.scanner.NUMBER_RE
    json.scanner.NUMBER_RE = re.compile(pattern.pattern, (pattern.flags & ~re.UNICODE) | re.ASCII)
    try:
        decoder.scan_once = json.scanner.py_make_scanner(decoder)  # type: ignore[attr-defined]
    finally:
        json.scanner.NUMBER_RE = pattern
    return decoder


DECODER = _python_decoder()


def reference_dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` said plainly: ", " and ": " between items."""
    if isinstance(value, list):
        return "[" + ", ".join([reference_dumps(item) for item in value]) + "]"
    if isinstance(value, dict):
        items = [
            json.dumps(k, ensure_ascii=False) + ": " + reference_dumps(v) for k, v in value.items()
        ]
        return "{" + ", ".join(items) + "}"
    return json.dumps(value, ensure_ascii=False)


def _has_surrogate(text: str) -> bool:
    return any("\ud800" <= c <= "\udfff" for c in text)


def reference_row(number: int, line: bytes) -> Row:
    bad = (None,) * len(FIELDS)
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        return Row(number, bad, "invalid UTF-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        obj = DECODER.decode(text)
    except ValueError:
        return Row(number, bad, "not JSON")
    if not isinstance(obj, dict):
        return Row(number, bad, "not a JSON object")
    if "text" not in obj:
        return Row(number, bad, "no field 'text'")
    if obj["text"] is not None and not isinstance(obj["text"], str):
        return Row(number, bad, "not a string")
    values = tuple(
        None
        if obj.get(f) is None
        else obj[f]
        if isinstance(obj[f], str)
        else reference_dumps(obj[f])
        for f in FIELDS
    )
    if any(v is not None and _has_surrogate(v) for v in values):
        return Row(number, bad, "lone surrogate")
    return Row(number, values, "")


def reference(data: bytes) -> list[Row]:
    """The rows of a JSON Lines file's (decompressed) bytes."""
    lines = data.split(b"\n")
    if lines[-1] == b"":  # a final line break ends the last line; it starts none
        lines.pop()
    with _unbounded():
        return [
            reference_row(number, line)
            for number, line in enumerate(lines, start=1)
            if not all(byte in b" \t\r" for byte in line)
        ]


# -- the runner's reading -----------------------------------------------------------------------


def runner_rows(stream: Any, first_line: int, batch_rows: int) -> list[tuple[tuple, str]]:
    """(kept values, bad reason) of each row read from ``stream``."""
    out = []
    for batch, bad in read_rows(stream, first_line, FIELDS, 1, batch_rows, SCHEMA):
        columns = [batch.column(i).to_pylist() for i in range(len(FIELDS))]
        for i in range(batch.num_rows):
            out.append((tuple(column[i] for column in columns), bad.get(i, "")))
    return out


def agree(got: list[tuple[tuple, str]], want: list[Row]) -> None:
    assert len(got) == len(want), (got, want)
    for (values, reason), row in zip(got, want):
        assert values == row.values, (values, reason, row)
        if row.bad:
            assert reason.startswith(f"line {row.line}: ") and row.bad in reason, (reason, row)
        else:
            assert reason == "", (reason, row)


def compress(data: bytes, codec: str | None) -> bytes:
    if codec == "gzip":
        return gzip.compress(data)
    if codec == "zstd":
        sink = pa.BufferOutputStream()
        with pa.CompressedOutputStream(sink, "zstd") as out:
            out.write(data)
        return sink.getvalue().to_pybytes()
    return data


# -- drawing files ------------------------------------------------------------------------------

_TEXT = st.text(
    st.characters(codec="utf-8") | st.sampled_from(ODD_CHARACTERS + '\n"\\'), max_size=12
)
_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | _TEXT
)
_JSON = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=8,
)


@st.composite
def nested(draw: st.DrawFn) -> str:
    """A JSON text of a value wrapped in arrays or one-key objects to a drawn depth."""
    inner = json.dumps(draw(_JSON), ensure_ascii=draw(st.booleans()))
    if draw(st.integers(0, 9)) == 0:
        inner = draw(st.sampled_from(LONG_NUMBERS))
    depth = draw(st.sampled_from(DEPTHS))
    if draw(st.booleans()):
        return "[" * depth + inner + "]" * depth
    return '{"k": ' * depth + inner + "}" * depth


@st.composite
def object_line(draw: st.DrawFn) -> bytes:
    """A JSON object line, most often a good row: text a string (sometimes not, or missing),
    a kept field of any JSON, nested to any depth, JSON whitespace around its items."""
    parts = []
    text = draw(st.sampled_from(["string"] * 6 + ["null", "number", "missing", "surrogate"]))
    if text == "string":
        parts.append('"text": ' + json.dumps(draw(_TEXT), ensure_ascii=draw(st.booleans())))
    elif text == "null":
        parts.append('"text": null')
    elif text == "number":
        parts.append('"text": 12')
    elif text == "surrogate":
        parts.append('"text": "a\\ud800"')
    if draw(st.booleans()):
        parts.append('"meta": ' + draw(nested()))
    if draw(st.booleans()):
        parts.append('"other": ' + draw(nested()))  # not kept, but read
    order = draw(st.permutations(parts))
    space = st.text(st.sampled_from(" \t\r"), max_size=2)
    body = draw(space) + "{" + ("," + draw(space)).join(order) + "}" + draw(space)
    if draw(st.booleans()):
        body = "\ufeff" + body
    return body.encode("utf-8")


@st.composite
def odd_line(draw: st.DrawFn) -> bytes:
    """A line of no JSON object: whitespace of every kind, random bytes, other JSON (deep
    arrays too), invalid UTF-8, or a good line with an odd character put anywhere in it."""
    kind = draw(st.sampled_from(["whitespace", "bytes", "json", "deep", "utf8", "spliced"]))
    if kind == "whitespace":
        return draw(st.text(st.sampled_from(ODD_CHARACTERS), max_size=4)).encode("utf-8")
    if kind == "bytes":
        return draw(st.binary(max_size=24))
    if kind == "json":
        return json.dumps(draw(_JSON)).encode("utf-8")
    if kind == "deep":
        text = draw(nested())
        return (
            text[: draw(st.integers(0, len(text)))].encode("utf-8")
            if draw(st.booleans())
            else text.encode()
        )
    line = draw(object_line())
    at = draw(st.integers(0, len(line)))
    if kind == "utf8":
        return (
            line[:at]
            + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"]))
            + line[at:]
        )
    return line[:at] + draw(st.sampled_from(ODD_CHARACTERS)).encode("utf-8") + line[at:]


@st.composite
def jsonl_data(draw: st.DrawFn) -> bytes:
    lines = draw(st.lists(object_line() | odd_line(), max_size=12))
    ends = [draw(st.sampled_from([b"\n", b"\n", b"\r\n"])) for _ in lines]
    if lines and draw(st.booleans()):
        ends[-1] = b""
    return b"".join(line + end for line, end in zip(lines, ends))


# -- the properties -----------------------------------------------------------------------------


def _chunks(size: int) -> Any:
    """Streams read ``size`` bytes at a time, so that lines span chunks."""
    return mock.patch.object(jsonl_module, "READ_CHUNK", size)


_CHUNK = st.sampled_from([1, 2, 3, 7, 64, 1 << 20])


@long_examples(400)
@given(jsonl_data(), st.integers(1, 80), st.integers(1, 4), _CHUNK)
def test_a_plain_files_blocks_and_rows_are_the_references(
    data: bytes, block_bytes: int, batch_rows: int, chunk: int
) -> None:
    with _chunks(chunk):
        _plain_file_agrees(data, block_bytes, batch_rows)


def _plain_file_agrees(data: bytes, block_bytes: int, batch_rows: int) -> None:
    want = reference(data)
    blocks = scan_blocks(io.BytesIO(data), None, block_bytes)
    assert blocks and blocks[0].offset == 0 and blocks[0].first_line == 1
    assert sum(b.length for b in blocks) == len(data)
    assert sum(b.rows for b in blocks) == len(want)
    at = 0
    for block in blocks:  # each block read on its own, as a worker reads its shard's blocks
        got = runner_rows(
            io.BytesIO(data[block.offset : block.offset + block.length]),
            block.first_line,
            batch_rows,
        )
        assert len(got) == block.rows
        agree(got, want[at : at + block.rows])
        at += block.rows


@long_examples(200)
@given(jsonl_data(), st.sampled_from(["gzip", "zstd"]), st.integers(1, 4), _CHUNK, st.integers(0))
def test_a_compressed_files_block_and_rows_are_the_references(
    data: bytes, codec: str, batch_rows: int, chunk: int, split: int
) -> None:
    cut = split % (len(data) + 1)  # two gzip members or zstd frames when not 0
    stored = (
        compress(data[:cut], codec) + compress(data[cut:], codec) if cut else compress(data, codec)
    )
    want = reference(data)
    with _chunks(chunk):
        (block,) = scan_blocks(io.BytesIO(stored), codec, 1 << 16)
        assert (block.offset, block.length, block.first_line) == (0, len(stored), 1)
        assert (block.rows, block.data_bytes) == (len(want), len(data))
        agree(runner_rows(open_stream(io.BytesIO(stored), codec), 1, batch_rows), want)


@long_examples(200)
@given(jsonl_data(), st.sampled_from(["gzip", "zstd"]), st.data())
def test_a_corrupt_compressed_file_fails_planning_or_reads_as_planned(
    data: bytes, codec: str, draw: st.DataObject
) -> None:
    stored = bytearray(compress(data, codec))
    if draw.draw(st.booleans()):
        del stored[draw.draw(st.integers(0, len(stored))) :]
    else:
        at = draw.draw(st.integers(0, len(stored) - 1))
        stored[at] ^= draw.draw(st.integers(1, 255))
    try:
        (block,) = scan_blocks(io.BytesIO(bytes(stored)), codec, 1 << 16)
    except PLANNING_ERRORS:
        return  # the planner's "cannot read PATH: ..." (exit 2)
    got = runner_rows(open_stream(io.BytesIO(bytes(stored)), codec), 1, 3)
    assert len(got) == block.rows
    assert all(reason == "" or reason.startswith("line ") for _, reason in got)
