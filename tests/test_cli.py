"""The command line: encode and inspect."""

from __future__ import annotations

import json
import pathlib

import tokenizers
from click.testing import CliRunner

from batchtok.cli import main

GPT2 = str(pathlib.Path(__file__).resolve().parents[1] / "configs/tokenizers/gpt2/tokenizer.json")
SAMPLE = pathlib.Path(__file__).resolve().parents[1] / "configs/samples/sample.txt"


def test_encode_arguments_match_the_oracle():
    ref = tokenizers.Tokenizer.from_file(GPT2)
    result = CliRunner().invoke(main, ["encode", "-t", GPT2, "Hello world", "a <|endoftext|> b"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.output.splitlines()]
    assert lines == [ref.encode("Hello world").ids, ref.encode("a <|endoftext|> b").ids]


def test_encode_stdin_one_array_per_line():
    ref = tokenizers.Tokenizer.from_file(GPT2)
    text = SAMPLE.read_text(encoding="utf-8")
    result = CliRunner().invoke(main, ["encode", "-t", GPT2], input=text)
    assert result.exit_code == 0
    expected = [ref.encode(line).ids for line in text.splitlines()]
    assert [json.loads(x) for x in result.output.splitlines()] == expected


def test_special_text_as_text():
    ref = tokenizers.Tokenizer.from_file(GPT2)
    ref.encode_special_tokens = True
    args = ["encode", "-t", GPT2, "--special-text-as-text", "a<|endoftext|>b"]
    result = CliRunner().invoke(main, args)
    assert json.loads(result.output) == ref.encode("a<|endoftext|>b").ids
    assert 50256 not in json.loads(result.output)


def test_inspect_loads():
    result = CliRunner().invoke(main, ["inspect", GPT2])
    assert result.exit_code == 0
    assert "loads" in result.output and "BPE(vocab=50257" in result.output
    assert "vocab size: 50257" in result.output


def test_inspect_refusal(tmp_path):
    data = json.loads(pathlib.Path(GPT2).read_text(encoding="utf-8"))
    data["normalizer"] = {"type": "Foo"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    result = CliRunner().invoke(main, ["inspect", str(path)])
    assert result.exit_code == 1
    assert "refused" in result.output and "normalizer.type" in result.output


def test_encode_refused_file_is_a_clear_error(tmp_path):
    path = tmp_path / "bad.json"
    path.write_text("{", encoding="utf-8")
    result = CliRunner().invoke(main, ["encode", "-t", str(path), "x"])
    assert result.exit_code == 1
    assert "refused" in result.output and "not valid JSON" in result.output
