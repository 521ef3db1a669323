"""The runner's errors: one base class, each subclass carrying the exit code it means.

:class:`RunnerError` is the base; ``exit_code`` says how ``batchtok run`` ends when the error
decides the run's outcome (see :mod:`.exit_codes`), and ``stops_run`` whether a
worker's error makes the run stop dispatching shards (every other shard would hit it too, or
the job asked to stop at the first bad row)::

    >>> from batchtok.runner.errors import LockHeld
    >>> LockHeld("another run holds out/.batchtok/lock").exit_code
    4

Some subclasses also derive from the built-in class callers already catch: a full disk is an
:class:`OSError` (with ``errno.ENOSPC``), a corrupt file or a value that does not fit its key a
:class:`ValueError`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from . import exit_codes as codes


def reason(exc: BaseException) -> str:
    """What went wrong, as a message shows it: an OS error's own words (``Permission
    denied``, without the errno and path Python adds), else the exception's text."""
    strerror = exc.strerror if isinstance(exc, OSError) else None
    return strerror or str(exc)


class RunnerError(Exception):
    """Base of the runner's errors."""

    exit_code = codes.EXIT_FAILURE
    stops_run = False


@dataclass(frozen=True)
class Problem:
    """One reason a job cannot run, naming its key (and the file or flag that set it)."""

    key: str
    message: str
    source: str = ""

    def __str__(self) -> str:
        where = f" (set in {self.source})" if self.source else ""
        return f"{self.key}{where}: {self.message}"


class JobError(RunnerError):
    """A job that cannot run: every problem found, each naming its key. Nothing was run."""

    exit_code = codes.EXIT_USAGE

    def __init__(self, problems: Iterable[Problem], job: str = "") -> None:
        self.problems = list(problems)
        self.job = job
        head = f"{job} is invalid:" if job else "the job is invalid:"
        super().__init__("\n  ".join([head, *map(str, self.problems)]))


class InvalidValue(RunnerError, ValueError):
    """A value does not fit its key; the message says what was expected. Loading a job turns
    each into a :class:`Problem` of one :class:`JobError`."""

    exit_code = codes.EXIT_USAGE


class LockHeld(RunnerError):
    """Another run holds the job's lock; the message names it. Nothing was run."""

    exit_code = codes.EXIT_LOCKED


class LockLost(RunnerError):
    """The lock file was deleted or replaced during the run: another run may hold a new one,
    so this run stops before publishing anything else; the message says so."""

    stops_run = True


class BadRowError(RunnerError):
    """A bad row under ``bad_rows = "fail"``; the message names the file and the row."""

    stops_run = True


class DiskFullError(RunnerError, OSError):
    """No space left while writing an output; the message says where."""

    stops_run = True


class CorruptFileError(RunnerError, ValueError):
    """An input or output whose content disagrees with its footer or its batchtok metadata."""


class InputChangedError(RunnerError):
    """An input changed (or was replaced or deleted) after the run hashed it: its ids would
    be those of content the cache keys do not describe, so the file fails in this run; the
    message names it. A re-run hashes it again."""


class OracleMissing(RunnerError):
    """``batchtok audit`` without Hugging Face ``tokenizers`` installed; the message names the
    extra to install. Nothing was checked."""

    exit_code = codes.EXIT_USAGE
