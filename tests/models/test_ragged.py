"""The ragged layout the batched models share (batchtok/models/ragged.py) and the scaffold that
sends a batch's fitting words through a model's batched path and the rest through ``tokenize``
(``Model._each_together``)."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from batchtok.models.base import Model
from batchtok.models.ragged import code_points, lengths_of, split, starts_of

words = st.lists(st.text(st.characters(codec=None, min_codepoint=0), max_size=6), max_size=12)


@given(words)
def test_the_flat_layout_gives_every_word_back(batch: list[str]) -> None:
    points, lengths = code_points("".join(batch)), lengths_of(batch)
    starts = starts_of(lengths)
    assert points.dtype == np.uint32
    assert lengths.tolist() == [len(w) for w in batch]
    back = ["".join(map(chr, points[a : a + n].tolist())) for a, n in zip(starts, lengths)]
    assert back == batch
    assert split(list("".join(batch)), lengths.tolist()) == [list(w) for w in batch]


def test_code_points_keep_lone_surrogates_and_astral_chars() -> None:
    assert code_points("a\ud800\U0001f600").tolist() == [0x61, 0xD800, 0x1F600]
    assert starts_of(lengths_of(["ab", "", "c"])).tolist() == [0, 2, 2]
    assert starts_of(lengths_of([])).tolist() == []


class _Letters(Model):
    """A model whose ids are code points; its batched path returns them negated, so that a
    test sees which path each word took, and declines words holding 'x'."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []

    def tokenize(self, word: str) -> list[int]:
        return [ord(c) for c in word]

    def together(self, batch: list[str]) -> list[list[int] | None]:
        self.batches.append(batch)
        return [None if "x" in w else [-ord(c) for c in w] for w in batch]


@given(words, st.booleans())
def test_fitting_words_go_together_the_rest_one_by_one(batch: list[str], all_fit: bool) -> None:
    model = _Letters()

    def fits(word: str) -> bool:
        return len(word) % 2 == 0

    out = model._each_together(batch, None if all_fit else fits, model.together)
    sent = [w for w in batch if all_fit or fits(w)]
    assert model.batches == ([sent] if sent or all_fit else [])
    for word, ids in zip(batch, out, strict=True):
        batched = (all_fit or fits(word)) and "x" not in word
        assert ids == [(-ord(c) if batched else ord(c)) for c in word]
