"""Oniguruma patterns, run by Python with the semantics `tokenizers` gets from Oniguruma.

`tokenizers` compiles user patterns (Split, Replace) with Oniguruma in its Ruby syntax. batchtok
parses such a pattern once at load time and renders it three ways:

* ``native`` — for the ``regex`` module, with Unicode classes left as ``\\p{..}``. Fast, but the
  ``regex`` module's Unicode tables are newer than Oniguruma's, so a few thousand code points
  (mostly assigned after Unicode 16) belong to different classes.
* ``exact`` — every class spelled out from ``_tables/onig.py`` (Oniguruma's own membership, read off
  the oracle). Always right, several times slower. Used for a text that holds any code point on
  which ``native`` and ``exact`` disagree; those are found at load time by comparing the two.
* ``ascii`` — every class replaced by its ASCII members, compiled with the standard ``re``
  module, which splits ASCII text about twice as fast. Used for ``str.isascii()`` texts, where it
  is exact by construction.

Matches are iterated the way the onig crate's ``find_iter`` does it (an empty match right after
the previous match is skipped); the fast ``findall`` path is taken only when no match is empty,
where the two iterations provably agree.

Anything whose meaning in Oniguruma batchtok cannot guarantee is refused with the reason.
"""

from __future__ import annotations

import functools
import re
import sys
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import islice

import regex

from .._tables.onig import RANGES
from .translate import char_class

__all__ = ["OnigPattern", "PatternError", "escape_literal"]


class PatternError(ValueError):
    """The pattern uses a construct batchtok cannot reproduce exactly."""


# Long property names Oniguruma accepts for the general categories.
_LONG_NAMES = {
    "letter": "L",
    "uppercase_letter": "Lu",
    "lowercase_letter": "Ll",
    "titlecase_letter": "Lt",
    "modifier_letter": "Lm",
    "other_letter": "Lo",
    "mark": "M",
    "nonspacing_mark": "Mn",
    "spacing_mark": "Mc",
    "enclosing_mark": "Me",
    "number": "N",
    "decimal_number": "Nd",
    "letter_number": "Nl",
    "other_number": "No",
    "punctuation": "P",
    "symbol": "S",
    "separator": "Z",
    "other": "C",
}
_ESCAPE_CLASSES = {"s": "\\s", "d": "\\d", "w": "\\w", "h": "\\h"}
# Inside brackets Oniguruma's \w leaves out the six digit-like No chars (²³¹¼½¾) that a bare \w
# matches; the table "\w[]" is that class-internal set (its native rendering is still \w).
_IN_CLASS = {"\\w": "\\w[]"}
_LITERAL_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f", "v": "\v", "a": "\a", "e": "\x1b"}


_SURROGATES = 0xD800  # the first surrogate; 0x800 of them, left out of _all_chars


@functools.cache
def _all_chars() -> str:
    """Every code point but the surrogates (built on first use), decoded from UTF-32 in one
    step (a char at a time costs ~0.2 s)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:  # (a batch's path has it: 15x faster than the array of ints)
        points = numpy.arange(0x110000, dtype="<u4")
        points = numpy.concatenate([points[:_SURROGATES], points[0xE000:]])
        return points.tobytes().decode("utf-32-le")
    points = array("I", range(_SURROGATES))
    points.extend(range(0xE000, 0x110000))
    assert points.itemsize == 4
    return points.tobytes().decode("utf-32-le" if sys.byteorder == "little" else "utf-32-be")


def parse_ranges(encoded: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges from a generated table's "41-5a 61 ..." spelling (hex, inclusive)."""
    out = []
    for item in encoded.split():
        a, _, b = item.partition("-")
        out.append((int(a, 16), int(b or a, 16)))
    return tuple(out)


@functools.cache
def _table(name: str) -> tuple[tuple[int, int], ...]:
    return parse_ranges(RANGES[name])


def class_ranges(name: str) -> tuple[tuple[int, int], ...]:
    """The code point ranges (inclusive) of a class of ``_tables.onig.RANGES`` ("L", "\\s",
    ...): Oniguruma's membership, as the ``exact`` rendering spells it out."""
    return _table(name)


def every_char() -> str:
    """Every code point but the surrogates, in order, as one string."""
    return _all_chars()


@functools.cache
def _native_ranges(native: str) -> tuple[tuple[int, int], ...]:
    """Code point ranges the ``regex`` module puts in a class (scanned once per process, by
    runs: a few thousand matches instead of one per char)."""
    out = []
    for match in regex.finditer(f"(?:{native})+", _all_chars()):
        start, end = match.span()
        # positions past the surrogates stand for code points 0x800 higher
        if start < _SURROGATES < end:
            out += [(start, _SURROGATES - 1), (0xE000, end + 0x800 - 1)]
        else:
            shift = 0x800 if start >= _SURROGATES else 0
            out.append((start + shift, end - 1 + shift))
    return tuple(out)


def _differing(a: tuple[tuple[int, int], ...], b: tuple[tuple[int, int], ...]) -> set[int]:
    """The code points in exactly one of two lists of disjoint ranges."""
    events = sorted([(lo, 1) for lo, _ in a + b] + [(hi + 1, -1) for _, hi in a + b])
    out: set[int] = set()
    depth, last = 0, 0
    for at, step in events:
        if depth == 1:
            out.update(range(last, at))
        depth += step
        last = at
    return out


def _complement(ranges: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    out, nxt = [], 0
    for a, b in ranges:
        if a > nxt:
            out.append((nxt, a - 1))
        nxt = b + 1
    if nxt <= 0x10FFFF:
        out.append((nxt, 0x10FFFF))
    return tuple(out)


def _char(cp: int) -> str:
    """One code point, escaped so that both ``re`` and ``regex`` read it literally anywhere."""
    ch = chr(cp)
    if ch.isascii() and ch.isalnum():
        return ch
    return f"\\x{cp:02x}" if cp < 0x100 else (f"\\u{cp:04x}" if cp < 0x10000 else f"\\U{cp:08x}")


def render_ranges(ranges) -> str:
    return "".join(_char(a) if a == b else f"{_char(a)}-{_char(b)}" for a, b in ranges)


def escape_literal(text: str) -> str:
    """An Oniguruma pattern matching ``text`` literally (what Rust's ``regex::escape`` does)."""
    return "".join(c if c.isascii() and c.isalnum() else f"\\x{{{ord(c):x}}}" for c in text)


# ---------------------------------------------------------------------------------------------
# Parsed form


@dataclass(frozen=True)
class _ClassRef:
    """A named class: a key of ``_tables.onig.RANGES``, possibly negated."""

    name: str
    negated: bool

    def native(self) -> str:
        if self.name == "\\h":
            return "[^0-9a-fA-F]" if self.negated else "[0-9a-fA-F]"
        if self.name.startswith("\\"):
            letter = self.name[1]
            return "\\" + (letter.upper() if self.negated else letter)
        return f"\\{'P' if self.negated else 'p'}{{{self.name}}}"

    def ranges(self, ascii_only: bool) -> tuple[tuple[int, int], ...]:
        table = _table(self.name)
        if self.negated:
            table = _complement(table)
        if ascii_only:
            table = tuple((a, min(b, 0x7F)) for a, b in table if a <= 0x7F)
        return table


@dataclass
class _Parsed:
    render: Callable[[str], str]  # mode -> pattern text
    classes: set[str]
    nullable: bool  # may match the empty string (an over-approximation: lookarounds count)


class _Parser:
    def __init__(self, source: str) -> None:
        self.s = source
        self.i = 0
        self.classes: set[str] = set()
        # Inside (?i): Oniguruma's case folding (multi-char folds such as "ss" = "ß", folded
        # property classes, no İ for i) is not the regex module's, so only literals whose
        # folding both engines agree on are accepted there.
        self.icase = False

    def fail(self, reason: str) -> PatternError:
        return PatternError(f"{reason} at position {self.i} of the pattern")

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    # Each parse method returns a function mode -> rendered text.
    def parse(self) -> _Parsed:
        if self.s.startswith("(?") and re.match(r"\(\?[imx-]+\)", self.s):
            flags = re.match(r"\(\?([imx-]+)\)", self.s).group(1)
            self.i = len(flags) + 3
            prefix = self._flag_prefix(flags)
            self.icase = _icase_after(flags, self.icase)
            body = self.alternation()
            node = lambda m: prefix + body(m) + ")"  # noqa: E731
            node.nullable = _nullable(body)
        else:
            node = self.alternation()
        if self.i < len(self.s):
            raise self.fail("unbalanced ')'")
        return _Parsed(node, self.classes, _nullable(node))

    def alternation(self):
        branches = [self.sequence()]
        while self.peek() == "|":
            self.i += 1
            branches.append(self.sequence())
        node = lambda m: "|".join(b(m) for b in branches)  # noqa: E731
        node.nullable = any(map(_nullable, branches))
        return node

    def sequence(self):
        items: list = []
        previous_letter = ""
        while self.i < len(self.s) and self.peek() not in "|)":
            atom = self.atom()
            if atom is None:
                continue
            if self.icase:
                previous_letter = self._check_case_folding(atom, previous_letter)
            items.append(self.quantifiers(atom))
        node = lambda m: "".join(x(m) for x in items)  # noqa: E731
        node.nullable = all(map(_nullable, items))
        return node

    def quantifiers(self, atom):
        while True:
            c = self.peek()
            if c in ("*", "+", "?"):
                self.i += 1
                q = c
                if self.peek() in ("?", "+"):
                    q += self.peek()
                    self.i += 1
                atom = self._quantified(atom, q)
                continue
            if c == "{":
                m = re.compile(r"\{(\d*)(,?)(\d*)\}").match(self.s, self.i)
                if not m or (not m.group(1) and not m.group(3)):
                    return atom  # not an interval: '{' is a literal, read by atom()
                lo, comma, hi = m.groups()
                self.i = m.end()
                interval = "{" + (lo or "0") + comma + hi + "}"
                nxt = self.peek()
                if nxt == "+":
                    # Ruby syntax: X{n,m}+ is (?:X{n,m})+, not possessive.
                    inner = atom
                    atom = (lambda a, iv: lambda m: "(?:" + a(m) + iv + ")")(inner, interval)
                    atom.nullable = _nullable(inner) or interval.startswith("{0")
                elif nxt == "?" and not comma:
                    # Ruby syntax: X{n}? is (?:X{n})?, not reluctant.
                    self.i += 1
                    inner = atom
                    atom = (lambda a, iv: lambda m: "(?:" + a(m) + iv + ")?")(inner, interval)
                    atom.nullable = True
                elif nxt == "?":
                    self.i += 1
                    atom = self._quantified(atom, interval + "?")
                else:
                    atom = self._quantified(atom, interval)
                continue
            return atom

    def _check_case_folding(self, atom, previous_letter: str) -> str:
        """Refuse what Oniguruma folds differently under (?i); returns this atom's letter."""
        kind = getattr(atom, "kind", "")
        if kind == "class":
            raise self.fail("a character class or property inside (?i)")
        cp = getattr(atom, "codepoint", None)
        if cp is None:
            return ""
        ch = chr(cp).lower()
        if not ch.isascii() or ch == "i":
            raise self.fail(f"case-insensitive {chr(cp)!r}: its case folding differs")
        if not ch.isalpha():
            return ""
        if previous_letter + ch in _MULTI_CHAR_FOLDS:
            raise self.fail(f"case-insensitive {previous_letter + ch!r} (a multi-char fold)")
        return ch

    @staticmethod
    def _quantified(atom, q):
        if getattr(atom, "unit", False):
            node = lambda m: atom(m) + q  # noqa: E731
        else:
            node = lambda m: "(?:" + atom(m) + ")" + q  # noqa: E731
        node.nullable = _nullable(atom) or q[0] in "*?" or q.startswith("{0")
        return node

    def atom(self):
        c = self.peek()
        if c == "(":
            return self.group()
        if c == "[":
            return self.char_class()
        if c == "\\":
            node = self.escape(in_class=False)
            if isinstance(node, _ClassRef):
                rendered = _unit(lambda m: _render_ref(node, m))
                if node.name not in ("\\s", "\\d"):
                    rendered.kind = "class"
                return rendered
            return node
        self.i += 1
        if c == ".":
            return lambda m: "."
        if c == "^":
            return _zero_width(lambda m: "(?m:^)")
        if c == "$":
            return _zero_width(lambda m: "(?m:$)")
        if c in "*+?":
            raise self.fail("target of repeat operator is not specified")
        lit = _char(ord(c))
        node = _unit(lambda m: lit)
        node.codepoint = ord(c)
        return node

    def group(self):
        start = self.i
        self.i += 1
        prefix = "(?:"
        if self.peek() == "?":
            rest = self.s[self.i + 1 :]
            for opener in ("=", "!", "<=", "<!", ">", ":"):
                if rest.startswith(opener):
                    prefix = "(?" + opener
                    self.i += 1 + len(opener)
                    break
            else:
                m = re.match(r"([imx]*)(?:-([imx]*))?([:)])", rest)
                named = re.match(r"<([A-Za-z_]\w*)>|'([A-Za-z_]\w*)'", rest)
                if rest.startswith("#"):
                    end = self.s.find(")", self.i)
                    if end < 0:
                        raise self.fail("unterminated comment")
                    self.i = end + 1
                    return None
                if named:
                    self.i += 1 + named.end()
                    prefix = "(?:"
                elif m and m.group(3) == ":":
                    self.i += 1 + m.end()
                    prefix = self._flag_prefix(
                        m.group(1) + ("-" + m.group(2) if m.group(2) else "")
                    )
                elif m:
                    raise self.fail("an option group '(?i)' inside the pattern")
                else:
                    raise self.fail(f"unsupported group syntax {self.s[start : start + 4]!r}")
        outer_icase = self.icase
        flags = prefix[2:-1] if prefix.startswith("(?") and prefix[2:3] not in "=!<>:" else ""
        self.icase = _icase_after(flags.replace("s", "m"), outer_icase)
        body = self.alternation()
        self.icase = outer_icase
        if self.peek() != ")":
            raise self.fail("end pattern with unmatched parenthesis")
        self.i += 1
        node = _unit(lambda m: prefix + body(m) + ")")
        node.nullable = prefix in ("(?=", "(?!", "(?<=", "(?<!") or _nullable(body)
        return node

    def _flag_prefix(self, flags: str) -> str:
        on, _, off = flags.partition("-")
        if "x" in on or "x" in off:
            raise self.fail("the extended (x) option")
        # Ruby's (?m) is dot-matches-newline, Python's (?s).
        on, off = on.replace("m", "s"), off.replace("m", "s")
        return "(?" + on + ("-" + off if off else "") + ":"

    def escape(self, in_class: bool):
        self.i += 1
        c = self.peek()
        if not c:
            raise self.fail("end pattern at escape")
        self.i += 1
        if c in "pP":
            m = re.compile(r"\{(\^?)([A-Za-z_ ]+)\}").match(self.s, self.i)
            if not m:
                raise self.fail("invalid property name")
            self.i = m.end()
            name = self._property(m.group(2))
            ref = _ClassRef(name, (c == "P") != bool(m.group(1)))
            self.classes.add(name)
            return ref
        if c.lower() in _ESCAPE_CLASSES:
            name = _ESCAPE_CLASSES[c.lower()]
            if in_class and name in _IN_CLASS:
                name = _IN_CLASS[name]
            self.classes.add(name)
            return _ClassRef(name, c.isupper())
        if c in _LITERAL_ESCAPES:
            return self._literal(ord(_LITERAL_ESCAPES[c]))
        if c == "x":
            m = re.compile(r"\{([0-9a-fA-F]{1,8})\}|([0-9a-fA-F]{1,2})").match(self.s, self.i)
            if not m:
                raise self.fail("invalid hex escape")
            self.i = m.end()
            return self._literal(int(m.group(1) or m.group(2), 16))
        if c == "u":
            m = re.compile(r"[0-9a-fA-F]{4}").match(self.s, self.i)
            if not m:
                raise self.fail("invalid \\u escape")
            self.i = m.end()
            return self._literal(int(m.group(0), 16))
        if c == "0":
            m = re.compile(r"[0-7]{0,2}").match(self.s, self.i)
            self.i = m.end()
            return self._literal(int(m.group(0) or "0", 8))
        if not in_class and c in "Az":
            return _zero_width(lambda m: "\\A" if c == "A" else "\\Z")
        if not in_class and c == "Z":
            return _zero_width(lambda m: "(?=\\n?\\Z)")
        if c.isalnum():
            raise self.fail(f"unsupported escape \\{c}")
        return self._literal(ord(c))

    def _literal(self, cp: int):
        lit = _char(cp)
        node = _unit(lambda m: lit)
        node.codepoint = cp  # type: ignore[attr-defined]
        return node

    def _property(self, raw: str) -> str:
        key = raw.strip()
        if key in RANGES and not key.startswith("\\"):
            return key
        long = _LONG_NAMES.get(key.lower().replace(" ", "_"))
        if long:
            return long
        raise self.fail(f"unsupported property \\p{{{raw}}} (only general categories)")

    def char_class(self):
        self.i += 1
        negated = False
        if self.peek() == "^":
            negated = True
            self.i += 1
        items: list = []  # (lo, hi) code point ranges or _ClassRef
        first = True
        while True:
            c = self.peek()
            if not c:
                raise self.fail("premature end of char-class")
            if c == "]" and not first:
                self.i += 1
                break
            first = False
            if c == "[":
                raise self.fail("nested character classes")
            if c == "&" and self.peek(1) == "&":
                raise self.fail("character class intersection '&&'")
            lo = self._class_atom()
            if isinstance(lo, _ClassRef):
                items.append(lo)
                continue
            if self.peek() == "-" and self.peek(1) not in ("]", ""):
                self.i += 1
                hi = self._class_atom()
                if isinstance(hi, _ClassRef):
                    raise self.fail("a class escape as the end of a range")
                if hi < lo:
                    raise self.fail("empty range in char class")
                items.append((lo, hi))
            else:
                items.append((lo, lo))

        def render(mode: str) -> str:
            parts = []
            for item in items:
                if isinstance(item, _ClassRef):
                    if mode == "native":
                        parts.append(item.native())
                    else:
                        parts.append(render_ranges(item.ranges(mode == "ascii")))
                else:
                    parts.append(render_ranges([item]))
            body = "".join(parts)
            if not body:
                return "[\\s\\S]" if negated else "(?!)"
            return "[" + ("^" if negated else "") + body + "]"

        node = _unit(render)
        node.kind = "class"
        return node

    def _class_atom(self):
        c = self.peek()
        if c == "\\":
            node = self.escape(in_class=True)
            if isinstance(node, _ClassRef):
                return node
            if not hasattr(node, "codepoint"):
                raise self.fail("an anchor inside a character class")
            return node.codepoint
        self.i += 1
        return ord(c)


# Pairs of ASCII letters that Unicode full case folding produces from one char (ß, ﬀ, ﬁ, ﬂ, ﬆ).
_MULTI_CHAR_FOLDS = frozenset({"ss", "ff", "fi", "fl", "st"})


def _icase_after(flags: str, current: bool) -> bool:
    on, _, off = flags.partition("-")
    if "i" in off:
        return False
    return True if "i" in on else current


def _nullable(node) -> bool:
    return getattr(node, "nullable", False)


def _zero_width(node):
    node.nullable = True
    return node


def _unit(node):
    """Mark a rendered node as one regex unit, so a quantifier needs no extra group."""
    node.unit = True
    return node


def _render_ref(ref: _ClassRef, mode: str) -> str:
    if mode == "native":
        return ref.native()
    ranges = ref.ranges(mode == "ascii")
    return "[" + render_ranges(ranges) + "]" if ranges else "(?!)"


class OnigPattern:
    """A user pattern, compiled once, matched with Oniguruma's semantics.

    >>> OnigPattern(r"\\p{N}{1,3}").find_spans("abc12345")
    [(3, 6), (6, 8)]
    """

    def __init__(self, source: str) -> None:
        self.source = source
        parsed = _Parser(source).parse()
        self.nullable = parsed.nullable
        render_mode = parsed.render
        try:
            self._native = regex.compile(render_mode("native"))
        except regex.error as exc:
            raise PatternError(f"cannot compile: {exc}") from exc
        self._exact_source = render_mode("exact")
        self._exact: regex.Pattern | None = None
        ascii_source = render_mode("ascii")
        try:
            self._ascii = re.compile(ascii_source)
        except re.error:
            self._ascii = regex.compile(ascii_source)
        suspects: set[int] = set()
        for name in parsed.classes:
            native = _ClassRef(name, False).native()
            suspects |= _differing(_native_ranges(native), _table(name))
        self._suspect = frozenset(map(chr, suspects))
        # Found by one re class (those beyond the BMP, nearly all of them, as the one range
        # there, then checked): 3.5x faster than a set of the text's chars.
        self._suspect_class = re.compile(char_class(self._suspect)) if suspects else None

    @property
    def native_source(self) -> str:
        """The pattern as rendered for the ``regex`` module (its parsed, normalised form)."""
        return self._native.pattern

    def _has_suspect(self, text: str) -> bool:
        search, suspect = self._suspect_class.search, self._suspect  # type: ignore[union-attr]
        found = search(text)
        while found is not None:
            if found.group() in suspect:
                return True
            found = search(text, found.end())
        return False

    def _pattern_for(self, text: str):
        if text.isascii():
            return self._ascii
        if self._suspect and self._has_suspect(text):
            if self._exact is None:
                self._exact = regex.compile(self._exact_source)
            return self._exact
        return self._native

    def findall(self, text: str) -> list[str] | None:
        """The matched substrings, or None when some match is empty (use find_spans)."""
        pieces = self._pattern_for(text).findall(text)
        return None if "" in pieces else pieces

    def iter_match_batches(self, text: str, size: int = 4096) -> Iterator[list[re.Match]]:
        """The matches of a pattern that never matches empty (``not nullable``: Python's
        ``finditer`` then agrees with onig's ``find_iter``), ``size`` at a time."""
        assert not self.nullable, "empty matches follow onig's rule: use iter_spans"
        matches = self._pattern_for(text).finditer(text)
        while batch := list(islice(matches, size)):
            yield batch

    def find_spans(self, text: str) -> list[tuple[int, int]]:
        """Match spans in the order and with the empty-match rule of onig's ``find_iter``."""
        return list(self.iter_spans(text))

    def iter_spans(self, text: str) -> Iterator[tuple[int, int]]:
        """:meth:`find_spans` one span at a time (a long text's spans are never all held)."""
        rx = self._pattern_for(text)
        last_end, last_match_end, n = 0, -1, len(text)
        while last_end <= n:
            m = rx.search(text, last_end)
            if m is None:
                break
            s, e = m.span()
            if s == e and last_match_end == e:
                last_end += 1
                continue
            last_end = last_match_end = e
            yield s, e

    def sub(self, content: str, text: str) -> str:
        """Replace every match by ``content`` (literally), as the Replace normalizer does."""
        if not self.nullable:
            # no empty match: Python's own sub finds the spans onig's find_iter finds
            literal = content if "\\" not in content else (lambda _: content)
            return self._pattern_for(text).sub(literal, text)
        spans = self.find_spans(text)
        if not spans:
            return text
        parts, prev = [], 0
        for s, e in spans:
            parts.append(text[prev:s])
            parts.append(content)
            prev = e
        parts.append(text[prev:])
        return "".join(parts)
