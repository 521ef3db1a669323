"""The pair cut of BPE (``PairCut`` in batchtok/models/bpe_boundary.py): a word of a
vocabulary that is not byte-level is cut beside a digit, punctuation or symbol char where no
vocab token holds the two chars side by side, and each part is merged on its own.

Proven over random vocabularies whose merges are learnt from random words (so tokens hold the
pairs the texts have, and some pairs none), with tokens no merge makes, shuffled ranks,
ignore_merges, unknown chars and byte fallback: against the oracle, and against the merge of
the whole word on many more vocabularies; then on the real SentencePiece files.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import batchtok
from batchtok.models.bpe import _PAIR_CUT_MIN
from batchtok.models.bpe_boundary import PairCut
from tests.models.test_bpe_boundary import bpe_model
from tests.models.test_bpe_char_cut import learn_merges, whole_merge
from tests.support import adversarial, corpora, tier
from tests.support.models import assert_ids_and_decode, model_file
from tests.support.oracle import assert_same_ids, pair_for, pair_from_json
from tests.support.tier import long_examples

MARK = "\u2581"
# letters, the mark, and chars the cut looks beside (punctuation, a digit, a symbol)
ALPHABET = ["a", "b", "c", "d", MARK, "\u00e9", "\u4e2d", ",", "(", "1", "\u00a7"]
CANDIDATES = ",(1\u00a7"
WORD = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=7).map("".join)


@st.composite
def pair_files(draw) -> tuple[str, list[str]]:
    """(a BPE tokenizer.json without a pre-tokenizer, its training words): base chars (not
    always all of the alphabet), merges picked among adjacent symbols of the words, extra
    tokens no merge makes (which hold pairs no merge joins), ranks sometimes shuffled, and
    random ignore_merges / unk / fuse_unk / byte fallback."""
    words = draw(st.lists(WORD, min_size=1, max_size=6))
    base = draw(st.lists(st.sampled_from(ALPHABET), min_size=2, unique=True))
    tokens = list(base)
    symbols = [[c for c in w] for w in words]
    merges = learn_merges(draw, symbols, tokens, 30)
    for word in draw(st.lists(st.sampled_from(words), max_size=3)):
        start = draw(st.integers(0, len(word) - 1))
        extra = word[start : draw(st.integers(start + 1, len(word)))]
        if extra not in tokens and all(c in base for c in extra):
            tokens.append(extra)
    if draw(st.booleans()):
        merges = draw(st.permutations(merges))
    with_unk = draw(st.booleans())
    byte_fallback = draw(st.booleans())
    if with_unk:
        tokens.insert(0, "<unk>")
    if byte_fallback:
        tokens += [f"<0x{b:02X}>" for b in range(256)]
    model = bpe_model(
        {t: i for i, t in enumerate(tokens)},
        merges,
        unk_token="<unk>" if with_unk else None,
        fuse_unk=draw(st.booleans()),
        byte_fallback=byte_fallback,
        ignore_merges=draw(st.booleans()),
    )
    return model_file(model), words


def _texts(words: list[str]):
    part = st.sampled_from(words + ALPHABET + ["x"])
    return st.lists(st.lists(part, min_size=1, max_size=16).map("".join), min_size=1, max_size=4)


@long_examples(400)
@given(data=st.data(), file=pair_files())
def test_random_vocabularies_match_the_oracle(data, file):
    text, words = file
    assert_ids_and_decode(pair_from_json(text), data.draw(_texts(words)))


@long_examples(2000)
@given(data=st.data(), file=pair_files())
def test_a_cut_word_merges_as_the_whole_word(data, file):
    """The proof itself, on many more vocabularies than the oracle can check: every word whose
    chars are all vocab tokens has the ids of its whole merge, and its parts give it back."""
    text, words = file
    model = batchtok.Tokenizer.from_str(text).model
    cut = PairCut.for_model(model)
    if cut is None:
        # nowhere to look: the vocab has no digit, punctuation or symbol char
        assert not any(c in model.vocab for c in CANDIDATES)
        return
    for word in data.draw(_texts(words)):
        if not all(c in model.vocab for c in word):
            continue
        parts = cut.split(word)
        assert "".join(parts) == word
        for left, right in zip(parts, parts[1:]):
            assert left[-1] + right[0] not in cut.pairs
        assert model.tokenize(word) == whole_merge(model, word)


@pytest.mark.parametrize("ignore_merges", [False, True])
def test_ignore_merges_looks_up_the_whole_word_never_a_part(ignore_merges):
    """ "ab" and "(d" are tokens no merge makes, and no token holds "b(": "ab(d" is cut into
    "ab" | "(d", each merged (to a, b and (, d), never looked up; the word "ab" alone is looked
    up whole with ignore_merges."""
    vocab = {"a": 0, "b": 1, "(": 2, "d": 3, "ab": 4, "(d": 5, "x": 6}
    model = bpe_model(vocab, [], ignore_merges=ignore_merges)
    ours, ref = pair_from_json(model_file(model))
    cut = PairCut.for_model(ours.model)
    assert "b(" not in cut.pairs and cut.split("ab(d") == ["ab", "(d"]
    assert_ids_and_decode((ours, ref), ["ab(d", "ab(dx", "xab(d", "ab(dab(d", "ab", "(d"])
    assert ours.encode_ids("ab(dx", False) == [0, 1, 2, 3, 6]
    assert ours.encode_ids("ab", False) == ([4] if ignore_merges else [0, 1])


def test_only_boundaries_beside_a_digit_punctuation_or_symbol_are_cut():
    """No token holds "ab" or "b,": the cut looks beside "," only, and leaves "ab" whole."""
    model = bpe_model({"a": 0, "b": 1, ",": 2}, [])
    cut = PairCut.for_model(batchtok.Tokenizer.from_str(model_file(model)).model)
    assert cut.split("ab,ab") == ["ab", ",", "ab"]
    assert cut.split("abab") == ["abab"]


def test_the_cut_rests_after_a_window_whose_parts_were_mostly_new():
    """A window of cut words most of whose chars had to be merged anyway turns the cut off
    for REST words; a window of repeating parts keeps it on; the ids never change."""
    ours, _ = pair_for("gemma3")
    model = ours.model
    cut = PairCut(model._pair_cut.pairs, model._pair_cut._candidates)
    cut.account(cut.WINDOW, round(cut.WINDOW * cut.MAX_MISS_SHARE))  # at the limit: kept on
    assert cut.wanted()
    cut.account(cut.WINDOW, cut.WINDOW)  # every char new
    assert [cut.wanted() for _ in range(cut.REST)] == [False] * cut.REST
    assert cut.wanted()

    words = ["\u2581PyOS_setsig(int", "\u2581x,", "\u2581(a)b", "\u2581192.168.0.1,"]
    expected = [whole_merge(model, w) for w in words]
    shared, model._pair_cut = model._pair_cut, cut  # (the loaded tokenizer is shared)
    try:
        cut.account(cut.WINDOW, cut.WINDOW)  # resting: the words go through whole
        assert [model.tokenize(w) for w in words] == expected
        assert cut._chars == 0
        cut._resting = 0  # cutting
        assert [model.tokenize(w) for w in words] == expected
        assert cut._chars > 0  # the cut words were accounted
    finally:
        model._pair_cut = shared


def test_a_byte_level_vocabulary_is_cut_by_chars_not_pairs():
    ours, _ = pair_for("llama3")
    assert ours.model._pair_cut is None and ours.model._char_cut is not None


SENTENCEPIECE_FILES = ["llama2", "gemma3"]


@pytest.mark.parametrize("name", SENTENCEPIECE_FILES)
def test_real_files_cut_words_merge_as_whole_words(name):
    """On the real files, over every corpus sample and the adversarial texts: each word BPE is
    given (the tokenizer's pieces) that is long enough to be cut has the ids of its whole
    merge; then the ids of the texts equal the oracle's."""
    ours, ref = pair_for(name)
    model = ours.model
    cut = model._pair_cut
    assert cut is not None
    texts = adversarial.SPECIAL_TEXT + [
        doc
        for kind in ("english", "code", "multilingual")
        for doc in corpora.sample_docs(kind, tier.count(300, 30), 2000, seed=3)
    ]
    checked = cut_words = 0
    for text in texts:
        for fragment, token_id, at_start in ours._fragments(text):
            if token_id is not None:
                continue
            for piece in ours._split(fragment, at_start):
                word = ours._piece_map(piece) if ours._piece_map is not None else piece
                if len(word) < _PAIR_CUT_MIN or not all(c in model.vocab for c in word):
                    continue
                checked += 1
                cut_words += len(cut.split(word)) > 1
                assert model.tokenize(word) == whole_merge(model, word), (name, word)
    assert cut_words > checked / 10, (checked, cut_words)
    assert_same_ids(ours, ref, texts, add_special_tokens=False)
