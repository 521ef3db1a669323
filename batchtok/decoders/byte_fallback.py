"""ByteFallback: runs of ``<0xHH>`` tokens back to their bytes."""

from __future__ import annotations

import re

from .base import Decoder

# What Rust's u8::from_str_radix(_, 16) accepts in the two chars after "<0x": a leading "+" too.
_BYTE_HEX = re.compile(r"\+?[0-9a-fA-F]+")


class ByteFallback(Decoder):
    """Runs of ``<0xHH>`` tokens become their bytes; an invalid run becomes U+FFFD per byte."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        run = bytearray()
        for token in tokens:
            byte = _fallback_byte(token)
            if byte is not None:
                run.append(byte)
                continue
            if run:
                out.append(_bytes_or_replacement(run))
                run = bytearray()
            out.append(token)
        if run:
            out.append(_bytes_or_replacement(run))
        return out


def _fallback_byte(token: str) -> int | None:
    """The byte of a ``<0xHH>`` token, read as the library reads it (6 UTF-8 bytes)."""
    if not (token.startswith("<0x") and token.endswith(">")):
        return None
    raw = token.encode("utf-8")
    if len(raw) != 6:
        return None
    digits = raw[3:5].decode("utf-8", "replace")
    if not _BYTE_HEX.fullmatch(digits):
        return None
    return int(digits, 16)


def _bytes_or_replacement(run: bytearray) -> str:
    try:
        return run.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd" * len(run)
