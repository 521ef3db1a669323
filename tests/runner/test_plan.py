"""Planning: deterministic shards by row-group ranges, independent of the worker count."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa

from batchtok.runner.inputs.files import InputFile, RowGroup
from batchtok.runner.job import load_job
from batchtok.runner.plan.prepare import plan_job
from batchtok.runner.plan.states import batch_rows, make_shards, output_splits
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
