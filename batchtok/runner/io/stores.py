"""Every place a run's outputs and state can live, once: :data:`STORES`, by URI scheme (``""``
for a local path).

A store names its locations (:meth:`Store.path`: a :class:`~pathlib.Path`, or an object path
with the part of its interface the runner uses), publishes a finished temporary file
(:meth:`~Store.replace`: a rename on disk, an upload to object storage), writes a small file
atomically, gives the stat a record remembers, says where temporary files go and how a
trainer's file set is published, cleans what a killed run left, and takes the run's lock. The
runner asks the store of a location (:func:`store_of`); it never tests which store it is.
Adding an object store is one module beside :mod:`.s3`, :mod:`.gcs` and :mod:`.azure` (an
:class:`~.objects.ObjectPath` with its requests) and one line in :data:`STORES`.

Inputs are read through ``pyarrow.fs`` or fsspec (:mod:`.arrow_fs`), so they may live under any
scheme either knows, except where a store reads its scheme with its own client (GCS, Azure);
outputs need a store here (a job naming another scheme for ``output.dir`` is refused when it
is read).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from batchtok.formats.access import FileAccess

from . import arrow_fs, objects
from .arrow_fs import StorageOptions, is_uri
from .azure import AzurePath
from .gcs import GCSPath
from .objects import ObjectPath
from .s3 import S3Path

OutPath = Path | ObjectPath


class Store:
    """What the runner needs of one kind of place (see the module docstring)."""

    scheme: ClassVar[str]
    #: whether files are published by a rename of a temporary file on the same file system
    #: (else each is uploaded whole from a local temporary file)
    renames: ClassVar[bool]

    def path(self, text: str, options: StorageOptions) -> OutPath:
        """The location ``text`` names, its requests made with the job's ``options``."""
        raise NotImplementedError

    def replace(
        self, tmp: str | os.PathLike[str], dest: OutPath, beat: Callable[[], None] | None = None
    ) -> None:
        """Publish the finished local file ``tmp`` as ``dest``, whole or not at all
        (``beat()``: called as a long upload moves on)."""
        raise NotImplementedError

    def write_whole(
        self, target: OutPath, data: bytes, tmp: OutPath | None = None, durable: bool = False
    ) -> None:
        """Write a small file atomically: where the store renames, through the temporary
        file ``tmp`` (one of this process), by default ``.NAME.PID.tmp`` beside ``target``;
        ``durable``: flushed to the disk before it is renamed, and the rename too (a part's
        record; a run's own records and summary are hints a crash may lose: they are read
        whole or not at all, never trusted against the outputs, and an fsync each would cost
        a run of many small files seconds)."""
        raise NotImplementedError

    def stat(self, location: OutPath) -> dict[str, Any] | None:
        """What a record remembers of a file (None if it does not exist)."""
        raise NotImplementedError

    def present(self, location: OutPath) -> bool:
        """Whether something is at ``location`` (a broken link counts)."""
        raise NotImplementedError

    def size(self, location: OutPath) -> int:
        """The file's size in bytes (FileNotFoundError if it is not there)."""
        raise NotImplementedError

    def open_binary(self, location: OutPath) -> Any:
        """The file opened for reading: seekable, binary (FileNotFoundError if absent)."""
        raise NotImplementedError

    def readable(self, location: OutPath) -> Any:
        """What ``pyarrow.parquet`` reads the file from."""
        raise NotImplementedError

    def tmp_dir(self, output_dir: OutPath, state_dir: OutPath) -> Path:
        """Where the run's temporary files are written (local, on this machine)."""
        raise NotImplementedError

    def set_publisher(
        self, options: StorageOptions, beat: Callable[[], None] | None = None
    ) -> Callable[[Sequence[tuple[str, str]]], None] | None:
        """How a trainer format's staged file set is published (None: renamed in place)."""
        return None

    def abort_incomplete(self, output_dir: OutPath) -> int:
        """Clean what killed writers left invisible under ``output_dir``; how many."""
        return 0

    def abort_incomplete_of(self, dest: OutPath) -> int:
        """Clean what a killed writer of the output ``dest`` left invisible; how many."""
        return 0

    def unavailable(self) -> str | None:
        """Why this process cannot write here (a package missing), or None."""
        return None

    def credentials_problem(self, options: StorageOptions) -> str | None:
        """Why requests made with ``options`` carry no credentials, or None (for explaining
        a refusal, not for deciding one)."""
        return None


class _Local(Store):
    scheme = ""
    renames = True

    def path(self, text: str, options: StorageOptions) -> OutPath:
        return Path(text)

    def replace(
        self, tmp: str | os.PathLike[str], dest: OutPath, beat: Callable[[], None] | None = None
    ) -> None:
        from batchtok.formats.files import fsync_dir

        directory = os.path.dirname(os.fspath(dest))
        os.makedirs(directory or ".", exist_ok=True)
        os.replace(tmp, dest)
        fsync_dir(directory)

    def write_whole(
        self, target: OutPath, data: bytes, tmp: OutPath | None = None, durable: bool = False
    ) -> None:
        target = Path(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        staged = target.with_name(f".{target.name}.{os.getpid()}.tmp") if tmp is None else Path(tmp)
        try:
            with open(staged, "wb") as f:
                f.write(data)
                if durable:
                    f.flush()
                    os.fsync(f.fileno())
            if durable:
                self.replace(staged, target)
            else:
                os.replace(staged, target)
        except BaseException:
            with contextlib.suppress(OSError):
                staged.unlink()
            raise

    def stat(self, location: OutPath) -> dict[str, Any] | None:
        try:
            st = os.stat(location)
        except OSError:
            return None
        return stat_key(st)

    def present(self, location: OutPath) -> bool:
        return os.path.lexists(location)

    def size(self, location: OutPath) -> int:
        return os.path.getsize(location)

    def open_binary(self, location: OutPath) -> Any:
        return open(location, "rb")

    def readable(self, location: OutPath) -> Any:
        try:
            os.fspath(location).encode("utf-8")
        except UnicodeEncodeError:
            # pyarrow encodes a path as UTF-8: a name that is not (a surrogate-escaped str) is
            # opened here by its bytes
            import pyarrow as pa

            return pa.OSFile(os.fsencode(location))
        return location

    def tmp_dir(self, output_dir: OutPath, state_dir: OutPath) -> Path:
        return Path(state_dir) / "tmp"  # beside the outputs: a rename stays on one file system


class _Objects(Store):
    """A store of objects (S3, GCS, Azure): its requests are its path class's."""

    renames = False

    def __init__(self, path_class: type[ObjectPath]) -> None:
        self.path_class = path_class
        self.scheme = path_class.scheme  # type: ignore[misc]

    def path(self, text: str, options: StorageOptions) -> OutPath:
        return self.path_class.parse(text, options)

    def replace(
        self, tmp: str | os.PathLike[str], dest: OutPath, beat: Callable[[], None] | None = None
    ) -> None:
        self._object(dest).upload(tmp, beat)

    def write_whole(
        self, target: OutPath, data: bytes, tmp: OutPath | None = None, durable: bool = False
    ) -> None:
        self._object(target).write_bytes(data)  # one request: atomic and durable

    def stat(self, location: OutPath) -> dict[str, Any] | None:
        return objects.stat_of(self._object(location))

    def present(self, location: OutPath) -> bool:
        return self._object(location).meta() is not None

    def size(self, location: OutPath) -> int:
        found = self._object(location).meta()
        if found is None:
            raise FileNotFoundError(str(location))
        return found.size

    def open_binary(self, location: OutPath) -> Any:
        return self._object(location).open_input()

    def readable(self, location: OutPath) -> Any:
        return self._object(location).open_input()

    def tmp_dir(self, output_dir: OutPath, state_dir: OutPath) -> Path:
        return objects.local_tmp_dir(self._object(output_dir))

    def set_publisher(
        self, options: StorageOptions, beat: Callable[[], None] | None = None
    ) -> Callable[[Sequence[tuple[str, str]]], None] | None:
        return objects.set_publisher(self.path_class, options, beat)

    def abort_incomplete(self, output_dir: OutPath) -> int:
        return self._object(output_dir).abort_incomplete()

    def abort_incomplete_of(self, dest: OutPath) -> int:
        target = self._object(dest)
        return target.abort_incomplete(objects.file_set_keys(target)[1])

    def unavailable(self) -> str | None:
        return self.path_class.unavailable()

    def credentials_problem(self, options: StorageOptions) -> str | None:
        return self.path_class.credentials_problem(options)

    def _object(self, location: Any) -> ObjectPath:
        # an object's path carries the options its requests go with: one rebuilt from a
        # string here would go without them (to the cloud, not the job's endpoint), so none is
        if not isinstance(location, self.path_class):
            named = self.path_class.__name__
            raise TypeError(f"{location!r}: an object's location must be given as its {named}")
        return location


#: Every store outputs can be written to, by URI scheme ("": a local path).
STORES: dict[str, Store] = {
    store.scheme: store
    for store in (_Local(), _Objects(S3Path), _Objects(GCSPath), _Objects(AzurePath))
}


arrow_fs.OWN_READERS.update(
    (s.scheme, s.path_class)
    for s in STORES.values()
    if isinstance(s, _Objects) and not s.path_class.arrow_reads
)


def scheme_of(location: str | os.PathLike[str] | OutPath) -> str:
    """The URI scheme of ``location`` ("" for a local path)."""
    if isinstance(location, ObjectPath):
        return location.scheme
    text = os.fspath(location)
    return text.partition("://")[0] if is_uri(text) else ""


def store_of(location: str | os.PathLike[str] | OutPath) -> Store:
    """The store ``location`` is in (ValueError naming the scheme if there is none)."""
    scheme = scheme_of(location)
    try:
        return STORES[scheme]
    except KeyError:
        raise ValueError(f"{location}: no store writes {scheme}:// locations") from None


def stat_key(st: os.stat_result) -> dict[str, int]:
    """The stat a record remembers of a local file: size, mtime, ctime (changed by any write,
    even one that sets the mtime back) and inode (changed by a replacement)."""
    return {
        "size": st.st_size,
        "mtime_ns": st.st_mtime_ns,
        "ctime_ns": st.st_ctime_ns,
        "inode": st.st_ino,
    }


# -- the store of each location, asked -------------------------------------------------------


def as_path(
    location: str | os.PathLike[str] | OutPath, options: StorageOptions | None = None
) -> OutPath:
    """``location`` as its store names it: a local Path, or an object path whose requests go
    with ``options`` (the job's ``[storage]``); a path given is returned as it is."""
    if isinstance(location, ObjectPath):
        return location
    return store_of(location).path(os.fspath(location), options or StorageOptions())


def options_of(location: Any) -> StorageOptions | None:
    """The options an object path's requests go with (None for a local path or a string)."""
    return location.options if isinstance(location, ObjectPath) else None


def readable(
    location: str | os.PathLike[str] | OutPath, options: StorageOptions | None = None
) -> Any:
    """What pyarrow.parquet reads ``location`` from: a local path, or an open object."""
    path = as_path(location, options)
    return store_of(path).readable(path)


def open_binary(
    location: str | os.PathLike[str] | OutPath, options: StorageOptions | None = None
) -> Any:
    """A local file or an object opened for reading: seekable, binary (FileNotFoundError if
    it is not there)."""
    path = as_path(location, options)
    return store_of(path).open_binary(path)


def size_of(
    location: str | os.PathLike[str] | OutPath, options: StorageOptions | None = None
) -> int:
    """A local file's or an object's size in bytes (FileNotFoundError if it is not there)."""
    path = as_path(location, options)
    return store_of(path).size(path)


def stat_of(location: OutPath) -> dict[str, Any] | None:
    """What a record remembers of a file: a local file's :func:`stat_key`, an object's size
    and ETag; None if it does not exist."""
    path = as_path(location)
    return store_of(path).stat(path)


def replace(
    tmp: str | os.PathLike[str],
    dest: str | os.PathLike[str] | OutPath,
    options: StorageOptions | None = None,
    beat: Callable[[], None] | None = None,
) -> None:
    """Publish the finished file ``tmp`` as ``dest``: a rename on disk (the directory
    fsynced), an upload to object storage (``beat()`` after each part)."""
    path = as_path(dest, options)
    store_of(path).replace(tmp, path, beat)


def write_whole(
    target: OutPath, data: bytes, tmp: OutPath | None = None, durable: bool = False
) -> None:
    """Write a small file (a record, the summary) atomically (see :meth:`Store.write_whole`)."""
    store_of(target).write_whole(target, data, tmp, durable)


def files_for(options: StorageOptions | None) -> FileAccess:
    """How the trainer formats' readers reach a file set here or in object storage (its
    requests with ``options``)."""
    return FileAccess(
        functools.partial(open_binary, options=options), functools.partial(size_of, options=options)
    )
