"""The one error type a tokenizer file can raise at load time."""

from __future__ import annotations

from typing import Any


class TokenizerFileError(ValueError):
    """A tokenizer.json that batchtok cannot reproduce exactly.

    ``path`` is a JSON path such as ``pre_tokenizer.pretokenizers[0].behavior``, ``value`` the
    offending value (abbreviated in the message) and ``reason`` why it is refused.
    """

    def __init__(self, path: str, value: Any, reason: str) -> None:
        self.path = path or "$"
        self.value = value
        self.reason = reason
        super().__init__(f"{self.path}: {reason} (value: {_abbreviate(value)})")


class NotReproducibleError(TokenizerFileError):
    """A file `tokenizers` reads without a serde error, refused because batchtok cannot give
    what it gives: ids at random or as its hash order picks, or a panic. Where tokenizers reads
    a component by trying one struct after another, it stops at the struct this is raised for,
    so no later one is tried."""


class EncodeError(ValueError):
    """Raised at encode time where `tokenizers` raises too (for example an unk token absent
    from the vocabulary, needed by this input)."""


def _abbreviate(value: Any, limit: int = 120) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class DecodeError(ValueError):
    """Raised at decode time where `tokenizers` fails (panics) too."""
