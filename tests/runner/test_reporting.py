"""What a run reports: its summary (written or not, read back by ``status``), its progress,
and what it says when the state directory cannot be written. A summary that cannot be written
fails the run (exit 1) with the outputs valid; ``status`` tells a truncated summary and
another job's summary from none; progress never passes 100% when a shard is retried, and the
summary's counts are exact; a dead run's half-written summary is removed by the next run.

Workers are forked from the test process, so a function patched here is patched in them too.
"""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import pytest

from batchtok.runner.outputs import parquet as output_module
from tests.support.runner import (
    basic_job,
    check_outputs,
    invoke,
    oracle_ids,
    summary,
    texts,
    write_parquet,
)

PARENT = os.getpid()
SUMMARY = "_batchtok_summary.json"


@pytest.fixture
def job(tmp_path: Path) -> Path:
    write_parquet(tmp_path / "in" / "a.parquet", texts(40, seed=1), row_group_size=20)
    write_parquet(tmp_path / "in" / "b.parquet", texts(120, seed=2), row_group_size=20)
    return basic_job(tmp_path, output__row_group_mb=0.0005)


def test_a_summary_that_cannot_be_written_fails_the_run_naming_it(job: Path) -> None:
    out = job.parent / "out"
    (out / SUMMARY).mkdir(parents=True)  # os.replace onto it fails: EISDIR
    code, output = invoke("run", job)
    assert code == 1, output
    assert f"cannot write the run summary {out / SUMMARY}: Is a directory" in output, output
    assert f"summary: {out / SUMMARY}" not in output, output
    check_outputs(out, job.parent / "in")  # the outputs are complete and valid
    assert list((out / ".batchtok").glob("summary.*.tmp")) == []
    (out / SUMMARY).rmdir()
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output


def test_status_says_a_truncated_summary_is_unreadable_naming_it(job: Path) -> None:
    code, output = invoke("run", job)
    assert code == 0, output
    path = job.parent / "out" / SUMMARY
    text = path.read_bytes()
    path.write_bytes(text[: len(text) // 2])
    code, output = invoke("status", job)
    assert code == 1, output
    assert f"last run: unknown: {path} is unreadable (truncated or not JSON" in output, output
    assert "not found" not in output, output
    code, output = invoke("status", job, "--json")
    assert code == 1 and "is unreadable" in json.loads(output)["summary_problem"], output


def test_status_in_an_output_shared_by_two_jobs_names_the_other_job(tmp_path: Path) -> None:
    jobs = []
    for name, seed in (("first", 1), ("second", 2)):
        write_parquet(tmp_path / name / "in" / f"{name}.parquet", texts(20, seed=seed))
        jobs.append(
            basic_job(tmp_path / name, output__dir=str(tmp_path / "shared"), name=f"{name}-job")
        )
    for job in jobs:
        code, output = invoke("run", job)
        assert code == 0, output
    code, output = invoke("status", jobs[0])
    assert code == 1, output
    assert (
        f"is the summary of another job, second-job ({jobs[1]}), not of first-job ({jobs[0]})"
        in output
    ), output
    code, output = invoke("status", jobs[1])
    assert code == 0 and "another job" not in output, output


def test_progress_never_passes_100_percent_when_a_shard_is_retried(
    job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marker = job.parent / "killed"
    original = output_module.AtomicParquet.write

    def write(self, table):
        original(self, table)
        if os.getpid() != PARENT and os.path.basename(self.dest) == "b.parquet":
            if self.row_groups >= 3 and not marker.exists():  # most of it reported
                marker.write_text("")
                os._exit(9)

    monkeypatch.setattr(output_module.AtomicParquet, "write", write)
    code, output = invoke("run", job, "--progress-interval", "0")
    assert code == 0 and marker.exists(), output
    assert "retrying it once in a fresh worker" in output, output
    shares = [int(s) for s in re.findall(r"MB/s  (\d+)%  ETA", output)]
    assert shares and max(shares) <= 100 and shares[-1] == 100, output
    report = summary(job.parent / "out")
    text = texts(40, seed=1) + texts(120, seed=2)
    assert report["rows"] == {"read": 160, "written": 160}, report
    assert report["tokens"] == sum(len(ids) for ids in oracle_ids(text)), report
    assert report["shards"]["done"] == 2 and len(report["retries"]) == 1, report


def test_a_state_directory_that_cannot_be_written_is_named_with_the_reason(
    job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = job.parent / "out" / ".batchtok" / "lock"
    real_open = os.open

    def read_only(path, flags, *args, **kwargs):  # as a read-only mount answers (even root)
        if os.fspath(path) == str(lock) and flags & (os.O_RDWR | os.O_WRONLY):
            raise PermissionError(errno.EROFS, os.strerror(errno.EROFS), str(lock))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    code, output = invoke("run", job)
    assert code == 2, output
    assert f"output.dir (set in {job}): cannot write {lock}: Read-only file system" in output
    assert "cannot create" not in output, output


def test_a_state_directory_holding_a_writable_lock_but_read_only_is_refused_up_front(
    job: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmp = job.parent / "out" / ".batchtok" / "tmp"
    real_mkdir = os.mkdir

    def read_only(path, *args, **kwargs):
        if os.fspath(path) == str(tmp):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(tmp))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", read_only)
    code, output = invoke("run", job)
    assert code == 2, output
    assert f"cannot write {tmp}: Permission denied" in output, output
    assert not (job.parent / "out" / "a.parquet").exists()


def test_the_next_run_removes_the_summary_a_killed_run_left_half_written(job: Path) -> None:
    code, output = invoke("run", job)
    assert code == 0, output
    state = job.parent / "out" / ".batchtok"
    leftover = state / "summary.4194303.tmp"  # a pid above the kernel's limit: dead
    leftover.write_text('{"status": "succ')
    code, output = invoke("run", job)
    assert code == 0, output
    assert not leftover.exists()
    assert list(state.glob("summary.*.tmp")) == []
