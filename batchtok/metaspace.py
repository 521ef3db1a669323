"""Metaspace: the SentencePiece way of showing spaces, one transform for both spellings.

tokenizer.json writes it two ways, and `tokenizers` does not treat them alike:

* a ``Metaspace`` pre-tokenizer replaces ``" "`` by the replacement, then prepends the
  replacement unless the piece already starts with it (``always``), or only for the piece at the
  very start of the text (``first``);
* a normalizer ``Sequence[Prepend(r), Replace(" " -> r)]`` (the Llama-2 layout) runs on every
  fragment between added tokens and always prepends, even before a leading space.

:class:`Metaspace` carries both behaviours through two parameters: ``prepend_scheme`` (where the
prepend applies) and ``skip_if_leading`` (whether a leading replacement suppresses it).
"""

from __future__ import annotations

from typing import SupportsIndex, TypeAlias

from .utils.spec import Spec

PREPEND_SCHEMES = ("always", "first", "never")

# How many leading chars of a text (a fragment between added tokens, or its first piece) stem
# from offset 0 of the input. An int (a bool for "all or nothing"), or the added vocabulary's
# LeadingCount, which computes the exact count only when asked: only prepend_scheme "first"
# looks at it, through its truth value or operator.index.
AtStart: TypeAlias = SupportsIndex


class Metaspace:
    """Replace spaces by ``replacement``, prepend it per ``prepend_scheme``, optionally split.

    >>> Metaspace("▁", "first", split=False).apply(" Hello world", at_start=True)
    '▁Hello▁world'
    >>> Metaspace("▁", "always", split=False, skip_if_leading=False).apply(" Hello", True)
    '▁▁Hello'
    """

    def __init__(
        self, replacement: str, prepend_scheme: str, split: bool, skip_if_leading: bool = True
    ) -> None:
        if prepend_scheme not in PREPEND_SCHEMES:
            raise ValueError(f"unknown prepend_scheme {prepend_scheme!r}")
        self.replacement = replacement
        self.prepend_scheme = prepend_scheme
        self.split = split
        self.skip_if_leading = skip_if_leading

    def apply(self, text: str, at_start: AtStart) -> str:
        """The transformed text; ``at_start``: the text begins at offset 0 of the input."""
        if not text:
            return text
        r = self.replacement
        out = text.replace(" ", r)
        if self.prepend_scheme == "never" or (self.prepend_scheme == "first" and not at_start):
            return out
        if self.skip_if_leading and out.startswith(r):
            return out
        return r + out

    def pieces(self, text: str, at_start: AtStart) -> list[str]:
        """Transform, then split before each replacement char if ``split`` (MergedWithNext)."""
        out = self.apply(text, at_start)
        if not self.split or not out:
            return [out] if out else []
        r = self.replacement
        head, *rest = out.split(r)
        pieces = list(map(r.__add__, rest))
        if head:
            pieces.insert(0, head)
        return pieces

    def pieces_counted(self, text: str, count: int) -> list[tuple[str, int]]:
        """:meth:`pieces` of a text whose first ``count`` chars stem from offset 0 of the input,
        each with the same count for itself (prepend_scheme "first" prepends iff count > 0)."""
        out = self.apply(text, count > 0)
        if count and len(out) > len(text):
            count += 1  # the prepended char is aligned to the first one
        if not self.split or not out:
            return [(out, count)] if out else []
        starts = self._piece_starts(out)
        return [(out[a:b], max(0, min(b, count) - a)) for a, b in zip(starts, starts[1:])]

    def _piece_starts(self, out: str) -> list[int]:
        """Where the pieces of a non-empty transformed text start, and its length."""
        r = self.replacement
        starts = [0]
        at = out.find(r, 1)
        while at >= 0:
            starts.append(at)
            at = out.find(r, at + 1)
        starts.append(len(out))
        return starts

    def decode_chain(self, tokens: list[str]) -> list[str]:
        """Replacement chars back to spaces; in the first token they are dropped instead,
        unless nothing was ever prepended (``never``)."""
        r = self.replacement
        out = []
        for i, token in enumerate(tokens):
            if i == 0 and self.prepend_scheme != "never":
                out.append(token.replace(r, ""))
            else:
                out.append(token.replace(r, " "))
        return out

    def describe(self) -> str:
        extra = "" if self.skip_if_leading else ", skip_if_leading=False"
        return (
            f"Metaspace({self.replacement!r}, prepend_scheme={self.prepend_scheme}, "
            f"split={self.split}{extra})"
        )


def read_metaspace(spec: Spec) -> Metaspace:
    """The Metaspace fields, shared by the pre-tokenizer and the decoder."""
    replacement = spec.string("replacement")
    if len(replacement) != 1:
        raise spec.fail("replacement", replacement, "expected exactly one character")
    scheme = spec.choice("prepend_scheme", ("always", "first", "never"), "always")
    split = spec.boolean("split", True)
    legacy = spec.boolean("add_prefix_space", None)
    spec.raw("str_rep", None)  # legacy, ignored by tokenizers too
    if legacy is False and scheme != "never":
        raise spec.fail(
            "add_prefix_space", False, "add_prefix_space does not match declared prepend_scheme"
        )
    return Metaspace(replacement, scheme, split)
