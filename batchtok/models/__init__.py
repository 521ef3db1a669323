"""Models: one pre-tokenized piece ("word") -> token ids.

One module per model; :data:`REGISTRY` reads each JSON ``type``.
"""

from __future__ import annotations

from collections.abc import Callable

from ..utils.spec import Spec, dispatch
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
    return dispatch(Spec(data, path), REGISTRY, "model")
