"""The BPE model against the oracle (tokenizers 0.23.3): merges in both spellings,
ignore_merges, continuing_subword_prefix, end_of_word_suffix, unk handling, byte_fallback,
merge tables whose ranks are not monotone, and words long enough for the heap-based merge path.

Vocabularies come from the oracle's own trainer at test time (byte-level, and character-level
with prefix / suffix options), edited as JSON, plus tiny hand-built tables where the merge order
matters.
"""

from __future__ import annotations

import json
import pickle
import random

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from tests.support.adversarial import INTERESTING
from tests.support.caches import per_module_cache
from tests.support.oracle import (
    SYLLABLES,
    assert_agree,
    byte_level_base,
    compare_text,
    corpus_lines,
    outcome,
    pair_from_json,
    text_strategy,
    with_changes,
)
from tests.support.tier import examples

# ---------------------------------------------------------------------------------------------
# Model configurations


def with_model(base: dict, **model_changes) -> str:
    return with_changes(base, model=dict(base["model"], **model_changes))


UNKNOWN_CHARS = "∑☃🦀Ꙃⓐ\x00\U000e0041\uffff"


@per_module_cache
def char_level_base(prefix: str | None, suffix: str | None) -> dict:
    """A character-level BPE (no byte-level mapping) trained with the given prefix / suffix,
    split on whitespace, with an "[UNK]" special token."""
    options = {}
    if prefix is not None:
        options["continuing_subword_prefix"] = prefix
    if suffix is not None:
        options["end_of_word_suffix"] = suffix
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="[UNK]", **options))
    tok.pre_tokenizer = tokenizers.pre_tokenizers.Split(tokenizers.Regex(r"\s+"), "removed")
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=1500, special_tokens=["[UNK]"], show_progress=False, **options
    )
    tok.train_from_iterator(corpus_lines(), trainer)
    return json.loads(tok.to_str())


def byte_tokens(missing=()) -> list[str]:
    return [f"<0x{b:02X}>" for b in range(256) if b not in missing]


def with_byte_tokens(base: dict, tokens: list[str], **model_changes) -> str:
    vocab = dict(base["model"]["vocab"])
    for token in tokens:
        vocab.setdefault(token, len(vocab))
    decoder = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}
    return with_changes(
        base, model=dict(base["model"], vocab=vocab, **model_changes), decoder=decoder
    )


ADVERSARIAL = [
    "",
    " ",
    "a",
    "hello",
    "Hello, world! hello WORLD",
    "The quick brown fox jumps over the lazy dog.",
    "unbelievable antidisestablishmentarianism pneumonoultramicroscopic",
    "kakikukeko shisuseso tachitsute strthinging",
    "café naïve Ångström Straße",
    "ΟΔΟΣ σοφία Привет мир",
    "日本語のテキスト 한국어",
    "🙂😀👍🏽 👩‍👩‍👧",
    "12345 67890 3.14159",
    "it's we'll they've",
    "tabs\tand\nnewlines\r\n",
    "a" * 60,
    "ab" * 40,
    "the" * 30,
    "∑ x ∑∑ ☃☃☃ a🦀b 🦀",
    "hello∑world ☃hello hello☃ ∑",
    "Ꙃⓐ ⓐⓐⓐ x\x00y",
    UNKNOWN_CHARS,
    UNKNOWN_CHARS + "hello" + UNKNOWN_CHARS,
    "é" * 30 + "∑" * 30,
    "\U000e0041\U000e0042",
]

LONG_RNG = random.Random(48)
LONG_WORDS = [
    "a" * 10_000,
    "ab" * 5_000,
    "hello" * 2_000,
    "".join(LONG_RNG.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(10_000)),
    "".join(LONG_RNG.choice("etaoinshrdlu") for _ in range(10_000)),
    "".join(LONG_RNG.choice(SYLLABLES) for _ in range(3_000)),
    "7" * 10_000,
    "1234567890" * 1_000,
    "😀" * 2_500,
    "日本語" * 1_000,
    "é∑" * 3_000,
    "x" * 49,
    "xy" * 25,
    "hello" * 10,
    "ab" * 128,
    "abc" * 86,
    "the" * 85 + "t",
    "".join(LONG_RNG.choice("abcdefghij") for _ in range(257)),
    "".join(LONG_RNG.choice("abcdefghij") for _ in range(600)),
]


# ---------------------------------------------------------------------------------------------
# Byte-level BPE variants


def _legacy_merges(merges) -> list[str]:
    return [f"{a} {b}" for a, b in merges]


BYTE_LEVEL_VARIANTS = {
    "pair_merges": {},
    "ignore_merges": {"ignore_merges": True},
    "ignore_merges_null": {"ignore_merges": None, "fuse_unk": None, "byte_fallback": None},
    "dropout_zero": {"dropout": 0.0},
}


@pytest.mark.parametrize("variant", sorted(BYTE_LEVEL_VARIANTS))
def test_byte_level_variants(variant):
    base = byte_level_base()
    pair = pair_from_json(with_model(base, **BYTE_LEVEL_VARIANTS[variant]))
    assert_agree(pair, ADVERSARIAL)


def test_legacy_string_merges_give_the_same_ids():
    base = byte_level_base()
    pairs = pair_from_json(with_model(base))
    legacy = _legacy_merges(base["model"]["merges"])
    strings = pair_from_json(with_model(base, merges=legacy))
    versioned = pair_from_json(with_model(base, merges=["#version: 0.2", *legacy]))
    for pair in (strings, versioned):
        assert_agree(pair, ADVERSARIAL)
        for text in ADVERSARIAL + LONG_WORDS[:3]:
            assert pair[0].encode_ids(text) == pairs[0].encode_ids(text)


@pytest.mark.parametrize("use_regex", [True, False])
@pytest.mark.parametrize("ignore_merges", [False, True])
def test_long_words_take_the_heap_path(use_regex, ignore_merges):
    """Words of more than 256 symbols (here up to 10,000) are merged with a heap in batchtok."""
    base = byte_level_base()
    pre = dict(base["pre_tokenizer"], use_regex=use_regex)
    tj = with_changes(
        base, pre_tokenizer=pre, model=dict(base["model"], ignore_merges=ignore_merges)
    )
    assert_agree(pair_from_json(tj), LONG_WORDS + [" ".join(LONG_WORDS[3:6])])


def test_duplicate_merge_later_one_wins():
    base = byte_level_base()
    merges = base["model"]["merges"]
    # repeat an early merge at the very end (its rank becomes the last one) and a late one early
    edited = [merges[-1]] + merges + [merges[0], merges[5]]
    assert_agree(pair_from_json(with_model(base, merges=edited)), ADVERSARIAL + LONG_WORDS[:4])


MERGE_STEP_FILES = {
    "byte_level": lambda: with_model(byte_level_base()),
    "ignore_merges": lambda: with_model(byte_level_base(), ignore_merges=True),
    "duplicate_merges": lambda: with_model(
        byte_level_base(),
        merges=byte_level_base()["model"]["merges"][::-1][:50]
        + byte_level_base()["model"]["merges"],
    ),
    "prefix_suffix_unk": lambda: json.dumps(char_level_base("##", "</w>")),
}


@pytest.mark.parametrize("name", sorted(MERGE_STEP_FILES))
def test_merge_steps_replay_to_the_oracle_tokens(name):
    """``BPE.merge_steps``: the merges, replayed on the initial symbols, give the oracle model's
    tokens; each joins the pair ranked lowest in the file's merges (a later duplicate's rank),
    the leftmost of equals, until no adjacent pair has a merge."""
    tj = MERGE_STEP_FILES[name]()
    ours, ref = pair_from_json(tj)
    merges = json.loads(tj)["model"]["merges"]
    ranks = {tuple(m): rank for rank, m in enumerate(merges)}
    prefix = ours.model.prefix
    words = [
        w
        for text in ADVERSARIAL + LONG_WORDS[-8:]
        for w, _ in ref.pre_tokenizer.pre_tokenize_str(text)
    ]
    for word in words:
        symbols, steps = ours.model.merge_steps(word)
        current = list(symbols)
        for step in steps:
            adjacent = [ranks.get(pair) for pair in zip(current, current[1:])]
            best = min(r for r in adjacent if r is not None)
            assert (step.rank, step.at) == (best, adjacent.index(best)), word
            left, right = current[step.at : step.at + 2]
            assert (step.left, step.right) == (left, right)
            assert step.merged == left + right[len(prefix) :]
            current[step.at : step.at + 2] = [step.merged]
        if not (ours.model.ignore_merges and word in ours.model.vocab):
            assert all(pair not in ranks for pair in zip(current, current[1:])), word
        assert current == [t.value for t in ref.model.tokenize(word)], word


def test_nonzero_dropout_is_refused():
    """Dropout makes the oracle's output random; batchtok refuses it (documented)."""
    tj = with_model(byte_level_base(), dropout=0.25)
    tokenizers.Tokenizer.from_str(tj)
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(tj)
    assert info.value.path.startswith("model")


# ---------------------------------------------------------------------------------------------
# Character-level BPE: prefix, suffix, unk

AFFIXES = [("##", None), (None, "</w>"), ("##", "</w>"), (None, None)]
AFFIX_IDS = ["prefix", "suffix", "prefix_suffix", "plain"]
UNK_MODES = {
    "unk": {"unk_token": "[UNK]", "fuse_unk": False},
    "unk_fused": {"unk_token": "[UNK]", "fuse_unk": True},
    "no_unk": {"unk_token": None},
    "unk_missing_from_vocab": {"unk_token": "<missing>"},
}


@pytest.mark.parametrize("unk_mode", sorted(UNK_MODES))
@pytest.mark.parametrize("prefix,suffix", AFFIXES, ids=AFFIX_IDS)
def test_char_level(prefix, suffix, unk_mode):
    base = char_level_base(prefix, suffix)
    for ignore_merges in (False, True):
        tj = with_model(base, ignore_merges=ignore_merges, **UNK_MODES[unk_mode])
        assert_agree(pair_from_json(tj), ADVERSARIAL)


@pytest.mark.parametrize("prefix,suffix", AFFIXES, ids=AFFIX_IDS)
def test_char_level_long_words(prefix, suffix):
    base = char_level_base(prefix, suffix)
    for mode in ("unk", "unk_fused", "no_unk"):
        tj = with_model(base, **UNK_MODES[mode])
        assert_agree(pair_from_json(tj), LONG_WORDS)


# ---------------------------------------------------------------------------------------------
# byte_fallback

BYTE_SETS = {
    "all_bytes": byte_tokens(),
    "missing_continuation_bytes": byte_tokens(range(0x80, 0x90)),
    "missing_e2_and_f0": byte_tokens([0xE2, 0xF0]),
    "missing_ascii_letters": byte_tokens(range(0x61, 0x7B)),
    "missing_hash": byte_tokens([0x23]),
    "lowercase_hex_only": [f"<0x{b:02x}>" for b in range(256)],
    "none": [],
}


@pytest.mark.parametrize("unk_mode", ["unk", "unk_fused", "no_unk"])
@pytest.mark.parametrize("byte_set", sorted(BYTE_SETS))
def test_byte_fallback(byte_set, unk_mode):
    for prefix, suffix in AFFIXES:
        base = char_level_base(prefix, suffix)
        tj = with_byte_tokens(base, BYTE_SETS[byte_set], byte_fallback=True, **UNK_MODES[unk_mode])
        assert_agree(pair_from_json(tj), ADVERSARIAL + ["zzq", "∑q∑", "é∑é"])


def test_byte_fallback_long_words():
    base = char_level_base("##", None)
    for byte_set in ("all_bytes", "missing_continuation_bytes"):
        for mode in ("unk", "unk_fused"):
            tj = with_byte_tokens(base, BYTE_SETS[byte_set], byte_fallback=True, **UNK_MODES[mode])
            assert_agree(pair_from_json(tj), LONG_WORDS)


def test_byte_fallback_tokens_take_part_in_merges():
    """<0xHH> symbols merge like any other token."""
    vocab = {t: i for i, t in enumerate(byte_tokens())}
    vocab.update(
        {"<0xE2><0x88>": 256, "<0xE2><0x88><0x91>": 257, "a": 258, "a<0xE2><0x88><0x91>": 259}
    )
    merges = [
        ["<0xE2>", "<0x88>"],
        ["<0xE2><0x88>", "<0x91>"],
        ["a", "<0xE2><0x88><0x91>"],
    ]
    model = dict(byte_level_base()["model"], vocab=vocab, merges=merges, byte_fallback=True)
    tj = with_changes(
        byte_level_base(), model=model, pre_tokenizer=None, decoder={"type": "ByteFallback"}
    )
    assert_agree(pair_from_json(tj), ["∑", "a∑", "a∑a∑∑", "∑" * 60, "a∑" * 40, "b∑a"])


# ---------------------------------------------------------------------------------------------
# Hand-built merge tables whose ranks are not monotone


def hand_built(vocab_tokens: list[str], merges: list[list[str]], **model_changes) -> str:
    vocab = {t: i for i, t in enumerate(vocab_tokens)}
    model = dict(byte_level_base()["model"], vocab=vocab, merges=merges, **model_changes)
    return with_changes(
        byte_level_base(), model=model, pre_tokenizer=None, decoder=None, added_tokens=[]
    )


# Merging one occurrence of (a, b) creates "ab", and the pair (ab, a) outranks (a, b): so in
# "abab" the first merge makes (ab, a) available before the second (a, b) is merged, giving
# [aba, b] where merging every (a, b) at once would give [ab, ab].
NON_MONOTONE = {
    "ab_a_before_a_b": (["a", "b", "ab", "aba"], [["ab", "a"], ["a", "b"]]),
    "a_bc_before_b_c": (
        ["a", "b", "c", "ab", "bc", "abc"],
        [["a", "bc"], ["a", "b"], ["b", "c"]],
    ),
    "chain": (
        ["a", "b", "ab", "aab", "aaab", "ba", "bab"],
        [["a", "aab"], ["a", "ab"], ["b", "ab"], ["a", "b"], ["b", "a"]],
    ),
}


def _random_table(seed: int) -> tuple[list[str], list[list[str]]]:
    """Random merges over {a, b, c}, then shuffled ranks: many merges outrank their inputs."""
    rng = random.Random(seed)
    tokens = ["a", "b", "c"]
    merges: list[list[str]] = []
    while len(merges) < 40:
        left, right = rng.choice(tokens), rng.choice(tokens)
        if left + right in tokens or len(left + right) > 8:
            continue
        merges.append([left, right])
        tokens.append(left + right)
    rng.shuffle(merges)
    return tokens, merges


for _seed in range(6):
    NON_MONOTONE[f"random_{_seed}"] = _random_table(_seed)

AB_TEXTS = (
    ["ab" * n for n in range(1, 60)]
    + ["a" + "ba" * n for n in range(1, 30)]
    + ["aab", "abab", "ababa", "abcabc", "aabb", "abba", "cabab", "bcbcbc", "aaabab"]
)


@pytest.mark.parametrize("name", sorted(NON_MONOTONE))
def test_non_monotone_merge_ranks(name):
    tokens, merges = NON_MONOTONE[name]
    rng = random.Random(name)
    texts = AB_TEXTS + [
        "".join(
            rng.choice("abc")
            for _ in range(rng.choice([5, 30, 47, 48, 49, 50, 200, 255, 256, 257, 300, 600]))
        )
        for _ in range(60)
    ]
    texts += ["".join(rng.choice("abc") for _ in range(10_000)), "ab" * 5_000, "abc" * 3_333]
    assert_agree(pair_from_json(hand_built(tokens, merges)), texts)


def test_abab_by_hand():
    """The example spelled out: 'abab' is [aba, b], not [ab, ab]."""
    ours, ref = pair_from_json(hand_built(*NON_MONOTONE["ab_a_before_a_b"]))
    assert ref.encode("abab").tokens == ["aba", "b"]
    assert ours.encode("abab").tokens == ["aba", "b"]
    long_text = "ab" * 5_000
    assert ours.encode_ids(long_text) == ref.encode(long_text).ids


# ---------------------------------------------------------------------------------------------
# Hypothesis


PROPERTY_PRESETS = (
    [with_model(byte_level_base(), **v) for v in BYTE_LEVEL_VARIANTS.values()]
    + [
        with_model(char_level_base(p, s), **UNK_MODES[m])
        for p, s in AFFIXES
        for m in ("unk", "unk_fused", "no_unk", "unk_missing_from_vocab")
    ]
    + [
        with_byte_tokens(char_level_base(p, s), BYTE_SETS[b], byte_fallback=True, **UNK_MODES[m])
        for p, s in AFFIXES
        for b in ("all_bytes", "missing_continuation_bytes", "missing_e2_and_f0")
        for m in ("unk", "unk_fused", "no_unk")
    ]
)


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(index=st.integers(0, len(PROPERTY_PRESETS) - 1), text=text_strategy(INTERESTING))
def test_property_presets(index, text):
    problems = compare_text(pair_from_json(PROPERTY_PRESETS[index]), text)
    assert not problems, "\n".join(problems)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    index=st.integers(0, len(PROPERTY_PRESETS) - 1),
    texts=st.lists(text_strategy(INTERESTING), max_size=6),
    others=st.lists(st.text(max_size=4), max_size=8),
)
def test_property_a_pickle_that_defers_the_vocab(index, texts, others):
    """A pickle defers the whole vocab exactly when encoding reads only the symbol vocab (no
    subword prefix or suffix, no ignore_merges); its copy encodes ids as the oracle does
    without reading it (a batch long enough for the batch path, and one text at a time),
    answers the vocab size, the largest id and every lookup (each token, its one-char and
    byte-fallback symbols, random strings) as the fresh model, and decodes the same."""
    ours, ref = pair_from_json(PROPERTY_PRESETS[index])
    model = ours.model
    copy = pickle.loads(pickle.dumps(ours))
    defers = not (model.prefix or model.suffix or model.ignore_merges)
    assert ("vocab" in vars(copy.model)) != defers
    batch = (texts * (300 // max(1, len(texts)) + 1))[:300] if texts else []
    for text in texts:
        want = outcome(lambda text=text: ref.encode(text, add_special_tokens=False).ids)
        got = outcome(lambda text=text: copy.encode_ids(text, False))
        assert got[0] == want[0] and (got[0] != "ok" or got[1] == want[1]), (text, got, want)
    if batch and all(outcome(lambda t=t: ours.encode_ids(t, False))[0] == "ok" for t in texts):
        assert copy.encode_batch_ids(batch, False) == ours.encode_batch_ids(batch, False)
    assert copy.get_vocab_size(False) == ours.get_vocab_size(False)
    assert copy.model.max_id() == max(model.vocab.values(), default=0)
    probes = others + [t + "\x00" for t in list(model.vocab)[:50]]
    probes += [c for t in texts for c in t] + model.byte_token_strings() + [model.unk_token or ""]
    absent = [p for p in probes if p not in model.vocab]
    assert [copy.model.token_id(p) for p in absent] == [None] * len(absent)
    if defers:
        assert "vocab" not in vars(copy.model)
    tokens = list(model.vocab) + probes
    assert [copy.token_to_id(t) for t in tokens] == [ours.token_to_id(t) for t in tokens]
    ids = list(model.vocab.values())
    assert copy.decode(ids, False) == ours.decode(ids, False)
    assert copy.model.vocab == model.vocab


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(NON_MONOTONE)),
    text=st.text(alphabet="abc", max_size=120),
)
def test_property_non_monotone(name, text):
    problems = compare_text(pair_from_json(hand_built(*NON_MONOTONE[name])), text)
    assert not problems, "\n".join(problems)
