"""The cyclic collector is paused inside batch calls and restored after them, whatever
happens: a normal return, an error, a nested call, or a caller that had disabled it."""

from __future__ import annotations

import gc

import pytest

import batchtok
from batchtok.errors import EncodeError
from batchtok.utils.gc_pause import gc_paused
from tests.support.models import model_file


@gc_paused
def _state(inner: bool = False) -> tuple[bool, ...]:
    """The collector's state here, and inside a nested paused call."""
    return (gc.isenabled(), *(_state() if inner else ()))


@gc_paused
def _fail() -> None:
    assert not gc.isenabled()
    raise EncodeError("boom")


def test_paused_inside_and_restored_after():
    assert gc.isenabled()
    assert _state(inner=True) == (False, False)
    assert gc.isenabled()
    with pytest.raises(EncodeError, match="boom"):
        _fail()
    assert gc.isenabled()


def test_a_disabled_collector_stays_disabled():
    gc.disable()
    try:
        assert _state() == (False,)
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_the_batch_calls_pause_it():
    """encode_batch and encode_batch_ids run paused (the model sees the collector off), and
    a failing batch leaves it on."""
    vocab = {"<unk>": 0, "a": 1, "b": 2}
    model = {"type": "WordLevel", "vocab": vocab, "unk_token": "<unk>"}
    tok = batchtok.Tokenizer.from_str(model_file(model, {"type": "Whitespace"}))
    seen = []
    tokenize = tok.model.tokenize
    tok.model.tokenize = lambda word: seen.append(gc.isenabled()) or tokenize(word)
    assert tok.encode_batch_ids(["a b"], add_special_tokens=False) == [[1, 2]]
    assert [e.ids for e in tok.encode_batch(["b a c"], add_special_tokens=False)] == [[2, 1, 0]]
    assert seen and not any(seen)
    assert gc.isenabled()
    with pytest.raises(TypeError):
        tok.encode_batch_ids(["a", 3], add_special_tokens=False)  # type: ignore[list-item]
    assert gc.isenabled()
