"""Local executor: forked worker processes, one pipe each, death detected and reported.

**Start method: fork, chosen explicitly** (``multiprocessing.get_context("fork")``, whatever the
platform default). Two reasons: the tokenizer is loaded once in the parent and the children
use its tables through copy-on-write (loading a large tokenizer.json in pure Python takes
seconds and hundreds of MB; ``spawn`` would repeat that per worker), and
``multiprocessing-logging`` forwards the children's log records to the parent through a queue
the children inherit, which only works with fork. ``gc.freeze()`` before forking keeps the
collector from touching (and so copying) the inherited objects. Fork needs POSIX; the runner
is not supported on Windows.

Each worker has its own duplex pipe: the parent sends one task at a time and the worker sends
progress and the result back. No lock is shared between workers, so a worker killed at any
moment (OOM killer, ``kill -9``) cannot wedge the others: the parent sees its process sentinel
and starts a replacement.

**One retry, in a fresh process.** A task whose worker died, or raised an error the runner did
not expect (a bug, ``MemoryError``, a C extension's failure), is run once more in a newly forked
worker: the cause may have been the process (memory another task fragmented, the OOM killer
choosing it, state a previous task left), not the task. A worker that raised is retired rather
than reused, for the same reason. If the second attempt fails too, the task is reported failed
and the next run redoes it. The runner's own errors (a bad row under ``bad_rows = "fail"``, an
input changed, a corrupt file, a full disk, a lost lock) describe the task or the run, not the
process, and are reported at once. A run that stops dispatching retries nothing.

**A stalled worker is killed.** A worker tells the parent whenever it moves on: before it
encodes a batch (with the batch's text bytes), after it encodes it (its progress), after each
8192 rows it hashes, each row group it joins and each part it uploads. One silent for
``stall_timeout`` seconds (``run.stall_timeout``) has stopped (SIGSTOP, a read that hangs on a
dead mount or server): the parent kills it (SIGKILL, which a stopped process gets too), names
its pid, its task and how long it was silent, and retries the task once in a fresh worker, as
a crashed worker's. A legitimately slow batch is not stalled: a batch holding more text than
``stall_unit_bytes`` (``run.batch_mb``: one row longer than a batch) is allowed
``stall_timeout`` per ``stall_unit_bytes`` of its text.

Tasks and results are small (paths, row-group ranges, counts); the data never crosses a pipe.
"""

from __future__ import annotations

import contextlib
import errno
import gc
import logging
import multiprocessing
import multiprocessing.connection as mpc
import os
import signal
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import BadRowError, RunnerError
from ..report.stats import ShardStats
from .executor import Event, Failure, TaskQueue
from .worker import WorkerContext, run_task

log = logging.getLogger("batchtok.runner")

FORK = multiprocessing.get_context("fork")
_FATAL_ERRNOS = {errno.ENOSPC, errno.EDQUOT, errno.EROFS}


def _die_with_parent(parent: int) -> None:
    """Linux: have the kernel kill this worker when the parent dies (a killed run must not
    leave workers running, holding the lock's file descriptor)."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


def heap_trimmer() -> Any:
    """glibc's ``malloc_trim``, or None elsewhere. A shard's Python lists of ids and texts live
    on the C heap; glibc keeps the freed space mapped. Trimming after each task returned
    30-35 MB per worker between shards (llama3, 32 MB shards) in about a millisecond."""
    try:
        import ctypes

        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError):
        return None


def _worker_main(
    conn: mpc.Connection, siblings: list[mpc.Connection], parent: int, ctx: WorkerContext
) -> None:
    _die_with_parent(parent)
    # Forked copies of the other workers' pipe ends would keep their pipes open after the
    # parent dies; close them so every worker sees EOF.
    for other in siblings:
        other.close()
    # Ctrl-C reaches the whole process group; the parent decides and stops the workers.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)

    def report(added: ShardStats) -> None:
        conn.send(("progress", added))

    ctx.hear(lambda text_bytes: conn.send(("alive", text_bytes)))

    trim = heap_trimmer()

    while True:
        try:
            while not conn.poll(1.0):
                if os.getppid() != parent:
                    return
            task = conn.recv()
        except (EOFError, OSError):
            return
        if task is None:
            return
        try:
            result = run_task(task, report, ctx)
        except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
            try:
                conn.send(("failed", failure_of(exc)))
            except (OSError, ValueError):
                return
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                return
            continue
        try:
            conn.send(("done", result))
        except (OSError, ValueError):
            return
        if trim is not None:
            trim(0)


def failure_of(exc: BaseException) -> Failure:
    """The :class:`Failure` a task's exception makes (call in its ``except`` block)."""
    # The run stops dispatching after these: every other shard would hit them too, or the
    # job asked to stop at the first bad row.
    fatal = (isinstance(exc, RunnerError) and exc.stops_run) or (
        isinstance(exc, OSError) and exc.errno in _FATAL_ERRNOS
    )
    detail = "" if isinstance(exc, (BadRowError, OSError)) else traceback.format_exc()
    # The runner's own errors describe the task (or the run), not this process.
    retryable = not isinstance(exc, (RunnerError, KeyboardInterrupt, SystemExit))
    return Failure(_describe(exc), detail, fatal, retryable=retryable and not fatal)


def _describe(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return f"{exc.strerror}: {exc.filename}" if exc.filename else exc.strerror
    text = str(exc) or type(exc).__name__
    return text if type(exc).__name__ in text else f"{type(exc).__name__}: {text}"


def allowed_silence(stall_timeout: float, unit_bytes: float, text_bytes: int) -> float:
    """Seconds a worker starting a batch of ``text_bytes`` may go without a sign of progress:
    ``stall_timeout``, or that once per ``unit_bytes`` (a full batch) of a longer batch's text
    (see the module's docstring)."""
    return stall_timeout * max(1.0, text_bytes / max(unit_bytes, 1.0))


@dataclass
class _Worker:
    process: Any
    conn: mpc.Connection
    task: Any = None
    heard: float = 0.0  # time.monotonic() of its last message (or of its task's start)
    allowed: float = 0.0  # seconds of silence it may take from then on (stall_timeout, or more)


@dataclass
class LocalExecutor(TaskQueue):
    """Run tasks on ``workers`` forked processes; iterate :meth:`events` to drive them."""

    context: WorkerContext | None = None  # what the workers' tasks read (inherited by fork)
    stall_timeout: float | None = None  # see the module's docstring; None: wait forever
    stall_unit_bytes: int = 8_000_000  # the text of a batch (run.batch_mb)
    _pool: list[_Worker] = field(default_factory=list)
    _started: int = 0

    def __enter__(self) -> LocalExecutor:
        # What the workers inherit is frozen, so that their collections never write to (and
        # copy) the parent's pages; not collected first (as Python's docs advise: a full
        # collection of a loaded tokenizer costs ~20 ms, a small run's fork)
        gc.freeze()
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()
        gc.unfreeze()

    def _spawn(self) -> _Worker:
        parent_end, child_end = FORK.Pipe(duplex=True)
        self._started += 1
        process = FORK.Process(
            target=_worker_main,
            args=(child_end, [w.conn for w in self._pool], os.getpid(), self.context),
            name=f"batchtok-worker-{self._started}",
            daemon=True,
        )
        process.start()
        child_end.close()
        worker = _Worker(process, parent_end)
        self._pool.append(worker)
        return worker

    def _dispatch(self) -> None:
        while self._pending:
            task, fresh = self._pending[0]
            idle = next((w for w in self._pool if w.task is None), None)
            if fresh and idle is not None:
                self._retire(idle, stop=True)  # make room for a new process
                idle = None
            if idle is None:
                if len(self._pool) >= self.workers:
                    return
                idle = self._spawn()
            self._pending.popleft()
            idle.task = task
            self._heard(idle)
            try:
                idle.conn.send(task)
            except (OSError, ValueError):
                idle.task = None
                self._pending.appendleft((task, fresh))
                self._retire(idle)
                continue
            self._sent(task)

    def _retire(self, worker: _Worker, stop: bool = False) -> None:
        """Take ``worker`` out of the pool; ``stop``: ask an idle one to exit first."""
        if worker in self._pool:
            self._pool.remove(worker)
        if stop:
            try:
                worker.conn.send(None)
            except (OSError, ValueError):
                pass
        worker.conn.close()
        worker.process.join(timeout=5)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(timeout=5)

    def events(self, tick: float = 0.25) -> Iterator[Event | None]:
        """Dispatch and yield events until nothing is pending or running; ``None`` every
        ``tick`` seconds without news (to redraw progress)."""
        while True:
            self._dispatch()
            running = [w for w in self._pool if w.task is not None]
            if not running and not self._pending:
                return
            waitables: dict[Any, _Worker] = {}
            for w in running:
                waitables[w.conn] = w
                waitables[w.process.sentinel] = w
            ready = mpc.wait(list(waitables), timeout=tick)
            handled: set[int] = set()
            for obj in ready:
                worker = waitables[obj]
                if id(worker) in handled or worker.task is None:
                    continue
                yield from self._read(worker, handled)
            stalled = self._stalled()
            for worker, silent in stalled:
                yield self._kill_stalled(worker, silent)
            if not ready and not stalled:
                yield None

    def _heard(self, worker: _Worker, text_bytes: int = 0) -> None:
        """``worker`` moved on; the silence allowed from now: ``stall_timeout``, or that per
        ``stall_unit_bytes`` of the batch it starts (``text_bytes``)."""
        worker.heard = time.monotonic()
        if self.stall_timeout is not None:
            worker.allowed = allowed_silence(self.stall_timeout, self.stall_unit_bytes, text_bytes)

    def _stalled(self) -> list[tuple[_Worker, float]]:
        """(worker, seconds silent) of each running worker silent longer than allowed."""
        if self.stall_timeout is None:
            return []
        now = time.monotonic()
        return [
            (w, now - w.heard)
            for w in self._pool
            if w.task is not None and now - w.heard > w.allowed
        ]

    def _kill_stalled(self, worker: _Worker, silent: float) -> Event:
        task, worker.task = worker.task, None
        pid = worker.process.pid
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)  # a stopped process gets SIGKILL too
        self._retire(worker)
        error = (
            f"worker process {pid} reported no progress for {silent:.1f} s while running "
            f"{task.label} (run.stall_timeout = {self.stall_timeout:g} s): killed it"
        )
        return self._retry_or_fail(task, Failure(error, died=True, pid=pid, retryable=True))

    def _read(self, worker: _Worker, handled: set[int]) -> Iterator[Event]:
        # Drain everything the worker sent before looking at whether it died.
        while worker.task is not None:
            try:
                if not worker.conn.poll():
                    if worker.process.is_alive():
                        return
                    raise EOFError
                kind, payload = worker.conn.recv()
            except (EOFError, OSError):
                handled.add(id(worker))
                yield self._died(worker)
                return
            if kind == "alive":  # moving on: it starts a batch of ``payload`` text bytes
                self._heard(worker, payload)
                continue
            self._heard(worker)
            if kind == "progress":
                yield Event("progress", worker.task, payload)
                continue
            task, worker.task = worker.task, None
            if kind == "failed":
                payload = replace(payload, pid=worker.process.pid)
                if payload.retryable:
                    # whatever went wrong may be in the process: do not give it more work
                    handled.add(id(worker))
                    self._retire(worker, stop=True)
                yield self._retry_or_fail(task, payload)
                return
            self._attempts.pop(id(task), None)
            yield Event(kind, task, payload)

    def _died(self, worker: _Worker) -> Event:
        task, worker.task = worker.task, None
        worker.process.join(timeout=5)
        code = worker.process.exitcode
        if code is not None and code < 0:
            try:
                how = f"killed by {signal.Signals(-code).name}"
            except ValueError:
                how = f"killed by signal {-code}"
        else:
            how = f"exited with status {code}"
        pid = worker.process.pid
        self._retire(worker)
        error = f"worker process {pid} {how} while running {task.label}"
        return self._retry_or_fail(task, Failure(error, died=True, pid=pid, retryable=True))

    def shutdown(self) -> None:
        for w in self._pool:
            try:
                w.conn.send(None)
            except (OSError, ValueError):
                pass
        for w in self._pool:
            if w.task is not None and w.process.is_alive():
                w.process.terminate()
        for w in self._pool:
            w.process.join(timeout=10)
            if w.process.is_alive():
                os.kill(w.process.pid, signal.SIGKILL)
                w.process.join(timeout=5)
            w.conn.close()
        self._pool.clear()
