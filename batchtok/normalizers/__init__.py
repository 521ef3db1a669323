"""Normalizers: string -> string, applied to each fragment between added tokens.

One module per component; :data:`REGISTRY` reads each JSON ``type``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..utils.spec import Spec, UntaggedOrder, read_component
from .base import Normalizer, leading_through
from .bert import BertNormalizer
from .byte_level import ByteLevel
from .precompiled import Precompiled
from .prepend import Prepend
from .replace import Replace
from .sequence import MetaspaceNormalizer, Sequence
from .strip import Strip, StripAccents
from .unicode import NFC, NFD, NFKC, NFKD, Lowercase, Nmt, UnicodeForm, UnicodeVersionError

__all__ = [
    "NFC",
    "NFD",
    "NFKC",
    "NFKD",
    "REGISTRY",
    "BertNormalizer",
    "ByteLevel",
    "Lowercase",
    "MetaspaceNormalizer",
    "Nmt",
    "Normalizer",
    "Precompiled",
    "Prepend",
    "Replace",
    "Sequence",
    "Strip",
    "StripAccents",
    "UnicodeForm",
    "UnicodeVersionError",
    "leading_through",
    "read_normalizer",
]


def read_normalizer(data: object, path: str) -> Normalizer:
    return read_component(data, path, REGISTRY, "normalizer", UNTAGGED)


# tokenizers' NormalizerWrapper: the tags of its tagged reading, then serde's untagged order
# (a derived struct reads whatever its type says; one from impl_serde_type checks it).
UNTAGGED = UntaggedOrder.of(
    tags=(
        "Bert Strip StripAccents NFC NFD NFKC NFKD Sequence Lowercase Nmt Precompiled "
        "Replace Prepend ByteLevel"
    ),
    order=(
        "BertNormalizer Strip StripAccents! NFC! NFD! NFKC! NFKD! Sequence Lowercase! "
        "Nmt! Precompiled Replace Prepend ByteLevel!"
    ),
    positional=(
        "BertNormalizer:clean_text,handle_chinese_chars,strip_accents,lowercase "
        "Strip:strip_left,strip_right Sequence:normalizers "
        "Precompiled:precompiled_charsmap Replace:pattern,content Prepend:prepend"
    ),
)


REGISTRY: dict[str, Callable[[Spec], Normalizer]] = {
    "Bert": BertNormalizer.from_spec,
    "BertNormalizer": BertNormalizer.from_spec,
    "StripAccents": StripAccents.from_spec,
    "Nmt": Nmt.from_spec,
    "ByteLevel": ByteLevel.from_spec,
    "Precompiled": Precompiled.from_spec,
    "NFC": NFC.from_spec,
    "NFD": NFD.from_spec,
    "NFKC": NFKC.from_spec,
    "NFKD": NFKD.from_spec,
    "Lowercase": Lowercase.from_spec,
    "Strip": Strip.from_spec,
    "Replace": Replace.from_spec,
    "Prepend": Prepend.from_spec,
    "Sequence": lambda spec: Sequence.from_spec(spec, read_normalizer),
}
