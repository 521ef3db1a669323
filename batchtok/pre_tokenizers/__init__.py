"""Pre-tokenizers: a list of pieces -> a finer list of pieces (empty pieces are dropped).

One module per component; :data:`REGISTRY` reads each JSON ``type``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..utils.spec import Spec, dispatch
from .base import PreTokenizer
from .bert import BertPreTokenizer
from .byte_level import ByteLevel, ByteLevelSplit
from .char_delimiter_split import CharDelimiterSplit
from .digits import Digits
from .fixed_length import FixedLength
from .metaspace import Metaspace
from .punctuation import Punctuation
from .sequence import Sequence
from .split import Split
from .unicode_scripts import UnicodeScripts
from .whitespace import Whitespace, WhitespaceSplit

__all__ = [
    "REGISTRY",
    "BertPreTokenizer",
    "ByteLevel",
    "ByteLevelSplit",
    "CharDelimiterSplit",
    "Digits",
    "FixedLength",
    "Metaspace",
    "PreTokenizer",
    "Punctuation",
    "Sequence",
    "Split",
    "UnicodeScripts",
    "Whitespace",
    "WhitespaceSplit",
    "read_pre_tokenizer",
]


def read_pre_tokenizer(data: object, path: str) -> PreTokenizer:
    return dispatch(Spec(data, path), REGISTRY, "pre-tokenizer")


REGISTRY: dict[str, Callable[[Spec], PreTokenizer]] = {
    "Split": Split.from_spec,
    "Metaspace": Metaspace.from_spec,
    "ByteLevel": ByteLevel.from_spec,
    "Sequence": lambda spec: Sequence.from_spec(spec, read_pre_tokenizer),
    "BertPreTokenizer": BertPreTokenizer.from_spec,
    "Whitespace": Whitespace.from_spec,
    "WhitespaceSplit": WhitespaceSplit.from_spec,
    "Punctuation": Punctuation.from_spec,
    "Digits": Digits.from_spec,
    "UnicodeScripts": UnicodeScripts.from_spec,
    "CharDelimiterSplit": CharDelimiterSplit.from_spec,
    "FixedLength": FixedLength.from_spec,
}
