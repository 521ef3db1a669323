"""``Tokenizer.encode_batch_ids_flat``: the ids of a batch as one array and its offsets, equal
to `tokenizers` on files with and without the piece table, with special tokens or without, and
through the list path when truncation or padding is set."""

from __future__ import annotations

import numpy as np
import pytest
import tokenizers

from batchtok import Tokenizer
from tests.support import adversarial, corpora
from tests.support.fixtures import fixture_path

# the piece table (byte-level rules, the boundary splitter) and the paths without it
FILES = ["llama3", "gpt4o", "gemma3", "t5-unigram", "trained-wordpiece-bert", "clip-bpe"]


def _texts() -> list[str]:
    texts = adversarial.adversarial_strings(max_chars=1500)
    for kind in ("english", "code", "multilingual"):
        texts += corpora.sample_docs(kind, 30, 3000)
    return texts + ["", " ", "<s> it's </s><|endoftext|> 12345", "a\uffffb"]


def _rows(flat: np.ndarray, offsets: np.ndarray) -> list[list[int]]:
    assert flat.dtype == np.int32 and offsets.dtype == np.int64
    assert offsets[0] == 0 and offsets[-1] == len(flat) and (np.diff(offsets) >= 0).all()
    return [flat[a:b].tolist() for a, b in zip(offsets[:-1].tolist(), offsets[1:].tolist())]


@pytest.mark.parametrize("name", FILES)
@pytest.mark.parametrize("add", [True, False])
def test_the_flat_ids_are_the_oracles(name: str, add: bool) -> None:
    path = str(fixture_path(name))
    texts = _texts()
    oracle = tokenizers.Tokenizer.from_file(path)
    want = [e.ids for e in oracle.encode_batch(texts, add_special_tokens=add)]
    ours = Tokenizer.from_file(path)
    flat, offsets = ours.encode_batch_ids_flat(texts, add)
    assert len(offsets) == len(texts) + 1
    assert _rows(flat, offsets) == want
    assert _rows(*ours.encode_batch_ids_flat(texts, add)) == want  # the table warm


def test_truncation_and_padding_go_through_the_lists() -> None:
    path = str(fixture_path("llama3"))
    texts = corpora.sample_docs("english", 20, 2000) + ["", "short"]
    oracle = tokenizers.Tokenizer.from_file(path)
    ours = Tokenizer.from_file(path)
    for tok in (oracle, ours):
        tok.enable_truncation(40)
        tok.enable_padding(pad_id=0, pad_token="<|end_of_text|>")
    want = [e.ids for e in oracle.encode_batch(texts)]
    assert _rows(*ours.encode_batch_ids_flat(texts)) == want
    assert set(np.diff(ours.encode_batch_ids_flat(texts)[1]).tolist()) == {40}


def test_an_empty_batch_is_two_arrays() -> None:
    flat, offsets = Tokenizer.from_file(fixture_path("llama3")).encode_batch_ids_flat([])
    assert flat.tolist() == [] and offsets.tolist() == [0]


def test_a_text_the_engine_refuses_raises() -> None:
    ours = Tokenizer.from_file(fixture_path("llama3"))
    with pytest.raises(TypeError):
        ours.encode_batch_ids_flat(["fine", 3])  # type: ignore[list-item]
