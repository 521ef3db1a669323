"""Inputs in object storage (``s3://bucket/prefix/``), or under any ``pyarrow.fs`` or fsspec URI.

An input path with a scheme (``s3://``, ``hdfs://``...) is read through ``pyarrow.fs``, else
through fsspec (``hf://``, ``memory://``...); ``gs://`` and ``az://`` are read by their stores'
own clients (:data:`OWN_READERS`); a plain path stays a local file. For S3, credentials come
from the standard AWS environment (``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``,
``AWS_SESSION_TOKEN``, profiles, instance roles) and the job's ``[storage]`` table can set the
endpoint (an S3-compatible server), the region, or anonymous access. An object's "stat" is its
size and modification time: object stores have no inode or ctime, so an overwrite that keeps
both is caught only by ``--verify``.
"""

from __future__ import annotations

import datetime
import os
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pyarrow.fs as pafs


@dataclass(frozen=True)
class StorageOptions:
    endpoint: str = ""  # e.g. "http://127.0.0.1:9000" for an S3-compatible server
    region: str = ""
    anonymous: bool = False

    def with_environment(
        self, schemes: Collection[str] = ("s3",), environ: Mapping[str, str] = os.environ
    ) -> StorageOptions:
        """These options, an endpoint or region the job leaves empty taken from the standard
        AWS environment (``AWS_ENDPOINT_URL_S3``, else ``AWS_ENDPOINT_URL``, else the
        ``endpoint_url`` of the profile in use, ``AWS_PROFILE``'s or the default one;
        ``AWS_REGION``, else ``AWS_DEFAULT_REGION``), as boto3 and the AWS CLI read it: so
        every request of a run (inputs through pyarrow, outputs and the lock through boto3)
        goes to one place. Only for a job naming ``s3://`` locations (``schemes``): GCS's and
        Azure's clients read their own environment, and an AWS endpoint is not theirs."""
        if "s3" not in schemes:
            return self
        endpoint = self.endpoint or environ.get("AWS_ENDPOINT_URL_S3") or ""
        endpoint = endpoint or environ.get("AWS_ENDPOINT_URL") or _profile_endpoint()
        region = self.region or environ.get("AWS_REGION") or environ.get("AWS_DEFAULT_REGION")
        return replace(self, endpoint=endpoint, region=region or "")


def _profile_endpoint() -> str:
    """The ``endpoint_url`` of the AWS profile in use (from ``~/.aws/config`` or
    ``AWS_CONFIG_FILE``), "" if none is set or botocore, which reads it, is not installed."""
    try:
        import botocore.session
        from botocore.exceptions import BotoCoreError
    except ImportError:
        return ""
    try:
        found = botocore.session.Session().get_scoped_config().get("endpoint_url")
    except BotoCoreError:  # a profile named that does not exist: the SDKs refuse it later
        return ""
    return found if isinstance(found, str) else ""


def ns_of(when: datetime.datetime | None) -> int:
    """A modification time as nanoseconds since the epoch (0 if unknown)."""
    return int(when.timestamp() * 1e9) if when else 0


def is_uri(path: str) -> bool:
    """A path read through ``pyarrow.fs`` (it names a scheme), not a local file."""
    scheme, sep, _ = path.partition("://")
    return bool(sep) and scheme.isidentifier() and scheme != "file"


#: The object-path class of each scheme a store reads with its own client (GCS, Azure),
#: filled by :mod:`.stores` (which builds on this module); other schemes go through pyarrow.
OWN_READERS: dict[str, Any] = {}


def _object_path(uri: str, options: StorageOptions) -> Any:
    """The object path of ``uri`` if a store reads its scheme with its own client, else None
    (``pyarrow.fs`` reads it)."""
    path_class = OWN_READERS.get(uri.partition("://")[0])
    return None if path_class is None else path_class.parse(uri, options)


def _list_objects(where: Any) -> tuple[list[tuple[str, str]], bool] | None:
    if where.key and where.meta() is not None:
        return [(str(where), where.name)], True
    root = f"{where.key}/" if where.key else ""
    found = [
        (f"{where.scheme}://{where.bucket}/{key}", key[len(root) :]) for key, _, _ in where.keys()
    ]
    return (found, False) if found else None


_FILESYSTEMS: dict[tuple[str, StorageOptions], pafs.FileSystem] = {}


def filesystem(uri: str, options: StorageOptions) -> tuple[pafs.FileSystem, str]:
    """The file system holding ``uri`` (one per scheme and options, per process) and the
    path within it."""
    import pyarrow.fs as pafs  # imported by the first URI: a local job never needs it

    scheme, _, rest = uri.partition("://")
    key = (scheme, options)
    if scheme == "s3":
        if key not in _FILESYSTEMS:
            kwargs: dict[str, Any] = {}
            if options.endpoint:
                kwargs["endpoint_override"] = options.endpoint
            if options.region:
                kwargs["region"] = options.region
            if options.anonymous:
                kwargs["anonymous"] = True
            _FILESYSTEMS[key] = pafs.S3FileSystem(**kwargs)
        return _FILESYSTEMS[key], rest
    # Any other scheme: pyarrow's own file system, else fsspec's (hf://, memory://, ...)
    # wrapped for pyarrow; an error naming the scheme and what to install if neither has one.
    import pyarrow as pa

    try:
        try:
            fs, path = pafs.FileSystem.from_uri(uri)
            return fs, path
        except pa.ArrowInvalid as exc:  # no pyarrow file system for the scheme
            known = str(exc)
        try:
            import fsspec
        except ImportError as exc:
            raise OSError(
                f"no file system reads {scheme}:// URIs: pyarrow has none ({known}), and "
                "fsspec, through which other schemes are read, is not installed "
                "(pip install fsspec, and the package of the scheme's file system)"
            ) from exc
        try:
            found, path = fsspec.core.url_to_fs(uri)
        except ValueError as exc:  # "Protocol not known"
            raise OSError(
                f"no file system reads {scheme}:// URIs: neither pyarrow nor fsspec knows "
                f"the scheme ({exc})"
            ) from exc
        return pafs.PyFileSystem(pafs.FSSpecHandler(found)), path
    except ImportError as exc:  # fsspec knows the scheme; its package is not installed
        raise OSError(
            f"{scheme}:// URIs are read through fsspec, whose file system for them needs a "
            f"package that is not installed: {exc} (for hf://: pip install huggingface_hub)"
        ) from exc


def stat(uri: str, options: StorageOptions) -> dict[str, int] | None:
    """An object's size and modification time (None if it does not exist), in the shape of
    a local file's stat key (ctime and inode 0)."""
    import pyarrow.fs as pafs

    found = _object_path(uri, options)
    if found is not None:
        meta = found.meta()
        if meta is None:
            return None
        return {"size": meta.size, "mtime_ns": ns_of(meta.modified), "ctime_ns": 0, "inode": 0}
    fs, path = filesystem(uri, options)
    info = fs.get_file_info(path)
    if info.type != pafs.FileType.File:
        return None
    mtime = info.mtime_ns if info.mtime_ns is not None else 0
    return {"size": int(info.size or 0), "mtime_ns": int(mtime), "ctime_ns": 0, "inode": 0}


def open_input(uri: str, options: StorageOptions) -> Any:
    """A seekable binary file over the object (with read, seek and readinto)."""
    found = _object_path(uri, options)
    if found is not None:
        return found.open_input()
    fs, path = filesystem(uri, options)
    return fs.open_input_file(path)


def list_files(uri: str, options: StorageOptions) -> tuple[list[tuple[str, str]], bool] | None:
    """(uri, name relative to ``uri``) of every object under the prefix ``uri`` and False, or
    ``([(uri, its base name)], True)`` if it names one object; None if nothing is there.
    Which of a prefix's objects are inputs is the caller's choice (as for a local directory:
    :func:`batchtok.runner.inputs.discovery.picked_by_extension`)."""
    import pyarrow.fs as pafs

    found = _object_path(uri, options)
    if found is not None:
        return _list_objects(found)
    fs, path = filesystem(uri, options)
    info = fs.get_file_info(path)
    scheme = uri.partition("://")[0]
    if info.type == pafs.FileType.File:
        return [(uri, path.rsplit("/", 1)[-1])], True
    if info.type != pafs.FileType.Directory:
        return None
    root = path.rstrip("/")
    found = []
    for entry in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        if entry.type == pafs.FileType.File:
            found.append((f"{scheme}://{entry.path}", entry.path[len(root) + 1 :]))
    return found, False
