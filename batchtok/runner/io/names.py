"""File names as they are shown and written as JSON.

POSIX file names are bytes. Python carries a name that is not UTF-8 as a ``str`` holding one
surrogate (U+DC80..U+DCFF) per undecodable byte (``os.fsdecode``'s ``surrogateescape``), and
batchtok keeps that ``str`` for opening the file, so an output's name mirrors its input's bytes.
Such a ``str`` cannot be encoded as UTF-8, and a lone surrogate escape in JSON is refused by
strict readers: whatever is shown (logs, messages) or written as JSON (the summary, Parquet
metadata, records, ``plan --json``) goes through :func:`escaped` first.
"""

from __future__ import annotations

import re
from typing import Any

_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    # U+DC80..U+DCFF: a byte of a file name that is not UTF-8 (os.fsdecode's surrogateescape)
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def escaped(text: str) -> str:
    """``text`` as it can be shown and written as UTF-8: each byte of a file name that is not
    UTF-8 as ``\\xNN`` (``caf\\xe9.parquet``), any other lone surrogate as ``\\uNNNN``.
    POSIX names are bytes, carried as Python carries them (surrogate-escaped); only what is
    shown or written as JSON is escaped, never the name used to open the file."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE.sub(_escape, text)
    return text


def escaped_json(value: Any) -> Any:
    """A JSON document (dicts, lists, strings...) with every string :func:`escaped`, so that
    it encodes as UTF-8 and any JSON reader accepts it (a lone surrogate escape is refused by
    strict ones)."""
    if isinstance(value, str):
        return escaped(value)
    if isinstance(value, dict):
        return {escaped(k) if isinstance(k, str) else k: escaped_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [escaped_json(v) for v in value]
    return value
