"""Offsets and word ids: one text's path again, with each char's place in the input tracked.

The engine's encode never tracks where a token came from: its fast paths cut, cache and fuse
pieces as strings. An Encoding's ``offsets`` and ``word_ids`` are computed here instead, the
first time they are read, by walking the text through the stages as `tokenizers` defines them
with every char's alignment carried along, as the library's ``NormalizedString`` carries it:

* an :class:`Aligned` string holds, for each of its chars, the (start, end) *byte* offsets of
  the input it stems from (absolute, the library's ``original_shift`` included), and the
  offset where it starts in the input (``shift``, what a char inserted before everything else
  is aligned to);
* :meth:`Aligned.transform` is the library's ``transform``: each new char comes with its change
  (0 replaces the next old char, ``-n`` replaces it and removes ``n`` more, 1 inserts a char
  aligned to the old char before the current position, or to the start when there is none);
* a token's offsets are the first and last alignments of the chars its bytes fall in, which
  the library then converts from bytes to chars of the input, leaving offsets it cannot
  convert (at the very end of the input) as bytes.

The ids found by this walk are compared with the ones encode gave: if they ever differ,
:class:`AlignmentMismatch` is raised instead of returning offsets of other tokens.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .errors import EncodeError

if TYPE_CHECKING:
    from .models import Model
    from .tokenizer import Tokenizer

Offsets = tuple[int, int]


class AlignmentMismatch(EncodeError):
    """The aligned walk found other ids than encode (a batchtok bug, reported as such)."""


class Aligned:
    """A normalized string with the input bytes each of its chars stems from."""

    __slots__ = ("text", "align", "shift")

    def __init__(self, text: str, align: list[Offsets], shift: int) -> None:
        self.text = text
        self.align = align
        self.shift = shift

    @classmethod
    def of(cls, text: str, start: int = 0) -> Aligned:
        """``text`` as found at byte ``start`` of the input: each char aligned to itself."""
        if text.isascii():
            align = [(start + i, start + i + 1) for i in range(len(text))]
        else:
            align = []
            at = start
            for ch in text:
                n = _utf8_len(ch)
                align.append((at, at + n))
                at += n
        return cls(text, align, start)

    def __len__(self) -> int:
        return len(self.text)

    def __repr__(self) -> str:
        return f"Aligned({self.text!r}, {self.align!r}, shift={self.shift})"

    def transform(self, items: Iterable[tuple[str, int]], initial_offset: int = 0) -> Aligned:
        """The library's ``transform`` of the whole string: ``items`` gives each new char with
        its change; ``initial_offset`` old chars are removed before the first new one."""
        old = self.align
        pos = initial_offset
        chars: list[str] = []
        align: list[Offsets] = []
        start = (self.shift, self.shift)
        for ch, change in items:
            if change > 0:
                align.append(old[pos - 1] if pos >= 1 else start)
            else:
                align.append(old[pos])
                pos += 1 - change
            chars.append(ch)
        return Aligned("".join(chars), align, self.shift)

    def slice(self, start: int, stop: int) -> Aligned:
        """Chars ``start:stop`` (non-empty), as the library's ``slice`` of a normalized range:
        their shift is where the first of them starts in the input."""
        align = self.align[start:stop]
        return Aligned(self.text[start:stop], align, align[0][0] if align else self.shift)

    def spans(self, spans: Iterable[tuple[int, int]]) -> list[Aligned]:
        """The non-empty slices at char ``spans``."""
        return [self.slice(a, b) for a, b in spans if b > a]

    def original(self, span: Span) -> Offsets:
        """Input byte offsets of a token's span (``convert_offsets`` of its normalized range,
        plus the shift)."""
        _, start, stop, first, last = span
        if first < 0:
            if start == stop:
                return (self.shift + start, self.shift + stop)
            return (start, stop)  # outside the text: the library keeps the token's own
        return (self.align[first][0], self.align[last][1])


# A token's span in a piece: (id, start byte, end byte, first char, last char), the chars
# being those its bytes fall in (-1, -1 for an empty span or one past the text).
Span = tuple[int, int, int, int, int]


def spans_of(text: str, offsets: list[tuple[int, int, int]]) -> list[Span]:
    """Each (id, start byte, end byte) with the chars of ``text`` it covers."""
    chars = None if text.isascii() else _byte_to_char(text)
    n = len(text) if chars is None else len(chars)
    out = []
    for token_id, a, b in offsets:
        if a == b or b > n:
            out.append((token_id, a, b, -1, -1))
        elif chars is None:
            out.append((token_id, a, b, a, b - 1))
        else:
            out.append((token_id, a, b, chars[a], chars[b - 1]))
    return out


def _utf8_len(ch: str) -> int:
    cp = ord(ch)
    return 1 if cp < 0x80 else 2 if cp < 0x800 else 3 if cp < 0x10000 else 4


def _byte_to_char(text: str) -> list[int]:
    """The char index of each UTF-8 byte of ``text``."""
    out: list[int] = []
    for i, ch in enumerate(text):
        if ch < "\x80":
            out.append(i)
        else:
            out += [i] * _utf8_len(ch)
    return out


# -- the library's string operations, as transforms ----------------------------------------


def per_char(s: Aligned, convert: Callable[[str], str]) -> Aligned:
    """Each char replaced by ``convert(char)`` (at least one char), the extra ones inserted
    (``lowercase``, ``ByteLevel``, CJK padding): the transform's first new char replaces the
    old one and the others are inserted after it, so all are aligned to it."""
    chars: list[str] = []
    align: list[Offsets] = []
    for ch, a in zip(s.text, s.align):
        out = convert(ch)
        chars.append(out)
        if len(out) == 1:
            align.append(a)
        else:
            align += [a] * len(out)
    return Aligned("".join(chars), align, s.shift)


def bytes_as_chars(s: Aligned, mapped: str) -> Aligned:
    """``s`` with each UTF-8 byte shown as one char (``mapped``: the byte-level text of
    ``s.text``), each aligned to the char it is a byte of (:func:`per_char` of ByteLevel)."""
    if len(mapped) == len(s.text):
        return Aligned(mapped, s.align, s.shift)
    align: list[Offsets] = []
    for ch, a in zip(s.text, s.align):
        if ch < "\x80":
            align.append(a)
        else:
            align += [a] * _utf8_len(ch)
    return Aligned(mapped, align, s.shift)


def filter_chars(s: Aligned, keep: Callable[[str], bool]) -> Aligned:
    """The library's ``filter``: a removed char is removed by the kept char before it, or
    counted in the initial offset before the first kept one."""
    items: list[tuple[str, int]] = []
    removed = 0
    removed_start = 0
    last = None
    for ch in s.text:
        if keep(ch):
            if last is None:
                removed_start = removed
            else:
                items.append((last, -removed))
            last = ch
            removed = 0
        else:
            removed += 1
    if last is not None:
        items.append((last, -removed))
    if not items:
        return Aligned("", [], s.shift)
    return s.transform(items, removed_start)


def map_chars(s: Aligned, convert: Callable[[str], str]) -> Aligned:
    """The library's ``map``: one char for one, each keeping its alignment."""
    return Aligned("".join(map(convert, s.text)), s.align, s.shift)


def prepend(s: Aligned, prefix: str) -> Aligned:
    """The library's ``prepend``: the prefix and the first char all aligned to the first char
    (nothing on an empty string)."""
    if not s.text or not prefix:
        return s
    first = s.align[0]
    n = len(prefix)
    return Aligned(prefix + s.text, [first] * n + s.align, s.shift)


def replace_spans(s: Aligned, spans: Iterable[tuple[int, int]], content: str) -> Aligned:
    """The library's ``replace`` of the chars at each of ``spans``: the content's chars are
    aligned to the last char of the match (to the start for an empty match at the start)."""
    text, old = s.text, s.align
    chars: list[str] = []
    align: list[Offsets] = []
    last = 0
    for a, b in spans:
        chars.append(text[last:a])
        align += old[last:a]
        anchor = old[b - 1] if b >= 1 else (s.shift, s.shift)
        chars.append(content)
        align += [anchor] * len(content)
        last = b
    chars.append(text[last:])
    align += old[last:]
    return Aligned("".join(chars), align, s.shift)


def strip(s: Aligned, left: bool, right: bool, whitespace: str) -> Aligned:
    """The library's ``lrstrip``: the kept chars keep their alignments."""
    text = s.text
    lead = len(text) - len(text.lstrip(whitespace)) if left else 0
    end = len(text.rstrip(whitespace)) if right else len(text)
    if lead == 0 and end == len(text):
        return s
    if end <= lead:
        return Aligned("", [], s.shift)
    return Aligned(text[lead:end], s.align[lead:end], s.shift)


# -- the walk -----------------------------------------------------------------------------


class Token:
    """One token of the aligned walk: its id, its input byte offsets, its word."""

    __slots__ = ("id", "start", "end", "word")

    def __init__(self, token_id: int, start: int, end: int, word: int) -> None:
        self.id, self.start, self.end, self.word = token_id, start, end, word


def splits(tok: Tokenizer, text: str) -> list[tuple[Aligned, int | None]]:
    """The splits of ``text`` before the model, as the library's ``PreTokenizedString`` holds
    them: (aligned string, added token id or None), empty ones dropped."""
    added = tok.added_vocabulary
    normalizer = tok.normalizer
    encode_special = tok.encode_special_tokens
    raw: list[tuple[Aligned, int | None]] = []
    byte_at = _byte_positions(text)
    for piece, token_id, start in added.raw_matcher.split(text, encode_special):
        s = Aligned.of(piece, byte_at(start))
        if token_id is not None:
            raw.append((s, token_id))
            continue
        if normalizer is not None:
            s = normalizer.align(s)
        if not s.text:
            continue
        subs = added.normalized_matcher.split(s.text, encode_special)
        subs = added.every_char(subs, encode_special)
        for sub, sub_id, offset in subs:
            if sub:
                raw.append((s.slice(offset, offset + len(sub)), sub_id))
    pre = tok.pre_tokenizer
    if pre is None:
        return raw
    out: list[tuple[Aligned, int | None]] = []
    for s, token_id in raw:
        if token_id is not None:
            out.append((s, token_id))
        else:
            out += [(p, None) for p in pre.split_aligned(s) if p.text]
    return out


def _byte_positions(text: str) -> Callable[[int], int]:
    """char index -> its byte offset in ``text``."""
    if text.isascii():
        return int
    starts = [0]
    for ch in text:
        starts.append(starts[-1] + _utf8_len(ch))
    return starts.__getitem__


def tokens(tok: Tokenizer, text: str, word: int | None = None) -> list[Token]:
    """The tokens of one text (a sequence, or one word of a pre-tokenized one) before
    post-processing, with their char offsets in ``text`` and word ids (``word``: every
    token's, as for a pre-tokenized word; else each split's index)."""
    model_offsets = _model_offsets(tok.model)
    out: list[Token] = []
    to_chars = _char_offsets(text)
    for i, (s, token_id) in enumerate(splits(tok, text)):
        w = i if word is None else word
        if token_id is not None:
            last = len(s.text) - 1
            start, end = to_chars(s.original((token_id, 0, 1, 0, last)))
            out.append(Token(token_id, start, end, w))
            continue
        for span in model_offsets(s.text):
            start, end = to_chars(s.original(span))
            out.append(Token(span[0], start, end, w))
    return out


# Each model's token offsets of the pieces it has seen lately: words repeat.
OFFSETS_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
OFFSETS_CACHE_ENTRIES = 50_000


def _model_offsets(model: Model) -> Callable[[str], list[Span]]:
    """The spans of ``model.token_offsets``, remembered per piece (the cache is emptied when
    full)."""
    try:
        cache = OFFSETS_CACHES[model]
    except KeyError:
        cache = OFFSETS_CACHES[model] = {}
    compute = model.token_offsets

    def offsets(piece: str) -> list[Span]:
        found = cache.get(piece)
        if found is None:
            if len(cache) >= OFFSETS_CACHE_ENTRIES:
                cache.clear()
            found = cache[piece] = spans_of(piece, compute(piece))
        return found

    return offsets


def _char_offsets(text: str) -> Callable[[Offsets], Offsets]:
    """The library's byte -> char conversion of offsets in ``text`` (its
    ``BytesToCharOffsetConverter``): offsets starting at the end stay as they are."""
    n = len(text.encode("utf-8"))
    if text.isascii():

        def ascii_chars(offsets: Offsets) -> Offsets:
            return offsets

        return ascii_chars
    chars = _byte_to_char(text)

    def convert(offsets: Offsets) -> Offsets:
        start, end = offsets
        if start >= n or start < 0:
            return offsets
        first = chars[start]
        if end < n:
            return (first, chars[end])
        last = chars[end - 1] if 0 < end <= n else first + 1
        return (first, last + 1)

    return convert


def sequence(
    tok: Tokenizer, sequence: str | list[str], is_pretokenized: bool, ids: list[int]
) -> tuple[list[Offsets], list[int | None]]:
    """(offsets, word ids) of one input sequence before post-processing, checked against
    ``ids``, the ids encode gave it."""
    if is_pretokenized:
        found: list[Token] = []
        for i, word in enumerate(sequence):
            found += tokens(tok, word, i)
    else:
        found = tokens(tok, sequence)  # type: ignore[arg-type]
    walked = [t.id for t in found]
    if walked != list(ids):
        at = next(
            (i for i, (a, b) in enumerate(zip(walked, ids)) if a != b), min(len(walked), len(ids))
        )
        raise AlignmentMismatch(
            f"batchtok bug: the offsets walk found other ids than encode at token {at} "
            f"({walked[at : at + 5]} vs {list(ids[at : at + 5])}); please report this text"
        )
    return [(t.start, t.end) for t in found], [t.word for t in found]
