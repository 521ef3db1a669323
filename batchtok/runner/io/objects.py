"""Object storage in general: what every object store (S3, Google Cloud Storage, Azure Blob
Storage) shares, so that each is one module of requests.

:class:`ObjectPath` stands where a local :class:`~pathlib.Path` stands in the runner (``/``,
``name``, ``parent``, ``exists``, ``read_text``, ``glob``...): an object, or a prefix, in a
bucket (a container, on Azure), with the job's ``[storage]`` options its requests go with. A
store's module subclasses it with the requests themselves (:meth:`ObjectPath.meta`,
:meth:`~ObjectPath.read_range`, :meth:`~ObjectPath.upload`, the lock's conditional writes...);
the rest is here: the path arithmetic, a seekable reader over ranged reads (what pyarrow reads
an input or an output back through), the local directory temporary files go to, and how a
trainer format's file set is published.

Every store keeps the same rules: an object appears whole or not at all (uploaded whole from a
local temporary file; a multipart, resumable or block upload is committed only when complete);
the lock is created only if absent and rewritten only if unchanged (:meth:`put_if`).
"""

from __future__ import annotations

import contextlib
import datetime
import fnmatch
import io
import os
import tempfile
import threading
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, ClassVar

import xxhash

from .arrow_fs import StorageOptions

# How often a worker uploading a large file says it is moving on (an upload through an SDK
# that has no progress hook runs in a thread while the caller beats).
BEAT_SECONDS = 5.0


class ObjectStoreError(OSError):
    """A request to object storage failed; the message names the object and the reason."""


@dataclass(frozen=True)
class ObjectMeta:
    """What a HEAD says of an object."""

    size: int
    etag: str  # the version a conditional write names (S3 and Azure: the ETag; GCS: the generation)
    modified: datetime.datetime | None = None


@dataclass(frozen=True)
class ObjectPath:
    """An object (or a prefix) ``SCHEME://bucket/key``, with the part of ``Path``'s interface
    the runner uses; a store's module gives the requests."""

    scheme: ClassVar[str] = ""
    #: the extra that installs the store's client library ("" if none is needed)
    extra: ClassVar[str] = ""
    #: whether inputs here are read through ``pyarrow.fs`` (else through this class)
    arrow_reads: ClassVar[bool] = False
    #: the module the store's requests need, and what to tell a user who lacks it
    client_module: ClassVar[str] = ""
    missing: ClassVar[str] = ""

    bucket: str
    key: str = ""
    #: the job's ``[storage]`` settings its requests go with (not part of its identity)
    options: StorageOptions = field(default=StorageOptions(), compare=False)

    @classmethod
    def parse(cls, uri: str, options: StorageOptions | None = None) -> Any:
        scheme, _, rest = uri.partition("://")
        if scheme != cls.scheme:
            raise ValueError(f"not a {cls.scheme}:// URI: {uri}")
        bucket, _, key = rest.partition("/")
        return cls(bucket, key.strip("/"), options or StorageOptions())

    def __str__(self) -> str:
        return f"{self.scheme}://{self.bucket}/{self.key}"

    def __truediv__(self, other: str | os.PathLike[str]) -> Any:
        tail = str(other).strip("/")
        return type(self)(self.bucket, f"{self.key}/{tail}" if self.key else tail, self.options)

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> Any:
        return type(self)(self.bucket, self.key.rpartition("/")[0], self.options)

    def with_name(self, name: str) -> Any:
        return self.parent / name

    def relative_to(self, other: ObjectPath) -> PurePosixPath:
        if self.bucket != other.bucket or not self.key.startswith(other.key + "/"):
            raise ValueError(f"{self} is not under {other}")
        return PurePosixPath(self.key[len(other.key) + 1 :])

    def as_posix(self) -> str:
        return str(self)

    # -- what each store's module gives -----------------------------------------------------

    @classmethod
    def unavailable(cls) -> str | None:
        """Why this process cannot write here (its client library is missing), or None."""
        return None if installed(cls.client_module) else cls.missing

    @classmethod
    def credentials_problem(cls, options: StorageOptions) -> str | None:
        """Why requests made with ``options`` carry no credentials, or None (for explaining a
        refusal, not for deciding one)."""
        return None

    def meta(self) -> ObjectMeta | None:
        """The object's size and version (None if there is none)."""
        raise NotImplementedError

    def read_range(self, start: int, end: int) -> bytes:
        """Bytes ``start`` to ``end`` (exclusive) of the object."""
        raise NotImplementedError

    def read_bytes(self) -> bytes:
        raise NotImplementedError

    def keys(self, limit: int = 0) -> Iterator[tuple[str, int, int]]:
        """(key, size, modification time in ns) of the objects under this prefix (at most
        ``limit`` if it is not 0)."""
        raise NotImplementedError

    def write_bytes(self, data: bytes) -> None:
        """Put the object in one request (atomic: readers see the old object or the new one)."""
        raise NotImplementedError

    def put_if(self, data: bytes, version: str | None) -> str | None:
        """Put the object only if it is absent (``version`` None) or still at ``version``:
        its new version, or None if the condition did not hold."""
        raise NotImplementedError

    def read_versioned(self) -> tuple[bytes, str, float] | None:
        """(content, version, age in seconds) of a small object; None if there is none."""
        raise NotImplementedError

    def delete_if(self, version: str) -> None:
        """Delete the object if it is still at ``version`` (else leave it)."""
        raise NotImplementedError

    def unlink(self, missing_ok: bool = False) -> None:
        raise NotImplementedError

    def upload(self, tmp: str | os.PathLike[str], beat: Callable[[], None] | None = None) -> None:
        """Upload the finished local file ``tmp`` as this object, whole or not at all; then
        delete ``tmp``. ``beat()`` is called as a long upload moves on."""
        raise NotImplementedError

    def abort_incomplete(self, keys: set[str] | None = None) -> int:
        """Clean the incomplete uploads killed writers left under this prefix (only of the
        keys ``keys``, if given); how many. Where an incomplete upload is never visible and
        expires by itself (a GCS resumable session, Azure's uncommitted blocks), nothing."""
        return 0

    # -- built on those ---------------------------------------------------------------------

    def exists(self) -> bool:
        """An object of this name, or any object under it as a prefix (a "directory")."""
        return self.meta() is not None or self.is_dir()

    def is_dir(self) -> bool:
        return next(iter(self.keys(limit=1)), None) is not None

    def read_text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self.read_bytes().decode(encoding, errors)

    def write_text(self, text: str, encoding: str = "utf-8") -> None:
        self.write_bytes(text.encode(encoding))

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Object storage has no directories: nothing to do."""

    def open_input(self) -> Any:
        """A seekable binary file over the object, read by ranges (for pyarrow)."""
        found = self.meta()
        if found is None:
            raise FileNotFoundError(f"{self}: no such object")
        return io.BufferedReader(RangeReader(self, found.size), buffer_size=1 << 20)

    def rglob(self, pattern: str) -> Iterator[Any]:
        for key, _, _ in self.keys():
            if fnmatch.fnmatchcase(key.rsplit("/", 1)[-1], pattern):
                yield type(self)(self.bucket, key, self.options)

    def glob(self, pattern: str) -> Iterator[Any]:
        depth = self.key.count("/") + 1 if self.key else 0
        for found in self.rglob(pattern):
            if found.key.count("/") == depth:
                yield found


def installed(module: str) -> bool:
    """Whether ``module`` ("" for none) can be imported here (without importing it)."""
    import importlib.util

    try:
        return not module or importlib.util.find_spec(module) is not None
    except ModuleNotFoundError:  # its parent package is missing
        return False


class RangeReader(io.RawIOBase):
    """An object read by ranged requests: seekable, for pyarrow (through a buffer)."""

    def __init__(self, path: ObjectPath, size: int) -> None:
        self.path = path
        self.size = size
        self.at = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self.at

    def seek(self, offset: int, whence: int = 0) -> int:
        base = {0: 0, 1: self.at, 2: self.size}[whence]
        self.at = max(0, base + offset)
        return self.at

    def readinto(self, buffer: Any) -> int:
        end = min(self.size, self.at + len(buffer))
        if end <= self.at:
            return 0
        data = self.path.read_range(self.at, end)
        n = len(data)
        memoryview(buffer)[:n] = data
        self.at += n
        return n


def stat_of(location: ObjectPath) -> dict[str, Any] | None:
    """What a record remembers of an object: its size and version (None if there is none)."""
    found = location.meta()
    return None if found is None else {"size": found.size, "etag": found.etag}


def local_tmp_dir(output: ObjectPath) -> Path:
    """Where the temporary files of an object-storage output are written (one directory per
    output, on this machine: the lock holder clears it at start and end)."""
    name = xxhash.xxh3_128_hexdigest(str(output).encode())[:16]
    return Path(tempfile.gettempdir()) / f"batchtok-{name}"


def file_set_keys(target: ObjectPath) -> tuple[str, set[str]]:
    """The prefix and keys of a trainer format's file set whose primary file is ``target``."""
    stem = target.key.removesuffix(".idx")
    keys = {target.key, stem + ".bin", stem + ".batchtok.json"}
    keys |= {target.key + suffix for suffix in (".index", ".metadata", ".batchtok.json")}
    return stem, keys


def set_publisher(
    path_class: type[ObjectPath], options: StorageOptions, beat: Callable[[], None] | None
) -> Callable[[Sequence[tuple[str, str]]], None]:
    """How a trainer format's file set goes to object storage, in the order of
    :func:`batchtok.formats.files.publish`: an older primary object deleted first, the others
    uploaded one by one (an entry without a temporary file deletes its object), the primary
    one last."""

    def publish(staged: Sequence[tuple[str, str]]) -> None:
        path_class.parse(staged[-1][1], options).unlink(missing_ok=True)
        for tmp, dest in staged:
            if not tmp:
                path_class.parse(dest, options).unlink(missing_ok=True)
            else:
                path_class.parse(dest, options).upload(tmp, beat)

    return publish


def upload_beating(send: Callable[[], None], beat: Callable[[], None] | None) -> None:
    """Run ``send`` (an SDK's whole-file upload, which has no progress hook) in a thread,
    calling ``beat()`` every :data:`BEAT_SECONDS` until it ends; its exception is raised here."""
    if beat is None:
        send()
        return
    failure: list[BaseException] = []

    def run() -> None:
        try:
            send()
        except BaseException as exc:  # raised in the caller's thread below
            failure.append(exc)

    thread = threading.Thread(target=run, name="batchtok-upload", daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(BEAT_SECONDS)
        if thread.is_alive():
            beat()
    if failure:
        raise failure[0]


def remove_local(tmp: str | os.PathLike[str]) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)
