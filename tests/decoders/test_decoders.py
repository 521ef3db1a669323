"""Decoders WordPiece, BPEDecoder, CTC and Metaspace against the oracle (tokenizers 0.23.3),
alone and inside Sequence chains with ByteLevel, Replace, ByteFallback, Fuse and Strip.

Each decoder is loaded from tokenizer.json text by both libraries and given the same token
lists: token sequences the oracle produces on real text with real vocabularies (Llama-2's
``▁`` pieces and byte tokens, Llama-3's GPT-2 bytes), hand-made awkward lists and hypothesis
lists. Then whole files: a real vocabulary with its decoder swapped, ``decode(ids)`` with and
without skipping special tokens; and the refusals, each naming its JSON path.
"""

from __future__ import annotations

import functools
import json
import random

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from tests.conftest import load_pair as load_real_pair
from tests.conftest import tokenizer_json
from tests.support import adversarial, corpora
from tests.support.oracle_harness import added_token, compare_decode, load_pair

# ---------------------------------------------------------------------------------------------
# The decoders under test


def wordpiece(prefix: str = "##", cleanup: bool = True) -> dict:
    return {"type": "WordPiece", "prefix": prefix, "cleanup": cleanup}


def bpe_decoder(suffix: str = "</w>") -> dict:
    return {"type": "BPEDecoder", "suffix": suffix}


def ctc(pad_token: str = "<pad>", word_delimiter_token: str = "|", cleanup: bool = True) -> dict:
    return {
        "type": "CTC",
        "pad_token": pad_token,
        "word_delimiter_token": word_delimiter_token,
        "cleanup": cleanup,
    }


def metaspace(scheme: str | None = "always", replacement: str = "▁", **extra) -> dict:
    out = {"type": "Metaspace", "replacement": replacement, **extra}
    if scheme is not None:
        out["prepend_scheme"] = scheme
    return out


def dseq(*decoders: dict) -> dict:
    return {"type": "Sequence", "decoders": list(decoders)}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True}
BYTE_FALLBACK = {"type": "ByteFallback"}
FUSE = {"type": "Fuse"}
SPACE_TO_META = {"type": "Replace", "pattern": {"String": "▁"}, "content": " "}
STRIP_SPACE = {"type": "Strip", "content": " ", "start": 1, "stop": 0}

DECODERS: dict[str, dict] = {
    "wordpiece": wordpiece(),
    "wordpiece_no_cleanup": wordpiece(cleanup=False),
    "wordpiece_empty_prefix": wordpiece(""),
    "wordpiece_space_prefix": wordpiece(" "),
    "wordpiece_meta_prefix": wordpiece("▁", cleanup=False),
    "wordpiece_long_prefix": wordpiece("##x#"),
    "bpe": bpe_decoder(),
    "bpe_empty_suffix": bpe_decoder(""),
    "bpe_meta_suffix": bpe_decoder("▁"),
    "bpe_space_suffix": bpe_decoder(" "),
    "bpe_partial_suffix": bpe_decoder("w>"),
    "bpe_repeating_suffix": bpe_decoder("aa"),
    "ctc": ctc(),
    "ctc_no_cleanup": ctc(cleanup=False),
    "ctc_empty_pad": ctc(""),
    "ctc_empty_delimiter": ctc(word_delimiter_token=""),
    "ctc_pad_is_delimiter": ctc("|", "|"),
    "ctc_space_delimiter": ctc(word_delimiter_token=" "),
    "ctc_quote_delimiter": ctc(word_delimiter_token="'"),
    "ctc_letter_pad": ctc("a", "▁"),
    "metaspace_always": metaspace("always"),
    "metaspace_first": metaspace("first"),
    "metaspace_never": metaspace("never"),
    "metaspace_default_scheme": metaspace(None),
    "metaspace_no_split": metaspace("always", split=False),
    "metaspace_underscore_first": metaspace("first", "_", split=True),
    "metaspace_space_never": metaspace("never", " "),
    "metaspace_legacy_prefix_true": metaspace(None, add_prefix_space=True, str_rep="▁"),
    "metaspace_legacy_prefix_false": metaspace("never", add_prefix_space=False),
    # chains of the new decoders with each other and with the older ones
    "seq_metaspace_byte_fallback": dseq(metaspace("always"), BYTE_FALLBACK, FUSE),
    "seq_byte_fallback_metaspace": dseq(BYTE_FALLBACK, metaspace("first")),
    "seq_byte_fallback_metaspace_strip": dseq(BYTE_FALLBACK, metaspace("never"), STRIP_SPACE),
    "seq_replace_wordpiece": dseq(SPACE_TO_META, wordpiece()),
    "seq_wordpiece_replace": dseq(wordpiece(), SPACE_TO_META),
    "seq_fuse_wordpiece": dseq(FUSE, wordpiece()),
    "seq_bpe_byte_level": dseq(bpe_decoder("Ġ"), BYTE_LEVEL),
    "seq_byte_level_bpe": dseq(BYTE_LEVEL, bpe_decoder()),
    "seq_ctc_wordpiece": dseq(ctc(), wordpiece()),
    "seq_fuse_ctc": dseq(FUSE, ctc()),
    "seq_ctc_bpe_metaspace": dseq(ctc(), bpe_decoder(), metaspace("always")),
    "seq_nested": dseq(dseq(wordpiece(cleanup=False)), dseq(dseq(ctc("##", " ")), FUSE)),
    "seq_llama_with_metaspace": dseq(metaspace("first"), BYTE_FALLBACK, FUSE, STRIP_SPACE),
}

# Token strings each decoder treats specially, and the punctuation of the cleanup list.
INTERESTING = [
    "",
    "a",
    "aa",
    "x",
    "##",
    "##a",
    "####",
    "##x#",
    "</w>",
    "a</w>",
    "</w></w>",
    "w>",
    "▁",
    "▁▁",
    "▁a",
    "a▁",
    "_",
    "_a",
    "<pad>",
    "<pad><pad>",
    "a<pad>b",
    "<pa",
    "d>",
    "|",
    "||",
    "a|b",
    " ",
    "  ",
    ".",
    " .",
    ",",
    " ,",
    "?",
    " ?",
    "!",
    " !",
    "'",
    " ' ",
    " 'm",
    "n't",
    " n't",
    "'s",
    " 's",
    "'ve",
    " 've",
    "'re",
    " 're",
    "'m",
    "do",
    "not",
    " do not",
    "do not",
    "<0x41>",
    "<0xE2>",
    "<0x82>",
    "<0xAC>",
    "<0xC3>",
    "Ġ",
    "Ġhello",
    "Ċ",
    "é",
    "日本",
    "\u0301",
    "<s>",
    "</s>",
]


@functools.cache
def decoder_pair(decoder_json: str):
    """(batchtok decoder, oracle decoder), both loaded from the same tokenizer.json text."""
    ours, ref = load_pair(minimal_file(json.loads(decoder_json)))
    return ours.decoder, ref.decoder


def minimal_file(decoder: dict | None, vocab: dict[str, int] | None = None, added=()) -> str:
    model = {"type": "BPE", "vocab": vocab or {"a": 0}, "merges": []}
    return json.dumps(
        {
            "version": "1.0",
            "truncation": None,
            "padding": None,
            "added_tokens": list(added),
            "normalizer": None,
            "pre_tokenizer": None,
            "post_processor": None,
            "decoder": decoder,
            "model": model,
        },
        ensure_ascii=False,
    )


def _outcome(fn):
    try:
        return "ok", fn()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException:  # noqa: BLE001 (pyo3 panics derive from BaseException)
        return "error", None


def decode_problems(name: str, token_lists) -> list[str]:
    """Where ``"".join(decode_chain(tokens))`` differs from the oracle's ``decode(tokens)``."""
    ours, ref = decoder_pair(json.dumps(DECODERS[name], ensure_ascii=False))
    problems = []
    for tokens in token_lists:
        want = _outcome(lambda tokens=tokens: ref.decode(list(tokens)))
        got = _outcome(lambda tokens=tokens: "".join(ours.decode_chain(list(tokens))))
        if got != want:
            problems.append(f"{name} {tokens[:20]!r}: batchtok {got!r} oracle {want!r}")
    return problems


HAND_MADE = [
    [],
    [""],
    ["", ""],
    ["##"],
    ["##un", "aff", "##able", "."],
    ["##uelo", "Ara", "##új", "##o", "No", "##guera"],
    ["I", "do", "not", "think", "it", "'", "s", "fine", ",", "is", "n't", "it", "?"],
    ["I", "'", "m", "here", " ' ", "'m", "'ve", "'re", "!"],
    ["hel", "lo</w>", "world</w>"],
    ["a</w>b</w>", "</w>", "x</w>"],
    ["</w>"],
    "<pad> <pad> h e e l l <pad> l o o o <pad> <pad> | <pad> w o o o r <pad> l l d <pad>".split(),
    ["A", "|", "|", "<pad>", "M", "A", "N", "|", "'", "S", "|", "I", "T", "'", "S", "|", "."],
    ["|", "|", "<pad>", "|"],
    ["<pad>", "<pad>"],
    ["a", "<pad>", "a", "a", "|", "a"],
    ["▁Hello", "▁world", "▁"],
    ["▁", "▁▁", "▁a▁b", "c▁"],
    ["Hello", "▁▁world", "▁"],
    ["<s>", "▁Hello", "</s>"],
    ["_Hello", "_world", "▁x"],
    ["<0xE2>", "<0x82>", "<0xAC>", "▁euro"],
    ["▁<0xE2>", "<0x82>", "<0xAC>"],
    ["<0xE2>", "▁", "<0x82>"],
    ["Ġhello", "Ġ.", "Ġ,", "Ġn't", "Ġ'", "Ġs"],
    [" .", " ,", " ' ", " n't", " do not", " 's"],
    [" do", " not", " do not do not"],
]


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_hand_made_token_lists(name):
    problems = decode_problems(name, HAND_MADE)
    assert not problems, "\n".join(problems[:10])


# ---------------------------------------------------------------------------------------------
# Token lists from real vocabularies


def _text_slices() -> list[str]:
    english = [d[:1500] for d in corpora.english_docs()[:12]]
    multilingual = [d[:600] for docs in corpora.multilingual_docs().values() for d in docs[:2]]
    code = [d[:800] for d in corpora.code_docs()[:4]]
    return english + multilingual + code + adversarial.adversarial_strings(max_chars=200)


@functools.cache
def real_token_lists(name: str) -> list[list[str]]:
    """The oracle's tokens for real text, then random draws from the vocabulary."""
    _, ref = load_real_pair(name)
    lists = [e.tokens for e in ref.encode_batch(_text_slices())]
    vocab = sorted(ref.get_vocab())
    rng = random.Random(5)
    lists += [rng.sample(vocab, rng.randint(1, 12)) for _ in range(200)]
    return lists


@pytest.mark.parametrize("vocabulary", ["llama2", "llama3"])
def test_real_token_lists(vocabulary):
    lists = real_token_lists(vocabulary)
    problems = [p for name in sorted(DECODERS) for p in decode_problems(name, lists)]
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:10])


# ---------------------------------------------------------------------------------------------
# Hypothesis

TOKEN = st.one_of(st.sampled_from(INTERESTING), st.text(max_size=5))


@settings(max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(DECODERS)), tokens=st.lists(TOKEN, max_size=12))
def test_property_token_lists(name, tokens):
    problems = decode_problems(name, [tokens])
    assert not problems, "\n".join(problems)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    prefix=st.sampled_from(["##", "", " ", "'", "▁", "a"]) | st.text(max_size=3),
    suffix=st.sampled_from(["</w>", "", " ", "▁", "a"]) | st.text(max_size=3),
    pad=st.sampled_from(["<pad>", "", "|", " ", "a"]) | st.text(max_size=3),
    delimiter=st.sampled_from(["|", "", " ", "'", "▁"]) | st.text(max_size=3),
    cleanup=st.booleans(),
    replacement=st.sampled_from(["▁", " ", "a", "#"]) | st.characters(exclude_categories=["Cs"]),
    scheme=st.sampled_from(["always", "first", "never"]),
    tokens=st.lists(TOKEN, max_size=10),
)
def test_property_fields(prefix, suffix, pad, delimiter, cleanup, replacement, scheme, tokens):
    """Arbitrary field values, not only the usual ones."""
    for decoder in (
        wordpiece(prefix, cleanup),
        bpe_decoder(suffix),
        ctc(pad, delimiter, cleanup),
        metaspace(scheme, replacement, split=cleanup),
    ):
        ours, ref = decoder_pair(json.dumps(decoder, ensure_ascii=False))
        assert "".join(ours.decode_chain(list(tokens))) == ref.decode(list(tokens)), decoder


# ---------------------------------------------------------------------------------------------
# Whole files: decode(ids), skipping special tokens or not


@functools.cache
def llama2_with(decoder_name: str):
    data = json.loads(tokenizer_json("llama2"))
    data["decoder"] = DECODERS[decoder_name]
    return load_pair(json.dumps(data, ensure_ascii=False))


WHOLE_FILE_DECODERS = [
    "wordpiece",
    "bpe_meta_suffix",
    "ctc",
    "metaspace_always",
    "metaspace_first",
    "metaspace_never",
    "seq_llama_with_metaspace",
    "seq_byte_fallback_metaspace_strip",
]


@pytest.mark.parametrize("name", WHOLE_FILE_DECODERS)
def test_real_file_round_trip(name):
    """Llama-2's vocabulary and specials with another decoder: the oracle's ids (with <s>),
    some with </s> and <unk> spliced in, decoded both ways."""
    pair = llama2_with(name)
    _, ref = pair
    texts = _text_slices()[:20] + ["Hello</s>world", " <s> x", "it 's n't . , ?"]
    id_lists = [e.ids for e in ref.encode_batch(texts)]
    id_lists += [[2, *ids[:30], 0, 1, 2] for ids in id_lists[:10]]
    problems = [p for ids in id_lists for p in compare_decode(pair, ids)]
    assert not problems, "\n".join(problems[:10])


SPECIALS = ["<pad>", "<s>", "|", "##s"]
SMALL_VOCAB = {t: i for i, t in enumerate(t for t in INTERESTING[1:] if t not in SPECIALS)}


@functools.cache
def small_file(name: str):
    """Awkward tokens as the vocabulary, with CTC's pad and delimiter among the specials (so
    skip_special_tokens removes them before the decoder's dedup sees them)."""
    added = [
        dict(added_token(t, special=True, normalized=False), id=len(SMALL_VOCAB) + i)
        for i, t in enumerate(SPECIALS)
    ]
    return load_pair(minimal_file(DECODERS[name], SMALL_VOCAB, added))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(sorted(DECODERS)),
    ids=st.lists(st.integers(0, len(SMALL_VOCAB) + len(SPECIALS) + 1), max_size=12),
)
def test_property_small_file_decode(name, ids):
    problems = compare_decode(small_file(name), ids)
    assert not problems, "\n".join(problems)


def test_ctc_dedup_sees_the_list_after_skipping_specials():
    """'a <pad> a' keeps both a's, but skipping the special <pad> first makes them adjacent."""
    ours, ref = small_file("ctc")
    ids = [SMALL_VOCAB["a"], len(SMALL_VOCAB), SMALL_VOCAB["a"]]
    for skip, want in ((False, "aa"), (True, "a")):
        assert ref.decode(ids, skip_special_tokens=skip) == want
        assert ours.decode(ids, skip_special_tokens=skip) == want


def test_metaspace_first_token_is_counted_after_skipping():
    ours, ref = small_file("metaspace_always")
    ids = [len(SMALL_VOCAB) + 1, SMALL_VOCAB["▁a"], SMALL_VOCAB["▁a"]]
    for skip, want in ((False, "<s> a a"), (True, "a a")):
        assert ref.decode(ids, skip_special_tokens=skip) == want
        assert ours.decode(ids, skip_special_tokens=skip) == want


# ---------------------------------------------------------------------------------------------
# Refusals: what the oracle refuses too, each naming its path; and unknown fields


def _without(decoder: dict, key: str) -> dict:
    return {k: v for k, v in decoder.items() if k != key}


BAD_DECODERS = [
    (_without(wordpiece(), "prefix"), "decoder.prefix"),
    (_without(wordpiece(), "cleanup"), "decoder.cleanup"),
    (wordpiece(cleanup="yes"), "decoder.cleanup"),
    (wordpiece(prefix=None), "decoder.prefix"),
    (_without(bpe_decoder(), "suffix"), "decoder.suffix"),
    (bpe_decoder(7), "decoder.suffix"),
    (_without(ctc(), "pad_token"), "decoder.pad_token"),
    (_without(ctc(), "word_delimiter_token"), "decoder.word_delimiter_token"),
    (_without(ctc(), "cleanup"), "decoder.cleanup"),
    (ctc(cleanup=1), "decoder.cleanup"),
    (ctc(["<pad>"]), "decoder.pad_token"),
    (metaspace("always", ""), "decoder.replacement"),
    (metaspace("always", "▁▁"), "decoder.replacement"),
    (_without(metaspace(), "replacement"), "decoder.replacement"),
    (metaspace("sometimes"), "decoder.prepend_scheme"),
    (metaspace("always", add_prefix_space=False), "decoder.add_prefix_space"),
    (metaspace(None, add_prefix_space=False), "decoder.add_prefix_space"),
    (metaspace("always", split="yes"), "decoder.split"),
    (dseq(wordpiece(), _without(ctc(), "cleanup")), "decoder.decoders[1].cleanup"),
    (dseq(dseq(bpe_decoder(None))), "decoder.decoders[0].decoders[0].suffix"),
]


@pytest.mark.parametrize(("decoder", "path"), BAD_DECODERS)
def test_refused_like_the_oracle(decoder, path):
    text = minimal_file(decoder)
    with pytest.raises(Exception):  # noqa: B017 (the oracle's message hides the reason)
        tokenizers.Tokenizer.from_str(text)
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(text)
    assert info.value.path == path


@pytest.mark.parametrize(
    "decoder", [dict(wordpiece(), extra=1), dict(bpe_decoder(), extra=1), dict(ctc(), extra=1)]
)
def test_unknown_field_is_refused(decoder):
    """tokenizers ignores it; batchtok refuses what it does not know (spec.py)."""
    tokenizers.Tokenizer.from_str(minimal_file(decoder))
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(minimal_file(decoder))
    assert info.value.path == "decoder.extra"
