"""Unigram against the oracle on tiny hand-built and random vocabularies: Viterbi ties (the
earlier candidate wins), unknowns fused and scored min - 10, a missing unk_id failing only when an
unknown node is written, byte fallback, and serde_json's reading of long float literals.
"""

from __future__ import annotations

import json
import random

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok.errors import EncodeError
from batchtok.models.unigram import Unigram
from batchtok.utils.json_numbers import as_serde_float, serde_float
from tests.support.models import (
    SHORT,
    assert_ids_and_decode,
    assert_same_tokens,
    model_file,
)
from tests.support.oracle import outcome, pair_from_json
from tests.support.tier import examples


def unigram(pieces, unk_id=0, byte_fallback=False, pre=None) -> str:
    model = {
        "type": "Unigram",
        "unk_id": unk_id,
        "vocab": [list(p) for p in pieces],
        "byte_fallback": byte_fallback,
    }
    return model_file(model, pre)


def test_unigram_ties_keep_the_earlier_candidate():
    # "ab" (start 0) and "a"+"b" score the same: the first candidate written wins.
    pair = pair_from_json(unigram([("<unk>", 0.0), ("a", -1.0), ("b", -1.0), ("ab", -2.0)]))
    assert pair[0].encode("ab", False).tokens == ["ab"]
    assert_same_tokens(pair, SHORT + ["abab", "aab", "abb", "ba", "bab"])


def test_unigram_unknowns_fuse_and_score_min_minus_ten():
    pieces = [("a", -1.0), ("<unk>", 5.0), ("b", -2.0), ("xy", -40.0), ("c", -3.0)]
    pair = pair_from_json(unigram(pieces, unk_id=1))
    # unk score is min(-40) - 10, not <unk>'s own 5.0: "xy" wins over two unknowns.
    assert pair[0].encode("xy", False).tokens == ["xy"]
    texts = SHORT + ["xxyy", "axyb<unk>z", "zz<unk>", "qq", "qxy", "xyq", "<unk><unk>"]
    assert_same_tokens(pair, texts)
    assert_ids_and_decode(pair, texts)


def test_unigram_without_unk_id_fails_when_an_unknown_node_is_written():
    pair = pair_from_json(unigram([("a", -1.0), ("b", -2.0), ("ab", -10.0), ("c", -1.0)], None))
    # "ab": the unknown-free "a","b" path exists, so no unknown node is ever written.
    texts = ["ab", "abc", "ba", "z", "az", "", "abz"]
    assert_ids_and_decode(pair, texts)
    assert_same_tokens(pair, texts)
    empty = pair_from_json(unigram([], None))
    assert_ids_and_decode(empty, ["", "a"])


def test_unigram_byte_fallback_needs_every_byte():
    pieces = [("<unk>", 0.0), ("a", -1.0)] + [(f"<0x{b:02X}>", -5.0) for b in range(0x80)]
    pair = pair_from_json(unigram(pieces, byte_fallback=True))
    texts = ["ab", "aé", "a🦀b", "zz", "<0x61>", "é", "a\x00"]
    assert_ids_and_decode(pair, texts)
    assert_same_tokens(pair, texts)


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
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
    pair = pair_from_json(unigram(pieces, unk_at, byte_fallback))
    assert_ids_and_decode(pair, texts)
    assert_same_tokens(pair, texts)


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.randoms(use_true_random=False), st.lists(st.text("abcd", max_size=20), max_size=4))
def test_unigram_long_float_scores_read_as_serde_json_does(rng, texts):
    # 17-digit scores whose correctly rounded value serde_json misses by one ulp, with sums
    # that nearly tie; batchtok must read them as tokenizers does to break the same ties.
    pieces = [("<unk>", -30.0)]
    for piece in ["a", "b", "c", "d", "ab", "bc", "cd", "abc", "bcd", "abcd"]:
        pieces.append((piece, -rng.random() * 3 * len(piece)))
    assert_same_tokens(pair_from_json(unigram(pieces)), texts)


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


def _added(token_id: int, content: str, special: bool) -> dict:
    return {
        "id": token_id,
        "content": content,
        "single_word": False,
        "lstrip": False,
        "rstrip": False,
        "normalized": False,
        "special": special,
    }


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b", "ab", "<pad>", "ba", "abc"]), st.integers(-6, 0)),
        min_size=1,
        max_size=10,
    ),
    st.lists(
        st.tuples(st.integers(0, 14), st.sampled_from(["<pad>", "X", "ab", "<s>"]), st.booleans()),
        max_size=3,
        unique_by=lambda t: t[1],
    ),
    st.lists(st.text("ab<pad>Xs", max_size=12), min_size=1, max_size=3),
)
def test_a_piece_listed_twice_loads_as_in_the_oracle(pieces, added, texts):
    """transformers' converters can list a special piece twice (at its trained id and again
    at the id they assign). tokenizers looks the piece up at its last id, decodes both ids to
    it, and counts both in the vocab size, which places the added tokens after them."""
    vocab = [["<unk>", -3.0]] + [[p, float(s)] for p, s in pieces]
    data = json.loads(unigram(vocab))
    data["added_tokens"] = [_added(i, content, special) for i, content, special in added]
    ours, ref = pair_from_json(json.dumps(data))
    for get in (
        lambda t: t.get_vocab_size(),
        lambda t: t.get_vocab_size(False),
        lambda t: t.get_vocab(),
        lambda t: [t.id_to_token(i) for i in range(len(vocab) + 4)],
        lambda t: [t.token_to_id(c) for c in ("<pad>", "X", "ab", "<s>")],
    ):
        assert get(ours) == get(ref)
    assert_ids_and_decode((ours, ref), texts)
    every_id = list(range(len(vocab) + 2))
    for skip in (True, False):
        want = outcome(lambda skip=skip: ref.decode(every_id, skip_special_tokens=skip))
        assert outcome(lambda skip=skip: ours.decode(every_id, skip_special_tokens=skip)) == want


def _same_batch_ids(pair, texts) -> None:
    """One tokenizer encodes all ``texts`` (so parts cached from one text serve the next),
    and its ids equal the oracle's text by text, errors included."""
    ours, ref = pair
    want = [outcome(lambda t=t: ref.encode(t, add_special_tokens=False).ids) for t in texts]
    got = [outcome(lambda t=t: ours.encode_ids(t, False)) for t in texts]
    assert got == want


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.text("ab▁cé", min_size=1, max_size=4), st.floats(-8, 0) | st.integers(-4, 0)),
        max_size=16,
    ),
    st.lists(st.text("ab▁cédx", max_size=6), min_size=1, max_size=5),
    st.lists(st.integers(0, 4), min_size=1, max_size=30),
    st.sampled_from([0, 1]),
    st.booleans(),
    st.sampled_from(["<unk>", "▁", "x", "a"]),
)
def test_unigram_cut_words_agree_on_random_vocabularies(
    pieces, words, picks, unk_at, byte_fallback, unk_piece
):
    """Whole texts are one lattice here (no pre-tokenizer): batchtok cuts them where no piece
    spans two neighbours and the two sides cannot fuse as unknowns, and caches the parts.
    Random scores (float: few ties; integer: many) and an unk piece that may also be an
    ordinary char of the text; texts repeat words so cached parts are reused."""
    vocab = [(unk_piece, -3.0)] + [(p, float(s)) for p, s in dict(pieces).items() if p != unk_piece]
    if byte_fallback:
        vocab += [(f"<0x{b:02X}>", -2.0) for b in range(256)]
    texts = ["".join(words[i % len(words)] for i in picks[k:]) for k in range(0, len(picks), 5)]
    texts += [words[0], "▁".join(words) * 3]
    pair = pair_from_json(unigram(vocab, min(unk_at, len(vocab) - 1), byte_fallback))
    _same_batch_ids(pair, texts)


@settings(max_examples=examples(120), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.randoms(use_true_random=False),
    st.lists(st.integers(0, 3000), min_size=1, max_size=4),
    st.sampled_from([1.0, 3e4]),
)
def test_unigram_cut_parts_keep_the_oracles_rounding_far_into_a_text(rng, lengths, scale):
    """ "ab" ties with "a"+"b" from score zero; far into a text the library's f64 sums round,
    and which of them wins then depends on the score before them (it flips for ~1 in 8 random
    scores at a few thousand chars). A part that won by less than that rounding is read
    again from the score the library has there. With large scores one such part moves the
    score after it into another binade, where the next one rounds differently."""
    a, b = -rng.random() * scale, -rng.random() * scale
    pieces = [("<unk>", -5e4), ("a", a), ("b", b), ("ab", a + b), ("c", -rng.uniform(50, 2000))]
    pieces.append(("▁", -rng.random()))
    lengths += [300, 3000]  # parts longer than the longest cached whole
    texts = ["ab", "cab"] + [
        "c" * n + "ab" + "▁ab" * (n % 7) + "ab" * (n % 5) + "c" * (n // 3) + "ab" for n in lengths
    ]
    texts += ["ab" * (n // 4 + 9) for n in lengths] + ["c" * n + "▁ab" * 3 for n in lengths]
    _same_batch_ids(pair_from_json(unigram(pieces)), texts)


def test_unigram_scores_whose_sums_overflow_to_minus_infinity():
    """Near the f64 limit a path's sum becomes -inf: the first candidate to reach an end
    still takes it, and a later -inf one does not replace it."""
    pieces = [("<unk>", 0.0), ("a", -1.5e308), ("b", -1.7e308), ("ab", -1.6e308), ("c", -1.0)]
    pair = pair_from_json(unigram(pieces))
    texts = ["ab", "aab", "abab", "ba", "bab", "abc", "cab", "aaab", "bbb", "xab", "abx"]
    assert_same_tokens(pair, texts)
    assert_ids_and_decode(pair, texts)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(
        st.tuples(st.text("abcé<>", min_size=1, max_size=4), st.integers(-6, 0)),
        max_size=14,
    ),
    st.lists(st.text("abcdé<>", max_size=15), min_size=1, max_size=6),
    st.sampled_from([0, 1, 3, None]),
    st.booleans(),
)
def test_the_lean_viterbi_gives_the_lattices_ids(pieces, words, unk_at, byte_fallback):
    """Words shorter than the cut length take the lean Viterbi (no margins, no node scores):
    its ids and its refusals must be those of the full lattice, ties, fused unknowns, the unk
    piece and byte fallback included."""
    pieces = list(dict((p, float(s)) for p, s in pieces).items())
    pieces.insert(0, ("<unk>", -3.0))
    if byte_fallback:
        pieces += [("<0x62>", -1.0), ("<0x64>", -2.0), ("<0xC3>", -2.0)]
    if unk_at is not None and unk_at >= len(pieces):
        unk_at = len(pieces) - 1
    model = Unigram(pieces, unk_at, byte_fallback)
    for word in words:
        try:
            strings = model._lattice(word)[0]
        except EncodeError:
            with pytest.raises(EncodeError):
                model._best_ids(word)
            continue
        assert model._best_ids(word) == list(model._ids_of(word, strings)), (word, strings)
