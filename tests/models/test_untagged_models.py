"""A model whose ``type`` tokenizers does not know as a tag, read as its ``ModelWrapper`` reads
it: without a ``type``, BPE, WordPiece, WordLevel and Unigram are tried in that order and the
first whose visitor reads the fields is kept; every visitor refuses a present ``type`` that is
not its own name (null, a number, an unknown or misspelt name), so such a model is refused. A
type written ``{"Name": null}`` is that name. Every model's fields under every type, with each
field removed in turn, and random models, against the oracle.
"""

from __future__ import annotations

import json

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from batchtok.errors import NotReproducibleError
from tests.support.fixtures import fixture_path
from tests.support.models import assert_ids_and_decode, model_file
from tests.support.oracle import outcome
from tests.support.tier import examples

WHITESPACE = {"type": "WhitespaceSplit"}
VOCAB = {"[UNK]": 0, "a": 1, "b": 2, "ab": 3, "##b": 4, "c": 5}
PIECES = [["[UNK]", 0.0], ["a", -1.0], ["b", -1.5], ["ab", -2.0], ["c", -3.0]]
SAMPLE = ["a b ab c", "ba abab cab", "xyz a", "abc", ""]
MODELS = ("BPE", "WordPiece", "WordLevel", "Unigram")
BPE = {"vocab": VOCAB, "merges": [["a", "b"]], "unk_token": "[UNK]"}
WORDPIECE = {
    "unk_token": "[UNK]",
    "continuing_subword_prefix": "##",
    "max_input_chars_per_word": 5,
    "vocab": VOCAB,
}
WORDLEVEL = {"vocab": VOCAB, "unk_token": "[UNK]"}
UNIGRAM = {"vocab": PIECES, "unk_id": 0, "byte_fallback": False}
# Each model's fields, and mixes where the first model to read is not the one they look like.
FIELD_SETS = {
    "BPE": BPE,
    "BPE, minimal": {"vocab": VOCAB, "merges": ["a b"]},
    "BPE, every field": {
        **BPE,
        "dropout": None,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": False,
        "byte_fallback": None,
        "ignore_merges": True,
    },
    "WordPiece": WORDPIECE,
    "WordLevel": WORDLEVEL,
    "Unigram": UNIGRAM,
    "Unigram, vocab only": {"vocab": PIECES},
    "WordPiece's fields and merges": {**WORDPIECE, "merges": [["a", "b"]]},
    "BPE with a merge out of the vocab": {**BPE, "merges": [["a", "x"]]},
    "BPE with dropout out of range": {**BPE, "dropout": 2},
    "BPE with a tiny dropout, an f32 0.0": {**BPE, "dropout": 1e-50},
    "BPE with dropout": {**BPE, "dropout": 0.5},
    "BPE with a merge the oracle panics on (prefix longer than the right token)": {
        **BPE,
        "continuing_subword_prefix": "##",
    },
    "BPE with a merge the oracle panics on (longer than any token)": {
        **BPE,
        "merges": [["[UNK]", "ab"]],
    },
    "WordPiece with a negative length": {**WORDPIECE, "max_input_chars_per_word": -1},
    "WordLevel with a null unk": {**WORDLEVEL, "unk_token": None},
    "WordLevel with an id used twice": {**WORDLEVEL, "vocab": {**VOCAB, "d": 1}},
    "Unigram and an unk_token": {**UNIGRAM, "unk_token": "[UNK]"},
    "Unigram with unk_id past the vocab": {**UNIGRAM, "unk_id": 9},
    "Unigram with a null byte_fallback": {**UNIGRAM, "byte_fallback": None},
}
MISSING = object()
TYPES = [
    MISSING,
    *MODELS,
    *({name: None} for name in MODELS),
    None,
    "Bogus",
    "bpe",
    "",
    7,
    True,
    ["BPE"],
    {"BPE": {}},
    {"WordLevel": None, "x": None},
]


def typed(fields: dict, kind: object) -> dict:
    return dict(fields) if kind is MISSING else {"type": kind, **fields}


def assert_loads_as_the_oracle(model: object) -> None:
    """batchtok reads ``model`` exactly when the oracle does, as the same model type giving
    the same ids; it refuses only naming a path under ``model``, and refuses a model the oracle
    reads (or panics on) only for a reason of its own (:class:`NotReproducibleError`)."""
    text = model_file(model, pre_tokenizer=WHITESPACE)
    theirs = outcome(lambda: tokenizers.Tokenizer.from_str(text))
    try:
        ours = Tokenizer.from_str(text)
    except NotReproducibleError as exc:
        # the oracle reads it without a serde error: it loads, or panics
        panics = theirs[0] == "error" and theirs[1].startswith("PanicException")
        assert theirs[0] == "ok" or panics, (model, "the oracle refuses", theirs[1], str(exc))
        assert exc.path.startswith("model."), exc.path
        return
    except TokenizerFileError as exc:
        assert theirs[0] == "error", (model, "batchtok refuses", str(exc))
        assert exc.path.startswith("model"), exc.path
        return
    assert theirs[0] == "ok", (model, "the oracle refuses", theirs[1])
    assert type(ours.model).__name__ == json.loads(theirs[1].to_str())["model"]["type"], model
    assert_ids_and_decode((ours, theirs[1]), SAMPLE)


@pytest.mark.parametrize("fields_of", sorted(FIELD_SETS))
def test_every_models_fields_under_every_type_and_each_field_removed(fields_of):
    fields = FIELD_SETS[fields_of]
    for removed in [None, *fields]:
        kept = {k: v for k, v in fields.items() if k != removed}
        for kind in TYPES:
            assert_loads_as_the_oracle(typed(kept, kind))


def test_a_wordlevel_model_without_its_type_loads_as_wordlevel():
    """The fuzzer's finding: a trained WordLevel file whose ``model.type`` is deleted loads
    in tokenizers (as WordLevel: BPE lacks merges, WordPiece its prefix and length) and gave
    "model without a 'type'" here."""
    data = json.loads(fixture_path("trained-wordlevel").read_text(encoding="utf-8"))
    assert data["model"].pop("type") == "WordLevel"
    text = json.dumps(data)
    ours, theirs = Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    assert type(ours.model).__name__ == json.loads(theirs.to_str())["model"]["type"]
    assert_ids_and_decode((ours, theirs), ["Hello world, this is a test.", "naïve café 12"])


@pytest.mark.parametrize("name", ["trained-wordpiece-template", "trained-unigram", "gpt1-bpe"])
def test_a_trained_model_without_its_type_loads_as_the_oracle_reads_it(name):
    data = json.loads(fixture_path(name).read_text(encoding="utf-8"))
    del data["model"]["type"]
    text = json.dumps(data)
    ours, theirs = Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    assert type(ours.model).__name__ == json.loads(theirs.to_str())["model"]["type"]
    assert_ids_and_decode((ours, theirs), ["Hello world, this is a test.", "naïve café 12"])


def test_a_model_without_a_type_that_no_model_reads_says_why_each_failed():
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(model_file({"vocab": VOCAB}))
    message = str(info.value)
    assert info.value.path == "model", message
    for name in MODELS:
        assert f"as {name}: model." in message, message


def test_a_nonzero_dropout_is_final_in_the_untagged_reading():
    """tokenizers keeps BPE for these fields (its dropout is random), so batchtok must not fall
    through to WordLevel, whose fields they also hold."""
    with pytest.raises(NotReproducibleError) as info:
        Tokenizer.from_str(model_file({**BPE, "dropout": 0.5}))
    assert info.value.path == "model.dropout"


@pytest.mark.parametrize(
    "dropout", [-1e-50, -0.0, 1e-46, 1e-38, 1.00000001, 1.0000001, -1e-39, 2**64, 1e300]
)
def test_dropout_is_read_as_the_f32_the_oracle_holds(dropout):
    """A dropout that rounds to an f32 0.0 is no dropout; one that rounds to 1.0 is in range;
    one past the f32 range is infinite."""
    for kind in ("BPE", MISSING):
        assert_loads_as_the_oracle(typed({**BPE, "dropout": dropout}, kind))


def test_a_merge_whose_prefix_cut_falls_inside_a_char_is_a_failure_to_fall_past():
    """Without the prefix's byte, "é" leaves half a char: tokenizers' lookup of the merged
    bytes fails (a serde error the untagged reading falls past, to WordLevel here). Typed BPE,
    the same failure is reported with those bytes in its message, and the binding aborts the
    process converting it to a Python string: so only batchtok's refusal is checked there."""
    fields = {
        **BPE,
        "vocab": {**VOCAB, "é": 6},
        "merges": [["a", "é"]],
        "continuing_subword_prefix": "x",
    }
    for kind in (MISSING, "Bogus", "WordLevel"):
        assert_loads_as_the_oracle(typed(fields, kind))
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(model_file({"type": "BPE", **fields}))
    assert info.value.path == "model.merges[0]", str(info.value)


VALUES = {
    "vocab": [VOCAB, PIECES, {}, [], {"a": -1}, {**VOCAB, "d": 1}, None],
    "merges": [[["a", "b"]], ["a b"], [], ["a  b"], [["a", "x"]], None],
    "unk_token": ["[UNK]", "zz", None, 0],
    "unk_id": [0, 4, 9, None, -1],
    "continuing_subword_prefix": ["##", "", None],
    "max_input_chars_per_word": [5, 0, -1, None],
    "byte_fallback": [False, True, None],
    "fuse_unk": [True, None, 1],
    "dropout": [None, 0, 0.5, 2],
    "end_of_word_suffix": ["</w>", None],
    "ignore_merges": [True, None],
    "extra": [1],
}


@st.composite
def random_model(draw) -> dict:
    keys = draw(st.lists(st.sampled_from(sorted(VALUES)), unique=True, max_size=7))
    model = {key: draw(st.sampled_from(VALUES[key])) for key in keys}
    kind = draw(st.sampled_from(TYPES))
    return typed(model, kind)


@settings(max_examples=examples(400), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(model=random_model())
def test_a_random_model_loads_exactly_when_the_oracle_does(model):
    assert_loads_as_the_oracle(model)
