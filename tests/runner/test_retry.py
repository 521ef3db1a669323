"""A worker that raises inside tokenization: its shard is run once more in a fresh worker
process, then reported failed; the other shards are not affected.

The error is injected by patching the worker's encode step in the test process; the workers
are forked from it, so they run the patched function. Each attempt appends its pid to a file,
so a test can tell which process ran which attempt.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from batchtok.runner.exec import worker as worker_module
from tests.support.runner import (
    basic_job,
    invoke,
    oracle_ids,
    summary,
    texts,
    visible_files,
    write_parquet,
)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    write_parquet(tmp_path / "in" / "a.parquet", texts(40, seed=1), row_group_size=40)
    write_parquet(tmp_path / "in" / "b.parquet", texts(40, seed=2), row_group_size=40)
    write_parquet(tmp_path / "in" / "c.parquet", texts(200, seed=3), row_group_size=20)
    # a and b: one shard each; c: several shards (parts, joined at the end).
    return basic_job(tmp_path, run__shard_mb=0.004, output__row_group_mb=0.0005)


def _raises_in(shard: str, attempts_log: Path, monkeypatch, *, times: int) -> None:
    """Make encoding ``shard`` raise on its first ``times`` attempts (each worker process
    appends "pid shard" to ``attempts_log`` when it starts a piece of that shard)."""
    original = worker_module._encode_piece

    def encode_piece(piece, first_row, state, *args, **kwargs):
        if first_row == state.task.first_row:  # a shard starts
            with open(attempts_log, "a", encoding="utf-8") as f:
                f.write(f"{os.getpid()} {state.task.shard_id}\n")
            if state.task.shard_id == shard and len(_attempts(attempts_log, shard)) <= times:
                raise RuntimeError(f"injected failure in {shard}")
        return original(piece, first_row, state, *args, **kwargs)

    monkeypatch.setattr(worker_module, "_encode_piece", encode_piece)


def _check_outputs(out: Path, inputs: Path) -> None:
    for name in visible_files(out):
        text = pq.read_table(inputs / name)["text"].to_pylist()
        assert pq.read_table(out / name)["input_ids"].to_pylist() == oracle_ids(text)


def _attempts(attempts_log: Path, shard: str) -> list[int]:
    """Line numbers in ``attempts_log`` of the attempts at ``shard``."""
    lines = attempts_log.read_text(encoding="utf-8").splitlines()
    return [i for i, line in enumerate(lines) if line.split()[1] == shard]


def _fresh_retry(attempts_log: Path, shard: str) -> None:
    """The second attempt at ``shard`` ran in a process that had run nothing before the first
    attempt failed (a new worker, not the failed one nor another one reused)."""
    lines = attempts_log.read_text(encoding="utf-8").splitlines()
    first, second = _attempts(attempts_log, shard)[:2]
    pid = lines[second].split()[0]
    assert pid != lines[first].split()[0]
    assert all(line.split()[0] != pid for line in lines[: first + 1])


@pytest.mark.parametrize("shard", ["b.parquet#0", "c.parquet#2"])
def test_a_shard_that_raises_once_is_retried_in_a_fresh_worker_and_the_run_succeeds(
    job: Path, monkeypatch, shard: str
) -> None:
    out = job.parent / "out"
    attempts = job.parent / "attempts.log"
    _raises_in(shard, attempts, monkeypatch, times=1)
    code, output = invoke("run", job)
    assert code == 0, output
    assert f"shard {shard} failed in worker" in output
    assert f"injected failure in {shard}" in output
    assert "retrying it once in a fresh worker" in output
    assert len(_attempts(attempts, shard)) == 2
    _fresh_retry(attempts, shard)
    report = summary(out)
    assert report["status"] == "success" and report["failures"] == []
    assert [r["task"] for r in report["retries"]] == [f"shard {shard}"]
    assert visible_files(out) == ["a.parquet", "b.parquet", "c.parquet"]
    _check_outputs(out, job.parent / "in")


@pytest.mark.parametrize("workers", [1, 2])
def test_a_shard_that_always_raises_fails_after_one_retry_and_the_others_complete(
    job: Path, monkeypatch, workers: int
) -> None:
    out = job.parent / "out"
    attempts = job.parent / "attempts.log"
    _raises_in("c.parquet#2", attempts, monkeypatch, times=99)
    code, output = invoke("run", job, "--set", f"run.workers={workers}")
    assert code == 1, output
    assert "retrying it once in a fresh worker" in output
    assert "shard c.parquet#2 failed (and again in a fresh worker)" in output
    assert len(_attempts(attempts, "c.parquet#2")) == 2  # one retry
    _fresh_retry(attempts, "c.parquet#2")
    report = summary(out)
    assert report["status"] == "failed" and report["exit_code"] == 1
    assert report["shards"]["failed"] == 1
    (failure,) = report["failures"]
    assert failure["task"] == "shard c.parquet#2" and failure["retried"] is True
    assert "injected failure" in failure["error"]
    # the other files are complete and right; c waits for its one shard
    assert visible_files(out) == ["a.parquet", "b.parquet"]
    _check_outputs(out, job.parent / "in")
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 0, output
    assert summary(out)["shards"]["done"] == 1  # only the shard that failed
    assert visible_files(out) == ["a.parquet", "b.parquet", "c.parquet"]
    _check_outputs(out, job.parent / "in")


def test_the_runners_own_errors_are_not_retried(job: Path, monkeypatch) -> None:
    """A bad row under bad_rows = "fail" describes the input, not the process: reported at
    once, no second attempt."""
    write_parquet(job.parent / "in" / "b.parquet", ["fine", None, "fine"], row_group_size=40)
    code, output = invoke("run", job, "--set", "run.bad_rows=fail")
    assert code == 1, output
    assert "retrying" not in output
    assert summary(job.parent / "out")["retries"] == []
