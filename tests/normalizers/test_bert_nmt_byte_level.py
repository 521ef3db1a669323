"""BertNormalizer, StripAccents, Nmt and ByteLevel (normalizer) against the oracle.

Each normalizer is compared directly (``tokenizers.normalizers.X.normalize_str`` against
batchtok's ``normalize``) on real corpora, adversarial strings, every code point and
hypothesis text, then through whole tokenizer.json files (a byte-level BPE trained by the
oracle, its normalizer swapped) so that ids, tokens and decode compare too.
"""

from __future__ import annotations

import itertools

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from batchtok.normalizers import read_normalizer
from tests.support.adversarial import adversarial_strings
from tests.support.corpora import sample_docs
from tests.support.oracle import assert_agree, byte_level_base, pair_from_json, with_changes
from tests.support.tier import examples
from tools.gen_onig_tables import _all_chars


def bert(clean: bool, chinese: bool, strip, lower: bool, kind: str = "BertNormalizer") -> dict:
    return {
        "type": kind,
        "clean_text": clean,
        "handle_chinese_chars": chinese,
        "strip_accents": strip,
        "lowercase": lower,
    }


BERTS = {
    f"Bert_{c}_{h}_{s}_{lo}": bert(c, h, s, lo)
    for c, h, s, lo in itertools.product(
        [True, False], [True, False], [True, False, None], [True, False]
    )
}
NORMALIZERS = {
    **BERTS,
    "Bert_tag": bert(True, True, None, True, kind="Bert"),
    "StripAccents": {"type": "StripAccents"},
    "Nmt": {"type": "Nmt"},
    "ByteLevel": {"type": "ByteLevel"},
    "NFD_StripAccents_Lowercase": {
        "type": "Sequence",
        "normalizers": [{"type": "NFD"}, {"type": "StripAccents"}, {"type": "Lowercase"}],
    },
    "Nmt_NFKC_Bert": {
        "type": "Sequence",
        "normalizers": [{"type": "Nmt"}, {"type": "NFKC"}, bert(True, True, None, True)],
    },
}

TRICKY = [
    "\x00a\x0bb\x0cc\x1cd\x85e\u200bf\u00adg\ue000h\ufffdi\u0378j",
    "中文𪜀𫠠𫠟 kana カタカナ ﹏ 㐀 \U0002b920 \U0002b820",
    "Café naïve e\u0301 a\u0308\u0903 \u20dd ΟΔΟΣ İstanbul ß ǅ",
    "\t\n\r \u00a0\u3000\u2028\u2581\ufeff\u200d\u1680 x",
    "\u0301leading mark",
    "\x01leading control",
    "🙂👩‍👩‍👧🇫🇷",
]


def texts() -> list[str]:
    return (
        TRICKY
        + adversarial_strings(max_chars=3000)
        + sample_docs("multilingual", 60, max_chars=1500)
        + sample_docs("english", 10, max_chars=1500)
        + sample_docs("code", 10, max_chars=1500)
    )


def oracle(config: dict) -> tokenizers.normalizers.Normalizer:
    wrapped = with_changes(byte_level_base(), normalizer=config)
    normalizer = tokenizers.Tokenizer.from_str(wrapped).normalizer
    assert normalizer is not None
    return normalizer


@pytest.mark.parametrize("name", list(NORMALIZERS))
def test_normalize_matches_the_oracle(name):
    config = NORMALIZERS[name]
    ours = read_normalizer(config, "normalizer")
    theirs = oracle(config)
    docs = texts() + [_all_chars()]
    bad = [d for d in docs if ours.normalize(d) != theirs.normalize_str(d)]
    assert not bad, f"{len(bad)} texts differ; first: {bad[0][:80]!r}"


@pytest.mark.parametrize("name", ["Bert_True_True_None_True", "Nmt", "StripAccents", "ByteLevel"])
def test_whole_tokenizer_matches_the_oracle(name):
    pair = pair_from_json(with_changes(byte_level_base(), normalizer=NORMALIZERS[name]))
    assert_agree(pair, TRICKY + adversarial_strings(max_chars=400)[:200])


WIDE = st.text(
    alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40
) | st.lists(st.sampled_from(list("".join(TRICKY))), max_size=20).map("".join)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=WIDE, name=st.sampled_from(list(NORMALIZERS)))
def test_hypothesis(text, name):
    config = NORMALIZERS[name]
    assert read_normalizer(config, "normalizer").normalize(text) == oracle(config).normalize_str(
        text
    )


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ({"type": "BertNormalizer", "clean_text": True, "handle_chinese_chars": True}, "lowercase"),
        ({**bert(True, True, None, True), "strip_accents": "yes"}, "strip_accents"),
        ({**bert(True, True, None, True), "clean_text": 1}, "clean_text"),
    ],
)
def test_refusals_name_the_path(config, path):
    with pytest.raises(TokenizerFileError) as err:
        Tokenizer.from_str(with_changes(byte_level_base(), normalizer=config))
    assert f"normalizer.{path}" in str(err.value)


@pytest.mark.parametrize(
    "config",
    [
        {**bert(True, True, None, True), "x": 1},
        {"type": "Nmt", "x": 1},
        {"type": "StripAccents", "x": 1},
        {"type": "ByteLevel", "x": 1},
    ],
)
def test_unknown_fields_are_ignored_as_the_oracle_does(config):
    text = with_changes(byte_level_base(), normalizer=config)
    tokenizers.Tokenizer.from_str(text)
    assert Tokenizer.from_str(text).ignored_fields == ("normalizer.x",)


def test_strip_accents_may_be_omitted():
    config = {k: v for k, v in bert(True, True, None, True).items() if k != "strip_accents"}
    assert read_normalizer(config, "normalizer").normalize("Ça Va") == "ca va"
    assert oracle(config).normalize_str("Ça Va") == "ca va"
