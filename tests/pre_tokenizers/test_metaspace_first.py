"""Metaspace ``prepend_scheme: "first"`` after any normalizer and any earlier pre-tokenizer.

`tokenizers` prepends the replacement to a piece only when the piece's first char is aligned
to offset 0 of the input text; batchtok computes that alignment exactly (see
``Normalizer.leading_at_origin``), and only for files with a Metaspace "first". Everything is
compared with the oracle: ids, tokens, the ids fast paths and decode both ways, on texts whose
start is the hard part (leading spaces, controls, marks, chars a normalizer deletes or
expands, added tokens at and near the start), on corpora, on the wheel and built fixtures and on
hypothesis texts.
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from tokenizers import PreTokenizedString

from batchtok import Tokenizer
from batchtok.added_vocabulary import LeadingCount
from batchtok.normalizers import Normalizer, Sequence, UnicodeForm, read_normalizer
from batchtok.normalizers.precompiled import _GRAPHEME, PrecompiledMap
from tests.support.adversarial import INTERESTING, adversarial_strings
from tests.support.caches import per_module_cache
from tests.support.corpora import sample_docs
from tests.support.fixtures import fixture_path
from tests.support.oracle import (
    added_token,
    assert_agree,
    assert_conforms,
    char_level_bpe,
    compare_text,
    pair_for,
    pair_from_json,
    with_changes,
)
from tests.support.tier import examples

R = "\u2581"


def metaspace(scheme: str = "first", split: bool = True) -> dict:
    return {"type": "Metaspace", "replacement": R, "prepend_scheme": scheme, "split": split}


def pre_sequence(*stages: dict) -> dict:
    return {"type": "Sequence", "pretokenizers": list(stages)}


def sequence(*normalizers: dict) -> dict:
    return {"type": "Sequence", "normalizers": list(normalizers)}


def replace(pattern: str, content: str, regex: bool = False) -> dict:
    return {
        "type": "Replace",
        "pattern": {"Regex" if regex else "String": pattern},
        "content": content,
    }


def strip(left: bool, right: bool) -> dict:
    return {"type": "Strip", "strip_left": left, "strip_right": right}


def bert(clean_text: bool, chinese: bool, strip_accents: bool | None, lowercase: bool) -> dict:
    return {
        "type": "BertNormalizer",
        "clean_text": clean_text,
        "handle_chinese_chars": chinese,
        "strip_accents": strip_accents,
        "lowercase": lowercase,
    }


@per_module_cache
def fixture(name: str) -> dict:
    return json.loads(fixture_path(name).read_text(encoding="utf-8"))


@per_module_cache
def precompiled() -> dict:
    """The real SentencePiece charsmap (nmt_nfkc) of the T5 fixture."""
    stages = fixture("t5-unigram-bytefallback")["normalizer"]["normalizers"]
    return next(n for n in stages if n["type"] == "Precompiled")


def normalizer_configs() -> dict[str, dict | None]:
    return {
        "none": None,
        "NFC": {"type": "NFC"},
        "NFD": {"type": "NFD"},
        "NFKC": {"type": "NFKC"},
        "NFKD": {"type": "NFKD"},
        "Lowercase": {"type": "Lowercase"},
        "StripAccents": {"type": "StripAccents"},
        "Nmt": {"type": "Nmt"},
        "ByteLevel": {"type": "ByteLevel"},
        "Strip-left": strip(True, False),
        "Strip-both": strip(True, True),
        "Strip-right": strip(False, True),
        "Replace-space-deleted": replace(" ", ""),
        "Replace-two-chars": replace("ab", "X"),
        "Replace-one-to-two": replace("a", "XY"),
        "Replace-regex-spaces": replace(" {2,}", R, regex=True),
        "Replace-regex-marks": replace(r"\p{Mn}+", "", regex=True),
        "Prepend": {"type": "Prepend", "prepend": R},
        "Prepend-two": {"type": "Prepend", "prepend": "@@"},
        "Bert-all": bert(True, True, None, True),
        "Bert-clean-chinese": bert(True, True, False, False),
        "Precompiled": precompiled(),
        "t5": fixture("t5-unigram-bytefallback")["normalizer"],
        "strip-precompiled": sequence(strip(True, True), precompiled()),
        "nfd-stripaccents-lower": sequence({"type": "NFD"}, {"type": "StripAccents"}),
        "strip-prepend": sequence(strip(True, False), {"type": "Prepend", "prepend": R}),
        "replace-nfkc": sequence(replace(" ", ""), {"type": "NFKC"}),
        "nmt-nfkd-lower": sequence({"type": "Nmt"}, {"type": "NFKD"}, {"type": "Lowercase"}),
        "llama2-layout": sequence({"type": "Prepend", "prepend": R}, replace(" ", R)),
        "strip-bert": sequence(strip(True, False), bert(False, True, False, False)),
    }


PRE_TOKENIZERS = {
    "split": metaspace(split=True),
    "nosplit": metaspace(split=False),
    "digits-then": pre_sequence(
        {"type": "Digits", "individual_digits": True}, metaspace(split=False)
    ),
    "whitespace-split-then": pre_sequence({"type": "WhitespaceSplit"}, metaspace()),
    "punctuation-then": pre_sequence({"type": "Punctuation", "behavior": "Isolated"}, metaspace()),
    "split-regex-then": pre_sequence(
        {"type": "Split", "pattern": {"Regex": r"\p{M}"}, "behavior": "Isolated", "invert": False},
        metaspace(split=False),
    ),
    "split-removed-then": pre_sequence(
        {"type": "Split", "pattern": {"String": "a"}, "behavior": "Removed", "invert": False},
        metaspace(),
    ),
    "scripts-then": pre_sequence({"type": "UnicodeScripts"}, metaspace()),
    "fixed-then": pre_sequence({"type": "FixedLength", "length": 1}, metaspace(split=False)),
    "bert-then": pre_sequence({"type": "BertPreTokenizer"}, metaspace()),
    "bytelevel-then": pre_sequence(
        {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False, "use_regex": True},
        metaspace(),
    ),
    "always-then-first": pre_sequence(metaspace("always"), metaspace()),
    "first-then-digits": pre_sequence(metaspace(), {"type": "Digits", "individual_digits": True}),
    "nested": pre_sequence(
        {"type": "Digits", "individual_digits": False}, pre_sequence(metaspace(split=False))
    ),
}

ADDED = {
    "none": [],
    "raw": [
        added_token("<s>", special=True, normalized=False),
        added_token("<l>", special=False, normalized=False, lstrip=True, rstrip=True),
    ],
    "normalized": [
        added_token("e", special=False, normalized=True),
        added_token("ab", special=False, normalized=True, single_word=True),
        added_token("<n>", special=True, normalized=True, lstrip=True),
    ],
}

# Starts that move, delete, expand or reorder the first char under some normalizer.
PREFIXES = [
    "",
    " ",
    "   ",
    "\t",
    "\u3000",
    "\x01",
    "\u200b",
    "\ufeff",
    "\u0301",
    "\u0301\u0323",
    "\u0323\u0301",
    "e\u0301",
    "\u00e9",
    "\u0130",
    "\ufb01",
    "\u4e2d",
    "  \u4e2d",
    "ab",
    "a",
    "  ab",
    "\r\n",
    "\U0001f600",
    "\u1100\u1161\u11a8",
    "\u0f73",
    "\u0344\u0323",  # NFD reorders the second half of U+0344 behind U+0323
    "\u2581",
    " \u2581",
    "1",
    "<s>",
    " <s>",
    "<l>",
    "  <l>",
    "<n>",
    " <n>",
    "\u00e9e",
    "e",
]
BODIES = ["", "hello world", " x y", "ab cd1", "\u00e9t\u00e9 \u0301x", "<s>a"]
TEXTS = [p + b for p in PREFIXES for b in BODIES]

DECODER = {
    "type": "Sequence",
    "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}, metaspace()],
}


def tokenizer_json(normalizer: dict | None, pre_tokenizer: dict, added: list[dict]) -> str:
    """A char-level BPE with byte fallback (every text has ids) with the given components."""
    return with_changes(
        char_level_bpe(),
        normalizer=normalizer,
        pre_tokenizer=pre_tokenizer,
        decoder=DECODER,
        added_tokens=[dict(a, id=5000 + i) for i, a in enumerate(added)],
    )


def pair(normalizer: str, pre: str = "split", added: str = "none"):
    text = tokenizer_json(normalizer_configs()[normalizer], PRE_TOKENIZERS[pre], ADDED[added])
    return pair_from_json(text)


@pytest.mark.parametrize("added", list(ADDED))
@pytest.mark.parametrize("normalizer", list(normalizer_configs()))
def test_each_normalizer(normalizer, added):
    for pre in ("split", "nosplit"):
        assert_agree(pair(normalizer, pre, added), TEXTS)


@pytest.mark.parametrize("pre", [p for p in PRE_TOKENIZERS if p not in ("split", "nosplit")])
@pytest.mark.parametrize("normalizer", ["none", "NFD", "strip-precompiled", "Replace-two-chars"])
def test_metaspace_first_after_other_pre_tokenizers(pre, normalizer):
    for added in ("none", "normalized"):
        assert_agree(pair(normalizer, pre, added), TEXTS)


FIXTURES = (
    "t5-unigram-bytefallback",
    "spm-unigram-bytefallback",
    "ks-unigram-metaspace-first-split",
    "ks-unigram-metaspace-first-nosplit",
)


@pytest.mark.parametrize("name", FIXTURES)
def test_fixtures(name):
    """Ids with and without special tokens, and decode both ways. (Tokens are compared on the
    synthetic files above: for an unknown piece, the oracle's Unigram shows the piece's own
    text as the token where batchtok shows the unk token, a difference outside Metaspace.)"""
    ours, ref = pair_for(name)
    assert "Metaspace" in ours.describe()
    docs = [*sample_docs("english", 15), *sample_docs("code", 10), *sample_docs("multilingual", 25)]
    starts = ["", " ", "  ", "\u200b", "\x01", "\u0301", "\ufb01", "\t", "\u3000"]
    docs += [start + doc[:200] for start in starts for doc in docs[::5]]
    assert_conforms(ours, ref, [*docs, *adversarial_strings(400), *TEXTS])


def test_the_nosplit_fixture_loads():
    """Metaspace "first" after Digits was refused before; it now loads in both engines."""
    text = fixture_path("ks-unigram-metaspace-first-nosplit").read_text(encoding="utf-8")
    assert Tokenizer.from_str(text).encode("12 ab").ids


# The text's first characters: the prefixes above and the shared pieces.
STARTS = [p for p in PREFIXES if p] + INTERESTING
PAIRS = [(n, p, a) for n in normalizer_configs() for p in ("split", "nosplit") for a in ADDED]
PAIRS += [(n, p, "none") for n in ("none", "t5") for p in PRE_TOKENIZERS]


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    config=st.sampled_from(PAIRS),
    start=st.lists(st.sampled_from(STARTS), max_size=3).map("".join),
    rest=st.text(max_size=12),
)
def test_hypothesis(config, start, rest):
    problems = compare_text(pair(*config), start + rest)
    assert not problems, problems


# -- the pieces, checked on their own ----------------------------------------------------------

MARKED = [
    "e\u0301\u0323x",
    "\u0301\u0323\u0345a",
    "\u0f73\u0f71\u0f72",
    "\u1100\u1161\u11a8\uac00\u11a8",
    "\u00c5\u212b\ufb01\u2126",
    "a\u0315\u0300\u05ae\u0300b",
    "\u07fd\u0301e",
    "\u0344\u0323",
]


@pytest.mark.parametrize("form", ["NFC", "NFD", "NFKC", "NFKD"])
def test_crate_emulation_spells_the_normalized_text(form):
    """The emulated (char, change) stream spells exactly what the fast path returns."""
    unicode_form = UnicodeForm(form)
    texts = [*MARKED, *adversarial_strings(200), *sample_docs("multilingual", 20, 300)]
    for text in texts:
        spelled = "".join(ch for ch, _ in unicode_form.changes(text))
        assert spelled == unicode_form.normalize(text), text


def test_precompiled_changes_one_per_output_char():
    normalizer = read_normalizer(precompiled(), "normalizer")
    for text in [*MARKED, *adversarial_strings(200), "\u200ba", "a\u200b\u200bb"]:
        assert len(list(normalizer.map.changes(text))) == len(normalizer.normalize(text)), text


def test_windowed_graphemes_match_whole_text_segmentation():
    """Clusters found window by window are the clusters of the whole text, also where flags,
    emoji sequences, Hangul syllables, marks and CRLF straddle a window's end."""
    units = ["\U0001f1e6\U0001f1e7", "\U0001f1e8", "\U0001f469\u200d\U0001f52c", "\r\n"]
    units += ["\u1100\u1161\u11a8", "e\u0301\u0323", "x", " ", "\u0915\u094d\u0937"]
    for seed in range(40):
        text = "".join(units[(seed * 7 + i * i) % len(units)] for i in range(seed * 9))
        for shift in range(3):
            shifted = "a" * shift + text
            assert list(PrecompiledMap._graphemes(shifted)) == _GRAPHEME.findall(shifted)


@pytest.mark.parametrize(
    ("config", "text", "count"),
    [
        (replace("ab", "X"), "abc", 0),  # content aligned to the match's last char
        (replace("a", "XY"), "abc", 2),
        (replace(" ", ""), "  x", 0),
        (strip(True, False), "  x", 0),
        ({"type": "NFD"}, "\u00e9x", 2),  # both chars of the decomposition
        ({"type": "NFC"}, "e\u0301x", 1),
        (precompiled(), "\u200bab", 1),  # a deleted first char leaves its alignment behind
        ({"type": "Prepend", "prepend": "@@"}, "x", 3),
        (sequence(strip(True, False), {"type": "Prepend", "prepend": R}), " x", 0),
    ],
)
def test_leading_at_origin_examples(config, text, count):
    """A few counts worked out from `tokenizers`' alignment rules; the oracle tests above
    check the same rules end to end."""
    assert read_normalizer(config, "normalizer").leading_at_origin(text, 1) == count


def test_other_files_never_compute_the_alignment(monkeypatch):
    """Only Metaspace "first" asks; an always-prepending file never pays for the exact path."""

    def refuse(self, text, count):
        raise AssertionError("leading_at_origin called")

    monkeypatch.setattr(Normalizer, "leading_at_origin", refuse)
    monkeypatch.setattr(Sequence, "leading_from_stages", refuse)
    for cls in Normalizer.__subclasses__():
        monkeypatch.setattr(cls, "leading_at_origin", refuse, raising=False)
    text = tokenizer_json(normalizer_configs()["t5"], metaspace("always"), ADDED["normalized"])
    ours = Tokenizer.from_str(text)
    assert ours.encode("  e\u0301 ab <n> x").ids
    assert ours.encode_ids(" a")


def test_sub_fragment_after_a_normalized_token_keeps_its_count():
    ours, _ = pair("NFD", "split", "normalized")
    fragments = ours.added_vocabulary.split("\u00e9x", ours.normalizer, False)
    # NFD gives "e" + U+0301; the normalized added token "e" leaves U+0301 at offset 1, whose
    # alignment is still offset 0 of the text
    assert [f for f, _, _ in fragments] == ["e", "\u0301x"]
    counts = [c for _, _, c in fragments]
    assert all(isinstance(c, LeadingCount) for c in counts)
    assert [c.__index__() for c in counts] == [2, 1]


@pytest.mark.parametrize("pre", [p for p in PRE_TOKENIZERS if p not in ("split", "nosplit")])
def test_stage_pieces_are_the_oracle_steps(pre):
    """``Sequence.stage_pieces`` (what ``batchtok explain`` shows): the pieces after each
    pre-tokenizer in turn are what the oracle's ``pre_tokenizer[i].pre_tokenize`` leaves on
    one PreTokenizedString, the Metaspace "first" count carried as in encode."""
    ours, ref = pair("none", pre)
    theirs = [ref.pre_tokenizer[i] for i in range(len(ours.pre_tokenizer.pretokenizers))]
    for text in TEXTS:
        if not text:
            continue
        ((fragment, _, at_start),) = ours.added_vocabulary.split(text, None, False)
        stages = ours.pre_tokenizer.stage_pieces([fragment], at_start)
        pts = PreTokenizedString(text)
        for ours_pieces, stage in zip(stages, theirs, strict=True):
            stage.pre_tokenize(pts)
            assert ours_pieces == [s for s, _, _ in pts.get_splits()], (text, stage)
        assert stages[-1] == ours.pre_tokenizer.pre_tokenize([fragment], at_start)
