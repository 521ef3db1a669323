"""One run at a time per output directory: ``OUT/.batchtok/lock``.

The lock is an exclusive ``flock`` on that file, and the file says who holds it (pid, host,
start time, job). The kernel drops a ``flock`` when its holder dies, however it dies, so a run
killed with ``kill -9`` never leaves a lock that blocks the next one: the next run gets the
lock, finds the dead run's pid and host in the file, logs that it takes over a stale lock, and
(holding the lock) deletes the temporary files the dead run left.

Where ``flock`` is not available (some network file systems answer ENOLCK), the file's content
decides: a lock naming a live pid on this host, or any pid on another host (which cannot be
checked from here), is held; a lock naming a dead pid on this host is stale and taken over.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import socket
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import LockHeld, LockLost

ACQUIRE_TRIES = 5


@dataclass
class Holder:
    pid: int | None
    host: str
    started: str
    job: str

    @classmethod
    def parse(cls, text: str) -> Holder | None:
        try:
            data = json.loads(text)
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        pid = data.get("pid")
        return cls(
            pid if isinstance(pid, int) else None,
            str(data.get("host", "")),
            str(data.get("started", "")),
            str(data.get("job", "")),
        )

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host or '?'}, started {self.started or '?'}" + (
            f", job {self.job}" if self.job else ""
        )

    def alive_here(self) -> bool | None:
        """True/False for a pid on this host; None when it is another host's."""
        if self.host != socket.gethostname():
            return None
        if self.pid is None:
            return False
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


class RunLock:
    """``with RunLock(path, job=...) as lock:``; raises :class:`LockHeld` if held.

    ``lock.stale`` is the previous holder when a stale lock was taken over, else None.
    """

    def __init__(self, path: Path, job: str = "") -> None:
        self.path = path
        self.job = job
        self.fd: int | None = None
        self.stale: Holder | None = None

    def _read(self) -> str:
        assert self.fd is not None
        os.lseek(self.fd, 0, os.SEEK_SET)
        chunks = []
        while chunk := os.read(self.fd, 65536):
            chunks.append(chunk)
        return b"".join(chunks).decode("utf-8", "replace").strip()

    def acquire(self) -> RunLock:
        """Take the lock; the path must still name the locked file once it is taken (a file
        deleted by hand meanwhile would be a lock nobody else sees): else try again."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(ACQUIRE_TRIES):
            self._acquire_once()
            if self.holds_path():
                break
            self._close()
        else:
            raise LockHeld(f"{self.path} keeps being replaced; is another run starting?")
        record: dict[str, Any] = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "job": self.job,
        }
        assert self.fd is not None
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, os.SEEK_SET)
        os.write(self.fd, json.dumps(record).encode() + b"\n")
        os.fsync(self.fd)
        return self

    def identity(self) -> tuple[int, int]:
        """(device, inode) of the file this lock holds."""
        assert self.fd is not None
        held = os.fstat(self.fd)
        return held.st_dev, held.st_ino

    def holds_path(self) -> bool:
        """Whether the lock's path still names the file this lock holds."""
        return self.fd is not None and names(self.path, self.identity())

    def _acquire_once(self) -> None:
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        use_content = False
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                holder = Holder.parse(self._read())
                self._close()
                who = holder.describe() if holder else "another run"
                note = ""
                if holder is not None and holder.alive_here() is False:
                    note = "; that process has ended, its workers are still exiting: retry soon"
                raise LockHeld(f"another run holds {self.path} ({who}){note}") from exc
            if exc.errno not in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL):
                self._close()
                raise
            use_content = True
        previous = Holder.parse(self._read())
        if previous is not None and previous.pid != os.getpid():
            alive = previous.alive_here()
            if use_content and alive is not False:
                self._close()
                raise LockHeld(
                    f"another run holds {self.path} ({previous.describe()}); this file system "
                    "has no flock, so if that run is gone, delete the file"
                )
            self.stale = previous

    def release(self) -> None:
        if self.fd is None:
            return
        with contextlib.suppress(OSError):
            os.ftruncate(self.fd, 0)
        self._close()

    def _close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None

    def __enter__(self) -> RunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def names(path: Path | str, identity: tuple[int, int]) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == identity


def check_lock(path: Path | str, identity: tuple[int, int]) -> None:
    """Raise :class:`LockLost` unless ``path`` still names the locked file ``identity``;
    called before anything is published (by the workers too)."""
    if not names(path, identity):
        raise LockLost(
            f"{path} was deleted or replaced during the run, so another run could start beside "
            "this one; this run stops (completed shards are kept): do not delete the lock "
            "file, run the job again"
        )


def unfinished_run(path: Path) -> Holder | None:
    """The run that took the lock and ended without releasing it (killed), if the lock is
    free now: a finished run empties the file, a killed one leaves its name in it."""
    if current_holder(path) is not None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return Holder.parse(f.read())
    except OSError:
        return None


def current_holder(path: Path) -> Holder | None:
    """Who holds the lock now (None if nobody), without taking it."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            with open(path, encoding="utf-8", errors="replace") as f:
                return Holder.parse(f.read()) or Holder(None, "", "", "")
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
