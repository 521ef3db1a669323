"""The run lock: a second run of the same job is refused; a dead run's lock is taken over."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from batchtok.runner.io.lock import LockHeld, RunLock, current_holder
from tests.support.runner import basic_job, invoke, summary, texts, visible_files, write_parquet


@pytest.fixture
def job(tmp_path: Path) -> Path:
    write_parquet(tmp_path / "in" / "a.parquet", texts(20))
    return basic_job(tmp_path)


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_second_run_is_refused_while_the_lock_is_held(job: Path) -> None:
    lock_path = job.parent / "out" / ".batchtok" / "lock"
    with RunLock(lock_path, job="the other run"):
        code, output = invoke("run", job)
        assert code == 4, output
        assert "another run holds" in output and socket.gethostname() in output
        assert "the other run" in output
        assert visible_files(job.parent / "out") == []
        holder = current_holder(lock_path)
        assert holder is not None and holder.job == "the other run"
        code, output = invoke("status", job)
        assert "running: pid" in output
    assert current_holder(lock_path) is None
    code, output = invoke("run", job)
    assert code == 0, output


def test_a_stale_lock_from_a_dead_run_is_taken_over(job: Path) -> None:
    lock_path = job.parent / "out" / ".batchtok" / "lock"
    lock_path.parent.mkdir(parents=True)
    stale = {"pid": _dead_pid(), "host": socket.gethostname(), "started": "x", "job": "old"}
    lock_path.write_text(json.dumps(stale))
    leftover = job.parent / "out" / ".batchtok" / "tmp" / "abc.123.parquet.tmp"
    leftover.parent.mkdir()
    leftover.write_bytes(b"half a file")
    code, output = invoke("run", job)
    assert code == 0, output
    assert "stale lock" in output and f"pid {stale['pid']}" in output
    assert not leftover.exists()
    assert lock_path.read_text() == ""  # released
    assert summary(job.parent / "out")["status"] == "success"


def test_lock_objects_exclude_each_other_and_release(tmp_path: Path) -> None:
    path = tmp_path / "lock"
    first = RunLock(path).acquire()
    with pytest.raises(LockHeld):
        RunLock(path).acquire()
    first.release()
    second = RunLock(path).acquire()
    assert second.stale is None
    second.release()


def test_the_workers_check_names_the_run_not_the_device_a_node_sees(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A network file system may show the lock file under another device number on each node
    # of a cluster: the check before publishing compares the run id the file names.
    import os
    from types import SimpleNamespace

    from batchtok.runner.io.lock import LockLost, check_lock

    path = tmp_path / "lock"
    lock = RunLock(path, job="j").acquire()
    real_stat = os.stat

    def other_device(p, *args, **kwargs):
        st = real_stat(p, *args, **kwargs)
        return SimpleNamespace(st_dev=st.st_dev + 1, st_ino=st.st_ino, st_size=st.st_size)

    monkeypatch.setattr(os, "stat", other_device)
    check_lock(path, lock.identity())  # same run: passes wherever the file is seen from
    monkeypatch.undo()
    path.unlink()
    other = RunLock(path, job="j").acquire()  # deleted by hand, a second run took it
    with pytest.raises(LockLost, match="deleted or replaced"):
        check_lock(path, lock.identity())
    check_lock(path, other.identity())
    other.release()
    with pytest.raises(LockLost):  # a released lock names no run
        check_lock(path, other.identity())
    lock.release()
