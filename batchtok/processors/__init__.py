"""Post-processors: special tokens added around the sequences' ids.

One module per component; :func:`read_post_processor` finds the component by its fields, as
tokenizers does (:data:`REGISTRY`: each JSON ``type``'s reader). Truncation and padding,
which run before and after them, are :mod:`batchtok.truncation` and :mod:`batchtok.padding`.
"""

from __future__ import annotations

from collections.abc import Callable

from ..errors import TokenizerFileError
from ..utils.spec import Spec, collect_ignored, record_ignored
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
    Spec(data, path)  # an object, or refused here
    assert isinstance(data, dict)
    kind = data.get("type")
    failures: dict[str, TokenizerFileError] = {}
    for name, build, checks_type in _UNTAGGED_ORDER:
        if checks_type and kind != name:
            continue
        spec = Spec(data, path, ignored=("type",))
        with collect_ignored() as ignored:
            try:
                component = build(spec)
                spec.finish()
            except TokenizerFileError as exc:
                failures[name] = exc
                continue
        record_ignored(ignored)
        return component
    if isinstance(kind, str) and kind in failures:
        raise failures[kind]
    raise TokenizerFileError(
        path,
        data,
        "matches no post-processor's fields (tokenizers reads post-processors by their fields: "
        "RobertaProcessing, BertProcessing, ByteLevel, TemplateProcessing or Sequence)",
    )


# (type, reader, whether tokenizers checks the type), in the order tokenizers tries them
_UNTAGGED_ORDER: list[tuple[str, Callable[[Spec], PostProcessor], bool]] = [
    ("RobertaProcessing", RobertaProcessing.from_spec, False),
    ("BertProcessing", BertProcessing.from_spec, False),
    ("ByteLevel", ByteLevel.from_spec, True),
    ("TemplateProcessing", TemplateProcessing.from_spec, False),
    ("Sequence", lambda spec: Sequence.from_spec(spec, read_post_processor), True),
]
REGISTRY: dict[str, Callable[[Spec], PostProcessor]] = {
    name: build for name, build, _ in _UNTAGGED_ORDER
}
