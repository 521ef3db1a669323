"""Ray executor: the same tasks as :mod:`.local`, on actors of a Ray cluster.

``run.executor = "ray"`` swaps the forked worker pool for Ray actors; nothing else changes.
The tasks are the same small descriptions (paths, row-group ranges, keys), the actors run the
same :func:`~batchtok.runner.exec.worker.run_task`, read their inputs and write their outputs
themselves (so every node must see the input and output paths, e.g. a shared filesystem),
and send back only the small result. Cache keys, the completion rule, retries and the summary
are those of a local run, so a run interrupted on one executor resumes on the other.

**Actors, not forks.** Each actor (``num_cpus=1``) sets the worker state once in its
constructor: it loads the tokenizer from the bytes the driver read and hashed (shipped once
through the object store, so every actor encodes with the tokenizer whose hash the outputs
record) and configures it as the driver did. A phase without a tokenizer (hashing inputs)
starts actors without one. Starting an actor takes seconds, so the idle actors of a phase that
ended well are kept for the next phase of the process, which sets them up again (its first
task on each loads the tokenizer, once) instead of starting new ones. Forking a process that
talks to Ray can deadlock (gRPC), so under Ray no worker is forked: the actors replace the
local pool.

**The driver** keeps the queue of tasks (:class:`~batchtok.runner.exec.local.TaskQueue`) and
one task in flight per actor, so at most as many as the actors; it waits with ``ray.wait``.
Actors: as many as the cluster's CPUs, or ``run.workers`` if fewer. Joining a cluster:
``run.ray_address``, else ``$RAY_ADDRESS``; with neither, a local cluster of ``run.workers``
CPUs is started (no dashboard; its files in a short temporary directory, as Ray's socket paths
must be short). Starting one takes seconds, so it serves every phase and run of the process
and stops when the process exits.

**Failures** follow the local policy: an actor that dies (its process killed, its node lost)
is replaced and its task run once more on a fresh actor; an unexpected exception is retried
once on a fresh actor, then reported; the runner's own errors are reported at once. Outputs
are published by atomic rename, so a task that Ray reports failed after it ran is harmless.

**A stalled actor is killed** (``run.stall_timeout``, as a local worker is: see
:mod:`.local`). An actor runs two threads (``max_concurrency=2``): its task, and the
answers to the driver's probe, every few seconds, of how long the task has been silent and how
much text its current batch holds. An actor silent for longer than allowed, or that does not
answer the probe for that long (a stopped process answers nothing), is killed with
``ray.kill`` and its task retried once on a fresh actor, with a message naming its process,
the task and the silence.

**Progress and logs**: the progress an actor's task reported is summed and sent with its
result (one progress event per finished task); actors log to their stderr, which Ray streams
to the driver's.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from ..job import Job
from ..report.stats import ShardStats
from .encode import configure_tokenizer, load_tokenizer
from .executor import Event, Failure, TaskQueue
from .local import allowed_silence, failure_of, heap_trimmer
from .worker import WorkerContext, run_task

log = logging.getLogger("batchtok.runner")

OBJECT_STORE_BYTES = 128 * 1024 * 1024  # of a local cluster: only tasks and results pass
PROBE_SECONDS = 5.0  # how often the driver asks a running actor how long it has been silent


class _TaskActor:
    """One worker on the cluster (made a Ray actor by :class:`RayExecutor`). ``setup`` (an
    object reference in a list, so Ray passes it unresolved) names what the worker state is
    made of; an actor kept for a later phase is set up again by that phase's first task."""

    def __init__(self, setup: list[Any]) -> None:
        logger = logging.getLogger("batchtok")
        handler = logging.StreamHandler(sys.stderr)  # streamed to the driver by Ray
        handler.setFormatter(logging.Formatter("%(levelname)s %(message)s"))
        logger.addHandler(handler)
        logger.propagate = False
        self._trim = heap_trimmer()
        self._setup = ""
        self._heard = time.monotonic()  # the task's last sign of progress
        self._batch_bytes = 0  # the text of the batch it encodes since then
        self._setting_up = False
        self._context: WorkerContext | None = None
        self._use(setup[0])

    def _alive(self, text_bytes: int = 0) -> None:
        self._heard = time.monotonic()
        self._batch_bytes = text_bytes

    def silence(self) -> tuple[float, int]:
        """(seconds since the running task last moved on, its current batch's text bytes);
        answered by the actor's second thread while the task runs."""
        if self._setting_up:
            return 0.0, 0
        return time.monotonic() - self._heard, self._batch_bytes

    def _use(self, ref: Any) -> None:
        """Set the worker state from ``ref``'s (job, tokenizer bytes, state, log level),
        loading the tokenizer once, unless it is the state already set."""
        if ref.hex() == self._setup:
            return
        import ray

        job, tokenizer_bytes, context, log_level = ray.get(ref)
        logging.getLogger("batchtok").setLevel(log_level)
        tok = None
        if tokenizer_bytes:
            facts = context.facts
            tok = load_tokenizer(job, facts.xxh3, tokenizer_bytes, facts.sha256)
            configure_tokenizer(tok, job, facts)
        self._context = WorkerContext(context.settings, tok, context.facts, context.lock)
        self._context.hear(self._alive)
        self._setup = ref.hex()

    def pid(self) -> int:
        return os.getpid()

    def run(self, task: Any, setup: list[Any]) -> tuple[str, Any, ShardStats]:
        """("done", result, progress) or ("failed", Failure, progress)."""
        progress = ShardStats()

        def report(added: ShardStats) -> None:
            progress.merge(added)
            self._alive()

        try:
            self._setting_up = True  # loading a tokenizer is not the task's silence
            try:
                self._use(setup[0])
            finally:
                self._setting_up = False
                self._alive()
            assert self._context is not None
            result = run_task(task, report, self._context)
        except Exception as exc:  # noqa: BLE001 - everything goes back to the driver
            return "failed", failure_of(exc), progress
        if self._trim is not None:
            self._trim(0)
        return "done", result, progress


# Idle actors a finished phase leaves for the next one of this process (the hash phase's for
# the encode phase, a run's for the next run): starting one takes seconds. Key: the cluster
# and driver job they belong to.
_SPARE: dict[tuple[str, str], list[Any]] = {}


@dataclass
class _Actor:
    handle: Any
    pid_ref: Any  # the actor's first call: its process id, known once it started
    fresh: bool = True  # has run no task yet
    heard: float = 0.0  # time.monotonic() the driver last knew its task moved on
    allowed: float = 0.0  # seconds of silence it may take from then on
    probe: Any = None  # a silence() call not answered yet
    asked: float = 0.0  # when it was made (or the task sent)


@dataclass
class RayExecutor(TaskQueue):
    """Run tasks on Ray actors; the same interface as
    :class:`~batchtok.runner.exec.local.LocalExecutor`. ``workers``: the CPUs of a local
    cluster started here; ``job.workers`` (if set) caps the actors on any cluster."""

    job: Job | None = None
    context: WorkerContext | None = None  # what the actors' tasks read, the tokenizer aside
    tokenizer_bytes: bytes = b""
    _ray: Any = None
    _actor_class: Any = None
    _setup: list[Any] = field(default_factory=list)  # [reference to the state's parts]
    _session: tuple[str, str] = ("", "")
    _slots: int = 0
    _idle: list[_Actor] = field(default_factory=list)
    _running: dict[Any, tuple[_Actor, Any]] = field(default_factory=dict)  # ref -> (actor, task)

    def __enter__(self) -> RayExecutor:
        # Ray folds log lines alike across actors ("repeated 10x"): each bad row is its own.
        # (read when ray is imported first)
        os.environ.setdefault("RAY_DEDUP_LOGS", "0")
        import ray  # the extra batchtok[ray]; the job's validation checked it is installed

        assert self.job is not None
        self._ray = ray
        if not ray.is_initialized():
            self._connect()
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self._slots = max(1, min(cpus, self.job.workers) if self.job.workers else cpus)
        assert self.context is not None
        data = self.tokenizer_bytes if self.context.tokenizer is not None else b""
        state = self.context.portable()
        level = logging.getLogger("batchtok").getEffectiveLevel()
        # put once: every actor gets the same object, not a copy per call
        self._setup = [ray.put((self.job, data, state, level))]
        # two threads: the task, and the answers to the stall watch's probes
        self._actor_class = ray.remote(
            num_cpus=1, max_restarts=0, max_task_retries=0, max_concurrency=2
        )(_TaskActor)
        context = ray.get_runtime_context()
        self._session = (context.gcs_address, context.get_job_id())
        for handle in _SPARE.pop(self._session, []):
            actor = _Actor(handle, handle.pid.remote(), fresh=False)
            if len(self._idle) < self._slots:
                self._idle.append(actor)
            else:
                self._kill(actor)
        log.info(
            "Ray: up to %d actors on a cluster of %d CPUs (%d kept from the previous phase)",
            self._slots,
            cpus,
            len(self._idle),
            extra={"event": "ray_cluster"},
        )
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is None:  # healthy idle actors serve the next phase
            _SPARE[self._session] = [actor.handle for actor in self._idle]
            self._idle.clear()
        self.shutdown()

    def _connect(self) -> None:
        """Join the job's cluster (or $RAY_ADDRESS's), else start a local one."""
        assert self.job is not None
        ray = self._ray
        address = self.job.ray_address or os.environ.get("RAY_ADDRESS", "")
        # ray.init replaces the SIGTERM handler; the run's own (stop cleanly) must stay.
        previous = signal.getsignal(signal.SIGTERM)
        try:
            if address:
                ray.init(address=address, logging_level=logging.WARNING)
                return
            # Starting a cluster takes seconds: it serves every phase and run of this
            # process, and stops when the process exits.
            temp_dir = tempfile.mkdtemp(prefix="batchtok-ray-")  # short: Ray's sockets
            atexit.register(shutil.rmtree, temp_dir, ignore_errors=True)
            ray.init(
                num_cpus=self.workers,
                include_dashboard=False,
                object_store_memory=OBJECT_STORE_BYTES,
                _temp_dir=temp_dir,
                logging_level=logging.WARNING,
            )
            atexit.register(ray.shutdown)  # runs before the directory's removal
        finally:
            with contextlib.suppress(ValueError, TypeError):
                signal.signal(signal.SIGTERM, previous)

    def _start_actor(self) -> _Actor:
        handle = self._actor_class.remote(self._setup)
        return _Actor(handle, handle.pid.remote())

    def _kill(self, actor: _Actor) -> None:
        with contextlib.suppress(Exception):
            self._ray.kill(actor.handle, no_restart=True)

    def _dispatch(self) -> None:
        while self._pending:
            task, fresh = self._pending[0]
            idle = next((a for a in self._idle if a.fresh or not fresh), None)
            if idle is None and fresh and self._idle:
                self._kill(self._idle.pop())  # make room for a new actor
            if idle is None:
                if len(self._idle) + len(self._running) >= self._slots:
                    return
                idle = self._start_actor()
            else:
                self._idle.remove(idle)
            self._pending.popleft()
            idle.fresh = False
            idle.heard = idle.asked = time.monotonic()
            idle.allowed, idle.probe = self._allowed(0), None
            self._running[idle.handle.run.remote(task, self._setup)] = (idle, task)
            self._sent(task)

    def events(self, tick: float = 0.25) -> Iterator[Event | None]:
        """Dispatch and yield events until nothing is pending or running; ``None`` every
        ``tick`` seconds without news (to redraw progress)."""
        ray = self._ray
        while True:
            self._dispatch()
            if not self._running and not self._pending:
                return
            stalled = list(self._stalled())
            yield from stalled
            if stalled:
                continue
            ready, _ = ray.wait(list(self._running), num_returns=1, timeout=tick)
            if not ready:
                yield None
                continue
            actor, task = self._running.pop(ready[0])
            try:
                kind, payload, progress = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # the actor (or its node) died
                yield self._died(actor, task, exc)
                continue
            if kind == "failed":
                payload = replace(payload, pid=self._pid(actor))
                if payload.retryable:
                    self._kill(actor)  # whatever went wrong may be in the process
                else:
                    self._idle.append(actor)
                yield self._retry_or_fail(task, payload)
                continue
            self._idle.append(actor)
            self._attempts.pop(id(task), None)
            if progress != ShardStats():
                yield Event("progress", task, progress)
            yield Event(kind, task, payload)

    def _allowed(self, text_bytes: int) -> float:
        assert self.job is not None
        return allowed_silence(self.job.stall_timeout, self.job.batch_mb * 1e6, text_bytes)

    def _stalled(self) -> Iterator[Event]:
        """Probe the running actors; kill those silent longer than allowed (by their answer,
        or by not answering for that long), and yield their tasks' retry (or failure)."""
        assert self.job is not None
        ray, now = self._ray, time.monotonic()
        every = min(PROBE_SECONDS, self.job.stall_timeout / 4)
        for ref, (actor, task) in list(self._running.items()):
            stalled = False
            if actor.probe is not None:
                answered, _ = ray.wait([actor.probe], timeout=0)
                if answered:
                    actor.probe = None
                    try:
                        silent, text_bytes = ray.get(answered[0])
                    except ray.exceptions.RayError:  # it died: its task's result says so
                        continue
                    actor.heard, actor.allowed = now - silent, self._allowed(text_bytes)
                    stalled = silent > actor.allowed
                elif not ray.wait([actor.pid_ref], timeout=0)[0]:
                    # still starting (loading the tokenizer): not the task's silence
                    actor.heard = actor.asked = now
                else:  # a stopped (or hung) process answers nothing
                    stalled = now - actor.asked > actor.allowed
            elif now - actor.asked >= every:
                actor.probe, actor.asked = actor.handle.silence.remote(), now
            if stalled:
                del self._running[ref]
                pid = self._pid(actor)
                self._kill(actor)
                error = (
                    f"Ray actor (process {pid}) reported no progress for {now - actor.heard:.1f}"
                    f" s while running {task.label} (run.stall_timeout = "
                    f"{self.job.stall_timeout:g} s): killed it"
                )
                failure = Failure(error, died=True, pid=pid, retryable=True)
                yield self._retry_or_fail(task, failure)

    def _pid(self, actor: _Actor) -> int | None:
        try:
            return self._ray.get(actor.pid_ref, timeout=0)
        except Exception:  # noqa: BLE001 - it died before it started
            return None

    def _died(self, actor: _Actor, task: Any, exc: Exception) -> Event:
        pid = self._pid(actor)
        self._kill(actor)
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        error = f"Ray actor (process {pid}) died while running {task.label}: {why}"
        return self._retry_or_fail(task, Failure(error, died=True, pid=pid, retryable=True))

    def shutdown(self) -> None:
        for actor in [*self._idle, *(a for a, _ in self._running.values())]:
            self._kill(actor)
        self._idle.clear()
        self._running.clear()
