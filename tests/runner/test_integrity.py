"""Nothing wrong reaches an output: a part corrupted on disk is never joined, the tokenizer is
loaded from the very bytes its hash names, an input that changes mid-run fails by name, and an
in-place edit that keeps size and mtime is still noticed.

Workers are forked from the test process, so a function patched here is patched in them too.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from batchtok.runner import run as run_module
from batchtok.runner.errors import CorruptFileError
from batchtok.runner.exec import encode as encode_module
from batchtok.runner.exec.worker import (
    AssembleTask,
    EncodeSettings,
    WorkerContext,
    assemble_file,
)
from batchtok.runner.plan.keys import hex128
from tests.support.runner import (
    GPT2,
    basic_job,
    invoke,
    kill_worker_on_shard,
    oracle_ids,
    summary,
    template_tokenizer,
    texts,
    visible_files,
    write_parquet,
)

PARENT = os.getpid()


def _check_outputs(out: Path, inputs: Path, **options) -> None:
    for name in visible_files(out):
        text = pq.read_table(inputs / name)["text"].to_pylist()
        assert pq.read_table(out / name)["input_ids"].to_pylist() == oracle_ids(text, **options)


@pytest.fixture
def multi_shard_job(tmp_path: Path) -> Path:
    write_parquet(tmp_path / "in" / "c.parquet", texts(200, seed=3), row_group_size=20)
    return basic_job(tmp_path, run__shard_mb=0.004)


def _flip_a_bit(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0x10
    path.write_bytes(bytes(data))


def test_a_bit_flipped_in_a_part_is_never_joined(multi_shard_job: Path, monkeypatch) -> None:
    job, out = multi_shard_job, multi_shard_job.parent / "out"
    kill_worker_on_shard("c.parquet#2", monkeypatch, PARENT)
    code, output = invoke("run", job)
    assert code == 1, output
    monkeypatch.undo()
    parts = sorted((out / ".batchtok" / "parts").glob("*.parquet"))
    assert len(parts) >= 2
    flipped = parts[0]
    _flip_a_bit(flipped)
    code, output = invoke("run", job)
    assert code == 0, output
    assert f"part {flipped.name}" in output and "discarded" in output
    assert summary(out)["shards"]["done"] == 2  # the shard that crashed and the corrupt one
    _check_outputs(out, job.parent / "in")


def test_a_part_corrupted_before_its_join_fails_the_join(tmp_path: Path) -> None:
    part = tmp_path / "part.parquet"
    write_parquet(part, texts(20), row_group_size=10)
    schema = pq.read_schema(part)
    digest = hex128(b"the part as it was written")  # as if a bit flipped since
    task = AssembleTask(
        rel="c.parquet",
        dest=str(tmp_path / "out.parquet"),
        tmp_dir=str(tmp_path / "tmp"),
        schema=schema,
        compression="zstd",
        sources=((str(part), 0, 2, digest),),
        tag="join",
    )
    with pytest.raises(CorruptFileError, match="part.parquet"):
        settings = EncodeSettings("text", None, True, "int32", "zstd", "fail")
        assemble_file(task, lambda added: None, WorkerContext(settings))
    assert not (tmp_path / "out.parquet").exists()


def test_the_tokenizer_is_loaded_from_the_bytes_that_were_hashed(
    tmp_path: Path, monkeypatch
) -> None:
    """Replace the tokenizer file while the inputs are hashed: the ids, the metadata and the
    summary all belong to the file as it was read."""
    tokenizer = tmp_path / "tokenizer.json"
    shutil.copy(GPT2, tokenizer)
    other = template_tokenizer(tmp_path)  # <|endoftext|> around every text
    write_parquet(tmp_path / "in" / "a.parquet", texts(30, seed=1))
    job = basic_job(tmp_path, tokenizer__path=str(tokenizer))
    assert invoke("run", job)[0] == 0  # its facts are remembered: the next run loads later
    write_parquet(tmp_path / "in" / "b.parquet", texts(30, seed=2))
    monkeypatch.setattr(encode_module, "_LOADED", {})  # as in a new process
    original = run_module._Run._hash_phase

    def hash_then_replace(self, executor, files):
        original(self, executor, files)
        os.replace(other, tokenizer)

    monkeypatch.setattr(run_module._Run, "_hash_phase", hash_then_replace)
    code, output = invoke("run", job)
    assert code == 0, output
    _check_outputs(tmp_path / "out", tmp_path / "in")  # GPT-2's ids, not the template's
    doc = pq.read_metadata(tmp_path / "out" / "b.parquet").metadata[b"batchtok"]
    assert summary(tmp_path / "out")["tokenizer"]["sha256"] in doc.decode()


def test_an_input_rewritten_between_hashing_and_encoding_fails_by_name(
    tmp_path: Path, monkeypatch
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(30, seed=1))
    write_parquet(tmp_path / "in" / "b.parquet", texts(30, seed=2))
    job = basic_job(tmp_path)
    original = run_module._Run._encode_phase

    def rewrite_then_encode(self, executor):
        write_parquet(tmp_path / "in" / "a.parquet", texts(30, seed=9))
        return original(self, executor)

    monkeypatch.setattr(run_module._Run, "_encode_phase", rewrite_then_encode)
    code, output = invoke("run", job)
    assert code == 1, output
    assert "a.parquet changed while the run was reading it" in output
    assert visible_files(tmp_path / "out") == ["b.parquet"]
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 0, output
    _check_outputs(tmp_path / "out", tmp_path / "in")


def test_an_input_deleted_mid_run_fails_by_name_and_the_rest_completes(
    tmp_path: Path, monkeypatch
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(30, seed=1))
    write_parquet(tmp_path / "in" / "b.parquet", texts(30, seed=2))
    job = basic_job(tmp_path)
    original = run_module._Run._encode_phase

    def delete_then_encode(self, executor):
        (tmp_path / "in" / "a.parquet").unlink()
        return original(self, executor)

    monkeypatch.setattr(run_module._Run, "_encode_phase", delete_then_encode)
    code, output = invoke("run", job)
    assert code == 1, output  # partial: completed files are kept, a re-run resumes
    assert "a.parquet was deleted" in output
    assert visible_files(tmp_path / "out") == ["b.parquet"]
    report = summary(tmp_path / "out")
    assert report["status"] == "failed" and report["files"]["failed"] == 1


def test_an_in_place_edit_that_keeps_size_and_mtime_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "in" / "a.parquet"
    path.parent.mkdir()
    table = pa.table({"text": ["the cat sat", "on the mat"] * 10})
    pq.write_table(table, path, compression="none", use_dictionary=False)
    job = basic_job(tmp_path)
    assert invoke("run", job)[0] == 0
    st = path.stat()
    data = path.read_bytes()
    assert data.count(b"the cat sat") >= 10  # the values, and the statistics
    path.write_bytes(data.replace(b"the cat sat", b"the dog sat"))
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert path.stat().st_size == st.st_size and path.stat().st_mtime_ns == st.st_mtime_ns
    code, output = invoke("run", job)
    assert code == 0, output
    assert summary(tmp_path / "out")["shards"]["done"] == 1
    _check_outputs(tmp_path / "out", tmp_path / "in")
