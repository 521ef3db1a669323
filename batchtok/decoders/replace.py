"""Replace decoder: every match of a pattern in each token replaced by a fixed string."""

from __future__ import annotations

from ..utils.onig import OnigPattern, escape_literal
from ..utils.patterns import compile_checked, read_pattern
from ..utils.spec import Spec
from .base import Decoder


class Replace(Decoder):
    def __init__(self, pattern: str, is_regex: bool, content: str) -> None:
        self.content = content
        self.literal = None if is_regex or not pattern else pattern
        self.onig = OnigPattern(pattern if is_regex else escape_literal(pattern))

    def decode_chain(self, tokens: list[str]) -> list[str]:
        if self.literal is not None:
            return [t.replace(self.literal, self.content) for t in tokens]
        return [self.onig.sub(self.content, t) for t in tokens]

    @classmethod
    def from_spec(cls, spec: Spec) -> Replace:
        pattern, is_regex = read_pattern(spec)
        content = spec.string("content")
        return compile_checked(spec, "pattern", lambda: cls(pattern, is_regex, content))
