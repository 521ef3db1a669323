"""The counts of encoding, one type from a worker's text piece to the run summary.

A worker fills a :class:`ShardStats` for its shard (and sends a small one per piece as
progress); the parent merges them into the run's totals; the progress display and the summary
read the same fields. :class:`RunStats` adds what only the parent knows: shards done, cached
and failed, files written, phase timings.
"""

from __future__ import annotations

import os
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

MAX_EXAMPLES = 100  # bad-row examples (and failures) kept for the summary
_IMPORTED = time.monotonic()


def process_started() -> float:
    """The ``time.monotonic()`` of this process's start: the kernel's record of it on Linux
    (to 1/100 s), else when this module was imported (after the interpreter's start)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        age = time.clock_gettime(time.CLOCK_BOOTTIME) - int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, AttributeError):
        return _IMPORTED
    return time.monotonic() - age


@dataclass
class ShardStats:
    """What encoding some rows gave. ``merge`` adds counts, keeps the first
    :data:`MAX_EXAMPLES` bad-row examples, and the larger peak RSS; it is associative."""

    rows_in: int = 0  # rows read
    rows_out: int = 0  # rows written (fewer when bad rows are skipped)
    tokens: int = 0
    text_bytes: int = 0  # UTF-8 bytes of the text column (and the pair column)
    bad_rows: int = 0
    bad_reasons: Counter[str] = field(default_factory=Counter)
    bad_examples: list[dict[str, Any]] = field(default_factory=list)
    special_tokens: Counter[str] = field(default_factory=Counter)  # found in the text
    seconds: float = 0.0  # spent encoding (summed over shards)
    peak_rss_mb: float = 0.0  # largest resident memory of a worker

    def merge(self, other: ShardStats) -> ShardStats:
        """Add ``other`` into this one; returns self."""
        self.rows_in += other.rows_in
        self.rows_out += other.rows_out
        self.tokens += other.tokens
        self.text_bytes += other.text_bytes
        self.bad_rows += other.bad_rows
        self.bad_reasons.update(other.bad_reasons)
        room = MAX_EXAMPLES - len(self.bad_examples)
        self.bad_examples += other.bad_examples[: max(room, 0)]
        self.special_tokens.update(other.special_tokens)
        self.seconds += other.seconds
        self.peak_rss_mb = max(self.peak_rss_mb, other.peak_rss_mb)
        return self

    def __iadd__(self, other: ShardStats) -> ShardStats:
        return self.merge(other)

    def times(self, copies: int) -> ShardStats:
        """The counts of ``copies`` shards with this content, encoded once: examples, time
        and memory are those of the one encoding."""
        return replace(
            self,
            rows_in=self.rows_in * copies,
            rows_out=self.rows_out * copies,
            tokens=self.tokens * copies,
            text_bytes=self.text_bytes * copies,
            bad_rows=self.bad_rows * copies,
            bad_reasons=Counter({k: v * copies for k, v in self.bad_reasons.items()}),
            special_tokens=Counter({k: v * copies for k, v in self.special_tokens.items()}),
            bad_examples=list(self.bad_examples),
        )


@dataclass(frozen=True)
class FailureRecord:
    """A task that failed for good (or the run itself: ``task`` "run", no kind or file), as
    the summary's ``failures`` lists it."""

    task: str  # the task's label ("encode a.parquet#0"), or "run"
    error: str
    kind: str | None = None  # "shard", "hash" or "join"
    file: str | None = None  # the input it belongs to
    retried: bool | None = None  # failed in a fresh worker too

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"task": self.task}
        if self.kind is not None:
            doc["kind"] = self.kind
        if self.file is not None:
            doc["file"] = self.file
        doc["error"] = self.error
        if self.retried is not None:
            doc["retried"] = self.retried
        return doc


@dataclass(frozen=True)
class RetryRecord:
    """A first attempt that failed and was run again in a fresh worker (its second
    attempt's outcome is in the counts, or in the failures)."""

    task: str
    file: str
    error: str

    def to_json(self) -> dict[str, Any]:
        return {"task": self.task, "file": self.file, "error": self.error}


@dataclass(frozen=True)
class LostNodeRecord:
    """A Ray node lost during the run, as the summary's ``lost_nodes`` lists it: its id and
    address, why Ray declared it dead, and the tasks it was running, queued again."""

    node: str
    address: str
    reason: str
    retried: list[str]

    def to_json(self) -> dict[str, Any]:
        return {
            "node": self.node,
            "address": self.address,
            "reason": self.reason,
            "retried": self.retried,
        }


@dataclass
class RunStats:
    """The parent's account of a run, from which the summary is written."""

    encoded: ShardStats = field(default_factory=ShardStats)  # totals of the shards encoded now
    shards_done: int = 0  # encoded in this run (identical shards counted each)
    shards_cached: int = 0  # found complete in the output or as parts
    cached_bad_rows: int = 0  # bad rows those hold (recorded when they were written)
    files_written: int = 0
    failures: list[FailureRecord] = field(default_factory=list)
    retries: list[RetryRecord] = field(default_factory=list)  # first attempts that failed
    lost_nodes: list[LostNodeRecord] = field(default_factory=list)  # Ray nodes lost
    failed_files: set[str] = field(default_factory=set)
    hash_seconds: float = 0.0
    encode_seconds: float = 0.0
    fork_rss_mb: float | None = None  # the parent's RSS when it forked the encode workers
    # from the program's start (or a run called by a longer-lived process: the call's) to the
    # first shard handed to a worker (None: none was)
    startup_seconds: float | None = None
    orphans: list[str] = field(default_factory=list)  # outputs whose input is gone
    interrupted: bool = False
    started_wall: float = field(default_factory=time.time)
    started: float = field(default_factory=time.monotonic)

    @property
    def failed_shards(self) -> int:
        return sum(1 for f in self.failures if f.kind == "shard")

    def elapsed(self) -> float:
        return time.monotonic() - self.started
