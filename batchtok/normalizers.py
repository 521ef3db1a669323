"""Normalizers: string -> string, applied to each fragment between added tokens."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Iterable, Iterator

from ._tables import bert as _bert_tables
from ._tables.unicode import DIFFERENCES, UNIDATA_VERSION
from .errors import EncodeError
from .metaspace import Metaspace
from .precompiled import (
    Charsmap,
    CharsmapError,
    PrecompiledMap,
    check_regex_tables,
    decode_charsmap,
)
from .utils.onig import OnigPattern, PatternError, escape_literal
from .utils.spec import Spec, dispatch

# Rust's char::is_whitespace (the White_Space property).
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class UnicodeVersionError(ValueError):
    """This Python's Unicode data is not the one batchtok's tables were checked against."""


class Normalizer:
    def normalize(self, text: str) -> str:
        raise NotImplementedError

    def leading_at_origin(self, text: str, count: int) -> int:
        """How many leading chars of ``normalize(text)`` `tokenizers` aligns to offset 0 of the
        input, when the first ``count`` chars of ``text`` are (the others never are).

        Metaspace's prepend_scheme "first" asks exactly this of the first fragment of a text.
        In `tokenizers` alignments never decrease along a normalized string, so the chars
        aligned to offset 0 always form a prefix and one count describes them.
        """
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


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


def _per_char(normalize: Callable[[str], str], text: str, count: int) -> int:
    """:meth:`Normalizer.leading_at_origin` of a normalizer that maps each char on its own to
    chars all aligned to it (filter, map, lowercase, byte-level, CJK padding)."""
    return len(normalize(text[:count]))


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


def _first(item: tuple) -> object:
    return item[0]


class Lowercase(Normalizer):
    """Char-by-char lowercase with Rust's tables (read off the oracle): no final-sigma rule,
    and no dependence on this Python's Unicode version."""

    _table = {cp: text for cp, text in DIFFERENCES["Lowercase"].items()}

    def normalize(self, text: str) -> str:
        if text.isascii():
            return text.lower()
        return text.translate(self._table)

    def leading_at_origin(self, text: str, count: int) -> int:
        return _per_char(self.normalize, text, count)


class Strip(Normalizer):
    def __init__(self, left: bool, right: bool) -> None:
        self.left, self.right = left, right

    def normalize(self, text: str) -> str:
        if self.left:
            text = text.lstrip(WHITE_SPACE)
        if self.right:
            text = text.rstrip(WHITE_SPACE)
        return text

    def leading_at_origin(self, text: str, count: int) -> int:
        # The kept chars keep their own alignments.
        lead = len(text) - len(text.lstrip(WHITE_SPACE)) if self.left else 0
        end = len(text.rstrip(WHITE_SPACE)) if self.right else len(text)
        return max(0, min(count, end) - lead)

    def describe(self) -> str:
        return f"Strip(left={self.left}, right={self.right})"


class Replace(Normalizer):
    """Every non-overlapping match of an Oniguruma pattern replaced by ``content``."""

    def __init__(self, pattern: str, is_regex: bool, content: str) -> None:
        self.pattern, self.is_regex, self.content = pattern, is_regex, content
        self.literal = None if is_regex or not pattern else pattern
        self.onig = OnigPattern(pattern if is_regex else escape_literal(pattern))

    def normalize(self, text: str) -> str:
        if self.literal is not None:
            return text.replace(self.literal, self.content)
        spans = self.onig.find_spans(text)
        if any(s == e for s, e in spans):
            raise EncodeError(
                f"Replace pattern {self.pattern!r} matches the empty string in this text; "
                "tokenizers' alignment panics or duplicates text there, so batchtok refuses it"
            )
        return self.onig.sub(self.content, text)

    def leading_at_origin(self, text: str, count: int) -> int:
        # Unmatched chars keep their alignments; the content of a match is aligned to the
        # match's last char (`NormalizedString::replace`).
        out = prev = 0
        for start, end in self._spans(text):
            if start >= count:
                break
            out += start - prev
            if end > count:
                return out
            out += len(self.content)
            prev = end
        return out + max(0, count - prev)

    def _spans(self, text: str) -> Iterator[tuple[int, int]]:
        if self.literal is None:
            yield from self.onig.find_spans(text)
            return
        n = len(self.literal)
        start = text.find(self.literal)
        while start >= 0:
            yield start, start + n
            start = text.find(self.literal, start + n)

    def describe(self) -> str:
        kind = "Regex" if self.is_regex else "String"
        return f"Replace({kind} {self.pattern!r} -> {self.content!r})"


class Prepend(Normalizer):
    def __init__(self, prepend: str) -> None:
        self.prepend = prepend

    def normalize(self, text: str) -> str:
        return self.prepend + text if text else text

    def leading_at_origin(self, text: str, count: int) -> int:
        # The prepended chars are aligned to the first char.
        return count + len(self.prepend) if count else 0

    def describe(self) -> str:
        return f"Prepend({self.prepend!r})"


def _ranges_table(ranges: str, value: str | None) -> dict[int, str | None]:
    """A ``str.translate`` table sending every code point of ``ranges`` (generated hex ranges)
    to ``value``."""
    table: dict[int, str | None] = {}
    for item in ranges.split():
        first, _, last = item.partition("-")
        for cp in range(int(first, 16), int(last or first, 16) + 1):
            table[cp] = value
    return table


# BertNormalizer's CJK ranges (U+2B820-2B91F is deliberately absent, as in the library).
_CJK = re.compile(
    "([\u4e00-\u9fff\u3400-\u4dbf\U00020000-\U0002a6df\U0002a700-\U0002b73f"
    "\U0002b740-\U0002b81f\U0002b920-\U0002ceaf\uf900-\ufaff\U0002f800-\U0002fa1f])"
)


class BertNormalizer(Normalizer):
    """clean_text, then CJK padding, then NFD + non-spacing-mark removal, then lowercase, with
    the library's own char classes (read off the oracle)."""

    _clean = {
        **_ranges_table(_bert_tables.CLEAN_DELETES, None),
        **_ranges_table(_bert_tables.CLEAN_SPACES, " "),
    }
    _nonspacing = _ranges_table(_bert_tables.NONSPACING_MARKS, None)

    def __init__(
        self, clean_text: bool, handle_chinese_chars: bool, strip_accents: bool, lowercase: bool
    ) -> None:
        self.clean_text, self.handle_chinese_chars = clean_text, handle_chinese_chars
        self.strip_accents, self.lowercase = strip_accents, lowercase
        self._nfd = UnicodeForm("NFD") if strip_accents else None
        self._lower = Lowercase() if lowercase else None

    def normalize(self, text: str) -> str:
        if self.clean_text:
            text = text.translate(self._clean)
        if self.handle_chinese_chars and not text.isascii():
            text = _CJK.sub(r" \1 ", text)
        if self._nfd is not None and not text.isascii():
            text = self._nfd.normalize(text).translate(self._nonspacing)
        if self._lower is not None:
            text = self._lower.normalize(text)
        return text

    def leading_at_origin(self, text: str, count: int) -> int:
        # The same steps as normalize, each per char except NFD.
        if self.clean_text:
            count = len(text[:count].translate(self._clean))
            text = text.translate(self._clean)
        if self.handle_chinese_chars:
            count = len(_CJK.sub(r" \1 ", text[:count]))
            text = _CJK.sub(r" \1 ", text)
        if self._nfd is not None:
            count = self._nfd.leading_at_origin(text, count)
            text = self._nfd.normalize(text)
            count = len(text[:count].translate(self._nonspacing))
        if self._lower is not None:
            count = _per_char(self._lower.normalize, text, count)
        return count

    def describe(self) -> str:
        return (
            f"BertNormalizer(clean_text={self.clean_text}, "
            f"handle_chinese_chars={self.handle_chinese_chars}, "
            f"strip_accents={self.strip_accents}, lowercase={self.lowercase})"
        )


class StripAccents(Normalizer):
    """Deletes combining marks (the library's Mn/Mc/Me table); does not decompose first."""

    _marks = _ranges_table(_bert_tables.COMBINING_MARKS, None)

    def normalize(self, text: str) -> str:
        return text if text.isascii() else text.translate(self._marks)

    def leading_at_origin(self, text: str, count: int) -> int:
        return _per_char(self.normalize, text, count)


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
        return text.translate(self._table)

    def leading_at_origin(self, text: str, count: int) -> int:
        return _per_char(self.normalize, text, count)


class ByteLevelNormalizer(Normalizer):
    """Each UTF-8 byte of the text as its GPT-2 char."""

    def __init__(self) -> None:
        # imported here: pre_tokenizers imports this module
        from .pre_tokenizers import byte_level_map

        self._map = byte_level_map

    def normalize(self, text: str) -> str:
        return self._map(text)

    def leading_at_origin(self, text: str, count: int) -> int:
        return _per_char(self.normalize, text, count)

    def describe(self) -> str:
        return "ByteLevel"


class Precompiled(Normalizer):
    """SentencePiece's precompiled charsmap, per grapheme cluster (see batchtok.precompiled)."""

    def __init__(self, charsmap: Charsmap) -> None:
        self.map = PrecompiledMap(charsmap)

    def normalize(self, text: str) -> str:
        return self.map.normalize(text)

    def leading_at_origin(self, text: str, count: int) -> int:
        return leading_through(self.map.changes(text), count)


class Sequence(Normalizer):
    def __init__(self, normalizers: list[Normalizer]) -> None:
        self.normalizers = normalizers

    def normalize(self, text: str) -> str:
        for n in self.normalizers:
            text = n.normalize(text)
        return text

    def stage_texts(self, text: str) -> list[str]:
        """``text``, then its value after each normalizer (the last one is ``normalize(text)``):
        what :meth:`leading_from_stages` needs, at the cost of one ``normalize``."""
        texts = [text]
        for n in self.normalizers:
            texts.append(n.normalize(texts[-1]))
        return texts

    def leading_at_origin(self, text: str, count: int) -> int:
        return self.leading_from_stages(self.stage_texts(text), count)

    def leading_from_stages(self, texts: list[str], count: int) -> int:
        """:meth:`leading_at_origin` of ``texts[0]``, given its :meth:`stage_texts`."""
        for n, text in zip(self.normalizers, texts):
            # No normalizer inserts a char before its first one, so once no char stems from
            # offset 0 none will.
            if not count:
                return 0
            count = n.leading_at_origin(text, count)
        return count

    def describe(self) -> str:
        return "Sequence[" + ", ".join(n.describe() for n in self.normalizers) + "]"


class MetaspaceNormalizer(Normalizer):
    """``Sequence[Prepend(r), Replace(" " -> r)]``: the Metaspace transform as a normalizer.

    Runs on every fragment between added tokens and always prepends, even before a leading
    space, exactly as the two steps do.
    """

    def __init__(self, replacement: str) -> None:
        self.metaspace = Metaspace(replacement, "always", split=False, skip_if_leading=False)

    def normalize(self, text: str) -> str:
        return self.metaspace.apply(text, True)

    def leading_at_origin(self, text: str, count: int) -> int:
        # Prepend aligns its char to the first one; Replace of one char keeps alignments.
        return count + 1 if count else 0

    def describe(self) -> str:
        return f"Sequence[Prepend, Replace] = {self.metaspace.describe()}"


def _sequence(spec: Spec) -> Normalizer:
    children = [
        read_normalizer(x, spec.at("normalizers") + f"[{i}]")
        for i, x in enumerate(spec.array("normalizers"))
    ]
    if (
        len(children) == 2
        and isinstance(children[0], Prepend)
        and isinstance(children[1], Replace)
        and not children[1].is_regex
        and children[1].pattern == " "
        and len(children[0].prepend) == 1
        and children[1].content == children[0].prepend
    ):
        return MetaspaceNormalizer(children[0].prepend)
    return Sequence(children)


def _unicode_form(spec: Spec, form: str) -> UnicodeForm:
    try:
        return UnicodeForm(form)
    except UnicodeVersionError as exc:
        raise spec.fail("type", form, str(exc)) from exc


def read_pattern(spec: Spec, key: str = "pattern") -> tuple[str, bool]:
    """A ``{"String": s}`` or ``{"Regex": r}`` pattern object: (text, is_regex)."""
    obj = spec.obj(key)
    kinds = [k for k in ("String", "Regex") if obj.has(k)]
    if len(kinds) != 1 or len(obj.data) != 1:
        raise spec.fail(key, obj.data, 'expected {"String": ...} or {"Regex": ...}')
    text = obj.string(kinds[0])
    return text, kinds[0] == "Regex"


def compile_checked(spec: Spec, key: str, build: Callable[[], object]):
    try:
        return build()
    except PatternError as exc:
        raise spec.fail(key, spec.data.get(key), f"pattern not supported: {exc}") from exc


def _replace(spec: Spec) -> Replace:
    pattern, is_regex = read_pattern(spec)
    content = spec.string("content")
    replace = compile_checked(spec, "pattern", lambda: Replace(pattern, is_regex, content))
    if replace.onig.nullable:
        raise spec.fail(
            "pattern",
            pattern,
            "the pattern can match the empty string; tokenizers' alignment then panics or "
            "duplicates text",
        )
    return replace


def _prepend(spec: Spec) -> Prepend:
    prepend = spec.string("prepend")
    if not prepend:
        raise spec.fail("prepend", prepend, "an empty Prepend makes tokenizers duplicate or panic")
    return Prepend(prepend)


def _bert(spec: Spec) -> BertNormalizer:
    clean_text = spec.boolean("clean_text")
    handle_chinese_chars = spec.boolean("handle_chinese_chars")
    strip_accents = spec.boolean("strip_accents", None, nullable=True)
    lowercase = spec.boolean("lowercase")
    strip = lowercase if strip_accents is None else strip_accents
    try:
        return BertNormalizer(clean_text, handle_chinese_chars, strip, lowercase)
    except UnicodeVersionError as exc:
        raise spec.fail("strip_accents", strip_accents, str(exc)) from exc


def _precompiled(spec: Spec) -> Precompiled:
    text = spec.string("precompiled_charsmap")
    try:
        check_regex_tables()
        return Precompiled(Charsmap(decode_charsmap(text)))
    except CharsmapError as exc:
        # tokenizers panics on every one of these
        raise spec.fail("precompiled_charsmap", text[:40], f"unusable charsmap: {exc}") from exc


REGISTRY: dict[str, Callable[[Spec], Normalizer]] = {
    "Bert": _bert,
    "BertNormalizer": _bert,
    "StripAccents": lambda s: StripAccents(),
    "Nmt": lambda s: Nmt(),
    "ByteLevel": lambda s: ByteLevelNormalizer(),
    "Precompiled": _precompiled,
    "NFC": lambda s: _unicode_form(s, "NFC"),
    "NFD": lambda s: _unicode_form(s, "NFD"),
    "NFKC": lambda s: _unicode_form(s, "NFKC"),
    "NFKD": lambda s: _unicode_form(s, "NFKD"),
    "Lowercase": lambda s: Lowercase(),
    "Strip": lambda s: Strip(s.boolean("strip_left"), s.boolean("strip_right")),
    "Replace": _replace,
    "Prepend": _prepend,
    "Sequence": _sequence,
}


def read_normalizer(data: object, path: str) -> Normalizer:
    return dispatch(Spec(data, path), REGISTRY, "normalizer")
