"""JSON Lines inputs: planning blocks, hashing them, and reading their rows.

A JSON Lines file (``.jsonl``, ``.json``, plain or compressed ``.gz`` / ``.zst``) holds one JSON
object per line; the text is the field ``input.text_column`` names. It is read line by line
as UTF-8 and parsed as JSON (at any depth: :mod:`.deep_json`), so that one broken line is one
bad row (with its line number) and not a failed file.

**What a line and a row are** is decided here once, for planning and reading alike: lines end
at ``\n`` only (as JSON Lines and :mod:`json` have it; a ``\r`` before it is JSON whitespace,
and the other characters ``str.splitlines`` breaks at, such as form feed, vertical tab, U+0085
or U+2028, are no line break), and a line is a row unless it holds nothing but JSON whitespace
(space, tab, ``\r``): a line holding a form feed is a row, and a bad one.

**Blocks play the part of row groups.** An uncompressed file is cut, at planning, into blocks
of about ``block_bytes`` that end at a line break; a block is the unit of hashing (its bytes'
xxh3), of shards (whole blocks) and of output row groups. A compressed file cannot be entered
in the middle, so it is one block and one shard. Planning reads each file once to find the
line breaks and count the rows; that costs a sequential read, small beside encoding. Every
file has at least one block: an empty file (or a compressed one holding nothing) has one block
of no rows, so it is an input with no rows and its output an empty Parquet file.

Kept fields: the text (and pair) field always, and each field ``output.keep_columns`` names,
as a string column: a string value as it is, any other value as its JSON text, a missing one
as null. ``"all"`` keeps only the text (and pair) field, as lines need not share their fields.
"""

from __future__ import annotations

import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

import pyarrow as pa

from . import deep_json

READ_CHUNK = 1 << 20
PLAIN_SUFFIXES = (".jsonl", ".json", ".ndjson")
COMPRESSIONS = {".gz": "gzip", ".zst": "zstd"}
LINE_BREAK = b"\n"
JSON_WHITESPACE = b" \t\r\n"  # RFC 8259's; nothing else makes a line blank


def jsonl_compression(path: str) -> str | None | bool:
    """``None`` for a plain JSON Lines file, ``"gzip"``/``"zstd"`` for a compressed one,
    ``False`` for any other file."""
    name = path.lower()
    for suffix, codec in COMPRESSIONS.items():
        if name.endswith(suffix) and name[: -len(suffix)].endswith(PLAIN_SUFFIXES):
            return codec
    return None if name.endswith(PLAIN_SUFFIXES) else False


def is_jsonl(path: str) -> bool:
    return jsonl_compression(path) is not False


def output_name(rel: str) -> str:
    """The output's name for an input's: ``a/b.jsonl.gz`` -> ``a/b.parquet``."""
    codec = jsonl_compression(rel)
    if codec is False:
        return rel
    stem = rel
    if codec is not None:
        stem = stem.rsplit(".", 1)[0]
    return stem.rsplit(".", 1)[0] + ".parquet"


@dataclass(frozen=True)
class Block:
    """A run of whole lines of a file: where it is, how many rows (non-blank lines) it holds,
    and the number (1-based) of its first line."""

    offset: int
    length: int
    rows: int
    first_line: int
    data_bytes: int = -1  # decompressed (-1: ``length``, a plain file's block)

    @property
    def text_bytes(self) -> int:
        """The bytes its lines hold once decompressed: an estimate of its text."""
        return self.length if self.data_bytes < 0 else self.data_bytes


def split_lines(data: bytes) -> tuple[list[bytes], bytes]:
    """The whole lines of ``data`` (each without its line break), and what follows the last
    line break (the start of a line, or a last line without its break)."""
    lines = data.split(LINE_BREAK)
    return lines, lines.pop()


def is_row(line: bytes) -> bool:
    """Whether a line is a row: it holds more than JSON whitespace."""
    return bool(line.strip(JSON_WHITESPACE))


def _rows_in(data: bytes) -> tuple[int, int]:
    """(lines, rows) in ``data``, a run of whole lines (the last may lack its line break)."""
    lines, tail = split_lines(data)
    if tail:
        lines.append(tail)
    return len(lines), sum(map(is_row, lines))


class _Borrowed(io.RawIOBase):
    """Reads ``raw`` without owning it: Arrow closes the file it wraps when it is done, and
    the caller still has checks to make on it."""

    def __init__(self, raw: IO[bytes]) -> None:
        self.raw = raw

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        return self.raw.readinto(buffer)  # type: ignore[attr-defined]


class _Counted:
    """A stream that counts the bytes read from it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream, self.bytes = stream, 0

    def read(self, size: int) -> bytes:
        data = self.stream.read(size)
        self.bytes += len(data)
        return data


def open_stream(raw: IO[bytes], compression: str | None) -> IO[bytes]:
    """The decompressed bytes of ``raw`` from where it stands; ``raw`` stays open."""
    if compression is None:
        return raw
    return pa.CompressedInputStream(pa.PythonFile(_Borrowed(raw), mode="r"), compression)


def iter_lines(stream: IO[bytes]) -> Iterator[bytes]:
    """The lines of ``stream`` (see :func:`split_lines`), each without its line break, read a
    chunk at a time: Arrow's decompressing streams have no ``readline``. A line longer than a
    chunk is gathered in pieces, joined once."""
    pieces: list[bytes] = []  # the line begun in earlier chunks
    while chunk := stream.read(READ_CHUNK):
        lines, tail = split_lines(chunk)
        if lines and pieces:
            lines[0] = b"".join([*pieces, lines[0]])
            pieces = []
        yield from lines
        if tail:
            pieces.append(tail)
    if pieces:
        yield b"".join(pieces)


def scan_blocks(raw: IO[bytes], compression: str | None, block_bytes: int) -> list[Block]:
    """The blocks of a file opened in binary mode (read from its start)."""
    if compression is not None:  # one block; its rows counted through the decompressor
        stream = _Counted(open_stream(raw, compression))
        rows = sum(map(is_row, iter_lines(stream)))
        size = raw.seek(0, os.SEEK_END)
        return [Block(0, size, rows, 1, stream.bytes)]
    blocks: list[Block] = []
    offset, line = 0, 1
    while True:
        data = raw.read(block_bytes)
        if not data:
            return blocks or [Block(0, 0, 0, 1)]
        if not data.endswith(LINE_BREAK):
            data += raw.readline()
        lines, rows = _rows_in(data)
        blocks.append(Block(offset, len(data), rows, line))
        offset, line = offset + len(data), line + lines


def block_bytes_of(raw: IO[bytes], block: Block) -> bytes:
    raw.seek(block.offset)
    data = raw.read(block.length)
    if len(data) != block.length:
        raise OSError(f"{getattr(raw, 'name', 'input')}: shorter than when it was planned")
    return data


def _value(obj: dict, name: str) -> str | None:
    value = obj.get(name)
    if value is None or isinstance(value, str):
        return value
    return deep_json.dumps(value)


def _json_kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float | deep_json.LongNumber):
        return "a number"
    return "an array" if isinstance(value, list) else "an object"


def _parse(line: bytes, number: int, fields: tuple[str, ...], texts: int) -> tuple[list, str]:
    """The kept values of one line (a row, without its line break), and why it is a bad row
    ("" if it is not). The first ``texts`` fields are the text (and pair), which must be
    strings."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:  # decoded here: json.loads would guess UTF-16 or -32
        return [None] * len(fields), f"line {number}: invalid UTF-8 at byte {exc.start}"
    try:
        obj = deep_json.loads(text.removeprefix("\ufeff"))  # a BOM before a line is let be
    except ValueError as exc:
        return [None] * len(fields), f"line {number}: not JSON ({exc})"
    if not isinstance(obj, dict):
        return [None] * len(fields), f"line {number}: {_json_kind(obj)}, not a JSON object"
    values = [_value(obj, name) for name in fields]
    for name in fields[:texts]:
        if name not in obj:
            return values, f"line {number}: no field {name!r}"
        if not isinstance(obj[name], str | None):
            kind = _json_kind(obj[name])
            return values, f"line {number}: field {name!r} holds {kind}, not a string"
    for name, value in zip(fields, values):
        if value is not None:
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:  # "\ud800": valid JSON, but not text
                return values, f"line {number}: field {name!r} holds a lone surrogate"
    return values, ""


def read_rows(
    stream: IO[bytes],
    first_line: int,
    fields: tuple[str, ...],
    texts: int,
    batch_rows: int,
    schema: pa.Schema,
    lines: bool = False,
) -> Iterator[tuple[pa.RecordBatch, dict[int, str]]]:
    """Batches of at most ``batch_rows`` rows from the lines of ``stream`` (to its end), as
    columns ``fields`` typed by ``schema``, each with {row in the batch: why it is bad}. A bad
    row's values are null. ``lines``: each row's line number (from ``first_line``) as one
    more column, the schema's last."""
    columns: list[list[Any]] = [[] for _ in range(len(fields) + lines)]
    bad: dict[int, str] = {}
    number = first_line
    for line in iter_lines(stream):
        if not is_row(line):
            number += 1
            continue
        values, reason = _parse(line, number, fields, texts)
        if reason:
            bad[len(columns[0])] = reason
            values = [None] * len(fields)
        for column, value in zip(columns, values):
            column.append(value)
        if lines:
            columns[-1].append(number)
        number += 1
        if len(columns[0]) == batch_rows:
            yield pa.RecordBatch.from_arrays(columns, schema=schema), bad
            columns, bad = [[] for _ in columns], {}
    if columns[0]:
        yield pa.RecordBatch.from_arrays(columns, schema=schema), bad
