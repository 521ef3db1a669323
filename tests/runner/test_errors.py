"""The runner's errors: one base class, each carrying the exit code it means."""

from __future__ import annotations

import errno
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import batchtok.runner as runner
from batchtok.runner import exit_codes as codes
from batchtok.runner.errors import (
    BadRowError,
    CorruptFileError,
    DiskFullError,
    InputChangedError,
    InvalidValue,
    JobError,
    LockHeld,
    LockLost,
    OracleMissing,
    Problem,
    RunnerError,
)
from batchtok.runner.outputs.parquet import read_metadata

EXIT_CODES = {
    JobError: codes.EXIT_USAGE,
    InvalidValue: codes.EXIT_USAGE,
    LockHeld: codes.EXIT_LOCKED,
    OracleMissing: codes.EXIT_USAGE,
    BadRowError: codes.EXIT_FAILURE,
    DiskFullError: codes.EXIT_FAILURE,
    CorruptFileError: codes.EXIT_FAILURE,
    InputChangedError: codes.EXIT_FAILURE,
    LockLost: codes.EXIT_FAILURE,
}


def _all_subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _all_subclasses(sub)
    return found


def test_every_runner_error_has_its_exit_code() -> None:
    assert _all_subclasses(RunnerError) == set(EXIT_CODES)
    for cls, code in EXIT_CODES.items():
        assert cls.exit_code == code, cls.__name__


def test_only_bad_rows_a_full_disk_and_a_lost_lock_stop_the_run() -> None:
    assert {cls for cls in EXIT_CODES if cls.stops_run} == {BadRowError, DiskFullError, LockLost}


def test_job_error_is_the_package_level_name_and_lists_its_problems() -> None:
    assert runner.JobError is JobError and runner.RunnerError is RunnerError
    exc = JobError([Problem("input.paths", "no input file found")], "job.toml")
    assert str(exc) == "job.toml is invalid:\n  input.paths: no input file found"
    assert exc.exit_code == 2


def test_built_in_bases_are_kept_for_callers_that_catch_them() -> None:
    full = DiskFullError(errno.ENOSPC, "no space left on device while writing out/a.parquet")
    assert isinstance(full, OSError) and full.errno == errno.ENOSPC
    assert full.strerror.startswith("no space left")
    assert isinstance(CorruptFileError("x"), ValueError)
    assert isinstance(InvalidValue("x"), ValueError)


def test_a_file_without_batchtok_metadata_is_a_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"text": ["a"]}), path)
    with pytest.raises(CorruptFileError, match="no batchtok metadata"):
        read_metadata(path)
