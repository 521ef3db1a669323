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

**Failures** follow the local policy: an actor that dies (its process killed) is replaced and
its task run once more on a fresh actor; an unexpected exception is retried once on a fresh
actor, then reported; the runner's own errors are reported at once. Outputs are published by
atomic rename, so a task that Ray reports failed after it ran is harmless.

**A lost node** is not a failure of its tasks. Each actor tells the driver its node when it
starts. An actor that cannot be reached (its node's raylet gone) is set aside, its slot kept,
while the driver asks the cluster every second whether its node is dead (Ray's GCS declares a
node dead after missed health checks: about 15 s by default); an actor whose node is still
alive after ``NODE_DEATH_WAIT`` is taken for dead alone. Once the node is declared dead, every
task its actors ran (unreachable or not yet reported) is queued again first, for any actor, not
counted as a failed attempt (up to ``LOST_NODE_RETRIES`` times per task); its idle actors are
dropped, and the number of actors falls to the CPUs of the nodes left (``run.workers`` at
most). The driver reports the loss once (a "node_lost" event: the node, its address, why
Ray declared it dead, the tasks queued again, the actors left), which the run logs and keeps
in its summary. An actor that waits for a CPU the cluster no longer has is stopped and its
task queued again.

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
from .executor import Event, Failure, NodeLoss, TaskQueue
from .local import allowed_silence, failure_of, heap_trimmer
from .worker import WorkerContext, run_task

log = logging.getLogger("batchtok.runner")

OBJECT_STORE_BYTES = 128 * 1024 * 1024  # of a local cluster: only tasks and results pass
PROBE_SECONDS = 5.0  # how often the driver asks a running actor how long it has been silent
NODE_CHECK_SECONDS = 1.0  # how often the driver reads the cluster's nodes while it waits on one
NODE_DEATH_WAIT = 60.0  # seconds an unreachable actor's node has to be declared dead
LOST_NODE_RETRIES = 3  # times a task is queued again because its node was lost


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

        job, tokenizer_bytes, context, log_level, companions = ray.get(ref)
        logging.getLogger("batchtok").setLevel(log_level)
        tok = None
        if tokenizer_bytes:
            facts = context.facts
            tok = load_tokenizer(job, facts.xxh3, tokenizer_bytes, facts.sha256)
            configure_tokenizer(tok, job, facts)
        self._context = WorkerContext(context.settings, tok, context.facts, context.lock)
        # the job's later tokenizers (several in one pass), each loaded once here too
        for name, other_job, data, other in companions:
            found = other.facts
            other_tok = load_tokenizer(other_job, found.xxh3, data, found.sha256)
            configure_tokenizer(other_tok, other_job, found)
            self._context.companions[name] = WorkerContext(
                other.settings, other_tok, found, context.lock
            )
        self._context.hear(self._alive)
        self._setup = ref.hex()

    def ident(self) -> tuple[int, str]:
        """(process id, Ray node id)."""
        import ray

        return os.getpid(), ray.get_runtime_context().get_node_id()

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
    ident_ref: Any  # the actor's first call: (process id, node id), known once it started
    ident: tuple[int, str] | None = None  # its answer, once read
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
    # the job's later tokenizers (several in one pass): (name, their job, their file's bytes)
    companions: list[tuple[str, Job, bytes]] = field(default_factory=list)
    _ray: Any = None
    _actor_class: Any = None
    _setup: list[Any] = field(default_factory=list)  # [reference to the state's parts]
    _session: tuple[str, str] = ("", "")
    _slots: int = 0
    _idle: list[_Actor] = field(default_factory=list)
    _running: dict[Any, tuple[_Actor, Any]] = field(default_factory=dict)  # ref -> (actor, task)
    # tasks whose actor could not be reached, until its node is known dead or alive:
    # (actor, task, the error, time.monotonic() it came)
    _unreachable: list[tuple[_Actor, Any, Exception, float]] = field(default_factory=list)
    _nodes_read: float = 0.0  # time.monotonic() the driver last read the cluster's nodes
    # nodes an actor failed on (-> when first), watched for NODE_DEATH_WAIT; the tasks that
    # died there as any task whose worker died (their node may be declared dead later)
    _suspects: dict[str, float] = field(default_factory=dict)
    _died_on: dict[str, list[str]] = field(default_factory=dict)
    _reported: set[str] = field(default_factory=set)  # nodes whose loss was reported
    _lost: dict[int, tuple[Any, int]] = field(default_factory=dict)  # id -> (task, times lost)

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
        self._fit_slots(cpus)
        assert self.context is not None
        data = self.tokenizer_bytes if self.context.tokenizer is not None else b""
        state = self.context.portable()
        level = logging.getLogger("batchtok").getEffectiveLevel()
        others = [
            (name, job, data_c, self.context.companions[name].portable())
            for name, job, data_c in self.companions
            if name in self.context.companions and data
        ]
        # put once: every actor gets the same object, not a copy per call
        self._setup = [ray.put((self.job, data, state, level, others))]
        # two threads: the task, and the answers to the stall watch's probes
        self._actor_class = ray.remote(
            num_cpus=1, max_restarts=0, max_task_retries=0, max_concurrency=2
        )(_TaskActor)
        context = ray.get_runtime_context()
        self._session = (context.gcs_address, context.get_job_id())
        for handle in _SPARE.pop(self._session, []):
            actor = _Actor(handle, handle.ident.remote(), fresh=False)
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

    def _fit_slots(self, cpus: int | None) -> None:
        """As many actors as ``cpus`` (the cluster's; None: not known, no change), or
        ``run.workers`` if fewer; then stop the actors beyond them (see :meth:`_shed`)."""
        assert self.job is not None
        if cpus is None:
            return
        self._slots = max(1, min(cpus, self.job.workers) if self.job.workers else cpus)
        self._shed()

    def _start_actor(self) -> _Actor:
        handle = self._actor_class.remote(self._setup)
        return _Actor(handle, handle.ident.remote())

    def _actors(self) -> int:
        """The actors holding a slot: idle, running, or unreachable on a node in question."""
        return len(self._idle) + len(self._running) + len(self._unreachable)

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
                if self._actors() >= self._slots:
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
            if not self._running and not self._pending and not self._unreachable:
                return
            news = [*self._check_nodes(), *self._stalled()]
            yield from news
            if news:
                continue
            if not self._running:  # only tasks whose node is in question
                time.sleep(tick)
                yield None
                continue
            ready, _ = ray.wait(list(self._running), num_returns=1, timeout=tick)
            if not ready:
                yield None
                continue
            actor, task = self._running.pop(ready[0])
            try:
                kind, payload, progress = ray.get(ready[0])
            except ray.exceptions.RayError as exc:  # the actor (or its node) died
                yield from self._failed_actor(actor, task, exc)
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
            self._lost.pop(id(task), None)
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
                elif not ray.wait([actor.ident_ref], timeout=0)[0]:
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

    def _ident(self, actor: _Actor) -> tuple[int | None, str]:
        """(process id, node id) of ``actor``: (None, "") if not known (not started yet, or
        it died before it started)."""
        if actor.ident is None:
            try:
                actor.ident = self._ray.get(actor.ident_ref, timeout=0)
            except Exception:  # noqa: BLE001 - not started, or died before it started
                return None, ""
        return actor.ident

    def _pid(self, actor: _Actor) -> int | None:
        return self._ident(actor)[0]

    def _node(self, actor: _Actor) -> str:
        return self._ident(actor)[1]

    def _failed_actor(self, actor: _Actor, task: Any, exc: Exception) -> Iterator[Event]:
        """A task whose actor died or cannot be reached: its node lost (every task there is
        queued again), in question (the task waits for the answer), or alive (the actor
        died alone: the task is retried as any task whose worker died)."""
        node = self._node(actor)
        if node:
            self._suspects.setdefault(node, time.monotonic())
            dead, cpus = self._read_nodes()
            if node in dead:
                self._unreachable.append((actor, task, exc, time.monotonic()))
                yield from self._node_lost(node, dead[node], cpus)
                return
            unreachable = getattr(self._ray.exceptions, "ActorUnavailableError", ())
            if isinstance(exc, unreachable):
                if all(self._node(u[0]) != node for u in self._unreachable):
                    log.info(
                        "Ray node %s cannot be reached (actor process %s, running %s):"
                        " waiting up to %g s for the cluster to say whether it is lost",
                        node,
                        self._pid(actor),
                        task.label,
                        NODE_DEATH_WAIT,
                    )
                self._unreachable.append((actor, task, exc, time.monotonic()))
                return
            self._died_on.setdefault(node, []).append(task.label)
        yield self._died(actor, task, exc)

    def _died(self, actor: _Actor, task: Any, exc: Exception) -> Event:
        pid = self._pid(actor)
        self._kill(actor)
        why = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        error = f"Ray actor (process {pid}) died while running {task.label}: {why}"
        return self._retry_or_fail(task, Failure(error, died=True, pid=pid, retryable=True))

    def _read_nodes(self) -> tuple[dict[str, dict[str, Any]], int | None]:
        """The cluster's dead nodes (id -> what Ray says of it) and its live CPUs (None: the
        cluster did not answer)."""
        self._nodes_read = time.monotonic()
        dead, cpus = {}, 0.0
        try:
            nodes = self._ray.nodes()
        except Exception as exc:  # noqa: BLE001 - no news; asked again in a second
            log.debug("reading the Ray cluster's nodes: %s", exc)
            return {}, None
        for node in nodes:
            if node.get("Alive"):
                cpus += node.get("Resources", {}).get("CPU", 0)
            else:
                dead[node["NodeID"]] = node
        return dead, int(cpus)

    def _check_nodes(self) -> Iterator[Event]:
        """While a node is in question (an actor failed there) or an actor waits to start,
        read the cluster's nodes every ``NODE_CHECK_SECONDS``: handle the nodes lost, take an
        actor unreachable for ``NODE_DEATH_WAIT`` on a live node for dead, and stop actors
        waiting for a CPU the cluster no longer has."""
        now = time.monotonic()
        if now - self._nodes_read < NODE_CHECK_SECONDS:
            return
        for node, since in list(self._suspects.items()):
            if now - since > NODE_DEATH_WAIT:
                del self._suspects[node]
        if not (self._unreachable or self._suspects) and all(
            self._node(a) for a, _ in self._running.values()
        ):
            return
        dead, cpus = self._read_nodes()
        in_use = {self._node(a) for a in [*self._idle, *(u[0] for u in self._unreachable)]}
        in_use |= {self._node(a) for a, _ in self._running.values()}
        for node in sorted((in_use | self._suspects.keys()) & dead.keys()):
            yield from self._node_lost(node, dead[node], cpus)
        for entry in list(self._unreachable):
            actor, task, exc, since = entry
            if now - since > NODE_DEATH_WAIT:
                self._unreachable.remove(entry)
                yield self._died(actor, task, exc)
        self._fit_slots(cpus)

    def _node_lost(self, node: str, info: dict[str, Any], cpus: int | None) -> Iterator[Event]:
        """Node ``node`` is dead: drop its actors, queue its tasks again first (see the module's
        docstring), fit the actors to the CPUs left, and say so once (with the tasks that died
        there before the node was declared dead, retried already)."""
        lost = [(a, t) for a, t, _, _ in self._unreachable if self._node(a) == node]
        self._unreachable = [u for u in self._unreachable if self._node(u[0]) != node]
        for ref, (actor, task) in list(self._running.items()):
            if self._node(actor) == node:
                del self._running[ref]
                lost.append((actor, task))
        for actor in [a for a in self._idle if self._node(a) == node]:
            self._idle.remove(actor)
            self._kill(actor)
        address = info.get("NodeManagerAddress", "")
        events = []
        for actor, task in lost:
            pid = self._pid(actor)
            self._kill(actor)
            error = f"lost with Ray node {node} ({address}), which ran it in process {pid}"
            failure = Failure(error, died=True, pid=pid, retryable=True, lost_node=node)
            events.append(self._requeue_lost(task, failure))
        self._fit_slots(cpus)
        self._suspects.pop(node, None)
        retried = self._died_on.pop(node, []) + [e.task.label for e in events if e.kind == "retry"]
        if node not in self._reported:
            self._reported.add(node)
            reason = info.get("DeathReasonMessage", "") or "declared dead"
            loss = NodeLoss(node, address, reason, retried, self._slots, cpus or 0)
            yield Event("node_lost", None, loss)
        yield from events

    def _requeue_lost(self, task: Any, failure: Failure) -> Event:
        """Queue ``task``, lost with its node, again first for any actor, without counting a
        failed attempt (``LOST_NODE_RETRIES`` times; then as any task whose worker died)."""
        _, times = self._lost.get(id(task), (task, 0))
        if times >= LOST_NODE_RETRIES or self._stopped:
            return self._retry_or_fail(task, failure)
        self._lost[id(task)] = (task, times + 1)  # the task is kept alive with its id
        self._pending.appendleft((task, False))
        return Event("retry", task, failure)

    def _shed(self) -> None:
        """Fewer slots than actors (a node was lost): stop the actors still waiting to start
        (for a CPU the cluster no longer has), queueing their tasks again first, then idle
        ones."""
        for ref, (actor, task) in reversed(list(self._running.items())):
            if self._actors() <= self._slots:
                return
            if not self._node(actor):
                del self._running[ref]
                self._kill(actor)
                self._pending.appendleft((task, id(task) in self._attempts))
        while self._idle and self._actors() > self._slots:
            self._kill(self._idle.pop())

    def shutdown(self) -> None:
        running = [a for a, _ in self._running.values()]
        for actor in [*self._idle, *running, *(u[0] for u in self._unreachable)]:
            self._kill(actor)
        self._idle.clear()
        self._running.clear()
        self._unreachable.clear()
