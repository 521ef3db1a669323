"""Every real tokenizer file against the oracle over real and adversarial text.

Byte-level BPE (Llama-3, Qwen3, GPT-4o, GPT-3.5) and SentencePiece BPE (Llama-2 in its own and
in Mistral's layout, Gemma 3): ids with and without special tokens, decode both ways.
"""

from __future__ import annotations

import pytest

from tests.support import adversarial, corpora, tier
from tests.support.oracle import assert_conforms, assert_same_encoding, assert_same_ids

# The default tier samples each corpus to these many chars (the full tier takes all of it).
ENGLISH_CHARS = CODE_CHARS = 200_000
LANGUAGE_CHARS = 12_000  # each of ~28 languages, for each file


def test_english(real_pair):
    _, ours, ref = real_pair
    assert_conforms(ours, ref, tier.docs(corpora.english_docs(), ENGLISH_CHARS, "english"))


def test_code(real_pair):
    _, ours, ref = real_pair
    assert_conforms(ours, ref, tier.docs(corpora.code_docs(), CODE_CHARS, "code"))


@pytest.mark.parametrize("language", sorted(corpora.multilingual_docs()))
def test_multilingual(real_pair, language):
    _, ours, ref = real_pair
    docs = corpora.multilingual_docs()[language]
    assert_conforms(ours, ref, tier.docs(docs, LANGUAGE_CHARS, language))


def test_adversarial(real_pair):
    _, ours, ref = real_pair
    assert_conforms(ours, ref, adversarial.SPECIAL_TEXT + adversarial.adversarial_strings())


def test_full_encoding_objects(real_pair):
    """encode() (tokens, type ids, masks), not only the ids fast path."""
    _, ours, ref = real_pair
    samples = adversarial.SPECIAL_TEXT + adversarial.adversarial_strings()[:200]
    for text in samples + corpora.sample_docs("english", tier.count(20, 8), 4000):
        assert_same_encoding(ours, ref, text)


def test_special_token_text_can_stay_text(real_pair):
    """encode_special_tokens: special strings inside a corpus are encoded as ordinary text."""
    _, ours, ref = real_pair
    texts = adversarial.SPECIAL_TEXT + [s for s in adversarial.adversarial_strings() if "<" in s]
    ours.encode_special_tokens = ref.encode_special_tokens = True
    try:
        ours._cache.clear()
        for add in (True, False):
            ids = assert_same_ids(ours, ref, texts, add_special_tokens=add)
        # and the special ids really are absent from the plain-text encoding
        # and no special token id appears in the plain-text encodings
        specials = {i for i, t in ref.get_added_tokens_decoder().items() if t.special}
        assert not specials & {i for row in ids for i in row}
    finally:
        ours.encode_special_tokens = ref.encode_special_tokens = False
    # and by default they are special tokens again
    assert_same_ids(ours, ref, texts, add_special_tokens=True)


def test_vocab_lookups(real_pair):
    _, ours, ref = real_pair
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


def test_decode_skips_special_tokens_by_default(real_pair):
    _, ours, ref = real_pair
    ids = ref.encode("Hello world <s> </s> <|endoftext|>", add_special_tokens=True).ids
    assert ours.decode(ids) == ref.decode(ids)
    assert ours.decode_batch([ids, ids[:2]]) == ref.decode_batch([ids, ids[:2]])


def test_a_tiny_piece_cache_changes_nothing(real_pair):
    """The cache turns over every few pieces: results equal the oracle's all the same."""
    import batchtok
    from tests.support.oracle import tokenizer_json

    name, _, ref = real_pair
    # from the load cache, as a user's from_file (a new object: its cache is its own)
    tiny = batchtok.Tokenizer.from_buffer(tokenizer_json(name).encode("utf-8"))
    tiny.set_cache_size(0.002)  # two generations of 2 entries
    docs = corpora.sample_docs("multilingual", 30, 1500) + adversarial.SPECIAL_TEXT
    assert_same_ids(tiny, ref, docs, add_special_tokens=True)
    assert len(tiny._cache) <= 2 and len(tiny._cache.old) <= 2
