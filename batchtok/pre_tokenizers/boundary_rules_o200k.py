"""The o200k (GPT-4o) pre-tokenizer pattern as boundary rules over a batch's code points.

The same machinery as :mod:`.boundary_rules` (texts joined, each code point's class from the
oracle's tables, a lookup of each position's window of classes, a few rules by index, one
split), for the pattern GPT-4o's file writes (``U`` is ``[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]``,
``W`` is ``[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]``, ``Q`` is ``[^\\r\\n\\p{L}\\p{N}]``, ``T`` the
contractions ``(?i:'s|'t|'re|'ve|'m|'ll|'d)``)::

    B1 Q?U*W+T? | B2 Q?U+W*T? | B3 \\p{N}{1,3} | B4 ' ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*'
    | B5 \\s*[\\r\\n]+ | B6 \\s+(?!\\S) | B7 \\s+

Classes of a char: *up* (Lu, Lt: in U only), *low* (Ll: in W only), *both* (Lm, Lo: letters
in U and W), M (``\\p{M}``: in U and W, but no letter: in Q and in B4's class), N, P (U+0020),
S (the other ``\\s``), R (``\\r``, ``\\n``), and the *others*: ``'``, ``/`` and O (the
rest). Word chars: up, low, both and M; K chars: M and the others. A *word run*, a *K run*:
a maximal run of such chars. The tables make the letters, M, N and ``\\s``
disjoint (checked when the table is built).

Why the pieces are these. Every char starts a match (a word char: B1 or B2; N: B3; O: B4;
whitespace: B7), so the matches tile the text: it is enough to know where each starts ("a
cut"). Cut at each text start and where the kind (word char, N, other, whitespace) changes,
except as follows.

1. *Words.* From a word char ``s`` of a word run ending at ``e``, B1 (then B2) matches the
   body ``U*W+``: ``U*`` takes the chars up to the first low one, backing off until ``W+``
   can start. So the body ends at the first up char after the first low one (or at the
   run's end); without a low char, after the last *common* char (both or M), where ``W+``
   can take one; with neither, B2 takes the run. Hence, inside a word run, a piece starts
   only at an up char ``i`` after a common or low char, and there exactly when (a) the run
   of common and low chars before ``i`` holds a low char, or (b) the up run from ``i``
   reaches the word run's end. (Every such ``i`` is the end of the body of the piece that
   holds ``i - 1``, and every body ends at such an ``i`` or at ``e``.) A body may start
   after the run's first char: after marks B4 ate (rule 3; being common, they never make
   (a) hold) or after a contraction (rule 6).
2. *The leading char.* ``Q?`` is tried first: a P or S that ends a whitespace run (rule 5
   makes it start a piece) takes the word run after it. An other that starts a piece takes
   the word run after it when the next char is a word char (the word run's first char is
   then no cut); else B1 and B2 fail there, and B4 takes the K run to its end (its class
   holds M: the marks are "eaten", rule 3). An M is both a word char and in Q: from an
   M, ``Q?`` taking it gives the same end as B1 without it, so an M starts a body like a
   letter.
3. *K runs.* From its start a K run alternates runs of others and of marks. A run of others
   starting a piece is either one other before a word char (rule 2: a body follows, the
   marks or letters after it) or B4's start, which takes the rest of the K run
   (``[^\\s\\p{L}\\p{N}]+`` is greedy and nothing after it can fail). A run of marks that is
   no B4's is a body of its own (rule 1), or begins the letters after it. So within a K run
   the pieces start at each run of others until the first *trigger* (a run of others of two
   or more chars, or of one before whitespace, N or a text end; or a K run's first other
   after a space, which B4 takes with `` ?``); from the trigger on the K run is one piece,
   its marks eaten, and the char after the K run starts a piece (a letter after eaten marks
   is cut). The *mode* of a K char: whether a trigger of its K run is at or before it
   (found by index).
4. *B4's tail.* ``[\\r\\n/]*`` takes the R chars after B4's K run, and slashes and R chars
   after those: an R run after an other, or after an eaten M, is no piece's start, nor is
   a slash run after such an R run. Where that slash run ends before a word char or an
   other, a piece starts afresh, as at a K run's start (rules 2 and 3), though the K run
   began with the slashes: a *restart*. (After an eaten M's R run, whose mode must wait for
   the restarts, such an end leaves the text to the regex.)
5. *Whitespace* (as in :mod:`.boundary_rules`, rule 4): B5 ends after the whitespace run's
   last R; the rest, without R, is B6, which gives back its last char before a char that
   is not whitespace; that last char then starts a piece (taking a word run, rule 2, or a
   K run, rule 3, after a space), or stands alone. A tail's R prefix is cut where it ends.
6. *Contractions.* ``T?`` is tried at the end of a body, which is a word run's end (inside
   the run the next char is a word char): a word run followed by ``'`` and a contraction's
   letters (folded as the regex folds them) takes them, whatever the run's last piece
   (unless B4 ate the run: marks only, rule 3); the
   rest of the letter run then starts a piece. Two such in a row (``'s's``: the second
   apostrophe starts a piece, rule 2), or letters left after a contraction whose run before
   an up char would reach back past it (rule 1a), leave the text to the regex.
7. *N runs* are cut every 3 chars from their start, as in :mod:`.boundary_rules`.

The rules that look at the two chars before a position and the one after it are one lookup
of that window (:func:`_window_flags`), which marks the positions where a rule looks
further (rule 1's runs, rule 3's mode, rules 4, 5, 6 and 7): handled by index.
``tests/pre_tokenizers/test_boundary_rules_o200k.py`` checks these pieces against the
engine's regex over arbitrary text, and against `tokenizers` on GPT-4o's file.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from itertools import product
from typing import TYPE_CHECKING

from ..utils.onig import OnigPattern
from .boundary_rules import (
    JoinedRules,
    after_returns,
    class_table,
    contraction_letters,
    digit_groups,
    fold_table,
    run_starts,
    windows,
)

if TYPE_CHECKING:
    import numpy as np

__all__ = ["CamelRules", "rules_for"]

_SOURCE = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"
    r"[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
    r"[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)

# classes of a char (uint8, 4 bits in a window): up, low, both, M, N, O, apostrophe, slash,
# space, other whitespace, R, and X: the joint between two texts
_UP, _LOW, _BOTH, _M, _N, _O, _APOS, _SLASH, _P, _S, _R, _X = range(12)
_LETTER = (_UP, _LOW, _BOTH)
_WORD = (*_LETTER, _M)
_OTHER = (_O, _APOS, _SLASH)
_K = (*_OTHER, _M)
_BLANK = (_P, _S)
_SPACE = (_P, _S, _R)
_COMMON = (_BOTH, _M)
# a mark whose mode the window shows to be off: after a letter, whitespace, N, a text start
_FREE = (*_LETTER, *_SPACE, _N, _X)
_JOINT = 0xFFFF


@dataclass(frozen=True)
class CamelRules(JoinedRules):
    """The o200k pattern's rules (one member: GPT-4o's pattern)."""

    def source(self) -> str:
        """The Oniguruma pattern these rules stand for."""
        return _SOURCE

    def cuts(self, points: np.ndarray, joints: int) -> tuple[np.ndarray, np.ndarray] | None:
        """See :meth:`JoinedRules.cuts`: the module docstring's rules."""
        import numpy as np

        cls = _classes().take(points)
        if np.count_nonzero(cls == _X) != joints:
            return None
        window = windows(cls, 4, _X)
        flags = _window_flags().take(window)
        cut = (flags & _CUT).astype(bool)
        marked = np.flatnonzero(flags > _CUT)
        marks = flags[marked]

        def where(flag: int) -> np.ndarray:
            return marked[(marks & flag) != 0]

        runs = _Runs(cls, window)
        digit_groups(where(_N_INNER), where(_N_START), cut, 3)
        r_start = where(_R_START)
        redo = [self._tails(runs, where(_R_SLASH), r_start, cut)]
        # rule 3: a cut where the mode of the K char before says so
        at = where(_MODE)
        if len(at):
            mode = runs.mode(at - 1)
            cut[at] = np.where(np.isin(cls[at], _LETTER), mode, ~mode)
        # rule 1 (or'ed: a letter after an eaten mark is cut whatever rule 1 says)
        at = where(_UP_RULE)
        if len(at):
            cut[at[runs.up_cut(at)]] = True
        after_returns(
            cls, where(_AFTER_R), where(_BLANK_LAST), r_start, cut, runs.takes_returns, _R
        )
        redo.append(self._contractions(points, runs, where(_APOS_AFTER), cut))
        return cut, np.concatenate(redo)

    @staticmethod
    def _tails(runs: _Runs, at: np.ndarray, r_start: np.ndarray, cut: np.ndarray) -> np.ndarray:
        """Rule 4 at each slash after an R (``at``): no cut when B4's tail took the R run,
        and a cut where the tail's slash run ends inside a K run or before a word char: a
        piece starts there afresh (rules 2 and 3). The positions of the texts left to the
        regex: such an end after an R run that an eaten mark's B4 took (its mode is known
        only once the other ends are)."""
        import numpy as np

        if not len(at):
            return at
        cls = runs.cls
        before = run_starts(r_start, at) - 1
        after_other = np.isin(cls[np.maximum(before, 0)], _OTHER) & (before >= 0)
        runs.restart(cut, CamelRules._tail_ends(runs, at[after_other], cut))
        marked = ~after_other & (cls[np.maximum(before, 0)] == _M) & (before >= 0)
        at, before = at[marked], before[marked]
        return CamelRules._tail_ends(runs, at[runs.mode(before)], cut)

    @staticmethod
    def _tail_ends(runs: _Runs, at: np.ndarray, cut: np.ndarray) -> np.ndarray:
        """No cut at the slashes ``at`` (B4's tail takes them); where their slash runs end
        before a word char or an other."""
        import numpy as np

        cut[at] = False
        slash_last = runs.flagged(_SLASH_LAST)
        after = slash_last[np.searchsorted(slash_last, at)] + 1
        after = after[after < len(cut)]
        return after[np.isin(runs.cls[after], _WORD + _OTHER)]

    @staticmethod
    def _contractions(
        points: np.ndarray, runs: _Runs, at: np.ndarray, cut: np.ndarray
    ) -> np.ndarray:
        """Rule 6 at each apostrophe after a word char, before a letter (``at``): the
        contraction's letters join the piece before; the positions of the texts left to the
        regex."""
        import numpy as np

        cls = runs.cls
        mark = cls[at - 1] == _M
        at = np.concatenate([at[~mark], at[mark][~runs.mode(at[mark] - 1)]])
        letters = contraction_letters(points, at + 1, True)
        at, letters = at[letters > 0], letters[letters > 0]
        if not len(at):
            return at
        cut[at] = False
        cut[at + 1] = False
        two = at[letters == 2]
        cut[two + 2] = False
        rest = at + 1 + letters
        rest = rest[rest < len(cut)]
        rest = rest[np.isin(cls[rest], _WORD)]
        cut[rest] = True
        # an apostrophe right after another's contraction; a common char after one's low
        # letter, which an up char's rule 1 might read past
        chained = np.isin(at, at + 1 + letters)
        past = np.isin(cls[rest], _COMMON) & (cls[rest - 1] == _LOW)
        return np.concatenate([at[chained], rest[past]])


class _Runs:
    """The runs the index rules look up, each found once per batch when first asked for."""

    def __init__(self, cls: np.ndarray, window: np.ndarray) -> None:
        self.cls = cls
        self._window = window
        self._bits: np.ndarray | None = None
        self._found: dict[int, np.ndarray] = {}
        self._restarts = self._restart_triggers = window[:0]

    def flagged(self, bit: int) -> np.ndarray:
        """The positions whose :func:`_run_bits` hold ``bit``."""
        import numpy as np

        if bit not in self._found:
            if self._bits is None:
                self._bits = _run_bits().take(self._window)
            self._found[bit] = np.flatnonzero(self._bits & bit)
        return self._found[bit]

    def restart(self, cut: np.ndarray, at: np.ndarray) -> None:
        """A piece starts afresh at each of ``at`` (where B4's tail ended, rule 4): inside
        a K run, as at a K run's start (a trigger when B4 takes it)."""
        import numpy as np

        if not len(at):
            return
        cls, n = self.cls, len(self.cls)
        cut[at] = True
        other = at[np.isin(cls[at], _OTHER)]
        after = cls[np.minimum(other + 1, n - 1)]
        after[other + 1 >= n] = _X
        # one other before a letter: the body's leading char
        cut[other[np.isin(after, _LETTER)] + 1] = False
        self._restarts = at
        self._restart_triggers = other[~np.isin(after, _WORD)]

    def mode(self, at: np.ndarray) -> np.ndarray:
        """Rule 3's mode of each K char of ``at``: a trigger of its K run (since the last
        restart in it) at or before it."""
        import numpy as np

        if not len(at):
            return np.zeros(0, bool)
        start = np.maximum(_last(self.flagged(_K_START), at), _last(self._restarts, at))
        trigger = np.maximum(_last(self.flagged(_TRIGGER), at), _last(self._restart_triggers, at))
        return trigger >= start

    def up_cut(self, at: np.ndarray) -> np.ndarray:
        """Rule 1 at each up char of ``at`` after a common char: (a) the run of common chars
        before it follows a low char, or (b) its up run ends the word run."""
        import numpy as np

        cls, n = self.cls, len(self.cls)
        start = run_starts(self.flagged(_COMMON_START), at - 1)
        low = (cls[np.maximum(start - 1, 0)] == _LOW) & (start > 0)
        up_last = self.flagged(_UP_LAST)
        after = up_last[np.searchsorted(up_last, at)] + 1
        ends = ~np.isin(cls[np.minimum(after, n - 1)], _WORD) | (after >= n)
        return low | ends

    def takes_returns(self, cls: np.ndarray, run_start: np.ndarray) -> np.ndarray:
        """Rule 4: whether B4's tail takes each R run (``run_start``): it follows an other,
        or an eaten mark."""
        import numpy as np

        before = np.maximum(run_start - 1, 0)
        takes = np.isin(cls[before], _OTHER) & (run_start > 0)
        mark = np.flatnonzero((cls[before] == _M) & (run_start > 0))
        takes[mark[self.mode(before[mark])]] = True
        return takes


def _last(positions: np.ndarray, at: np.ndarray) -> np.ndarray:
    """The last of (sorted) ``positions`` at or before each of ``at``; -1 for none."""
    import numpy as np

    if not len(positions):
        return np.full(len(at), -1)
    last = np.searchsorted(positions, at, side="right") - 1
    return np.where(last >= 0, positions[np.maximum(last, 0)], -1)


# _window_flags' bits: a cut here; the rest mark where a rule looks beyond the window
_CUT, _MODE, _UP_RULE, _AFTER_R, _BLANK_LAST, _R_START, _R_SLASH, _APOS_AFTER = (
    1 << k for k in range(8)
)
_N_INNER, _N_START = 1 << 8, 1 << 9
# _run_bits': the starts of K runs, rule 3's triggers, the starts of runs of common chars,
# the last char of up runs and of slash runs
_K_START, _TRIGGER, _COMMON_START, _UP_LAST, _SLASH_LAST = (1 << k for k in range(5))


def _up_rule(c2: int, c1: int, a: int) -> bool | None:
    """Rule 1 at an up char after ``c1`` (two before: ``c2``; after: ``a``): cut, no cut, or
    None when the window cannot tell."""
    if c1 == _UP:
        return False
    if c1 == _LOW or (c1 in _COMMON and c2 == _LOW) or a not in _WORD:
        return True
    if c2 not in _COMMON and a != _UP:
        return False
    return None


def _verdict(c2: int, c1: int, c0: int, a: int) -> tuple[bool, int]:
    """The cut at a position of window (``c2``, ``c1``, ``c0``, ``a``) and the index rules
    to ask (bits)."""
    if c0 == _N or c1 == _N:
        return c0 != c1, 0
    # a mark's mode is off (no B4 ate it) when the window shows that its run follows a
    # letter, whitespace, N or a text start; else the index finds the mode
    free = c2 in _FREE
    if c0 in _SPACE:
        if c1 == _M and c0 == _R:
            return (True, 0) if free else (False, _MODE)
        if c1 in _OTHER:
            return c0 != _R, 0
        if c1 in _BLANK:
            return c0 != _R and a not in (*_SPACE, _X), 0
        if c1 == _R:
            return False, _AFTER_R * (c0 != _R)
        return True, 0
    if c0 in _WORD:
        if c1 in _BLANK:
            return False, 0
        if c1 == _R:
            return True, 0
        if c1 in _OTHER:
            if c0 == _M:
                return False, 0
            # after the one O of a body's start (no cut), or inside B4's K run (cut)
            if c2 == _M:
                return False, _MODE
            return c2 in _OTHER or c2 == _P, 0
        up = _up_rule(c2, c1, a) if c0 == _UP else False
        if c1 == _M and c0 != _M and not free:
            # a letter after a mark: cut if B4 ate the mark, or by rule 1
            return (True, 0) if up else (False, _MODE | _UP_RULE * (up is None))
        return (True, 0) if up else (False, _UP_RULE * (up is None))
    # c0 is an other
    if c1 == _M:
        return (True, 0) if free else (False, _MODE)
    if c1 in _OTHER or c1 == _P:
        return False, 0
    if c1 == _R and c0 == _SLASH:
        return True, _R_SLASH
    return True, 0


@functools.cache
def _window_flags() -> np.ndarray:
    """For each window (class two before, one before, own, one after; 4 bits each), the
    rules' verdict on a cut at the position, and the marks (uint16)."""
    import numpy as np

    table = np.zeros(1 << 16, np.uint16)
    for c2, c1, c0, a in product(range(12), repeat=4):
        cut, flags = _verdict(c2, c1, c0, a)
        if _X in (c0, c1):  # a joint, or a text's start
            cut, flags = False, 0
        flags |= _CUT * cut
        flags |= _BLANK_LAST * (c0 in _BLANK and a not in _BLANK)
        flags |= _R_START * (c0 == _R and c1 != _R)
        flags |= _N_INNER * (c0 == _N and c1 == _N)
        flags |= _N_START * (c0 == _N and c1 != _N)
        flags |= _APOS_AFTER * (c0 == _APOS and c1 in _WORD and a in _LETTER)
        table[c2 << 12 | c1 << 8 | c0 << 4 | a] = flags
    return table


@functools.cache
def _run_bits() -> np.ndarray:
    """For each window, the :class:`_Runs` marks (uint8)."""
    import numpy as np

    table = np.zeros(1 << 16, np.uint8)
    for c2, c1, c0, a in product(range(12), repeat=4):
        bits = _K_START * (c0 in _K and c1 not in _K)
        # rule 3's triggers: a run of others of two or more, or of one before whitespace, N
        # or a text end; a K run's first other after a space
        if c0 in _OTHER and ((c1 not in _OTHER and a not in _WORD) or c1 == _P):
            bits |= _TRIGGER
        bits |= _COMMON_START * (c0 in _COMMON and c1 not in _COMMON)
        bits |= _UP_LAST * (c0 == _UP and a != _UP)
        bits |= _SLASH_LAST * (c0 == _SLASH and a != _SLASH)
        table[c2 << 12 | c1 << 8 | c0 << 4 | a] = bits
    return table


@functools.cache
def _classes() -> np.ndarray:
    """The class of every code point (uint8, 0x110000 entries), from the oracle's tables."""
    import numpy as np

    table = class_table(
        _O,
        (
            ("Lu", _UP),
            ("Lt", _UP),
            ("Ll", _LOW),
            ("Lm", _BOTH),
            ("Lo", _BOTH),
            ("M", _M),
            ("N", _N),
            ("\\s", _S),
        ),
    )
    letters = class_table(_O, (("L", _UP),))
    assert ((letters == _UP) == np.isin(table, _LETTER)).all(), "L is not Lu Ll Lt Lm Lo"
    assert table[0x20] == table[0x0D] == table[0x0A] == _S
    assert table[0x27] == table[0x2F] == _O
    table[0x20] = _P
    table[0x0D] = table[0x0A] = _R
    table[0x27] = _APOS
    table[0x2F] = _SLASH
    table[_JOINT] = _X
    # rule 6 reads a contraction's letters as up or low chars
    letters = np.flatnonzero(fold_table(True)[:-1])
    assert np.isin(table[letters], (_UP, _LOW)).all(), "a contraction letter of another case"
    return table


_RULES = CamelRules()


@functools.cache
def _native() -> str:
    return OnigPattern(_SOURCE).native_source


def rules_for(pattern: OnigPattern) -> CamelRules | None:
    """The o200k rules when they give ``pattern``'s matches (its source as GPT-4o's file
    writes it, or the same once parsed and rendered for the regex module), else None."""
    if pattern.source == _SOURCE or pattern.native_source == _native():
        return _RULES
    return None
