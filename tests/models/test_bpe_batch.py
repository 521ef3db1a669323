"""BPE of many words at once (``BPE.tokenize_many`` and batchtok/models/bpe_batch.py), which
``encode_batch_ids`` uses for the pieces its cache lacks: the same ids as a ``tokenize`` per
word, whatever the vocabulary.

Proven over random vocabularies (SentencePiece-like and byte-level, merges learnt from random
words, tokens no merge makes, shuffled ranks, ignore_merges, unknown chars, byte fallback)
against ``tokenize`` word by word and against the oracle, with the batch thresholds lowered so
that every draw is batched; then on the real files over the corpus samples, at the thresholds
the library ships.
"""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

import batchtok
from batchtok import tokenizer as tokenizer_module
from batchtok.errors import EncodeError
from batchtok.models import bpe as bpe_module
from batchtok.models.bpe_batch import MAX_SYMBOLS, PairTable
from tests.models.test_bpe_boundary import bpe_model
from tests.models.test_bpe_char_cut import _texts as byte_level_texts
from tests.models.test_bpe_char_cut import byte_level_files
from tests.models.test_bpe_pair_cut import _texts as pair_texts
from tests.models.test_bpe_pair_cut import pair_files
from tests.support import adversarial, corpora, tier
from tests.support.models import model_file
from tests.support.oracle import (
    added_token,
    assert_same_ids,
    pair_for,
    pair_from_json,
    tokenizer_json,
)
from tests.support.tier import long_examples


@contextlib.contextmanager
def _batched(model_module=bpe_module, chunk_chars: int = 8):
    """Every call batched: thresholds of one word (``model_module._BATCH_MIN``) and one
    missing piece; BPE merges its words in chunks of ``chunk_chars`` chars (a word longer
    than that is a chunk of its own)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(model_module, "_BATCH_MIN", 1)
        mp.setattr(tokenizer_module, "PREFILL_MIN", 1)
        mp.setattr(bpe_module, "_CHUNK_CHARS", chunk_chars)
        yield


# chunks of one word, of a few words, and the whole batch in one
_CHUNK_CHARS = st.sampled_from([1, 8, 40, 1 << 40])


def _words(draw, texts: list[str]) -> list[str]:
    """The texts, some of them longer than a batch takes, and the empty word."""
    long = [t * (MAX_SYMBOLS // max(1, len(t)) + 1) for t in texts[:1]]
    return texts + long + draw(st.lists(st.just(""), max_size=1))


def assert_many_as_one_by_one(model, words: list[str], expected: list[list[int]]) -> None:
    """tokenize_many, and tokenize_many_flat (its arrays), give each word's own ids."""
    assert list(map(list, model.tokenize_many(words))) == expected
    flat, counts = model.tokenize_many_flat(words)
    assert counts.tolist() == list(map(len, expected))
    assert flat.tolist() == [i for ids in expected for i in ids]


# Keys from a narrow range as well as anywhere: clustered keys share home slots and build
# long probe runs, including runs that wrap around the end of the table.
_PAIR_KEYS = st.one_of(st.integers(0, 64), st.integers(0, 2**40))


@long_examples(500)
@given(
    pairs=st.dictionaries(_PAIR_KEYS, st.integers(0, 2**50), max_size=300),
    absent=st.lists(_PAIR_KEYS, max_size=50),
)
def test_the_pair_table_finds_every_merge_and_nothing_else(pairs, absent):
    import numpy as np

    table = PairTable(pairs)
    kept = PairTable.from_bytes(table.to_bytes())
    queries = [*pairs, *absent, *pairs]
    for t in (table, kept):
        found = t.lookup(np.array(queries, dtype=np.int64)).tolist()
        assert found == [pairs.get(key, -1) for key in queries]
    assert len(table.slot_keys) >= 3 * len(pairs)  # at most a third full: every probe ends


@long_examples(1500)
@given(data=st.data(), file=pair_files())
def test_sentencepiece_like_words_merge_together_as_one_by_one(data, file):
    text, words = file
    batch = _words(data.draw, data.draw(pair_texts(words)))
    model = batchtok.Tokenizer.from_str(text).model
    expected = [model.tokenize(w) for w in batch]
    with _batched(chunk_chars=data.draw(_CHUNK_CHARS)):
        assert_many_as_one_by_one(model, batch, expected)


@long_examples(1500)
@given(data=st.data(), file=byte_level_files())
def test_byte_level_words_merge_together_as_one_by_one(data, file):
    text, words = file
    tok = batchtok.Tokenizer.from_str(text)
    batch = [tok._piece_map(t) for t in data.draw(byte_level_texts(words))]
    batch = _words(data.draw, batch)
    expected = [tok.model.tokenize(w) for w in batch]
    with _batched(chunk_chars=data.draw(_CHUNK_CHARS)):
        assert_many_as_one_by_one(tok.model, batch, expected)


@long_examples(300)
@given(data=st.data(), file=pair_files())
def test_batched_encodes_match_the_oracle(data, file):
    text, words = file
    texts = data.draw(pair_texts(words))
    with _batched():
        assert_same_ids(*pair_from_json(text), texts + texts[:1], add_special_tokens=False)


@long_examples(300)
@given(data=st.data(), file=byte_level_files())
def test_batched_byte_level_encodes_match_the_oracle(data, file):
    text, words = file
    texts = data.draw(byte_level_texts(words))
    with _batched():
        assert_same_ids(*pair_from_json(text), texts, add_special_tokens=False)


# chars of one to four UTF-8 bytes, and the edges of each width
_WIDE_CHARS = ["a", "b", "\x7f", "\u00e9", "\u07ff", "\u0915", "\u094d", "\u4e2d", "\uffff"]
_WIDE_CHARS += ["\U00010000", "\U0001f642", "\U0010ffff", "\u2581"]


@st.composite
def _byte_fallback_files(draw) -> tuple[str, list[str]]:
    """A BPE file with byte fallback and all 256 byte tokens, some of the chars above as
    tokens of their own, and random merges of chars and of byte tokens (so a char that falls
    back to its bytes may merge them): the file and the chars its texts draw from."""
    chars = draw(st.lists(st.sampled_from(_WIDE_CHARS), unique=True, max_size=8))
    tokens = [*chars, *(f"<0x{b:02X}>" for b in range(256))]
    wide_bytes = sorted({f"<0x{b:02X}>" for c in _WIDE_CHARS for b in c.encode("utf-8")})
    merges = []
    for _ in range(draw(st.integers(0, 14))):
        left = draw(st.sampled_from([*chars, *wide_bytes, *tokens[-10:]]))
        right = draw(st.sampled_from([*chars, *wide_bytes]))
        if left + right not in tokens:
            merges.append([left, right])
            tokens.append(left + right)
    model = bpe_model(
        {t: i for i, t in enumerate(tokens)}, merges, byte_fallback=True, unk_token="<0x00>"
    )
    return model_file(model), _WIDE_CHARS


@long_examples(800)
@given(data=st.data(), file=_byte_fallback_files())
def test_words_that_fall_back_to_bytes_merge_together_as_one_by_one(data, file):
    """The batch reads the bytes of a char that is no token itself (numpy, all widths of
    UTF-8); the same initial symbols as ``_symbols`` and the same merges as ``tokenize``."""
    import numpy as np

    from batchtok.models.ragged import code_points, lengths_of, starts_of, with_bytes

    text, chars = file
    model = batchtok.Tokenizer.from_str(text).model
    words = data.draw(st.lists(st.text(st.sampled_from(chars), min_size=1), min_size=1))
    _, table = model._batch_tables()
    points = code_points("".join(words))
    symbols, counts = with_bytes(
        points,
        table[np.minimum(points, len(table) - 1)],
        starts_of(lengths_of(words)),
        np.array(model.byte_fallback_ids()),
    )
    expected = [[model.vocab[s] for s in model._symbols(w)] for w in words]
    assert counts.tolist() == list(map(len, expected))
    assert symbols.tolist() == [i for ids in expected for i in ids]
    with _batched(chunk_chars=data.draw(_CHUNK_CHARS)):
        assert_many_as_one_by_one(model, words, [model.tokenize(w) for w in words])


@long_examples(200)
@given(data=st.data(), file=_byte_fallback_files())
def test_batched_byte_fallback_encodes_match_the_oracle(data, file):
    text, chars = file
    texts = data.draw(st.lists(st.text(st.sampled_from(chars + [" "]), min_size=1), min_size=1))
    with _batched():
        assert_same_ids(*pair_from_json(text), texts, add_special_tokens=False)


def test_a_failing_text_fails_the_batch_as_it_does_one_text_at_a_time():
    """The unk token is not in the vocab: "ab" encodes, "z" fails. Batched or not, texts before
    a failing one do not hide its error, and a non-text raises as encode_ids does."""
    model = bpe_model({"a": 0, "b": 1, "ab": 2}, [["a", "b"]], unk_token="<unk>")
    tok = batchtok.Tokenizer.from_str(model_file(model))
    texts = ["ab", "ba", "abz", "b"]
    with _batched():
        with pytest.raises(EncodeError, match="Unk token `<unk>` not found"):
            tok.encode_batch_ids(texts, add_special_tokens=False)
        with pytest.raises(TypeError) as batched:
            tok.encode_batch_ids(["ab", 3], add_special_tokens=False)
        assert tok.encode_batch_ids(texts[:2] * 3, add_special_tokens=False) == [[2], [1, 0]] * 3
    with pytest.raises(TypeError) as alone:
        tok.encode_ids(3, add_special_tokens=False)  # type: ignore[arg-type]
    assert str(batched.value) == str(alone.value)


def assert_same_encodings(ours, ref, texts) -> None:
    """encode_batch both ways: ids, token strings, type ids and masks of every text."""
    for add in (True, False):
        mine = ours.encode_batch(texts, add_special_tokens=add)
        theirs = ref.encode_batch(texts, add_special_tokens=add)
        for text, a, b in zip(texts, mine, theirs):
            assert a.ids == b.ids, (text, a.ids, b.ids)
            assert a.tokens == b.tokens, (text, a.tokens, b.tokens)
            assert a.type_ids == b.type_ids
            assert a.special_tokens_mask == b.special_tokens_mask
            assert a.attention_mask == b.attention_mask


@long_examples(200)
@given(data=st.data(), file=pair_files(), strip=st.booleans())
def test_batched_encodings_match_the_oracle(data, file, strip):
    """Full Encodings of a batch, with added tokens (special or not, stripping the spaces
    beside them or not, so that a token's string is the text it matched) and a post-processor
    that adds tokens."""
    text, words = file
    data_ = json.loads(text)
    vocab = data_["model"]["vocab"]
    for content, special in (("<s>", True), ("[x]", False)):
        vocab[content] = len(vocab)
        data_["added_tokens"].append(
            added_token(
                content, special=special, normalized=not special, lstrip=strip, rstrip=strip
            )
            | {"id": vocab[content]}
        )
    data_["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": {"id": "<s>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<s>": {"id": "<s>", "ids": [vocab["<s>"]], "tokens": ["<s>"]}},
    }
    pieces = data.draw(pair_texts(words))
    texts = [" <s> ".join(pieces), f"{pieces[0]} [x] {pieces[-1]}", *pieces]
    with _batched():
        assert_same_encodings(*pair_from_json(json.dumps(data_)), texts)


def assert_real_file_batches(name: str, spy, seed: int, encodings: int) -> None:
    """A fresh tokenizer of fixture ``name`` over the adversarial texts and every corpus
    sample: ``spy(tok, calls)`` records into ``calls`` each batched tokenization; the misses
    are batched, and the ids (then the first ``encodings`` Encodings) equal the oracle's."""
    _, ref = pair_for(name)
    tok = batchtok.Tokenizer.from_buffer(tokenizer_json(name).encode("utf-8"))  # a fresh cache
    calls: list = []
    spy(tok, calls)
    texts = adversarial.SPECIAL_TEXT + [
        doc
        for kind in ("english", "code", "multilingual")
        for doc in corpora.sample_docs(kind, tier.count(300, 60), 2000, seed=seed)
    ]
    assert_same_ids(tok, ref, texts, add_special_tokens=False)
    assert calls, "the misses were not batched"
    fresh = batchtok.Tokenizer.from_buffer(tokenizer_json(name).encode("utf-8"))
    assert_same_encodings(fresh, ref, texts[:encodings])


@pytest.mark.parametrize("name", ["llama2", "gemma3", "llama3", "gpt4o"])
def test_real_files_batch_their_misses_and_match_the_oracle(name, monkeypatch):
    """At the shipped thresholds, over every corpus sample and the adversarial texts: the
    misses of a fresh tokenizer are batched, and the ids equal the oracle's."""

    def spy(tok, calls) -> None:
        symbols = tok.model._chunk_symbols  # read by the list and the flat batch alike

        def symbols_and_count(*args):
            found = symbols(*args)
            calls.extend(found[0])  # words merged in numpy
            return found

        monkeypatch.setattr(tok.model, "_chunk_symbols", symbols_and_count)

    assert_real_file_batches(name, spy, seed=5, encodings=tier.count(200, 40))
