"""``batchtok.verify``: an output is accepted with the tokenizer file that made it (and the
options it was made with), refused with another file or another option, in every format; and
its contract says the ids' dtype, the vocabulary and the EOS appended."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import batchtok
from tests.support.runner import EXAMPLE_JOB, invoke

GPT2 = Path(__file__).resolve().parents[2] / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"
OUTPUTS = {
    "parquet": "sample.parquet",
    "megatron": "sample.idx",
    "datatrove": "sample.ds",
    "mds": "sample.mds",
}


@pytest.mark.parametrize("format", sorted(OUTPUTS))
def test_an_output_is_accepted_with_its_tokenizer_and_refused_with_another(
    tmp_path: Path, format: str
) -> None:
    out = tmp_path / "out"
    code, output = invoke(
        "run", EXAMPLE_JOB, "-o", out, "--set", f"output.format={format}",
        "--set", "output.append_eos=true",
    )  # fmt: skip
    assert code == 0, output
    target = out / OUTPUTS[format]
    doc = batchtok.verify(target, GPT2)
    assert doc["tokenizer"]["vocab_size"] == 50257
    assert doc["ids"]["append_eos_id"] == 50256
    assert doc["ids"]["special_ids"] == []  # GPT-2's post-processor adds none
    assert doc["ids"]["dtype"] == ("int32" if format in ("parquet", "mds") else "uint16")
    assert batchtok.verify(target, GPT2.read_bytes(), append_eos=True, add_special_tokens=True)
    other = tmp_path / "tokenizer.json"
    other.write_text(json.dumps(json.loads(GPT2.read_text(encoding="utf-8"))), encoding="utf-8")
    with pytest.raises(batchtok.VerificationError, match="not by .*tokenizer.json"):
        batchtok.verify(target, other)
    with pytest.raises(batchtok.VerificationError, match="append_eos is true, not false"):
        batchtok.verify(target, GPT2, append_eos=False)
    with pytest.raises(TypeError, match="no_such_option: not an option"):
        batchtok.verify(target, GPT2, no_such_option=1)


def test_a_file_batchtok_did_not_write_is_refused(tmp_path: Path) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"input_ids": [[1, 2]]}), tmp_path / "a.parquet")
    with pytest.raises(batchtok.VerificationError, match="a.parquet"):
        batchtok.verify(tmp_path / "a.parquet", GPT2)
    with pytest.raises(batchtok.VerificationError, match="no format knows"):
        batchtok.verify(tmp_path / "a.txt", GPT2)
