"""What a run does when it should not run, or cannot finish: a refused job writes nothing, a
killed run shows in status, exit codes say what happened, a deleted lock stops the run."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from batchtok.runner import run as run_module
from batchtok.runner.exec import worker as worker_module
from batchtok.runner.io import lock as lock_module
from batchtok.runner.io.lock import RunLock, current_holder
from tests.support.runner import (
    REPO,
    basic_job,
    invoke,
    summary,
    texts,
    visible_files,
    write_parquet,
)

PARENT = os.getpid()


@pytest.fixture
def job(tmp_path: Path) -> Path:
    write_parquet(tmp_path / "in" / "a.parquet", texts(40, seed=1), row_group_size=10)
    write_parquet(tmp_path / "in" / "b.parquet", texts(40, seed=2), row_group_size=10)
    return basic_job(tmp_path)


def _all_files(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*"))


def test_a_refused_job_writes_nothing_into_its_input_directory(job: Path) -> None:
    inputs = job.parent / "in"
    before = _all_files(inputs)
    code, output = invoke("run", job, "--output", str(inputs))
    assert code == 2 and "output.dir" in output, output
    assert _all_files(inputs) == before  # no summary, no lock, no .batchtok


def test_a_refused_job_creates_no_output_directory(job: Path) -> None:
    code, output = invoke("run", job, "--set", "input.text_column=body")
    assert code == 2 and "input.text_column" in output, output
    assert not (job.parent / "out").exists()


KILLED_RUN = """
import sys, time
import batchtok.runner.exec.worker as worker
original = worker._encode_piece
def slow(*args, **kwargs):
    time.sleep(0.2)
    return original(*args, **kwargs)
worker._encode_piece = slow
from batchtok.cli import main
main(["run", sys.argv[1], "--set", "run.batch_mb=0.0002", *sys.argv[2:]])
"""


def test_status_after_a_killed_run_says_it_did_not_finish(job: Path) -> None:
    out = job.parent / "out"
    assert invoke("run", job)[0] == 0
    assert invoke("status", job)[0] == 0
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, str(job), "--set", "encode.max_length=5"],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    lock = out / ".batchtok" / "lock"
    deadline = time.monotonic() + 60
    while current_holder(lock) is None or current_holder(lock).pid != proc.pid:
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while current_holder(lock) is not None:  # its workers exit too
        assert time.monotonic() < deadline
        time.sleep(0.05)
    code, output = invoke("status", job)
    assert code == 1, output
    assert "did not finish" in output and f"pid {proc.pid}" in output
    code, output = invoke("status", job, "--json")
    assert json.loads(output)["unfinished_run"]["pid"] == proc.pid
    assert invoke("run", job)[0] == 0
    assert invoke("status", job)[0] == 0


def test_a_full_disk_at_start_is_not_an_invalid_job(job: Path, monkeypatch) -> None:
    def full(self):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(RunLock, "acquire", full)
    code, output = invoke("run", job)
    assert code == 1, output
    assert "no space left on device" in output and "invalid" not in output


def test_a_max_length_beyond_int32_is_an_invalid_job(job: Path) -> None:
    code, output = invoke("run", job, "--set", "encode.max_length=18446744073709551616")
    assert code == 2, output
    assert "encode.max_length" in output and "2147483647" in output


def test_more_workers_than_cores_are_capped_with_a_warning(job: Path) -> None:
    code, output = invoke("run", job, "--set", "run.workers=100000")
    assert code == 0, output
    assert "run.workers = 100000" in output
    assert summary(job.parent / "out")["workers"] == run_module.available_cores()


def test_a_lock_path_that_no_longer_names_the_held_file_is_noticed(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    first = RunLock(path).acquire()
    path.unlink()
    second = RunLock(path).acquire()  # a new file: nothing stops a second run taking it
    assert second.holds_path() and not first.holds_path()
    with pytest.raises(lock_module.LockLost, match="deleted or replaced"):
        lock_module.check_lock(path, first.identity())
    first.release()
    second.release()


def test_the_lock_is_taken_again_when_its_file_was_replaced_meanwhile(
    tmp_path: Path, monkeypatch
) -> None:
    path = tmp_path / "lock"
    original = RunLock._acquire_once
    calls = []

    def replaced_once(self):
        original(self)
        calls.append(1)
        if len(calls) == 1:  # another process deleted and recreated it after our open
            path.unlink()
            path.write_text("")

    monkeypatch.setattr(RunLock, "_acquire_once", replaced_once)
    held = RunLock(path).acquire()
    assert len(calls) == 2 and held.holds_path()
    held.release()


def test_deleting_the_lock_during_a_run_stops_it_before_publishing(job: Path, monkeypatch) -> None:
    out = job.parent / "out"
    original = worker_module.encode_shard

    def delete_lock_then_encode(task, report, ctx):
        if "a.parquet" in task.path:
            (out / ".batchtok" / "lock").unlink(missing_ok=True)
        return original(task, report, ctx)

    monkeypatch.setitem(
        worker_module.TASK_FUNCTIONS, worker_module.ShardTask, delete_lock_then_encode
    )
    code, output = invoke("run", job, "--set", "run.workers=1")
    assert code == 1, output
    assert "deleted or replaced during the run" in output
    assert "a.parquet" not in visible_files(out)
