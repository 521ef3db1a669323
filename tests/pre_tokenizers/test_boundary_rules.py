"""The cl100k / Llama-3 family's boundary rules against the engine's regex (itself proven
against Oniguruma) over arbitrary text, and against `tokenizers` on the real files' patterns.

Every member of the family is checked (digits in threes or one by one, contractions with or
without ``(?i)``); the batches mix many texts, so the joints between texts are checked too.
"""

from __future__ import annotations

import json

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer
from batchtok.pre_tokenizers.boundary_rules import BoundaryRules, JoinedRules, rules_for
from batchtok.utils.byte_level import byte_level_map
from batchtok.utils.onig import OnigPattern
from tests.support import adversarial, corpora
from tests.support.adversarial import WHITE_SPACE
from tests.support.fixtures import fixture_path
from tests.support.tier import docs, examples

MEMBERS = [BoundaryRules(digits, icase) for digits in (3, 1) for icase in (True, False)]
IDS = [f"digits{r.digits}-{'icase' if r.icase else 'cased'}" for r in MEMBERS]

# What the rules single out, each kind several ways: whitespace of every kind (with the
# newlines), apostrophes and contraction letters in both cases (and ſ, which (?i) folds to s),
# letters of several scripts and beyond the BMP, combining marks (not letters: O), digits of
# several scripts and N that are not Nd, symbols, U+FFFF (the joint: the batch falls back).
PARTS = [
    *WHITE_SPACE,
    "\r\n",
    "  ",
    "\n\n",
    " \n ",
    "'",
    "\u2019",
    *"sStTmMdDrRvVeElLſK",
    "'s",
    "'S",
    "'ll",
    "'LL",
    "'lL",
    "'re",
    "'RE",
    "'ve",
    "'ſ",
    "'x",
    "a",
    "Z",
    "é",
    "字",
    "ß",
    "\U0001d400",  # MATHEMATICAL BOLD CAPITAL A
    "\u0301",
    "\u0308",
    "\u093f",  # a spacing mark
    *"0123456789",
    "٣",
    "५",
    "５",
    "\U0001d7d9",  # MATHEMATICAL DOUBLE-STRUCK DIGIT ONE
    "Ⅻ",
    "²",
    "½",
    ".",
    ",",
    "!?",
    "/",
    "-",
    "\x00",
    "😀",
    "\u200d",
    "\ufeff",
]
SMALL = "aZ字é'sSlLrRe 1٣²\n\r\t\u3000\x85.!\u0301😀"


def texts_of(parts: list[str]) -> st.SearchStrategy[str]:
    """Texts of arbitrary chars (any category but surrogates) mixed with ``parts``."""
    return st.lists(
        st.one_of(
            st.text(st.characters(exclude_categories=("Cs",)), max_size=6),
            st.sampled_from(parts),
        ),
        max_size=12,
    ).map("".join)


text = texts_of(PARTS)
# a small alphabet: the rules' interactions (a blank before an O before a letter...) come up
dense = st.text(st.sampled_from(SMALL), max_size=16)
batches = st.lists(st.one_of(text, dense), max_size=40)


def regex_pieces(rules: BoundaryRules, texts: list[str]) -> list[list[str]]:
    pattern = _pattern(rules)
    return [pattern.findall(t) for t in texts]


_PATTERNS: dict[BoundaryRules, OnigPattern] = {}


def _pattern(rules: BoundaryRules) -> OnigPattern:
    if rules not in _PATTERNS:
        _PATTERNS[rules] = OnigPattern(rules.source())
    return _PATTERNS[rules]


@pytest.mark.parametrize("rules", MEMBERS, ids=IDS)
@settings(
    max_examples=examples(4000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(texts=batches)
def test_pieces_equal_the_regex(rules: BoundaryRules, texts: list[str]) -> None:
    found = rules.pieces(texts)
    if any("\uffff" in t for t in texts):
        assert found is None  # the joint in a text: the batch is the regex's
    else:
        assert found == regex_pieces(rules, texts)
    assert rules.split_many(texts, _pattern(rules).findall) == regex_pieces(rules, texts)
    assert_bounds_are_the_pieces(rules, texts)


def assert_bounds_are_the_pieces(rules: JoinedRules, texts: list[str]) -> None:
    """The rules' arrays (the ids path's) bound the pieces their strings are, text by text,
    and leave to the regex the texts and batches :meth:`pieces` leaves."""
    if not texts:
        return
    found = rules.pieces(texts)
    bounds = rules.bounds(texts)
    if found is None:
        assert bounds is None
        return
    points, starts, ends, first, redo = bounds
    joined = points.tobytes().decode("utf-32-le")
    assert sorted(set(redo)) == redo
    for t, pieces in enumerate(found):
        span = slice(first[t], first[t + 1])
        if pieces is None:
            assert t in redo
        else:
            assert t not in redo
            assert [joined[a:b] for a, b in zip(starts[span], ends[span])] == pieces


@pytest.mark.parametrize("rules", MEMBERS, ids=IDS)
def test_adversarial_and_corpus_text(rules: BoundaryRules) -> None:
    texts = adversarial.adversarial_strings()
    for kind in ("english", "code", "multilingual"):
        texts += corpora.sample_docs(kind, 20, 3000)
    texts = [t for t in texts if "\uffff" not in t]
    want = regex_pieces(rules, texts)
    assert rules.pieces(texts) == want
    assert_bounds_are_the_pieces(rules, texts)
    # in chunks of about _CHUNK_CHARS, the short ones (and the last) by the regex
    assert rules.split_many(texts, _pattern(rules).findall) == want


def test_a_lone_surrogate_leaves_the_batch_to_the_regex() -> None:
    rules = MEMBERS[0]
    texts = ["it's", "a\ud800b"] * 8
    assert rules.pieces(texts) is None
    assert rules.split_many(texts, _pattern(rules).findall) == regex_pieces(rules, texts)


def _file_split(name: str) -> dict:
    pre = json.loads(fixture_path(name).read_text(encoding="utf-8"))["pre_tokenizer"]
    (split,) = [p for p in pre["pretokenizers"] if p["type"] == "Split"]
    return split


@pytest.mark.parametrize(
    ("name", "member"),
    [("llama3", MEMBERS[0]), ("gpt35turbo", MEMBERS[0]), ("qwen3", MEMBERS[2]), ("gpt4o", None)],
)
def test_recognises_the_real_files_patterns(name: str, member: BoundaryRules | None) -> None:
    assert rules_for(OnigPattern(_file_split(name)["pattern"]["Regex"])) == member


@pytest.mark.parametrize(
    "pattern",
    [
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,2}| ?[^\s\p{L}\p{N}]+"
        r"[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+",
        r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+"
        r"[\r\n]*|\s*[\r\n]+|\s+",
        r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    ],
    ids=["digits-in-twos", "no-lookahead", "gpt2"],
)
def test_other_patterns_are_not_recognised(pattern: str) -> None:
    assert rules_for(OnigPattern(pattern)) is None


@pytest.mark.parametrize(
    ("name", "member"),
    [("llama3", MEMBERS[0]), ("gpt35turbo", MEMBERS[0]), ("qwen3", MEMBERS[2])],
)
def test_pieces_equal_the_oracle_on_real_files(name: str, member: BoundaryRules) -> None:
    """Against the file's own pre-tokenizer (the Split, then ByteLevel's mapping of each
    piece), and against the Split alone, whose offsets show the pieces unmapped."""
    path = str(fixture_path(name))
    whole = tokenizers.Tokenizer.from_file(path).pre_tokenizer
    split = _file_split(name)
    alone = tokenizers.pre_tokenizers.Split(
        tokenizers.Regex(split["pattern"]["Regex"]), behavior="isolated", invert=False
    )
    texts = adversarial.adversarial_strings()
    for kind in ("english", "code", "multilingual"):
        texts += docs(corpora.sample_docs(kind, 200, 3000), 60_000, f"boundary:{kind}")
    texts += [t for t in PARTS + [SMALL] if t]
    texts = [t for t in texts if "\uffff" not in t]
    found = member.pieces(texts)
    assert found == [[t[s:e] for _, (s, e) in alone.pre_tokenize_str(t)] for t in texts]
    mapped = [[byte_level_map(p) for p in pieces] for pieces in found]
    assert mapped == [[p for p, _ in whole.pre_tokenize_str(t)] for t in texts]


@pytest.mark.parametrize("name", ["llama3", "qwen3", "gpt35turbo"])
def test_the_engine_splits_batches_by_the_rules(name: str, monkeypatch) -> None:
    calls = count_calls(monkeypatch, BoundaryRules)
    texts = corpora.sample_docs("multilingual", 60, 3000) + corpora.sample_docs("code", 30, 3000)
    texts += adversarial.adversarial_strings(max_chars=1000)
    ours = Tokenizer.from_file(fixture_path(name))
    oracle = tokenizers.Tokenizer.from_file(str(fixture_path(name)))
    want = [e.ids for e in oracle.encode_batch(texts, add_special_tokens=False)]
    assert_split_by_the_rules(ours, texts, want, calls)


def count_calls(monkeypatch, rules: type) -> dict[str, int]:
    """Calls of the rules' string split (``pieces``) and array split (``bounds``)."""
    calls = {"pieces": 0, "bounds": 0}
    for name in calls:
        real = getattr(rules, name)

        def counted(*args, _name=name, _real=real):
            calls[_name] += 1
            return _real(*args)

        monkeypatch.setattr(rules, name, counted)
    return calls


def assert_split_by_the_rules(
    ours: Tokenizer, texts: list[str], want: list[list[int]], calls: dict[str, int]
) -> None:
    """The ids path (the rules' bounds, the piece table) and full Encodings (the rules'
    strings) both give the oracle's ids, each through the rules, not only the regex."""
    assert ours.encode_batch_ids(texts, add_special_tokens=False) == want
    assert calls["bounds"]
    assert [e.ids for e in ours.encode_batch(texts, add_special_tokens=False)] == want
    assert calls["pieces"]
