"""The char cut of byte-level BPE (``CharCut`` in batchtok/models/bpe_boundary.py): a long
byte-level word is cut between two chars where no vocab token can stand across, and each part
is merged on its own.

Proven over random byte-level vocabularies whose merges join bytes across char boundaries and
leave partial chars in tokens (against the oracle, and against the merge of the whole word),
and on the real byte-level files over multilingual and adversarial text.
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

import batchtok
from batchtok.models.bpe import _CUT_MIN
from batchtok.models.bpe_boundary import CharCut
from batchtok.utils.byte_level import BYTE_TO_CHAR, byte_level_map
from tests.models.test_bpe_boundary import bpe_model
from tests.support import adversarial, corpora, tier
from tests.support.models import assert_ids_and_decode, model_file
from tests.support.oracle import assert_same_ids, pair_for, pair_from_json
from tests.support.tier import long_examples

# Chars of three and four bytes (the ones cut), and some of one and two.
WIDE = ["中", "文", "的", "是", "ก", "ข", "あ", "い", "한", "😀"]
ALPHABET = WIDE + ["a", "b", "é", " "]
# One word per text (no regex split), so words get long; and its decoder.
BYTE_LEVEL = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "trim_offsets": True,
    "use_regex": False,
}
BYTE_LEVEL_DECODER = {
    "type": "ByteLevel",
    "add_prefix_space": True,
    "trim_offsets": True,
    "use_regex": True,
}
WORD = st.lists(st.sampled_from(ALPHABET), min_size=1, max_size=8).map("".join)


def merge_everywhere(word: list[str], a: str, b: str) -> list[str]:
    out: list[str] = []
    for s in word:
        if out and out[-1] == a and s == b:
            out[-1] = a + b
        else:
            out.append(s)
    return out


def learn_merges(draw, symbols: list[list[str]], tokens: list[str], rounds: int) -> list[list[str]]:
    """Up to ``rounds`` merges, each picked among the adjacent symbols of ``symbols`` (both of
    them ``tokens``) and applied to them; each merged token is added to ``tokens``."""
    merges: list[list[str]] = []
    known = set(tokens)
    for _ in range(draw(st.integers(0, rounds))):
        pairs = sorted(
            {(a, b) for w in symbols for a, b in zip(w, w[1:]) if a in known and b in known}
        )
        if not pairs:
            break
        a, b = draw(st.sampled_from(pairs))
        merges.append([a, b])
        if a + b not in known:
            tokens.append(a + b)
            known.add(a + b)
        symbols[:] = [merge_everywhere(w, a, b) for w in symbols]
    return merges


@st.composite
def byte_level_files(draw) -> tuple[str, list[str]]:
    """(a byte-level BPE tokenizer.json, its training words): merges picked among the
    adjacent symbols of random words, so tokens join bytes across chars and hold partial
    chars; sometimes extra tokens no merge makes, ranks shuffled, ignore_merges."""
    words = draw(st.lists(WORD, min_size=1, max_size=6))
    symbols = [list(byte_level_map(w)) for w in words]
    tokens = list(BYTE_TO_CHAR)
    merges = learn_merges(draw, symbols, tokens, 40)
    for word in draw(st.lists(st.sampled_from(words), max_size=3)):
        mapped = byte_level_map(word)
        start = draw(st.integers(0, len(mapped) - 1))
        extra = mapped[start : draw(st.integers(start + 1, len(mapped)))]
        if extra not in tokens:
            tokens.append(extra)
    if draw(st.booleans()):
        merges = draw(st.permutations(merges))
    model = bpe_model(
        {t: i for i, t in enumerate(tokens)}, merges, ignore_merges=draw(st.booleans())
    )
    return model_file(model, BYTE_LEVEL, BYTE_LEVEL_DECODER), words


def _texts(words: list[str]):
    """Texts built from the training words (so merges fire) and loose chars."""
    part = st.sampled_from(words + ALPHABET)
    return st.lists(st.lists(part, min_size=1, max_size=24).map("".join), min_size=1, max_size=4)


def whole_merge(model, word: str) -> list[int]:
    """What BPE gives ``word`` (every char a vocab token) without any cut."""
    if model.ignore_merges and word in model.vocab:
        return [model.vocab[word]]
    return model._merge([model.vocab[c] for c in word])


@long_examples(400)
@given(data=st.data(), file=byte_level_files())
def test_random_vocabularies_match_the_oracle(data, file):
    text, words = file
    assert_ids_and_decode(pair_from_json(text), data.draw(_texts(words)))


@long_examples(2000)
@given(data=st.data(), file=byte_level_files())
def test_a_cut_word_merges_as_the_whole_word(data, file):
    """The proof itself, on many more vocabularies than the oracle can check: every cut
    word's ids equal the merges of the whole word, and its parts give the word back."""
    text, words = file
    model = batchtok.Tokenizer.from_str(text).model
    cut = CharCut.for_model(model)
    assert cut is not None
    for word in map(byte_level_map, data.draw(_texts(words))):
        parts = cut.split(word)
        assert "".join(parts) == word
        assert model.tokenize(word) == whole_merge(model, word)


def _bytes_of(text: str) -> list[str]:
    return list(byte_level_map(text))


def _pairwise_file(merges: list[tuple[str, str]], **fields) -> str:
    tokens = list(BYTE_TO_CHAR)
    for a, b in merges:
        tokens.append(a + b)
    model = bpe_model({t: i for i, t in enumerate(tokens)}, [list(m) for m in merges], **fields)
    return model_file(model, BYTE_LEVEL, BYTE_LEVEL_DECODER)


def _char_merges(char: str) -> list[tuple[str, str]]:
    """Merges that build ``char`` from its bytes, left to right."""
    b = _bytes_of(char)
    return [("".join(b[:i]), b[i]) for i in range(1, len(b))]


def test_a_token_ending_mid_char_keeps_the_boundary_whole():
    """ "的" followed by the first byte of "是" is a token: 的|是 must stay whole (and 中|文,
    which no token joins, is cut)."""
    merges = _char_merges("的") + _char_merges("中") + _char_merges("文")
    merges.append((byte_level_map("的"), _bytes_of("是")[0]))
    text = _pairwise_file(merges)
    ours, ref = pair_from_json(text)
    cut = CharCut.for_model(ours.model)
    word = byte_level_map("中文的是" * 3)
    parts = cut.split(word)
    assert byte_level_map("的是") in parts
    assert byte_level_map("中") in parts and byte_level_map("文") in parts
    assert_ids_and_decode((ours, ref), ["中文的是" * 8, "的是" * 12, "是的" * 12])


def test_a_token_starting_mid_char_keeps_the_boundary_whole():
    """The last byte of "中" followed by "文" is a token: 中|文 must stay whole."""
    tail = _bytes_of("中")[-1]
    merges = [*_char_merges("文"), (tail, byte_level_map("文"))]
    ours, ref = pair_from_json(_pairwise_file(merges))
    parts = CharCut.for_model(ours.model).split(byte_level_map("的中文" * 4))
    assert byte_level_map("中文") in "".join(p + "|" for p in parts)
    assert_ids_and_decode((ours, ref), ["的中文" * 9, "中文" * 12])


@pytest.mark.parametrize("ignore_merges", [False, True])
def test_ignore_merges_looks_up_the_whole_word_never_a_part(ignore_merges):
    """ "中文" is a token no merge makes (merges join bytes only inside each char) and "中文的"
    one that a cut part could equal: with ignore_merges the lookup applies to the whole word
    only; a part is always merged."""
    merges = _char_merges("中") + _char_merges("文") + _char_merges("的")
    tokens = list(BYTE_TO_CHAR) + ["".join(_bytes_of(c)[:i]) for c in "中文的" for i in (2, 3)]
    tokens += [byte_level_map("中文"), byte_level_map("中文的")]
    model = bpe_model(
        {t: i for i, t in enumerate(dict.fromkeys(tokens))},
        [list(m) for m in merges],
        ignore_merges=ignore_merges,
    )
    ours, ref = pair_from_json(model_file(model, BYTE_LEVEL, BYTE_LEVEL_DECODER))
    texts = ["中文", "中文的", "中文的" * 5, "是中文的是" * 3, "中文的是" * 6]
    assert_ids_and_decode((ours, ref), texts)


def test_a_vocabulary_without_all_byte_chars_is_not_cut():
    model = bpe_model({"a": 0, "b": 1, "ab": 2}, [["a", "b"]])
    ours = batchtok.Tokenizer.from_str(model_file(model))
    assert CharCut.for_model(ours.model) is None


BYTE_LEVEL_FILES = ["llama3", "gpt4o", "qwen3", "gpt35turbo"]
# Multilingual chars per language in the default tier for the proof (the full tier takes every
# document); the oracle sees a smaller sample (tests/conformance/ runs it over every corpus).
LANGUAGE_CHARS = 4_000
ORACLE_DOCS = 60


def _words(tokenizer, docs) -> set[str]:
    """The model's words (mapped pre-tokens) of ``docs``."""
    return {
        tokenizer._piece_map(piece)
        for doc in docs
        for fragment, token_id, at_start in tokenizer._fragments(doc)
        if token_id is None
        for piece in tokenizer._split(fragment, at_start)
    }


@pytest.mark.parametrize("name", BYTE_LEVEL_FILES)
def test_real_files_cut_words_merge_as_whole_words(name):
    """Every long multilingual and adversarial word of a real file, cut, has the ids of the
    merges of the whole word (and many are cut); a sample's ids equal the oracle's."""
    ours, ref = pair_for(name)
    model = ours.model
    cut = CharCut.for_model(model)
    assert cut is not None
    docs = adversarial.adversarial_strings()
    for language, language_docs in corpora.multilingual_docs().items():
        docs += tier.docs(language_docs, LANGUAGE_CHARS, f"char-cut:{language}")
    long_words = [w for w in _words(ours, docs) if len(w) >= _CUT_MIN and cut.applies(w)]
    was_cut = 0
    for word in long_words:
        was_cut += len(cut.split(word)) > 1
        assert model.tokenize(word) == whole_merge(model, word), word
    assert was_cut > len(long_words) // 4 > 10
    sample = corpora.sample_docs("multilingual", ORACLE_DOCS, 2000) + adversarial.SPECIAL_TEXT
    assert_same_ids(ours, ref, sample, add_special_tokens=False)
