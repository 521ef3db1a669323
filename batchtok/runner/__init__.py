"""The job runner: Parquet text columns in, token-id columns out, across worker processes.

A job file (TOML) names the inputs, the text column, the tokenizer, the encode options and the
output. :func:`load_job` reads and validates it, :func:`run_job` runs it and returns an exit
code, :func:`plan_job` says what a run would do without doing it::

    >>> from batchtok.runner import load_job, run_job          # doctest: +SKIP
    >>> run_job(load_job("jobs/example.toml")).exit_code        # doctest: +SKIP
    0

Every error the runner raises is a :class:`RunnerError` carrying its exit code
(:mod:`batchtok.runner.errors`); :class:`JobError` is an invalid job (exit code 2).

The command line (``batchtok run``, ``batchtok plan``, ``batchtok status``) is in
:mod:`batchtok.runner.cli`.
"""

from .errors import (
    BadRowError,
    CorruptFileError,
    DiskFullError,
    InputChangedError,
    InvalidValue,
    JobError,
    LockHeld,
    LockLost,
    RunnerError,
)
from .exit_codes import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_OK_WITH_BAD_ROWS,
    EXIT_USAGE,
)
from .job import Job, load_job

# What runs a job imports pyarrow and the engine; reading a job file needs neither.
_LAZY = {"plan_job": ".prepare", "RunResult": ".run", "run_job": ".run"}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "BadRowError",
    "CorruptFileError",
    "DiskFullError",
    "EXIT_FAILURE",
    "EXIT_INTERRUPTED",
    "EXIT_LOCKED",
    "EXIT_OK",
    "EXIT_OK_WITH_BAD_ROWS",
    "EXIT_USAGE",
    "InputChangedError",
    "InvalidValue",
    "Job",
    "JobError",
    "LockHeld",
    "LockLost",
    "RunResult",
    "RunnerError",
    "load_job",
    "plan_job",
    "run_job",
]
