"""Post-processors: special tokens added around the sequences' ids.

One module per component; :func:`read_post_processor` finds the component by its fields, as
tokenizers does (:data:`REGISTRY`: each JSON ``type``'s reader). Truncation and padding,
which run before and after them, are :mod:`batchtok.truncation` and :mod:`batchtok.padding`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..utils.spec import Spec, UntaggedOrder, read_component
from .base import PostProcessor, default_process
from .bert import BertProcessing
from .byte_level import ByteLevel
from .roberta import RobertaProcessing
from .sequence import Sequence
from .template import TemplateProcessing

__all__ = [
    "REGISTRY",
    "BertProcessing",
    "ByteLevel",
    "PostProcessor",
    "RobertaProcessing",
    "Sequence",
    "TemplateProcessing",
    "default_process",
    "read_post_processor",
]


def read_post_processor(data: object, path: str) -> PostProcessor:
    """The post-processor ``data`` describes, found as `tokenizers` finds it.

    tokenizers reads post-processors untagged: it tries RobertaProcessing, BertProcessing,
    ByteLevel, TemplateProcessing and Sequence in that order and keeps the first whose fields
    read, whatever ``type`` says; only ByteLevel and Sequence check their ``type``. So an
    object typed BertProcessing that carries Roberta's fields is a Roberta one, and one typed
    RobertaProcessing without them a Bert one.
    """
    return read_component(data, path, REGISTRY, "post-processor", UNTAGGED)


REGISTRY: dict[str, Callable[[Spec], PostProcessor]] = {
    "RobertaProcessing": RobertaProcessing.from_spec,
    "BertProcessing": BertProcessing.from_spec,
    "ByteLevel": ByteLevel.from_spec,
    "TemplateProcessing": TemplateProcessing.from_spec,
    "Sequence": lambda spec: Sequence.from_spec(spec, read_post_processor),
}
# no tagged reading at all: always the untagged order
UNTAGGED = UntaggedOrder.of(
    tags="",
    order="RobertaProcessing BertProcessing ByteLevel! TemplateProcessing Sequence!",
    positional=(
        "RobertaProcessing:sep,cls,trim_offsets,add_prefix_space BertProcessing:sep,cls "
        "TemplateProcessing:single,pair,special_tokens"
    ),
)
