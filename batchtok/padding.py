"""Padding: every encoding of a batch brought to one length, with the pad id on one side."""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import EncodeError
from .truncation import DIRECTIONS, file_spelling
from .utils.spec import Spec, read_usize

if TYPE_CHECKING:
    from .encoding import Encoding


@dataclass(frozen=True)
class Padding:
    """Padding parameters, with the Python binding's spellings (``length`` None: the batch's
    longest encoding)."""

    direction: str = "right"
    pad_id: int = 0
    pad_type_id: int = 0
    pad_token: str = "[PAD]"
    length: int | None = None
    pad_to_multiple_of: int | None = None

    def as_dict(self) -> dict:
        return {
            "length": self.length,
            "pad_to_multiple_of": self.pad_to_multiple_of,
            "pad_id": self.pad_id,
            "pad_token": self.pad_token,
            "pad_type_id": self.pad_type_id,
            "direction": self.direction,
        }

    def target(self, lengths: list[int]) -> int:
        """The length every encoding of a batch with these lengths is padded to."""
        n = self.length if self.length is not None else max(lengths)
        multiple = self.pad_to_multiple_of
        if multiple and n % multiple:
            n += multiple - n % multiple
        if n > _max_padded_length():
            raise EncodeError(
                f"padding to {n} tokens needs more memory than this machine has (an Encoding "
                "holds five lists of that length; tokenizers aborts the process there)"
            )
        return n

    def pad_encodings(self, encodings: list[Encoding]) -> None:
        if encodings:
            target = self.target([len(e) for e in encodings])
            for e in encodings:
                e.pad_to(target, self)

    def pad_ids(self, id_lists: list[list[int]]) -> list[list[int]]:
        if not id_lists:
            return id_lists
        target = self.target([len(ids) for ids in id_lists])
        pad_id = self.pad_id
        if self.direction == "left":
            return [[pad_id] * (target - len(ids)) + ids for ids in id_lists]
        return [ids + [pad_id] * (target - len(ids)) for ids in id_lists]


@functools.cache
def _max_padded_length() -> int:
    """The longest padding whose Encoding (five lists of 8-byte slots) fits in physical memory."""
    try:
        memory = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):  # no sysconf: a platform without the names
        memory = 1 << 40
    return memory // 40


def padding_json(params: Padding | None) -> dict | None:
    """Padding settings as the library writes them in a tokenizer.json (what
    :func:`read_padding` reads back)."""
    if params is None:
        return None
    return {
        "strategy": "BatchLongest" if params.length is None else {"Fixed": params.length},
        "direction": file_spelling(DIRECTIONS, params.direction),
        "pad_to_multiple_of": params.pad_to_multiple_of,
        "pad_id": params.pad_id,
        "pad_type_id": params.pad_type_id,
        "pad_token": params.pad_token,
    }


def read_padding(data: object, path: str) -> Padding:
    spec = Spec(data, path)
    strategy = spec.raw("strategy")
    length = None
    if isinstance(strategy, dict) and list(strategy) == ["Fixed"]:
        length = read_usize(Spec(strategy, spec.at("strategy")), "Fixed")
    elif strategy != "BatchLongest":
        raise spec.fail("strategy", strategy, 'expected "BatchLongest" or {"Fixed": length}')
    direction = DIRECTIONS[spec.choice("direction", tuple(DIRECTIONS))]
    multiple = spec.raw("pad_to_multiple_of", None)
    if multiple is not None:
        multiple = read_usize(spec, "pad_to_multiple_of")
    pad_id = spec.uint("pad_id")
    pad_type_id = spec.uint("pad_type_id")
    pad_token = spec.string("pad_token")
    spec.finish()
    return Padding(direction, pad_id, pad_type_id, pad_token, length, multiple)
