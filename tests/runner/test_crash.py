"""Crashes: a killed worker, a full disk, a killed run. No partial file is ever visible in
the output directory, and a re-run completes the job.

Workers are forked from the test process, so a function patched here is patched in them too.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from batchtok.runner.io.lock import current_holder
from batchtok.runner.outputs import parquet as output_module
from tests.support.runner import (
    REPO,
    basic_job,
    invoke,
    oracle_ids,
    summary,
    texts,
    visible_files,
    write_parquet,
)

PARENT = os.getpid()


@pytest.fixture
def job(tmp_path: Path) -> Path:
    write_parquet(tmp_path / "in" / "a.parquet", texts(40, seed=1), row_group_size=40)
    write_parquet(tmp_path / "in" / "b.parquet", texts(40, seed=2), row_group_size=40)
    write_parquet(tmp_path / "in" / "c.parquet", texts(200, seed=3), row_group_size=20)
    # a and b: one shard each; c: several shards (parts, joined at the end).
    return basic_job(tmp_path, run__shard_mb=0.004, output__row_group_mb=0.0005)


def _check_outputs(out: Path, inputs: Path) -> None:
    for name in visible_files(out):
        text = pq.read_table(inputs / name)["text"].to_pylist()
        assert pq.read_table(out / name)["input_ids"].to_pylist() == oracle_ids(text)


def _no_leftovers(out: Path) -> None:
    tmp = out / ".batchtok" / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []


def _dies_on(dest_part: str, monkeypatch) -> None:
    """Kill the worker process writing ``dest_part`` after its first row group hit the disk."""
    original = output_module.AtomicParquet.write

    def write(self, table):
        original(self, table)
        # the whole file name: a part's name ends in a hex key, which can end in "b"
        if os.getpid() != PARENT and os.path.basename(self.dest) == dest_part:
            os._exit(137)

    monkeypatch.setattr(output_module.AtomicParquet, "write", write)


def test_a_killed_worker_leaves_no_partial_file_and_a_rerun_completes(
    job: Path, monkeypatch
) -> None:
    out = job.parent / "out"
    _dies_on("b.parquet", monkeypatch)
    code, output = invoke("run", job)
    assert code == 1, output
    assert "worker process" in output and "exited with status 137" in output
    assert "b.parquet" not in visible_files(out)
    assert {"a.parquet", "c.parquet"} <= set(visible_files(out))
    _no_leftovers(out)
    _check_outputs(out, job.parent / "in")
    report = summary(out)
    assert report["status"] == "failed" and report["shards"]["failed"] == 1
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 0, output
    assert summary(out)["shards"]["done"] == 1
    assert visible_files(out) == ["a.parquet", "b.parquet", "c.parquet"]
    _check_outputs(out, job.parent / "in")


def test_a_killed_worker_in_a_multi_shard_file_keeps_the_other_parts(
    job: Path, monkeypatch
) -> None:
    out = job.parent / "out"
    shards = {}

    original = output_module.AtomicParquet.write

    def write(self, table):
        original(self, table)
        if os.getpid() != PARENT and "#2" in self.schema.metadata[b"batchtok"].decode():
            os._exit(9)

    monkeypatch.setattr(output_module.AtomicParquet, "write", write)
    code, output = invoke("run", job)
    assert code == 1, output
    assert "shard c.parquet#2" in output
    assert "c.parquet" not in visible_files(out)
    parts = list((out / ".batchtok" / "parts").glob("*.parquet"))
    shards["total"] = summary(out)["shards"]["total"]
    assert len(parts) >= 2  # the other shards of c, complete, waiting to be joined
    _no_leftovers(out)
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 0, output
    report = summary(out)
    assert report["shards"]["done"] == 1  # only the shard that crashed
    _check_outputs(out, job.parent / "in")
    assert list((out / ".batchtok" / "parts").glob("*")) == []


def test_a_full_disk_is_a_clear_error_and_leaves_no_partial_file(job: Path, monkeypatch) -> None:
    out = job.parent / "out"
    original = pq.ParquetWriter.write_table

    def write_table(self, table, *args, **kwargs):
        if "b.parquet" in getattr(self, "where", "") or "b.parquet" in str(
            getattr(self, "_batchtok_dest", "")
        ):
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, table, *args, **kwargs)

    original_enter = output_module.AtomicParquet.__enter__

    def enter(self):
        sink = original_enter(self)
        self.writer._batchtok_dest = self.dest
        return sink

    monkeypatch.setattr(pq.ParquetWriter, "write_table", write_table)
    monkeypatch.setattr(output_module.AtomicParquet, "__enter__", enter)
    code, output = invoke("run", job)
    assert code == 1, output
    assert "no space left on device while writing" in output and "b.parquet" in output
    assert "b.parquet" not in visible_files(out)
    _no_leftovers(out)
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 0, output
    _check_outputs(out, job.parent / "in")


SLOW_RUN = """
import sys, time
import batchtok.runner.exec.worker as worker
original = worker._encode_piece
def slow(*args, **kwargs):
    time.sleep(0.05)
    return original(*args, **kwargs)
worker._encode_piece = slow
from batchtok.cli import main
main(["run", sys.argv[1], "--set", "run.batch_mb=0.0005"])
"""


def test_a_killed_run_resumes_and_its_lock_is_taken_over(job: Path) -> None:
    out = job.parent / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_RUN, str(job)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    parts = out / ".batchtok" / "parts"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if parts.exists() and any(parts.glob("*.parquet")):
            break
        assert proc.poll() is None, "the run ended before it could be killed"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20  # orphaned workers exit at their next progress report
    while current_holder(out / ".batchtok" / "lock") is not None:
        assert time.monotonic() < deadline, "orphaned workers kept the lock"
        time.sleep(0.05)
    for name in visible_files(out):  # whatever is visible is complete and right
        assert pq.read_metadata(out / name).num_rows == 40 or name == "c.parquet"
    _check_outputs(out, job.parent / "in")
    code, output = invoke("run", job)
    assert code == 0, output
    assert "stale lock" in output and f"pid {proc.pid}" in output
    assert visible_files(out) == ["a.parquet", "b.parquet", "c.parquet"]
    _check_outputs(out, job.parent / "in")
    _no_leftovers(out)
    report = summary(out)
    assert report["shards"]["cached"] >= 1  # parts from the killed run were reused


def test_sigterm_stops_cleanly_and_a_rerun_resumes(job: Path) -> None:
    out = job.parent / "out"
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", SLOW_RUN, str(job)],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    parts = out / ".batchtok" / "parts"
    deadline = time.monotonic() + 60
    while not (parts.exists() and any(parts.glob("*.parquet"))):
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    proc.send_signal(signal.SIGTERM)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr
    assert summary(out)["status"] == "interrupted"
    assert current_holder(out / ".batchtok" / "lock") is None
    assert (out / ".batchtok" / "lock").read_text() == ""  # released, not stale
    _no_leftovers(out)
    _check_outputs(out, job.parent / "in")
    code, output = invoke("run", job)
    assert code == 0, output
    assert "stale" not in output
    assert visible_files(out) == ["a.parquet", "b.parquet", "c.parquet"]
    _check_outputs(out, job.parent / "in")
