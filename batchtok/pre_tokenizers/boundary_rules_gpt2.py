"""GPT-2's pre-tokenizer pattern (ByteLevel's ``use_regex``) as boundary rules over a batch's code
points, as :mod:`.boundary_rules` does for the cl100k family (its classes, joints and chunks)::

    A1 's|'t|'re|'ve|'m|'ll|'d | A2 ' ?\\p{L}+' | A3 ' ?\\p{N}+' | A4 ' ?[^\\s\\p{L}\\p{N}]+'
    | A5 \\s+(?!\\S) | A6 \\s+

Kinds of a char: L, N, O (neither ``\\s``, L nor N) and W (``\\s``; P is U+0020, one of them;
``\\r`` and ``\\n`` are W like any other). Every char starts a match of some alternative (L: A2,
N: A3, O: A4, W: A6), so the matches tile the text and it is enough to know where each starts
("a cut"). Cut where the kind changes, and at each text start, except as follows:

1. *L, N and O runs* are one match each, from their start to their end: A2, A3 and A4 are
   greedy and nothing after them can make them give back (``\\p{N}+`` has no bound here).
2. *A space before a run* (P followed by L, N or O) starts the run's match: `` ?`` is tried
   first, and A1 cannot start at a space. So: no cut at a run after P. The space is the last
   char of its whitespace run, and starts a piece (rule 4).
3. *A contraction* (A1, tried first, case-sensitive: ASCII ``s t m d``, or ``re ve ll``) takes
   the place of A4 where an apostrophe starts a piece and the letters follow it: the piece is
   the apostrophe and those letters, and the rest of the letter run starts a new A2 match. An
   apostrophe starts a piece where an O run starts that no space takes (rule 2): after L, N
   or a W that is not P, or at a text start. So: no cut at its first letter, and a cut after
   its letters when the letter run goes on.
4. *A whitespace run* [s, e): when e is the text's end, A5's ``\\s+`` takes all of it and
   ``(?!\\S)`` holds there: one piece. Otherwise a non-W char follows; A5 gives back the last
   char, when there are two or more, for ``(?!\\S)`` to hold: cut before the run's last char
   (then, a space, it joins the run after it by rule 2; another W is a piece of its own by A6).
   A run of one char is A6's, or the space of rule 2.

Nothing else cuts. ``tests/pre_tokenizers/test_boundary_rules_gpt2.py`` checks these pieces
against the engine's regex over arbitrary text, and against `tokenizers` on real files.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from .boundary_rules import CL, CN, CO, CP, CX, KIND, JoinedRules, class_codes, windows
from .byte_level import BYTE_LEVEL_PATTERN

if TYPE_CHECKING:
    import numpy as np

__all__ = ["BYTE_LEVEL_RULES", "ByteLevelRules"]

_APOSTROPHE = 0x27
# _window_flags' bits: a cut here; an O starting a piece before a letter (maybe a contraction)
_CUT, _MAYBE = 1, 2
_W = 3  # the kind of P, S and R


class ByteLevelRules(JoinedRules):
    """GPT-2's pattern."""

    def source(self) -> str:
        return BYTE_LEVEL_PATTERN

    def cuts(self, points: np.ndarray, joints: int) -> tuple[np.ndarray, np.ndarray] | None:
        """See :meth:`JoinedRules.cuts`; these rules leave no text to the regex."""
        import numpy as np

        cls = class_codes().take(points)
        if np.count_nonzero(cls == CX) != joints:
            return None
        flags = _window_flags().take(windows(cls, 3, CX))
        cut = (flags & _CUT).view(bool)
        maybe = np.flatnonzero(flags & _MAYBE)
        starts = maybe[points[maybe] == _APOSTROPHE]
        if len(starts):
            _contractions(points, cls, starts, cut)
        return cut, maybe[:0]


def _contractions(points: np.ndarray, cls: np.ndarray, starts: np.ndarray, cut: np.ndarray) -> None:
    """Rule 3 at each apostrophe in ``starts`` (each starts a piece and a letter follows it)."""
    import numpy as np

    n = len(points)
    first = points[starts + 1]  # a letter: inside the text
    then = points[np.minimum(starts + 2, n - 1)]
    then = np.where(starts + 2 < n, then, 0)
    one = np.isin(first, np.array([ord(c) for c in "stmd"], np.uint32))
    two = ((first == ord("r")) | (first == ord("v"))) & (then == ord("e"))
    two |= (first == ord("l")) & (then == ord("l"))
    took = one | two
    cut[starts[took] + 1] = False
    ends = np.concatenate([starts[one] + 2, starts[two] + 3])
    ends = ends[ends < n]
    cut[ends[cls[ends] == CL]] = True


@functools.cache
def _window_flags() -> np.ndarray:
    """For each window (class two before, one before, own, one after: 3 bits each), the
    rules' verdict on a cut at the position (rules 1, 2 and 4), and rule 3's mark."""
    import numpy as np

    runs = (CL, CN, CO)
    table = np.zeros(1 << 12, np.uint8)
    for c2 in range(7):
        for c1 in range(7):
            for c0 in range(7):
                for a in range(7):
                    k1, k0, ka = KIND[c1], KIND[c0], KIND[a]
                    cut = k0 != k1
                    if c1 == CP and k0 in runs:  # 2
                        cut = False
                    if k0 == _W and k1 == _W and ka in runs:  # 4
                        cut = True
                    if CX in (c0, c1):  # a joint, or a text's start
                        cut = False
                    # an O no space takes, at a run's start, before a letter (3)
                    maybe = c0 == CO and k1 != CO and c1 != CP and a == CL
                    table[(((c2 << 3 | c1) << 3) | c0) << 3 | a] = _CUT * cut | _MAYBE * maybe
    return table


BYTE_LEVEL_RULES = ByteLevelRules()
