"""Where a BPE model provably merges the two sides of a cut independently (checked at load time).

Files without a pre-tokenizer (Llama-2 style) send a whole text to BPE as one word; when the
proof holds, the tokenizer cuts it here and caches each part on its own.
"""

from __future__ import annotations

import re
import unicodedata
from array import array
from collections.abc import Callable, Iterator
from itertools import chain, compress, islice
from operator import add, itemgetter, not_
from typing import TYPE_CHECKING

import regex

from ..metaspace import AtStart
from ..utils.bounds import PieceBounds
from ..utils.byte_level import BYTE_TO_CHAR

if TYPE_CHECKING:
    import numpy as np

    from .bpe import BPE


# compose_many's markers for a char without an id of its own: its bytes' ids (ragged.with_bytes
# expands -1), or none at all (in a longer token, or a lone surrogate: not composable)
_BYTES, _IN_LONGER = -1, -2
# fewer parts than this are composed one by one (numpy's calls cost more)
_COMPOSE_MANY_MIN = 32
# worth_composing reads about _SAMPLE parts and wants at least _MIN_RUN_SHARE of them to start
# like a run (Llama-2 on text of many scripts: 0.29; Gemma 3: 0.01-0.02)
_SAMPLE = 1024
_MIN_RUN_SHARE = 0.05
_U32 = next(code for code in "IL" if array(code).itemsize == 4)  # an array of uint32
# split_many's kinds of chars, one for each alternative of the parts (and the NUL that joins
# the words); fewer words than _SPLIT_MANY_MIN are split one by one
_ISOLATED, _JOINED, _MARK, _SEPARATOR = 0, 1, 2, 3
_SPLIT_MANY_MIN = 16


class BoundarySplitter:
    """Cut a word where BPE provably merges the two sides independently (checked at load time).

    Enabled only when no merge involves a byte-fallback token or the unk token, so every
    symbol spanning a cut would be a vocab token whose text occurs in the word. Two kinds of
    cuts:

    * around *isolated* chars: a char that is a token on its own and occurs in no longer
      token, or (with byte fallback over all 256 bytes) a char that is not in the vocab, can
      never be merged with a neighbour;
    * before each run of ``mark`` (U+2581): a symbol spanning it would be a "crossing" token,
      a non-mark char followed by the mark. Where the vocab has such tokens, a cut is kept
      whole wherever one of them occurs in the word across it.

    Each part then goes through the piece cache on its own.
    """

    @staticmethod
    def for_model(model: BPE) -> BoundarySplitter | None:
        if model.prefix or model.suffix:
            return None
        if model.ignore_merges:
            # the whole-word lookup applies to the pre-token, never to a part of it (a part
            # that is a vocab token must still be merged), and the parts this splitter makes go
            # through the model one by one: it would look them up (BPE.tokenize cuts words
            # itself, after the lookup)
            return None
        has_all_bytes = model.byte_fallback_ids() is not None
        if model.unk_token not in model.vocab and not has_all_bytes:
            # a char the vocab lacks then vanishes from the word, and the chars on its two
            # sides may merge across it: no cut is provably safe
            return None
        special = {model.vocab[t] for t in model.byte_token_strings() if t in model.vocab}
        if model.unk_token in model.vocab:
            special.add(model.vocab[model.unk_token])
        if special and any(
            key // model.stride in special or key % model.stride in special for key in model.pairs
        ):
            return None
        return BoundarySplitter(model)

    def __init__(self, model: BPE, mark: str = "\u2581") -> None:
        vocab = model.vocab
        in_longer = set("".join(t for t in vocab if len(t) > 1))
        byte_ids = model.byte_fallback_ids()
        has_all_bytes = byte_ids is not None
        # (with "", the first char ``part[:1]`` of an empty part, which is no run either)
        self._in_longer = frozenset(in_longer) | {""}
        singles = {t: i for t, i in vocab.items() if len(t) == 1}
        self._char_ids = _CharIds(
            {c: (i,) for c, i in singles.items() if c not in in_longer}, byte_ids
        )
        self._byte_ids = byte_ids
        # compose_many's lookup (plain arrays: a pickle of them loads without numpy): the
        # sorted code points of the one-char tokens and of the chars in longer tokens, and
        # each one's id (_IN_LONGER for the latter)
        singles.update(dict.fromkeys(in_longer, _IN_LONGER))
        chars = sorted(singles)
        self._keys = array(_U32, map(ord, chars))
        self._values = array("q", map(singles.__getitem__, chars))
        # Without a ``mark`` token, the mark is a char like any other: every char must fall
        # in one of the classes below, or the pieces would drop it.
        self.mark = mark if mark in vocab else ""
        marks = {mark} if self.mark else set()
        if has_all_bytes:
            isolated = "[^" + _char_class(in_longer) + "]"
            joined = "[" + _char_class(in_longer - marks) + "]"
        else:
            lone = {t for t in vocab if len(t) == 1} - in_longer - marks
            isolated = "[" + _char_class(lone) + "]" if lone else ""
            joined = "[^" + _char_class(lone | marks) + "]"
        m = re.escape(self.mark)
        alternatives = [f"{m}*{joined}+", f"{m}+"] if self.mark else [f"{joined}+"]
        if isolated:
            # a run of isolated chars is one part: none of them ever merges (see compose)
            alternatives.append(isolated + "+")
        if not self.mark and not isolated:
            self.active = False
            return
        self.active = True
        self._parts = re.compile("|".join(alternatives))
        crossing_shape = re.compile(f"[^{re.escape(mark)}]{re.escape(mark)}")
        crossing = [t for t in vocab if mark in t and crossing_shape.search(t)]
        longest_first = sorted(crossing, key=len, reverse=True)
        self._crossing = (
            regex.compile("|".join(map(regex.escape, longest_first)))
            if crossing and self.mark
            else None
        )
        # split_many reads each char's kind: one of mark, joined, isolated, unless the mark
        # is also isolated (no longer token holds it; the parts then depend on the order of
        # the alternatives); a word where a crossing token keeps some cuts whole is split
        # alone (a crossing token holding the NUL that joins the words: every word)
        self._kinds_apart = not (has_all_bytes and self.mark and self.mark not in in_longer)
        self._crossing_nul = any("\0" in t for t in crossing)

    def __getstate__(self) -> dict:
        """A pickle leaves out the tables of split_many's kinds and compose_many's status
        (numpy; built on first use)."""
        state = dict(self.__dict__)
        state.pop("_kind_table", None)
        state.pop("_status_table", None)
        return state

    def compose(self, part: str) -> tuple[int, ...] | None:
        """The ids of ``part`` when all its chars are isolated (a run :meth:`split` makes):
        no merge can involve any of them, so they are their chars' ids (or bytes' ids) end to
        end. None for any other part: an empty one, one with a char in a longer token or one
        the vocab lacks without byte fallback over all 256 bytes (unk, perhaps fused), or one
        with no UTF-8 bytes (a lone surrogate, which the model raises for)."""
        if not part or not self._in_longer.isdisjoint(part):
            return None
        try:
            return tuple(chain.from_iterable(map(self._char_ids.__getitem__, part)))
        except (KeyError, UnicodeEncodeError):
            return None

    def worth_composing(self, parts: list[str]) -> bool:
        """Whether enough of ``parts`` may be runs (read off a sample of them) for
        :meth:`compose_many` to save more than it costs: with a vocab that joins nearly every
        char (Gemma's), runs are rare and its pass over every part is lost time. The ids are
        the same either way: the model merges whatever is not composed."""
        step = max(1, len(parts) // _SAMPLE)
        firsts = map(itemgetter(slice(1)), islice(parts, 0, None, step))
        sample = -(-len(parts) // step)
        runs = sample - sum(map(self._in_longer.__contains__, firsts))
        return runs >= sample * _MIN_RUN_SHARE

    def compose_many(self, parts: list[str]) -> tuple[list[str], list[tuple[int, ...]], list[str]]:
        """:meth:`compose` of each part, together in numpy: (the parts it composes, their
        ids, the other parts), the parts in their order."""
        if len(parts) < _COMPOSE_MANY_MIN:
            return self._compose_each(parts)  # (without numpy's import, for a small call)
        import numpy as np

        from .ragged import code_points, lengths_of, starts_of, with_bytes

        # the parts joined by NULs, which mark where each one starts (counting the lengths
        # one by one costs more), unless a part holds a NUL
        points = code_points("\0".join(parts))
        ends = np.flatnonzero(points == 0)
        if len(ends) == len(parts) - 1:
            lengths = np.diff(ends, prepend=-1, append=len(points)) - 1
            points = np.delete(points, ends)
        else:
            lengths = lengths_of(parts)
            points = code_points("".join(parts))
        if not lengths.all():
            return self._compose_each(parts)
        status = self._status(points)
        good = np.logical_and.reduceat(status != _IN_LONGER, starts_of(lengths))
        if not good.any():
            return [], [], parts
        in_good = np.repeat(good, lengths)
        status, points = status[in_good], points[in_good]
        starts = starts_of(lengths[good])
        if self._byte_ids is None:
            flat, counts = status, np.add.reduceat(np.ones(len(status), np.int64), starts)
        else:
            flat, counts = with_bytes(points, status, starts, np.array(self._byte_ids, np.int64))
        ends = np.cumsum(counts).tolist()
        ids = flat.tolist()
        composed = list(map(tuple, map(ids.__getitem__, map(slice, [0] + ends[:-1], ends))))
        return (
            list(compress(parts, good.tolist())),
            composed,
            list(compress(parts, (~good).tolist())),
        )

    def _compose_each(self, parts: list[str]) -> tuple[list[str], list[tuple[int, ...]], list[str]]:
        """:meth:`compose_many`, a part at a time."""
        found = list(map(self.compose, parts))
        done = [ids is not None for ids in found]
        return (
            list(compress(parts, done)),
            list(compress(found, done)),
            list(compress(parts, map(not_, done))),
        )

    def _status(self, points: np.ndarray) -> np.ndarray:
        """Each code point's id, or _IN_LONGER (no id of its own, in a longer token, or a
        lone surrogate, which has no UTF-8 bytes: the model raises for it), or _BYTES (in no
        token: its bytes' ids)."""
        import numpy as np

        missing = _BYTES if self._byte_ids is not None else _IN_LONGER
        values = np.frombuffer(self._values, np.int64)

        def build() -> np.ndarray:
            table = _bmp_table(self._keys, values, missing, np.int64)
            table[0xD800:0xE000] = _IN_LONGER
            return table

        return self._per_point("_status_table", build, points, values, missing)

    def iter_split(self, word: str) -> Iterator[str]:
        """:meth:`split` one piece at a time, for a word too long to hold all its pieces."""
        parts = (m.group() for m in self._parts.finditer(word))
        if self._crossing is None:
            yield from parts
            return
        # a cut at ``at`` is unsafe when a crossing token's match starts before it and ends
        # after it; matches come in order of their start, so the furthest end so far decides
        crossings = self._crossing.finditer(word, overlapped=True)
        cross = next(crossings, None)
        reach = 0
        held = next(parts, None)
        if held is None:
            return
        at = len(held)
        for piece in parts:
            while cross is not None and cross.start() < at:
                reach = max(reach, cross.end())
                cross = next(crossings, None)
            if at < reach:
                held += piece
            else:
                yield held
                held = piece
            at += len(piece)
        yield held

    def after(
        self, split: Callable[[str, AtStart], list[str]] | None
    ) -> Callable[[str, AtStart], list[str]]:
        """``split`` (a pre-tokenizer's), each of its pieces then cut here; None: a
        pre-tokenizer that keeps each fragment whole."""
        cut = self.split
        if split is None:
            return lambda text, at_start: cut(text)

        def run(text: str, at_start: AtStart) -> list[str]:
            out: list[str] = []
            for piece in split(text, at_start):
                out += cut(piece)
            return out

        return run

    def after_stream(
        self, stream: Callable[[str, AtStart], Iterator[list[str]]], long_chars: int
    ) -> Callable[[str, AtStart], Iterator[list[str]]]:
        """:meth:`after` for a streaming split (batches of pieces); a piece over ``long_chars``
        (a whole text, without a pre-tokenizer) is cut a batch of parts at a time."""
        cut, cut_long = self.split, self.iter_split

        def run(text: str, at_start: AtStart) -> Iterator[list[str]]:
            for pieces in stream(text, at_start):
                out: list[str] = []
                for piece in pieces:
                    if len(piece) <= long_chars:
                        out += cut(piece)
                        continue
                    if out:
                        yield out
                        out = []
                    parts = cut_long(piece)
                    while batch := list(islice(parts, 4096)):
                        yield batch
                yield out

        return run

    def split_many(self, words: list[str]) -> list[list[str]]:
        """``[self.split(w) for w in words]``, the cuts found in numpy for all the words at
        once: with the mark, the joined and the isolated chars apart (see ``_parts``), a part
        ends before a mark that follows another char, and between an isolated char and a
        char that is not. The words are joined by NULs, the cuts become more NULs, and one
        ``str.split`` makes every part."""
        found = self._cut_many(words) if len(words) >= _SPLIT_MANY_MIN else None
        if found is None:
            return list(map(self.split, words))  # (without numpy's import, for a small call)
        import numpy as np

        points, at, ends, redo = found
        parts = np.insert(points, at, 0).tobytes().decode("utf-32-le", "surrogatepass").split("\0")
        # each word's parts: one more than its cuts (an empty word: one empty part)
        last = np.cumsum(np.diff(np.searchsorted(at, ends), prepend=0) + 1)
        first = np.append(0, last[:-1])
        out = list(map(parts.__getitem__, map(slice, first.tolist(), last.tolist())))
        lengths = np.diff(ends, prepend=-1) - 1
        for empty in np.flatnonzero(lengths == 0).tolist():
            out[empty] = []
        for word in redo:
            out[word] = self.split(words[word])
        return out

    def bounds(self, words: list[str]) -> PieceBounds | None:
        """The parts of :meth:`split_many` as arrays over the words joined by NULs (None
        where :meth:`split_many` splits each word alone, and where a word holds U+FFFF, which
        no piece of :class:`.PieceBounds` may)."""
        found = self._cut_many(words)
        if found is None:
            return None
        import numpy as np

        points, at, ends, redo = found
        if np.any((points >> 11) == 0x1B):  # a lone surrogate: by strings, which raise for it
            return None
        if np.any(points == 0xFFFF):  # the piece table's joint between pieces: by strings
            return None
        word_starts = np.append(0, ends[:-1] + 1)
        cut = np.zeros(len(points) + 1, dtype=bool)
        cut[at] = True
        cut[word_starts] = True
        cut[ends] = False  # a NUL, or the end: no part starts there
        starts = np.flatnonzero(cut)
        first = np.searchsorted(starts, np.append(word_starts, len(points) + 1))
        # a part ends where the next starts, or at its word's end
        stops = np.sort(np.concatenate((starts, ends)))
        return PieceBounds(points, starts, stops[np.searchsorted(stops, starts) + 1], first, redo)

    def _cut_many(
        self, words: list[str]
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[int]] | None:
        """(the code points of ``words`` joined by NULs, where a part starts inside a word,
        where each word ends, the words a crossing token is found in: split alone), or None
        when the words are split one by one."""
        if not self._kinds_apart or self._crossing_nul or not words:
            return None
        text = "\0".join(words)
        if text.count("\0") != len(words) - 1:  # a word holds a NUL
            return None
        import numpy as np

        from .ragged import code_points

        points = code_points(text)
        kinds = self._kinds(points)
        before, after = kinds[:-1], kinds[1:]
        cut = (after == _MARK) & (before != _MARK)
        cut |= (after == _ISOLATED) != (before == _ISOLATED)
        cut &= before != _SEPARATOR
        cut &= after != _SEPARATOR
        at = np.flatnonzero(cut) + 1
        ends = np.append(np.flatnonzero(kinds == _SEPARATOR), len(points))
        redo: list[int] = []
        if self._crossing is not None:
            # a word holds a crossing token where a match of the joined text starts in it (no
            # such token holds a NUL: a match never spans two words)
            found = [m.start() for m in self._crossing.finditer(text)]
            redo = sorted(set(np.searchsorted(ends, found).tolist()))
        return points, at, ends, redo

    def _kinds(self, points: np.ndarray) -> np.ndarray:
        """split_many's kind of each code point (int8)."""
        import numpy as np

        values = np.frombuffer(self._values, np.int64)
        # the chars keyed apart: with byte fallback over all bytes, the chars of longer tokens
        # (the others are isolated); else the one-char tokens in no longer token
        if self._byte_ids is not None:
            keyed, keyed_kind, other_kind = values == _IN_LONGER, _JOINED, _ISOLATED
        else:
            keyed, keyed_kind, other_kind = values >= 0, _ISOLATED, _JOINED
        kinds = np.where(keyed, keyed_kind, other_kind).astype(np.int8)

        def build() -> np.ndarray:
            table = _bmp_table(self._keys, kinds, other_kind, np.int8)
            if self.mark:
                table[ord(self.mark)] = _MARK
            table[0] = _SEPARATOR
            return table

        return self._per_point("_kind_table", build, points, kinds, other_kind)

    def _per_point(
        self,
        name: str,
        build: Callable[[], np.ndarray],
        points: np.ndarray,
        values: np.ndarray,
        missing: int,
    ) -> np.ndarray:
        """A value for each code point: from the 64K table of the BMP kept as ``name`` (built
        on first use, left out of a pickle), past U+FFFF the value of its key in ``_keys``
        (``values``: each key's), else ``missing``."""
        import numpy as np

        table = self.__dict__.get(name)
        if table is None:
            table = build()
            setattr(self, name, table)
        found = table.take(points, mode="clip")  # (past U+FFFF: set below)
        beyond = points > 0xFFFF
        if beyond.any():
            keys = np.frombuffer(self._keys, np.uint32)
            far = points[beyond]
            if len(keys):
                at = np.minimum(np.searchsorted(keys, far), len(keys) - 1)
                found[beyond] = np.where(keys[at] == far, values[at], missing)
            else:
                found[beyond] = missing
        return found

    def split(self, word: str) -> list[str]:
        pieces = self._parts.findall(word)
        if self._crossing is None or len(pieces) < 2 or not self._crossing.search(word):
            return pieces
        unsafe: set[int] = set()
        for m in self._crossing.finditer(word, overlapped=True):
            unsafe.update(range(m.start() + 1, m.end()))
        out = [pieces[0]]
        at = len(pieces[0])
        for piece in pieces[1:]:
            if at in unsafe:
                out[-1] += piece
            else:
                out.append(piece)
            at += len(piece)
        return out


class _CharIds(dict):
    """isolated char -> its ids, as BPE gives them for a char that merges with nothing: its
    vocab id (``tokens``, the one-char tokens in no longer token), or (``byte_ids``: the ids of
    all 256 byte tokens) the ids of its UTF-8 bytes for a char the vocab lacks. Ask only for
    chars in no longer token."""

    def __init__(self, tokens: dict[str, tuple[int]], byte_ids: tuple[int, ...] | None) -> None:
        super().__init__(tokens)
        self._byte_ids = byte_ids
        self._limit = len(tokens) + (1 << 16)

    def __missing__(self, char: str) -> tuple[int, ...]:
        if self._byte_ids is None:
            raise KeyError(char)  # not in the vocab: its part goes to the model
        ids = tuple(map(self._byte_ids.__getitem__, char.encode()))
        if len(self) < self._limit:
            self[char] = ids
        return ids


def _bmp_table(keys: array, values: np.ndarray, missing: int, dtype: type) -> np.ndarray:
    """The value of each BMP code point: its key's among ``keys`` (sorted code points, each
    with its value in ``values``), else ``missing``."""
    import numpy as np

    points = np.frombuffer(keys, np.uint32)
    table = np.full(0x10000, missing, dtype)
    in_bmp = points < 0x10000
    table[points[in_bmp]] = values[in_bmp]
    return table


def _char_class(chars) -> str:
    return "".join(re.escape(c) for c in sorted(chars))


def _absent_char(tokens: list[str]) -> str:
    """The first char no token holds: a separator to join the tokens into one string."""
    return next(c for c in map(chr, range(0x110000)) if not any(c in t for t in tokens))


# GPT-2's chars for the UTF-8 continuation bytes (0x80-0xBF), and for the bytes that lead a
# char of three or four bytes (0xE0-0xF7; CJK, kana, Hangul, Thai, Devanagari, emoji...).
_CONTINUATION = "".join(BYTE_TO_CHAR[0x80:0xC0])
_WIDE = "".join(BYTE_TO_CHAR[0xE0:0xF8])
_C, _W = re.escape(_CONTINUATION), re.escape(_WIDE)
# A byte-level word read as UTF-8 chars: a lead symbol and the continuation symbols after it
# (or, at the start of a word, a run of continuation symbols alone).
_UNITS = re.compile(f"[{_C}]+|[^{_C}][{_C}]*")
_HAS_WIDE = re.compile(f"[{_W}]")


class CharCut:
    """Where BPE provably never merges across a char boundary of a byte-level word.

    A byte-level word (GPT-2's byte chars) is read as *units*, one per UTF-8 char of the text:
    a lead symbol and the continuation symbols after it. When every symbol of the word is a
    vocab token (and there is no subword prefix or suffix), every symbol BPE ever makes is a
    vocab token whose string is the part of the word it covers. So if no vocab token can stand
    in the word across the boundary between units U and V, no merge ever joins the two sides,
    and each side merges on its own, in the same order of ranks (ties go leftmost on each side
    as in the whole word).

    A token ``t`` read as units ``t0 t1 ... tm`` can stand across that boundary at each of its
    inner boundaries ``i``: then ``ti`` is the end of U (U itself, or, when the token starts
    mid-char, ``t0`` is a run of continuation symbols U ends with) and ``t(i+1)`` is V itself,
    or, when it is the token's last unit (the token ends mid-char), a start of V. Units further
    along ``t`` are not compared, which only keeps more boundaries whole.

    Only boundaries between two chars of three or four bytes are ever cut (the scripts whose
    words are long runs of chars that few tokens join; elsewhere nearly every pair stands in
    some token). A token standing across such a boundary holds V's lead byte, so only the
    tokens holding such a byte are read, once, on the first word cut.
    """

    def __init__(self, vocab: dict[str, int]) -> None:
        self.vocab = vocab
        # U + V for each pair a token can stand across: V a whole unit of the token, or
        # (``_at_end``) the token's last unit, which V starts with
        self._inside: set[str] | None = None
        self._at_end: set[str] = set()
        self._starts_mid: set[str] = set()
        # U + V -> whether a token may stand across (a boundary that is not cut)
        self._joined: dict[str, bool] = {}

    @staticmethod
    def for_model(model: BPE) -> CharCut | None:
        """A cut for ``model`` when its alphabet is GPT-2's byte chars (otherwise a char is
        one unit and nearly every pair of chars stands in some token: cutting would not pay)."""
        if model.prefix or model.suffix:
            return None
        if not all(c in model.vocab for c in BYTE_TO_CHAR):
            return None
        return CharCut(model.vocab)

    def __getstate__(self) -> dict:
        """A pickle of a cut that has read the vocab leaves the vocab out (the model's own
        pickle may defer it)."""
        state = dict(self.__dict__)
        if self._inside is not None:
            state["vocab"] = None
        return state

    def applies(self, word: str) -> bool:
        """Whether :meth:`split` may cut ``word`` (whose chars are vocab tokens): one of its
        chars leads a char of three or four bytes."""
        return _HAS_WIDE.search(word) is not None

    def prepare(self) -> None:
        """Read the vocab now instead of on the first word cut (the load cache keeps it)."""
        if self._inside is None:
            self._read_vocab()

    def _read_vocab(self) -> None:
        tokens = [t for t in self.vocab if len(t) > 1 and _HAS_WIDE.search(t, 1)]
        sep = _absent_char(tokens)
        joined = sep + sep.join(tokens) + sep
        # the unit before the boundary: a whole char of three or four bytes, or a token's
        # first unit when that is a run of continuation symbols (it starts mid-char)
        start_mid = f"(?<={sep})[{_C}]++"
        left = f"(?:{start_mid}|[{_W}][{_C}]*+)"
        right = f"[{_W}][{_C}]*+"
        self._inside = set(re.findall(f"(?=({left}{right})[^{sep}])", joined))
        self._at_end = set(re.findall(f"(?=({left}{right}){sep})", joined))
        self._starts_mid = set(re.findall(f"{start_mid}(?=[{_W}])", joined))

    def _can_join(self, u: str, v: str) -> bool:
        """Whether the boundary between units ``u`` and ``v`` stays whole."""
        if u[0] not in _WIDE or v[0] not in _WIDE:
            return True
        if self._inside is None:
            self._read_vocab()
        if self._ends_before(u, v):
            return True
        # a token that starts mid-char, with a continuation run u ends with
        starts_mid = self._starts_mid
        return any(u[i:] in starts_mid and self._ends_before(u[i:], v) for i in range(1, len(u)))

    def _ends_before(self, end: str, v: str) -> bool:
        """Whether a token's unit ``end`` may be followed by unit ``v`` in the word: by ``v``
        itself inside the token, or by a start of ``v`` that ends the token."""
        if end + v in self._inside:  # type: ignore[operator]
            return True
        at_end = self._at_end
        return any(end + v[:j] in at_end for j in range(1, len(v) + 1))

    def split(self, word: str) -> list[str]:
        """``word`` cut at every boundary no merge can cross (every char of ``word`` must be a
        vocab token)."""
        units = _UNITS.findall(word)
        joined = self._joined
        flags = list(map(joined.get, map(add, units, units[1:])))
        if None in flags:
            if len(joined) > 1 << 17:
                joined.clear()
            for i, flag in enumerate(flags):
                if flag is None:
                    u, v = units[i], units[i + 1]
                    flags[i] = joined[u + v] = self._can_join(u, v)
        if all(flags):
            return [word]
        out = []
        start = 0
        for cut in compress(range(1, len(units)), map(not_, flags)):
            out.append("".join(units[start:cut]))
            start = cut
        out.append("".join(units[start:]))
        return out


class PairCut:
    """Where BPE provably never merges across two adjacent chars of a word, any alphabet.

    When every char of a word is a vocab token (and there is no subword prefix or suffix),
    every symbol BPE ever makes is a vocab token whose string is the part of the word it
    covers. So a symbol standing across the boundary between chars ``x`` and ``y`` holds
    ``xy``: if no vocab token holds that pair of chars, no merge ever joins the two sides,
    each side merges on its own in the same order of ranks (ties go leftmost on each side as
    in the whole word), and the word's ids are the parts' ids end to end.

    Where to look is a matter of cost, not of proof: only the boundaries next to a digit,
    punctuation or symbol char of the Basic Multilingual Plane (Unicode categories N, P, S;
    not the mark U+2581) are read. There SentencePiece
    vocabularies hold few of the pairs the text has (``g(``, ``),``, ``a.``), the parts repeat
    far more than the words (4 MB of English, Gemma 3: 72k distinct words, 35k distinct parts
    holding a third of the chars), and a word with no such char costs one regex search.
    Between two letters pairs are missing mostly in scripts whose words are runs of chars that
    rarely merge: cutting them costs more than it saves. Byte-level vocabularies join nearly
    every pair of byte chars somewhere; :class:`CharCut` serves them instead.
    """

    # Whether the cut pays is read off the text as it goes. In windows of WINDOW chars of cut
    # words, the cut stays on while at most MAX_MISS_SHARE of those chars are in parts the
    # segment cache lacked (merged anyway); after a window over it, REST words go through
    # whole. English and code stay at 0.2-0.45 after the first window; text of many scripts
    # sits at 0.55-0.75, where the parts rarely repeat and cutting cost Llama-2 up to a third
    # more time than it saved. The ids are the same either way: only the time depends on it.
    WINDOW = 1 << 15
    MAX_MISS_SHARE = 0.5
    REST = 1 << 15

    def __init__(self, pairs: frozenset[str], candidates: re.Pattern[str]) -> None:
        self.pairs = pairs
        self._candidates = candidates
        self._chars = self._missed = self._resting = 0  # of the window so far

    def wanted(self) -> bool:
        """Whether to cut the next word (False while resting after a window that missed)."""
        if self._resting:
            self._resting -= 1
            return False
        return True

    def account(self, chars: int, missed: int) -> None:
        """Record that ``missed`` of a cut word's ``chars`` were in parts the segment cache
        lacked."""
        self._chars += chars
        self._missed += missed
        if self._chars >= self.WINDOW:
            if self._missed > self._chars * self.MAX_MISS_SHARE:
                self._resting = self.REST
            self._chars = self._missed = 0

    @staticmethod
    def for_model(model: BPE) -> PairCut | None:
        if model.prefix or model.suffix:
            return None
        # Not U+2581 (a symbol, So), which starts nearly every word: the pairs after it are
        # nearly all in some token, and the boundary splitter cuts before it. Not chars past
        # U+FFFF, which would make the class a slow list for ``re``; they are rare.
        chars = [
            t
            for t in model.vocab
            if len(t) == 1
            and t <= "\uffff"
            and t != "\u2581"
            and unicodedata.category(t)[0] in "NPS"
        ]
        if not chars:
            return None
        tokens = [t for t in model.vocab if len(t) > 1]
        sep = _absent_char(tokens)
        # every pair of adjacent chars inside a token (the separator stands between tokens)
        joined = sep.join(tokens)
        pairs = frozenset(p for p in set(map(add, joined, joined[1:])) if sep not in p)
        return PairCut(pairs, re.compile(f"[{_char_class(chars)}]"))

    def split(self, word: str) -> list[str]:
        """``word`` cut at each boundary beside a candidate char whose two chars no vocab
        token holds side by side (every char of ``word`` must be a vocab token); ``[word]``
        when there is no such place."""
        found = self._candidates.search(word)
        if found is None:
            return [word]
        pairs = self.pairs
        out = []
        start = 0
        end = len(word)
        for m in self._candidates.finditer(word, found.start()):
            at = m.start()
            if at > start and word[at - 1 : at + 1] not in pairs:
                out.append(word[start:at])
                start = at
            if at + 1 < end and word[at : at + 2] not in pairs:
                out.append(word[start : at + 1])
                start = at + 1
        out.append(word[start:])
        return out
