"""Split: cut pieces at the matches of a pattern, with one of five behaviours."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from itertools import islice

from ..metaspace import AtStart
from ..utils.onig import OnigPattern, escape_literal
from ..utils.patterns import compile_checked, read_pattern
from ..utils.spec import Spec
from .base import PreTokenizer

BEHAVIORS = ("Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous")


def split_spans(n: int, spans: Iterable[tuple[int, int]], behavior: str, invert: bool):
    """Apply a split behaviour to match spans; returns the kept (start, end) ranges.

    Mirrors `tokenizers`: the matches and the gaps between them form one list covering the
    text; ``invert`` flips which are matches; the behaviour then removes, isolates or merges.
    """
    return _apply(list(_marked(n, spans, invert)), behavior)


def iter_split_spans(
    n: int, spans: Iterable[tuple[int, int]], behavior: str, invert: bool, chunk: int = 4096
) -> Iterator[tuple[int, int]]:
    """:func:`split_spans` over a stream of spans, holding about ``chunk`` of them at a time.

    The marked list is cut into chunks only before an item that no behaviour joins to the one
    before it (see :func:`_starts_fresh`), so each chunk gives what the whole list gives there.
    """
    held: list[tuple[int, int, bool]] = []
    for item in _marked(n, spans, invert):
        if len(held) >= chunk and _starts_fresh(held[-1][2], item[2], behavior):
            yield from _apply(held, behavior)
            held = []
        held.append(item)
    yield from _apply(held, behavior)


def _marked(n: int, spans: Iterable[tuple[int, int]], invert: bool):
    """(start, end, is a match) for the matches and the gaps between them, in order."""
    if n == 0:
        yield (0, 0, invert)
        return
    prev = 0
    for s, e in spans:
        if prev != s:
            yield (prev, s, invert)
        yield (s, e, not invert)
        prev = e
    if prev != n:
        yield (prev, n, invert)


def _starts_fresh(before: bool, item: bool, behavior: str) -> bool:
    """Whether an item marked ``item`` after one marked ``before`` always starts a new range.

    Contiguous joins equal neighbours; MergedWithPrevious joins a match to the gap before it;
    MergedWithNext joins a match to the gap after it.
    """
    if behavior == "Contiguous":
        return item != before
    if behavior == "MergedWithPrevious":
        return not (item and not before)
    if behavior == "MergedWithNext":
        return not (before and not item)
    return True


def _apply(marked: list[tuple[int, int, bool]], behavior: str) -> list[tuple[int, int]]:
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
        # A literal that does not occur leaves the text whole (or, removed as the inverse of
        # the matches, nothing): one substring test instead of a search and the span pass.
        self._literal = pattern if not is_regex and pattern else None
        self._removes_unmatched = behavior == "Removed" and invert

    def split_one(self, text: str) -> list[str]:
        literal = self._literal
        if literal is not None and literal not in text:
            if self._removes_unmatched or not text:
                return []
            return [text]
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

    def iter_pieces(self, text: str, size: int = 4096) -> Iterator[list[str]]:
        """:meth:`split_one` in batches of about ``size`` pieces, for a text too long to hold
        all its pieces at once."""
        if self.onig.nullable or not self._matches_only:
            spans = iter_split_spans(
                len(text), self.onig.iter_spans(text), self.behavior, self.invert
            )
            while chunk := list(islice(spans, size)):
                batch = [text[s:e] for s, e in chunk if e > s]
                if batch:
                    yield batch
            return
        # the matches alone (Removed + invert) or the matches and the gaps (Isolated): the
        # gaps are empty where the matches cover the text, as the pattern usually ensures
        pos = 0
        for matches in self.onig.iter_match_batches(text, size):
            pieces = [m.group() for m in matches]
            end = matches[-1].end()
            if not self.invert and (
                matches[0].start() != pos or sum(map(len, pieces)) != end - pos
            ):
                pieces = []
                for m in matches:
                    if m.start() != pos:
                        pieces.append(text[pos : m.start()])
                    pieces.append(m.group())
                    pos = m.end()
            yield pieces
            pos = end
        if pos < len(text) and not self.invert:
            yield [text[pos:]]

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
