"""The boundary proof for BPE without a pre-tokenizer (batchtok/models/bpe_boundary.py), over
random vocabularies: with and without a ``▁`` token, an unk token, fuse_unk and byte fallback.

A file without a pre-tokenizer sends a whole text to BPE as one word; batchtok cuts it where no
merge can join the two sides. Every char must land in some piece (an unknown ``▁`` once
vanished when the vocabulary had no ``▁``), and the streaming cut (for very long texts) must
give the same pieces as the list one.
"""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
from unittest import mock

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import batchtok
import batchtok.tokenizer as engine
from batchtok.models import bpe_boundary
from batchtok.models.bpe_boundary import BoundarySplitter
from tests.support.fixtures import fixture_path
from tests.support.models import assert_ids_and_decode, model_file
from tests.support.oracle import added_token, pair_from_json
from tests.support.tier import examples

MARK = "\u2581"
ALPHABET = ["a", "b", "c", MARK, "\u00e9", "\u4e2d", "\U00020000"]
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
def bpe_files(draw, cut: bool = False) -> str:
    """A BPE tokenizer.json with random base chars (``▁`` among them or not), random merges
    of what is already in the vocabulary, and random unk / fuse_unk / byte_fallback. With
    ``cut``, only files the boundary splitter may cut (an unk token or all 256 bytes, no
    ignore_merges)."""
    base = draw(st.lists(st.sampled_from(ALPHABET), min_size=1, unique=True))
    with_unk = draw(st.booleans())
    byte_fallback = draw(st.booleans())
    all_bytes = byte_fallback and draw(st.booleans())
    if cut and not with_unk and not all_bytes:
        byte_fallback = all_bytes = True
    tokens = (["<unk>"] if with_unk else []) + base
    if all_bytes:
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
        ignore_merges=False if cut else draw(st.booleans()),
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


SPLIT_CHARS = TEXT_CHARS + ["\u0905", "\U0001f642", "\0", "\ud800", "\uffff"]
SPLIT_WORD = st.lists(st.sampled_from(SPLIT_CHARS), max_size=16).map("".join)
SPLIT_WORDS = st.lists(SPLIT_WORD, max_size=40)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=bpe_files(), words=SPLIT_WORDS, numpy_from=st.sampled_from([0, 1, 16]))
def test_splitting_many_words_at_once_gives_each_words_cut(data, words, numpy_from):
    """split_many (the kinds of chars read in numpy for all the words, the cuts made with one
    str.split) gives split's parts for each word: empty words, NULs (which join the words),
    a lone surrogate, chars past U+FFFF, with and without the mark in a longer token."""
    model = batchtok.Tokenizer.from_str(data).model
    splitter = BoundarySplitter.for_model(model)
    if splitter is None or not splitter.active:
        return
    with mock.patch.object(bpe_boundary, "_SPLIT_MANY_MIN", numpy_from):
        assert splitter.split_many(words) == [splitter.split(w) for w in words]
        assert_bounds_are_the_parts(splitter, words)


def assert_bounds_are_the_parts(splitter: BoundarySplitter, words: list[str]) -> None:
    """bounds (the ids path's arrays) name split's parts of each word it does not leave to
    split (a word holding a crossing token), and leaves the words split_many leaves."""
    bounds = splitter.bounds(words)
    if bounds is None:
        return
    points, starts, ends, first, redo = bounds
    assert not (points == 0xFFFF).any()  # the piece table's joint: in no piece
    joined = points.tobytes().decode("utf-32-le")
    crossing = splitter._crossing
    assert redo == [k for k, w in enumerate(words) if crossing is not None and crossing.search(w)]
    for k, word in enumerate(words):
        if k not in redo:
            span = slice(first[k], first[k + 1])
            assert [joined[a:b] for a, b in zip(starts[span], ends[span])] == splitter.split(word)


def test_words_holding_a_crossing_token_are_split_alone():
    """A token with the mark inside (Gemma's ">▁</") keeps a cut whole: the words holding one
    are split by split, the others by the kinds, in split_many and in bounds alike."""
    vocab = {"<unk>": 0, "a": 1, "b": 2, ">": 3, "<": 4, "/": 5, MARK: 6}
    vocab |= {"ab": 7, MARK + "a": 8, ">" + MARK + "</": 9, MARK + "</": 10, "</": 11}
    merges = [["a", "b"], [MARK, "a"], ["<", "/"], [MARK, "</"], [">", MARK + "</"]]
    model = bpe_model(vocab, merges, unk_token="<unk>")
    tok = batchtok.Tokenizer.from_str(model_file(model))
    splitter = BoundarySplitter.for_model(tok.model)
    assert splitter._crossing is not None
    words = ["a" + MARK + "b", ">" + MARK + "</a", "ab" + MARK + "<", "x>" + MARK + "</" + MARK] * 8
    assert splitter.split_many(words) == [splitter.split(w) for w in words]
    assert splitter.bounds(words).redo == [k for k in range(len(words)) if k % 4 in (1, 3)]
    assert_bounds_are_the_parts(splitter, words)
    ours, ref = pair_from_json(model_file(model))
    want = [e.ids for e in ref.encode_batch(words, add_special_tokens=False)]
    with mock.patch.object(engine, "TABLE_MIN_CHARS", 1):
        assert ours.encode_batch_ids(words, add_special_tokens=False) == want
    assert len(ours._piece_table) > 0


@pytest.mark.parametrize("all_bytes", [False, True])
def test_splitting_many_words_at_once_cuts_every_pair_of_kinds_as_split_does(all_bytes):
    """Every word of up to three chars over a mark in a longer token, a char of longer tokens,
    a lone token and a char the vocab lacks (isolated with all 256 bytes, else unknown)."""
    vocab = {"<unk>": 0, "a": 1, "b": 2, "ab": 3, MARK: 4, MARK + "a": 5, "\u4e2d": 6}
    if all_bytes:
        vocab |= {f"<0x{b:02X}>": 7 + b for b in range(256)}
    model = bpe_model(vocab, [["a", "b"], [MARK, "a"]], unk_token="<unk>", byte_fallback=all_bytes)
    splitter = BoundarySplitter.for_model(batchtok.Tokenizer.from_str(model_file(model)).model)
    chars = [MARK, "a", "\u4e2d", "\u00e9"]
    words = [""] + ["".join(w) for n in (1, 2, 3) for w in itertools.product(chars, repeat=n)]
    assert splitter.split_many(words) == [splitter.split(w) for w in words]
    # é: isolated with all bytes, else an unknown char that a neighbour could join (the
    # byte tokens' names hold "x")
    assert splitter.split_many(["\u00e9" + MARK + "ab\u4e2d" + MARK + "\u00e9a"] * 16)[0] == (
        ["\u00e9", MARK + "ab", "\u4e2d", MARK, "\u00e9", "a"]
        if all_bytes
        else ["\u00e9", MARK + "ab", "\u4e2d", MARK + "\u00e9a"]
    )


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


# chars of one to four UTF-8 bytes, none of them in any vocabulary drawn above, so with byte
# fallback over all 256 bytes they are isolated and fall back to their bytes
RUN_CHARS = TEXT_CHARS + ["\u00e8", "\u0905", "\u4e8c", "\U0001f642", "\0"]
RUNS = st.lists(st.sampled_from(RUN_CHARS), min_size=1, max_size=14).map("".join)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=bpe_files(cut=True), words=st.lists(RUNS, min_size=1, max_size=60))
def test_a_composed_part_has_the_models_ids(data, words):
    """compose (a part all of whose chars are isolated: no merge can touch them) gives the
    model's own ids, and compose_many (numpy, for the runs the splitter makes) gives the same
    as compose on every string."""
    model = batchtok.Tokenizer.from_str(data).model
    splitter = BoundarySplitter.for_model(model)
    if splitter is None or not splitter.active:
        return
    # the parts the splitter makes, and strings it does not make (the chars of several parts
    # run together)
    for strings in ([p for w in words for p in splitter.split(w)], words):
        one = list(map(splitter.compose, strings))
        assert splitter.compose_many(strings) == composed_and_not(strings, one)
        for string, ids in zip(strings, one):
            if ids is not None:
                assert list(ids) == list(model.tokenize(string)), string


@pytest.mark.parametrize(
    ("parts", "worth"),
    [
        (["\u4e2d"] * 10 + [MARK + "ab"] * 90, True),
        (["\u4e2d"] * 4 + [MARK + "ab"] * 96, False),
        ([MARK + "a", "ab"] * 5000, False),
        (["\u4e2d\u0905", "", MARK] * 5000, True),
        ([""] * 100, False),
    ],
)
def test_composing_is_worth_it_when_runs_are_common(parts, worth):
    vocab = {"a": 0, "b": 1, "ab": 2, "\u4e2d": 3, MARK: 4, MARK + "a": 5}
    vocab |= {f"<0x{b:02X}>": 6 + b for b in range(256)}
    model = batchtok.Tokenizer.from_str(
        model_file(bpe_model(vocab, [["a", "b"], [MARK, "a"]], byte_fallback=True))
    ).model
    assert BoundarySplitter.for_model(model).worth_composing(parts) is worth


def composed_and_not(strings: list[str], ids: list) -> tuple[list, list, list]:
    """compose_many's answer from compose's: (composed strings, their ids, the others)."""
    return (
        [s for s, i in zip(strings, ids) if i is not None],
        [i for i in ids if i is not None],
        [s for s, i in zip(strings, ids) if i is None],
    )


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=bpe_files(cut=True),
    texts=st.lists(st.lists(st.sampled_from(RUN_CHARS), max_size=60).map("".join), max_size=60),
    numpy_from=st.sampled_from([1, 4, bpe_boundary._COMPOSE_MANY_MIN]),
    min_share=st.sampled_from([0.0, bpe_boundary._MIN_RUN_SHARE, 1.0]),
    split_from=st.sampled_from([1, bpe_boundary._SPLIT_MANY_MIN]),
    table_from=st.sampled_from([1, engine.TABLE_MIN_CHARS]),
)
def test_batches_of_runs_match_the_oracle(
    data, texts, numpy_from, min_share, split_from, table_from
):
    """encode_batch_ids splits a batch's texts together (split_many, in numpy from
    ``split_from`` fragments), composes its runs together (compose_many, in numpy from
    ``numpy_from`` distinct parts: a batch this small rarely has the usual number; when
    ``min_share`` of the parts may be runs) before the model merges the rest, and looks the
    parts up in the piece table (from ``table_from`` chars); the oracle encodes the same
    texts."""
    ours, ref = pair_from_json(data)
    try:
        want = [e.ids for e in ref.encode_batch(texts, add_special_tokens=False)]
    except Exception:  # noqa: BLE001 - the oracle refuses: so must batchtok
        with pytest.raises(Exception):  # noqa: B017 - whichever error it raises
            ours.encode_batch_ids(texts, add_special_tokens=False)
        return
    with (
        mock.patch.object(bpe_boundary, "_COMPOSE_MANY_MIN", numpy_from),
        mock.patch.object(bpe_boundary, "_MIN_RUN_SHARE", min_share),
        mock.patch.object(bpe_boundary, "_SPLIT_MANY_MIN", split_from),
        mock.patch.object(engine, "TABLE_MIN_CHARS", table_from),
    ):
        assert ours.encode_batch_ids(texts, add_special_tokens=False) == want


def test_runs_of_isolated_chars_are_one_part_and_a_surrogate_is_left_to_the_model():
    vocab = {"a": 0, "b": 1, "ab": 2, "\u4e2d": 3, MARK: 4, MARK + "a": 5}
    vocab |= {f"<0x{b:02X}>": 6 + b for b in range(256)}
    merges = [["a", "b"], [MARK, "a"]]
    model = batchtok.Tokenizer.from_str(
        model_file(bpe_model(vocab, merges, byte_fallback=True))
    ).model
    splitter = BoundarySplitter.for_model(model)
    word = MARK + "ab\u4e2d\u0905\u4e2d" + MARK + "a"
    assert splitter.split(word) == [MARK + "ab", "\u4e2d\u0905\u4e2d", MARK + "a"]
    # 中, then अ as its three bytes E0 A4 85, then 中
    want = (3, 6 + 0xE0, 6 + 0xA4, 6 + 0x85, 3)
    assert splitter.compose("\u4e2d\u0905\u4e2d") == want
    many = splitter.compose_many(["\u4e2d\u0905\u4e2d", MARK + "ab"] * 20)
    assert many == (["\u4e2d\u0905\u4e2d"] * 20, [want] * 20, [MARK + "ab"] * 20)
    assert splitter.compose("") is None
    assert splitter.compose_many(["", "\u4e2d"] * 20) == (["\u4e2d"] * 20, [(3,)] * 20, [""] * 20)
    lone = "\u4e2d\ud800"
    assert splitter.compose(lone) is None
    assert splitter.compose_many([lone] + ["\u4e2d"] * 40) == (["\u4e2d"] * 40, [(3,)] * 40, [lone])
    # a part holding a NUL (compose_many joins the parts with NULs)
    assert splitter.compose_many(["\0\u4e2d", "\u4e2d"] * 20)[1] == [(6, 3), (3,)] * 20
    # a char of each UTF-8 width the vocab lacks, beyond the BMP too
    chars = "\u00e8\u0905\U0001f642" + chr(0x7F)
    assert splitter.compose_many([chars] * 40)[1] == [tuple(6 + b for b in chars.encode())] * 40
    with pytest.raises(Exception):  # noqa: B017 - the model's own error for it
        model.tokenize(lone)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=bpe_files(cut=True),
    texts=st.lists(
        st.lists(st.sampled_from(RUN_CHARS + ["<s>", " zz ", "zz"]), max_size=30).map("".join),
        max_size=30,
    ),
)
def test_texts_split_together_around_added_tokens_match_the_oracle(data, texts):
    """With added tokens in the texts (a special one, and one with lstrip/rstrip whose matched
    text is not its vocab string), the fragments split together (split_many) go back to their
    places among the tokens: ids and token strings as the oracle's."""
    spec = json.loads(data)
    size = len(spec["model"]["vocab"])
    spec["added_tokens"] = [
        added_token("<s>", special=True, normalized=False, file_id=size),
        added_token(
            "zz", special=False, normalized=True, lstrip=True, rstrip=True, file_id=size + 1
        ),
    ]
    ours, ref = pair_from_json(json.dumps(spec, ensure_ascii=False))
    try:
        want = ref.encode_batch(texts, add_special_tokens=False)
    except Exception:  # noqa: BLE001 - the oracle refuses: so must batchtok
        with pytest.raises(Exception):  # noqa: B017 - whichever error it raises
            ours.encode_batch(texts, add_special_tokens=False)
        return
    with mock.patch.object(bpe_boundary, "_SPLIT_MANY_MIN", 1):
        got = ours.encode_batch(texts, add_special_tokens=False)
        assert ours.encode_batch_ids(texts, add_special_tokens=False) == [e.ids for e in want]
    assert [(e.ids, e.tokens) for e in got] == [(e.ids, e.tokens) for e in want]


def test_a_small_batch_of_a_boundary_splitter_file_never_imports_numpy():
    """A batch under the numpy thresholds (fewer than _SPLIT_MANY_MIN fragments, fewer than
    _COMPOSE_MANY_MIN missing parts) is split and composed one by one, without numpy's import
    (~0.1 s), as every small call is."""
    code = (
        "import sys, batchtok\n"
        f"tok = batchtok.Tokenizer.from_file({str(fixture_path('llama2'))!r})\n"
        "assert tok._split_many is not None and tok._compose is not None\n"
        "ids = tok.encode_batch_ids(['Hello world', 'abc \\u2581 \\u4e2d\\u0905'] * 3)\n"
        "assert ids[0] and ids[1]\n"
        "print('numpy' in sys.modules)\n"
    )
    env = {**os.environ, "BATCHTOK_LOAD_CACHE": "0"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"
