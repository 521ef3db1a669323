"""A run never replaces a file it cannot show batchtok wrote: a user's file at an output path
(any file of a trainer set counts) is refused by ``run`` and ``plan`` before any work, exit
code 2, naming it; batchtok's own outputs (listed in the job's records, or whose metadata or
sidecar names their input) are rewritten when stale or corrupt, as before, also after a crash
left a set half renamed."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from batchtok.formats import files as files_module
from batchtok.formats import megatron
from tests.support.runner import basic_job, invoke, oracle_ids, texts, write_parquet
from tests.support.s3 import bucket, moto_server, objects, s3_client

PARENT = os.getpid()
DOCS = texts(60, seed=4)


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


def _inputs(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", DOCS, row_group_size=20)
    write_parquet(tmp_path / "in" / "b.parquet", texts(30, seed=5))


def _refused(job: Path, *paths: str) -> None:
    """``run`` and ``plan`` exit 2 naming each path, and say what to do."""
    for command in ("run", "plan"):
        code, output = invoke(command, job)
        assert code == 2, output
        assert "is not a file batchtok wrote" in output and "move it away" in output, output
        assert "output.dir" in output, output
        for path in paths:
            assert f"{path} is not a file batchtok wrote" in output, output


def _users_parquet(path: Path) -> None:
    pq.write_table(pa.table({"text": ["my own table"], "input_ids": [[1, 2]]}), path)


@pytest.mark.parametrize("content", ["notes", "parquet", "directory"])
def test_a_users_file_at_a_parquet_output_path_is_refused_before_any_work(
    tmp_path: Path, content: str
) -> None:
    _inputs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    mine = out / "a.parquet"
    if content == "notes":
        mine.write_bytes(b"my notes, not tokens\n")
    elif content == "parquet":
        _users_parquet(mine)
    else:
        mine.mkdir()
    before = {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.iterdir()}
    _refused(basic_job(tmp_path), str(mine))
    assert {p.name: (p.stat().st_ino, p.stat().st_mtime_ns) for p in out.iterdir()} == before
    assert not (out / "b.parquet").exists()  # nothing else was written either


@pytest.mark.parametrize(
    "format,mine",
    [
        ("megatron", ["a.bin", "a.batchtok.json"]),
        ("megatron", ["a.idx"]),
        ("datatrove", ["a.ds.metadata"]),
        ("datatrove", ["a.ds", "a.ds.index", "a.ds.batchtok.json"]),
    ],
)
def test_a_users_files_at_a_trainer_sets_paths_are_refused(
    tmp_path: Path, format: str, mine: list[str]
) -> None:
    _inputs(tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    for name in mine:
        (out / name).write_text(json.dumps({"files": {}, "mine": name}))
    _refused(basic_job(tmp_path, output__format=format), *(str(out / n) for n in mine))
    for name in mine:
        assert json.loads((out / name).read_text())["mine"] == name


@pytest.mark.parametrize("format", ["parquet", "megatron"])
def test_another_inputs_output_at_an_output_path_does_not_belong(
    tmp_path: Path, format: str
) -> None:
    _inputs(tmp_path)
    first = tmp_path / "first"
    first.mkdir()
    assert invoke("run", basic_job(first, input__paths=[str(tmp_path / "in")]))[0] == 0
    if format == "megatron":
        job = basic_job(first, input__paths=[str(tmp_path / "in")], output__format=format)
        assert invoke("run", job)[0] == 0
    out = tmp_path / "out"
    out.mkdir()
    names = ["b.parquet"] if format == "parquet" else ["b.bin", "b.batchtok.json", "b.idx"]
    for name in names:  # b's output, copied where a's goes, without the records
        shutil.copy(first / "out" / name, out / name.replace("b.", "a.", 1))
    _refused(basic_job(tmp_path, output__format=format), str(out / names[-1].replace("b.", "a.")))


def _megatron_ids(out: Path) -> list[list[int]]:
    return [d.tolist() for d in megatron.read_documents(str(out / "a"))]


def test_batchtoks_own_trainer_files_are_rewritten_when_corrupt_or_half_there(
    tmp_path: Path,
) -> None:
    _inputs(tmp_path)
    job, out = basic_job(tmp_path, output__format="megatron", run__shard_mb=0.004), tmp_path / "out"
    assert invoke("run", job)[0] == 0
    want = oracle_ids(DOCS)
    (out / "a.bin").write_bytes(b"garbage" * 3)  # the records say batchtok wrote it
    code, output = invoke("run", job)
    assert code == 0 and "will be rewritten" in output, output
    assert _megatron_ids(out) == want
    for name in ("a.idx", "a.batchtok.json"):
        (out / name).unlink()  # a set half there: its .bin is still this job's
    code, output = invoke("run", job)
    assert code == 0, output
    assert _megatron_ids(out) == want
    shutil.rmtree(out / ".batchtok" / "records")  # the sidecar names the input: still ours
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output


def test_a_set_a_crash_left_half_renamed_is_this_jobs_and_is_written_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _inputs(tmp_path)
    job, out = basic_job(tmp_path, output__format="megatron"), tmp_path / "out"
    publish = files_module.publish

    def die_after_the_data_file(staged):
        if os.getpid() != PARENT and staged[-1][1].endswith("a.idx"):
            os.makedirs(os.path.dirname(staged[0][1]), exist_ok=True)
            os.replace(*staged[0])
            os._exit(9)
        publish(staged)

    monkeypatch.setattr(files_module, "publish", die_after_the_data_file)
    code, output = invoke("run", job)
    assert code == 1, output
    assert (out / "a.bin").exists() and not (out / "a.batchtok.json").exists()
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 0, output
    assert _megatron_ids(out) == oracle_ids(DOCS)


def test_a_users_object_at_an_s3_output_path_is_refused(tmp_path: Path, endpoint: str) -> None:
    _inputs(tmp_path)
    bucket(endpoint, "owned")
    s3_client(endpoint).put_object(Bucket="owned", Key="out/a.parquet", Body=b"my notes")
    job = basic_job(tmp_path, output__dir="s3://owned/out/", storage__endpoint=endpoint)
    _refused(job, "s3://owned/out/a.parquet")
    assert objects(endpoint, "owned", "out/") == {"a.parquet": b"my notes"}


def test_many_foreign_files_are_named_up_to_ten_and_counted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    for i in range(13):
        write_parquet(tmp_path / "in" / f"f{i:02}.parquet", texts(2, seed=i))
        (out / f"f{i:02}.parquet").write_bytes(b"mine")
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 2 and output.count("is not a file batchtok wrote") == 10, output
    assert "... and 3 more" in output, output
