"""Unigram over many words at once (``Unigram.tokenize_many`` and
batchtok/models/unigram_batch.py), which ``encode_batch_ids`` and ``encode_batch`` use for the
pieces their cache lacks: the same ids as a ``tokenize`` per word, whatever the vocabulary.

Proven over random vocabularies (float scores with few ties, integer scores with many, sums
that overflow to -inf, a piece listed twice, an unk piece that is also text, no unk_id, byte
fallback) against ``tokenize`` word by word and against the oracle, with the batch thresholds
lowered so that every draw is batched; then on the real Unigram files over the corpus
samples, at the thresholds the library ships.
"""

from __future__ import annotations

import pickle

import pytest
import tokenizers
from hypothesis import given
from hypothesis import strategies as st

import batchtok
from batchtok.models import unigram as unigram_module
from batchtok.models import unigram_batch
from batchtok.models.unigram import Unigram
from tests.models.test_bpe_batch import _batched as batched
from tests.models.test_bpe_batch import assert_real_file_batches, assert_same_encodings
from tests.models.test_unigram import unigram
from tests.support import tier
from tests.support.oracle import outcome, pair_from_json
from tests.support.tier import long_examples

CHARS = "ab▁cé<>k"


def _batched():
    return batched(unigram_module)


SCORES = st.floats(-8, 0) | st.integers(-4, 0).map(float) | st.sampled_from([-1.5e308, -1.7e308])


@st.composite
def vocabularies(draw) -> tuple[list[tuple[str, float]], int | None, bool]:
    """(pieces, unk_id, byte_fallback): random pieces over a few chars (some of them never a
    piece), an unk piece that may be an ordinary char, a piece that may be listed twice."""
    pieces = draw(st.lists(st.tuples(st.text(CHARS, min_size=1, max_size=4), SCORES), max_size=16))
    pieces = list(dict(pieces).items())
    unk_piece = draw(st.sampled_from(["<unk>", "▁", "k", "a"]))
    pieces = [(unk_piece, -3.0)] + [p for p in pieces if p[0] != unk_piece]
    if pieces[1:] and draw(st.booleans()):
        pieces.append((pieces[1][0], draw(SCORES)))  # listed twice: the last id is looked up
    byte_fallback = draw(st.booleans())
    if byte_fallback:
        pieces += [("<0x62>", -1.0), ("<0x6B>", -2.0), ("<0xC3>", -2.0), ("<0xA9>", -2.0)]
    unk_id = draw(st.sampled_from([0, 1, None]))
    if unk_id is not None:
        unk_id = min(unk_id, len(pieces) - 1)
    return pieces, unk_id, byte_fallback


WORDS = st.lists(st.text(CHARS + "xé", max_size=12), min_size=1, max_size=12)


@long_examples(1500)
@given(vocab=vocabularies(), words=WORDS, long=st.integers(0, 2))
def test_words_take_the_same_path_together_as_one_by_one(vocab, words, long):
    """Ids (or the error) of each word, batched and one by one, with words longer than a
    batch takes and empty ones among them."""
    pieces, unk_id, byte_fallback = vocab
    words = words + [words[0] * (unigram_module._BATCH_CHARS // max(1, len(words[0])) + 1)] * long
    model = Unigram(pieces, unk_id, byte_fallback)
    expected = outcome(lambda: [model.tokenize(w) for w in words])
    fresh = Unigram(pieces, unk_id, byte_fallback)
    strings = outcome(lambda: [model.token_strings(w) for w in words])
    with _batched():
        assert outcome(lambda: fresh.tokenize_many(words)) == expected
        # the token strings (unknown text as written, fused) read together, as encode_batch does
        assert outcome(lambda: fresh.token_strings_many(words)) == strings


@long_examples(400)
@given(vocab=vocabularies(), words=WORDS, metaspace=st.booleans())
def test_batched_ids_and_encodings_match_the_oracle(vocab, words, metaspace):
    """encode_batch_ids and encode_batch (tokens hold the unknown text as written) against
    the oracle, whole texts as one word or split by Metaspace."""
    pieces, unk_id, byte_fallback = vocab
    pre = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    pair = pair_from_json(unigram(pieces, unk_id, byte_fallback, pre if metaspace else None))
    texts = [" ".join(words), *words, "".join(words)]
    ours, ref = pair
    want = outcome(lambda: [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)])
    with _batched():
        got = outcome(lambda: ours.encode_batch_ids(texts, add_special_tokens=False))
        assert got[0] == want[0], (got, want)  # both fail (a missing unk_id), or neither
        if want[0] == "ok":
            assert got == want
            assert_same_encodings(*pair, texts)


def test_each_word_is_batched_at_the_lowered_thresholds(monkeypatch):
    """The tests above do go through the numpy Viterbi (not the per-word fallback)."""
    calls = []
    real = unigram_batch.best_paths
    monkeypatch.setattr(unigram_batch, "best_paths", lambda *a: calls.append(a) or real(*a))
    model = Unigram([("<unk>", 0.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5)], 0, False)
    with _batched():
        assert model.tokenize_many(["ab", "zzab", "ba"]) == [[3], [0, 3], [2, 1]]
    assert calls


def _unknown_texts_pair():
    """A fresh pair (no piece cached, no unknown text known)."""
    pieces = [("<unk>", 0.0), ("▁", -1.0), ("a", -1.0), ("b", -2.0), ("ab", -2.5)]
    pre = {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always", "split": True}
    text = unigram(pieces, 0, False, pre)
    return batchtok.Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)


_UNKNOWN_TEXTS = ["ab zzab xa", "bxxb ab", "a"]


def _assert_batched_tokens(ours, ref) -> None:
    with _batched():  # the tokens are read (and their strings computed) inside too
        got = [e.tokens for e in ours.encode_batch(_UNKNOWN_TEXTS, add_special_tokens=False)]
    assert got == [e.tokens for e in ref.encode_batch(_UNKNOWN_TEXTS, add_special_tokens=False)]


def test_the_unknown_texts_are_placed_when_the_tokens_are_first_read(monkeypatch):
    """encode_batch leaves the token strings of the unknown text to the first read of a
    batch's tokens, which computes those of all its Encodings at once; ids, masks, type ids
    and a copy read nothing, and a pickle holds the tokens."""
    ours, ref = _unknown_texts_pair()
    calls = []
    real = batchtok.Tokenizer._unknown_text_exceptions
    monkeypatch.setattr(
        batchtok.Tokenizer,
        "_unknown_text_exceptions",
        lambda self, *a: calls.append(len(a[0])) or real(self, *a),
    )
    texts = [*_UNKNOWN_TEXTS, "ab ab"]
    want = ref.encode_batch(texts, add_special_tokens=False)
    with _batched():
        got = ours.encode_batch(texts, add_special_tokens=False)
        copies = [e.copy() for e in got]
        assert [(e.ids, e.attention_mask, e.type_ids, e.special_tokens_mask) for e in got] == [
            (e.ids, e.attention_mask, e.type_ids, e.special_tokens_mask) for e in want
        ]
        assert calls == []
        assert got[1].tokens == want[1].tokens
        assert calls == [2]  # the two texts with unknown text ("ab ab" has none)
        assert [e.tokens for e in copies] == [e.tokens for e in want]
        assert [pickle.loads(pickle.dumps(e)).tokens for e in got] == [e.tokens for e in want]
    assert calls == [2]


def test_windows_of_unknown_text_read_in_any_order_match_the_oracle():
    """Truncated into overflowing windows and padded, the Encodings' tokens are those of the
    oracle whichever window's tokens are read first."""
    ours, ref = _unknown_texts_pair()
    for tok in (ours, ref):
        tok.enable_truncation(3, stride=1)
        tok.enable_padding(length=4)
    texts = [*_UNKNOWN_TEXTS, "zz xa ab bxxb zzab"]
    want = ref.encode_batch(texts, add_special_tokens=False)
    with _batched():
        got = ours.encode_batch(texts, add_special_tokens=False)
        windows = [(e.overflowing[-1] if e.overflowing else e) for e in reversed(got)]
        firsts = [w.tokens for w in windows]
    assert firsts == [(e.overflowing[-1] if e.overflowing else e).tokens for e in reversed(want)]
    for a, b in zip(got, want):
        assert [a.tokens, *(o.tokens for o in a.overflowing)] == [
            b.tokens,
            *(o.tokens for o in b.overflowing),
        ]


def _fail(*args):
    pytest.fail("read again")


def test_encode_batch_takes_the_unknown_texts_from_the_batch_of_its_misses(monkeypatch):
    """encode_batch's Encodings report unknown text as written: the strings of the misses
    holding the unk id are the texts of the fused nodes of the batch that found their ids,
    not read again, by a lattice per piece or a second batch."""
    ours, ref = _unknown_texts_pair()
    read = []
    real = Unigram.tokenize_many_with_strings

    def spy(self, words):
        found = real(self, words)
        read.append(found[1])
        return found

    monkeypatch.setattr(Unigram, "tokenize_many_with_strings", spy)
    monkeypatch.setattr(Unigram, "token_strings", _fail)
    monkeypatch.setattr(Unigram, "_strings_together", _fail)
    _assert_batched_tokens(ours, ref)
    assert sorted(w for strings in read for w in strings) == ["▁bxxb", "▁xa", "▁zzab"]


def test_unknown_texts_the_batch_did_not_read_are_read_together(monkeypatch):
    """When the model's batch gives no strings, the misses holding the unk id have theirs
    read in one batch (token_strings_many), not by a lattice per piece."""
    ours, ref = _unknown_texts_pair()
    monkeypatch.setattr(
        Unigram, "tokenize_many_with_strings", lambda self, words: (self.tokenize_many(words), {})
    )
    batches = []
    real = Unigram._strings_together
    monkeypatch.setattr(
        Unigram, "_strings_together", lambda self, b: batches.append(b) or real(self, b)
    )
    monkeypatch.setattr(Unigram, "token_strings", _fail)
    _assert_batched_tokens(ours, ref)
    assert sorted(w for b in batches for w in b) == ["▁bxxb", "▁xa", "▁zzab"]


@pytest.mark.parametrize("name", ["t5-unigram", "albert-unigram", "xlmr-unigram"])
def test_real_files_batch_their_misses_and_match_the_oracle(name, monkeypatch):
    """At the shipped thresholds, over every corpus sample and the adversarial texts: the
    misses of a fresh tokenizer are batched, and the ids and Encodings equal the oracle's."""
    real = unigram_batch.best_paths

    def spy(tok, calls) -> None:
        monkeypatch.setattr(unigram_batch, "best_paths", lambda *a: calls.append(1) or real(*a))

    assert_real_file_batches(name, spy, seed=7, encodings=tier.count(300, 60))
