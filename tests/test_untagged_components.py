"""Components whose ``type`` tokenizers does not know as a tag (missing, misspelt, or a name
only its untagged reading knows, like "BertNormalizer"): serde then tries every variant in
order and keeps the first whose fields read. A variant declared with a plain ``serde(tag)``
reads whatever the type says; one declared with tokenizers' ``impl_serde_type!`` checks it.
Every wrapper, every variant's fields under every type, against the oracle.
(Post-processors have no tagged reading at all: tests/processors/test_untagged_post_processors.py.)
"""

from __future__ import annotations

import json

import pytest
import tokenizers

from batchtok import Tokenizer, TokenizerFileError
from tests.support.models import word_level_base
from tests.support.oracle import outcome

BASE = word_level_base(["a", "b"])
STRING = {"String": "a"}
FIELDS = {
    "normalizer": {
        "BertNormalizer": {
            "clean_text": True,
            "handle_chinese_chars": True,
            "strip_accents": None,
            "lowercase": True,
        },
        "Strip": {"strip_left": True, "strip_right": False},
        "StripAccents": {},
        "NFC": {},
        "NFKD": {},
        "Lowercase": {},
        "Nmt": {},
        "ByteLevel": {},
        "Sequence": {"normalizers": []},
        "Replace": {"pattern": STRING, "content": "b"},
        "Prepend": {"prepend": "_"},
    },
    "pre_tokenizer": {
        "BertPreTokenizer": {},
        "Whitespace": {},
        "ByteLevel": {"add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "CharDelimiterSplit": {"delimiter": "x"},
        "Metaspace": {"replacement": "_", "prepend_scheme": "always", "split": True},
        "Sequence": {"pretokenizers": []},
        "Split": {"pattern": {"String": " "}, "behavior": "Isolated", "invert": False},
        "Digits": {"individual_digits": True},
        "FixedLength": {"length": 3},
    },
    "decoder": {
        "BPEDecoder": {"suffix": "</w>"},
        "ByteLevel": {"add_prefix_space": False, "trim_offsets": True, "use_regex": True},
        "WordPiece": {"prefix": "##", "cleanup": True},
        "Metaspace": {"replacement": "_", "prepend_scheme": "always", "split": True},
        "CTC": {"pad_token": "<pad>", "word_delimiter_token": "|", "cleanup": True},
        "Sequence": {"decoders": []},
        "Replace": {"pattern": STRING, "content": "b"},
        "Fuse": {},
        "ByteFallback": {},
        "Strip": {"content": " ", "start": 1, "stop": 0},
    },
}
# beside every variant's own name (also as serde's {"Name": null} spelling of a unit variant,
# which tokenizers reads as the name): none, unknown ones, and tags of other wrappers
OTHER_TYPES = [None, "Bogus", "Bert", "Delimiter", "BPE", 7, {"Bogus": None}, {"Bert": {}}]


def _type_read(tok: tokenizers.Tokenizer, key: str) -> str:
    return json.loads(tok.to_str())[key]["type"]


@pytest.mark.parametrize("key", sorted(FIELDS))
def test_every_variants_fields_under_every_type(key):
    variants = FIELDS[key]
    for fields_of, fields in variants.items():
        for kind in [*OTHER_TYPES, *variants, *({name: None} for name in variants)]:
            component = dict(fields) if kind is None else {"type": kind, **fields}
            text = json.dumps(dict(BASE, **{key: component}))
            theirs = outcome(lambda text=text: tokenizers.Tokenizer.from_str(text))
            where = (key, fields_of, kind)
            try:
                ours = Tokenizer.from_str(text)
            except TokenizerFileError as exc:
                assert theirs[0] == "error", (*where, "batchtok refuses", str(exc))
                assert exc.path.startswith(key), exc.path
                continue
            assert theirs[0] == "ok", (*where, "the oracle refuses", theirs[1])
            assert type(getattr(ours, key)).__name__ == _type_read(theirs[1], key), where
            for sample in ("a b", "ab  ba"):
                assert ours.encode(sample).ids == theirs[1].encode(sample).ids, where
            assert ours.decode([1, 2, 1]) == theirs[1].decode([1, 2, 1]), where


# serde reads a struct from a JSON array of its field values, in declaration order (only
# structs that do not check their type: the others need the type's key)
POSITIONAL = {
    "normalizer": [
        [True, True, None, True],
        [True, True, None],
        [True, True, None, True, 1],
        [True, False],
        ["_"],
        [{"String": "a"}, "b"],
        [[{"type": "NFC"}, [[]]]],
        [],
    ],
    "pre_tokenizer": [[" "], [[]], []],
    "decoder": [
        ["</w>"],
        ["##", True],
        [" ", 1, 0],
        ["<pad>", "|", True],
        [{"String": "a"}, "b"],
        [[{"type": "Fuse"}]],
        [],
    ],
    "post_processor": [
        [["[SEP]", 2], ["[CLS]", 1]],
        [["[SEP]", 2], ["[CLS]", 1], True, True],
        [["[SEP]", 2]],
        [],
    ],
}


@pytest.mark.parametrize("key", sorted(POSITIONAL))
def test_a_component_as_the_array_of_its_field_values(key):
    base = word_level_base(["[CLS]", "[SEP]", "a", "b"])
    for values in POSITIONAL[key]:
        text = json.dumps(dict(base, **{key: values}))
        theirs = outcome(lambda text=text: tokenizers.Tokenizer.from_str(text))
        try:
            ours = Tokenizer.from_str(text)
        except TokenizerFileError as exc:
            assert theirs[0] == "error", (key, values, "batchtok refuses", str(exc))
            assert exc.path.startswith(key), exc.path
            continue
        assert theirs[0] == "ok", (key, values, "the oracle refuses", theirs[1])
        assert type(getattr(ours, key)).__name__ == _type_read(theirs[1], key), (key, values)
        for args in (("a b",), ("a b", "b a")):
            assert ours.encode(*args).ids == theirs[1].encode(*args).ids, (key, values)
