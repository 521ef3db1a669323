"""Patches for Ray actors in the runner's Ray tests (tests/runner/test_ray.py).

Ray actors are not forked from the test process, so a monkeypatch there does not reach them.
These functions travel instead as the driver's ``runtime_env`` ``worker_process_setup_hook``
(a callable, pickled by Ray), which Ray runs in every worker process of that driver's job
before any actor starts.
"""

from __future__ import annotations

import os
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
