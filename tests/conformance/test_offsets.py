"""Offsets, word ids and the Encoding's position methods equal the oracle's, on every fixture
file: arbitrary text (hypothesis), the corpus one text at a time and as a batch, pairs,
pre-tokenized words, truncation with a stride and its overflowing windows, padding, added tokens
with lstrip/rstrip/normalized; and they are computed only when read."""

from __future__ import annotations

import json
import weakref
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import batchtok
from batchtok import alignment
from batchtok.utils.byte_level import byte_level_map
from tests.support.adversarial import INTERESTING
from tests.support.corpora import corpus_kinds, sample_docs
from tests.support.oracle import (
    ALL_FILES,
    REAL_FILES,
    added_token,
    byte_level_base,
    corpus_lines,
    outcome,
    pair_for,
    pair_from_json,
    tokenizer_json,
)
from tests.support.tier import count, examples, spread

FIELDS = (
    "ids",
    "tokens",
    "offsets",
    "word_ids",
    "sequence_ids",
    "type_ids",
    "special_tokens_mask",
    "attention_mask",
)

text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(INTERESTING)), max_size=12).map(
    "".join
)


def view(e) -> dict:
    out = {f: getattr(e, f) for f in FIELDS}
    out["overflowing"] = [view(o) for o in e.overflowing]
    return out


def assert_same(ours, ref, *args, **kwargs) -> None:
    """encode(*args, **kwargs) gives the same Encoding (every field, the overflowing windows
    included) in both, or fails in both."""
    want = outcome(lambda: view(ref.encode(*args, **kwargs)))
    got = outcome(lambda: view(ours.encode(*args, **kwargs)))
    assert got[0] == want[0], (args, kwargs, got, want)
    if want[0] == "ok":
        for field in (*FIELDS, "overflowing"):
            assert got[1][field] == want[1][field], (field, args, kwargs)


def _property(name: str):
    @settings(
        max_examples=examples(300, fast=25),  # one such property per fixture file
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    @given(text, st.none() | text, st.booleans())
    def test(s, pair, add):
        ours, ref = pair_for(name)
        assert_same(ours, ref, s, pair, add_special_tokens=add)

    test.__name__ = f"test_offsets_of_arbitrary_text_{name.replace('-', '_')}"
    return test


for _name in ALL_FILES:
    globals()[f"test_offsets_of_arbitrary_text_{_name.replace('-', '_')}"] = _property(_name)


def _texts() -> list[str]:
    return spread(corpus_lines(), 60) + spread(INTERESTING, 60)


@pytest.mark.parametrize("name", REAL_FILES)
def test_real_documents(name):
    """English, code and multilingual documents (whole, up to 2,000 chars) of every kind."""
    ours, ref = pair_for(name)
    for kind in corpus_kinds():
        docs = sample_docs(kind, count(200, 6), seed=11)
        want = [view(e) for e in ref.encode_batch(docs)]
        got = [view(e) for e in ours.encode_batch(docs)]
        for doc, a, b in zip(docs, got, want):
            assert a == b, (kind, doc[:80])


@pytest.mark.parametrize("name", ALL_FILES)
def test_the_corpus_one_text_at_a_time_and_as_a_batch(name):
    ours, ref = pair_for(name)
    texts = _texts()
    for t in texts:
        assert_same(ours, ref, t)
    pairs = list(zip(texts, reversed(texts)))
    for inputs in (texts, pairs):
        want = outcome(lambda inputs=inputs: [view(e) for e in ref.encode_batch(inputs)])
        got = outcome(lambda inputs=inputs: [view(e) for e in ours.encode_batch(inputs)])
        assert got == want if want[0] == "ok" else got[0] == want[0]


@pytest.mark.parametrize("name", ALL_FILES)
def test_pre_tokenized_words(name):
    ours, ref = pair_for(name)
    for t in _texts()[:40]:
        words = t.split(" ")
        assert_same(ours, ref, words, is_pretokenized=True)
        assert_same(ours, ref, words, words[::-1], is_pretokenized=True)


@pytest.mark.parametrize("name", REAL_FILES)
@pytest.mark.parametrize(
    "truncation",
    [
        {"max_length": 9, "stride": 3, "strategy": "longest_first", "direction": "right"},
        {"max_length": 7, "stride": 2, "strategy": "only_first", "direction": "left"},
    ],
)
def test_truncation_windows_and_padding(name, truncation):
    ours, ref = pair_from_json(tokenizer_json(name))
    for tok in (ours, ref):
        tok.enable_truncation(**truncation)
        tok.enable_padding(direction="left", pad_id=0, pad_token="<pad>", length=None)
    texts = _texts()[:30]
    for t in texts:
        assert_same(ours, ref, t)
        assert_same(ours, ref, t, "and a second sequence here")
    want = [view(e) for e in ref.encode_batch(texts)]
    assert [view(e) for e in ours.encode_batch(texts)] == want


def _with_added(tokens: list[dict]) -> tuple[batchtok.Tokenizer, object]:
    base = byte_level_base()
    data = dict(base)
    first = max(base["model"]["vocab"].values()) + 1
    data["added_tokens"] = [dict(t, id=first + i) for i, t in enumerate(tokens)]
    return pair_from_json(json.dumps(data, ensure_ascii=False))


ADDED_TEXTS = [
    "Hello <tag> world",
    "Hello   <tag>   world",
    "<tag><tag> x <tag>",
    " <tag>",
    "a [mask]  b [MASK] c",
    "the word is spécial and special",
    "x\u00a0<tag>\u3000y",
]


@pytest.mark.parametrize("lstrip", [False, True])
@pytest.mark.parametrize("rstrip", [False, True])
@pytest.mark.parametrize("normalized", [False, True])
@pytest.mark.parametrize("special", [False, True])
def test_added_tokens_with_lstrip_rstrip_normalized(lstrip, rstrip, normalized, special):
    flags = {"lstrip": lstrip, "rstrip": rstrip, "normalized": normalized, "special": special}
    ours, ref = _with_added(
        [
            added_token("<tag>", **flags),
            added_token("[MASK]", **flags),
            added_token("special", single_word=True, **flags),
        ]
    )
    for t in ADDED_TEXTS:
        for add in (True, False):
            assert_same(ours, ref, t, add_special_tokens=add)
        assert_same(ours, ref, t, t, add_special_tokens=True)


@pytest.mark.parametrize("name", ALL_FILES)
def test_the_position_methods(name):
    ours, ref = pair_for(name)
    for t in _texts()[:25]:
        pair = t[::-1]
        want = outcome(lambda t=t, pair=pair: ref.encode(t, pair))
        if want[0] != "ok":
            continue
        a, b = ours.encode(t, pair), want[1]
        n = len(b.ids)
        for i in range(n + 2):
            assert a.token_to_sequence(i) == b.token_to_sequence(i), (t, i)
            assert a.token_to_chars(i) == b.token_to_chars(i), (t, i)
            assert a.token_to_word(i) == b.token_to_word(i), (t, i)
        for seq in (0, 1):
            for pos in range(max(len(t), len(pair)) + 2):
                assert a.char_to_token(pos, seq) == b.char_to_token(pos, seq), (t, pos, seq)
                assert a.char_to_word(pos, seq) == b.char_to_word(pos, seq), (t, pos, seq)
            words = max((w for w in b.word_ids if w is not None), default=0)
            for w in range(words + 3):
                assert a.word_to_tokens(w, seq) == b.word_to_tokens(w, seq), (t, w, seq)
                assert a.word_to_chars(w, seq) == b.word_to_chars(w, seq), (t, w, seq)


def test_encoding_pad_truncate_and_merge_as_the_librarys():
    ours, ref = pair_for("llama3")
    texts = ["Hello world, it's a test", "  spaced   out  ", "日本語のテキスト 🙂"]
    for t in texts:
        for kwargs in (
            {"direction": "left", "pad_id": 3, "pad_type_id": 1, "pad_token": "<p>"},
            {},
        ):
            a, b = ours.encode(t), ref.encode(t)
            a.pad(20, **kwargs)
            b.pad(20, **kwargs)
            assert view(a) == view(b)
        for max_length, stride, direction in ((4, 1, "right"), (3, 0, "left"), (0, 0, "right")):
            a, b = ours.encode(t, "pair text"), ref.encode(t, "pair text")
            a.truncate(max_length, stride=stride, direction=direction)
            b.truncate(max_length, stride=stride, direction=direction)
            assert view(a) == view(b)
    for growing in (True, False):
        mine = [ours.encode(t) for t in texts]
        theirs = [ref.encode(t) for t in texts]
        before = [view(e) for e in mine]
        merged = batchtok.Encoding.merge(mine, growing_offsets=growing)
        assert view(merged) == view(type(theirs[0]).merge(theirs, growing_offsets=growing))
        assert [view(e) for e in mine] == before  # the inputs are left as they were
    with pytest.raises(ValueError):
        ours.encode("x").truncate(1, direction="middle")
    with pytest.raises(ValueError):
        ours.encode("x").pad(4, direction="middle")


def test_words_is_word_ids_with_the_librarys_warning():
    ours, ref = pair_for("llama3")
    with pytest.warns(DeprecationWarning):
        words = ours.encode("Hello there").words
    with pytest.warns(DeprecationWarning):
        assert words == ref.encode("Hello there").words


def test_offsets_are_computed_only_when_read(monkeypatch):
    ours, _ = pair_for("llama3")
    calls = []
    original = alignment.sequence

    def counted(*args):
        calls.append(args[1])
        return original(*args)

    monkeypatch.setattr(alignment, "sequence", counted)
    texts = [f"text number {i}, distinct" for i in range(50)]
    encodings = ours.encode_batch(texts)
    ours.encode_batch_ids(texts)
    for e in encodings:
        assert e.ids and e.tokens and e.type_ids and e.attention_mask  # read, not offsets
    assert calls == []
    assert len(encodings[7].offsets) == len(encodings[7].ids)
    assert len(encodings[7].word_ids) == len(encodings[7].ids)
    assert calls == [texts[7]]  # one walk for both, for that encoding only
    single = ours.encode("a text and", "its pair")
    assert calls == [texts[7]]
    assert single.word_ids[1] is not None
    assert calls == [texts[7], "a text and", "its pair"]


def test_a_walk_that_disagrees_with_encode_is_reported_not_returned(monkeypatch):
    ours, _ = pair_for("llama3")
    encoding = ours.encode("Hello world")
    monkeypatch.setattr(alignment, "OFFSETS_CACHES", weakref.WeakKeyDictionary())
    monkeypatch.setattr(
        type(ours.model), "token_offsets", lambda self, word, *_: [(0, 0, len(word.encode()))]
    )
    with pytest.raises(alignment.AlignmentMismatch, match="batchtok bug"):
        assert encoding.offsets is None  # never reached


@pytest.mark.parametrize(
    "call",
    [
        lambda e: e.char_to_token(-1),
        lambda e: e.char_to_token(1, -1),
        lambda e: e.char_to_word(-1),
        lambda e: e.token_to_chars(-1),
        lambda e: e.token_to_word(-1),
        lambda e: e.token_to_sequence(-2),
        lambda e: e.word_to_tokens(-1),
        lambda e: e.word_to_chars(-1),
        lambda e: e.word_to_tokens(0, 3),
        lambda e: e.char_to_token(1, 5),
    ],
)
def test_position_methods_refuse_negative_indices_as_the_library(call):
    ours, ref = pair_for("llama3")
    assert outcome(lambda: call(ours.encode("hi there"))) == outcome(
        lambda: call(ref.encode("hi there"))
    )


def _variant(name: str, **changes) -> tuple[batchtok.Tokenizer, object]:
    data = json.loads(tokenizer_json(name)) if name != "base" else dict(byte_level_base())
    data.update(changes)
    return pair_from_json(json.dumps(data, ensure_ascii=False))


def _byte_level(trim: bool, prefix: bool) -> dict:
    return {
        "type": "ByteLevel",
        "add_prefix_space": prefix,
        "trim_offsets": trim,
        "use_regex": True,
    }


TRIM_VARIANTS = {
    # the real file's own post-processor has trim_offsets false: here true, both prefix ways
    "llama3-trim": ("llama3", {"post_processor": _byte_level(True, True)}),
    "llama3-trim-noprefix": ("llama3", {"post_processor": _byte_level(True, False)}),
    # a pre-tokenizer that adds the prefix space the trim then keeps
    "base-prefix-trim": (
        "base",
        {"pre_tokenizer": _byte_level(True, True), "post_processor": _byte_level(True, True)},
    ),
    "base-roberta-trim": (
        "base",
        {
            "pre_tokenizer": _byte_level(True, True),
            "post_processor": {
                "type": "RobertaProcessing",
                "sep": ["</s>", 1],
                "cls": ["<s>", 0],
                "trim_offsets": True,
                "add_prefix_space": True,
            },
        },
    ),
}


@pytest.mark.parametrize("variant", sorted(TRIM_VARIANTS))
def test_trim_offsets_of_byte_level_and_roberta(variant):
    name, changes = TRIM_VARIANTS[variant]
    ours, ref = _variant(name, **changes)
    texts = _texts()[:40] + ["  two leading", "trailing  ", " \t\n mixed \u3000 spaces  "]

    @settings(max_examples=examples(300, fast=25), deadline=None, database=None)
    @given(text, st.none() | text)
    def arbitrary(s, pair):
        assert_same(ours, ref, s, pair)

    for t in texts:
        assert_same(ours, ref, t)
        assert_same(ours, ref, t, t[::-1])
        assert_same(ours, ref, t.split(" "), is_pretokenized=True)
    arbitrary()


SEQUENCE_OF_CUTS = {
    "type": "Sequence",
    "pretokenizers": [
        {"type": "Digits", "individual_digits": True},
        {"type": "Punctuation", "behavior": "MergedWithNext"},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    ],
}


@pytest.mark.parametrize("name", [*REAL_FILES[:4], "base", "base-cuts"])
def test_byte_level_spans_are_the_aligned_split(name):
    """The shortcut byte-level files take (pieces cut, then their bytes shown as chars, no char
    tracked) gives the pieces, and the alignments, that the char-by-char walk gives."""
    if name == "base-cuts":
        ours, ref = _variant("base", pre_tokenizer=SEQUENCE_OF_CUTS)
        for t in _texts():
            assert_same(ours, ref, t)
    else:
        ours = _variant(name)[0] if name == "base" else pair_for(name)[0]
    pre = ours.pre_tokenizer

    @settings(max_examples=examples(1000, fast=100), deadline=None, database=None)
    @given(text, st.integers(0, 12))
    def same(s, start):
        spans = pre.byte_level_spans(s)
        if spans is None:
            return
        walked = pre.split_aligned(alignment.Aligned.of(s, start))
        assert [p.text for p in walked if p.text] == [
            byte_level_map(s[a:b]) for a, b in spans if b > a
        ]
        at = alignment.char_starts(s)
        for p, (a, b) in zip([p for p in walked if p.text], [x for x in spans if x[1] > x[0]]):
            expected = [
                (start + at[i], start + at[i + 1])
                for i in range(a, b)
                for _ in range(at[i + 1] - at[i])
            ]
            assert p.align == expected

    assert pre.byte_level_spans("a b") is not None  # these files take the shortcut
    same()


def test_threads_reading_the_same_encodings_offsets_agree():
    """Encodings shared between threads (a thread pool over one batch's results) give each
    reader the same offsets, computed once or more but never half."""
    ours, ref = pair_for("llama3")
    texts = _texts()[:40]
    encodings = ours.encode_batch(texts)
    want = [e.offsets for e in ref.encode_batch(texts)]
    with ThreadPoolExecutor(4) as pool:
        for _ in range(3):
            got = list(pool.map(lambda e: e.offsets, encodings + encodings[::-1]))
            assert got == want + want[::-1]
