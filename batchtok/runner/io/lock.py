"""One run at a time per output directory: ``OUT/.batchtok/lock``.

The lock is an exclusive ``flock`` on that file, and the file says who holds it (pid, host,
start time, job). The kernel drops a ``flock`` when its holder dies, however it dies, so a run
killed with ``kill -9`` never leaves a lock that blocks the next one: the next run gets the
lock, finds the dead run's pid and host in the file, logs that it takes over a stale lock, and
(holding the lock) deletes the temporary files the dead run left.

An output in object storage has no ``flock``: its lock is an object created with a
conditional PUT and kept alive by a heartbeat (:class:`ObjectRunLock`).

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
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import LockHeld, LockLost

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
        # Named in the file: what the workers compare before publishing. A (device, inode)
        # pair would do on one machine, but a network file system may show the same file
        # under another device number on each node of a cluster.
        self.run_id = uuid.uuid4().hex

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
            "run_id": self.run_id,
        }
        assert self.fd is not None
        os.ftruncate(self.fd, 0)
        os.lseek(self.fd, 0, os.SEEK_SET)
        os.write(self.fd, json.dumps(record).encode() + b"\n")
        os.fsync(self.fd)
        return self

    def identity(self) -> str:
        """The run id the lock file names while this lock holds it (see :func:`check_lock`)."""
        return self.run_id

    def holds_path(self, cached: bool = False) -> bool:
        """Whether the lock's path still names the file this lock holds (``cached``: as
        :class:`ObjectRunLock`'s; a stat is cheap, so always checked)."""
        if self.fd is None:
            return False
        held = os.fstat(self.fd)
        return names(self.path, (held.st_dev, held.st_ino))

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


def check_lock(path: Any, identity: str) -> None:
    """Raise :class:`LockLost` unless the lock at ``path`` (a file, or an object) still
    names the run id ``identity``; called before anything is published (by the workers too,
    on any node)."""
    from .objects import ObjectPath

    if isinstance(path, ObjectPath):  # (a worker gets the path object, with its options)
        if object_lock_run_id(path) != identity:
            raise LockLost(
                f"{path} was deleted or replaced during the run (taken over as stale, or "
                "deleted by hand), so another run could start beside this one; this run stops "
                "(completed shards are kept): run the job again"
            )
        return
    if _file_lock_run_id(path) != identity:
        raise LockLost(
            f"{path} was deleted or replaced during the run, so another run could start beside "
            "this one; this run stops (completed shards are kept): do not delete the lock "
            "file, run the job again"
        )


def _file_lock_run_id(path: Path | str) -> str | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            data = json.loads(f.read() or "null")
    except (OSError, ValueError):
        return None
    return data.get("run_id") if isinstance(data, dict) else None


def unfinished_run(path: Path) -> Holder | None:
    """The run that took the lock and ended without releasing it (killed), if the lock is
    free now: a finished run empties the file, a killed one leaves its name in it (an
    object-storage run deletes its lock object; a killed one leaves it, stale)."""
    from .objects import ObjectPath

    if isinstance(path, ObjectPath):
        found = read_object_lock(path)
        return None if found is None or not found[2] else found[0] or Holder(None, "", "", "")
    if current_holder(path) is not None:
        return None
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return Holder.parse(f.read())
    except OSError:
        return None


def current_holder(path: Path) -> Holder | None:
    """Who holds the lock now (None if nobody), without taking it."""
    from .objects import ObjectPath

    if isinstance(path, ObjectPath):
        found = read_object_lock(path)
        return None if found is None or found[2] else found[0] or Holder(None, "", "", "")
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


# -- the lock of an output in object storage -------------------------------------------------

# How often a run holding an object's lock rewrites it (proof of life), and after how long
# without that the lock is stale: a run killed on any host stops rewriting it, and the next
# run takes it over once it is STALE_SECONDS old (at once if it names a dead pid on this host).
HEARTBEAT_SECONDS = 60.0
STALE_SECONDS = 600.0
CHECK_SECONDS = 2.0  # the main process re-reads the lock at most this often


class ObjectRunLock:
    """The lock of an output in object storage: the object ``OUT/.batchtok/lock``, created
    only if absent (S3 and Azure: ``If-None-Match: *``; GCS: generation 0), so two runs cannot
    both create it. It names its holder (pid, host, start time, job) and a run id, and is
    rewritten every :data:`HEARTBEAT_SECONDS` only if it is still at its last version
    (``If-Match`` on its ETag; GCS: on its generation). A lock whose last write is older than
    :data:`STALE_SECONDS` (by the server's clock where it says), or that names a dead pid on
    this host, is stale: it is taken over with a write conditional on its version, so of two
    runs taking it over at once one wins. Releasing deletes it (if it is still ours); a killed
    run leaves it, which is how ``batchtok status`` tells a run that did not finish.

    The same interface as :class:`RunLock`; :meth:`identity` is the run id, which the workers
    check (:func:`check_lock`) before publishing anything.
    """

    def __init__(self, path: Any, job: str = "") -> None:
        self.path = path
        self.job = job
        self.run_id = uuid.uuid4().hex
        self.etag = ""
        self.stale: Holder | None = None
        self.started = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        self._beat = 0.0  # monotonic time of the last write
        self._checked = 0.0  # monotonic time of the last read that found it ours
        self._lost = False
        self._beats = 0

    def _body(self) -> bytes:
        record = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started": self.started,
            "job": self.job,
            "run_id": self.run_id,
            "heartbeat": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "beats": self._beats,  # each write's content differs, so does its ETag
        }
        return json.dumps(record).encode() + b"\n"

    def _put(self, version: str | None) -> bool:
        """Write the lock if it is absent (``version`` None) or still at ``version``; False
        if the condition did not hold."""
        self._beats += 1
        found = self.path.put_if(self._body(), version)
        if found is None:
            return False
        self.etag = found
        self._beat = self._checked = time.monotonic()
        return True

    def acquire(self) -> ObjectRunLock:
        for _ in range(ACQUIRE_TRIES):
            if self._put(None):
                return self
            found = read_object_lock(self.path)
            if found is None:  # released meanwhile: try again
                continue
            holder, etag, stale = found
            if not stale:
                who = holder.describe() if holder else "another run"
                raise LockHeld(
                    f"another run holds {self.path} ({who}); a run killed elsewhere leaves it "
                    f"until it is {STALE_SECONDS:.0f} s without a heartbeat, or delete it"
                )
            if self._put(etag):
                self.stale = holder or Holder(None, "", "", "")
                return self
        raise LockHeld(f"{self.path} keeps being replaced; is another run starting?")

    def identity(self) -> str:
        return self.run_id

    def holds_path(self, cached: bool = False) -> bool:
        """Whether the lock is still this run's (``cached``: re-read at most every
        CHECK_SECONDS, for a loop asking often); also rewrites it when its heartbeat is due."""
        if self._lost:
            return False
        now = time.monotonic()
        try:
            if now - self._beat >= HEARTBEAT_SECONDS:
                self._lost = not self._put(self.etag)
            elif not cached or now - self._checked >= CHECK_SECONDS:
                self._lost = object_lock_run_id(self.path) != self.run_id
                self._checked = now
        except OSError:
            # The server did not answer: no other run can have taken the lock over while
            # our last write is well within STALE_SECONDS; try again at the next check.
            return now - self._beat < STALE_SECONDS / 2
        return not self._lost

    def release(self) -> None:
        if self._lost or not self.etag:
            return
        with contextlib.suppress(Exception):  # (not ours any more: left as it is)
            self.path.delete_if(self.etag)
        self.etag = ""

    def __enter__(self) -> ObjectRunLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def read_object_lock(path: Any) -> tuple[Holder | None, str, bool] | None:
    """(holder, version, stale) of an object's lock; None if there is none."""
    found = path.read_versioned()
    if found is None:
        return None
    data, version, age = found
    holder = Holder.parse(data.decode("utf-8", "replace"))
    stale = age > STALE_SECONDS or (holder is not None and holder.alive_here() is False)
    return holder, version, stale


def object_lock_run_id(path: Any) -> str | None:
    """The run id an object's lock names (None if there is no lock, or it names none)."""
    got = path.read_versioned()
    try:
        data = json.loads(got[0]) if got is not None else None
    except ValueError:
        return None
    return data.get("run_id") if isinstance(data, dict) else None


#: The lock of an output directory, local or in object storage (:func:`run_lock`).
Lock = RunLock | ObjectRunLock


def run_lock(path: Any, job: str = "") -> Lock:
    """The run lock of an output: a local file's, or an object's."""
    from .objects import ObjectPath

    return ObjectRunLock(path, job) if isinstance(path, ObjectPath) else RunLock(path, job)
