"""GPT-2's byte-level alphabet: every byte shown as a printable char, and back.

Shared by the ByteLevel normalizer, pre-tokenizer (which map) and decoder (which maps back).
"""

from __future__ import annotations


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
    so the pieces are cut out of the mapped whole by their UTF-8 lengths."""
    mapped = byte_level_map("".join(pieces))
    out = []
    at = 0
    for size in map(len, map(str.encode, pieces)):
        out.append(mapped[at : at + size])
        at += size
    return out
