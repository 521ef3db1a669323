"""The Normalizer interface (string -> string) and the alignment helpers it shares."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from ..alignment import Aligned
from ..utils.spec import Spec


class Normalizer:
    def normalize(self, text: str) -> str:
        raise NotImplementedError

    def normalize_str(self, text: str) -> str:
        """The library's name for :meth:`normalize`: ``text`` normalized."""
        return self.normalize(text)

    def leading_at_origin(self, text: str, count: int) -> int:
        """How many leading chars of ``normalize(text)`` `tokenizers` aligns to offset 0 of the
        input, when the first ``count`` chars of ``text`` are (the others never are).

        Metaspace's prepend_scheme "first" asks exactly this of the first fragment of a text.
        In `tokenizers` alignments never decrease along a normalized string, so the chars
        aligned to offset 0 always form a prefix and one count describes them.
        """
        raise NotImplementedError

    def align(self, s: Aligned) -> Aligned:
        """:meth:`normalize` with each char's alignment, as `tokenizers` computes it."""
        raise NotImplementedError(f"{type(self).__name__} tracks no alignment")

    def absent_chars(self) -> frozenset[str]:
        """Chars no output of :meth:`normalize` ever holds, whatever the input."""
        return frozenset()

    def steps(self) -> list[Normalizer]:
        """The normalizers this one applies in turn, as the file lists them: itself, except
        for a Sequence (``tokenizer.normalizer[i]`` in `tokenizers`). For explaining a text;
        encode never asks."""
        return [self]

    def describe(self) -> str:
        return type(self).__name__

    @classmethod
    def from_spec(cls, spec: Spec) -> Normalizer:
        """The normalizer a JSON object describes (here: one without fields)."""
        return cls()


def leading_through(changes: Iterable[int], count: int) -> int:
    """:meth:`Normalizer.leading_at_origin` of a `tokenizers` ``transform``.

    ``changes`` holds the change of each output char as the library's ``transform`` takes it:
    0 replaces the next input char, ``-n`` replaces it and removes ``n`` more, ``1`` inserts
    a char aligned to the input char before the current position (to offset 0 itself when
    there is none). The alignment is positional, whatever char an entry carries; consumed
    lazily, up to the first output char that stems from past the prefix.
    """
    pos = 0
    out = 0
    for change in changes:
        if change > 0:
            if pos > count:
                break
        else:
            if pos >= count:
                break
            pos += 1 - change
        out += 1
    return out


def per_char(normalize: Callable[[str], str], text: str, count: int) -> int:
    """:meth:`Normalizer.leading_at_origin` of a normalizer that maps each char on its own to
    chars all aligned to it (filter, map, lowercase, byte-level, CJK padding)."""
    return len(normalize(text[:count]))
