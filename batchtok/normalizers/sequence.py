"""Sequence: normalizers applied in turn; the Llama-2 ``[Prepend, Replace]`` pair is Metaspace."""

from __future__ import annotations

from collections.abc import Callable

from ..alignment import Aligned
from ..metaspace import Metaspace as MetaspaceTransform
from ..utils.spec import Spec, read_components
from .base import Normalizer
from .prepend import Prepend
from .replace import Replace


class Sequence(Normalizer):
    def __init__(self, normalizers: list[Normalizer]) -> None:
        self.normalizers = normalizers

    def normalize(self, text: str) -> str:
        for n in self.normalizers:
            text = n.normalize(text)
        return text

    def stage_texts(self, text: str) -> list[str]:
        """``text``, then its value after each normalizer (the last one is ``normalize(text)``):
        what :meth:`leading_from_stages` needs, at the cost of one ``normalize``."""
        texts = [text]
        for n in self.normalizers:
            texts.append(n.normalize(texts[-1]))
        return texts

    def leading_at_origin(self, text: str, count: int) -> int:
        return self.leading_from_stages(self.stage_texts(text), count)

    def steps(self) -> list[Normalizer]:
        return list(self.normalizers)

    def align(self, s: Aligned) -> Aligned:
        for n in self.normalizers:
            s = n.align(s)
        return s

    def absent_chars(self) -> frozenset[str]:
        return self.normalizers[-1].absent_chars() if self.normalizers else frozenset()

    def leading_from_stages(self, texts: list[str], count: int) -> int:
        """:meth:`leading_at_origin` of ``texts[0]``, given its :meth:`stage_texts`."""
        for n, text in zip(self.normalizers, texts):
            # No normalizer inserts a char before its first one, so once no char stems from
            # offset 0 none will.
            if not count:
                return 0
            count = n.leading_at_origin(text, count)
        return count

    def describe(self) -> str:
        return "Sequence[" + ", ".join(n.describe() for n in self.normalizers) + "]"

    @classmethod
    def from_spec(cls, spec: Spec, read: Callable[[object, str], Normalizer]) -> Normalizer:
        """The Sequence (or the Metaspace transform it spells) of the normalizers ``read``
        reads from ``normalizers``."""
        children = read_components(spec, "normalizers", read)
        if (
            len(children) == 2
            and isinstance(children[0], Prepend)
            and isinstance(children[1], Replace)
            and not children[1].is_regex
            and children[1].pattern == " "
            and len(children[0].prepend) == 1
            and children[1].content == children[0].prepend
        ):
            return MetaspaceNormalizer(children[0], children[1])
        return cls(children)


class MetaspaceNormalizer(Normalizer):
    """``Sequence[Prepend(r), Replace(" " -> r)]``: the Metaspace transform as a normalizer.

    Runs on every fragment between added tokens and always prepends, even before a leading
    space, exactly as the two steps do.
    """

    def __init__(self, prepend: Prepend, replace: Replace) -> None:
        self.metaspace = MetaspaceTransform(
            prepend.prepend, "always", split=False, skip_if_leading=False
        )
        # the two steps as the file spells them, for steps(); normalize runs the fused one
        self.prepend, self.replace = prepend, replace

    def normalize(self, text: str) -> str:
        return self.metaspace.apply(text, True)

    def leading_at_origin(self, text: str, count: int) -> int:
        # Prepend aligns its char to the first one; Replace of one char keeps alignments.
        return count + 1 if count else 0

    def align(self, s: Aligned) -> Aligned:
        for n in self.steps():
            s = n.align(s)
        return s

    def steps(self) -> list[Normalizer]:
        return [self.prepend, self.replace]

    def absent_chars(self) -> frozenset[str]:
        return self.replace.absent_chars()  # the last of the two steps

    def describe(self) -> str:
        return f"Sequence[Prepend, Replace] = {self.metaspace.describe()}"
