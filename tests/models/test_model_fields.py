"""The WordPiece, WordLevel and Unigram fields of tokenizer.json: each malformed field is refused
naming its JSON path (and the oracle refuses it too, or is shown to accept something batchtok
must not), and valid minimal models load and describe themselves.
"""

from __future__ import annotations

import pytest
import tokenizers

from batchtok import Tokenizer, TokenizerFileError
from tests.support.models import (
    SHORT,
    assert_ids_and_decode,
    assert_same_tokens,
    model_file,
)
from tests.support.oracle import (
    assert_agree,
    outcome,
    pair_from_json,
)

GOOD_WP = {
    "type": "WordPiece",
    "unk_token": "[UNK]",
    "continuing_subword_prefix": "##",
    "max_input_chars_per_word": 100,
    "vocab": {"[UNK]": 0, "a": 1},
}
GOOD_WL = {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1}, "unk_token": "[UNK]"}
GOOD_UG = {
    "type": "Unigram",
    "unk_id": 0,
    "vocab": [["<unk>", 0.0], ["a", -1.0]],
    "byte_fallback": False,
}


def without(model: dict, key: str) -> dict:
    return {k: v for k, v in model.items() if k != key}


REFUSED = [
    # (model, path, also refused by the oracle)
    (without(GOOD_WP, "unk_token"), "model.unk_token", True),
    (without(GOOD_WP, "continuing_subword_prefix"), "model.continuing_subword_prefix", True),
    (without(GOOD_WP, "max_input_chars_per_word"), "model.max_input_chars_per_word", True),
    (without(GOOD_WP, "vocab"), "model.vocab", True),
    (dict(GOOD_WP, max_input_chars_per_word=-1), "model.max_input_chars_per_word", True),
    (dict(GOOD_WP, max_input_chars_per_word=True), "model.max_input_chars_per_word", True),
    (dict(GOOD_WP, unk_token=None), "model.unk_token", True),
    (dict(GOOD_WP, vocab={"a": -1}), "model.vocab", True),
    (dict(GOOD_WP, vocab={"a": 0, "b": 0}), "model.vocab", False),
    (without(GOOD_WL, "unk_token"), "model.unk_token", True),
    (without(GOOD_WL, "vocab"), "model.vocab", True),
    (dict(GOOD_WL, vocab=[["a", 0]]), "model.vocab", True),
    # ids that are not even hashable (an object, an array) are refused like any non-id
    (dict(GOOD_WL, vocab={"a": {"type": 1}}), "model.vocab", True),
    (dict(GOOD_WL, vocab={"[UNK]": 0, "a": [1]}), "model.vocab", True),
    (without(GOOD_UG, "vocab"), "model.vocab", True),
    (dict(GOOD_UG, unk_id=2), "model.unk_id", True),
    (dict(GOOD_UG, unk_id=0, vocab=[]), "model.unk_id", True),
    (dict(GOOD_UG, unk_id=-1), "model.unk_id", True),
    (dict(GOOD_UG, unk_id="0"), "model.unk_id", True),
    (dict(GOOD_UG, byte_fallback=None), "model.byte_fallback", True),
    (dict(GOOD_UG, vocab=[["a"]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab=[["a", -1.0, 2]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab=[[1, -1.0]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab=[["a", "-1"]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab=[["a", True]]), "model.vocab[0]", True),
    (dict(GOOD_UG, vocab={"a": -1.0}), "model.vocab", True),
    (dict(GOOD_UG, vocab=[["<unk>", 0.0], ["a", 1e400]]), "model.vocab[1]", True),
]


@pytest.mark.parametrize(("model", "path", "oracle_refuses"), REFUSED)
def test_refusals_name_the_json_path(model, path, oracle_refuses):
    text = model_file(model).replace("Infinity", "1e400")
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(text)
    assert info.value.path == path, str(info.value)
    oracle = outcome(lambda: tokenizers.Tokenizer.from_str(text))
    assert (oracle[0] == "error") == oracle_refuses, oracle


@pytest.mark.parametrize(
    ("model", "path"),
    [
        (dict(GOOD_WP, extra=1), "model.extra"),
        (dict(GOOD_WL, extra=1), "model.extra"),
        # tokenizers reads no sampling settings from the file: a Unigram is deterministic
        (dict(GOOD_UG, alpha=0.5), "model.alpha"),
    ],
)
def test_unknown_fields_are_ignored_as_the_oracle_does(model, path):
    text = model_file(model)
    tokenizers.Tokenizer.from_str(text)
    assert Tokenizer.from_str(text).ignored_fields == (path,)


@pytest.mark.parametrize("model", [GOOD_WP, GOOD_WL, GOOD_UG, dict(GOOD_UG, unk_id=None)])
def test_valid_models_load_and_describe_themselves(model):
    ours, ref = pair_from_json(model_file(model))
    assert model["type"] in ours.model.describe()
    assert ours.get_vocab_size() == ref.get_vocab_size()
    if model["type"] == "Unigram":
        # Encoding.tokens of unknown text need the tokenizer to ask model.token_strings.
        assert_ids_and_decode((ours, ref), SHORT)
        assert_same_tokens((ours, ref), SHORT)
    else:
        assert_agree((ours, ref), SHORT)
