"""RobertaProcessing: ``<s> A </s>`` and ``</s> B </s>``."""

from __future__ import annotations

from ..encoding import Encoding
from ..utils.spec import Spec
from .bert import BertProcessing, read_special_token
from .byte_level import trim_offsets


class RobertaProcessing(BertProcessing):
    """``<s> A </s>`` and ``</s> B </s>``, every type id 0 (with or without special tokens);
    with ``trim_offsets``, spaces trimmed out of the offsets as ByteLevel's post-processor
    does."""

    trim_offsets = False
    add_prefix_space = False

    def added_tokens(self, is_pair: bool) -> int:
        return 4 if is_pair else 2

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        if self.trim_offsets:
            for e in encodings:
                trim_offsets(e, self.add_prefix_space)
        for e in encodings:
            e.set_type_ids(0)
        return super().process_encodings(encodings, add_special_tokens)

    def _wrap(self, e: Encoding, i: int) -> Encoding:
        (sep_token, sep_id), (cls_token, cls_id) = self.sep, self.cls
        first = (cls_id, cls_token, 0) if i == 0 else (sep_id, sep_token, 0)
        return e.wrap(first, (sep_id, sep_token, 0), {min(i, 1): (1, len(e.ids) + 1)}, 0)

    def describe(self) -> str:
        return f"RobertaProcessing(cls={self.cls}, sep={self.sep})"

    @classmethod
    def from_spec(cls, spec: Spec) -> RobertaProcessing:
        trim = spec.boolean("trim_offsets")
        add_prefix_space = spec.boolean("add_prefix_space")
        out = cls(read_special_token(spec, "sep"), read_special_token(spec, "cls"))
        out.trim_offsets, out.add_prefix_space = trim, add_prefix_space
        return out
