"""RobertaProcessing: ``<s> A </s>`` and ``</s> B </s>``."""

from __future__ import annotations

from ..encoding import Encoding
from ..utils.spec import Spec
from .bert import BertProcessing, read_special_token


class RobertaProcessing(BertProcessing):
    """``<s> A </s>`` and ``</s> B </s>``, every type id 0 (with or without special tokens)."""

    def added_tokens(self, is_pair: bool) -> int:
        return 4 if is_pair else 2

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        # trim_offsets only moves offsets, which are not tracked
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
        spec.boolean("trim_offsets")
        spec.boolean("add_prefix_space")
        return cls(read_special_token(spec, "sep"), read_special_token(spec, "cls"))
