"""GPT-2's byte-level alphabet: every byte shown as a printable char, and back.

Shared by the ByteLevel normalizer, pre-tokenizer (which map) and decoder (which maps back).
"""

from __future__ import annotations

from itertools import accumulate


def _bytes_to_unicode() -> list[str]:
    """GPT-2's reversible byte -> printable char table."""
    keep = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = [""] * 256
    for b in keep:
        table[b] = chr(b)
    n = 0
    for b in range(256):
        if not table[b]:
            table[b] = chr(0x100 + n)
            n += 1
    return table


BYTE_TO_CHAR = _bytes_to_unicode()


CHAR_TO_BYTE = {c: b for b, c in enumerate(BYTE_TO_CHAR)}


# bytes.translate cannot map to str; a latin-1 round trip plus str.translate can.
_LATIN1_TO_BYTE_CHARS = {b: BYTE_TO_CHAR[b] for b in range(256)}


def byte_level_map(piece: str) -> str:
    """The piece's UTF-8 bytes, each shown as its GPT-2 char."""
    return piece.encode("utf-8").decode("latin-1").translate(_LATIN1_TO_BYTE_CHARS)


def byte_level_map_many(pieces: list[str]) -> list[str]:
    """``[byte_level_map(p) for p in pieces]``, mapped in one pass: each byte becomes one char,
    so the pieces are cut out of the mapped whole by their UTF-8 lengths. Many pieces are
    mapped by numpy (a table lookup per byte, the lengths from the code points), a few by
    ``str.translate``. A lone surrogate raises UnicodeEncodeError, as ``byte_level_map``."""
    if len(pieces) < _MANY:
        mapped = byte_level_map("".join(pieces))
        ends = list(accumulate(map(len, map(str.encode, pieces))))
    else:
        import numpy as np

        joined = "".join(pieces)
        if not joined:
            return list(pieces)
        data = np.frombuffer(joined.encode("utf-8"), np.uint8)
        mapped = _byte_chars().take(data).tobytes().decode("utf-32-le")
        # each char's UTF-8 length by its code point, summed over each piece
        points = np.frombuffer(joined.encode("utf-32-le"), np.uint32)
        sizes = 1 + (points >= 0x80).astype(np.int64) + (points >= 0x800) + (points >= 0x10000)
        ends = np.cumsum(sizes)[np.cumsum(np.fromiter(map(len, pieces), np.int64)) - 1]
        # (an empty piece ends where the one before it does; before any, at 0)
        empty = np.fromiter(map(bool, pieces), bool, len(pieces))
        if not empty.all():
            ends = np.where(empty, ends, 0)
            np.maximum.accumulate(ends, out=ends)
        ends = ends.tolist()
    return list(map(mapped.__getitem__, map(slice, [0, *ends[:-1]], ends)))


# fewer pieces than this are not worth numpy's calls
_MANY = 256


def _byte_chars():  # noqa: ANN202 - a numpy array (numpy is imported on first use)
    """The GPT-2 char of each byte, as its code point (uint32, little-endian), by byte."""
    global _BYTE_CHARS
    if _BYTE_CHARS is None:
        import numpy as np

        _BYTE_CHARS = np.array([ord(c) for c in BYTE_TO_CHAR], "<u4")
    return _BYTE_CHARS


_BYTE_CHARS = None
