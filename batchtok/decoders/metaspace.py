"""Metaspace decoder: replacement chars back to spaces."""

from __future__ import annotations

from ..metaspace import Metaspace as MetaspaceTransform
from ..metaspace import read_metaspace
from ..utils.spec import Spec
from .base import Decoder


class Metaspace(Decoder):
    """Replacement chars back to spaces (see :meth:`Metaspace.decode_chain`)."""

    def __init__(self, metaspace: MetaspaceTransform) -> None:
        self.metaspace = metaspace

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return self.metaspace.decode_chain(tokens)

    def describe(self) -> str:
        return self.metaspace.describe()

    @classmethod
    def from_spec(cls, spec: Spec) -> Metaspace:
        return cls(read_metaspace(spec))
