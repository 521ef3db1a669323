"""Fields `tokenizers` ignores: batchtok loads what the oracle loads, ignores what it ignores,
and says so (``Tokenizer.ignored_fields``, ``batchtok inspect``, one log line at load).

serde ignores unknown keys inside every component (none of tokenizers' structs denies them);
the oracle refuses them only at the top level and where an object's shape picks an enum variant
(a pattern's ``{"Regex": ...}``, a template piece's ``{"SpecialToken": ...}``).
"""

from __future__ import annotations

import json
import logging
import re

import pytest
import tokenizers
from click.testing import CliRunner

from batchtok import Tokenizer, TokenizerFileError
from batchtok.cli import main
from tests.support import adversarial
from tests.support.oracle import ALL_FILES, outcome, tokenizer_json
from tests.support.tier import FULL, spread

TEXTS = adversarial.SPECIAL_TEXT[:20] + ["Hello world, 12 apples!", " leading", "x\n\ny"]


def _objects(node, path=""):
    """(path, object) for every JSON object outside a model's vocab and merges."""
    if isinstance(node, dict):
        yield path, node
        for key, value in node.items():
            if key in ("vocab", "merges") and path == "model":
                continue
            yield from _objects(value, f"{path}.{key}" if path else key)
    elif isinstance(node, list):
        for i, value in enumerate(node[:3]):
            yield from _objects(value, f"{path}[{i}]")


# Gemma 3 takes 3 s to load, twice for each of its ~25 object shapes: the full tier's alone.
PROBED_FILES = spread(ALL_FILES if FULL else [n for n in ALL_FILES if n != "gemma3"], 6)


def _with_small_model(data: dict) -> dict:
    """``data`` with its model's vocab cut to the single chars, the unknown token and the
    added tokens' entries (and no merges): the same file for every object outside the model,
    which the oracle then loads in milliseconds instead of a second for a 128k vocab. Models
    whose vocab is a list (Unigram) are left whole."""
    model = data.get("model") or {}
    vocab = model.get("vocab")
    if not isinstance(vocab, dict):
        return data
    keep = {t["content"] for t in data.get("added_tokens") or []} | {model.get("unk_token")}
    small = dict(model)
    small["vocab"] = {t: i for t, i in vocab.items() if len(t) == 1 or t in keep}
    if "merges" in small:
        small["merges"] = []
    return {**data, "model": small}


@pytest.mark.parametrize("name", PROBED_FILES)
def test_an_unknown_key_anywhere_loads_where_the_oracle_loads(name):
    whole = json.loads(tokenizer_json(name))
    small = _with_small_model(whole)
    shapes = set()
    for path, obj in list(_objects(whole)):
        shape = (re.sub(r"\[\d+\]", "[]", path), obj.get("type"))
        if shape in shapes:
            continue
        shapes.add(shape)
        # the top level and the model are probed in the whole file; any other object in the
        # file with the small model, which holds that same object
        data = whole if path == "" or path.startswith("model") else small
        obj["zz_future"] = 1
        text = json.dumps(data)
        del obj["zz_future"]
        theirs = outcome(lambda text=text: tokenizers.Tokenizer.from_str(text))
        try:
            ours = Tokenizer.from_str(text)
        except TokenizerFileError as exc:
            assert theirs[0] == "error", f"{name}: {path}: batchtok refuses ({exc}), oracle loads"
            assert exc.path, (name, path)
            continue
        assert theirs[0] == "ok", f"{name}: {path}: batchtok loads, the oracle refuses {theirs[1]}"
        where = f"{path}.zz_future" if path else "zz_future"
        assert ours.ignored_fields == (where,), (name, path)
        ref = theirs[1]
        for t in TEXTS:
            assert ours.encode_ids(t, False) == ref.encode(t, add_special_tokens=False).ids


@pytest.mark.parametrize("name", spread(ALL_FILES, 8))
def test_what_the_oracle_writes_is_read_whole(name):
    """A file as tokenizers itself saves it: batchtok reads every field (none ignored), so no
    field the oracle knows can be dropped silently."""
    saved = tokenizers.Tokenizer.from_str(tokenizer_json(name)).to_str()
    assert Tokenizer.from_str(saved).ignored_fields == ()


def _template_with_byte_level_leftovers() -> str:
    """The popular chat file's shape: a TemplateProcessing carrying a ByteLevel processor's
    add_prefix_space, trim_offsets and use_regex."""
    data = json.loads(tokenizer_json("llama3"))
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}},
            {"Sequence": {"id": "A", "type_id": 0}},
        ],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {
            "<|begin_of_text|>": {
                "id": "<|begin_of_text|>",
                "ids": [128000],
                "tokens": ["<|begin_of_text|>"],
            }
        },
        "add_prefix_space": True,
        "trim_offsets": False,
        "use_regex": True,
    }
    return json.dumps(data)


def test_template_processing_with_byte_level_leftovers(caplog, tmp_path):
    text = _template_with_byte_level_leftovers()
    ref = tokenizers.Tokenizer.from_str(text)
    with caplog.at_level(logging.INFO, logger="batchtok"):
        ours = Tokenizer.from_str(text)
        for t in TEXTS:
            assert ours.encode(t).ids == ref.encode(t).ids
            assert ours.encode_ids(t) == ref.encode(t).ids
    assert ours.ignored_fields == (
        "post_processor.add_prefix_space",
        "post_processor.trim_offsets",
        "post_processor.use_regex",
    )
    logged = [r.getMessage() for r in caplog.records if "ignored" in r.getMessage()]
    assert len(logged) == 1 and "post_processor.use_regex" in logged[0]  # once, at load
    path = tmp_path / "tokenizer.json"
    path.write_text(text, encoding="utf-8")
    result = CliRunner().invoke(main, ["inspect", str(path)])
    assert result.exit_code == 0 and "post_processor.trim_offsets" in result.output


def test_a_pattern_or_template_wrapper_with_an_extra_key_is_refused_by_both():
    template = json.loads(_template_with_byte_level_leftovers())
    template["post_processor"]["single"][0]["extra"] = 1
    pattern = json.loads(tokenizer_json("llama3"))
    pattern["pre_tokenizer"]["pretokenizers"][0]["pattern"]["extra"] = 1
    for data in (template, pattern):
        text = json.dumps(data)
        assert outcome(lambda text=text: tokenizers.Tokenizer.from_str(text))[0] == "error"
        with pytest.raises(TokenizerFileError) as info:
            Tokenizer.from_str(text)
        assert info.value.path.startswith(("post_processor.single[0]", "pre_tokenizer."))
