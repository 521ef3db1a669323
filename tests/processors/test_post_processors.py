"""Post-processors and decoders against the oracle (tokenizers 0.23.3).

TemplateProcessing (several special pieces before and after A, multi-id entries, type ids, A
used twice), ByteLevel and Sequence post-processors; decoders ByteLevel, ByteFallback, Replace,
Fuse, Strip and Sequence chains (Llama's among them). Tokenizers are synthetic: a byte-level
BPE trained at test time by the oracle's trainer, a SentencePiece-style BPE trained the same way,
and a hand-built vocabulary of awkward token strings for the decoders.
"""

from __future__ import annotations

import functools
import json

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from tests.support.oracle_harness import (
    added_token,
    assert_agree,
    byte_level_base,
    compare_decode,
    compare_text,
    corpus_lines,
    load_pair,
    text_strategy,
    with_changes,
)

# ---------------------------------------------------------------------------------------------
# Post-processors


def added(content: str, special: bool = True) -> dict:
    return added_token(content, special=special, normalized=not special)


SPECIALS = ["<s>", "</s>", "<cls>", "<sep>", "<bos>", "<eos>"]


def special_ids() -> dict[str, int]:
    """The ids the added specials get (appended after the 2000 model tokens, in order)."""
    size = len(byte_level_base()["model"]["vocab"])
    return {content: size + i for i, content in enumerate(SPECIALS)}


def piece(name: str, type_id: int) -> dict:
    if name in ("A", "B"):
        return {"Sequence": {"id": name, "type_id": type_id}}
    return {"SpecialToken": {"id": name, "type_id": type_id}}


def template(single, pair=None, special_tokens=None) -> dict:
    ids = special_ids()
    if special_tokens is None:
        special_tokens = {
            name: {"id": name, "ids": [ids[name]], "tokens": [name]} for name in SPECIALS
        }
    if pair is None:
        pair = [*single, ("B", 1)]
    return {
        "type": "TemplateProcessing",
        "single": [piece(n, t) for n, t in single],
        "pair": [piece(n, t) for n, t in pair],
        "special_tokens": special_tokens,
    }


BYTE_LEVEL_PP = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "trim_offsets": True,
    "use_regex": True,
}


def pp_config(post_processor) -> str:
    return with_changes(
        byte_level_base(),
        added_tokens=[added(c) for c in SPECIALS],
        post_processor=post_processor,
    )


def _multi_id_specials() -> dict:
    ids = special_ids()
    vocab = byte_level_base()["model"]["vocab"]
    return {
        "<s>": {"id": "<s>", "ids": [ids["<s>"]], "tokens": ["<s>"]},
        "</s>": {"id": "</s>", "ids": [ids["</s>"]], "tokens": ["</s>"]},
        # several ids: real model ids, an added special, an id nobody knows
        "[MULTI]": {
            "id": "[MULTI]",
            "ids": [vocab["hello"], ids["<sep>"], 99_999, vocab["Ġthe"]],
            "tokens": ["hello", "<sep>", "<ghost>", "Ġthe"],
        },
        # the key, its "id" and its token strings need not agree
        "[ODD]": {"id": "something-else", "ids": [ids["<eos>"]], "tokens": ["not-eos"]},
        "[EMPTY]": {"id": "[EMPTY]", "ids": [], "tokens": []},
    }


TEMPLATES = {
    "bert_like": template([("<cls>", 0), ("A", 0), ("<sep>", 0)]),
    "many_before_after": template(
        [("<s>", 0), ("<cls>", 1), ("<bos>", 2), ("A", 3), ("<sep>", 4), ("</s>", 5), ("<eos>", 6)]
    ),
    "only_before": template([("<bos>", 0), ("<bos>", 1), ("A", 0)]),
    "only_after": template([("A", 1), ("<eos>", 2)]),
    "only_a_with_type_id": template([("A", 7)]),
    "a_twice": template([("<s>", 0), ("A", 0), ("<sep>", 1), ("A", 1), ("</s>", 1)]),
    "a_three_times_adjacent": template([("A", 0), ("A", 1), ("A", 2)]),
    "multi_id_specials": template(
        [("[MULTI]", 1), ("<s>", 0), ("A", 2), ("[ODD]", 3), ("[EMPTY]", 4), ("[MULTI]", 5)],
        special_tokens=_multi_id_specials(),
    ),
    "type_id_large": template([("<s>", 4_000_000_000), ("A", 4_294_967_295)]),
    "empty_single": template([]),
}

POST_PROCESSORS = dict(TEMPLATES)
POST_PROCESSORS.update(
    {
        "byte_level": BYTE_LEVEL_PP,
        "sequence_byte_level_template": {
            "type": "Sequence",
            "processors": [BYTE_LEVEL_PP, TEMPLATES["many_before_after"]],
        },
        "sequence_template_byte_level": {
            "type": "Sequence",
            "processors": [TEMPLATES["a_twice"], BYTE_LEVEL_PP],
        },
        "sequence_byte_level_only": {"type": "Sequence", "processors": [BYTE_LEVEL_PP]},
        "sequence_empty": {"type": "Sequence", "processors": []},
    }
)

PP_TEXTS = [
    "",
    " ",
    "a",
    "Hello world",
    "hello <s> world </s>",
    "<cls><sep>",
    "<s>",
    " <eos> x <bos>",
    "it's 12 o'clock\n",
    "café 日本 🙂",
]


@pytest.mark.parametrize("name", sorted(POST_PROCESSORS))
def test_post_processor(name):
    pair = load_pair(pp_config(POST_PROCESSORS[name]))
    assert_agree(pair, PP_TEXTS)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_with_added_vocab_decode(name):
    """Decode of the oracle's ids with special pieces, skipping specials or not."""
    ours, ref = load_pair(pp_config(TEMPLATES[name]))
    for text in PP_TEXTS:
        ids = ref.encode(text).ids
        problems = compare_decode((ours, ref), ids)
        assert not problems, problems


SEQUENCES_OF_TEMPLATES = {
    "bert_then_multi": [TEMPLATES["bert_like"], TEMPLATES["multi_id_specials"]],
    "only_a_then_bert": [TEMPLATES["only_a_with_type_id"], TEMPLATES["bert_like"]],
    "bert_then_only_a": [TEMPLATES["bert_like"], TEMPLATES["only_a_with_type_id"]],
    "byte_level_between": [TEMPLATES["only_after"], BYTE_LEVEL_PP, TEMPLATES["only_before"]],
    # two encodings reach the second template, which then applies its *pair* template
    "second_uses_pair_template": [
        template([("<s>", 0), ("A", 0)]),
        template([("A", 0)], pair=[("B", 1), ("<sep>", 1), ("A", 0)]),
    ],
}


@pytest.mark.parametrize("name", sorted(SEQUENCES_OF_TEMPLATES))
def test_sequence_of_templates(name):
    """Inside a Sequence, a template's output reaches the next template as separate encodings
    (one per piece): two of them select its *pair* template, more than two make tokenizers
    panic ("not yet implemented"); with add_special_tokens=False, or after a template that only
    holds A, there is one. batchtok must either refuse such a file or reproduce the outcome,
    errors included."""
    tj = pp_config({"type": "Sequence", "processors": SEQUENCES_OF_TEMPLATES[name]})
    try:
        pair = load_pair(tj)
    except TokenizerFileError:
        tokenizers.Tokenizer.from_str(tj)
        return
    assert_agree(pair, PP_TEXTS)


def test_template_referencing_a_missing_special_is_refused():
    """tokenizers loads it and panics at encode time; batchtok refuses the file (documented)."""
    broken = template([("<s>", 0), ("A", 0), ("[NOPE]", 0)])
    tj = pp_config(broken)
    ref = tokenizers.Tokenizer.from_str(tj)
    with pytest.raises(BaseException):  # noqa: B017 (pyo3 PanicException)
        ref.encode("x")
    with pytest.raises(TokenizerFileError):
        Tokenizer.from_str(tj)


def test_single_template_using_b_is_refused():
    broken = template([("A", 0), ("B", 1)])
    tj = pp_config(broken)
    ref = tokenizers.Tokenizer.from_str(tj)
    with pytest.raises(BaseException):  # noqa: B017 (pyo3 PanicException)
        ref.encode("x")
    with pytest.raises(TokenizerFileError):
        Tokenizer.from_str(tj)


# ---------------------------------------------------------------------------------------------
# Decoders on a hand-built vocabulary of awkward token strings

DECODER_TOKENS = [
    "a",
    "b",
    "x",
    "xx",
    "xax",
    " ",
    "  ",
    "▁",
    "▁▁",
    "▁Hello",
    "▁world",
    "Hello▁",
    "a▁b",
    "▁x▁",
    "<0x41>",
    "<0xE2>",
    "<0x82>",
    "<0xAC>",
    "<0xe2>",
    "<0xac>",
    "<0X41>",
    "<0x0>",
    "<0x-1>",
    "<0xZZ>",
    "<0x41",
    "<0x410>",
    "<0xC3>",
    "<0xA9>",
    "<0xFF>",
    "<0xF0>",
    "<0x9F>",
    "<0x98>",
    "<0x80>",
    "<0x0A>",
    "<0x20>",
    "<0x00>",
    "Ġ",
    "Ġhello",
    "Ċ",
    "ĊĊ",
    "é",
    "hé",
    "€",
    "Ġ€",
    "€uro",
    "ÃŃ",
    "Ã©",
    "ðŁĺĢ",
    "ðŁ",
    "ĺĢ",
    "Ā",
    "ł",
    "<s>",
    "</s>",
    "<unk>",
    "##",
    "##ing",
    "</w>",
    "end</w>",
    "\n",
    "\t",
    "ß",
    "İ",
    "日本",
]
# Byte tokens with a sign, which Rust's u8::from_str_radix accepts: kept at the end of the vocab
# so that the property test can leave them to test_byte_fallback_accepts_a_sign_in_the_hex.
SIGNED_BYTE_TOKENS = ["<0x+1>", "<0x+A>"]
N_DECODER = len(DECODER_TOKENS)
DECODER_VOCAB = {t: i for i, t in enumerate(DECODER_TOKENS + SIGNED_BYTE_TOKENS)}
N_VOCAB = len(DECODER_VOCAB)


def replace_dec(pattern: str, content: str, regex: bool = False) -> dict:
    return {
        "type": "Replace",
        "pattern": {"Regex" if regex else "String": pattern},
        "content": content,
    }


def strip_dec(content: str, start: int, stop: int) -> dict:
    return {"type": "Strip", "content": content, "start": start, "stop": stop}


def dseq(*decoders: dict) -> dict:
    return {"type": "Sequence", "decoders": list(decoders)}


BYTE_LEVEL_DEC = {
    "type": "ByteLevel",
    "add_prefix_space": True,
    "trim_offsets": True,
    "use_regex": True,
}
BYTE_FALLBACK = {"type": "ByteFallback"}
FUSE = {"type": "Fuse"}
LLAMA = dseq(replace_dec("▁", " "), BYTE_FALLBACK, FUSE, strip_dec(" ", 1, 0))

DECODERS = {
    "none": None,
    "byte_level": BYTE_LEVEL_DEC,
    "byte_fallback": BYTE_FALLBACK,
    "fuse": FUSE,
    "replace_string": replace_dec("▁", " "),
    "replace_to_empty": replace_dec("▁", ""),
    "replace_regex": replace_dec("▁+", " ", regex=True),
    "replace_regex_class": replace_dec(r"[\p{Lu}]", "_", regex=True),
    "strip_space_1_0": strip_dec(" ", 1, 0),
    "strip_u2581_1_1": strip_dec("▁", 1, 1),
    "strip_u2581_3_3": strip_dec("▁", 3, 3),
    "strip_a_2_2": strip_dec("a", 2, 2),
    "strip_x_0_2": strip_dec("x", 0, 2),
    "strip_x_2_0": strip_dec("x", 2, 0),
    "strip_x_1_1": strip_dec("x", 1, 1),
    "llama": LLAMA,
    "llama_without_strip": dseq(replace_dec("▁", " "), BYTE_FALLBACK, FUSE),
    "byte_fallback_then_byte_level": dseq(BYTE_FALLBACK, BYTE_LEVEL_DEC),
    "byte_level_then_replace": dseq(BYTE_LEVEL_DEC, replace_dec(" ", "_")),
    "fuse_then_strip": dseq(FUSE, strip_dec("▁", 1, 1)),
    "strip_then_fuse": dseq(strip_dec("▁", 1, 1), FUSE),
    "replace_then_strip_empty_tokens": dseq(replace_dec("x", ""), strip_dec("x", 0, 1)),
    "nested": dseq(dseq(replace_dec("▁", " ")), dseq(dseq(BYTE_FALLBACK), FUSE)),
    "empty_sequence": dseq(),
}


def decoder_config(decoder) -> str:
    model = dict(byte_level_base()["model"], vocab=DECODER_VOCAB, merges=[])
    tokens = [added("<s>"), added("</s>"), added("<unk>", special=False), added("[NEW]")]
    return with_changes(
        byte_level_base(), model=model, decoder=decoder, added_tokens=tokens, pre_tokenizer=None
    )


def ids_of(*tokens: str) -> list[int]:
    return [DECODER_VOCAB[t] for t in tokens]


DECODE_CASES = [
    [],
    ids_of("a"),
    ids_of("▁Hello", "▁world"),
    ids_of("▁", "▁Hello", "▁▁", "▁world", "▁"),
    ids_of("<s>", "▁Hello", "</s>"),
    ids_of("<0xE2>", "<0x82>", "<0xAC>"),
    ids_of("a", "<0xE2>", "<0x82>", "<0xAC>", "b"),
    ids_of("<0xE2>", "<0x82>"),
    ids_of("<0xE2>", "<0x82>", "a", "<0xAC>"),
    ids_of("<0xe2>", "<0x82>", "<0xac>"),
    ids_of("<0xe2>", "<0xE2>", "<0x82>", "<0xAC>"),
    ids_of("<0X41>", "<0x41>", "<0x0>", "<0x41"),
    ids_of("<0x-1>", "<0xZZ>", "<0x410>"),
    ids_of("<0xC3>", "<0xA9>", "<0xFF>", "<0xC3>"),
    ids_of("<0xF0>", "<0x9F>", "<0x98>", "<0x80>"),
    ids_of("<0xF0>", "<0x9F>", "<0x98>"),
    ids_of("<0x80>", "<0x80>", "<0x0A>", "<0x20>", "<0x00>"),
    ids_of("Ġhello", "Ġ", "Ċ", "ĊĊ"),
    ids_of("é"),
    ids_of("hé", "€", "Ġ€", "€uro"),
    ids_of("ÃŃ", "Ã©", "ðŁĺĢ"),
    ids_of("ðŁ", "ĺĢ"),
    ids_of("ðŁ", "a", "ĺĢ"),
    ids_of("Ā", "ł"),
    ids_of("x"),
    ids_of("xx"),
    ids_of("x", "a", "xax"),
    ids_of("a", "x"),
    ids_of(" ", "  ", "a"),
    ids_of("##", "##ing", "</w>", "end</w>"),
    ids_of("\n", "\t", "ß", "İ", "日本"),
    ids_of("<unk>", "<s>", "<s>", "</s>"),
    [N_VOCAB, N_VOCAB + 1, N_VOCAB + 2, N_VOCAB + 3, 10**6],
    [DECODER_VOCAB["a"], 10**6, DECODER_VOCAB["b"]],
]


# Strip decoders that can walk past the start of a token (tokenizers panics there) have their
# own test, test_strip_decoder_panics_like_the_oracle.
PANICKING_STRIPS = [
    "strip_x_0_2",
    "strip_x_2_0",
    "strip_x_1_1",
    "strip_a_2_2",
    "strip_u2581_3_3",
    "replace_then_strip_empty_tokens",
    "fuse_then_strip",
]
SAFE_DECODERS = sorted(n for n in DECODERS if n not in PANICKING_STRIPS)


@pytest.mark.parametrize("name", SAFE_DECODERS)
def test_decoder(name):
    pair = load_pair(decoder_config(DECODERS[name]))
    problems = [p for ids in DECODE_CASES for p in compare_decode(pair, ids)]
    assert not problems, f"{len(problems)} differences:\n" + "\n".join(problems[:12])


def test_byte_fallback_accepts_a_sign_in_the_hex():
    """The hex digits are parsed by Rust's u8::from_str_radix, which takes a leading '+'."""
    pair = load_pair(decoder_config(BYTE_FALLBACK))
    for ids in (ids_of("<0x+1>"), ids_of("<0x+A>"), ids_of("a", "<0x+A>", "b")):
        problems = compare_decode(pair, ids)
        assert not problems, problems


@pytest.mark.parametrize("name", PANICKING_STRIPS)
def test_strip_decoder_panics_like_the_oracle(name):
    """Strip cuts that cross, or a stop cut that walks past the start of a token made only of
    ``content`` (an empty token included), make tokenizers panic; batchtok must raise too, not
    return text."""
    pair = load_pair(decoder_config(DECODERS[name]))
    cases = [ids_of(t) for t in ("x", "xx", "a", "▁", "▁▁", "xax")] + [ids_of("b", "x"), []]
    cases += DECODE_CASES
    problems = [p for ids in cases for p in compare_decode(pair, ids)]
    assert not problems, "\n".join(problems)


# ---------------------------------------------------------------------------------------------
# Whole tokenizers: byte-level GPT-2 style and a Llama-style SentencePiece BPE


@functools.cache
def llama_like_base() -> dict:
    """A SentencePiece-style BPE: Prepend + Replace normalizer, no pre-tokenizer, byte
    fallback over <0x00>..<0xFF>, <unk>/<s>/</s>, and Llama's decoder chain."""
    tok = tokenizers.Tokenizer(tokenizers.models.BPE(unk_token="<unk>", byte_fallback=True))
    tok.normalizer = tokenizers.normalizers.Sequence(
        [tokenizers.normalizers.Prepend("▁"), tokenizers.normalizers.Replace(" ", "▁")]
    )
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=1200,
        special_tokens=["<unk>", "<s>", "</s>"],
        initial_alphabet=[],
        limit_alphabet=150,
        show_progress=False,
    )
    tok.train_from_iterator(corpus_lines(), trainer)
    data = json.loads(tok.to_str())
    vocab = data["model"]["vocab"]
    for b in range(256):
        vocab.setdefault(f"<0x{b:02X}>", len(vocab))
    data["decoder"] = LLAMA
    return data


def llama_config(add_bos: bool = True, decoder=LLAMA) -> str:
    base = llama_like_base()
    post = None
    if add_bos:
        ids = {t["content"]: t["id"] for t in base["added_tokens"]}
        post = {
            "type": "TemplateProcessing",
            "single": [piece("<s>", 0), piece("A", 0)],
            "pair": [piece("<s>", 0), piece("A", 0), piece("<s>", 1), piece("B", 1)],
            "special_tokens": {"<s>": {"id": "<s>", "ids": [ids["<s>"]], "tokens": ["<s>"]}},
        }
    return with_changes(base, post_processor=post, decoder=decoder)


FULL_TEXTS = [
    "",
    " ",
    "Hello world",
    "  leading spaces and trailing  ",
    "The quick brown fox; it's 7:45 pm.",
    "café naïve Ångström ΣΟΦΙΑ",
    "∑ ☃ 🦀 — unknown to the vocab",
    "日本語 한국어 mixed with english",
    "<s>Hello</s> <unk>",
    "line\nbreaks\tand\r\ntabs",
    "▁already▁has▁markers",
    "\x00\x01\x7f",
]


@pytest.mark.parametrize(
    "decoder",
    ["llama", "llama_without_strip", "byte_fallback", "none", "fuse", "nested", "strip_u2581_1_1"],
)
@pytest.mark.parametrize("add_bos", [True, False])
def test_llama_like(add_bos, decoder):
    assert_agree(load_pair(llama_config(add_bos, DECODERS[decoder])), FULL_TEXTS)


@pytest.mark.parametrize(
    "decoder",
    ["byte_level", "byte_level_then_replace", "none", "fuse", "byte_fallback_then_byte_level"],
)
def test_gpt2_like(decoder):
    tj = with_changes(
        byte_level_base(),
        decoder=DECODERS[decoder],
        added_tokens=[added("<|endoftext|>"), added("é", special=False), added("€uro", False)],
        post_processor=POST_PROCESSORS["sequence_byte_level_template"],
    )
    texts = FULL_TEXTS + ["a<|endoftext|>b", "é€uro é", "x<|endoftext|>"]
    assert_agree(load_pair(tj), texts)


# ---------------------------------------------------------------------------------------------
# Hypothesis

PP_INTERESTING = SPECIALS + [
    " ",
    "  ",
    "\n",
    "a",
    "Hello",
    "é",
    "🙂",
    "12",
    "'s",
    "'",
    "▁",
    "<",
    ">",
    "\u0301",
    "Σ",
    "İ",
    "\u00a0",
    "\u3000",
    "\u200b",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(POST_PROCESSORS)), text=text_strategy(PP_INTERESTING))
def test_property_post_processors(name, text):
    problems = compare_text(load_pair(pp_config(POST_PROCESSORS[name])), text)
    assert not problems, "\n".join(problems)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    name=st.sampled_from(SAFE_DECODERS),
    ids=st.lists(
        st.one_of(
            st.integers(0, N_DECODER - 1),
            st.integers(N_VOCAB, N_VOCAB + 3),
            st.sampled_from(
                ids_of(
                    "<0xE2>",
                    "<0x82>",
                    "<0xAC>",
                    "<0xC3>",
                    "<0xA9>",
                    "<0xF0>",
                    "<0x9F>",
                    "<0x98>",
                    "<0x80>",
                    "▁",
                    "<s>",
                )
            ),
        ),
        max_size=16,
    ),
)
def test_property_decoders(name, ids):
    problems = compare_decode(load_pair(decoder_config(DECODERS[name])), ids)
    assert not problems, "\n".join(problems)


FULL_INTERESTING = [
    " ",
    "  ",
    "\n",
    "▁",
    "<s>",
    "</s>",
    "<unk>",
    "é",
    "∑",
    "🦀",
    "日本",
    "Hello",
    "the",
    "'s",
    "\x00",
    "Σ",
    "İ",
    "\u0301",
    "\u00a0",
    "\u3000",
    "\u200b",
]


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    decoder=st.sampled_from(["llama", "llama_without_strip", "byte_fallback", "none"]),
    add_bos=st.booleans(),
    text=text_strategy(FULL_INTERESTING),
)
def test_property_llama_like(decoder, add_bos, text):
    problems = compare_text(load_pair(llama_config(add_bos, DECODERS[decoder])), text)
    assert not problems, "\n".join(problems)
