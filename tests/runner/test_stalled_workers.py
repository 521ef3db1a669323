"""Stalled workers: a worker that reports no progress for ``run.stall_timeout`` seconds (a
stopped process, a read that hangs) is killed and its shard retried once in a fresh worker,
with a message naming the worker, the shard and how long it was silent; a batch that is slow
because it holds a long row is given time in proportion to its text, and is not killed.

Workers are forked from the test process, so a function patched here is patched in them too.
"""

from __future__ import annotations

import os
import re
import signal
import time
from pathlib import Path

import pytest

from batchtok.runner.exec import worker as worker_module
from batchtok.runner.outputs import parquet as output_module
from tests.support.runner import (
    basic_job,
    check_outputs,
    invoke,
    summary,
    texts,
    visible_files,
    write_parquet,
)

PARENT = os.getpid()


def _first_time(marker: Path) -> bool:
    """True the first time it is called for ``marker``, in any process."""
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    return True


def test_a_stopped_worker_is_killed_and_its_shard_retried_in_a_fresh_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(60, seed=1), row_group_size=20)
    write_parquet(tmp_path / "in" / "b.parquet", texts(60, seed=2), row_group_size=20)
    job = basic_job(tmp_path, run__stall_timeout=2, output__row_group_mb=0.0005)
    marker = tmp_path / "stopped"
    original = output_module.AtomicParquet.write

    def write(self, table):
        original(self, table)
        if (
            os.getpid() != PARENT
            and os.path.basename(self.dest) == "b.parquet"
            and _first_time(marker)
        ):
            (tmp_path / "stopped-pid").write_text(str(os.getpid()))
            os.kill(os.getpid(), signal.SIGSTOP)  # as `kill -STOP`: it never goes on

    monkeypatch.setattr(output_module.AtomicParquet, "write", write)
    started = time.monotonic()
    code, output = invoke("run", job)
    assert code == 0, output
    assert time.monotonic() - started < 60
    pid = (tmp_path / "stopped-pid").read_text()
    found = re.search(
        rf"worker process {pid} reported no progress for (\d+\.\d) s while running "
        r"shard b\.parquet#0 \(run\.stall_timeout = 2 s\): killed it; retrying it once in a "
        "fresh worker",
        output,
    )
    assert found is not None, output
    assert float(found.group(1)) >= 2
    check_outputs(tmp_path / "out", tmp_path / "in")
    report = summary(tmp_path / "out")
    assert report["status"] == "success" and len(report["retries"]) == 1, report
    assert report["rows"]["read"] == 120 and report["shards"]["done"] == 2, report
    with pytest.raises(ProcessLookupError):  # the stopped worker is gone
        os.kill(int(pid), 0)


def test_a_worker_stopped_on_both_attempts_fails_its_shard_and_the_others_complete(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(40, seed=1), row_group_size=20)
    write_parquet(tmp_path / "in" / "b.parquet", texts(40, seed=2), row_group_size=20)
    job = basic_job(tmp_path, run__stall_timeout=1.5)
    original = worker_module._encode_piece

    def encode_piece(piece, *args, **kwargs):
        if os.getpid() != PARENT and piece.column("text")[0].as_py() == texts(1, seed=2)[0]:
            os.kill(os.getpid(), signal.SIGSTOP)
        return original(piece, *args, **kwargs)

    monkeypatch.setattr(worker_module, "_encode_piece", encode_piece)
    code, output = invoke("run", job)
    assert code == 1, output
    assert output.count("reported no progress for") == 2, output
    assert "(and again in a fresh worker)" in output, output
    assert visible_files(tmp_path / "out") == ["a.parquet"]
    report = summary(tmp_path / "out")
    assert report["shards"]["failed"] == 1 and report["rows"]["read"] == 40, report


def test_a_batch_slow_because_it_holds_a_long_row_is_not_killed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # run.batch_mb = 0.001: a batch holds about 1 kB of text, and the 30 kB row is a batch of
    # its own, allowed 30 times run.stall_timeout; it takes 3 s, three times the timeout.
    long_row = "word " * 6000
    rows = texts(30, seed=3) + [long_row] + texts(30, seed=4)
    write_parquet(tmp_path / "in" / "a.parquet", rows, row_group_size=61)
    job = basic_job(tmp_path, run__stall_timeout=1, run__batch_mb=0.001)
    original = worker_module._encode_piece

    def encode_piece(piece, *args, **kwargs):
        if os.getpid() != PARENT and long_row in piece.column("text").to_pylist():
            time.sleep(3)
        return original(piece, *args, **kwargs)

    monkeypatch.setattr(worker_module, "_encode_piece", encode_piece)
    code, output = invoke("run", job)
    assert code == 0, output
    assert "no progress" not in output and "retry" not in output, output
    check_outputs(tmp_path / "out", tmp_path / "in")
    assert summary(tmp_path / "out")["retries"] == []


def test_the_stall_timeout_is_a_job_setting_in_help_and_validated(tmp_path: Path) -> None:
    code, output = invoke("run", "--help")
    assert code == 0 and "run.stall_timeout" in output and "300" in output, output
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    for bad in (0, -1, "soon"):
        code, output = invoke("run", basic_job(tmp_path, run__stall_timeout=bad))
        assert code == 2 and "run.stall_timeout" in output, output
