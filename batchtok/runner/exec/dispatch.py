"""Driving a phase's executor: every event it gives (progress, a task done, a retry, a
failure) handled the same way for the local and the Ray executor.

A task done is handed to the phase (``on_done``); progress goes to the display; a first
attempt that failed is logged and counted as a retry; a task that failed for good is recorded
as a failure and its file left out of the rest of the run; a worker that died leaves a
temporary file and maybe an upload, cleaned here. A Ray node lost is logged once, with the
tasks it was running (queued again) and the actors left, and kept for the summary. Between
events the run lock is checked: if it was deleted or replaced (another run may have started
beside this one), or a failure is fatal (a full disk), nothing more is dispatched and
completed shards are kept.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LockLost
from ..io.arrow_fs import StorageOptions
from ..io.lock import Lock, check_lock
from ..io.stores import Store, as_path
from ..report.progress import Progress
from ..report.stats import FailureRecord, LostNodeRecord, RetryRecord, RunStats
from .executor import Event, Executor, Failure, NodeLoss
from .worker import AssembleTask, HashTask, ShardTask

log = logging.getLogger("batchtok.runner")

#: What a failed task of each kind is called in the summary.
KINDS = {ShardTask: "shard", HashTask: "hash", AssembleTask: "join"}
MAX_LISTED = 10  # tasks a lost node's line names


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


@dataclass
class Dispatcher:
    """The event loop of a run's phases (see the module docstring)."""

    progress: Progress
    stats: RunStats
    store: Store  # of the output directory: a dead worker's upload is aborted there
    tmp_dir: Path
    storage: StorageOptions  # the job's [storage]: requests to that store go with them
    lock: Lock | None = None
    stopping: str = ""  # why the run stopped dispatching, if it did

    def drive(self, executor: Executor, on_done: Callable[[Event], None]) -> None:
        """Handle every event of ``executor`` until its tasks are all done or dropped."""
        for event in executor.events():
            self._check_lock(executor)
            if event is None:
                self.progress.tick()
                continue
            if event.kind == "progress":
                self.progress.add(event.payload, event.task)
                self.progress.tick()
            elif event.kind == "done":
                self.progress.settle(event.task)
                on_done(event)
            elif event.kind == "retry":
                self.progress.drop(event.task)  # the retry reports its rows again
                self._retrying(event)
            elif event.kind == "node_lost":
                self._node_lost(event.payload)
            else:
                self.progress.drop(event.task)
                self._failed(executor, event)

    def lock_state(self) -> tuple[Any, str] | None:
        """The lock's path (with its store's options) and run id, for the workers' check
        before publishing."""
        return None if self.lock is None else (self.lock.path, self.lock.identity())

    def _check_lock(self, executor: Executor) -> None:
        """Stop dispatching if the lock file was deleted or replaced (another run may have
        started beside this one); the workers check it too before publishing a file."""
        if self.lock is None or self.stopping or self.lock.holds_path(cached=True):
            return
        try:
            check_lock(self.lock.path, self.lock.identity())
        except (LockLost, OSError) as exc:  # OSError: an S3 lock that cannot be read for long
            self.stopping = str(exc)
            self.stats.failures.append(FailureRecord("run", str(exc)))
            log.error("%s", exc, extra={"event": "lock_lost"})
            executor.cancel_pending()

    def _remove_leftovers(self, task: Any, failure: Failure) -> None:
        """A worker that died could not delete its temporary file (its pid names it) nor abort
        the upload it had started."""
        if failure.died:
            dest = getattr(task, "dest", "")
            if dest:
                try:
                    self.store.abort_incomplete_of(as_path(dest, self.storage))
                except OSError as exc:  # the next run (holding the lock) aborts it
                    log.warning("%s", exc)
            for leftover in self.tmp_dir.glob(f"*.{failure.pid}.parquet.tmp"):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()

    def _node_lost(self, loss: NodeLoss) -> None:
        """One line for a lost node (its tasks' retries are not logged one by one)."""
        self.stats.lost_nodes.append(
            LostNodeRecord(loss.node, loss.address, loss.reason, loss.retried)
        )
        if loss.retried:
            listed = ", ".join(loss.retried[:MAX_LISTED])
            if len(loss.retried) > MAX_LISTED:
                listed += f" and {len(loss.retried) - MAX_LISTED} more"
            verb = "is" if len(loss.retried) == 1 else "are"
            tasks = f"{_plural(len(loss.retried), 'task')} it was running {verb} retried"
            tasks += f" on the nodes left: {listed}"
        else:
            tasks = "it was running no task"
        log.warning(
            "Ray node %s (%s) was lost (%s): %s; %s on %s from now on",
            loss.node,
            loss.address,
            loss.reason,
            tasks,
            _plural(loss.actors, "actor"),
            _plural(loss.cpus, "CPU"),
            extra={"event": "node_lost", "node": loss.node, "retried": len(loss.retried)},
        )

    def _retrying(self, event: Event) -> None:
        task, failure = event.task, event.payload
        self.stats.retries.append(RetryRecord(task.label, task.rel, failure.error))
        if failure.lost_node:  # the node's line named it
            log.debug("%s %s; queued again", task.label, failure.error)
            self._remove_leftovers(task, failure)
            return
        log.warning(
            "%s failed in worker %s: %s; retrying it once in a fresh worker",
            task.label,
            failure.pid,
            failure.error,
            extra={"event": "retry", "file": task.rel},
        )
        if failure.detail:
            log.warning("%s", failure.detail.rstrip())
        self._remove_leftovers(task, failure)

    def _failed(self, executor: Executor, event: Event) -> None:
        task, failure = event.task, event.payload
        rel = task.rel
        self.stats.failed_files.add(rel)
        if isinstance(task, ShardTask):
            self.progress.shards_failed += 1
        self.stats.failures.append(
            FailureRecord(task.label, failure.error, KINDS[type(task)], rel, failure.retried)
        )
        again = " (and again in a fresh worker)" if failure.retried else ""
        log.error(
            "%s failed%s: %s",
            task.label,
            again,
            failure.error,
            extra={"event": "failed", "file": rel},
        )
        if failure.detail:
            log.error("%s", failure.detail.rstrip())
        self._remove_leftovers(task, failure)
        if failure.fatal and not self.stopping:
            self.stopping = failure.error
            dropped = executor.cancel_pending()
            if dropped:
                log.error(
                    "stopping: %d tasks not started (completed shards are kept)", len(dropped)
                )
