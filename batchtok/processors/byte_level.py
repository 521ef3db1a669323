"""ByteLevel post-processor: offsets only (not tracked), so the sequences pass through."""

from __future__ import annotations

from ..encoding import Encoding
from ..utils.spec import Spec
from .base import PostProcessor


class ByteLevel(PostProcessor):
    """Trims offsets only (not tracked); numbers the encodings as sequences 0, 1, ..."""

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
        return encodings

    @classmethod
    def from_spec(cls, spec: Spec) -> ByteLevel:
        spec.boolean("add_prefix_space")
        spec.boolean("trim_offsets")
        spec.boolean("use_regex", True)
        return cls()
