"""The byte-level map of many pieces at once is the map of each piece."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok.utils import byte_level
from batchtok.utils.byte_level import byte_level_map, byte_level_map_many
from tests.support.tier import examples

PIECES = st.lists(st.text(st.characters(exclude_categories=("Cs",)), max_size=8), max_size=20)


@settings(max_examples=examples(500), deadline=None)
@given(pieces=PIECES)
def test_many_pieces_map_as_each_does(pieces):
    assert byte_level_map_many(pieces) == [byte_level_map(p) for p in pieces]


# the numpy path's: empty pieces anywhere (first, last, all), every UTF-8 length
MANY_PIECES = st.lists(
    st.one_of(st.just(""), st.text(st.characters(exclude_categories=("Cs",)), max_size=6)),
    max_size=40,
)


@settings(max_examples=examples(500), deadline=None)
@given(pieces=MANY_PIECES)
def test_many_pieces_map_as_each_does_through_numpy(pieces):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(byte_level, "_MANY", 0)
        assert byte_level_map_many(pieces) == [byte_level_map(p) for p in pieces]


@pytest.mark.parametrize("many", [0, 256])
def test_a_lone_surrogate_fails_as_one_piece_does(many, monkeypatch):
    monkeypatch.setattr(byte_level, "_MANY", many)
    with pytest.raises(UnicodeEncodeError):
        byte_level_map("a\ud800")
    with pytest.raises(UnicodeEncodeError):
        byte_level_map_many(["b", "a\ud800"])
