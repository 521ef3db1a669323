"""Models: one pre-tokenized piece ("word") -> token ids.

One module per model; :data:`REGISTRY` reads each JSON ``type``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..utils.spec import Spec, UntaggedOrder, read_component
from .base import Model
from .bpe import BPE
from .unigram import Unigram
from .wordlevel import WordLevel
from .wordpiece import WordPiece

__all__ = ["BPE", "REGISTRY", "Model", "Unigram", "WordLevel", "WordPiece", "read_model"]

REGISTRY: dict[str, Callable[[Spec], Model]] = {
    "BPE": BPE.from_spec,
    "WordPiece": WordPiece.from_spec,
    "WordLevel": WordLevel.from_spec,
    "Unigram": Unigram.from_spec,
}


def read_model(data: object, path: str) -> Model:
    """The model ``data`` describes, as tokenizers' ``ModelWrapper`` reads it: a ``type``
    naming a model picks that model's reader (its refusal is final); without a ``type`` each
    model is tried in turn and the first whose fields read is kept; any other ``type`` is
    refused, since every model's reader refuses a type that is not its own name."""
    return read_component(data, path, REGISTRY, "model", UNTAGGED)


# tokenizers' ModelWrapper (models/mod.rs): its tags, then its untagged order (WordPiece
# before WordLevel, whose fields are a subset of WordPiece's). Each model's visitor takes a
# missing `type` but refuses one that is not its name; none reads a JSON array.
UNTAGGED = UntaggedOrder.of(
    tags="BPE WordPiece WordLevel Unigram", order="BPE? WordPiece? WordLevel? Unigram?"
)
