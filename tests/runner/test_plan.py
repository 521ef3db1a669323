"""Planning: deterministic shards by row-group ranges, independent of the worker count."""

from __future__ import annotations

import json
import pickle
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from batchtok.runner.errors import JobError
from batchtok.runner.inputs import files
from batchtok.runner.inputs.files import InputFile, RowGroup
from batchtok.runner.io.s3 import S3Path
from batchtok.runner.job import load_job
from batchtok.runner.outputs.parquet import METADATA_KEY, metadata_bytes
from batchtok.runner.plan.keys import hash_row_groups
from batchtok.runner.plan.prepare import plan_job, prepare
from batchtok.runner.plan.records import FileRecord
from batchtok.runner.plan.states import (
    batch_rows,
    make_shards,
    output_splits,
    part_locations,
    part_path,
    part_record_path,
    resolve,
    text_columns,
)
from batchtok.runner.plan.tasks import file_doc, shard_tasks
from tests.support.runner import basic_job, invoke, texts, write_parquet

MB = 1_000_000


def _file(sizes: list[int], rows: int = 10) -> InputFile:
    return InputFile(
        path="/x.parquet",
        rel="x.parquet",
        size=0,
        mtime_ns=0,
        inode=0,
        row_groups=tuple(RowGroup(rows, s, 2 * s) for s in sizes),
        schema=pa.schema([("text", pa.string())]),
        keep=("text",),
        text_leaf=0,
        keep_leaves=(),
    )


def test_shards_are_greedy_whole_row_group_ranges() -> None:
    f = _file([10 * MB, 10 * MB, 10 * MB, 50 * MB, 5 * MB, 5 * MB])
    shards = make_shards(f, shard_mb=25)
    assert [s.row_groups for s in shards] == [(0, 2), (2, 3), (3, 4), (4, 6)]
    assert [s.first_row for s in shards] == [0, 20, 30, 40]
    assert [s.id for s in shards] == [f"x.parquet#{i}" for i in range(4)]
    assert sum(s.rows for s in shards) == 60


def test_a_file_without_row_groups_is_one_empty_shard() -> None:
    (shard,) = make_shards(_file([]), shard_mb=1)
    assert shard.row_groups == (0, 0) and shard.rows == 0


def test_big_row_groups_become_several_output_row_groups() -> None:
    f = _file([10 * MB, 100 * MB, 1 * MB], rows=9)
    (shard,) = make_shards(f, shard_mb=1000)
    assert output_splits(f, shard, row_group_mb=30) == (9, 12, 15, 18, 27)
    assert output_splits(f, shard, row_group_mb=1000) == (9, 18, 27)


def test_batch_rows_follow_the_batch_size_in_bytes() -> None:
    f = _file([1 * MB], rows=1000)  # 2 MB per row group, 2 kB per row
    (shard,) = make_shards(f, shard_mb=10)
    assert batch_rows(f, shard, batch_mb=1) == 500


def _plan_shards(report: dict) -> list[tuple[str, list[int], int]]:
    return [(s["shard"], s["row_groups"], s["rows"]) for f in report["files"] for s in f["shards"]]


def test_plan_is_deterministic_and_ignores_the_worker_count(tmp_path: Path) -> None:
    for name, n in (("b.parquet", 300), ("a.parquet", 120), ("sub/c.parquet", 75)):
        write_parquet(tmp_path / "in" / name, texts(n, seed=n), row_group_size=25)
    job_file = basic_job(tmp_path, run__shard_mb=0.004)
    reports = [plan_job(load_job(job_file, {"run.workers": w})) for w in (1, 2, 7, "auto")]
    first = _plan_shards(reports[0])
    assert all(_plan_shards(r) == first for r in reports[1:])
    assert [f["file"].rsplit("in/", 1)[1] for f in reports[0]["files"]] == [
        "a.parquet",
        "b.parquet",
        "sub/c.parquet",
    ]
    assert len(first) > 3 and all(status == "to do" for status in _statuses(reports[0]))
    # Shards of a file depend on that file only: a new file leaves the others' shards alone.
    write_parquet(tmp_path / "in" / "0new.parquet", texts(500), row_group_size=7)
    after = _plan_shards(plan_job(load_job(job_file)))
    assert [s for s in after if not s[0].startswith("0new")] == first


def _statuses(report: dict) -> list[str]:
    return [s["status"] for f in report["files"] for s in f["shards"]]


def test_plan_command_writes_nothing_and_shows_cached_after_a_run(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(100), row_group_size=20)
    job = basic_job(tmp_path, run__shard_mb=0.002)
    code, output = invoke("plan", job)
    assert code == 0, output
    assert "a.parquet#0" in output and "to do" in output
    assert not (tmp_path / "out").exists()
    assert invoke("run", job)[0] == 0
    code, output = invoke("plan", job)
    assert "to do" not in output and "cached" in output
    write_parquet(tmp_path / "in" / "b.parquet", texts(30, seed=3))
    code, output = invoke("plan", job, "--json")
    report = json.loads(output)
    by_file = {
        f["file"].rsplit("/", 1)[1]: {s["status"] for s in f["shards"]} for f in report["files"]
    }
    assert by_file == {"a.parquet": {"cached"}, "b.parquet": {"to do"}}


def test_plan_no_hash_leaves_new_inputs_unknown(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(10))
    code, output = invoke("plan", basic_job(tmp_path), "--no-hash")
    assert code == 0 and "unknown" in output


def test_inputs_read_together_keep_their_order_and_every_problem(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Footers are read in threads (as object storage inputs are), the later files first
    here: the files and the problems still come in the inputs' order, none lost."""
    names = [f"{i:02d}.parquet" for i in range(24)]
    broken = {3, 10, 17}  # not Parquet
    untexted = {6, 21}  # no text column
    for i, name in enumerate(names):
        path = tmp_path / "in" / name
        if i in broken:
            path.write_bytes(b"not parquet")
        else:
            write_parquet(path, texts(5, seed=i), text_column="body" if i in untexted else "text")
    read_input = files.read_input

    def slow_read(path: str, *args: Any) -> Any:  # the first inputs finish last
        time.sleep(0.002 * (len(names) - int(Path(path).stem)))
        return read_input(path, *args)

    monkeypatch.setattr(files, "read_input", slow_read)
    monkeypatch.setattr(files, "LOCAL_READERS", 8)
    job = load_job(basic_job(tmp_path))
    with pytest.raises(JobError) as refused:
        files.resolve_inputs(job)
    named = [
        next(n for n in names if n in p.message) for p in refused.value.problems
    ]  # each problem names its file
    assert named == [names[i] for i in sorted(broken | untexted)]
    for i in broken | untexted:
        (tmp_path / "in" / names[i]).unlink()
    found, _ = files.resolve_inputs(job)
    assert [f.rel for f in found] == [n for i, n in enumerate(names) if i not in broken | untexted]


def test_a_files_tasks_share_its_output_and_write_the_metadata_they_wrote_before(
    tmp_path: Path,
) -> None:
    """Each output or part's metadata is the document a task used to carry whole: the file's
    document with its one shard (one-shard file) or its part, escaped the same way."""
    odd = "caf\udce9.parquet"  # a name that is not UTF-8 (its byte surrogate-escaped)
    write_parquet(tmp_path / "in" / "one.parquet", texts(10), row_group_size=20)
    write_parquet(tmp_path / "odd.parquet", texts(60), row_group_size=20)  # (pyarrow: UTF-8)
    (tmp_path / "odd.parquet").rename(tmp_path / "in" / odd)
    job_file = basic_job(tmp_path, run__shard_mb=0.0005)
    job = load_job(job_file)
    prep = prepare(job, remember=False)
    parts_dir = tmp_path / "out" / ".batchtok" / "parts"
    for st in prep.states.values():
        hashes = hash_row_groups(st.file.path, text_columns(job), st.file.keep_leaves)
        resolve(st, hashes, prep.fingerprint(st.file), parts_dir, FileRecord(), False)
        made = shard_tasks(prep, st, range(len(st.shards)), parts_dir, tmp_path / "tmp")
        assert len({id(task.output) for task in made}) == 1
        for i, task in enumerate(made):
            shard = {"key": st.keys[i], "row_groups": list(st.shards[i].row_groups)}
            doc = file_doc(prep, st, [shard])
            if len(st.shards) > 1:
                del doc["shards"]
                doc["part"] = {**shard, "shard": st.shards[i].id}
                part = part_path(parts_dir, st.file.rel, st.keys[i])
                assert (task.dest, task.record_file) == (str(part), str(part_record_path(part)))
            else:
                assert (task.dest, task.record_file) == (str(st.output), "")
            assert task.schema.metadata == {METADATA_KEY: metadata_bytes(doc)}
            assert task.schema.remove_metadata() == task.output.schema
            assert pickle.loads(pickle.dumps(task)).schema == task.schema
    assert {len(st.shards) for st in prep.states.values()} == {1, 3}
    code, output = invoke("plan", job_file, "--json")  # the name shown escaped, as written
    assert code == 0 and 'caf\\\\xe9.parquet"' in output and "udce9" not in output


def test_part_locations_are_the_part_paths_named() -> None:
    for parts_dir in (Path("/out/.batchtok/parts"), S3Path.parse("s3://b/out/.batchtok/parts")):
        part = part_path(parts_dir, "a/b.parquet", "k" * 32)
        assert part_locations(parts_dir, "a/b.parquet", "k" * 32) == (
            str(part),
            str(part_record_path(part)),
        )
