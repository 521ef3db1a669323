"""BertNormalizer: clean text, pad CJK chars, strip accents, lowercase."""

from __future__ import annotations

import functools
import re

from .. import alignment
from .._tables import bert as bert_tables
from ..alignment import Aligned
from ..utils.spec import Spec
from ..utils.translate import SparseTranslate
from .base import Normalizer, per_char
from .strip import ranges_table
from .unicode import NFD, Lowercase, UnicodeVersionError

# BertNormalizer's CJK ranges (U+2B820-2B91F is deliberately absent, as in the library).
_CJK = re.compile(
    "([\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f\U0002b920-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f])"
)


@functools.cache
def _translations() -> tuple[dict[int, str | None], dict[int, None]]:
    """(clean_text's table, the non-spacing marks' table): built on first use, not at import
    (expanding the ranges takes 40 ms, which every process that never meets BERT would pay)."""
    clean = {
        **ranges_table(bert_tables.CLEAN_DELETES, None),
        **ranges_table(bert_tables.CLEAN_SPACES, " "),
    }
    return clean, ranges_table(bert_tables.NONSPACING_MARKS, None)


@functools.cache
def _sparse() -> tuple[SparseTranslate, SparseTranslate]:
    """The two tables as :class:`SparseTranslate`: text holds few of their chars (newlines,
    tabs, marks), and ``str.translate`` looks up every char of non-ASCII text."""
    clean, nonspacing = _translations()
    return SparseTranslate(clean), SparseTranslate(nonspacing)


class BertNormalizer(Normalizer):
    """clean_text, then CJK padding, then NFD + non-spacing-mark removal, then lowercase, with
    the library's own char classes (read off the oracle)."""

    def __init__(
        self, clean_text: bool, handle_chinese_chars: bool, strip_accents: bool, lowercase: bool
    ) -> None:
        self.clean_text, self.handle_chinese_chars = clean_text, handle_chinese_chars
        self.strip_accents, self.lowercase = strip_accents, lowercase
        self._nfd = NFD() if strip_accents else None
        self._lower = Lowercase() if lowercase else None

    def normalize(self, text: str) -> str:
        clean, nonspacing = _sparse()
        if self.clean_text:
            # str.translate has a fast path for ASCII text
            text = text.translate(_translations()[0]) if text.isascii() else clean(text)
        if self.handle_chinese_chars and not text.isascii():
            text = _CJK.sub(r" \1 ", text)
        if self._nfd is not None and not text.isascii():
            text = nonspacing(self._nfd.normalize(text))
        if self._lower is not None:
            text = self._lower.normalize(text)
        return text

    def leading_at_origin(self, text: str, count: int) -> int:
        # The same steps as normalize, each per char except NFD.
        clean, nonspacing = _translations()
        if self.clean_text:
            count = len(text[:count].translate(clean))
            text = text.translate(clean)
        if self.handle_chinese_chars:
            count = len(_CJK.sub(r" \1 ", text[:count]))
            text = _CJK.sub(r" \1 ", text)
        if self._nfd is not None:
            count = self._nfd.leading_at_origin(text, count)
            text = self._nfd.normalize(text)
            count = len(text[:count].translate(nonspacing))
        if self._lower is not None:
            count = per_char(self._lower.normalize, text, count)
        return count

    def align(self, s: Aligned) -> Aligned:
        clean, nonspacing = _translations()
        if self.clean_text:
            s = alignment.filter_chars(s, lambda ch: clean.get(ord(ch), "") is not None)
            s = alignment.map_chars(s, lambda ch: clean.get(ord(ch)) or ch)
        if self.handle_chinese_chars and not s.text.isascii():
            s = alignment.per_char(s, lambda ch: _CJK.sub(r" \1 ", ch))
        if self._nfd is not None:
            s = self._nfd.align(s)
            s = alignment.filter_chars(s, lambda ch: ord(ch) not in nonspacing)
        if self._lower is not None:
            s = self._lower.align(s)
        return s

    def describe(self) -> str:
        return (
            f"BertNormalizer(clean_text={self.clean_text}, "
            f"handle_chinese_chars={self.handle_chinese_chars}, "
            f"strip_accents={self.strip_accents}, lowercase={self.lowercase})"
        )

    @classmethod
    def from_spec(cls, spec: Spec) -> BertNormalizer:
        clean_text = spec.boolean("clean_text")
        handle_chinese_chars = spec.boolean("handle_chinese_chars")
        strip_accents = spec.boolean("strip_accents", None, nullable=True)
        lowercase = spec.boolean("lowercase")
        strip = lowercase if strip_accents is None else strip_accents
        try:
            return cls(clean_text, handle_chinese_chars, strip, lowercase)
        except UnicodeVersionError as exc:
            raise spec.fail("strip_accents", strip_accents, str(exc)) from exc
