"""Files batchtok cannot reproduce exactly are refused, naming the JSON path and the reason."""

from __future__ import annotations

import copy
import json
import pathlib

import pytest
import tokenizers

from batchtok import Tokenizer, TokenizerFileError, serialization

GPT2 = (
    pathlib.Path(__file__).resolve().parents[1]
    / "configs"
    / "tokenizers"
    / "gpt2"
    / "tokenizer.json"
)


@pytest.fixture(scope="module")
def base() -> dict:
    """GPT-2's file with its legacy "a b" merges rewritten as pairs (the current spelling)."""
    data = json.loads(GPT2.read_text(encoding="utf-8"))
    data["model"]["merges"] = [m.split(" ") for m in data["model"]["merges"]]
    return data


def refused(data: dict | str) -> TokenizerFileError:
    text = data if isinstance(data, str) else json.dumps(data)
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(text)
    return info.value


def oracle_refuses(data: dict | str) -> bool:
    text = data if isinstance(data, str) else json.dumps(data)
    try:
        tokenizers.Tokenizer.from_str(text)
    except Exception:
        return True
    return False


def test_truncated_json(base):
    text = json.dumps(base)[:5000]
    err = refused(text)
    assert err.path == "$" and "not valid JSON" in err.reason and "line 1" in err.reason
    assert oracle_refuses(text)


def test_unknown_normalizer_type(base):
    data = copy.deepcopy(base)
    data["normalizer"] = {"type": "Sequence", "normalizers": [{"type": "NFC"}, {"type": "Foo"}]}
    err = refused(data)
    assert err.path == "normalizer.normalizers[1].type" and err.value == "Foo"
    assert "unknown" in err.reason
    assert oracle_refuses(data)


def test_merge_naming_a_token_absent_from_the_vocab(base):
    data = copy.deepcopy(base)
    data["model"]["merges"][7] = ["Ġ", "no-such-token"]
    err = refused(data)
    assert err.path == "model.merges[7]" and "'no-such-token' is not in the vocab" in err.reason
    assert oracle_refuses(data)


def test_merged_token_absent_from_the_vocab(base):
    data = copy.deepcopy(base)
    data["model"]["merges"].append(["Ġ", "!"])
    if "Ġ!" in data["model"]["vocab"]:
        del data["model"]["vocab"]["Ġ!"]
    err = refused(data)
    assert err.path.startswith("model.merges[") and "merged token" in err.reason
    assert oracle_refuses(data)


def test_split_behaviour_foo(base):
    data = copy.deepcopy(base)
    data["pre_tokenizer"] = {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": "\\s+"}, "behavior": "Foo", "invert": False},
            {
                "type": "ByteLevel",
                "add_prefix_space": False,
                "trim_offsets": True,
                "use_regex": False,
            },
        ],
    }
    err = refused(data)
    assert err.path == "pre_tokenizer.pretokenizers[0].behavior" and err.value == "Foo"
    assert "Isolated" in err.reason
    assert oracle_refuses(data)


def test_bpe_dropout(base):
    data = copy.deepcopy(base)
    data["model"]["dropout"] = 0.1
    err = refused(data)
    assert err.path == "model.dropout" and err.value == 0.1 and "random" in err.reason
    # the oracle loads it, and its output is random: that is why batchtok refuses
    assert not oracle_refuses(data)


@pytest.mark.parametrize("dropout", [None, 0, 0.0])
def test_bpe_dropout_off_is_accepted(base, dropout):
    data = copy.deepcopy(base)
    data["model"]["dropout"] = dropout
    Tokenizer.from_str(json.dumps(data))


def test_vocab_id_used_twice(base):
    data = copy.deepcopy(base)
    data["model"]["vocab"]["a-second-token"] = data["model"]["vocab"]["Ġthe"]
    err = refused(data)
    assert err.path == "model.vocab" and "used twice" in err.reason
    assert "a-second-token" in str(err)


def test_unknown_top_level_key(base):
    data = dict(base, extra=1)
    err = refused(data)
    assert err.path == "extra"
    assert oracle_refuses(data)


def test_unknown_field_inside_a_component_is_ignored_as_the_oracle_does(base):
    data = copy.deepcopy(base)
    data["pre_tokenizer"]["future_option"] = True
    tokenizers.Tokenizer.from_str(json.dumps(data))
    tok = Tokenizer.from_dict(data)
    assert tok.ignored_fields == ("pre_tokenizer.future_option",)
    assert "pre_tokenizer.future_option" in tok.describe()


def test_missing_required_field(base):
    data = copy.deepcopy(base)
    del data["pre_tokenizer"]["add_prefix_space"]
    err = refused(data)
    assert err.path == "pre_tokenizer.add_prefix_space" and "missing" in err.reason
    assert oracle_refuses(data)


def test_model_missing(base):
    data = {k: v for k, v in base.items() if k != "model"}
    assert refused(data).path == "model"
    assert oracle_refuses(data)


@pytest.mark.parametrize("version", ["2.0", None, 1.0, ""])
def test_wrong_version(base, version):
    data = dict(base, version=version)
    assert refused(data).path == "version"
    assert oracle_refuses(data)


def test_a_missing_version_is_read_as_1_0(base):
    data = {k: v for k, v in base.items() if k != "version"}
    assert not oracle_refuses(data)
    Tokenizer.from_dict(data)


def _nested_sequences(base: dict, levels: int) -> dict:
    """A decoder of ``levels`` Sequences, one inside the other, around a Fuse."""
    decoder: dict = {"type": "Fuse"}
    for _ in range(levels):
        decoder = {"type": "Sequence", "decoders": [decoder]}
    return dict(base, decoder=decoder)


def test_nesting_is_refused_exactly_where_the_oracle_refuses_it(base):
    """serde_json allows 127 levels of arrays and objects, the top-level object included: a
    Sequence is two (its object and its list), the Fuse one more, the file's object one."""
    deepest = (serialization.MAX_NESTING - 2) // 2  # 62 Sequences: 1 + 124 + 1 = 126 levels
    for levels in (deepest, deepest + 1):
        data = _nested_sequences(base, levels)
        depth = 1 + 2 * levels + 1
        assert oracle_refuses(data) is (depth > serialization.MAX_NESTING), levels
        if depth > serialization.MAX_NESTING:
            err = refused(data)
            assert err.path.startswith("decoder.decoders[0]") and "nested deeper" in err.reason
        else:
            Tokenizer.from_dict(data)


def test_nesting_too_deep_for_pythons_parser_is_a_refusal(base):
    text = json.dumps(base).replace(
        '"decoder": {', '"decoder": ' + "[" * 5000 + "]" * 5000 + ', "x": {', 1
    )
    err = refused(text)
    assert err.path == "$" and "nested deeper" in err.reason
    assert oracle_refuses(text)


@pytest.mark.parametrize("kind", [[], {}, 5, None, True])
def test_a_type_that_is_not_a_string_is_refused(base, kind):
    data = dict(base, normalizer={"type": kind})
    assert oracle_refuses(data)
    assert refused(data).path.startswith("normalizer")


def test_unsupported_regex_construct(base):
    data = copy.deepcopy(base)
    data["normalizer"] = {"type": "Replace", "pattern": {"Regex": "(a)\\1"}, "content": "x"}
    err = refused(data)
    assert err.path == "normalizer.pattern" and "\\1" in err.reason


def test_invalid_regex(base):
    data = copy.deepcopy(base)
    data["normalizer"] = {"type": "Replace", "pattern": {"Regex": "(ab"}, "content": "x"}
    err = refused(data)
    assert err.path == "normalizer.pattern"
    assert oracle_refuses(data)


def test_legacy_merges_with_three_parts(base):
    data = copy.deepcopy(base)
    data["model"]["merges"] = [" ".join(m) for m in data["model"]["merges"]]
    Tokenizer.from_str(json.dumps(data))  # the legacy spelling loads
    data["model"]["merges"][3] = "a b c"
    err = refused(data)
    assert err.path == "model.merges" and "line 4" in err.reason
    assert oracle_refuses(data)


def test_added_tokens_null(base):
    data = dict(base, added_tokens=None)
    assert refused(data).path == "added_tokens"
    assert oracle_refuses(data)


def test_not_utf8(tmp_path):
    path = tmp_path / "tokenizer.json"
    path.write_bytes(b'{"model": "\xff"}')
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_file(path)
    assert "UTF-8" in info.value.reason


@pytest.mark.parametrize("content", ["\ud800", "a\udfffb", "\udc00\ud800"])
def test_lone_surrogate_escape(base, content):
    """Python's json accepts a lone surrogate escape; the library's JSON reader does not."""
    data = copy.deepcopy(base)
    data["added_tokens"][0]["content"] = content
    err = refused(data)
    assert err.path == "added_tokens[0].content" and "surrogate" in err.reason
    assert oracle_refuses(data)


def test_a_surrogate_pair_escape_is_one_char(base):
    data = copy.deepcopy(base)
    data["added_tokens"][0]["content"] = "\U0001f600"
    text = json.dumps(data)  # ensure_ascii: written as the pair \ud83d\ude00
    assert "\\ud83d\\ude00" in text
    ours, ref = Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
    assert ours.encode("a\U0001f600b").ids == ref.encode("a\U0001f600b").ids
