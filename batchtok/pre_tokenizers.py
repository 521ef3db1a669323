"""Pre-tokenizers: a list of pieces -> a finer list of pieces (empty pieces are dropped).

A pre-tokenizer may end with a per-piece *mapping* that does not split (ByteLevel's byte -> char
table). :func:`split_and_map` separates that mapping out, so the tokenizer can cache model output
keyed by the unmapped piece and skip the mapping entirely on a cache hit.
"""

from __future__ import annotations

import bisect
import functools
import operator
import re
from collections.abc import Callable

from ._tables.pre_tokenizer import RANGES, SCRIPTS
from .metaspace import Metaspace
from .normalizers import compile_checked, read_pattern
from .utils.onig import OnigPattern, _render_ranges, escape_literal, parse_ranges
from .utils.spec import Spec, dispatch

BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")

# GPT-2's split pattern, as ByteLevel(use_regex=true) uses it.
BYTE_LEVEL_PATTERN = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"


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


class PreTokenizer:
    def pre_tokenize(self, pieces: list[str], at_start: bool = False) -> list[str]:
        """Split ``pieces``; ``at_start``: how many leading chars of the first piece stem from
        offset 0 of the input (an int, a bool, or an object with ``__index__`` that only
        Metaspace's prepend_scheme "first" evaluates)."""
        raise NotImplementedError

    def split_counted(self, piece: str, count: int) -> list[tuple[str, int]]:
        """The pieces of ``piece`` whose first ``count`` chars stem from offset 0 of the input,
        each with that count for itself: what a later Metaspace "first" needs. This default
        serves the stages that only cut pieces out (see :meth:`piece_spans`)."""
        return [(piece[a:b], max(0, min(b, count) - a)) for a, b in self.piece_spans(piece)]

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        """(start, end) of each piece of ``text``, for stages that only cut pieces out."""
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


def split_spans(n: int, spans: list[tuple[int, int]], behavior: str, invert: bool):
    """Apply a split behaviour to match spans; returns the kept (start, end) ranges.

    Mirrors `tokenizers`: the matches and the gaps between them form one list covering the
    text; ``invert`` flips which are matches; the behaviour then removes, isolates or merges.
    """
    marked: list[tuple[int, int, bool]] = []
    if n == 0:
        marked.append((0, 0, invert))
    else:
        prev = 0
        for s, e in spans:
            if prev != s:
                marked.append((prev, s, invert))
            marked.append((s, e, not invert))
            prev = e
        if prev != n:
            marked.append((prev, n, invert))
    if behavior == "Removed":
        return [(s, e) for s, e, m in marked if not m]
    if behavior == "Isolated":
        return [(s, e) for s, e, _ in marked]
    out: list[list[int]] = []
    previous = False
    if behavior == "Contiguous":
        for s, e, m in marked:
            if m == previous and out:
                out[-1][1] = e
            else:
                out.append([s, e])
            previous = m
    elif behavior == "MergedWithPrevious":
        for s, e, m in marked:
            if m and not previous and out:
                out[-1][1] = e
            else:
                out.append([s, e])
            previous = m
    else:  # MergedWithNext
        for s, e, m in reversed(marked):
            if m and not previous and out:
                out[-1][0] = s
            else:
                out.append([s, e])
            previous = m
        out.reverse()
    return [(s, e) for s, e in out]


class Split(PreTokenizer):
    def __init__(self, pattern: str, is_regex: bool, behavior: str, invert: bool) -> None:
        self.pattern, self.is_regex = pattern, is_regex
        self.behavior, self.invert = behavior, invert
        self.onig = OnigPattern(pattern if is_regex else escape_literal(pattern))
        # Keeping only the matches, or every match when matches cover the text, needs no spans.
        self._matches_only = (behavior == "Removed" and invert) or (
            behavior == "Isolated" and not invert
        )

    def split_one(self, text: str) -> list[str]:
        if self._matches_only:
            pieces = self.onig.findall(text)
            if pieces is not None:
                if self.invert or sum(map(len, pieces)) == len(text):
                    return pieces
        return [text[s:e] for s, e in self.piece_spans(text)]

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        spans = self.onig.find_spans(text)
        return [
            (s, e) for s, e in split_spans(len(text), spans, self.behavior, self.invert) if e > s
        ]

    def pre_tokenize(self, pieces: list[str], at_start: bool = False) -> list[str]:
        out: list[str] = []
        for piece in pieces:
            out += self.split_one(piece)
        return out

    def describe(self) -> str:
        kind = "Regex" if self.is_regex else "String"
        return f"Split({kind} {self.pattern!r}, {self.behavior}, invert={self.invert})"


class ByteLevel(PreTokenizer):
    """Optional prefix space, optional GPT-2 split, then bytes shown as GPT-2 chars."""

    def __init__(self, add_prefix_space: bool, use_regex: bool) -> None:
        self.add_prefix_space, self.use_regex = add_prefix_space, use_regex
        self.splitter = Split(BYTE_LEVEL_PATTERN, True, "Isolated", False) if use_regex else None

    def split_only(self, pieces: list[str]) -> list[str]:
        if self.add_prefix_space:
            pieces = [p if p.startswith(" ") else " " + p for p in pieces]
        if self.splitter is not None:
            pieces = self.splitter.pre_tokenize(pieces)
        return pieces

    def pre_tokenize(self, pieces: list[str], at_start: bool = False) -> list[str]:
        return [byte_level_map(p) for p in self.split_only(pieces)]

    def split_counted(self, piece: str, count: int, mapped: bool = True) -> list[tuple[str, int]]:
        if self.add_prefix_space and not piece.startswith(" "):
            piece = " " + piece
            count = count + 1 if count else 0  # the space is aligned to the first char
        spans = self.splitter.piece_spans(piece) if self.splitter is not None else [(0, len(piece))]
        out = [(piece[a:b], max(0, min(b, count) - a)) for a, b in spans if b > a]
        if not mapped:
            return out
        # each byte's char is aligned to the char it comes from
        return [(byte_level_map(p), len(p[:c].encode("utf-8"))) for p, c in out]

    def describe(self) -> str:
        return f"ByteLevel(add_prefix_space={self.add_prefix_space}, use_regex={self.use_regex})"


# ---------------------------------------------------------------------------------------------
# Char-class pre-tokenizers. `tokenizers` splits these with a per-char predicate; each char
# that satisfies it is its own match, the runs of other chars are the gaps. For such splits
# every behaviour is one regex over two classes, which `re` runs far faster than split_spans.
# The classes come from the oracle's own tables (_tables/pre_tokenizer.py), not unicodedata.


@functools.cache
def _ranges(name: str) -> tuple[tuple[int, int], ...]:
    return parse_ranges(RANGES[name])


@functools.cache
def char_class(name: str) -> str:
    """The body of a ``re`` character class matching the BMP chars of table ``name``; texts
    with chars beyond the BMP go through :data:`ASTRAL_TO_BMP` first. (``re`` tests a char
    against a class's non-BMP members one range at a time: with them, Whitespace cost
    ~1.5 us per char even on English.)"""
    return _render_ranges([(a, min(b, 0xFFFF)) for a, b in _ranges(name) if a <= 0xFFFF])


class _AstralToBmp(dict):
    """A str.translate table: each char beyond the BMP -> a BMP char that belongs to exactly
    the same tables of RANGES (BMP chars map to themselves). Filled on first use."""

    def _signature(self, cp: int) -> tuple[bool, ...]:
        return tuple(bisect.bisect_right(bounds, cp) % 2 == 1 for bounds in self._bounds)

    def __missing__(self, cp: int) -> int:
        if cp <= 0xFFFF:
            self[cp] = cp
            return cp
        if not hasattr(self, "_reps"):
            # Flat [start, end + 1, ...] lists: a code point is in a table iff bisect is odd.
            self._bounds = [[x for a, b in _ranges(n) for x in (a, b + 1)] for n in RANGES]
            self._reps: dict[tuple[bool, ...], int] = {}
            for c in range(0x10000):
                if not 0xD800 <= c <= 0xDFFF:
                    self._reps.setdefault(self._signature(c), c)
        # Every astral class combination has a BMP member (the table test checks it).
        rep = self[cp] = self._reps[self._signature(cp)]
        return rep


ASTRAL_TO_BMP = _AstralToBmp()


def _behavior_pattern(match: str, behavior: str) -> str:
    """The regex whose findall gives the pieces of a split on the single chars of class
    ``match`` (a class body) with ``behavior``."""
    m, other = f"[{match}]", f"[^{match}]+"
    return {
        "Removed": other,
        "Isolated": f"{other}|{m}",
        "Contiguous": f"{other}|{m}+",
        "MergedWithPrevious": f"{other}{m}?|{m}",  # a match joins the gap before it
        "MergedWithNext": f"{m}?{other}|{m}",  # a match joins the gap after it
    }[behavior]


class FindAll(PreTokenizer):
    """The matches of one fixed regex (``re`` syntax) are the pieces; with ``bmp_classes``,
    the regex was built from :func:`char_class` and runs on texts mapped to the BMP."""

    def __init__(self, name: str, pattern: str, bmp_classes: bool = True) -> None:
        self.name, self.bmp_classes = name, bmp_classes
        self._regex = re.compile(pattern)

    def split_one(self, text: str) -> list[str]:
        if self.bmp_classes and text and max(text) > "\uffff":
            mapped = text.translate(ASTRAL_TO_BMP)  # same length, same classes
            return [text[m.start() : m.end()] for m in self._regex.finditer(mapped)]
        return self._regex.findall(text)

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        if self.bmp_classes and text and max(text) > "\uffff":
            text = text.translate(ASTRAL_TO_BMP)
        return [m.span() for m in self._regex.finditer(text)]

    def pre_tokenize(self, pieces: list[str], at_start: bool = False) -> list[str]:
        split_one = self.split_one
        if len(pieces) == 1:
            return split_one(pieces[0])
        out: list[str] = []
        for piece in pieces:
            out += split_one(piece)
        return out

    def describe(self) -> str:
        return self.name


class CharSplit(FindAll):
    """Split on every char of one class with one behaviour (Punctuation, Digits,
    CharDelimiterSplit, WhitespaceSplit)."""

    def __init__(self, name: str, match: str, behavior: str, bmp_classes: bool = True) -> None:
        pattern = _behavior_pattern(match, behavior)
        super().__init__(f"{name}({behavior})", pattern, bmp_classes)
        self.behavior = behavior


def bert_pre_tokenizer() -> PreTokenizer:
    """Whitespace removed, then each punctuation char isolated: the runs of other chars and
    the single punctuation chars."""
    punct, space = char_class("punctuation"), char_class("whitespace")
    return FindAll("BertPreTokenizer", f"[^{punct}{space}]+|[{punct}]")


def whitespace_pre_tokenizer() -> PreTokenizer:
    """The matches of Rust-regex ``\\w+|[^\\w\\s]+`` (word runs, runs of other non-spaces)."""
    word, space = char_class("word"), char_class("space")
    return FindAll("Whitespace", f"[{word}]+|[^{word}{space}]+")


class FixedLength(PreTokenizer):
    """Consecutive chunks of ``length`` chars (the last one shorter)."""

    def __init__(self, length: int) -> None:
        self.length = length

    def pre_tokenize(self, pieces: list[str], at_start: bool = False) -> list[str]:
        n = self.length
        return [piece[i : i + n] for piece in pieces for i in range(0, len(piece), n)]

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        n = self.length
        return [(i, min(i + n, len(text))) for i in range(0, len(text), n)]

    def describe(self) -> str:
        return f"FixedLength({self.length})"


class _ScriptClasses(dict):
    """code point -> ordinal of a char naming its UnicodeScripts class (0 for Any), looked up
    in the generated table on first use (a full dict would cost ~100 MB); a str.translate
    table."""

    def __init__(self) -> None:
        super().__init__()
        starts, classes = [], []
        for item in "".join(SCRIPTS).split():
            start, _, k = item.partition(":")
            starts.append(int(start, 16))
            classes.append(int(k, 16))
        self._starts, self._classes = starts, classes

    def __missing__(self, cp: int) -> int:
        k = self[cp] = self._classes[bisect.bisect_right(self._starts, cp) - 1]
        return k


# A piece starts at each char whose script is not Any and differs from the last non-Any
# script; Any chars join the piece before them, and leading ones are dropped.
_SCRIPT_RUN = re.compile(r"([^\x00])(?:\1|\x00)*")


class UnicodeScripts(PreTokenizer):
    """Split where the script changes (Hiragana, Katakana and U+30FC count as Han; spaces and
    unknown chars as Any, which never start a piece)."""

    def __init__(self) -> None:
        self._classes = _script_classes()

    def pre_tokenize(self, pieces: list[str], at_start: bool = False) -> list[str]:
        out: list[str] = []
        for piece in pieces:
            out += [piece[a:b] for a, b in self.piece_spans(piece)]
        return out

    def piece_spans(self, text: str) -> list[tuple[int, int]]:
        starts = [m.start() for m in _SCRIPT_RUN.finditer(text.translate(self._classes))]
        if not starts:
            return []
        starts.append(len(text))
        return list(zip(starts, starts[1:]))


@functools.cache
def _script_classes() -> _ScriptClasses:
    return _ScriptClasses()


class Sequence(PreTokenizer):
    def __init__(self, pretokenizers: list[PreTokenizer]) -> None:
        self.pretokenizers = pretokenizers
        # The stages up to the last one after the first that has a Metaspace "first" run
        # counting, for each piece, its leading chars that stem from offset 0 of the input.
        later = [i for i, p in enumerate(pretokenizers) if i and uses_start(p)]
        self._counted = later[-1] + 1 if later else 0

    def pre_tokenize(self, pieces: list[str], at_start: bool = False) -> list[str]:
        stages = self.pretokenizers
        if self._counted and pieces:
            count = operator.index(at_start)
            if count:
                counted = [(pieces[0], count)] + [(p, 0) for p in pieces[1:]]
                for stage in stages[: self._counted]:
                    counted = [x for p, c in counted for x in stage.split_counted(p, c)]
                pieces = [p for p, _ in counted]
                stages = stages[self._counted :]
            at_start = False
        for i, p in enumerate(stages):
            pieces = p.pre_tokenize(pieces, at_start if i == 0 else False)
        return pieces

    def split_counted(self, piece: str, count: int) -> list[tuple[str, int]]:
        counted = [(piece, count)]
        for stage in self.pretokenizers:
            counted = [x for p, c in counted for x in stage.split_counted(p, c)]
        return counted

    def describe(self) -> str:
        return "Sequence[" + ", ".join(p.describe() for p in self.pretokenizers) + "]"


class _SplitOnly(PreTokenizer):
    def __init__(self, byte_level: ByteLevel) -> None:
        self.byte_level = byte_level

    def pre_tokenize(self, pieces: list[str], at_start: bool = False) -> list[str]:
        return self.byte_level.split_only(pieces)

    def split_counted(self, piece: str, count: int) -> list[tuple[str, int]]:
        return self.byte_level.split_counted(piece, count, mapped=False)


class MetaspacePreTokenizer(PreTokenizer):
    def __init__(self, metaspace: Metaspace) -> None:
        self.metaspace = metaspace

    def pre_tokenize(self, pieces: list[str], at_start: bool = False) -> list[str]:
        out: list[str] = []
        for i, piece in enumerate(pieces):
            # at_start is passed on unevaluated: only prepend_scheme "first" looks at it
            out += self.metaspace.pieces(piece, at_start if i == 0 else False)
        return out

    def split_counted(self, piece: str, count: int) -> list[tuple[str, int]]:
        return self.metaspace.pieces_counted(piece, count)

    def describe(self) -> str:
        return self.metaspace.describe()


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


def split_and_map(
    pre: PreTokenizer | None,
) -> tuple[PreTokenizer | None, Callable[[str], str] | None]:
    """(splitting part, trailing per-piece mapping) equivalent to ``pre``."""
    if isinstance(pre, ByteLevel):
        return _SplitOnly(pre), byte_level_map
    if (
        isinstance(pre, Sequence)
        and pre.pretokenizers
        and isinstance(pre.pretokenizers[-1], ByteLevel)
    ):
        *head, last = pre.pretokenizers
        return Sequence([*head, _SplitOnly(last)]), byte_level_map
    return pre, None


def _split(spec: Spec) -> Split:
    pattern, is_regex = read_pattern(spec)
    behavior = spec.choice("behavior", BEHAVIORS)
    invert = spec.boolean("invert")
    return compile_checked(spec, "pattern", lambda: Split(pattern, is_regex, behavior, invert))


def _byte_level(spec: Spec) -> ByteLevel:
    add_prefix_space = spec.boolean("add_prefix_space")
    spec.boolean("trim_offsets")  # offsets only; ids do not depend on it
    return ByteLevel(add_prefix_space, spec.boolean("use_regex", True))


def _sequence(spec: Spec) -> Sequence:
    stages = [
        read_pre_tokenizer(x, spec.at("pretokenizers") + f"[{i}]")
        for i, x in enumerate(spec.array("pretokenizers"))
    ]
    return Sequence(stages)


def uses_start(pre: PreTokenizer) -> bool:
    """Whether ``pre`` has a Metaspace "first", the one stage that asks where pieces start."""
    if isinstance(pre, MetaspacePreTokenizer):
        return pre.metaspace.prepend_scheme == "first"
    return isinstance(pre, Sequence) and any(map(uses_start, pre.pretokenizers))


def _punctuation(spec: Spec) -> CharSplit:
    behavior = spec.choice("behavior", BEHAVIORS, "Isolated")
    return CharSplit("Punctuation", char_class("punctuation"), behavior)


def _digits(spec: Spec) -> CharSplit:
    individual = spec.boolean("individual_digits")
    return CharSplit("Digits", char_class("numeric"), "Isolated" if individual else "Contiguous")


def _char_delimiter_split(spec: Spec) -> CharSplit:
    delimiter = spec.string("delimiter")
    if len(delimiter) != 1:
        raise spec.fail("delimiter", delimiter, "expected exactly one character")
    name = f"CharDelimiterSplit[{delimiter!r}]"
    return CharSplit(name, re.escape(delimiter), "Removed", bmp_classes=False)


def _fixed_length(spec: Spec) -> FixedLength:
    length = spec.uint("length", 5)
    if length == 0:
        raise spec.fail("length", 0, "length 0 makes tokenizers panic on any non-empty text")
    return FixedLength(length)


REGISTRY: dict[str, Callable[[Spec], PreTokenizer]] = {
    "Split": _split,
    "Metaspace": lambda s: MetaspacePreTokenizer(read_metaspace(s)),
    "ByteLevel": _byte_level,
    "Sequence": _sequence,
    "BertPreTokenizer": lambda s: bert_pre_tokenizer(),
    "Whitespace": lambda s: whitespace_pre_tokenizer(),
    "WhitespaceSplit": lambda s: CharSplit("WhitespaceSplit", char_class("whitespace"), "Removed"),
    "Punctuation": _punctuation,
    "Digits": _digits,
    "UnicodeScripts": lambda s: UnicodeScripts(),
    "CharDelimiterSplit": _char_delimiter_split,
    "FixedLength": _fixed_length,
}


def read_pre_tokenizer(data: object, path: str) -> PreTokenizer:
    return dispatch(Spec(data, path), REGISTRY, "pre-tokenizer")
