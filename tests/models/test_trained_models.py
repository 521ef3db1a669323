"""WordPiece, WordLevel and Unigram models against the oracle (tokenizers 0.23.3).

Vocabularies trained at test time by the oracle's own trainers on a few hundred KB of the
project's corpora, plus tiny hand-built and random vocabularies aimed at single rules: greedy
longest match and the whole-word unk (WordPiece), Viterbi ties, unk scores and fusing, byte
fallback (Unigram), the unk token missing from the vocab (all three), and serde_json's way of
reading long float literals. Refusals must name the JSON path.
"""

from __future__ import annotations

import functools
import json
import random

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from batchtok.utils.json_numbers import as_serde_float, serde_float
from tests.oracle import assert_same_decode, assert_same_ids
from tests.support import adversarial, corpora
from tests.support.oracle_harness import (
    _outcome,
    assert_agree,
    compare_decode,
    load_pair,
    with_changes,
)

# Text split into words and punctuation runs (a BERT-like split the Split pre-tokenizer can do).
# Spelled with \p classes: batchtok's `[^\w\s]` differs from onig's on U+00B2/B3/B9/BC-BE.
WORDS_SPLIT = {
    "type": "Split",
    "pattern": {"Regex": r"[\p{L}\p{M}\p{N}_]+|[^\p{L}\p{M}\p{N}_\s]+"},
    "behavior": "Removed",
    "invert": True,
}
METASPACE = {
    "type": "Metaspace",
    "replacement": "\u2581",
    "prepend_scheme": "always",
    "split": True,
}
WIDE = st.characters(codec="utf-8")


EMPTY_FILE = {
    key: None for key in ("truncation", "padding", "normalizer", "post_processor", "decoder")
}


def tokenizer_json(model: dict, pre_tokenizer: dict | None = None, decoder=None) -> str:
    return with_changes(
        EMPTY_FILE, added_tokens=[], model=model, pre_tokenizer=pre_tokenizer, decoder=decoder
    )


@functools.cache
def training_text() -> tuple[str, ...]:
    """About 400 KB: English pages, source files and every language of the corpora."""
    docs = [d[:20_000] for d in corpora.english_docs()[:8]]
    docs += [d[:10_000] for d in corpora.code_docs()[:10]]
    for lang_docs in corpora.multilingual_docs().values():
        docs += [d[:3_000] for d in lang_docs[:3]]
    return tuple(docs)


@functools.cache
def eval_docs() -> tuple[str, ...]:
    """Documents not used for training, cut short to keep the module fast."""
    docs = [d[:6_000] for d in corpora.english_docs()[20:26]]
    docs += [d[:4_000] for d in corpora.code_docs()[30:36]]
    for lang_docs in corpora.multilingual_docs().values():
        docs += [d[:1_500] for d in lang_docs[5:7]]
    return tuple(docs)


@functools.cache
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


def assert_same_tokens(pair, texts) -> None:
    """The model's token strings equal the oracle's (for a file without a pre-tokenizer or
    added tokens the model sees the whole text as one word)."""
    ours, ref = pair
    for text in texts:
        want = _outcome(lambda text=text: ref.encode(text, add_special_tokens=False).tokens)
        got = _outcome(lambda text=text: ours.model.token_strings(text) if text else [])
        assert got[0] == want[0], (text, got, want)
        if got[0] == "ok":
            assert got[1] == want[1], (text, got, want)


def assert_ids_and_decode(pair, texts) -> None:
    """Ids (errors must match errors) and decode of the oracle's ids, text by text."""
    ours, ref = pair
    for text in texts:
        want = _outcome(lambda text=text: ref.encode(text, add_special_tokens=False).ids)
        got = _outcome(lambda text=text: ours.encode_ids(text, False))
        assert got[0] == want[0], (text, got, want)
        if want[0] == "ok":
            assert got[1] == want[1], (text, got, want)
            assert not compare_decode(pair, want[1])


ADVERSARIAL = adversarial.adversarial_strings(max_chars=400)
SHORT = ["", "a", "ab", "abc", "aaaa", "abab", "x", "xyz", "axb", "<unk>", "<unk>x", "é", "🦀é"]


# -- trained vocabularies over real text -------------------------------------------------------


@pytest.mark.parametrize("kind", ["wordpiece", "wordlevel", "unigram"])
def test_trained_vocabulary_matches_the_oracle_on_corpora(kind):
    ours, ref = load_pair(with_model(trained(kind)))
    docs = list(eval_docs())
    theirs = assert_same_ids(ours, ref, docs, add_special_tokens=False)
    assert_same_decode(ours, ref, theirs[:40])
    assert sum(map(len, theirs)) > 10_000


@pytest.mark.parametrize("kind", ["wordpiece", "wordlevel"])
def test_trained_vocabulary_full_encodings_on_adversarial_text(kind):
    assert_agree(load_pair(with_model(trained(kind))), ADVERSARIAL)


def test_trained_unigram_on_adversarial_text():
    pair = load_pair(with_model(trained("unigram")))
    assert_ids_and_decode(pair, ADVERSARIAL)
    bare = dict(trained("unigram"), pre_tokenizer=None)
    assert_same_tokens(load_pair(json.dumps(bare)), ADVERSARIAL[:200] + SHORT)


@pytest.mark.parametrize("missing", [(), (0xE2, 0x9F), tuple(range(0x80, 0x100))])
def test_trained_unigram_with_byte_fallback(missing):
    pair = load_pair(unigram_with_bytes(trained("unigram"), missing))
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
        assert_agree(load_pair(with_model(base, **changes)), ADVERSARIAL[:120] + SHORT)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(WIDE, max_size=40))
def test_trained_models_on_arbitrary_text(text):
    for kind in ("wordpiece", "wordlevel"):
        assert_agree(load_pair(with_model(trained(kind))), [text])
    assert_ids_and_decode(load_pair(with_model(trained("unigram"))), [text])


# -- WordPiece and WordLevel rules on tiny vocabularies ----------------------------------------


def wordpiece(vocab, unk="[UNK]", prefix="##", max_chars=100) -> str:
    model = {
        "type": "WordPiece",
        "unk_token": unk,
        "continuing_subword_prefix": prefix,
        "max_input_chars_per_word": max_chars,
        "vocab": {t: i for i, t in enumerate(vocab)},
    }
    return tokenizer_json(
        model, {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed", "invert": False}
    )


WP_VOCAB = [
    "[UNK]",
    "a",
    "b",
    "ab",
    "abc",
    "##b",
    "##c",
    "##bc",
    "##d",
    "é",
    "##é",
    "🦀",
    "##🦀",
    "c",
    "un",
    "##aff",
    "##able",
    "##a",
]
WP_TEXTS = [
    "a b ab abc abd abcd",
    "abe",
    "aé aéé é🦀 🦀🦀",
    "unaffable un unable",
    "x",
    "ax",
    "abcx abc",
    "aaaa",
    "a" * 7,
    "ab" * 4,
    " ",
    "",
]


@pytest.mark.parametrize("prefix", ["##", "", "▁▁", "a"])
@pytest.mark.parametrize("max_chars", [0, 1, 3, 100])
def test_wordpiece_rules(prefix, max_chars):
    vocab = [t.replace("##", prefix) if t.startswith("##") else t for t in WP_VOCAB]
    vocab = list(dict.fromkeys(vocab))
    assert_agree(load_pair(wordpiece(vocab, prefix=prefix, max_chars=max_chars)), WP_TEXTS)


def test_wordpiece_and_wordlevel_unk_missing_fails_only_when_needed():
    wp = load_pair(wordpiece(["a", "##b"], unk="[UNK]"))
    wl_model = {"type": "WordLevel", "vocab": {"a": 0, "b": 1}, "unk_token": "[UNK]"}
    wl = load_pair(tokenizer_json(wl_model, WORDS_SPLIT))
    for pair in (wp, wl):
        assert pair[0].encode("a", False).ids == pair[1].encode("a", add_special_tokens=False).ids
        assert_agree(pair, ["a", "ab", "a c", "c", "abab", ""])
        with pytest.raises(Exception, match="Missing \\[UNK\\] token"):
            pair[0].encode("c")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.text("abcé", min_size=1, max_size=4), min_size=1, max_size=14),
    st.lists(st.text("abcé ", max_size=12), min_size=1, max_size=4),
    st.sampled_from(["##", "", "b"]),
    st.integers(0, 8),
)
def test_wordpiece_random_vocabularies(pieces, texts, prefix, max_chars):
    vocab = ["[UNK]"] + [p if i % 2 else prefix + p for i, p in enumerate(pieces)]
    assert_agree(
        load_pair(wordpiece(list(dict.fromkeys(vocab)), prefix=prefix, max_chars=max_chars)), texts
    )


# -- Unigram rules on tiny vocabularies -------------------------------------------------------


def unigram(pieces, unk_id=0, byte_fallback=False, pre=None) -> str:
    model = {
        "type": "Unigram",
        "unk_id": unk_id,
        "vocab": [list(p) for p in pieces],
        "byte_fallback": byte_fallback,
    }
    return tokenizer_json(model, pre)


def test_unigram_ties_keep_the_earlier_candidate():
    # "ab" (start 0) and "a"+"b" score the same: the first candidate written wins.
    pair = load_pair(unigram([("<unk>", 0.0), ("a", -1.0), ("b", -1.0), ("ab", -2.0)]))
    assert pair[0].encode("ab", False).tokens == ["ab"]
    assert_same_tokens(pair, SHORT + ["abab", "aab", "abb", "ba", "bab"])


def test_unigram_unknowns_fuse_and_score_min_minus_ten():
    pieces = [("a", -1.0), ("<unk>", 5.0), ("b", -2.0), ("xy", -40.0), ("c", -3.0)]
    pair = load_pair(unigram(pieces, unk_id=1))
    # unk score is min(-40) - 10, not <unk>'s own 5.0: "xy" wins over two unknowns.
    assert pair[0].encode("xy", False).tokens == ["xy"]
    texts = SHORT + ["xxyy", "axyb<unk>z", "zz<unk>", "qq", "qxy", "xyq", "<unk><unk>"]
    assert_same_tokens(pair, texts)
    assert_ids_and_decode(pair, texts)


def test_unigram_without_unk_id_fails_when_an_unknown_node_is_written():
    pair = load_pair(unigram([("a", -1.0), ("b", -2.0), ("ab", -10.0), ("c", -1.0)], None))
    # "ab": the unknown-free "a","b" path exists, so no unknown node is ever written.
    texts = ["ab", "abc", "ba", "z", "az", "", "abz"]
    assert_ids_and_decode(pair, texts)
    assert_same_tokens(pair, texts)
    empty = load_pair(unigram([], None))
    assert_ids_and_decode(empty, ["", "a"])


def test_unigram_byte_fallback_needs_every_byte():
    pieces = [("<unk>", 0.0), ("a", -1.0)] + [(f"<0x{b:02X}>", -5.0) for b in range(0x80)]
    pair = load_pair(unigram(pieces, byte_fallback=True))
    texts = ["ab", "aé", "a🦀b", "zz", "<0x61>", "é", "a\x00"]
    assert_ids_and_decode(pair, texts)
    assert_same_tokens(pair, texts)


@settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.text("abcé<>", min_size=1, max_size=4), st.integers(-6, 0)),
        min_size=0,
        max_size=14,
    ),
    st.lists(st.text("abcdé<>", max_size=14), min_size=1, max_size=4),
    st.sampled_from([0, 1, None]),
    st.booleans(),
)
def test_unigram_random_vocabularies_with_many_ties(pieces, texts, unk_at, byte_fallback):
    pieces = list(dict((p, float(s)) for p, s in pieces).items())
    pieces.insert(0, ("<unk>", -3.0))
    if byte_fallback:
        pieces += [("<0x62>", -1.0), ("<0x64>", -2.0), ("<0xC3>", -2.0)]
    if unk_at is not None and unk_at >= len(pieces):
        unk_at = 0
    pair = load_pair(unigram(pieces, unk_at, byte_fallback))
    assert_ids_and_decode(pair, texts)
    assert_same_tokens(pair, texts)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False), st.lists(st.text("abcd", max_size=20), max_size=4))
def test_unigram_long_float_scores_read_as_serde_json_does(rng, texts):
    # 17-digit scores whose correctly rounded value serde_json misses by one ulp, with sums
    # that nearly tie; batchtok must read them as tokenizers does to break the same ties.
    pieces = [("<unk>", -30.0)]
    for piece in ["a", "b", "c", "d", "ab", "bc", "cd", "abc", "bcd", "abcd"]:
        pieces.append((piece, -rng.random() * 3 * len(piece)))
    assert_same_tokens(load_pair(unigram(pieces)), texts)


def test_serde_float_matches_the_oracles_reading():
    rng = random.Random(5)
    literals = [
        repr(-rng.random() * rng.choice([1, 20, 1e-3, 1e5, 1e-300, 1e300])) for _ in range(3000)
    ]
    literals += [
        "-1e-320",
        "-5e-324",
        "-1.7976931348623157e308",
        "-0.1",
        "3",
        "-0",
        "-12345678901234567890123",
        "-1.00000000000000000000000001",
        "-1e-400",
        "-123456789012345678901234567890e-10",
        "-0.000000000000000000001234567890123456",
    ]
    text = unigram([(f"p{i}", 0.0) for i in range(len(literals))], None)
    head, _, _ = text.partition('"vocab": [')
    body = ", ".join(f'["p{i}", {lit}]' for i, lit in enumerate(literals))
    ref = tokenizers.Tokenizer.from_str(head + '"vocab": [' + body + '], "byte_fallback": false}}')
    back = [score for _, score in json.loads(ref.to_str())["model"]["vocab"]]
    assert [serde_float(lit) for lit in literals] == back
    differs = sum(serde_float(lit) != float(lit) for lit in literals)
    assert differs > 100  # the point of the module: Python's json reads these differently
    assert [as_serde_float(float(lit)) for lit in literals[:3000]] == back[:3000]


# -- refusals ---------------------------------------------------------------------------------

GOOD_WP = {
    "type": "WordPiece",
    "unk_token": "[UNK]",
    "continuing_subword_prefix": "##",
    "max_input_chars_per_word": 100,
    "vocab": {"[UNK]": 0, "a": 1},
}
GOOD_WL = {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1}, "unk_token": "[UNK]"}
GOOD_UG = {
    "type": "Unigram",
    "unk_id": 0,
    "vocab": [["<unk>", 0.0], ["a", -1.0]],
    "byte_fallback": False,
}


def without(model: dict, key: str) -> dict:
    return {k: v for k, v in model.items() if k != key}


REFUSED = [
    # (model, path, also refused by the oracle)
    (without(GOOD_WP, "unk_token"), "model.unk_token", True),
    (without(GOOD_WP, "continuing_subword_prefix"), "model.continuing_subword_prefix", True),
    (without(GOOD_WP, "max_input_chars_per_word"), "model.max_input_chars_per_word", True),
    (without(GOOD_WP, "vocab"), "model.vocab", True),
    (dict(GOOD_WP, max_input_chars_per_word=-1), "model.max_input_chars_per_word", True),
    (dict(GOOD_WP, max_input_chars_per_word=True), "model.max_input_chars_per_word", True),
    (dict(GOOD_WP, unk_token=None), "model.unk_token", True),
    (dict(GOOD_WP, vocab={"a": -1}), "model.vocab", True),
    (dict(GOOD_WP, vocab={"a": 0, "b": 0}), "model.vocab", False),
    (dict(GOOD_WP, extra=1), "model.extra", False),
    (without(GOOD_WL, "unk_token"), "model.unk_token", True),
    (without(GOOD_WL, "vocab"), "model.vocab", True),
    (dict(GOOD_WL, vocab=[["a", 0]]), "model.vocab", True),
    (without(GOOD_UG, "vocab"), "model.vocab", True),
    (dict(GOOD_UG, unk_id=2), "model.unk_id", True),
    (dict(GOOD_UG, unk_id=0, vocab=[]), "model.unk_id", True),
    (dict(GOOD_UG, unk_id=-1), "model.unk_id", True),
    (dict(GOOD_UG, unk_id="0"), "model.unk_id", True),
    (dict(GOOD_UG, byte_fallback=None), "model.byte_fallback", True),
    (dict(GOOD_UG, vocab=[["a"]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab=[["a", -1.0, 2]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab=[[1, -1.0]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab=[["a", "-1"]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab=[["a", True]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab={"a": -1.0}), "model.vocab", True),
    (dict(GOOD_UG, vocab=[["<unk>", 0.0], ["a", -1.0], ["a", -2.0]]), "model.vocab[2]", False),
    (dict(GOOD_UG, vocab=[["<unk>", 0.0], ["a", 1e400]]), "model.vocab[1]", True),
    (dict(GOOD_UG, alpha=0.5), "model.alpha", False),
]


@pytest.mark.parametrize(("model", "path", "oracle_refuses"), REFUSED)
def test_refusals_name_the_json_path(model, path, oracle_refuses):
    text = tokenizer_json(model).replace("Infinity", "1e400")
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(text)
    assert info.value.path == path, str(info.value)
    oracle = _outcome(lambda: tokenizers.Tokenizer.from_str(text))
    assert (oracle[0] == "error") == oracle_refuses, oracle


@pytest.mark.parametrize("model", [GOOD_WP, GOOD_WL, GOOD_UG, dict(GOOD_UG, unk_id=None)])
def test_valid_models_load_and_describe_themselves(model):
    ours, ref = load_pair(tokenizer_json(model))
    assert model["type"] in ours.model.describe()
    assert ours.get_vocab_size() == ref.get_vocab_size()
    if model["type"] == "Unigram":
        # Encoding.tokens of unknown text need the tokenizer to ask model.token_strings.
        assert_ids_and_decode((ours, ref), SHORT)
        assert_same_tokens((ours, ref), SHORT)
    else:
        assert_agree((ours, ref), SHORT)
