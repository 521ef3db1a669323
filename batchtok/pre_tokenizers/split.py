"""Split: cut pieces at the matches of a pattern, with one of five behaviours."""

from __future__ import annotations

from ..metaspace import AtStart
from ..utils.onig import OnigPattern, escape_literal
from ..utils.patterns import compile_checked, read_pattern
from ..utils.spec import Spec
from .base import PreTokenizer

BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


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

    def pre_tokenize(self, pieces: list[str], at_start: AtStart = False) -> list[str]:
        out: list[str] = []
        for piece in pieces:
            out += self.split_one(piece)
        return out

    def describe(self) -> str:
        kind = "Regex" if self.is_regex else "String"
        return f"Split({kind} {self.pattern!r}, {self.behavior}, invert={self.invert})"

    @classmethod
    def from_spec(cls, spec: Spec) -> Split:
        pattern, is_regex = read_pattern(spec)
        behavior = spec.choice("behavior", BEHAVIORS)
        invert = spec.boolean("invert")
        return compile_checked(spec, "pattern", lambda: cls(pattern, is_regex, behavior, invert))
