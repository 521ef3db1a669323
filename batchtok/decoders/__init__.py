"""Decoders: the list of token strings -> a list of strings, concatenated by decode.

One module per component; :data:`REGISTRY` reads each JSON ``type``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..utils.spec import Spec, UntaggedOrder, read_component
from .base import Decoder
from .bpe import BPEDecoder
from .byte_fallback import ByteFallback
from .byte_level import ByteLevel
from .ctc import CTC
from .fuse import Fuse
from .metaspace import Metaspace
from .replace import Replace
from .sequence import Sequence
from .strip import Strip
from .wordpiece import WordPiece

__all__ = [
    "CTC",
    "REGISTRY",
    "BPEDecoder",
    "ByteFallback",
    "ByteLevel",
    "Decoder",
    "Fuse",
    "Metaspace",
    "Replace",
    "Sequence",
    "Strip",
    "WordPiece",
    "read_decoder",
]


def read_decoder(data: object, path: str) -> Decoder:
    return read_component(data, path, REGISTRY, "decoder", UNTAGGED)


# tokenizers' DecoderWrapper: the tags of its tagged reading, then serde's untagged order
# (a derived struct reads whatever its type says; the others check it).
UNTAGGED = UntaggedOrder.of(
    tags="BPEDecoder ByteLevel WordPiece Metaspace CTC Sequence Replace Fuse Strip ByteFallback",
    order=(
        "BPEDecoder ByteLevel! WordPiece Metaspace! CTC Sequence! Replace Fuse! Strip ByteFallback!"
    ),
    positional=(
        "BPEDecoder:suffix WordPiece:prefix,cleanup "
        "CTC:pad_token,word_delimiter_token,cleanup Replace:pattern,content "
        "Strip:content,start,stop"
    ),
)


REGISTRY: dict[str, Callable[[Spec], Decoder]] = {
    "BPEDecoder": BPEDecoder.from_spec,
    "WordPiece": WordPiece.from_spec,
    "CTC": CTC.from_spec,
    "Metaspace": Metaspace.from_spec,
    "ByteLevel": ByteLevel.from_spec,
    "Replace": Replace.from_spec,
    "ByteFallback": ByteFallback.from_spec,
    "Fuse": Fuse.from_spec,
    "Strip": Strip.from_spec,
    "Sequence": lambda spec: Sequence.from_spec(spec, read_decoder),
}
