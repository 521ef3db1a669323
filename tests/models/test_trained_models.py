"""WordPiece, WordLevel and Unigram vocabularies trained at test time by the oracle's own
trainers on a few hundred KB of the project's corpora, against the oracle (tokenizers 0.23.3):
ids and decode on held-out documents, full encodings on adversarial text, Unigram with byte
fallback (every byte piece, some, or none above 0x7F), WordPiece's settings varied on the trained
vocabulary, and arbitrary text.
"""

from __future__ import annotations

import json

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import adversarial, corpora
from tests.support.caches import per_module_cache
from tests.support.models import (
    METASPACE,
    SHORT,
    WIDE,
    WORDS_SPLIT,
    assert_ids_and_decode,
    assert_same_tokens,
)
from tests.support.oracle import (
    assert_agree,
    assert_same_decode,
    assert_same_ids,
    pair_from_json,
)
from tests.support.tier import examples


@per_module_cache
def training_text() -> tuple[str, ...]:
    """About 400 KB: English pages, source files and every language of the corpora."""
    docs = [d[:20_000] for d in corpora.english_docs()[:8]]
    docs += [d[:10_000] for d in corpora.code_docs()[:10]]
    for lang_docs in corpora.multilingual_docs().values():
        docs += [d[:3_000] for d in lang_docs[:3]]
    return tuple(docs)


@per_module_cache
def eval_docs() -> tuple[str, ...]:
    """Documents not used for training, cut short to keep the module fast."""
    docs = [d[:6_000] for d in corpora.english_docs()[20:26]]
    docs += [d[:4_000] for d in corpora.code_docs()[30:36]]
    for lang_docs in corpora.multilingual_docs().values():
        docs += [d[:1_500] for d in lang_docs[5:7]]
    return tuple(docs)


@per_module_cache
def trained(kind: str) -> dict:
    """A tokenizer.json dict whose model the oracle's trainer built on ``training_text()``."""
    models, trainers = tokenizers.models, tokenizers.trainers
    if kind == "wordpiece":
        tok = tokenizers.Tokenizer(models.WordPiece(unk_token="[UNK]"))
        trainer = trainers.WordPieceTrainer(
            vocab_size=3000, special_tokens=["[UNK]"], show_progress=False
        )
        pre = WORDS_SPLIT
    elif kind == "wordlevel":
        tok = tokenizers.Tokenizer(models.WordLevel(unk_token="[UNK]"))
        trainer = trainers.WordLevelTrainer(
            vocab_size=5000, special_tokens=["[UNK]"], show_progress=False
        )
        pre = WORDS_SPLIT
    else:
        tok = tokenizers.Tokenizer(models.Unigram())
        trainer = trainers.UnigramTrainer(
            vocab_size=2000, special_tokens=["<unk>"], unk_token="<unk>", show_progress=False
        )
        pre = METASPACE
    data = json.loads(tok.to_str())
    data["pre_tokenizer"] = pre
    tok = tokenizers.Tokenizer.from_str(json.dumps(data))
    tok.train_from_iterator(list(training_text()), trainer)
    return json.loads(tok.to_str())


def with_model(base: dict, **changes) -> str:
    data = dict(base, model=dict(base["model"], **changes))
    return json.dumps(data, ensure_ascii=False)


def unigram_with_bytes(base: dict, missing: tuple[int, ...] = ()) -> str:
    """The trained Unigram plus ``<0xXX>`` pieces (some missing) and byte_fallback on."""
    vocab = list(base["model"]["vocab"])
    low = min(score for _, score in vocab)
    vocab += [[f"<0x{b:02X}>", low] for b in range(256) if b not in missing]
    decoder = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}
    data = dict(base, model=dict(base["model"], vocab=vocab, byte_fallback=True), decoder=decoder)
    return json.dumps(data, ensure_ascii=False)


ADVERSARIAL = adversarial.adversarial_strings(max_chars=400)


@pytest.mark.parametrize("kind", ["wordpiece", "wordlevel", "unigram"])
def test_trained_vocabulary_matches_the_oracle_on_corpora(kind):
    ours, ref = pair_from_json(with_model(trained(kind)))
    docs = list(eval_docs())
    theirs = assert_same_ids(ours, ref, docs, add_special_tokens=False)
    assert_same_decode(ours, ref, theirs[:40])
    assert sum(map(len, theirs)) > 10_000


@pytest.mark.parametrize("kind", ["wordpiece", "wordlevel"])
def test_trained_vocabulary_full_encodings_on_adversarial_text(kind):
    assert_agree(pair_from_json(with_model(trained(kind))), ADVERSARIAL)


def test_trained_unigram_on_adversarial_text():
    pair = pair_from_json(with_model(trained("unigram")))
    assert_ids_and_decode(pair, ADVERSARIAL)
    bare = dict(trained("unigram"), pre_tokenizer=None)
    assert_same_tokens(pair_from_json(json.dumps(bare)), ADVERSARIAL[:200] + SHORT)


@pytest.mark.parametrize("missing", [(), (0xE2, 0x9F), tuple(range(0x80, 0x100))])
def test_trained_unigram_with_byte_fallback(missing):
    pair = pair_from_json(unigram_with_bytes(trained("unigram"), missing))
    assert_ids_and_decode(pair, list(eval_docs())[-30:] + ADVERSARIAL[:150] + SHORT)


def test_wordpiece_variants_of_the_trained_vocabulary():
    base = trained("wordpiece")
    for changes in (
        {"max_input_chars_per_word": 5},
        {"max_input_chars_per_word": 0},
        {"continuing_subword_prefix": ""},
        {"continuing_subword_prefix": "@@"},
        {"unk_token": "[NOT-THERE]"},
    ):
        assert_agree(pair_from_json(with_model(base, **changes)), ADVERSARIAL[:120] + SHORT)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(WIDE, max_size=40))
def test_trained_models_on_arbitrary_text(text):
    for kind in ("wordpiece", "wordlevel"):
        assert_agree(pair_from_json(with_model(trained(kind))), [text])
    assert_ids_and_decode(pair_from_json(with_model(trained("unigram"))), [text])
