"""ByteLevel post-processor: trims spaces out of the offsets, numbers the sequences."""

from __future__ import annotations

from ..encoding import Encoding
from ..normalizers.strip import WHITE_SPACE
from ..utils.byte_level import byte_level_map
from ..utils.spec import Spec
from .base import PostProcessor

# Rust's char::is_whitespace, and the byte-level space
_SPACES = frozenset(WHITE_SPACE) | {byte_level_map(" ")}


class ByteLevel(PostProcessor):
    """With ``trim_offsets``, each token's offsets lose its leading and trailing spaces; the
    encodings are numbered as sequences 0, 1, ..."""

    def __init__(self, trim_offsets: bool = True, add_prefix_space: bool = True) -> None:
        self.trim_offsets, self.add_prefix_space = trim_offsets, add_prefix_space

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        if self.trim_offsets:
            for e in encodings:
                trim_offsets(e, self.add_prefix_space)
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
        return encodings

    def describe(self) -> str:
        return f"ByteLevel(trim_offsets={self.trim_offsets})"

    @classmethod
    def from_spec(cls, spec: Spec) -> ByteLevel:
        add_prefix_space = spec.boolean("add_prefix_space")
        trim = spec.boolean("trim_offsets")
        spec.boolean("use_regex", True)
        return cls(trim, add_prefix_space)


def trim_offsets(encoding: Encoding, add_prefix_space: bool) -> None:
    """The library's ``process_offsets`` on an encoding and its overflowing windows (each
    window trimmed as an encoding of its own), computed when the offsets are read."""

    def trim(tokens: list[str], offsets: list) -> list:
        return _trimmed(tokens, offsets, add_prefix_space)

    encoding.map_offsets(trim)
    for o in encoding.overflowing:
        o.map_offsets(trim)


def _trimmed(tokens: list[str], offsets: list, add_prefix_space: bool) -> list:
    out = []
    for i, (token, (start, end)) in enumerate(zip(tokens, offsets)):
        lead = _spaces(token)
        trail = _spaces(reversed(token))
        if lead:
            # a single leading space of the first token is the one add_prefix_space added
            if (i == 0 or start == 0) and add_prefix_space and lead == 1:
                lead = 0
            start = min(start + lead, end)
        if trail and end >= trail:
            end = max(end - trail, start)
        out.append((start, end))
    return out


def _spaces(chars) -> int:  # noqa: ANN001 - a str or its reversed iterator
    n = 0
    for ch in chars:
        if ch not in _SPACES:
            break
        n += 1
    return n
