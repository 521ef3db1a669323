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
            e.type_ids = [0] * len(e.ids)
        return super().process_encodings(encodings, add_special_tokens)

    def _wrap(self, e: Encoding, i: int) -> Encoding:
        (sep_token, sep_id), (cls_token, cls_id) = self.sep, self.cls
        n = len(e.ids)
        first_id, first_token = (cls_id, cls_token) if i == 0 else (sep_id, sep_token)
        return Encoding(
            [first_id, *e.ids, sep_id],
            [first_token, *e.tokens, sep_token],
            [0] * (n + 2),
            [1, *([0] * n), 1],
            ranges={min(i, 1): (1, n + 1)},
        )

    def describe(self) -> str:
        return f"RobertaProcessing(cls={self.cls}, sep={self.sep})"

    @classmethod
    def from_spec(cls, spec: Spec) -> RobertaProcessing:
        spec.boolean("trim_offsets")
        spec.boolean("add_prefix_space")
        return cls(read_special_token(spec, "sep"), read_special_token(spec, "cls"))
