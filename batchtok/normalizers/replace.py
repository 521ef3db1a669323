"""Replace: every match of a pattern replaced by a fixed string."""

from __future__ import annotations

from collections.abc import Iterator

from .. import alignment
from ..alignment import Aligned
from ..errors import EncodeError
from ..utils.onig import OnigPattern, escape_literal
from ..utils.patterns import compile_checked, read_pattern
from ..utils.spec import Spec
from .base import Normalizer


class Replace(Normalizer):
    """Every non-overlapping match of an Oniguruma pattern replaced by ``content``."""

    def __init__(self, pattern: str, is_regex: bool, content: str) -> None:
        self.pattern, self.is_regex, self.content = pattern, is_regex, content
        self.literal = None if is_regex or not pattern else pattern
        self.onig = OnigPattern(pattern if is_regex else escape_literal(pattern))

    def normalize(self, text: str) -> str:
        if self.literal is not None:
            return text.replace(self.literal, self.content)
        if not self.onig.nullable:
            return self.onig.sub(self.content, text)
        spans = self.onig.find_spans(text)
        if any(s == e for s, e in spans):
            raise EncodeError(
                f"Replace pattern {self.pattern!r} matches the empty string in this text; "
                "tokenizers' alignment panics or duplicates text there, so batchtok refuses it"
            )
        return self.onig.sub(self.content, text)

    def leading_at_origin(self, text: str, count: int) -> int:
        # Unmatched chars keep their alignments; the content of a match is aligned to the
        # match's last char (`NormalizedString::replace`).
        out = prev = 0
        for start, end in self._spans(text):
            if start >= count:
                break
            out += start - prev
            if end > count:
                return out
            out += len(self.content)
            prev = end
        return out + max(0, count - prev)

    def align(self, s: Aligned) -> Aligned:
        self.normalize(s.text)  # refuses what normalize refuses
        return alignment.replace_spans(s, list(self._spans(s.text)), self.content)

    def _spans(self, text: str) -> Iterator[tuple[int, int]]:
        if self.literal is None:
            yield from self.onig.find_spans(text)
            return
        n = len(self.literal)
        start = text.find(self.literal)
        while start >= 0:
            yield start, start + n
            start = text.find(self.literal, start + n)

    def absent_chars(self) -> frozenset[str]:
        # every occurrence of a one-char literal goes, and the content does not bring it back
        literal = self.literal
        if literal is not None and len(literal) == 1 and literal not in self.content:
            return frozenset(literal)
        return frozenset()

    def describe(self) -> str:
        kind = "Regex" if self.is_regex else "String"
        return f"Replace({kind} {self.pattern!r} -> {self.content!r})"

    @classmethod
    def from_spec(cls, spec: Spec) -> Replace:
        pattern, is_regex = read_pattern(spec)
        content = spec.string("content")
        replace = compile_checked(spec, "pattern", lambda: cls(pattern, is_regex, content))
        if replace.onig.nullable:
            raise spec.fail(
                "pattern",
                pattern,
                "the pattern can match the empty string; tokenizers' alignment then panics or "
                "duplicates text",
            )
        return replace
