"""Unicode normal forms (NFC, NFD, NFKC, NFKD), Lowercase and Nmt, with the oracle's tables."""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable, Iterator

from .. import alignment
from .._tables.unicode import DIFFERENCES, UNIDATA_VERSION
from ..alignment import Aligned
from ..utils.spec import Spec
from ..utils.translate import SparseTranslate
from .base import Normalizer, leading_through, per_char


class UnicodeVersionError(ValueError):
    """This Python's Unicode data is not the one batchtok's tables were checked against."""


class UnicodeForm(Normalizer):
    """NFC / NFD / NFKC / NFKD as the oracle's (older) Unicode crate computes them.

    The few chars that crate leaves alone but ``unicodedata`` changes (read off the oracle for
    one Unicode version of ``unicodedata``) are kept verbatim: the text is normalized in runs
    between them.
    """

    def __init__(self, form: str) -> None:
        if unicodedata.unidata_version != UNIDATA_VERSION:
            raise UnicodeVersionError(
                f"{form} is verified against the oracle for Python's Unicode "
                f"{UNIDATA_VERSION} (Python 3.11); this Python has "
                f"{unicodedata.unidata_version}"
            )
        self.form = form
        table = DIFFERENCES[form]
        if any(len(v) != 1 or ord(v) != k for k, v in table.items()):
            raise UnicodeVersionError(f"{form}: the oracle maps a char unicodedata keeps")
        self.kept = frozenset(map(chr, table))
        kept_class = "".join(map(re.escape, sorted(self.kept)))
        self._kept_runs = re.compile(f"([{kept_class}])") if self.kept else None

    def normalize(self, text: str) -> str:
        if text.isascii():
            return text
        if self._kept_runs is None or self.kept.isdisjoint(text):
            return unicodedata.normalize(self.form, text)
        parts = self._kept_runs.split(text)
        return "".join(
            part if i % 2 else unicodedata.normalize(self.form, part)
            for i, part in enumerate(parts)
        )

    def leading_at_origin(self, text: str, count: int) -> int:
        changes = (change for _, change in self.changes(text))
        return leading_through(changes, count)

    def align(self, s: Aligned) -> Aligned:
        return s if s.text.isascii() else s.transform(self.changes(s.text))

    def changes(self, text: str) -> Iterator[tuple[str, int]]:
        """The output chars with their ``transform`` changes, as the library's
        unicode-normalization-alignments crate yields them (lazily)."""
        compat = self.form in ("NFKC", "NFKD")
        decomposed = self._decompositions(text, compat)
        return self._recompositions(decomposed) if self.form in ("NFC", "NFKC") else decomposed

    def _ccc(self, ch: str) -> int:
        return 0 if ch in self.kept else unicodedata.combining(ch)

    def _decompose(self, ch: str, compat: bool) -> str:
        """The full decomposition of one char, in the order of its mappings (not reordered)."""
        if ch in self.kept:
            return ch
        if "\uac00" <= ch <= "\ud7a3":
            return unicodedata.normalize("NFD", ch)  # Hangul: algorithmic, already in order
        mapping = unicodedata.decomposition(ch).split()
        if not mapping or (mapping[0].startswith("<") and not compat):
            return ch
        if mapping[0].startswith("<"):
            del mapping[0]
        return "".join(self._decompose(chr(int(cp, 16)), compat) for cp in mapping)

    def _decompositions(self, text: str, compat: bool) -> Iterator[tuple[str, int]]:
        # Each char's decomposition (first char change 0, the others inserted), and each run
        # since the last starter stably sorted by combining class when the next starter comes.
        block: list[tuple[int, str, int]] = []
        for ch in text:
            for i, part in enumerate(self._decompose(ch, compat)):
                ccc = self._ccc(part)
                if ccc == 0 and block:
                    block.sort(key=_first)
                    for _, c, change in block:
                        yield c, change
                    block.clear()
                block.append((ccc, part, 1 if i else 0))
        block.sort(key=_first)
        for _, c, change in block:
            yield c, change

    def _compose(self, a: str, b: str) -> str | None:
        if a in self.kept or b in self.kept:
            return None
        composed = unicodedata.normalize("NFC", a + b)
        return composed if len(composed) == 1 else None

    def _recompositions(self, items: Iterable[tuple[str, int]]) -> Iterator[tuple[str, int]]:
        # The crate's state machine: a starter (the composee) absorbs the marks that compose
        # with it (change: both changes - 1); blocked marks wait in `held` until the next
        # starter that cannot compose.
        composee: tuple[str, int] | None = None
        last_ccc: int | None = None
        held: list[tuple[str, int]] = []
        for ch, change in items:
            ccc = self._ccc(ch)
            if composee is None:
                if ccc != 0:
                    yield ch, change
                else:
                    composee = ch, change
                continue
            if last_ccc is not None and last_ccc >= ccc:
                if ccc == 0:
                    yield composee
                    yield from held
                    held.clear()
                    composee, last_ccc = (ch, change), None
                else:
                    held.append((ch, change))
                    last_ccc = ccc
                continue
            composed = self._compose(composee[0], ch)
            if composed is not None:
                composee = composed, composee[1] + change - 1
            elif ccc == 0 and last_ccc is None:
                yield composee
                composee = ch, change
            else:
                held.append((ch, change))
                last_ccc = ccc
        if composee is not None:
            yield composee
        yield from held

    @classmethod
    def from_spec(cls, spec: Spec) -> UnicodeForm:
        try:
            return cls()
        except UnicodeVersionError as exc:
            raise spec.fail("type", cls.__name__, str(exc)) from exc

    def describe(self) -> str:
        return self.form  # the JSON tag: NFC, NFD, NFKC or NFKD


def _first(item: tuple) -> object:
    return item[0]


class NFC(UnicodeForm):
    def __init__(self) -> None:
        super().__init__("NFC")


class NFD(UnicodeForm):
    def __init__(self) -> None:
        super().__init__("NFD")


class NFKC(UnicodeForm):
    def __init__(self) -> None:
        super().__init__("NFKC")


class NFKD(UnicodeForm):
    def __init__(self) -> None:
        super().__init__("NFKD")


class Lowercase(Normalizer):
    """Char-by-char lowercase with Rust's tables (read off the oracle): no final-sigma rule,
    and no dependence on this Python's Unicode version."""

    _table = {cp: text for cp, text in DIFFERENCES["Lowercase"].items()}

    def normalize(self, text: str) -> str:
        if text.isascii():
            return text.lower()
        return _sparse_lowercase()(text)

    def leading_at_origin(self, text: str, count: int) -> int:
        return per_char(self.normalize, text, count)

    def align(self, s: Aligned) -> Aligned:
        if s.text.isascii():
            return Aligned(s.text.lower(), s.align, s.shift)
        return alignment.per_char(s, self.normalize)


@functools.cache
def _sparse_lowercase() -> SparseTranslate:
    return SparseTranslate(Lowercase._table)


class Nmt(Normalizer):
    """Deletes some control chars and turns some separators into spaces (fixed lists)."""

    _table = {
        **{cp: None for cp in [*range(0x1, 0x9), 0xB, *range(0xE, 0x20), 0x7F, 0x8F, 0x9F]},
        **{
            cp: " "
            for cp in [0x9, 0xA, 0xC, 0xD, 0x1680, *range(0x200B, 0x2010), 0x2028, 0x2029]
            + [0x2581, 0xFEFF, 0xFFFD]
        },
    }

    def normalize(self, text: str) -> str:
        # str.translate has a fast path for ASCII text; other text holds few of these chars
        return text.translate(self._table) if text.isascii() else _sparse_nmt()(text)

    def leading_at_origin(self, text: str, count: int) -> int:
        return per_char(self.normalize, text, count)

    def align(self, s: Aligned) -> Aligned:
        # the library's filter of the deleted chars, then its map of the others
        table = self._table
        kept = alignment.filter_chars(s, lambda ch: table.get(ord(ch), "") is not None)
        return alignment.map_chars(kept, lambda ch: table.get(ord(ch)) or ch)


@functools.cache
def _sparse_nmt() -> SparseTranslate:
    return SparseTranslate(Nmt._table)
