"""The Precompiled normalizer against the oracle, with real SentencePiece charsmaps.

Charsmaps come from tiny models trained at test time with each built-in normalization rule
(``sentencepiece`` is a test-only dependency). batchtok's ``normalize`` is compared with the
oracle's ``normalize_str`` on corpora, adversarial text, every code point and hypothesis
text, and whole tokenizer.json files compare ids, tokens and decode. The grapheme-cluster
stand-in table is regenerated from the oracle (on a sample of code points in the default tier)
and compared.
"""

from __future__ import annotations

import base64
import struct

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from batchtok._tables import grapheme as _grapheme_tables
from batchtok.normalizers import read_normalizer
from batchtok.utils.spec import collect_ignored
from tests.support import tier
from tests.support.adversarial import adversarial_strings
from tests.support.caches import per_module_cache
from tests.support.corpora import multilingual_docs, sample_docs
from tests.support.oracle import assert_agree, byte_level_base, pair_from_json, with_changes
from tests.support.tier import examples
from tools.gen_onig_tables import _all_chars

pytest.importorskip("sentencepiece")
from tools import gen_grapheme_tables as gen  # noqa: E402

RULES = ["nmt_nfkc", "nfkc", "nmt_nfkc_cf", "nfkc_cf"]

GRAPHEMES = [
    "e\u0301\u0302 a\u0308 n\u0303 \r\n x\r\ny \u1100\u1161\u11a8 \uac00\u11a8 \u0915\u094d\u0937",
    "👩‍👩‍👧 🇫🇷🇩🇪🇦 ✔️ ❤️ 👍🏽 #️⃣ 🏴\U000e0067\U000e0062\U000e0065\U000e006e\U000e0067\U000e007f",
    "ﬁ ﬀ ① ² ½ Ⅻ ㍻ ｶﾞ ﾟ ᄀ\u1161 \u0600a \u05c8a a\u05c8 \u00a9\u200d\U0001f7da",
    "\u0301start \u200d\u200d x\u0345\u0345 \u0e01\u0e33 \u0b95\u0bcd\u0bb7 ゙か゚",
]


@per_module_cache
def charsmap(rule: str) -> str:
    return base64.b64encode(gen.spm_charsmap(rule_name=rule)).decode()


def precompiled(rule: str) -> dict:
    return {"type": "Precompiled", "precompiled_charsmap": charsmap(rule)}


@per_module_cache
def pair(rule: str):
    config = precompiled(rule)
    return read_normalizer(config, "normalizer"), tokenizers.normalizers.Precompiled(
        base64.b64decode(charsmap(rule))
    )


@per_module_cache
def docs() -> list[str]:
    every_language = [d[:3000] for texts in multilingual_docs().values() for d in texts[:12]]
    return (
        GRAPHEMES
        + adversarial_strings(max_chars=3000)
        + every_language
        + sample_docs("english", 20, max_chars=3000)
    )


@pytest.mark.parametrize("rule", RULES)
def test_normalize_matches_the_oracle(rule):
    ours, theirs = pair(rule)
    bad = [d for d in docs() + [_all_chars()] if ours.normalize(d) != theirs.normalize_str(d)]
    assert not bad, f"{len(bad)} texts differ; first: {bad[0][:80]!r}"


@pytest.mark.parametrize("rule", ["nmt_nfkc", "nfkc_cf"])
def test_whole_tokenizer_matches_the_oracle(rule):
    tokenizer = pair_from_json(with_changes(byte_level_base(), normalizer=precompiled(rule)))
    assert_agree(tokenizer, GRAPHEMES + adversarial_strings(max_chars=400)[:150])


def test_in_a_sequence_with_spaces_and_metaspace_lineage():
    """The normalizer chain of converted T5/ALBERT files: Precompiled then Replace spaces."""
    config = {
        "type": "Sequence",
        "normalizers": [
            precompiled("nmt_nfkc"),
            {"type": "Replace", "pattern": {"Regex": " {2,}"}, "content": " "},
        ],
    }
    assert_agree(pair_from_json(with_changes(byte_level_base(), normalizer=config)), GRAPHEMES)


WIDE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
PIECES = st.lists(st.sampled_from(list("".join(GRAPHEMES))), max_size=24).map("".join)


# Chars around the places where graphemes matter: keys (য় ঢ় ਸ਼ ﬁ ①), chars that go on longer
# keys (Latin and Devanagari letters, then combining marks, nukta, Bengali length marks),
# joiners, regional indicators, emoji, CR LF, Hangul jamo and beyond-BMP marks.
NEAR_KEYS = st.lists(
    st.sampled_from(
        list("য়ঢ়ড়ਸ਼ﬁ①ｶﾞ়াৗেোৈaeAEनर\u0301\u0308\u0327\u093c\u094d\u200d\u200c\r\n ")
        + list("\u09df\u09dc\u09dd\u0a36\u0958")
        + ["🇫", "🇷", "👩", "ᄀ", "ᅡ", "𑂰", "𝅥"]
    ),
    max_size=24,
).map("".join)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=WIDE | PIECES | NEAR_KEYS, rule=st.sampled_from(RULES))
def test_hypothesis(text, rule):
    ours, theirs = pair(rule)
    assert ours.normalize(text) == theirs.normalize_str(text)


# Indic conjuncts (UAX #29 GB9c: consonant, [extend or linker]*, a linker, [extend or
# linker]* x consonant): consonants of several scripts (ড় ঢ় য় क़ are charsmap keys, so a
# cluster they start of under 6 bytes is replaced whole and drops what follows them, which
# shows where the oracle's clusters begin), linkers (viramas), InCB=Extend chars (nukta, a
# combining grave, ZWJ), a vowel letter and Latin (no consonant), a Prepend char, a mark.
CONJUNCTS = st.lists(
    st.sampled_from(
        list("\u0915\u0937\u09a4\u09dc\u09dd\u09df\u0958\u0b15\u0d15")
        + list("\u094d\u09cd\u0b4d\u0d4d")
        + list("\u093c\u09bc\u0300\u200d\u200c")
        + list("\u0905a \u0d4e\u093e")
    ),
    max_size=12,
).map("".join)


@pytest.mark.parametrize(
    "before",
    ["", "a", " ", "\u0300", "\u0905", "\u0915", "\u0915\u093c", "\u0915\u200d", "\u09dc"],
)
@pytest.mark.parametrize("links", ["\u094d", "\u09cd\u094d", "\u094d\u200d", "\u200d\u094d"])
def test_a_conjunct_needs_a_consonant_before_its_linker(before, links):
    """The case the full tier found: regex joins a virama to the consonant after it even with
    no consonant before the virama; the oracle (UAX #29 GB9c) breaks there, so "ড়" + a grave
    starts a cluster of 5 bytes that the charsmap replaces whole (the grave is dropped)."""
    ours, theirs = pair("nmt_nfkc")
    text = before + links + "\u09dc\u0300"
    assert ours.normalize(text) == theirs.normalize_str(text)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=CONJUNCTS, rule=st.sampled_from(RULES))
def test_conjunct_clusters_match_the_oracle(text, rule):
    ours, theirs = pair(rule)
    assert ours.normalize(text) == theirs.normalize_str(text)


@per_module_cache
def conjunct_tokenizer():
    return pair_from_json(with_changes(byte_level_base(), normalizer=precompiled("nmt_nfkc")))


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(texts=st.lists(CONJUNCTS, min_size=1, max_size=4))
def test_conjunct_clusters_align_as_the_oracle_does(texts):
    """Offsets come from the clusters too (Precompiled.changes)."""
    assert_agree(conjunct_tokenizer(), texts)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(WIDE | PIECES | NEAR_KEYS, max_size=6), rule=st.sampled_from(RULES))
def test_graphemes_are_read_only_around_keys(parts, rule):
    """Reading graphemes only in the stretches around a key gives what reading the whole text
    by graphemes gives, and what the oracle gives."""
    ours, theirs = pair(rule)
    text = "".join(parts)
    assert ours.normalize(text) == ours.map._by_graphemes(text) == theirs.normalize_str(text)


@pytest.mark.parametrize("rule", ["nmt_nfkc", "nfkc"])
def test_a_leading_control(rule):
    """nmt_nfkc deletes controls, so a fragment's first char may vanish; nfkc keeps them."""
    ours, theirs = pair(rule)
    assert ours.normalize("\x01a") == theirs.normalize_str("\x01a")


def _units(*units: int, blob: bytes = b"") -> str:
    body = struct.pack(f"<{len(units)}I", *units)
    return base64.b64encode(struct.pack("<I", len(body)) + body + blob).decode()


@pytest.mark.parametrize(
    "value",
    [
        "",  # the oracle: Cannot parse precompiled_charsmap
        None,  # the oracle: invalid type
        "not base64!",
        base64.b64encode(b"\x00\x00").decode(),  # shorter than its size field
        _units(),  # an empty trie: the oracle panics on the first lookup
        base64.b64encode(struct.pack("<I", 8) + b"\0\0\0\0").decode(),  # truncated trie
        _units(0, blob=b"\xff\0"),  # replacements not UTF-8
        _units(1 << 10),  # the root's children outside the array
    ],
)
def test_refusals_name_the_path(value):
    config = {"type": "Precompiled", "precompiled_charsmap": value}
    with pytest.raises(TokenizerFileError) as err:
        Tokenizer.from_str(with_changes(byte_level_base(), normalizer=config))
    assert "normalizer.precompiled_charsmap" in str(err.value)
    # the oracle refuses too (it panics, at load or at the first normalize)
    with pytest.raises(BaseException):  # noqa: B017
        loaded = tokenizers.Tokenizer.from_str(with_changes(byte_level_base(), normalizer=config))
        loaded.encode("abc")


def test_unknown_field_is_ignored_as_the_oracle_does():
    config = {**precompiled("nfkc"), "extra": 1}
    with collect_ignored() as ignored:
        read_normalizer(config, "normalizer")
    assert ignored == ["normalizer.extra"]


@pytest.mark.slow
def test_grapheme_stand_ins_match_the_oracle():
    """The stand-in table is what the generator finds, on every code point in the full tier; in
    the default tier on every 20th code point and every code point the table holds."""
    table = _grapheme_tables.STAND_INS
    every = gen.code_points()
    chars = sorted({*tier.spread(every, len(every) // 50), *map(chr, table)})
    assert gen.stand_ins(chars) == {ord(c): table[ord(c)] for c in chars if ord(c) in table}
    assert gen.regex_fingerprint() == _grapheme_tables.REGEX_FINGERPRINT
