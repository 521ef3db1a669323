"""The boundary proof for BPE without a pre-tokenizer (batchtok/models/bpe_boundary.py), over
random vocabularies: with and without a ``▁`` token, an unk token, fuse_unk and byte fallback.

A file without a pre-tokenizer sends a whole text to BPE as one word; batchtok cuts it where no
merge can join the two sides. Every char must land in some piece (an unknown ``▁`` once
vanished when the vocabulary had no ``▁``), and the streaming cut (for very long texts) must
give the same pieces as the list one.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import batchtok
from batchtok.models.bpe_boundary import BoundarySplitter
from tests.support.models import assert_ids_and_decode, model_file
from tests.support.oracle import pair_from_json
from tests.support.tier import examples

MARK = "\u2581"
ALPHABET = ["a", "b", "c", MARK, "\u00e9", "\u4e2d"]
TEXT_CHARS = ALPHABET + ["x", " ", "\n"]


def bpe_model(vocab: dict, merges: list, **fields) -> dict:
    """A BPE model object of the tokenizer.json format; ``fields`` override its defaults."""
    return {
        "type": "BPE",
        "dropout": None,
        "unk_token": None,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": False,
        "byte_fallback": False,
        "ignore_merges": False,
        "vocab": vocab,
        "merges": merges,
    } | fields


@st.composite
def bpe_files(draw) -> str:
    """A BPE tokenizer.json with random base chars (``▁`` among them or not), random merges
    of what is already in the vocabulary, and random unk / fuse_unk / byte_fallback."""
    base = draw(st.lists(st.sampled_from(ALPHABET), min_size=1, unique=True))
    with_unk = draw(st.booleans())
    byte_fallback = draw(st.booleans())
    tokens = (["<unk>"] if with_unk else []) + base
    if byte_fallback and draw(st.booleans()):
        tokens += [f"<0x{b:02X}>" for b in range(256)]
    merges = []
    for _ in range(draw(st.integers(0, 12))):
        left = draw(st.sampled_from(tokens[-40:] if len(tokens) > 40 else tokens))
        right = draw(st.sampled_from(base + [t for t in tokens if len(t) > 1 and "<" not in t]))
        if "<" in left or left + right in tokens:
            continue
        merges.append([left, right])
        tokens.append(left + right)
    model = bpe_model(
        {t: i for i, t in enumerate(tokens)},
        merges,
        unk_token="<unk>" if with_unk else None,
        fuse_unk=draw(st.booleans()),
        byte_fallback=byte_fallback,
        ignore_merges=draw(st.booleans()),
    )
    return model_file(model)


TEXTS = st.lists(st.sampled_from(TEXT_CHARS), max_size=24).map("".join)


@settings(
    max_examples=examples(400),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
@given(data=bpe_files(), texts=st.lists(TEXTS, min_size=1, max_size=6))
def test_random_vocabularies_match_the_oracle(data, texts):
    assert_ids_and_decode(pair_from_json(data), texts)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=bpe_files(), word=TEXTS)
def test_the_streaming_cut_gives_the_list_cut(data, word):
    model = batchtok.Tokenizer.from_str(data).model
    splitter = BoundarySplitter.for_model(model)
    if splitter is None or not splitter.active:
        return
    pieces = splitter.split(word)
    assert "".join(pieces) == word  # no char dropped
    assert list(splitter.iter_split(word)) == pieces


@pytest.mark.parametrize("text", ["a" + MARK, MARK + "a", "a" + MARK * 2 + "b", MARK, "ab" + MARK])
@pytest.mark.parametrize("fuse_unk", [False, True])
def test_an_unknown_mark_is_the_unk_token(text, fuse_unk):
    """The case that was found: no ``▁`` in the vocabulary, an unk token, no pre-tokenizer."""
    vocab = {"<unk>": 0, "a": 1, "b": 2, "ab": 3, "c": 4}  # "c": in no longer token
    model = bpe_model(vocab, [["a", "b"]], unk_token="<unk>", fuse_unk=fuse_unk)
    ours, ref = pair_from_json(model_file(model))
    want = ref.encode(text, add_special_tokens=False).ids
    assert 0 in want
    assert ours.encode_ids(text, False) == want


def test_without_an_unk_token_an_unknown_char_vanishes_and_its_neighbours_merge():
    """tokenizers drops a char it cannot encode when there is no unk token (and no byte for
    it), so "éa▁" is é▁: no cut is provably safe there, and none is made."""
    vocab = {"é": 0, MARK: 1, "é" + MARK: 2}
    ours, ref = pair_from_json(model_file(bpe_model(vocab, [["é", MARK]])))
    assert BoundarySplitter.for_model(ours.model) is None
    assert_ids_and_decode((ours, ref), ["éa" + MARK, "aé" + MARK + "a", "é" + MARK])
    assert ours.encode_ids("éa" + MARK, False) == [2]


def test_with_ignore_merges_a_part_that_is_a_token_is_still_merged():
    """The case the pair-cut tests found: "b" is in no longer token, so "aab" could be cut into
    "aa" | "b"; "aa" is a token no merge makes, and with ignore_merges only the whole word is
    looked up. The oracle gives a, a, b."""
    vocab = {"a": 0, "b": 1, "aa": 2} | {f"<0x{b:02X}>": 3 + b for b in range(256)}
    model = bpe_model(vocab, [], byte_fallback=True, ignore_merges=True)
    ours, ref = pair_from_json(model_file(model))
    assert BoundarySplitter.for_model(ours.model) is None
    assert_ids_and_decode((ours, ref), ["aab", "aa", "baab", "aabaa"])
    assert ours.encode_ids("aab", False) == [0, 0, 1]
