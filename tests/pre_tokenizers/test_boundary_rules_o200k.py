"""The o200k (GPT-4o) boundary rules against the engine's regex (itself proven against
Oniguruma) over arbitrary text, and against `tokenizers` on GPT-4o's file.

A text the rules leave to the regex (None among the pieces) is split by the regex in
``split_many``; the properties check both, and the corpora check that real text is cut by
the rules themselves.
"""

from __future__ import annotations

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer
from batchtok.pre_tokenizers import boundary_rules
from batchtok.pre_tokenizers.boundary_rules_o200k import CamelRules, rules_for
from batchtok.utils.byte_level import byte_level_map
from batchtok.utils.onig import OnigPattern
from tests.pre_tokenizers.test_boundary_rules import (
    PARTS,
    _file_split,
    assert_bounds_are_the_pieces,
    assert_split_by_the_rules,
    count_calls,
    texts_of,
)
from tests.support import adversarial, corpora
from tests.support.fixtures import fixture_path
from tests.support.tier import docs, examples

RULES = CamelRules()
PATTERN = OnigPattern(RULES.source())

# What these rules single out, beyond the other family's parts: letters of each case class
# (Lt, Lm, Lo, and up/low pairs), marks of each kind (Mn, Mc, Me; an emoji's variation
# selector), contractions in any case after letters and marks, slashes after punctuation and
# newlines (B4's tail), and camel-case runs.
O200K_PARTS = [
    *PARTS,
    "ǅ",  # Lt
    "ʰ",  # Lm
    "ー",  # Lm
    "ก",  # Lo
    "\u0e31",  # Mn (Thai)
    "\u0903",  # Mc
    "\u20e3",  # Me
    "\u0345",  # Mn, folds to ι
    "❤\ufe0f",
    "\ufe0f",
    "👍🏻",
    "'T",
    "'Ve",
    "'rE",
    "'D",
    "\u212a",  # KELVIN SIGN
    "camelCase",
    "HTTPServer",
    "中文API",
    "字字Ab",
    "E\u0301COLE",
    "*/\n/*",
    ";\n//",
    ".\n/\n/",
    "\r\n/",
    "//",
    "/\n",
    "\n\r\n",
    ":\u0301",
    "..\u0301",
]

text = texts_of(O200K_PARTS)

# small alphabets: each mixes some of the classes whose interactions the rules decide (an up
# char after common ones, marks after punctuation, a tail's slashes, contractions), so that
# those come up often
ALPHABETS = [
    "aZ字ʰé\u0301\u0308's/ \n\r.!1",
    "A\u0301B字ʰ'sSdD/\n .,",
    "❤\ufe0f!. \n/x'tT",
    "a'lLrReE\u0301字A \n",
    "\u0301\u0301.\n/\r / a",
    "AB字C\u0301Db",
    "ǅᾈAa字ʰ\u0345\u20e3",
    "aA字\u0301'sſ\u212a.\n",
    "٣1²5 a.\t\u3000\x85\n",
]
dense = st.sampled_from(ALPHABETS).flatmap(lambda a: st.text(st.sampled_from(a), max_size=16))
batches = st.lists(st.one_of(text, dense), max_size=40)


def regex_pieces(texts: list[str]) -> list[list[str]]:
    return [PATTERN.findall(t) for t in texts]


def _check(texts: list[str]) -> None:
    found = RULES.pieces(texts)
    want = regex_pieces(texts)
    if any("\uffff" in t for t in texts):
        assert found is None  # the joint in a text: the batch is the regex's
    else:
        assert found is not None
        assert [w if f is None else f for f, w in zip(found, want)] == want
    assert RULES.split_many(texts, PATTERN.findall) == want
    assert_bounds_are_the_pieces(RULES, texts)


@settings(
    max_examples=examples(4000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(texts=batches)
def test_pieces_equal_the_regex(texts: list[str]) -> None:
    _check(texts)


@settings(
    max_examples=examples(4000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(texts=st.lists(dense, max_size=60))
def test_pieces_of_small_alphabets_equal_the_regex(texts: list[str]) -> None:
    _check(texts)


@pytest.mark.parametrize(
    "texts",
    [
        ["it's's't", "x'S't"],  # an apostrophe right after a contraction
        ["x'd字A", "y's\u0301Ab"],  # common chars after a contraction, then an up char
        ["!!\u0301\n/*", "..\u0301\n//a"],  # an eaten mark's tail ending inside a K run
    ],
    ids=["chained-contractions", "after-a-contraction", "eaten-mark-tail"],
)
def test_what_the_rules_leave_to_the_regex(texts: list[str]) -> None:
    found = RULES.pieces(texts * 300)
    assert found is not None and set(map(type, found)) == {type(None)}
    assert RULES.split_many(texts * 300, PATTERN.findall) == regex_pieces(texts * 300)


def test_adversarial_and_corpus_text() -> None:
    texts = adversarial.adversarial_strings()
    for kind in ("english", "code", "multilingual"):
        texts += corpora.sample_docs(kind, 20, 3000)
    texts = [t for t in texts if "\uffff" not in t]
    want = regex_pieces(texts)
    found = RULES.pieces(texts)
    assert [w if f is None else f for f, w in zip(found, want)] == want
    assert RULES.split_many(texts, PATTERN.findall) == want


def test_real_text_is_cut_by_the_rules() -> None:
    """No corpus document is left to the regex: the configurations that are (see
    test_what_the_rules_leave_to_the_regex) do not come up in real text."""
    for kind in ("english", "code", "multilingual"):
        texts = docs(corpora.sample_docs(kind, 200, 3000), 100_000, f"o200k:{kind}")
        found = RULES.pieces(texts)
        assert found == regex_pieces(texts)


def test_recognises_gpt4o_and_nothing_else() -> None:
    assert rules_for(OnigPattern(_file_split("gpt4o")["pattern"]["Regex"])) == RULES
    # the same pattern written otherwise: recognised as rendered for the regex module
    assert rules_for(OnigPattern(RULES.source().replace("'", r"\x27"))) == RULES
    assert rules_for(OnigPattern(RULES.source().replace("{1,3}", "{1,3}?"))) is None
    assert rules_for(OnigPattern(RULES.source().replace(r"[\r\n/]*", r"[\r\n]*"))) is None
    for name in ("llama3", "qwen3", "gpt35turbo"):
        assert rules_for(OnigPattern(_file_split(name)["pattern"]["Regex"])) is None


def test_pieces_equal_the_oracle_on_gpt4o() -> None:
    """Against the file's own pre-tokenizer (the Split, then ByteLevel's mapping of each
    piece), and against the Split alone, whose offsets show the pieces unmapped."""
    path = str(fixture_path("gpt4o"))
    whole = tokenizers.Tokenizer.from_file(path).pre_tokenizer
    alone = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(RULES.source()), behavior="isolated", invert=False
    )
    texts = adversarial.adversarial_strings()
    for kind in ("english", "code", "multilingual"):
        texts += docs(corpora.sample_docs(kind, 200, 3000), 60_000, f"boundary:{kind}")
    texts += [t for t in O200K_PARTS if t]
    texts = [t for t in texts if "\uffff" not in t]
    found = RULES.split_many(texts, PATTERN.findall)
    assert found == [[t[s:e] for _, (s, e) in alone.pre_tokenize_str(t)] for t in texts]
    mapped = [[byte_level_map(p) for p in pieces] for pieces in found]
    assert mapped == [[p for p, _ in whole.pre_tokenize_str(t)] for t in texts]


def test_the_engine_splits_gpt4o_batches_by_the_rules(monkeypatch) -> None:
    calls = count_calls(monkeypatch, CamelRules)
    texts = corpora.sample_docs("multilingual", 60, 3000) + corpora.sample_docs("code", 30, 3000)
    texts += corpora.sample_docs("english", 30, 3000)
    texts += adversarial.adversarial_strings(max_chars=1000)
    ours = Tokenizer.from_file(fixture_path("gpt4o"))
    assert ours._split_many is not None
    oracle = tokenizers.Tokenizer.from_file(str(fixture_path("gpt4o")))
    want = [e.ids for e in oracle.encode_batch(texts, add_special_tokens=False)]
    assert_split_by_the_rules(ours, texts, want, calls)


def test_the_other_family_does_not_claim_gpt4o() -> None:
    assert boundary_rules.rules_for(PATTERN) is None
