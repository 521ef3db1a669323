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
from .utils.byte_level import byte_level_map

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
        starts = char_starts(text)
        if start:
            starts = [at + start for at in starts]
        return cls(text, list(zip(starts, starts[1:])), start)

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
    chars = None if text.isascii() else byte_to_char(text)
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


def char_starts(text: str) -> list[int]:
    """Where each char of ``text`` starts in its UTF-8 bytes, and the length of those."""
    if text.isascii():
        return list(range(len(text) + 1))
    data = text.encode("utf-8")
    if len(data) < 64:
        out = [i for i, b in enumerate(data) if b & 0xC0 != 0x80]
    else:
        import numpy as np  # (not at import: a plain run never reads offsets)

        out = np.flatnonzero(np.frombuffer(data, np.uint8) & 0xC0 != 0x80).tolist()
    out.append(len(data))
    return out


def char_sizes(text: str) -> list[int]:
    """The UTF-8 length of each char of ``text``."""
    if text.isascii():
        return [1] * len(text)
    starts = char_starts(text)
    return [b - a for a, b in zip(starts, starts[1:])]


def byte_to_char(text: str) -> list[int]:
    """The char index of each UTF-8 byte of ``text``."""
    out: list[int] = []
    for i, n in enumerate(char_sizes(text)):
        if n == 1:
            out.append(i)
        else:
            out += [i] * n
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
    for a, size in zip(s.align, char_sizes(s.text)):
        if size == 1:
            align.append(a)
        else:
            align += [a] * size
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


def fragments(tok: Tokenizer, text: str) -> list[tuple[Aligned, int | None]]:
    """The splits of ``text`` before the pre-tokenizer: the added tokens found (as the library
    finds them, in the raw text, then in the normalized fragments) and the normalized text
    around them."""
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
    return raw


def _byte_positions(text: str) -> Callable[[int], int]:
    """char index -> its byte offset in ``text``."""
    if text.isascii():
        return int
    return char_starts(text).__getitem__


class Walk:
    """The tokens found so far of one sequence: ids, char offsets, word ids; ``expected``: the
    ids encode gave the sequence, which a model may read instead of tokenizing again."""

    __slots__ = ("ids", "offsets", "words", "expected")

    def __init__(self, expected: list[int]) -> None:
        self.ids: list[int] = []
        self.offsets: list[Offsets] = []
        self.words: list[int | None] = []
        self.expected = expected


def walk_text(tok: Tokenizer, text: str, walk: Walk, word: int | None = None) -> None:
    """Add the tokens of one text (a sequence, or one word of a pre-tokenized one) before
    post-processing to ``walk``, with their char offsets in ``text`` and word ids (``word``:
    every token's, as for a pre-tokenized word; else each split's index)."""
    model_offsets = _model_offsets(tok.model)
    ids, offsets, words = walk.ids, walk.offsets, walk.words
    # the char index of each byte of the text (None: ASCII, the identity)
    byte_chars = None if text.isascii() else byte_to_char(text)
    size = len(text) if byte_chars is None else len(byte_chars)

    def to_chars(offsets: Offsets) -> Offsets:
        return char_offsets(byte_chars, size, offsets)

    pre = tok.pre_tokenizer
    # A byte-level file without a normalizer: each piece's bytes map to the text's own, so
    # its tokens' offsets need no char-by-char alignment (what split_aligned would build).
    bytes_only = tok.normalizer is None and pre is not None
    n = 0  # splits so far: the word index
    for s, token_id in fragments(tok, text):
        if token_id is not None:
            ids.append(token_id)
            offsets.append(to_chars((s.align[0][0], s.align[-1][1])))  # all of its chars
            words.append(n if word is None else word)
            n += 1
            continue
        spans = pre.byte_level_spans(s.text) if bytes_only else None  # type: ignore[union-attr]
        if spans is None:
            pieces = [s] if pre is None else [p for p in pre.split_aligned(s) if p.text]
            for piece in pieces:
                w = n if word is None else word
                n += 1
                for span in model_offsets(piece.text, walk.expected, len(ids)):
                    ids.append(span[0])
                    offsets.append(to_chars(piece.original(span)))
                    words.append(w)
            continue
        for a, b in spans:
            if b <= a:
                continue
            w = n if word is None else word
            n += 1
            at = s.align[a][0]  # where the piece starts in the text's bytes
            for token_id_, x, y, first, last in model_offsets(
                byte_level_map(s.text[a:b]), walk.expected, len(ids)
            ):
                ids.append(token_id_)
                words.append(w)
                if first < 0:
                    offsets.append(to_chars((at + x, at + y) if x == y else (x, y)))
                elif byte_chars is None:
                    offsets.append((at + first, at + last + 1))
                else:
                    offsets.append((byte_chars[at + first], byte_chars[at + last] + 1))


# Each model's token offsets of the pieces it has seen lately: words repeat.
OFFSETS_CACHES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
OFFSETS_CACHE_ENTRIES = 50_000


def _model_offsets(model: Model) -> Callable[[str, list[int], int], list[Span]]:
    """The spans of ``model.token_offsets``, remembered per piece (the cache is emptied when
    full)."""
    try:
        cache = OFFSETS_CACHES[model]
    except KeyError:
        cache = OFFSETS_CACHES[model] = {}
    compute = model.token_offsets

    def offsets(piece: str, ids: list[int], start: int) -> list[Span]:
        found = cache.get(piece)
        if found is None:
            if len(cache) >= OFFSETS_CACHE_ENTRIES:
                cache.clear()
            found = cache[piece] = spans_of(piece, compute(piece, ids, start))
        return found

    return offsets


def char_offsets(chars: list[int] | None, n: int, offsets: Offsets) -> Offsets:
    """Byte offsets in a text of ``n`` bytes as char offsets, converted as the library converts
    them (its ``BytesToCharOffsetConverter``); ``chars``: each byte's char index
    (:func:`byte_to_char`; None: ASCII, each byte its own char). An end past the text counts
    from the byte before it; a start past the text leaves the offsets as bytes."""
    start, end = offsets
    if not 0 <= start < n:
        return offsets
    first = start if chars is None else chars[start]
    if end < n:
        return (first, end if chars is None else chars[end])
    if 0 < end <= n:
        last = end - 1 if chars is None else chars[end - 1]
    else:
        last = first + 1
    return (first, last + 1)


def sequence(
    tok: Tokenizer, sequence: str | list[str], is_pretokenized: bool, ids: list[int]
) -> tuple[list[Offsets], list[int | None]]:
    """(offsets, word ids) of one input sequence before post-processing, checked against
    ``ids``, the ids encode gave it."""
    walk = Walk(ids)
    if is_pretokenized:
        for i, word in enumerate(sequence):
            walk_text(tok, word, walk, i)
    else:
        walk_text(tok, sequence, walk)  # type: ignore[arg-type]
    walked = walk.ids
    if walked != ids:
        at = next(
            (i for i, (a, b) in enumerate(zip(walked, ids)) if a != b), min(len(walked), len(ids))
        )
        raise AlignmentMismatch(
            f"batchtok bug: the offsets walk found other ids than encode at token {at} "
            f"({walked[at : at + 5]} vs {list(ids[at : at + 5])}); please report this text"
        )
    return walk.offsets, walk.words
