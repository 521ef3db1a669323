"""The Encoding: one encoded input, as the library's ``Encoding``.

Only ``ids`` is built while encoding. ``tokens``, ``type_ids``, ``special_tokens_mask``,
``attention_mask``, ``offsets`` and ``word_ids`` are kept as a few *parts* each (a value repeated
n times, a slice of a list, the vocab strings of a slice of ids, or a slice of what a function
computes when read) and expanded into a list the first time they are read: truncation,
post-processing and padding move a handful of parts instead of six lists of every token, and a
caller who reads only the ids never pays for the rest. Offsets and word ids are computed by
walking the text again with alignments (:mod:`batchtok.alignment`), only when read.
"""

from __future__ import annotations

import warnings
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from itertools import repeat
from typing import TYPE_CHECKING, Protocol

from .truncation import check_stride, truncation_windows

if TYPE_CHECKING:
    from .padding import Padding


class HasVocabR(Protocol):
    """What token parts read their strings from: a model (its id -> token mapping)."""

    vocab_r: Mapping[int, str]


# A part is (n, kind, a, b), standing for n values:
_FILL = 0  # a, n times
_SLICE = 1  # a[b : b + n] (a is a list nobody mutates)
# the strings a[0].vocab_r[i] for i in a[1][b : b + n] (a: (the model, ids nobody mutates)):
# the model's vocab_r is read when the tokens are (a vocab the load cache deferred, only then)
_LOOKUP = 2
# the same strings, except where a[2]() (called when the tokens are read) gives a (position
# in a[1], string) pair, in increasing order: a[2] may compute a whole batch's exceptions then
_EXCEPTED = 3
# a()[b : b + n], a being a function called when the column is read (it memoizes: see Lazy)
_CALL = 4

Parts = tuple
# A column is a list once read or set, else its parts.
Column = list | tuple


def _fill(n: int, value: object) -> Parts:
    return ((n, _FILL, value, 0),) if n else ()


def _expand(parts: Parts) -> list:
    out: list = []
    for n, kind, a, b in parts:
        if kind == _FILL:
            out += repeat(a, n)
        elif kind == _SLICE:
            out += a[b : b + n]
        elif kind == _LOOKUP:
            out += map(a[0].vocab_r.__getitem__, a[1][b : b + n])
        elif kind == _CALL:
            out += a()[b : b + n]
        else:
            out += _excepted(n, a, b)
    return out


class Lazy:
    """A function's value, computed on the first call and kept."""

    __slots__ = ("fn", "value")

    def __init__(self, fn: Callable[[], list]) -> None:
        self.fn: Callable[[], list] | None = fn
        self.value: list = []

    def __call__(self) -> list:
        fn = self.fn  # (read once: another thread may finish first and clear it)
        if fn is not None:
            self.value = fn()
            self.fn = None
        return self.value


def lazy(n: int, fn: Callable[[], list]) -> Parts:
    """Parts of ``n`` values that ``fn`` computes (once) when they are read."""
    return ((n, _CALL, Lazy(fn), 0),) if n else ()


def _shifted(column: Column, n: int, base: Column) -> Column:
    """``column``'s ``n`` offsets moved by the end of ``base``'s last one (merge's growing
    offsets), computed when read."""
    column, base = _copy(column), _copy(base)

    def compute() -> list:
        ends = _expand(_as_parts(base))
        shift = ends[-1][1] if ends else 0
        return [(s + shift, e + shift) for s, e in _expand(_as_parts(column))]

    return lazy(n, compute)


def _excepted(n: int, a: tuple, b: int) -> list[str]:
    model, ids, exceptions = a
    # an added token's id may lie beyond the model's vocab: its string is an exception
    strings = list(map(model.vocab_r.get, ids[b : b + n]))
    found = exceptions()
    for i in range(bisect_left(found, (b,)), len(found)):
        at, string = found[i]
        if at >= b + n:
            break
        strings[at - b] = string
    return strings


def _as_parts(column: Column) -> Parts:
    if type(column) is tuple:
        return column
    return ((len(column), _SLICE, column[:], 0),) if column else ()


def _cut(column: Column, start: int, stop: int) -> Column:
    """``column[start:stop]``, as a list or as parts like ``column``."""
    if type(column) is not tuple:
        return column[start:stop]
    if len(column) == 1:  # most columns of a sequence cut into windows
        n, kind, a, b = column[0]
        if stop > n:
            stop = n
        if start >= stop:
            return ()
        return ((stop - start, kind, a, b if kind == _FILL else b + start),)
    out = []
    pos = 0
    for part in column:
        end = pos + part[0]
        if end > start:
            lo = start if start > pos else pos
            hi = stop if stop < end else end
            if lo == pos and hi == end:
                out.append(part)
            elif lo < hi:
                _, kind, a, b = part
                out.append((hi - lo, kind, a, b if kind == _FILL else b + lo - pos))
        if end >= stop:
            break
        pos = end
    return tuple(out)


def _copy(column: Column) -> Column:
    return column if type(column) is tuple else column[:]


def _cat(first: Column, second: Column) -> Column:
    """``first + second``; a list ``first`` is extended in place (as before parts existed)."""
    if type(first) is not tuple:
        first += second if type(second) is not tuple else _expand(second)
        return first
    return first + _as_parts(second)


def _pad(column: Column, k: int, value: object, left: bool) -> Column:
    if type(column) is not tuple:
        if left:
            return [value] * k + column
        column += [value] * k
        return column
    return _fill(k, value) + column if left else column + _fill(k, value)


def vocab_tokens(ids: list[int], model: HasVocabR, exceptions: list | Callable[[], list]) -> Parts:
    """The token strings of ``ids`` as parts: ``model.vocab_r[id]`` for each (read when they
    are), except at the positions of ``exceptions`` ((position, string) pairs in increasing
    order), which get their string; ``exceptions`` may be a function giving that list, called
    when the tokens are read. ``ids`` must not be mutated afterwards."""
    if type(exceptions) is not list:
        return ((len(ids), _EXCEPTED, (model, ids, exceptions), 0),) if ids else ()
    source = (model, ids)
    out = []
    pos = 0
    for at, string in exceptions:
        if at > pos:
            out.append((at - pos, _LOOKUP, source, pos))
        out.append((1, _FILL, string, 0))
        pos = at + 1
    if len(ids) > pos:
        out.append((len(ids) - pos, _LOOKUP, source, pos))
    return tuple(out)


def _unsigned(index: int) -> int:
    """An index as the library's binding takes it (a Rust usize)."""
    if index < 0:
        raise OverflowError("can't convert negative int to unsigned")
    return index


class _Column:
    """A public Encoding attribute: expanded to a list on first read; assignable."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.slot = getattr(owner, "_" + name)

    def __get__(self, obj: Encoding | None, owner: type | None = None):
        if obj is None:
            return self
        value = self.slot.__get__(obj, owner)
        if type(value) is tuple:
            value = _expand(value)
            self.slot.__set__(obj, value)
        return value

    def __set__(self, obj: Encoding, value: list) -> None:
        # a tuple would read as parts
        self.slot.__set__(obj, list(value) if type(value) is tuple else value)


COLUMNS = ("tokens", "type_ids", "special_tokens_mask", "attention_mask", "offsets", "word_ids")
NO_OFFSETS = (0, 0)  # of special tokens and padding, as in the library


class Encoding:
    """One encoded input: ids, tokens, type ids, masks, offsets, word ids and the overflowing
    windows.

    ``overflowing`` holds the parts cut by truncation, each an Encoding with special tokens
    added and padded like the main one. ``offsets`` are char offsets into the input text of
    each token's sequence ((0, 0) for special tokens and padding); ``word_ids`` the index of
    the pre-tokenizer's piece (or of the input word, pre-tokenized) each token comes from.

    >>> enc = tok.encode("Hello world", "And a pair")      # doctest: +SKIP
    >>> enc.ids, enc.type_ids, enc.sequence_ids             # doctest: +SKIP
    """

    __slots__ = (
        "ids",
        "_tokens",
        "_type_ids",
        "_special_tokens_mask",
        "_attention_mask",
        "_offsets",
        "_word_ids",
        "overflowing",
        "_ranges",
    )

    tokens = _Column()
    type_ids = _Column()
    special_tokens_mask = _Column()
    attention_mask = _Column()
    offsets = _Column()
    word_ids = _Column()

    def __init__(
        self,
        ids: list[int],
        tokens: Column,
        type_ids: Column,
        special_tokens_mask: Column,
        attention_mask: Column | None = None,
        overflowing: list[Encoding] | None = None,
        ranges: dict[int, tuple[int, int]] | None = None,
        offsets: Column | None = None,
        word_ids: Column | None = None,
    ) -> None:
        self.ids = ids
        self._tokens = tokens
        self._type_ids = type_ids
        self._special_tokens_mask = special_tokens_mask
        self._attention_mask = _fill(len(ids), 1) if attention_mask is None else attention_mask
        self._offsets = _fill(len(ids), NO_OFFSETS) if offsets is None else offsets
        self._word_ids = _fill(len(ids), None) if word_ids is None else word_ids
        self.overflowing: list[Encoding] = [] if overflowing is None else overflowing
        # sequence id -> (start, end) of its tokens, as the library's `sequence_ranges`
        self._ranges: dict[int, tuple[int, int]] = {} if ranges is None else ranges

    @classmethod
    def of_sequence(
        cls,
        ids: list[int],
        tokens: Column,
        type_id: int,
        aligned: Callable[[], tuple[list, list]] | None = None,
    ) -> Encoding:
        """A sequence's tokens before post-processing: no special mask, one type id.
        ``tokens``: a list, or parts from :func:`vocab_tokens`; ``aligned``: computes (offsets,
        word ids) when either is first read (None: none known)."""
        n = len(ids)
        if aligned is None:
            return cls(ids, tokens, _fill(n, type_id), _fill(n, 0))
        both = Lazy(aligned)
        return cls(
            ids,
            tokens,
            _fill(n, type_id),
            _fill(n, 0),
            offsets=lazy(n, lambda: both()[0]),
            word_ids=lazy(n, lambda: both()[1]),
        )

    @classmethod
    def of_specials(cls, ids: list[int], tokens: list[str], type_id: int) -> Encoding:
        """Special tokens (``tokens`` is shared, never mutated)."""
        n = len(ids)
        return cls(list(ids), _as_parts(tokens), _fill(n, type_id), _fill(n, 1))

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        return (
            f"Encoding(num_tokens={len(self.ids)}, attributes=[ids, type_ids, tokens, offsets, "
            "attention_mask, special_tokens_mask, overflowing])"
        )

    def __getstate__(self) -> dict:
        state = {name: getattr(self, name) for name in COLUMNS}
        state.update(ids=self.ids, overflowing=self.overflowing, _ranges=self._ranges)
        return state

    def __setstate__(self, state: dict) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    @property
    def n_sequences(self) -> int:
        """How many input sequences this encoding holds (1 or 2 after post-processing)."""
        return len(self._ranges) or 1

    @property
    def sequence_ids(self) -> list[int | None]:
        """Per token, the index of the input sequence it comes from; None for special tokens."""
        out: list[int | None] = [None] * len(self.ids)
        for seq_id in range(self.n_sequences):
            start, end = self._ranges.get(seq_id, (0, len(self.ids)))
            out[start:end] = [seq_id] * (end - start)
        return out

    @property
    def words(self) -> list[int | None]:
        """:attr:`word_ids` under the name the library deprecated (it warns, as here)."""
        warnings.warn(
            "Encoding.words is deprecated, please use Encoding.word_ids instead.",
            DeprecationWarning,
            stacklevel=2,
        )
        return self.word_ids

    def _sequence_range(self, sequence_index: int) -> tuple[int, int]:
        return self._ranges.get(_unsigned(sequence_index), (0, len(self.ids)))

    def token_to_sequence(self, token_index: int) -> int | None:
        """The index of the sequence the token belongs to (0 for a single sequence; None for a
        special token of a pair, or an index past the end)."""
        if _unsigned(token_index) > len(self.ids):
            return None
        if not self._ranges:
            return 0
        for seq_id, (start, end) in self._ranges.items():
            if start <= token_index < end:
                return seq_id
        return None

    def token_to_chars(self, token_index: int) -> tuple[int, int] | None:
        """The token's offsets in its sequence's text."""
        if self.token_to_sequence(token_index) is None or token_index >= len(self.ids):
            return None
        return self.offsets[token_index]

    def token_to_word(self, token_index: int) -> int | None:
        """The index of the word the token comes from, in its sequence."""
        if self.token_to_sequence(token_index) is None or token_index >= len(self.ids):
            return None
        return self.word_ids[token_index]

    def word_to_tokens(self, word_index: int, sequence_index: int = 0) -> tuple[int, int] | None:
        """(first token, past the last token) of the word in the given sequence."""
        if word_index < 0:
            raise OverflowError("number too small to fit in target type")
        start, end = self._sequence_range(sequence_index)
        words = self.word_ids[start:end]
        first = last = None
        for i, w in enumerate(words):
            if w is not None and w > word_index:
                break  # the library stops at the first later word (None sorts first)
            if w == word_index:
                if first is None:
                    first = i
                last = i + 1
        if first is None or last is None:
            return None
        return (start + first, start + last)

    def word_to_chars(self, word_index: int, sequence_index: int = 0) -> tuple[int, int] | None:
        """The word's offsets in its sequence's text."""
        found = self.word_to_tokens(word_index, sequence_index)
        if found is None or found[1] == 0:
            return None
        offsets = self.offsets
        return (offsets[found[0]][0], offsets[found[1] - 1][1])

    def char_to_token(self, char_pos: int, sequence_index: int = 0) -> int | None:
        """The token whose offsets hold the char (the first such) in the given sequence."""
        _unsigned(char_pos)
        start, end = self._sequence_range(sequence_index)
        for i, (a, b) in enumerate(self.offsets[start:end]):
            if a <= char_pos < b:
                return start + i
        return None

    def char_to_word(self, char_pos: int, sequence_index: int = 0) -> int | None:
        """The word holding the char in the given sequence."""
        token = self.char_to_token(char_pos, sequence_index)
        return None if token is None else self.token_to_word(token)

    def set_sequence_id(self, sequence_id: int) -> None:
        self._ranges[sequence_id] = (0, len(self.ids))

    def map_offsets(self, fn: Callable[[list[str], list], list]) -> None:
        """The offsets become ``fn(tokens, offsets)`` of the current ones, computed when read
        (a post-processor's ``trim_offsets``)."""
        tokens, offsets = _copy(self._tokens), _copy(self._offsets)
        self._offsets = lazy(
            len(self.ids), lambda: fn(_expand(_as_parts(tokens)), _expand(_as_parts(offsets)))
        )

    def set_type_ids(self, type_id: int) -> None:
        """Every token's type id becomes ``type_id``."""
        self._type_ids = _fill(len(self.ids), type_id)

    def copy(self) -> Encoding:
        """A deep copy (lists and overflowing encodings are not shared)."""
        return Encoding(
            self.ids[:],
            _copy(self._tokens),
            _copy(self._type_ids),
            _copy(self._special_tokens_mask),
            _copy(self._attention_mask),
            [o.copy() for o in self.overflowing],
            dict(self._ranges),
            _copy(self._offsets),
            _copy(self._word_ids),
        )

    def wrap(
        self,
        before: tuple[int, str, int] | None,
        after: tuple[int, str, int],
        ranges: dict[int, tuple[int, int]],
        type_id: int | None = None,
    ) -> Encoding:
        """A new encoding: the special token ``before`` (id, token, type id; None for none),
        these tokens with special mask 0 (and type id ``type_id`` unless None), then
        ``after``; attention 1 everywhere, no overflowing. ``ranges``: its sequence ranges."""
        out = Encoding([], (), (), (), (), None, ranges)
        if before is not None:
            out._append(Encoding.of_specials([before[0]], [before[1]], before[2]))
        n = len(self.ids)
        type_ids = self._type_ids if type_id is None else _fill(n, type_id)
        out._append(
            Encoding(
                self.ids,
                self._tokens,
                type_ids,
                _fill(n, 0),
                offsets=self._offsets,
                word_ids=self._word_ids,
            )
        )
        out._append(Encoding.of_specials([after[0]], [after[1]], after[2]))
        return out

    @staticmethod
    def merge(encodings: Iterable[Encoding], growing_offsets: bool = True) -> Encoding:
        """The encodings one after the other in a new Encoding (the library's
        ``Encoding.merge``); with ``growing_offsets``, each one's offsets move past the end of
        the last offset before it."""
        merged = Encoding([], (), (), (), ())
        for e in encodings:
            merged.merge_with(e, growing_offsets)
        return merged

    @classmethod
    def merged(cls, encodings: list[Encoding]) -> Encoding:
        """:meth:`merge` without growing offsets, consuming the encodings (the post-processors'
        merge)."""
        if len(encodings) == 1:
            return encodings[0]  # what merging it into an empty one gives, without the copies
        merged = cls([], (), (), (), ())
        for e in encodings:
            merged.merge_with(e)
        return merged

    def merge_with(self, pair: Encoding, growing_offsets: bool = False) -> None:
        """Append ``pair``; the overflowing windows become the library's cross product: each of
        ours + pair, then each of ours + each of pair's, then self + each of pair's. ``pair``
        is only read (the result shares no list with it that either side mutates)."""
        overflowing = []
        for mine in self.overflowing:
            combined = mine.copy()
            combined.merge_with(pair, growing_offsets)
            overflowing.append(combined)
            for theirs in pair.overflowing:
                combined = mine.copy()
                combined.merge_with(theirs, growing_offsets)
                overflowing.append(combined)
        for theirs in pair.overflowing:
            combined = self.copy()
            combined.merge_with(theirs, growing_offsets)
            overflowing.append(combined)
        shift = len(self.ids)
        for seq_id, (start, end) in pair._ranges.items():
            self._ranges[seq_id] = (start + shift, end + shift)
        self._append(pair, growing_offsets)
        self.overflowing = overflowing

    def _append(self, other: Encoding, growing_offsets: bool = False) -> None:
        """``other``'s tokens after ours (not its sequence ranges or overflowing)."""
        offsets = other._offsets
        if growing_offsets and self.ids and other.ids:
            offsets = _shifted(offsets, len(other.ids), self._offsets)
        self.ids += other.ids
        self._tokens = _cat(self._tokens, other._tokens)
        self._type_ids = _cat(self._type_ids, other._type_ids)
        self._special_tokens_mask = _cat(self._special_tokens_mask, other._special_tokens_mask)
        self._attention_mask = _cat(self._attention_mask, other._attention_mask)
        self._offsets = _cat(self._offsets, offsets)
        self._word_ids = _cat(self._word_ids, other._word_ids)

    def _slice(self, start: int, stop: int) -> Encoding:
        return Encoding(
            self.ids[start:stop],
            _cut(self._tokens, start, stop),
            _cut(self._type_ids, start, stop),
            _cut(self._special_tokens_mask, start, stop),
            _cut(self._attention_mask, start, stop),
            None,
            None,
            _cut(self._offsets, start, stop),
            _cut(self._word_ids, start, stop),
        )

    def truncate(self, max_length: int, stride: int = 0, direction: str = "right") -> None:
        """Keep one window of ``max_length`` tokens; the others (overlapping by ``stride``) go
        to ``overflowing``, in the library's order."""
        if direction not in ("left", "right"):
            raise ValueError(f"Invalid truncation direction value : {direction}")
        max_len = max_length
        n = len(self.ids)
        if max_len >= n:
            return
        if max_len == 0:
            whole = self._slice(0, n)
            whole.overflowing, whole._ranges = self.overflowing, self._ranges
            self._become(Encoding([], (), (), (), ()))
            self.overflowing = [whole]
            return
        check_stride(stride, max_len)
        windows = truncation_windows(n, max_len, stride, direction)
        kept = self._slice(*windows[0])
        kept.overflowing = [self._slice(*w) for w in windows[1:]]
        self._become(kept)

    def _become(self, other: Encoding) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(other, name))

    def pad(
        self,
        length: int,
        direction: str = "right",
        pad_id: int = 0,
        pad_type_id: int = 0,
        pad_token: str = "[PAD]",
        **unknown: object,
    ) -> None:
        """Pad this encoding and its overflowing windows up to ``length`` tokens (never cut),
        as the library's ``Encoding.pad`` (an unknown keyword is reported and ignored, as
        there)."""
        from .added_vocabulary import ignore_unknown_options
        from .padding import Padding

        ignore_unknown_options(unknown)

        if direction not in ("left", "right"):
            raise ValueError(f"Unknown `direction`: `{direction}`. Use one of `left` or `right`")
        self.pad_to(length, Padding(direction, pad_id, pad_type_id, pad_token))

    def pad_to(self, target: int, padding: Padding) -> None:
        """Pad this encoding and its overflowing windows up to ``target`` tokens (never cut)."""
        for o in self.overflowing:
            o.pad_to(target, padding)
        k = target - len(self.ids)
        if k <= 0:
            return
        left = padding.direction == "left"
        if left:
            self.ids = [padding.pad_id] * k + self.ids
            self._ranges = {i: (s + k, e + k) for i, (s, e) in self._ranges.items()}
        else:
            self.ids += [padding.pad_id] * k
        self._type_ids = _pad(self._type_ids, k, padding.pad_type_id, left)
        self._tokens = _pad(self._tokens, k, padding.pad_token, left)
        self._attention_mask = _pad(self._attention_mask, k, 0, left)
        self._special_tokens_mask = _pad(self._special_tokens_mask, k, 1, left)
        self._offsets = _pad(self._offsets, k, NO_OFFSETS, left)
        self._word_ids = _pad(self._word_ids, k, None, left)
