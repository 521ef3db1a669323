"""The char-class pre-tokenizers against the oracle (tokenizers 0.23.3): BertPreTokenizer,
Whitespace, WhitespaceSplit, Punctuation (every behaviour), Digits, UnicodeScripts,
CharDelimiterSplit, FixedLength, and Metaspace (every scheme, split on/off) alone and in
Sequences.

Each configuration is compared twice: piece by piece (batchtok's component vs the oracle's
component loaded from the same JSON, ``pre_tokenize_str``) over the corpora, adversarial text
and hypothesis text drawn from every code point; and end to end (ids, tokens, decode) in two
tokenizers: a byte-level BPE whose ByteLevel(add_prefix_space) stage makes every piece
boundary visible as a "Ġ", and a char-level BPE with byte_fallback that sees the raw pieces.
"""

from __future__ import annotations

import json

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from batchtok.pre_tokenizers import read_pre_tokenizer
from tests.support import corpora, tier
from tests.support.adversarial import INTERESTING, adversarial_strings, describe
from tests.support.caches import per_module_cache
from tests.support.oracle import (
    added_token,
    assert_agree,
    byte_level_base,
    char_level_bpe,
    compare_text,
    pair_from_json,
    text_strategy,
    with_changes,
)
from tests.support.tier import examples
from tools.gen_onig_tables import _all_chars as every_char

BEHAVIORS = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"]


def seq(*pretokenizers: dict) -> dict:
    return {"type": "Sequence", "pretokenizers": list(pretokenizers)}


def metaspace(scheme: str, split: bool = True, replacement: str = "▁") -> dict:
    return {
        "type": "Metaspace",
        "replacement": replacement,
        "prepend_scheme": scheme,
        "split": split,
    }


SINGLE = {
    "bert": {"type": "BertPreTokenizer"},
    "whitespace": {"type": "Whitespace"},
    "whitespace_split": {"type": "WhitespaceSplit"},
    "punctuation_default": {"type": "Punctuation"},
    **{f"punctuation_{b}": {"type": "Punctuation", "behavior": b} for b in BEHAVIORS},
    "digits_individual": {"type": "Digits", "individual_digits": True},
    "digits_runs": {"type": "Digits", "individual_digits": False},
    "unicode_scripts": {"type": "UnicodeScripts"},
    "char_delimiter_dash": {"type": "CharDelimiterSplit", "delimiter": "-"},
    "char_delimiter_space": {"type": "CharDelimiterSplit", "delimiter": " "},
    "char_delimiter_emoji": {"type": "CharDelimiterSplit", "delimiter": "😀"},
    "char_delimiter_regex_char": {"type": "CharDelimiterSplit", "delimiter": "."},
    "fixed_length_default": {"type": "FixedLength"},
    "fixed_length_1": {"type": "FixedLength", "length": 1},
    "fixed_length_3": {"type": "FixedLength", "length": 3},
    **{
        f"metaspace_{scheme}_{'split' if split else 'whole'}": metaspace(scheme, split)
        for scheme in ("always", "first", "never")
        for split in (True, False)
    },
    "metaspace_legacy_prefix": {"type": "Metaspace", "replacement": "▁", "add_prefix_space": True},
    "metaspace_other_char": metaspace("always", True, "_"),
}

SEQUENCES = {
    "split_then_punct": seq({"type": "WhitespaceSplit"}, {"type": "Punctuation"}),
    "whitespace_then_digits": seq(
        {"type": "Whitespace"}, {"type": "Digits", "individual_digits": True}
    ),
    "digits_then_scripts": seq(
        {"type": "Digits", "individual_digits": False}, {"type": "UnicodeScripts"}
    ),
    "scripts_then_metaspace": seq({"type": "UnicodeScripts"}, metaspace("always")),
    "metaspace_first_then_digits": seq(
        metaspace("first"), {"type": "Digits", "individual_digits": True}
    ),
    "metaspace_never_whole_then_punct": seq(metaspace("never", False), {"type": "Punctuation"}),
    "punct_then_metaspace_never": seq(
        {"type": "Punctuation", "behavior": "MergedWithNext"}, metaspace("never")
    ),
    "bert_then_fixed": seq({"type": "BertPreTokenizer"}, {"type": "FixedLength", "length": 2}),
    "delimiter_then_scripts_then_whitespace": seq(
        {"type": "CharDelimiterSplit", "delimiter": "e"},
        {"type": "UnicodeScripts"},
        {"type": "WhitespaceSplit"},
    ),
    "split_regex_then_punct": seq(
        {"type": "Split", "pattern": {"Regex": r"\s+"}, "behavior": "Removed", "invert": False},
        {"type": "Punctuation", "behavior": "Contiguous"},
    ),
    "nested": seq(seq({"type": "Whitespace"}), seq(metaspace("always", True))),
}

CONFIGS = {**SINGLE, **SEQUENCES}


# ---------------------------------------------------------------------------------------------
# Piece by piece


def _tokenizer_json(pre_tokenizer: dict) -> str:
    return json.dumps(
        {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": [],
            "normalizer": None,
            "pre_tokenizer": pre_tokenizer,
            "post_processor": None,
            "decoder": None,
            "model": {"type": "WordLevel", "vocab": {"[UNK]": 0}, "unk_token": "[UNK]"},
        },
        ensure_ascii=False,
    )


@per_module_cache
def component_pair(name: str):
    """(batchtok's pre-tokenizer, the oracle's), both loaded from the same JSON."""
    config = CONFIGS[name]
    oracle = tokenizers.Tokenizer.from_str(_tokenizer_json(config)).pre_tokenizer
    return read_pre_tokenizer(config, "pre_tokenizer"), oracle


def piece_problems(name: str, texts) -> list[str]:
    ours, oracle = component_pair(name)
    problems = []
    for text in texts:
        want = [piece for piece, _ in oracle.pre_tokenize_str(text)]
        got = ours.pre_tokenize([text], True)
        if got != want:
            at = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), len(want))
            problems.append(
                f"{describe(text)}: piece {at}: batchtok {got[at : at + 3]!r} "
                f"oracle {want[at : at + 3]!r}"
            )
    return problems


@per_module_cache
def corpus_texts() -> list[str]:
    docs = corpora.english_docs()[:15] + corpora.code_docs()[:15]
    docs += [d for docs_ in corpora.multilingual_docs().values() for d in docs_[:2]]
    return [d[:4000] for d in docs]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_pieces_on_corpora_and_adversarial_text(name):
    problems = piece_problems(name, corpus_texts() + adversarial_strings())
    assert not problems, f"{len(problems)} texts differ; first:\n" + "\n".join(problems[:8])


# Between them, these use every generated table.
TABLE_DRIVEN = ["bert", "whitespace", "digits_runs", "unicode_scripts"]


@pytest.mark.parametrize("name", TABLE_DRIVEN)
def test_pieces_on_every_code_point(name):
    """Every code point (rare and unassigned included), each after an "a" (so that every
    char's class shows), in short texts: the oracle's char offsets cost it time quadratic in
    the text length."""
    chars = every_char()
    # Every 5th code point in the default tier (all in the full tier).
    spaced = "".join("a" + c for c in tier.spread(chars, len(chars) // 5))
    texts = [spaced[i : i + 1000] for i in range(0, len(spaced), 1000)]
    problems = piece_problems(name, texts)
    assert not problems, "\n".join(problems[:5])


RARE = st.characters(codec=None, exclude_categories=["Cs"])


@settings(max_examples=examples(250), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(CONFIGS)),
    text=st.one_of(text_strategy(INTERESTING), st.text(alphabet=RARE, max_size=30)),
)
def test_pieces_property(name, text):
    problems = piece_problems(name, [text])
    assert not problems, problems[0]


# ---------------------------------------------------------------------------------------------
# End to end


def _revealing(pre: dict, added=()) -> str:
    """Byte-level BPE: ``pre`` then ByteLevel(add_prefix_space): every boundary costs a Ġ."""
    byte_level = {
        "type": "ByteLevel",
        "add_prefix_space": True,
        "trim_offsets": True,
        "use_regex": False,
    }
    return with_changes(
        byte_level_base(), pre_tokenizer=seq(pre, byte_level), added_tokens=list(added)
    )


def _raw(pre: dict, added=()) -> str:
    return with_changes(char_level_bpe(), pre_tokenizer=pre, added_tokens=list(added))


ADDED = [
    added_token("<|sep|>", special=True, normalized=False, file_id=5000),
    added_token("word", special=False, normalized=True, file_id=5001),
]
ADDED_TEXTS = [
    "a<|sep|>b",
    "<|sep|> word 12",
    " <|sep|> x-y <|sep|>",
    "word word, word!",
    "<|sep|><|sep|>",
    "ab 日本 word",
]
END_TO_END_TEXTS = adversarial_strings(200)[::7] + [d[:600] for d in corpus_texts()[::9]]


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_end_to_end(name):
    config = CONFIGS[name]
    for tokenizer_json in (_revealing(config), _raw(config)):
        assert_agree(pair_from_json(tokenizer_json), END_TO_END_TEXTS)
    for tokenizer_json in (_revealing(config, ADDED), _raw(config, ADDED)):
        assert_agree(pair_from_json(tokenizer_json), ADDED_TEXTS)


@settings(max_examples=examples(100), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(CONFIGS)),
    raw=st.booleans(),
    text=text_strategy(INTERESTING + ["<|sep|>", "word"]),
)
def test_end_to_end_property(name, raw, text):
    build = _raw if raw else _revealing
    problems = compare_text(pair_from_json(build(CONFIGS[name], ADDED)), text)
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# Refusals

BAD = {
    "digits_without_individual_digits": ({"type": "Digits"}, "individual_digits"),
    "digits_not_bool": ({"type": "Digits", "individual_digits": 1}, "individual_digits"),
    "punctuation_lowercase_behavior": ({"type": "Punctuation", "behavior": "removed"}, "behavior"),
    "delimiter_empty": ({"type": "CharDelimiterSplit", "delimiter": ""}, "delimiter"),
    "delimiter_two_chars": ({"type": "CharDelimiterSplit", "delimiter": "ab"}, "delimiter"),
    "delimiter_missing": ({"type": "CharDelimiterSplit"}, "delimiter"),
    "delimiter_type_spelling": ({"type": "Delimiter", "delimiter": "a"}, "type"),
    "fixed_length_negative": ({"type": "FixedLength", "length": -1}, "length"),
    "fixed_length_string": ({"type": "FixedLength", "length": "3"}, "length"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_refused_like_the_oracle(name):
    config, field = BAD[name]
    for wrapped, path in (
        (config, "pre_tokenizer"),
        (seq(config), "pre_tokenizer.pretokenizers[0]"),
    ):
        tokenizer_json = _tokenizer_json(wrapped)
        with pytest.raises(Exception):  # noqa: B017 (the oracle raises a bare Exception)
            tokenizers.Tokenizer.from_str(tokenizer_json)
        with pytest.raises(TokenizerFileError) as info:
            Tokenizer.from_str(tokenizer_json)
        assert info.value.path == f"{path}.{field}"


def test_fixed_length_zero_is_refused_at_load():
    """The oracle loads it, then panics on any non-empty text."""
    tokenizer_json = _tokenizer_json({"type": "FixedLength", "length": 0})
    oracle = tokenizers.Tokenizer.from_str(tokenizer_json)
    assert oracle.encode("").ids == []
    with pytest.raises(BaseException, match="chunk size must be non-zero"):
        oracle.encode("abc")
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(tokenizer_json)
    assert info.value.path == "pre_tokenizer.length"


@pytest.mark.parametrize("kind", ["BertPreTokenizer", "Whitespace", "UnicodeScripts", "Digits"])
def test_unknown_fields_are_ignored_as_the_oracle_does(kind):
    config = {"type": kind, "individual_digits": True, "future_option": 1}
    if kind != "Digits":
        del config["individual_digits"]
    tokenizers.Tokenizer.from_str(_tokenizer_json(config))
    ignored = Tokenizer.from_str(_tokenizer_json(config)).ignored_fields
    assert ignored == ("pre_tokenizer.future_option",)
