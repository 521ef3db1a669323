"""BertProcessing: ``[CLS] A [SEP]`` and ``B [SEP]``."""

from __future__ import annotations

from ..encoding import Encoding
from ..utils.spec import Spec, is_u32
from .base import PostProcessor


class BertProcessing(PostProcessor):
    """``[CLS] A [SEP]`` and ``B [SEP]``; B keeps type id 1."""

    def __init__(self, sep: tuple[str, int], cls: tuple[str, int]) -> None:
        self.sep, self.cls = sep, cls

    def added_tokens(self, is_pair: bool) -> int:
        return 3 if is_pair else 2

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        if not add_special_tokens:
            return encodings
        out = []
        for i, e in enumerate(encodings):
            wrapped = self._wrap(e, i)
            wrapped.overflowing = [self._wrap(o, i) for o in e.overflowing]
            out.append(wrapped)
        return out

    def _wrap(self, e: Encoding, i: int) -> Encoding:
        (sep_token, sep_id), (cls_token, cls_id) = self.sep, self.cls
        n = len(e.ids)
        if i == 0:
            return e.wrap((cls_id, cls_token, 0), (sep_id, sep_token, 0), {0: (1, n + 1)})
        return e.wrap(None, (sep_id, sep_token, 1), {1: (0, n)})

    def describe(self) -> str:
        return f"BertProcessing(cls={self.cls}, sep={self.sep})"

    @classmethod
    def from_spec(cls, spec: Spec) -> BertProcessing:
        return cls(read_special_token(spec, "sep"), read_special_token(spec, "cls"))


def read_special_token(spec: Spec, key: str) -> tuple[str, int]:
    value = spec.raw(key)
    if not (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and is_u32(value[1])
    ):
        raise spec.fail(key, value, 'expected ["token", id]')
    return value[0], value[1]
