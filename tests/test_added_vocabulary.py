"""Added tokens against the oracle (tokenizers 0.23.3): every flag combination, normalizers in
play, overlapping contents, id assignment, encode_special_tokens.

Tokenizers are synthetic: a byte-level BPE trained at test time by the oracle's own trainer, then
edited as JSON. Each case loads the same JSON text in batchtok and in ``tokenizers`` and compares
ids, tokens, type ids and special masks (with and without special tokens), then decode of the
oracle's ids (skipping special tokens or not).
"""

from __future__ import annotations

import itertools
import json
import random

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from tests.support.adversarial import INTERESTING
from tests.support.oracle import (
    added_token,
    assert_agree,
    byte_level_base,
    compare_decode,
    compare_text,
    pair_from_json,
    text_strategy,
    with_changes,
)
from tests.support.tier import examples

# ---------------------------------------------------------------------------------------------
# Added-token configurations


def added(content: str, flags: tuple[bool, bool, bool, bool, bool], file_id: int = 0) -> dict:
    special, normalized, single_word, lstrip, rstrip = flags
    return added_token(
        content,
        special=special,
        normalized=normalized,
        single_word=single_word,
        lstrip=lstrip,
        rstrip=rstrip,
        file_id=file_id,
    )


FLAG_NAMES = ("special", "normalized", "single_word", "lstrip", "rstrip")
ALL_FLAGS = list(itertools.product((False, True), repeat=5))
TOKEN_CONTENTS = ["<tok>", "[X]", "hello", " sp", "é", "<Mixed>", "İ"]

NORMALIZERS = {
    "none": None,
    "lowercase": {"type": "Lowercase"},
    "prepend": {"type": "Prepend", "prepend": "▁"},
    "lowercase_prepend": {
        "type": "Sequence",
        "normalizers": [{"type": "Lowercase"}, {"type": "Prepend", "prepend": "_"}],
    },
    "strip": {"type": "Strip", "strip_left": True, "strip_right": True},
    "nfkc": {"type": "NFKC"},
}


def config(
    tokens: list[dict], normalizer: str = "none", *, prefix_space: bool = False, **extra
) -> str:
    base = byte_level_base()
    pre = dict(base["pre_tokenizer"], add_prefix_space=prefix_space)
    return with_changes(
        base,
        added_tokens=tokens,
        normalizer=NORMALIZERS[normalizer],
        pre_tokenizer=pre,
        **extra,
    )


def flag_id(flags) -> str:
    return "".join(name[0].upper() if on else "-" for name, on in zip(FLAG_NAMES, flags))


ADVERSARIAL = [
    "",
    " ",
    "<tok>",
    "<tok><tok>",
    " <tok> ",
    "a<tok>b",
    "a <tok> b",
    "  <tok>  x",
    "x\n\n<tok>\t\ty",
    "\u00a0<tok>\u3000",
    "\u2003<tok>\u0085",
    "\u200b<tok>\u200b",
    "<TOK>",
    "<Tok> <tOK>",
    "<to<tok>k>",
    "<<tok>>",
    "<tok",
    "tok>",
    "[X]",
    "[x]",
    "a[X]b",
    "[X][X]",
    "[[X]]",
    " [X] ",
    "hello",
    "Hello",
    "HELLO",
    "hellohello",
    "hello world",
    "say hello!",
    "xhello",
    "hellox",
    "hello_",
    "_hello",
    "héllo",
    "éhello",
    "helloé",
    "hello1",
    "1hello",
    "hello\u0301",
    "\u0301hello",
    "hello\u200dx",
    "hel<tok>lo",
    " sp",
    "sp",
    "  sp",
    "   sp  ",
    "a sp b",
    "asp",
    "a  sp",
    " spé",
    " sp sp sp",
    "\u00a0sp",
    " SP",
    "é",
    "ée",
    "e\u0301",
    "café",
    "é é",
    "É",
    "éé",
    "x é y",
    "<tok> hello [X] sp é",
    "\n<tok>\n",
    "\t[X]\t",
    "İ<tok>",
    "Σ hello Σ",
    "<Mixed>",
    "<mixed>",
    "<MIXED> x",
    "▁hello",
    "_hello",
    "▁<tok>",
    "x▁[X]",
    "<tok>hello<tok>",
    "hello<tok>hello",
    "hello [X]hello",
    "日本hello語",
    "hello123<tok>456",
    "🙂<tok>🙂 hello🙂",
    "Hello, hello! It's <tok>'s turn; [X]'ll do.",
    "<tok> sp",
    "[X]  sp",
    "hello sp",
    "<tok>\u00a0sp",
    " sp<tok>",
    "İ",
    "İİ x",
    "i\u0307",
    "<tok>İ[X]",
]


# ---------------------------------------------------------------------------------------------
# Every flag combination, with each normalizer


@pytest.mark.parametrize("normalizer", sorted(NORMALIZERS))
@pytest.mark.parametrize("flags", ALL_FLAGS, ids=flag_id)
def test_flag_combination(flags, normalizer):
    """All six tokens share one flag combination."""
    tokens = [added(c, flags, 2000 + i) for i, c in enumerate(TOKEN_CONTENTS)]
    pair = pair_from_json(config(tokens, normalizer))
    assert_agree(pair, ADVERSARIAL)
    _assert_same_ids_and_vocab(pair, TOKEN_CONTENTS, extra_ids=10)


def _mixed_tokens(seed: int) -> list[dict]:
    rng = random.Random(seed)
    return [added(c, rng.choice(ALL_FLAGS), 2000 + i) for i, c in enumerate(TOKEN_CONTENTS)]


MIXED_SEEDS = list(range(12))


@pytest.mark.parametrize("normalizer", sorted(NORMALIZERS))
@pytest.mark.parametrize("seed", MIXED_SEEDS)
def test_mixed_flags(seed, normalizer):
    """Each token with its own (seeded random) flags, and a prefix space on half the seeds."""
    tj = config(_mixed_tokens(seed), normalizer, prefix_space=seed % 2 == 1)
    assert_agree(pair_from_json(tj), ADVERSARIAL)


def test_flag_details_by_hand():
    """Cases spelled out in the format notes: lstrip over NBSP/U+2003 but not U+200B,
    single_word next to é and _, no retry after a rejected single_word match."""
    tokens = [
        added("<L>", (False, False, False, True, False)),
        added("<R>", (False, False, False, False, True)),
        added("<LR>", (True, False, False, True, True)),
        added("ab", (False, False, True, False, False)),
        added("abc", (False, False, True, False, False)),
        added("cd", (False, True, True, True, True)),
    ]
    texts = [
        "x  <L>  y",
        "x\u00a0\u2003<L>",
        "x\u200b<L>",
        "<R>\u00a0\u2003 y",
        "<R>\u200by",
        " \t<LR>\n ",
        "<L><L>",
        "  <L>  <L>  ",
        "<R>  <R>  ",
        "<R> <L>",
        "<LR> <LR> <LR>",
        "ab",
        "abc",
        "éab",
        "ab_",
        "_ab",
        "ab ab",
        "abcab",
        "xabc abc",
        "abc-ab",
        "ab\u0301",
        "ab\u200d",
        "1ab",
        " cd ",
        "acd",
        "cd cd",
        "cdcd",
        "ab cd",
    ]
    for normalizer in sorted(NORMALIZERS):
        assert_agree(pair_from_json(config(tokens, normalizer)), texts)


# ---------------------------------------------------------------------------------------------
# Overlapping and nested contents

OVERLAP_CONTENTS = ["<a>", "<a><b>", "a>", "<b>", "b", "<a", "><", "<A>"]
OVERLAP_TEXTS = [
    "<a><b>",
    "<a><b",
    "<a>",
    "a>",
    "<a><a><b>",
    "<a<a>>",
    "x<a><b>y",
    "<a><b><b>",
    "<a>a><b>",
    "<<a>>",
    "<a>b",
    "bbb",
    "abab",
    "<A><B>",
    "<A>",
    "a> <a> <a><b> b",
    "><><",
    "<a ><b>",
    " <a><b> ",
    "<ab>",
    "<a>\n<b>",
    "<a><b>a>",
]


def _overlap_tokens(pattern: str) -> list[dict]:
    """pattern: one letter per content: n = normalized, r = raw, s = special raw, S = special
    normalized, w = single_word raw, l = lstrip+rstrip raw."""
    table = {
        "n": (False, True, False, False, False),
        "r": (False, False, False, False, False),
        "s": (True, False, False, False, False),
        "S": (True, True, False, False, False),
        "w": (False, False, True, False, False),
        "l": (False, False, False, True, True),
    }
    return [added(c, table[p], 3000 + i) for i, (c, p) in enumerate(zip(OVERLAP_CONTENTS, pattern))]


OVERLAP_PATTERNS = [
    "rrrrrrrr",
    "nnnnnnnr",
    "srnrsrnr",
    "nrrnrnrs",
    "SnSnSnSn",
    "wwwrrlln",
    "lrlrlrls",
]


@pytest.mark.parametrize("normalizer", ["none", "lowercase", "prepend"])
@pytest.mark.parametrize("pattern", OVERLAP_PATTERNS)
def test_overlapping_contents(pattern, normalizer):
    tokens = _overlap_tokens(pattern)
    if normalizer == "lowercase" and pattern[0] in "nS" and pattern[7] in "nS":
        pytest.skip("<a> and <A> would both match <a> (see test_same_pattern_is_refused)")
    assert_agree(pair_from_json(config(tokens, normalizer)), OVERLAP_TEXTS)


def test_same_pattern_is_refused():
    """Two normalized tokens whose normalized forms coincide: tokenizers picks one of them by
    hash order at every match, and batchtok refuses the file (documented refusal)."""
    flags = (False, True, False, False, False)
    tj = config([added("<A>", flags), added("<a>", flags)], "lowercase")
    tokenizers.Tokenizer.from_str(tj)  # the oracle loads it
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(tj)
    assert info.value.path.startswith("added_tokens")


# ---------------------------------------------------------------------------------------------
# Ids: reuse of model ids, ids in the file that the library does not honour


def _assert_same_ids_and_vocab(pair, contents, extra_ids=40) -> None:
    ours, ref = pair
    for content in contents:
        assert ours.token_to_id(content) == ref.token_to_id(content), content
    for with_added in (True, False):
        assert ours.get_vocab_size(with_added) == ref.get_vocab_size(with_added_tokens=with_added)
    size = ref.get_vocab_size()
    for token_id in list(range(size + extra_ids)) + [2**31, 2**32 - 1]:
        assert ours.id_to_token(token_id) == ref.id_to_token(token_id), token_id
    assert ours.get_vocab() == ref.get_vocab()


def test_tokens_equal_to_model_vocab_entries():
    flags_list = [
        (False, False, False, False, False),
        (True, False, False, False, False),
        (False, True, False, False, False),
        (True, True, True, True, True),
    ]
    all_contents = ["hello", "Hello", "Ġthe", "ing", "a", "é", "Ã©", "<", "[X]", "fresh"]
    for flags in flags_list:
        for normalizer in ("none", "lowercase"):
            contents = all_contents
            if normalizer == "lowercase" and flags[1]:
                # "hello" and "Hello" would both match "hello" (see test_same_pattern_is_refused)
                contents = [c for c in contents if c != "Hello"]
            tokens = [added(c, flags, 7) for c in contents]
            pair = pair_from_json(config(tokens, normalizer))
            _assert_same_ids_and_vocab(pair, contents)
            texts = ["hello Hello", "Ġthe the ing", "a é Ã©", "<[X]>", "fresh hello", "é"]
            assert_agree(pair, texts + ADVERSARIAL[:30])
            assert_agree(pair, [])
            for ids in ([165, 353], [1065, 640, 2000], [2000, 2001, 2002, 9999]):
                assert not compare_decode(pair, ids), compare_decode(pair, ids)


ID_LAYOUTS = {
    "gaps": [("<g1>", 2005), ("<g2>", 2010), ("<g3>", 2011)],
    "below_vocab_size": [("<low1>", 5), ("<low2>", 17), ("<low3>", 1999)],
    "duplicate_ids": [("<d1>", 2000), ("<d2>", 2000), ("<d3>", 2001), ("<d4>", 2001)],
    "descending": [("<z1>", 2003), ("<z2>", 2002), ("<z3>", 2001), ("<z4>", 2000)],
    "same_content_twice": [("<twice>", 2000), ("<other>", 2001), ("<twice>", 2002)],
    "empty_content": [("", 2000), ("<after_empty>", 2001)],
    "model_token_wrong_id": [("hello", 2000), ("<new>", 3), ("Hello", 640)],
}


@pytest.mark.parametrize("layout", sorted(ID_LAYOUTS))
def test_file_ids_are_not_trusted(layout):
    entries = ID_LAYOUTS[layout]
    for special in (False, True):
        flags = (special, not special, False, False, False)
        tokens = [added(c, flags, i) for c, i in entries]
        pair = pair_from_json(config(tokens))
        contents = [c for c, _ in entries if c]
        _assert_same_ids_and_vocab(pair, contents)
        texts = [" ".join(contents), "".join(contents)] + [f"x{c}y" for c in contents]
        assert_agree(pair, texts)


DUPLICATE_FLAG_VARIANTS = [
    [(True, False, False, False, False), (False, False, False, False, False)],
    [(False, False, False, False, False), (True, False, False, False, False)],
    [(True, False, False, False, False), (False, True, False, False, False)],
    [(False, True, False, False, False), (True, False, False, False, False)],
    [(False, False, False, True, True), (False, False, True, False, False)],
    [(False, False, True, False, False), (False, False, False, True, True)],
]
DUPLICATE_TEXTS = [" <dup> ", "x<dup>y", "<DUP>", "a <DUP> b", "<dup><dup>"]


def test_same_content_with_different_flags():
    """A second entry for the same content keeps the first id and replaces the flags."""
    for first, second in DUPLICATE_FLAG_VARIANTS:
        for normalizer in ("none", "lowercase"):
            tokens = [added("<dup>", first, 2000), added("<dup>", second, 2001)]
            pair = pair_from_json(config(tokens, normalizer))
            _assert_same_ids_and_vocab(pair, ["<dup>"])
            assert_agree(pair, DUPLICATE_TEXTS)


@pytest.mark.parametrize(
    "first,second",
    DUPLICATE_FLAG_VARIANTS,
    ids=[f"{flag_id(a)}_then_{flag_id(b)}" for a, b in DUPLICATE_FLAG_VARIANTS],
)
def test_same_content_with_different_flags_encode_special_tokens(first, second):
    """tokenizers decides "special" for encode_special_tokens by content: once a content was
    registered as special, a later non-special entry for it does not make it matchable."""
    for normalizer in ("none", "lowercase"):
        tokens = [added("<dup>", first, 2000), added("<dup>", second, 2001)]
        ours, ref = fresh_pair(config(tokens, normalizer))
        ours.encode_special_tokens = ref.encode_special_tokens = True
        assert_agree((ours, ref), DUPLICATE_TEXTS)


def test_fresh_ids_collide_with_model_ids_after_a_hole():
    """Vocab size counts entries, so with holes in the model ids a fresh added id can land on
    an existing model id; the added token then wins for id -> token and content -> id."""
    vocab = {"a": 0, "b": 1, "c": 4, "d": 5, "ab": 6, "cd": 8}
    model = dict(byte_level_base()["model"], vocab=vocab, merges=[["a", "b"], ["c", "d"]])
    for flags in [(False, False, False, False, False), (True, False, False, False, False)]:
        tokens = [added(c, flags, 100 + i) for i, c in enumerate(["<x>", "<y>", "<z>", "<w>"])]
        tj = json.dumps(
            {
                "version": "1.0",
                "truncation": None,
                "padding": None,
                "added_tokens": tokens,
                "normalizer": None,
                "pre_tokenizer": None,
                "post_processor": None,
                "decoder": None,
                "model": model,
            }
        )
        pair = pair_from_json(tj)
        _assert_same_ids_and_vocab(
            pair, ["a", "b", "c", "d", "ab", "cd", "<x>", "<y>", "<z>", "<w>"]
        )
        assert_agree(pair, ["abcd", "<x>c<y>d<z>", "cd<w>cd", "dcba", "<w><z><y><x>"])
        for ids in ([4, 5, 6, 7, 8], list(range(12))):
            assert not compare_decode(pair, ids), compare_decode(pair, ids)


EMPTYING_NORMALIZERS = {
    "strip": (
        {"type": "Strip", "strip_left": True, "strip_right": True},
        [" ", "\u3000"],
    ),
    "replace_x": (
        {"type": "Replace", "pattern": {"String": "x"}, "content": ""},
        ["x", "xx", "<x>"],
    ),
}


@pytest.mark.parametrize("name", sorted(EMPTYING_NORMALIZERS))
@pytest.mark.parametrize("count", [1, 2])
@pytest.mark.parametrize("special", [False, True])
def test_content_that_normalizes_to_nothing_splits_every_char(name, count, special):
    """A normalized token whose content the normalizer turns into "": tokenizers' automaton
    then has an empty pattern, which matches at every byte offset, so every char becomes a
    fragment of its own; an offset inside a multi-byte char makes tokenizers panic
    ("AddedVocabulary bad split"), an EncodeError here. With encode_special_tokens a special
    one is text like the others, and nothing is split."""
    normalizer, contents = EMPTYING_NORMALIZERS[name]
    flags = (special, True, False, False, False)
    tokens = [added(c, flags, 3000 + i) for i, c in enumerate(contents[:count])]
    tokens.append(added("b a", (False, False, False, False, False), 3100))  # a raw one beside
    tj = with_changes(byte_level_base(), added_tokens=tokens, normalizer=normalizer)
    ours, ref = pair_from_json(tj)
    texts = ["", "a", "ab c", "hello world", "x y", "b a b", "\u00e9", "a \u00e9", "xx"]
    assert_agree((ours, ref), texts)
    ours.encode_special_tokens = ref.encode_special_tokens = True
    try:
        assert_agree((ours, ref), texts)
    finally:
        ours.encode_special_tokens = ref.encode_special_tokens = False


def test_an_emptied_token_beside_other_normalized_ones_is_refused():
    """There tokenizers' matcher loops without end on some texts ("a" with a token "ab"
    exhausts memory), so batchtok refuses the file, naming the emptied token."""
    flags = (False, True, False, False, False)
    tokens = [added(" ", flags, 3000), added("ab", flags, 3001)]
    normalizer = EMPTYING_NORMALIZERS["strip"][0]
    tj = with_changes(byte_level_base(), added_tokens=tokens, normalizer=normalizer)
    tokenizers.Tokenizer.from_str(tj)  # it loads there (encoding "a" is not tried here)
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(tj)
    assert info.value.path == "added_tokens" and info.value.value == " "


# ---------------------------------------------------------------------------------------------
# encode_special_tokens


def fresh_pair(tokenizer_json: str) -> tuple[Tokenizer, tokenizers.Tokenizer]:
    """Uncached instances, for tests that change a runtime flag."""
    return Tokenizer.from_str(tokenizer_json), tokenizers.Tokenizer.from_str(tokenizer_json)


@pytest.mark.parametrize("normalizer", sorted(NORMALIZERS))
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 4, 5])
def test_encode_special_tokens(seed, normalizer):
    rng = random.Random(seed)
    tokens = []
    for i, c in enumerate(TOKEN_CONTENTS):
        special, normalized, single_word, lstrip, rstrip = rng.choice(ALL_FLAGS)
        tokens.append(added(c, (i % 2 == 0, normalized, single_word, lstrip, rstrip), 2000 + i))
    ours, ref = fresh_pair(config(tokens, normalizer))
    ours.encode_special_tokens = ref.encode_special_tokens = True
    assert ours.encode_special_tokens and ref.encode_special_tokens
    assert_agree((ours, ref), ADVERSARIAL)
    # and back off again
    ours.encode_special_tokens = ref.encode_special_tokens = False
    assert_agree((ours, ref), ADVERSARIAL[:40])


# ---------------------------------------------------------------------------------------------
# Hypothesis

# The shared pieces plus this module's token contents, so that texts hit the added tokens.
TEXT_PIECES = INTERESTING + TOKEN_CONTENTS + OVERLAP_CONTENTS


def _preset_configs() -> list[str]:
    out = []
    for seed in range(4):
        for normalizer in sorted(NORMALIZERS):
            out.append(config(_mixed_tokens(100 + seed), normalizer, prefix_space=seed == 3))
    for pattern in OVERLAP_PATTERNS[:4]:
        out.append(config(_overlap_tokens(pattern), "prepend"))
    return out


PRESETS = _preset_configs()


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(index=st.integers(0, len(PRESETS) - 1), text=text_strategy(TEXT_PIECES))
def test_property_presets(index, text):
    problems = compare_text(pair_from_json(PRESETS[index]), text)
    assert not problems, "\n".join(problems)


_SPECIAL_PAIRS: dict[int, tuple] = {}


@settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(index=st.integers(0, len(PRESETS) - 1), text=text_strategy(TEXT_PIECES))
def test_property_encode_special_tokens(index, text):
    pair = _SPECIAL_PAIRS.get(index)
    if pair is None:
        pair = _SPECIAL_PAIRS[index] = fresh_pair(PRESETS[index])
        pair[0].encode_special_tokens = pair[1].encode_special_tokens = True
    problems = compare_text(pair, text)
    assert not problems, "\n".join(problems)
