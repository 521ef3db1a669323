"""The SentencePiece-BPE lineage (Llama-2, Mistral v0.1, Gemma 3): what sets it apart.

The real files go through tests/conformance/ (test_bpe_files.py, test_arbitrary_text.py) with
the others; here: the two Metaspace spellings, the transform alone, synthetic files over one
vocabulary, and vocabularies that break the boundary proof.
"""

from __future__ import annotations

import json

import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import batchtok
from batchtok.metaspace import Metaspace
from batchtok.models.bpe_boundary import BoundarySplitter
from tests.support import adversarial, corpora
from tests.support.oracle import assert_conforms, pair_for, tokenizer_json
from tests.support.tier import examples

LINEAGE_TEXT = adversarial.SPECIAL_TEXT


def test_the_two_layouts_differ_where_the_oracle_says():
    """Where the two layouts differ: leading spaces and text after an added token."""
    llama, llama_ref = pair_for("llama2")
    mistral, mistral_ref = pair_for("llama2-mistral")
    differing = 0
    for text in ["Hello world", " Hello world", "Hello</s>world", "</s>Hello"]:
        a = llama.encode(text, add_special_tokens=False).tokens
        b = mistral.encode(text, add_special_tokens=False).tokens
        assert a == llama_ref.encode(text, add_special_tokens=False).tokens
        assert b == mistral_ref.encode(text, add_special_tokens=False).tokens
        differing += a != b
    assert llama.encode(" Hello world", add_special_tokens=False).tokens == [
        "\u2581",
        "\u2581Hello",
        "\u2581world",
    ]
    assert mistral.encode("Hello</s>world", add_special_tokens=False).tokens == [
        "\u2581Hello",
        "</s>",
        "world",
    ]
    assert differing == 3


def test_both_spellings_load_as_bpe_with_one_metaspace_transform():
    llama, _ = pair_for("llama2")
    mistral, _ = pair_for("llama2-mistral")
    assert type(llama.model) is type(mistral.model) is batchtok.models.BPE
    assert isinstance(llama.normalizer.metaspace, Metaspace)
    assert isinstance(mistral.pre_tokenizer.metaspace, Metaspace)


# -- the Metaspace transform alone -----------------------------------------------------------


@pytest.mark.parametrize("scheme", ["always", "first", "never"])
@pytest.mark.parametrize("split", [True, False])
def test_metaspace_transform_alone(scheme, split):
    from tokenizers.pre_tokenizers import Metaspace as RefMetaspace

    ref = RefMetaspace(replacement="\u2581", prepend_scheme=scheme, split=split)
    ours = Metaspace("\u2581", scheme, split)
    for text in ["Hello world", " Hello  world ", "\u2581x", "  ", "a", "x\u2581\u2581y z"]:
        expected = [piece for piece, _ in ref.pre_tokenize_str(text)]
        assert ours.pieces(text, at_start=True) == expected, text


# -- three small synthetic files over one vocabulary ----------------------------------------


def _variant(normalizer, pre_tokenizer) -> str:
    data = json.loads(tokenizer_json("llama2"))
    data["normalizer"] = normalizer
    data["pre_tokenizer"] = pre_tokenizer
    return json.dumps(data, ensure_ascii=False)


PREPEND = {"type": "Prepend", "prepend": "\u2581"}
REPLACE = {"type": "Replace", "pattern": {"String": " "}, "content": "\u2581"}
SYNTHETIC = {
    "metaspace-always": _variant(
        None,
        dict(
            METASPACE := {
                "type": "Metaspace",
                "replacement": "\u2581",
                "prepend_scheme": "always",
                "split": False,
            }
        ),
    ),
    "metaspace-split": _variant(None, dict(METASPACE, split=True)),
    "metaspace-never": _variant(None, dict(METASPACE, prepend_scheme="never")),
    "metaspace-legacy": _variant(
        None, {"type": "Metaspace", "replacement": "\u2581", "add_prefix_space": True}
    ),
    "normalizer-sequence": _variant({"type": "Sequence", "normalizers": [PREPEND, REPLACE]}, None),
    "three-step-sequence": _variant(
        {"type": "Sequence", "normalizers": [PREPEND, REPLACE, {"type": "Lowercase"}]}, None
    ),
}


@pytest.mark.parametrize("name", sorted(SYNTHETIC))
def test_synthetic_variants(name):
    text = SYNTHETIC[name]
    ours, ref = batchtok.Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    docs = LINEAGE_TEXT + adversarial.adversarial_strings(max_chars=200)
    docs += corpora.sample_docs("english", 30, 3000) + corpora.sample_docs("multilingual", 30, 2000)
    assert_conforms(ours, ref, docs)


def test_three_step_sequence_is_not_reduced_to_metaspace():
    ours = batchtok.Tokenizer.from_str(SYNTHETIC["three-step-sequence"])
    assert not hasattr(ours.normalizer, "metaspace")


def test_always_spellings_agree_where_the_oracle_agrees():
    """Metaspace 'always' vs the normalizer spelling: same ids exactly where the oracle's are."""
    meta = SYNTHETIC["metaspace-always"]
    norm = SYNTHETIC["normalizer-sequence"]
    ours_m, ours_n = batchtok.Tokenizer.from_str(meta), batchtok.Tokenizer.from_str(norm)
    ref_m, ref_n = tokenizers.Tokenizer.from_str(meta), tokenizers.Tokenizer.from_str(norm)
    seen_differ = seen_same = False
    for text in LINEAGE_TEXT + adversarial.adversarial_strings(max_chars=200):
        oracle_same = ref_m.encode(text).ids == ref_n.encode(text).ids
        assert (ours_m.encode_ids(text) == ours_n.encode_ids(text)) == oracle_same, text
        seen_differ |= not oracle_same
        seen_same |= oracle_same
    assert seen_differ and seen_same


# -- the boundary proof and its fallback -----------------------------------------------------


def _small_bpe(extra_vocab: list[str], merges: list[list[str]], normalizer=None, pre=None) -> str:
    chars = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    chars += list("\u2581abcdefghijklmnopqrstuvwxyz.,!")
    vocab = {t: i for i, t in enumerate(dict.fromkeys(chars + extra_vocab))}
    return json.dumps(
        {
            "version": "1.0",
            "added_tokens": [
                {
                    "id": 2,
                    "content": "</s>",
                    "single_word": False,
                    "lstrip": False,
                    "rstrip": False,
                    "normalized": False,
                    "special": True,
                }
            ],
            "normalizer": normalizer or {"type": "Sequence", "normalizers": [PREPEND, REPLACE]},
            "pre_tokenizer": pre,
            "post_processor": None,
            "decoder": {
                "type": "Sequence",
                "decoders": [
                    {"type": "Replace", "pattern": {"String": "\u2581"}, "content": " "},
                    {"type": "ByteFallback"},
                    {"type": "Fuse"},
                    {"type": "Strip", "content": " ", "start": 1, "stop": 0},
                ],
            },
            "model": {
                "type": "BPE",
                "dropout": None,
                "unk_token": "<unk>",
                "continuing_subword_prefix": None,
                "end_of_word_suffix": None,
                "fuse_unk": True,
                "byte_fallback": True,
                "ignore_merges": False,
                "vocab": vocab,
                "merges": merges,
            },
        },
        ensure_ascii=False,
    )


CROSSING = _small_bpe(
    ["a\u2581", "a\u2581b", "\u2581a", "ab", "\u2581ab", "\u2581\u2581"],
    [
        ["a", "\u2581"],
        ["a\u2581", "b"],
        ["\u2581", "a"],
        ["a", "b"],
        ["\u2581", "ab"],
        ["\u2581", "\u2581"],
    ],
)
BYTE_MERGES = _small_bpe(
    ["<0x0A>a", "\u2581a", "ab"], [["<0x0A>", "a"], ["\u2581", "a"], ["a", "b"]]
)
BOUNDARY_TEXT = [
    "a b",
    "a bab a b",
    "aa b",
    "xa b",
    "a  b",
    "\na b",
    "a\nab",
    "a\n\n a",
    "ba b a",
    "a b</s>a b",
    "\u00e9a b",
    "a \u00e9b",
    "a\u2581b",
]


@pytest.mark.parametrize("name,data", [("crossing", CROSSING), ("byte-merges", BYTE_MERGES)])
def test_boundary_fallbacks_match_the_oracle(name, data):
    ours, ref = batchtok.Tokenizer.from_str(data), tokenizers.Tokenizer.from_str(data)
    assert_conforms(ours, ref, BOUNDARY_TEXT + adversarial.adversarial_strings(max_chars=100))

    @settings(max_examples=examples(500), deadline=None, database=None)
    @given(
        st.lists(
            st.sampled_from(["a", "b", " ", "\u2581", "\n", "\u00e9", "x", "</s>"]), max_size=20
        ).map("".join)
    )
    def check(text):
        assert ours.encode_ids(text) == ref.encode(text).ids, text

    check()


def test_the_proof_is_applied_or_withheld():
    crossing = batchtok.Tokenizer.from_str(CROSSING)
    splitter = BoundarySplitter.for_model(crossing.model)
    assert splitter is not None and splitter._crossing is not None  # kept whole where needed
    assert splitter.split("\u2581a\u2581b\u2581a") == ["\u2581a\u2581b", "\u2581a"]
    assert splitter.split("\u2581ac") == ["\u2581a", "c"]  # c occurs in no longer token
    byte_merges = batchtok.Tokenizer.from_str(BYTE_MERGES)
    assert BoundarySplitter.for_model(byte_merges.model) is None  # whole-word merge
    llama, _ = pair_for("llama2")
    assert BoundarySplitter.for_model(llama.model)._crossing is None  # proof holds


def test_refuses_add_prefix_space_false_with_a_prepend_scheme():
    data = json.loads(SYNTHETIC["metaspace-always"])
    data["pre_tokenizer"] = {
        "type": "Metaspace",
        "replacement": "\u2581",
        "add_prefix_space": False,
    }
    with pytest.raises(batchtok.TokenizerFileError) as info:
        batchtok.Tokenizer.from_str(json.dumps(data))
    assert info.value.path == "pre_tokenizer.add_prefix_space"
    with pytest.raises(Exception, match="add_prefix_space does not match"):
        tokenizers.Tokenizer.from_str(json.dumps(data))


def test_metaspace_first_after_a_stripping_normalizer():
    """Strip moves the first piece off offset 0 when it removes leading text: no prepend then."""
    data = json.loads(SYNTHETIC["metaspace-always"])
    data["pre_tokenizer"] = dict(data["pre_tokenizer"], prepend_scheme="first")
    data["normalizer"] = {"type": "Strip", "strip_left": True, "strip_right": False}
    text = json.dumps(data)
    ours, ref = batchtok.Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    for doc in ["Hello world", "  Hello world", "\tHi", " ", "a  b ", ""]:
        assert ours.encode(doc).ids == ref.encode(doc).ids, doc
