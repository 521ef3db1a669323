"""Post-processors: special tokens added around the sequences' ids.

One module per component; :data:`REGISTRY` reads each JSON ``type``. Truncation and padding,
which run before and after them, are :mod:`batchtok.truncation` and :mod:`batchtok.padding`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..utils.spec import Spec, dispatch
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
    return dispatch(Spec(data, path), REGISTRY, "post-processor")


REGISTRY: dict[str, Callable[[Spec], PostProcessor]] = {
    "BertProcessing": BertProcessing.from_spec,
    "RobertaProcessing": RobertaProcessing.from_spec,
    "ByteLevel": ByteLevel.from_spec,
    "TemplateProcessing": TemplateProcessing.from_spec,
    "Sequence": lambda spec: Sequence.from_spec(spec, read_post_processor),
}
