"""Logs from every process to one stream, and the progress display.

All records go to the ``batchtok.runner`` logger. Its one handler is a
``multiprocessing_logging.MultiProcessingHandler``: forked workers inherit it and put their
records on its queue, and a thread in the parent writes them out, so worker and parent lines
never interleave mid-line. (That library needs the ``fork`` start method; see
:mod:`batchtok.runner.exec.local`.)

On a terminal, a live line at the bottom shows rows, tokens, MB/s and the time left, redrawn
in place; log lines are printed above it. Elsewhere (cron, a pipe) a progress line is logged
every ``interval`` seconds instead. ``--quiet`` keeps warnings and errors only;
``--log-format json`` writes one JSON object per line (``time``, ``level``, ``message``,
``process``, and fields such as ``event``, ``file``, ``row``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from typing import IO, Any

from multiprocessing_logging import MultiProcessingHandler

from ..io.names import escaped, escaped_json
from .stats import ShardStats

LOGGER = "batchtok.runner"
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime"}


class Console:
    """Owns the stream: log lines and the live progress line never garble each other."""

    def __init__(self, stream: IO[str], live: bool) -> None:
        self.stream = stream
        self.live = live
        self.status = ""
        self.lock = threading.Lock()

    def line(self, text: str) -> None:
        with self.lock:
            if self.live and self.status:
                self.stream.write("\r\x1b[K")
            self.stream.write(text + "\n")
            if self.live and self.status:
                self.stream.write(self.status)
            self.stream.flush()

    def show(self, status: str) -> None:
        if not self.live:
            return
        with self.lock:
            self.status = status
            self.stream.write("\r\x1b[K" + status)
            self.stream.flush()

    def clear(self) -> None:
        if not self.live:
            return
        with self.lock:
            if self.status:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
            self.status = ""


class _ConsoleHandler(logging.Handler):
    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        if getattr(record, "batchtok_wake", False):
            return  # LogSession.close's wake-up call, not a message
        try:
            self.console.line(self.format(record))
        except Exception:  # noqa: BLE001 - logging must never break the run
            self.handleError(record)


class TextFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(record.created))
        who = "" if record.processName == "MainProcess" else f" [{record.processName}]"
        text = f"{when} {record.levelname:<7} {escaped(record.getMessage())}{who}"
        if record.exc_text:
            text += "\n" + escaped(record.exc_text)
        return text


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(record.created))
            + f".{int(record.msecs):03d}",
            "level": record.levelname.lower(),
            "message": record.getMessage(),
            "process": record.processName,
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                doc[key] = value
        if record.exc_text:
            doc["traceback"] = record.exc_text
        return json.dumps(escaped_json(doc), ensure_ascii=False, default=lambda v: escaped(str(v)))


class LogSession:
    """Installs the handler for one run; :meth:`close` flushes the workers' records.

    The queue-backed handler is put in place by :meth:`for_workers`, just before forking: a
    run with nothing to do never starts its thread (closing it costs up to 0.2 s).
    """

    def __init__(self, stream: IO[str], log_format: str, quiet: bool, live: bool) -> None:
        self.console = Console(stream, live)
        handler = _ConsoleHandler(self.console)
        handler.setFormatter(JsonFormatter() if log_format == "json" else TextFormatter())
        self.direct = handler
        self.handler: logging.Handler = handler
        self.logger = logging.getLogger(LOGGER)
        self._saved = (self.logger.level, self.logger.propagate, list(self.logger.handlers))
        for old in self._saved[2]:
            self.logger.removeHandler(old)
        self.logger.addHandler(self.handler)
        self.logger.setLevel(logging.WARNING if quiet else logging.INFO)
        self.logger.propagate = False

    def for_workers(self) -> None:
        """Route records through multiprocessing-logging's queue (inherited by forks)."""
        if isinstance(self.handler, MultiProcessingHandler):
            return
        self.logger.removeHandler(self.handler)
        self.handler = MultiProcessingHandler("batchtok-log", sub_handler=self.direct)
        self.logger.addHandler(self.handler)

    def close(self) -> None:
        self.console.clear()
        self.logger.removeHandler(self.handler)
        if isinstance(self.handler, MultiProcessingHandler):
            # Its thread waits on the queue 0.2 s at a time before it looks whether the handler
            # was closed: a record it drops wakes it at once (every run ended 0.2 s later).
            wake = logging.makeLogRecord({"msg": "", "batchtok_wake": True})
            with contextlib.suppress(Exception):
                self.handler.queue.put_nowait(wake)
        self.handler.close()
        level, propagate, handlers = self._saved
        self.logger.setLevel(level)
        self.logger.propagate = propagate
        for old in handlers:
            self.logger.addHandler(old)


def _count(n: float) -> str:
    for unit, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if n >= size:
            return f"{n / size:.1f}{unit}"
    return f"{int(n)}"


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class Progress:
    """Counts of the encode phase and their display (live line, periodic log, or nothing)."""

    def __init__(self, console: Console, mode: str, interval: float = 30.0) -> None:
        self.console = console
        self.mode = mode  # "live", "log" or "off"
        self.interval = interval if mode == "log" else 0.2
        self.log = logging.getLogger(LOGGER)
        self.started = time.monotonic()
        self.last = 0.0
        self.phase = ""
        self.shards_total = 0
        self.shards_done = 0
        self.shards_failed = 0
        self.bytes_total = 0
        # of this phase so far (hashing: the bytes hashed): the tasks finished, and what each
        # running task reported (id(task) -> counts), dropped if that attempt fails, so that a
        # retried shard is not counted twice
        self._finished = ShardStats()
        self._running: dict[int, ShardStats] = {}

    def start(self, phase: str, shards_total: int, bytes_total: int) -> None:
        self.phase = phase
        self.shards_total = shards_total
        self.bytes_total = bytes_total
        self.shards_done = self.shards_failed = 0
        self._finished = ShardStats()
        self._running = {}
        self.started = time.monotonic()
        self.last = self.started

    @property
    def stats(self) -> ShardStats:
        """The counts of this phase so far: finished tasks and running attempts."""
        total = ShardStats().merge(self._finished)
        for running in self._running.values():
            total.merge(running)
        return total

    def add(self, added: ShardStats, task: object = None) -> None:
        """Counts ``task`` reported (None: of no task that could be retried)."""
        if task is None:
            self._finished.merge(added)
        else:
            self._running.setdefault(id(task), ShardStats()).merge(added)

    def settle(self, task: object) -> None:
        """``task`` finished: what it reported stays."""
        done = self._running.pop(id(task), None)
        if done is not None:
            self._finished.merge(done)

    def drop(self, task: object) -> None:
        """``task``'s attempt failed: what it reported is taken back (a retry reports it
        again; a failed shard's rows are not done)."""
        self._running.pop(id(task), None)

    def rate(self, stats: ShardStats | None = None) -> float:
        elapsed = time.monotonic() - self.started
        done = (stats or self.stats).text_bytes
        return done / elapsed / 1e6 if elapsed > 0 else 0.0

    def describe(self) -> str:
        stats = self.stats
        rate = self.rate(stats)
        done_bytes = stats.text_bytes
        left = max(self.bytes_total - done_bytes, 0)
        eta = _duration(left / (rate * 1e6)) if rate > 0 and done_bytes else "?"
        share = f"{100 * done_bytes / self.bytes_total:.0f}%" if self.bytes_total else "-"
        failed = f", {self.shards_failed} failed" if self.shards_failed else ""
        if self.phase == "hash":
            return (
                f"hashing inputs: {self.shards_done}/{self.shards_total} files, {share}, "
                f"{rate:.1f} MB/s, ETA {eta}"
            )
        bad = f"  {stats.bad_rows} bad rows" if stats.bad_rows else ""
        return (
            f"[{self.shards_done}/{self.shards_total} shards{failed}] {_count(stats.rows_in)} "
            f"rows  {_count(stats.tokens)} tokens  {rate:.2f} MB/s  {share}  ETA {eta}{bad}"
        )

    def tick(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.mode == "off" or (not force and now - self.last < self.interval):
            return
        self.last = now
        if self.mode == "live":
            self.console.show(self.describe())
        else:
            stats = self.stats
            self.log.info(
                "progress: %s",
                self.describe(),
                extra={
                    "event": "progress",
                    "phase": self.phase,
                    "shards_done": self.shards_done,
                    "shards_total": self.shards_total,
                    "rows": stats.rows_in,
                    "tokens": stats.tokens,
                    "mb_per_s": round(self.rate(stats), 3),
                },
            )

    def finish(self) -> None:
        if self.mode == "live":
            self.console.clear()
