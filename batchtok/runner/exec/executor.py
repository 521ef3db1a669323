"""What every executor is: the :class:`Executor` protocol the run drives, the events it
gives (:class:`Event`, :class:`Failure`) and the queue and retry policy they share
(:class:`TaskQueue`). The local executor (:mod:`.local`: forked processes) and the Ray one
(:mod:`.ray_cluster`: actors) follow it; :mod:`.dispatch` handles its events.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from ..report.stats import ShardStats
from .worker import TaskResult


@dataclass(frozen=True)
class Failure:
    """Why a task failed: ``error`` (one line), ``detail`` (a traceback, for unexpected
    errors), ``fatal`` (the run stops dispatching), ``died`` (the worker process died),
    ``pid`` (of the worker), ``retryable`` (worth a second attempt in a fresh worker),
    ``retried`` (it was the second), ``lost_node`` (the Ray node lost with the worker, if
    that was the cause: the task is queued again, not counted as a failed attempt)."""

    error: str
    detail: str = ""
    fatal: bool = False
    died: bool = False
    pid: int | None = None
    retryable: bool = False  # another process might succeed (see the module's docstring)
    retried: bool = False  # this is the second attempt's failure
    lost_node: str = ""  # the id of the cluster node lost with the worker


@dataclass(frozen=True)
class NodeLoss:
    """A cluster node lost during a phase: ``node`` (its id), ``address``, ``reason`` (the
    cluster's word for it), ``retried`` (the labels of the tasks it was running, queued
    again), ``actors`` and ``cpus`` (the workers and CPUs left)."""

    node: str
    address: str
    reason: str
    retried: list[str]
    actors: int
    cpus: int


@dataclass
class Event:
    """``kind``: "progress" (payload: the counts added, a :class:`ShardStats`), "done"
    (payload: the task's result), "failed" (payload: a :class:`Failure`), "retry" (payload:
    the :class:`Failure` of the first attempt; the task is queued again for a fresh worker),
    "node_lost" (Ray only; task: None, payload: a :class:`NodeLoss`, given before the
    "retry" events of the tasks the node was running)."""

    kind: str
    task: Any
    payload: ShardStats | TaskResult | Failure | NodeLoss


class Executor(Protocol):
    """Runs tasks on workers; the run submits tasks and iterates :meth:`events` until they
    are all done, failed or dropped. Used as a context manager: leaving it stops the
    workers."""

    workers: int
    first_sent: dict[str, float]

    def __enter__(self) -> Executor: ...

    def __exit__(self, *exc: object) -> None: ...

    def submit(self, task: Any, first: bool = False) -> None:
        """Queue ``task`` (``first``: before the others)."""

    def events(self, tick: float = 0.25) -> Iterator[Event | None]:
        """Every event, and None every ``tick`` seconds without one, until no task is left."""

    def cancel_pending(self) -> list[Any]:
        """Drop the tasks not started and retry nothing from now on; the dropped tasks."""


@dataclass
class TaskQueue:
    """What every executor shares: the queue of tasks not started and the retry policy (see
    the module's docstring). A task that fails in a way another process might not is run
    ``retries`` more times, each in a fresh worker."""

    workers: int
    retries: int = 1
    _pending: deque = field(default_factory=deque)  # (task, needs a fresh worker)
    _attempts: dict[int, tuple[Any, int]] = field(default_factory=dict)  # id -> (task, failed)
    _stopped: bool = False
    # time.monotonic() when the first task of each kind (its class name) went to a worker
    first_sent: dict[str, float] = field(default_factory=dict)

    def submit(self, task: Any, first: bool = False) -> None:
        if first:
            self._pending.appendleft((task, False))
        else:
            self._pending.append((task, False))

    def _sent(self, task: Any) -> None:
        self.first_sent.setdefault(type(task).__name__, time.monotonic())

    def cancel_pending(self) -> list[Any]:
        """Drop the tasks not started and retry nothing from now on; returns the dropped."""
        self._stopped = True
        dropped = [task for task, _ in self._pending]
        self._pending.clear()
        return dropped

    def _retry_or_fail(self, task: Any, failure: Failure) -> Event:
        """The event for a failed attempt: "retry" (queued first, for a fresh worker) while
        attempts are left, else "failed"."""
        _, failed = self._attempts.get(id(task), (task, 0))
        if failure.retryable and failed < self.retries and not self._stopped:
            self._attempts[id(task)] = (task, failed + 1)  # the task is kept alive with its id
            self._pending.appendleft((task, True))
            return Event("retry", task, failure)
        self._attempts.pop(id(task), None)
        return Event("failed", task, replace(failure, retried=failed > 0))
