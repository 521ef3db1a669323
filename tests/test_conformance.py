"""The four byte-level BPE files against the oracle over real and adversarial text."""

from __future__ import annotations

import pytest

from tests.oracle import assert_conforms, assert_same_encoding, assert_same_ids
from tests.support import adversarial, corpora

SPECIAL_TEXT = [
    "<|endoftext|>",
    "a<|endoftext|>b",
    "<|im_start|>user\nhi<|im_end|>",
    "<|begin_of_text|>Hello<|end_of_text|>",
    "<|endoftext|><|endoftext|> <|endoftext|>\n",
    "<|endoftext",
    "<|<|endoftext|>|>",
    "<<|im_start|>>",
]


def test_english(byte_level_pair):
    _, ours, ref = byte_level_pair
    assert_conforms(ours, ref, corpora.english_docs())


def test_code(byte_level_pair):
    _, ours, ref = byte_level_pair
    assert_conforms(ours, ref, corpora.code_docs())


@pytest.mark.parametrize("language", sorted(corpora.multilingual_docs()))
def test_multilingual(byte_level_pair, language):
    _, ours, ref = byte_level_pair
    assert_conforms(ours, ref, corpora.multilingual_docs()[language])


def test_adversarial(byte_level_pair):
    _, ours, ref = byte_level_pair
    assert_conforms(ours, ref, adversarial.adversarial_strings())


def test_full_encoding_objects(byte_level_pair):
    """encode() (tokens, type ids, masks), not only the ids fast path."""
    _, ours, ref = byte_level_pair
    for text in adversarial.adversarial_strings()[:200] + corpora.sample_docs("english", 20, 4000):
        assert_same_encoding(ours, ref, text)


def test_special_token_text_can_stay_text(byte_level_pair):
    """encode_special_tokens: special strings inside a corpus are encoded as ordinary text."""
    _, ours, ref = byte_level_pair
    texts = SPECIAL_TEXT + [s for s in adversarial.adversarial_strings() if "<" in s]
    ours.encode_special_tokens = ref.encode_special_tokens = True
    try:
        ours._cache.clear()
        for add in (True, False):
            ids = assert_same_ids(ours, ref, texts, add_special_tokens=add)
        # and the special ids really are absent from the plain-text encoding
        specials = {ref.token_to_id(t) for t in ("<|endoftext|>", "<|im_start|>")} - {None}
        assert not specials & {i for row in ids for i in row}
    finally:
        ours.encode_special_tokens = ref.encode_special_tokens = False
    # and by default they are special tokens again
    assert_same_ids(ours, ref, texts, add_special_tokens=True)


def test_vocab_lookups(byte_level_pair):
    _, ours, ref = byte_level_pair
    assert ours.get_vocab_size() == ref.get_vocab_size()
    assert ours.get_vocab_size(with_added_tokens=False) == ref.get_vocab_size(
        with_added_tokens=False
    )
    vocab = ref.get_vocab()
    assert ours.get_vocab() == vocab
    for token, token_id in list(vocab.items())[:: max(1, len(vocab) // 2000)]:
        assert ours.token_to_id(token) == ref.token_to_id(token)
        assert ours.id_to_token(token_id) == ref.id_to_token(token_id)
    for token_id in (-1, len(vocab) + 10**6):
        if token_id >= 0:
            assert ours.id_to_token(token_id) == ref.id_to_token(token_id)
    assert ours.token_to_id("no such token \u2603\u2603") == ref.token_to_id(
        "no such token \u2603\u2603"
    )
