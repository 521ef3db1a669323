"""Normalizers: string -> string, applied to each fragment between added tokens."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable

from ._unicode_tables import DIFFERENCES, UNIDATA_VERSION
from .errors import EncodeError
from .metaspace import Metaspace
from .onig import OnigPattern, PatternError, escape_literal
from .spec import Spec, dispatch

# Rust's char::is_whitespace (the White_Space property).
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)


class UnicodeVersionError(ValueError):
    """This Python's Unicode data is not the one batchtok's tables were checked against."""


class Normalizer:
    # True when the first char of the output always stems from offset 0 of the input, which
    # Metaspace's prepend_scheme "first" relies on.
    keeps_start = True

    def normalize(self, text: str) -> str:
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


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

    def describe(self) -> str:
        return self.form


class Lowercase(Normalizer):
    """Char-by-char lowercase with Rust's tables (read off the oracle): no final-sigma rule,
    and no dependence on this Python's Unicode version."""

    _table = {cp: text for cp, text in DIFFERENCES["Lowercase"].items()}

    def normalize(self, text: str) -> str:
        if text.isascii():
            return text.lower()
        return text.translate(self._table)


class Strip(Normalizer):
    def __init__(self, left: bool, right: bool) -> None:
        self.left, self.right = left, right
        self.keeps_start = not left

    def normalize(self, text: str) -> str:
        if self.left:
            text = text.lstrip(WHITE_SPACE)
        if self.right:
            text = text.rstrip(WHITE_SPACE)
        return text

    def describe(self) -> str:
        return f"Strip(left={self.left}, right={self.right})"


class Replace(Normalizer):
    """Every non-overlapping match of an Oniguruma pattern replaced by ``content``."""

    def __init__(self, pattern: str, is_regex: bool, content: str) -> None:
        self.pattern, self.is_regex, self.content = pattern, is_regex, content
        self.literal = None if is_regex or not pattern else pattern
        self.onig = OnigPattern(pattern if is_regex else escape_literal(pattern))
        self.keeps_start = bool(content)

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

    def describe(self) -> str:
        kind = "Regex" if self.is_regex else "String"
        return f"Replace({kind} {self.pattern!r} -> {self.content!r})"


class Prepend(Normalizer):
    def __init__(self, prepend: str) -> None:
        self.prepend = prepend

    def normalize(self, text: str) -> str:
        return self.prepend + text if text else text

    def describe(self) -> str:
        return f"Prepend({self.prepend!r})"


class Sequence(Normalizer):
    def __init__(self, normalizers: list[Normalizer]) -> None:
        self.normalizers = normalizers
        self.keeps_start = all(n.keeps_start for n in normalizers)

    def normalize(self, text: str) -> str:
        for n in self.normalizers:
            text = n.normalize(text)
        return text

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


REGISTRY: dict[str, Callable[[Spec], Normalizer]] = {
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
