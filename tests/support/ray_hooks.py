"""Patches for Ray actors in the runner's Ray tests (tests/runner/test_ray.py).

Ray actors are not forked from the test process, so a monkeypatch there does not reach them.
These functions travel instead as the driver's ``runtime_env`` ``worker_process_setup_hook``
(a callable, pickled by Ray), which Ray runs in every worker process of that driver's job
before any actor starts.
"""

from __future__ import annotations

import json
import os
import re
import signal
import time
from typing import Any

import pyarrow as pa

from batchtok.runner.exec import worker as worker_module
from batchtok.runner.outputs import parquet as output_module


def _once_on_shard(shard: str, marker: str, act: Any) -> None:
    """The first process to write shard ``shard`` (``"c.parquet#2"``) calls ``act()`` after
    its first row group hit the disk, creating ``marker`` (holding its pid) first, so that
    the retry goes on."""
    original = output_module.AtomicParquet.write

    def write(self: Any, table: pa.Table) -> None:
        original(self, table)
        if f'"shard":"{shard}"' not in self.schema.metadata[b"batchtok"].decode():
            return
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        act()

    output_module.AtomicParquet.write = write


def die_once_on_shard(shard: str, marker: str) -> None:
    """The first process to write shard ``shard`` dies (exit 9); see :func:`_once_on_shard`."""
    _once_on_shard(shard, marker, lambda: os._exit(9))


def stop_once_on_shard(shard: str, marker: str) -> None:
    """The first process to write shard ``shard`` stops itself (SIGSTOP, as ``kill -STOP``);
    see :func:`_once_on_shard`."""
    _once_on_shard(shard, marker, lambda: os.kill(os.getpid(), signal.SIGSTOP))


def slow_encoding(seconds: float) -> None:
    """Every batch a worker encodes takes ``seconds`` longer (to interrupt a run midway)."""
    original = worker_module._encode_piece

    def slow(*args: Any, **kwargs: Any) -> Any:
        time.sleep(seconds)
        return original(*args, **kwargs)

    worker_module._encode_piece = slow


def hold_on_node(node_id: str, marker: str, seconds: float = 0.0) -> None:
    """The first process of Ray node ``node_id`` to write a row group of a shard writes
    ``marker`` ({"pid", "shard"}), then holds the shard in flight: it sleeps until its node is
    killed (it exits by itself if its raylet is gone and Ray did not end it, or after 120 s).
    Every batch encoded takes ``seconds`` longer (:func:`slow_encoding`), so that the other
    nodes are still at work when the node is killed."""
    import ray

    if seconds:
        slow_encoding(seconds)
    original = output_module.AtomicParquet.write

    def write(self: Any, table: pa.Table) -> None:
        original(self, table)
        if ray.get_runtime_context().get_node_id() != node_id:
            return
        found = re.search(r'"shard":"([^"]+)"', self.schema.metadata[b"batchtok"].decode())
        if found is None:
            return
        try:
            fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return
        os.write(fd, json.dumps({"pid": os.getpid(), "shard": found[1]}).encode())
        os.close(fd)
        raylet, deadline = os.getppid(), time.monotonic() + 120
        while os.getppid() == raylet and time.monotonic() < deadline:
            time.sleep(0.1)
        os._exit(3)

    output_module.AtomicParquet.write = write
