"""tokenizers reads post-processors untagged: the first of RobertaProcessing, BertProcessing,
ByteLevel, TemplateProcessing and Sequence whose fields read wins, whatever ``type`` says (only
ByteLevel and Sequence check it). Every type against every field set, against the oracle."""

from __future__ import annotations

import itertools
import json

import pytest
import tokenizers

from batchtok import Tokenizer, TokenizerFileError
from tests.support.models import word_level_base
from tests.support.oracle import outcome

BASE = dict(
    word_level_base(["[CLS]", "[SEP]", "a", "b"]), pre_tokenizer={"type": "WhitespaceSplit"}
)
FIELDS = {
    "bert": {"sep": ["[SEP]", 2], "cls": ["[CLS]", 1]},
    "roberta": {"trim_offsets": True, "add_prefix_space": True},
    "byte_level": {"add_prefix_space": True, "trim_offsets": False, "use_regex": True},
    "template": {
        "single": [
            {"SpecialToken": {"id": "[CLS]", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"[CLS]": {"id": "[CLS]", "ids": [1], "tokens": ["[CLS]"]}},
    },
    "sequence": {
        "processors": [{"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}]
    },
    "bad_sep": {"sep": "[SEP]", "cls": ["[CLS]", 1]},
}
TYPES = [
    "RobertaProcessing",
    "BertProcessing",
    "ByteLevel",
    "TemplateProcessing",
    "Sequence",
    None,
    "Bogus",
    # serde's spelling of a unit variant, which tokenizers reads as the name
    {"ByteLevel": None},
    {"Sequence": None},
]
SETS = [(name,) for name in FIELDS] + list(itertools.combinations(FIELDS, 2))


@pytest.mark.parametrize("kind", TYPES, ids=str)
def test_the_first_variant_whose_fields_read_wins(kind):
    for names in SETS:
        processor = {} if kind is None else {"type": kind}
        for name in names:
            processor.update(FIELDS[name])
        text = json.dumps(dict(BASE, post_processor=processor))
        theirs = outcome(lambda text=text: tokenizers.Tokenizer.from_str(text))
        try:
            ours = Tokenizer.from_str(text)
        except TokenizerFileError as exc:
            assert theirs[0] == "error", (kind, names, "batchtok refuses", str(exc))
            assert exc.path.startswith("post_processor"), exc.path
            continue
        assert theirs[0] == "ok", (kind, names, "the oracle refuses", theirs[1])
        ref = theirs[1]
        want_type = json.loads(ref.to_str())["post_processor"]["type"]
        assert type(ours.post_processor).__name__ == want_type, (kind, names)
        for args in (("a b",), ("a b", "b a")):
            mine, them = ours.encode(*args), ref.encode(*args)
            assert (mine.ids, mine.type_ids) == (them.ids, them.type_ids), (kind, names, args)
