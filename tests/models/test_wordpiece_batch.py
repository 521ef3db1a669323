"""WordPiece over many words at once (``WordPiece.tokenize_many`` and
batchtok/models/wordpiece_batch.py, with the numpy trie of batchtok/models/trie_batch.py), and
the batched ``encode_batch_ids`` with truncation and padding: the same ids as a ``tokenize``
per word and as the oracle, whatever the vocabulary.

Random vocabularies over a few chars (some never a piece), continuing prefixes that are
empty, multi-char or a letter of the text, a missing unk token, short max_input_chars_per_word;
the batch thresholds lowered so that every draw is batched; then the real WordPiece file at the
shipped thresholds, whose tokenizer.json truncates and pads.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import batchtok
from batchtok.models import wordpiece as wordpiece_module
from batchtok.models import wordpiece_batch
from batchtok.models.trie_batch import Trie
from batchtok.models.wordpiece import WordPiece
from tests.models.test_bpe_batch import _batched as batched
from tests.models.test_bpe_batch import assert_real_file_batches, assert_same_encodings
from tests.models.test_wordpiece_and_wordlevel import wordpiece
from tests.support import tier
from tests.support.oracle import outcome, pair_from_json
from tests.support.tier import long_examples


def _batched():
    return batched(wordpiece_module)


@st.composite
def vocabularies(draw) -> tuple[dict[str, int], str, int, str]:
    """(vocab, prefix, max_input_chars_per_word, unk token), the unk token in the vocab or
    not, pieces with and without the prefix."""
    prefix = draw(st.sampled_from(["##", "", "b", "@@"]))
    pieces = draw(st.lists(st.text("abcé", min_size=1, max_size=4), min_size=1, max_size=14))
    tokens = [p if draw(st.booleans()) else prefix + p for p in pieces]
    unk = "[UNK]" if draw(st.booleans()) else "[MISSING]"
    vocab = {t: i for i, t in enumerate(dict.fromkeys(["[UNK]", *tokens]))}
    return vocab, prefix, draw(st.sampled_from([3, 8, 100])), unk


WORDS = st.lists(st.text("abcéx#@", max_size=12), min_size=1, max_size=12)


@long_examples(1500)
@given(vocab=vocabularies(), words=WORDS)
def test_words_are_cut_together_as_one_by_one(vocab, words):
    """Ids (or the error of a missing unk token) of each word, batched and one by one."""
    pieces, prefix, most, unk = vocab

    def model() -> WordPiece:
        return WordPiece(
            pieces,
            {i: t for t, i in pieces.items()},
            unk_token=unk,
            continuing_subword_prefix=prefix,
            max_input_chars_per_word=most,
        )

    one = model()
    expected = outcome(lambda: [one.tokenize(w) for w in words])
    many = model()
    with _batched():
        assert outcome(lambda: many.tokenize_many(words)) == expected


@long_examples(300)
@given(vocab=vocabularies(), words=WORDS, truncate=st.sampled_from([None, 1, 4]), pad=st.booleans())
def test_batched_ids_and_encodings_match_the_oracle(vocab, words, truncate, pad):
    """encode_batch_ids and encode_batch against the oracle, with the file truncating (right
    or left) and padding (fixed or to the batch's longest) as a tokenizer.json may ask."""
    pieces, prefix, most, unk = vocab
    data = json.loads(wordpiece(list(pieces), unk=unk, prefix=prefix, max_chars=most))
    if truncate is not None:
        direction = "Left" if truncate == 4 else "Right"
        data["truncation"] = {
            "max_length": truncate,
            "strategy": "LongestFirst",
            "stride": 0,
            "direction": direction,
        }
    if pad:
        data["padding"] = {
            "strategy": {"Fixed": 6} if truncate else "BatchLongest",
            "direction": "Right",
            "pad_to_multiple_of": None,
            "pad_id": 0,
            "pad_type_id": 0,
            "pad_token": "[UNK]",
        }
    ours, ref = pair_from_json(json.dumps(data))
    texts = [" ".join(words), *words]
    want = outcome(lambda: [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)])
    with _batched():
        got = outcome(lambda: ours.encode_batch_ids(texts, add_special_tokens=False))
        assert got[0] == want[0], (got, want)  # both fail (a missing unk token), or neither
        if want[0] == "ok":
            assert got == want
            assert_same_encodings(ours, ref, texts)


def test_the_trie_numbers_every_prefix_once():
    """Each string's node, its prefixes' nodes, and the walk's matches, by hand."""
    trie = Trie(["ab", "a", "abc", "b", "é"])
    assert trie.size == 6  # the root, a, b, é, ab, abc
    values = trie.values([10, 11, 12, 13, 14], -1)
    assert sorted(values.tolist()) == [-1, 10, 11, 12, 13, 14]
    import numpy as np

    points = np.array([ord(c) for c in "abcxé"], dtype=np.uint32)
    limit = np.full(5, 5, dtype=np.int64)
    found = {
        (length, p): int(values[n])
        for length, pos, node in trie.walk(points, np.arange(5, dtype=np.int64), limit)
        for p, n in zip(pos.tolist(), node.tolist())
    }
    assert found == {(1, 0): 11, (2, 0): 10, (3, 0): 12, (1, 1): 13, (1, 4): 14}


def test_real_files_batch_their_misses_and_match_the_oracle(monkeypatch):
    """minilm (its file truncates to 128 and pads to 128), at the shipped thresholds, over
    every corpus sample and the adversarial texts."""
    real = wordpiece_batch.greedy

    def spy(tok, calls) -> None:
        monkeypatch.setattr(wordpiece_batch, "greedy", lambda *a: calls.append(1) or real(*a))

    assert_real_file_batches("minilm", spy, seed=9, encodings=tier.count(300, 60))


@pytest.mark.parametrize("add", [True, False])
def test_truncation_and_padding_take_the_batch(add, monkeypatch):
    """The file's truncation and padding no longer send a batch one text at a time."""
    calls = []
    real = wordpiece_batch.greedy
    monkeypatch.setattr(wordpiece_batch, "greedy", lambda *a: calls.append(1) or real(*a))
    vocab = {"[UNK]": 0, "a": 1, "##b": 2, "b": 3}
    data = json.loads(wordpiece(list(vocab)))
    data["truncation"] = {
        "max_length": 2,
        "strategy": "LongestFirst",
        "stride": 0,
        "direction": "Right",
    }
    data["padding"] = {
        "strategy": {"Fixed": 3},
        "direction": "Left",
        "pad_to_multiple_of": None,
        "pad_id": 0,
        "pad_type_id": 0,
        "pad_token": "[UNK]",
    }
    _, ref = pair_from_json(json.dumps(data))
    ours = batchtok.Tokenizer.from_str(json.dumps(data))  # a fresh cache: every piece a miss
    texts = ["ab b", "abbb", "c a"]
    with _batched():
        got = ours.encode_batch_ids(texts, add_special_tokens=add)
    assert calls
    assert got == [e.ids for e in ref.encode_batch(texts, add_special_tokens=add)]
