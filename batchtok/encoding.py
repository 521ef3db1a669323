"""The Encoding: one encoded input, as the library's ``Encoding`` (without offsets).

Only ``ids`` is built while encoding. ``tokens``, ``type_ids``, ``special_tokens_mask`` and
``attention_mask`` are kept as a few *parts* each (a value repeated n times, a slice of a list,
or the vocab strings of a slice of ids) and expanded into a list the first time they are read:
truncation, post-processing and padding move a handful of parts instead of four lists of every
token, and a caller who reads only the ids never pays for the rest.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Mapping
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
        else:
            out += _excepted(n, a, b)
    return out


def _excepted(n: int, a: tuple, b: int) -> list[str]:
    model, ids, exceptions = a
    strings = list(map(model.vocab_r.__getitem__, ids[b : b + n]))
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


COLUMNS = ("tokens", "type_ids", "special_tokens_mask", "attention_mask")


class Encoding:
    """One encoded input: ids, tokens, type ids, masks and the overflowing windows.

    ``overflowing`` holds the parts cut by truncation, each an Encoding with special tokens
    added and padded like the main one. Offsets and word ids are not tracked by batchtok.

    >>> enc = tok.encode("Hello world", "And a pair")      # doctest: +SKIP
    >>> enc.ids, enc.type_ids, enc.sequence_ids             # doctest: +SKIP
    """

    __slots__ = (
        "ids",
        "_tokens",
        "_type_ids",
        "_special_tokens_mask",
        "_attention_mask",
        "overflowing",
        "_ranges",
    )

    tokens = _Column()
    type_ids = _Column()
    special_tokens_mask = _Column()
    attention_mask = _Column()

    def __init__(
        self,
        ids: list[int],
        tokens: Column,
        type_ids: Column,
        special_tokens_mask: Column,
        attention_mask: Column | None = None,
        overflowing: list[Encoding] | None = None,
        ranges: dict[int, tuple[int, int]] | None = None,
    ) -> None:
        self.ids = ids
        self._tokens = tokens
        self._type_ids = type_ids
        self._special_tokens_mask = special_tokens_mask
        self._attention_mask = _fill(len(ids), 1) if attention_mask is None else attention_mask
        self.overflowing: list[Encoding] = [] if overflowing is None else overflowing
        # sequence id -> (start, end) of its tokens, as the library's `sequence_ranges`
        self._ranges: dict[int, tuple[int, int]] = {} if ranges is None else ranges

    @classmethod
    def of_sequence(cls, ids: list[int], tokens: Column, type_id: int) -> Encoding:
        """A sequence's tokens before post-processing: no special mask, one type id.
        ``tokens``: a list, or parts from :func:`vocab_tokens`."""
        n = len(ids)
        return cls(ids, tokens, _fill(n, type_id), _fill(n, 0))

    @classmethod
    def of_specials(cls, ids: list[int], tokens: list[str], type_id: int) -> Encoding:
        """Special tokens (``tokens`` is shared, never mutated)."""
        n = len(ids)
        return cls(list(ids), _as_parts(tokens), _fill(n, type_id), _fill(n, 1))

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        more = "..." if len(self.ids) > 8 else ""
        return (
            f"Encoding(num_tokens={len(self.ids)}, ids={self.ids[:8]}{more}, "
            f"overflowing={len(self.overflowing)})"
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

    def set_sequence_id(self, sequence_id: int) -> None:
        self._ranges[sequence_id] = (0, len(self.ids))

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
        out._append(Encoding(self.ids, self._tokens, type_ids, _fill(n, 0)))
        out._append(Encoding.of_specials([after[0]], [after[1]], after[2]))
        return out

    @classmethod
    def merge(cls, encodings: list[Encoding]) -> Encoding:
        """The encodings one after the other (they are consumed)."""
        if len(encodings) == 1:
            return encodings[0]  # what merging it into an empty one gives, without the copies
        merged = cls([], (), (), (), ())
        for e in encodings:
            merged.merge_with(e)
        return merged

    def merge_with(self, pair: Encoding) -> None:
        """Append ``pair``; the overflowing windows become the library's cross product: each of
        ours + pair, then each of ours + each of pair's, then self + each of pair's. ``pair``
        is only read (the result shares no list with it that either side mutates)."""
        overflowing = []
        for mine in self.overflowing:
            combined = mine.copy()
            combined.merge_with(pair)
            overflowing.append(combined)
            for theirs in pair.overflowing:
                combined = mine.copy()
                combined.merge_with(theirs)
                overflowing.append(combined)
        for theirs in pair.overflowing:
            combined = self.copy()
            combined.merge_with(theirs)
            overflowing.append(combined)
        shift = len(self.ids)
        for seq_id, (start, end) in pair._ranges.items():
            self._ranges[seq_id] = (start + shift, end + shift)
        self._append(pair)
        self.overflowing = overflowing

    def _append(self, other: Encoding) -> None:
        """``other``'s tokens after ours (not its sequence ranges or overflowing)."""
        self.ids += other.ids
        self._tokens = _cat(self._tokens, other._tokens)
        self._type_ids = _cat(self._type_ids, other._type_ids)
        self._special_tokens_mask = _cat(self._special_tokens_mask, other._special_tokens_mask)
        self._attention_mask = _cat(self._attention_mask, other._attention_mask)

    def _slice(self, start: int, stop: int) -> Encoding:
        return Encoding(
            self.ids[start:stop],
            _cut(self._tokens, start, stop),
            _cut(self._type_ids, start, stop),
            _cut(self._special_tokens_mask, start, stop),
            _cut(self._attention_mask, start, stop),
        )

    def truncate(self, max_len: int, stride: int, direction: str) -> None:
        """Keep one window of ``max_len`` tokens; the others (overlapping by ``stride``) go to
        ``overflowing``, in the library's order."""
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

    def pad(self, target: int, padding: Padding) -> None:
        """Pad this encoding and its overflowing windows up to ``target`` tokens (never cut)."""
        for o in self.overflowing:
            o.pad(target, padding)
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
