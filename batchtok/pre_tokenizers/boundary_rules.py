"""The cl100k / Llama-3 pre-tokenizer pattern as boundary rules over a batch's code points.

A ``Split`` whose pattern is one of the family below is evaluated without a regex engine: the
batch's texts are joined, every code point gets its class from the oracle's own tables (the
tables :mod:`batchtok.utils.onig` spells out), and the places the regex's leftmost-greedy scan
starts a piece are computed as array operations over the whole batch at once. Any other
pattern keeps the regex (:func:`rules_for` returns None): this is an optimisation, never a
refusal.

The family (``D`` is ``\\p{N}{1,3}``, or ``\\p{N}`` for Qwen; the contractions are ``(?i:...)``
or, written without it, case-sensitive)::

    A1 (?i:'s|'t|'re|'ve|'m|'ll|'d) | A2 [^\\r\\n\\p{L}\\p{N}]?\\p{L}+ | A3 D
    | A4 ' ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*' | A5 \\s*[\\r\\n]+ | A6 \\s+(?!\\S) | A7 \\s+

Classes of a char: L (``\\p{L}``), N (``\\p{N}``), P (U+0020), R (``\\r``, ``\\n``), S (the
other ``\\s``), O (everything else; the tables make L, N and ``\\s`` disjoint, checked when the
table is built). W is P, S or R. A text's ends act as a char of no class.

Why the pieces are these. Every char starts a match of some alternative (L: A2, N: A3, O: A4,
W: A7), so the matches tile the text and it is enough to know where each starts ("a cut").
Cut where the kind (L, N, O, W) changes, and at each text start, except as follows:

1. *N runs* (A3): nothing else matches N, so an N run is its own; ``\\p{N}{1,3}`` is greedy, so
   the run is cut every 3 chars from its start (every char for ``\\p{N}``).
2. *A letter run* is one A2 match, which may take one char before it: the optional
   ``[^\\r\\n\\p{L}\\p{N}]`` is tried first, so a piece starting on a char that is neither R, L nor
   N and followed by a letter takes the whole letter run. That char starts a piece when it is
   (a) P or S: the last char of a whitespace run always starts a piece (rule 4); or
   (b) O, alone in its O run, not after P (an O run starts a piece unless a space takes it,
   rule 3; a longer O run is taken by A4, whose ``[^\\s\\p{L}\\p{N}]+`` is greedy and cannot
   need to give back: its tail ``[\\r\\n]*`` always matches). In case (b), when the char is
   ``'`` and the letters begin a contraction, A1 (tried first) matches instead: the piece is
   ``'`` and the 1 or 2 letters, and the rest of the letter run starts a new A2 match. The
   contraction's letters are those the regex folds to s t r e v m l d (with ``(?i)`` also
   S, ſ (U+017F), ...; all letters, checked when the fold table is built).
   Hence: no cut at a letter run after P or S, nor after such an O; with a contraction, a cut
   after its letters instead.
3. *An O run* is one A4 match from its start to its end (greedy, as above), and the A4 match
   takes a space before it (`` ?``) when the space starts a piece, which the last char of a
   whitespace run does. A2 is tried first at the space but needs a letter next. So: no cut at
   an O run after P. A4 then takes the R chars that follow (``[\\r\\n]*``, greedy): no cut at a
   whitespace run that starts with R after O, but a cut where that R prefix ends (if the
   whitespace run goes on).
4. *A whitespace run* (the part left after rule 3's R prefix, from where its piece starts):
   A2 and A4 match there only for its last char, and A3 never. A5's ``\\s*`` takes the run and
   gives back chars until ``[\\r\\n]+`` matches: the piece ends after the run's last R. Cut
   after the last R of a whitespace run. The rest has no R; A6's ``\\s+`` takes it all and
   ``(?!\\S)`` holds at a text end (one piece), else gives back one char, when there are two
   or more: cut before the last char of a P/S run of two or more that ends before L, N or O.
   The last char then starts a piece: alone (A7), or with the letters (rule 2a), or, a space,
   with the O run (rule 3).

Nothing else cuts: a letter run's inside is cut only by rule 2's contraction, an O run's
never, a whitespace run's only by rule 4. ``tests/pre_tokenizers/test_boundary_rules.py``
checks these pieces against the engine's regex over arbitrary text, and against `tokenizers`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import regex

from ..utils.bounds import PieceBounds
from ..utils.onig import OnigPattern, class_ranges, every_char

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BoundaryRules", "JoinedRules", "rules_for"]

_CONTRACTIONS = "'s|'t|'re|'ve|'m|'ll|'d"
_REST = r"[^\r\n\p{L}\p{N}]?\p{L}+|DIGITS| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
_DIGITS = {3: r"\p{N}{1,3}", 1: r"\p{N}"}

# classes of a char (uint8; CL is the docstring's L, and so on): the order matters below (CO
# and lower: not whitespace; CP, CS, CR: whitespace), and CX marks the joint between two texts
CL, CN, CO, CP, CS, CR, CX = range(7)
KIND = (0, 1, 2, 3, 3, 3, 4)  # class -> kind: L, N, O, whitespace, joint
# U+FFFF, a noncharacter: a batch holding one is left to the regex. (A lone surrogate would
# never clash, but decoding one costs the codec's error handler: 6x the whole decode.)
_JOINT = 0xFFFF
_APOSTROPHE = 0x27
# contraction letters' codes in the fold table (0: none)
_FOLDS = {"s": 1, "t": 2, "m": 3, "d": 4, "r": 5, "v": 6, "l": 7, "e": 8}
# split_many cuts about this many chars at once: the arrays of more fall out of the CPU's
# caches (1M chars at once ran 1.3x slower than 64K on this machine); fewer chars than
# _MIN_CHARS are split one text at a time by the regex (numpy's calls cost ~60 us a batch)
_CHUNK_CHARS = 1 << 16
_MIN_CHARS = 4096


class JoinedRules:
    """Pieces of a batch's texts from the places a piece starts, computed over the joined
    texts at once by :meth:`cuts` (each family of rules defines it)."""

    def cuts(self, points: np.ndarray, joints: int) -> tuple[np.ndarray, np.ndarray] | None:
        """(whether a piece starts at each position of ``points``, texts joined by U+FFFF
        (``joints`` of them), never at a joint or right after one; the positions whose text
        the rules leave to the regex), or None when a text holds U+FFFF itself."""
        raise NotImplementedError

    def split_many(self, texts: list[str], fallback: Callable[[str], list[str]]) -> list[list[str]]:
        """The pieces of each text (``findall`` of the pattern), about ``_CHUNK_CHARS`` of
        texts cut at once; a chunk the rules do not take (see :meth:`pieces`), or too short
        to be worth numpy's calls, goes to ``fallback`` one text at a time."""
        out: list[list[str]] = []
        chunk: list[str] = []
        chars = 0
        for text in texts:
            chunk.append(text)
            chars += len(text)
            if chars >= _CHUNK_CHARS:
                out += self._split_chunk(chunk, chars, fallback)
                chunk, chars = [], 0
        out += self._split_chunk(chunk, chars, fallback)
        return out

    def _split_chunk(
        self, texts: list[str], chars: int, fallback: Callable[[str], list[str]]
    ) -> list[list[str]]:
        found = self.pieces(texts) if chars >= _MIN_CHARS else None
        if found is None:
            return list(map(fallback, texts))
        return [fallback(text) if got is None else got for got, text in zip(found, texts)]

    def pieces(self, texts: list[str]) -> list[list[str] | None] | None:
        """The pieces of each text, all texts cut at once, None for a text the rules leave to
        the regex; None for a batch holding a lone surrogate or U+FFFF (the joint between
        texts)."""
        if not texts:
            return []
        found = self._cut_joined(texts)
        if found is None:
            return None
        points, cut, redo = found
        import numpy as np

        at = np.flatnonzero(cut)
        # a joint before each piece but a text's first (each char moves past the cuts up to
        # it: twice as fast as np.insert), then one split makes every piece
        n = len(points)
        index = np.int32 if n + len(at) < 1 << 31 else np.int64
        moved = np.cumsum(cut, dtype=index)
        moved += np.arange(n, dtype=index)
        spaced = np.full(n + len(at), _JOINT, np.uint32)
        spaced[moved] = points
        pieces = spaced.tobytes().decode("utf-32-le").split("\uffff")
        # each text's pieces: one more than its cuts
        joints = np.flatnonzero(points == _JOINT)
        ends = np.searchsorted(at, np.append(joints, n))
        last = ends + np.arange(1, len(texts) + 1)
        first = np.append(0, last[:-1])
        out: list[list[str] | None]
        out = list(map(pieces.__getitem__, map(slice, first.tolist(), last.tolist())))
        for empty in [i for i, text in enumerate(texts) if not text]:
            out[empty] = []
        for text in set(np.searchsorted(joints, redo).tolist()):
            out[text] = None
        return out

    def bounds(self, texts: list[str]) -> PieceBounds | None:
        """The pieces of all ``texts`` (at least one) as arrays over their joined code
        points, as :meth:`pieces` finds them; None where :meth:`pieces` is None."""
        found = self._cut_joined(texts)
        if found is None:
            return None
        points, cut, redo = found
        import numpy as np

        n = len(points)
        joints = np.flatnonzero(points == _JOINT)
        text_starts = np.append(0, joints + 1)
        text_ends = np.append(joints, n)
        # a text's start starts a piece (the rules never cut there), unless the text is empty
        cut[text_starts[text_starts < text_ends]] = True
        starts = np.flatnonzero(cut)
        first = np.searchsorted(starts, np.append(text_starts, n))
        ends = np.empty_like(starts)
        ends[:-1] = starts[1:]
        # a text's last piece ends at the text's end (its joint), not at the next text's start
        last = first[1:][first[1:] > first[:-1]] - 1
        ends[last] = text_ends[first[1:] > first[:-1]]
        redo_texts = sorted(set(np.searchsorted(joints, redo).tolist()))
        return PieceBounds(points, starts, ends, first, redo_texts)

    def _cut_joined(self, texts: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
        """(the code points of ``texts`` joined by U+FFFF, :meth:`cuts` of them), or None for
        a lone surrogate or where :meth:`cuts` is None."""
        try:
            points = _code_points("\uffff".join(texts))
        except UnicodeEncodeError:  # a lone surrogate
            return None
        found = self.cuts(points, len(texts) - 1)
        return None if found is None else (points, *found)


@dataclass(frozen=True)
class BoundaryRules(JoinedRules):
    """The rules of one member of the family: ``digits`` per N piece, case-insensitive
    contractions or not."""

    digits: int
    icase: bool

    def source(self) -> str:
        """The Oniguruma pattern this member stands for."""
        contractions = f"(?i:{_CONTRACTIONS})" if self.icase else _CONTRACTIONS
        return contractions + "|" + _REST.replace("DIGITS", _DIGITS[self.digits])

    def cuts(self, points: np.ndarray, joints: int) -> tuple[np.ndarray, np.ndarray] | None:
        """See :meth:`JoinedRules.cuts`; these rules leave no text to the regex.

        The rules that look at the chars next to a position (the two before, the one after)
        are one lookup of that window's classes in :func:`_window_flags`, which also marks
        the positions where the other rules look further: few, handled by index."""
        import numpy as np

        cls = class_codes().take(points)
        if np.count_nonzero(cls == CX) != joints:
            return None
        flags = _window_flags().take(windows(cls, 3, CX))
        cut = (flags & _CUT).view(bool)
        marked = np.flatnonzero(flags > _CUT)
        marks = flags[marked]

        def where(flag: int) -> np.ndarray:
            return marked[(marks & flag) != 0]

        self._contractions(points, cls, where(_TAKES_O), cut)
        after_returns(
            cls, where(_AFTER_R), where(_BLANK_LAST), where(_R_START), cut, _takes_returns, CR
        )
        digit_groups(where(_N_INNER), where(_N_START), cut, self.digits)
        return cut, marked[:0]

    def _contractions(
        self, points: np.ndarray, cls: np.ndarray, starts: np.ndarray, cut: np.ndarray
    ) -> None:
        """Rule 2b's contractions: cut after the letters of a contraction that A1 matches
        (``starts``: the letters after a lone O that starts a piece) where the letter run
        goes on (else the run's end is cut already, or is a text's end)."""

        starts = starts[points[starts - 1] == _APOSTROPHE]
        if not len(starts):
            return
        letters = contraction_letters(points, starts, self.icase)
        ends = (starts + letters)[letters > 0]
        ends = ends[ends < len(cut)]
        cut[ends[cls[ends] == CL]] = True


def contraction_letters(points: np.ndarray, starts: np.ndarray, icase: bool) -> np.ndarray:
    """How many letters (0, 1 or 2) from each of ``starts`` (the char after an apostrophe)
    the contractions ``s t re ve m ll d`` take there, matched as the regex module matches
    them (``(?i)`` when ``icase``)."""
    import numpy as np

    folds = fold_table(icase)
    first = folds.take(np.minimum(points[starts], len(folds) - 1))
    nxt = np.minimum(starts + 1, len(points) - 1)
    second = folds.take(np.minimum(points[nxt], len(folds) - 1))
    second = np.where(starts + 1 < len(points), second, 0)
    one = (first > 0) & (first <= _FOLDS["d"])
    two = ((first == _FOLDS["r"]) | (first == _FOLDS["v"])) & (second == _FOLDS["e"])
    two |= (first == _FOLDS["l"]) & (second == _FOLDS["l"])
    return np.where(two, 2, one.astype(np.intp))


def digit_groups(inner: np.ndarray, starts: np.ndarray, cut: np.ndarray, digits: int) -> None:
    """Rule 1: cut an N run every ``digits`` chars from its start (``inner``: the N after an
    N; ``starts``: the N after anything else)."""
    import numpy as np

    if not len(inner):
        return
    if digits == 1:
        cut[inner] = True
        return
    run_start = starts[np.searchsorted(starts, inner, side="right") - 1]
    cut[inner[(inner - run_start) % digits == 0]] = True


def run_starts(starts: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The start of the run holding each of ``at``: the last of ``starts`` at or before it."""
    import numpy as np

    return starts[np.searchsorted(starts, at, side="right") - 1]


def after_returns(
    cls: np.ndarray,
    at: np.ndarray,
    blank_last: np.ndarray,
    r_start: np.ndarray,
    cut: np.ndarray,
    takes: Callable[[np.ndarray, np.ndarray], np.ndarray],
    r_class: int,
) -> None:
    """Rules 3 and 4 at each blank after an R (``at``): cut there when that R is the last of
    its whitespace run, or ends the R prefix of a whitespace run that the punctuation before
    it took (``takes(cls, run starts)``). ``blank_last``: the last blank of each blank run;
    ``r_start``: the first R of each R run; ``r_class``: R's class in ``cls``."""
    import numpy as np

    if not len(at):
        return
    n = len(cls)
    # the class after the blank run that starts here (a blank run always has a last blank)
    after_run = blank_last[np.searchsorted(blank_last, at)] + 1
    last_return = cls[np.minimum(after_run, n - 1)] != r_class
    last_return |= after_run >= n
    # the R run that ends here
    cut[at[last_return | takes(cls, run_starts(r_start, at))]] = True


def windows(cls: np.ndarray, bits: int, joint: int) -> np.ndarray:
    """Each position's window of classes (uint16, ``bits`` per class): the classes two
    before, one before, its own and one after, ``joint`` past the ends."""
    import numpy as np

    padded = np.empty(len(cls) + 3, np.uint16)
    padded[:2] = joint
    padded[2:-1] = cls
    padded[-1] = joint
    window = padded[:-3] << 3 * bits
    window |= padded[1:-2] << 2 * bits
    window |= padded[2:-1] << bits
    window |= padded[3:]
    return window


def _takes_returns(cls: np.ndarray, run_start: np.ndarray) -> np.ndarray:
    """Whether A4 takes each R run (``run_start``): the run follows an O."""
    import numpy as np

    return (cls[np.maximum(run_start - 1, 0)] == CO) & (run_start > 0)


# _window_flags' bits: a cut here; the rest mark where a rule looks beyond the window
_CUT, _TAKES_O, _AFTER_R, _BLANK_LAST, _R_START, _N_INNER, _N_START = (1 << k for k in range(7))


@functools.cache
def _window_flags() -> np.ndarray:
    """For each window (class two before, one before, own, one after; 3 bits each, see
    ``cuts``), the rules' verdict on a cut at the position, and the marks."""
    import numpy as np

    blank = (CP, CS)
    table = np.zeros(1 << 12, np.uint8)
    for c2 in range(7):
        for c1 in range(7):
            for c0 in range(7):
                for a in range(7):
                    cut = KIND[c0] != KIND[c1]
                    if c0 == CL and c1 in blank:  # 2a
                        cut = False
                    if c0 == CO and c1 == CP:  # 3: the space before an O run
                        cut = False
                    takes_o = c0 == CL and c1 == CO and c2 not in (CO, CP)
                    if takes_o:  # 2b
                        cut = False
                    if c0 == CR and c1 == CO:  # 3: the R after an O run
                        cut = False
                    if c0 in blank and c1 in blank and a <= CO:  # 4
                        cut = True
                    if CX in (c0, c1):  # a joint, or a text's start
                        cut = False
                    flags = _CUT * cut
                    flags |= _TAKES_O * takes_o
                    flags |= _AFTER_R * (c0 in blank and c1 == CR)
                    flags |= _BLANK_LAST * (c0 in blank and a not in blank)
                    flags |= _R_START * (c0 == CR and c1 != CR)
                    flags |= _N_INNER * (c0 == CN and c1 == CN)
                    flags |= _N_START * (c0 == CN and c1 != CN)
                    table[(((c2 << 3 | c1) << 3) | c0) << 3 | a] = flags
    return table


def _code_points(text: str) -> np.ndarray:
    import numpy as np

    return np.frombuffer(text.encode("utf-32-le"), np.uint32)


@functools.cache
def class_codes() -> np.ndarray:
    """The class of every code point (uint8, 0x110000 entries), from the oracle's tables."""
    table = class_table(CO, (("L", CL), ("N", CN), ("\\s", CS)))
    assert table[0x20] == table[0x0D] == table[0x0A] == CS
    table[0x20] = CP
    table[0x0D] = table[0x0A] = CR
    table[_JOINT] = CX
    return table


def class_table(other: int, classes: tuple[tuple[str, int], ...]) -> np.ndarray:
    """Each code point's class (uint8, 0x110000 entries): the code of the table class of
    :func:`~batchtok.utils.onig.class_ranges` (name, code) holding it, else ``other``; the
    classes must not overlap (checked)."""
    import numpy as np

    table = np.full(0x110000, other, np.uint8)
    for name, code in classes:
        for a, b in class_ranges(name):
            assert (table[a : b + 1] == other).all(), f"{name} overlaps another class at {a:x}"
            table[a : b + 1] = code
    return table


@functools.cache
def fold_table(icase: bool) -> np.ndarray:
    """The contraction letter each code point stands for (its ``_FOLDS`` code, 0 for none; the
    last entry is 0 and stands for everything past the table), as the regex module matches
    the pattern's letters: ``(?i)`` when ``icase``."""
    import numpy as np

    found: dict[int, int] = {}
    flags = "(?i)" if icase else ""
    # every char the regex matches for a contraction letter (one scan of all chars)
    for char in set(regex.findall(flags + "[" + "".join(_FOLDS) + "]", every_char())):
        (letter,) = [k for k in _FOLDS if regex.fullmatch(flags + k, char)]
        found[ord(char)] = _FOLDS[letter]
    assert all(class_codes()[cp] == CL for cp in found), "a contraction char that is no letter"
    table = np.zeros(max(found) + 2, np.uint8)
    for cp, code in found.items():
        table[cp] = code
    return table


_MEMBERS = tuple(BoundaryRules(digits, icase) for digits in _DIGITS for icase in (True, False))


@functools.cache
def _family() -> dict[str, BoundaryRules]:
    """The regex module's rendering of each member's pattern -> the member."""
    return {OnigPattern(rules.source()).native_source: rules for rules in _MEMBERS}


def rules_for(pattern: OnigPattern) -> BoundaryRules | None:
    """The boundary rules that give ``pattern``'s matches, or None when it is not of the
    family (compared as parsed and rendered for the regex module, not as written)."""
    for rules in _MEMBERS:
        if pattern.source == rules.source():  # as the real files write it: nothing to compile
            return rules
    return _family().get(pattern.native_source)
