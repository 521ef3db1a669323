"""S3: outputs in object storage (``output.dir = "s3://bucket/prefix/"``), the store
:data:`batchtok.runner.io.stores.STORES` holds under ``s3``.

An S3 output keeps every rule of a local one, where S3 has no rename:

* **Nothing partial is ever visible.** Every output, part and trainer-format file is written
  whole to a local temporary file first (pyarrow cannot abort an S3 output stream: closing
  one after an exception commits the partial object), then uploaded. A single PUT is atomic
  (a killed upload leaves no object); a file larger than :data:`MULTIPART_BYTES` goes up as a
  multipart upload that is aborted on any exception, and a run (holding the lock) aborts the
  incomplete uploads a killed worker or run left under the output prefix.
* **The same order**: an output (a trainer format's primary file last) before its completion
  record; a part's record before the part.
* **All state under the prefix** (``s3://bucket/prefix/.batchtok/``: records, parts, the
  lock), so a run resumes from any machine and Ray actors on any node publish their own
  shards. Temporary files are local (:func:`local_tmp_dir`).

:class:`S3Path` stands where a local :class:`~pathlib.Path` stands in the runner (``/``,
``name``, ``parent``, ``exists``, ``read_text``, ``glob``...), so the runner's logic is one
code path; the few operations that differ are the store's (:mod:`.stores`). An object's stat
is its size and ETag (a content digest for a single PUT).

Writing needs boto3 (``pip install "batchtok[s3]"``): pyarrow exposes neither conditional
PUTs (the lock) nor aborting a multipart upload. Reads go through ``pyarrow.fs`` like inputs.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import xxhash

from .arrow_fs import StorageOptions, filesystem

BOTO3_MISSING = 'S3 outputs need boto3: pip install "batchtok[s3]"'
# Above this size a file is uploaded in parts (S3 takes at most 5 GB in one PUT).
MULTIPART_BYTES = 256 * 2**20
PART_BYTES = 64 * 2**20  # S3 wants at least 5 MiB a part but the last

_CLIENTS: dict[tuple[int, StorageOptions], Any] = {}  # one per process and options


class ObjectStoreError(OSError):
    """A request to object storage failed; the message names the object and the reason."""


def boto3_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("boto3") is not None


def client(options: StorageOptions) -> Any:
    """This process's boto3 S3 client for ``options`` (one per process: a client is not
    fork-safe)."""
    key = (os.getpid(), options)
    if key not in _CLIENTS:
        try:
            import boto3
            from botocore.config import Config
        except ImportError as exc:
            raise ObjectStoreError(BOTO3_MISSING) from exc
        kwargs: dict[str, Any] = {}
        if options.endpoint:
            kwargs["endpoint_url"] = options.endpoint
        if options.region:
            kwargs["region_name"] = options.region
        config = Config(retries={"max_attempts": 5, "mode": "standard"})
        if options.anonymous:
            from botocore import UNSIGNED

            config = config.merge(Config(signature_version=UNSIGNED))
        _CLIENTS[key] = boto3.session.Session().client("s3", config=config, **kwargs)
    return _CLIENTS[key]


def error_code(exc: BaseException) -> str:
    response = getattr(exc, "response", None) or {}
    return str(response.get("Error", {}).get("Code", ""))


# What a request without credentials is told (botocore refuses to send it unsigned; pyarrow
# sends it unsigned, and a private bucket refuses it).
NO_CREDENTIALS = (
    "no AWS credentials were found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
    "AWS_PROFILE, or run where an instance role applies (storage.anonymous = true reads a "
    "public bucket without them)"
)


def request_failed(uri: str, what: str, exc: Exception) -> ObjectStoreError:
    """The error naming ``uri`` for a failed request (botocore's, or the connection's)."""
    reason = NO_CREDENTIALS if type(exc).__name__ == "NoCredentialsError" else str(exc)
    return ObjectStoreError(f"cannot {what} {uri}: {reason}")


def _from_botocore(exc: BaseException) -> bool:
    return type(exc).__module__.startswith("botocore")


def credentials_problem(options: StorageOptions) -> str | None:
    """Why requests to S3 from this process carry no credentials (:data:`NO_CREDENTIALS`, or
    the credential chain's own error), or None: some were found, ``storage.anonymous`` is set,
    or boto3, which looks them up as pyarrow does, is not installed. For explaining a refusal,
    not for deciding one: a public bucket is read without credentials."""
    if options.anonymous or not boto3_available():
        return None
    import boto3

    try:
        found = boto3.session.Session().get_credentials()
    except Exception as exc:  # a profile that does not exist, a broken config file
        return f"the AWS credentials cannot be loaded: {exc}"
    return NO_CREDENTIALS if found is None else None


@dataclass(frozen=True)
class S3Path:
    """An object (or a prefix) ``s3://bucket/key``, with the part of ``Path``'s interface the
    runner uses."""

    bucket: str
    key: str = ""
    #: the job's ``[storage]`` settings its requests go with (not part of its identity)
    options: StorageOptions = field(default=StorageOptions(), compare=False)

    @classmethod
    def parse(cls, uri: str, options: StorageOptions | None = None) -> S3Path:
        scheme, _, rest = uri.partition("://")
        if scheme != "s3":
            raise ValueError(f"not an s3:// URI: {uri}")
        bucket, _, key = rest.partition("/")
        return cls(bucket, key.strip("/"), options or StorageOptions())

    def __str__(self) -> str:
        return f"s3://{self.bucket}/{self.key}"

    def __truediv__(self, other: str | os.PathLike[str]) -> S3Path:
        tail = str(other).strip("/")
        return S3Path(self.bucket, f"{self.key}/{tail}" if self.key else tail, self.options)

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def parent(self) -> S3Path:
        return S3Path(self.bucket, self.key.rpartition("/")[0], self.options)

    def with_name(self, name: str) -> S3Path:
        return self.parent / name

    def relative_to(self, other: S3Path) -> PurePosixPath:
        if self.bucket != other.bucket or not self.key.startswith(other.key + "/"):
            raise ValueError(f"{self} is not under {other}")
        return PurePosixPath(self.key[len(other.key) + 1 :])

    def as_posix(self) -> str:
        return str(self)

    # -- reading ----------------------------------------------------------------------------

    def head(self) -> dict[str, Any] | None:
        """The object's HEAD response (None if there is none)."""
        try:
            return client(self.options).head_object(Bucket=self.bucket, Key=self.key)
        except Exception as exc:
            if error_code(exc) in ("404", "NoSuchKey", "NotFound"):
                return None
            raise request_failed(str(self), "read the size of", exc) from exc

    def exists(self) -> bool:
        """An object of this name, or any object under it as a prefix (a "directory")."""
        return self.head() is not None or self.is_dir()

    def is_dir(self) -> bool:
        return next(iter(self._keys(limit=1)), None) is not None

    def read_bytes(self) -> bytes:
        fs, path = filesystem(str(self), self.options)
        with fs.open_input_stream(path) as f:
            return f.read()

    def read_text(self, encoding: str = "utf-8", errors: str = "strict") -> str:
        return self.read_bytes().decode(encoding, errors)

    def open_input(self) -> Any:
        """A seekable Arrow file over the object (for pyarrow.parquet)."""
        fs, path = filesystem(str(self), self.options)
        return fs.open_input_file(path)

    def _keys(self, limit: int = 0) -> Iterator[str]:
        prefix = self.key + "/" if self.key else ""
        pages = client(self.options).get_paginator("list_objects_v2")
        try:
            for page in pages.paginate(Bucket=self.bucket, Prefix=prefix):
                for entry in page.get("Contents", []):
                    yield entry["Key"]
                    limit -= 1
                    if limit == 0:
                        return
        except Exception as exc:
            if error_code(exc) or _from_botocore(exc):  # no credentials, no connection
                raise request_failed(str(self), "list", exc) from exc
            raise

    def rglob(self, pattern: str) -> Iterator[S3Path]:
        for key in self._keys():
            if fnmatch.fnmatchcase(key.rsplit("/", 1)[-1], pattern):
                yield S3Path(self.bucket, key, self.options)

    def glob(self, pattern: str) -> Iterator[S3Path]:
        depth = self.key.count("/") + 1 if self.key else 0
        for found in self.rglob(pattern):
            if found.key.count("/") == depth:
                yield found

    # -- writing ----------------------------------------------------------------------------

    def mkdir(self, parents: bool = False, exist_ok: bool = False) -> None:
        """Object storage has no directories: nothing to do."""

    def write_bytes(self, data: bytes) -> None:
        """Put the object in one PUT (atomic: readers see the old object or the new one)."""
        try:
            client(self.options).put_object(Bucket=self.bucket, Key=self.key, Body=data)
        except Exception as exc:
            raise request_failed(str(self), "write", exc) from exc

    def write_text(self, text: str, encoding: str = "utf-8") -> None:
        self.write_bytes(text.encode(encoding))

    def unlink(self, missing_ok: bool = False) -> None:
        # S3 answers a delete of a missing key with success: missing_ok holds either way.
        try:
            client(self.options).delete_object(Bucket=self.bucket, Key=self.key)
        except Exception as exc:
            raise request_failed(str(self), "delete", exc) from exc


def stat_of(location: S3Path) -> dict[str, Any] | None:
    """An object's size and ETag (None if it does not exist): what a record remembers."""
    found = location.head()
    if found is None:
        return None
    return {"size": int(found["ContentLength"]), "etag": str(found["ETag"])}


def local_tmp_dir(output: S3Path) -> Path:
    """Where the temporary files of an S3 output are written (one directory per output, on
    this machine: the lock holder clears it at start and end)."""
    name = xxhash.xxh3_128_hexdigest(str(output).encode())[:16]
    return Path(tempfile.gettempdir()) / f"batchtok-{name}"


def upload(
    tmp: str | os.PathLike[str], dest: S3Path, beat: Callable[[], None] | None = None
) -> None:
    """Upload the finished local file ``tmp`` as ``dest``, then delete ``tmp``. The object
    appears whole or not at all: one PUT, or a multipart upload completed last and aborted on
    any exception (a killed process leaves it incomplete, invisible, for the next run to
    abort). ``beat()`` is called after each part: a worker uploading a large file is moving
    on."""
    size = os.path.getsize(tmp)
    s3 = client(dest.options)
    try:
        if size <= MULTIPART_BYTES:
            with open(tmp, "rb") as f:
                s3.put_object(Bucket=dest.bucket, Key=dest.key, Body=f)
        else:
            _multipart(s3, tmp, dest, size, beat)
    except ObjectStoreError:
        raise
    except Exception as exc:  # botocore's errors, a connection lost: name the object
        raise request_failed(str(dest), "upload", exc) from exc
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp)


def _multipart(
    s3: Any,
    tmp: str | os.PathLike[str],
    dest: S3Path,
    size: int,
    beat: Callable[[], None] | None,
) -> None:
    upload_id = s3.create_multipart_upload(Bucket=dest.bucket, Key=dest.key)["UploadId"]
    try:
        parts = []
        with open(tmp, "rb") as f:
            number = 1
            while chunk := f.read(PART_BYTES):
                etag = upload_part(s3, dest, upload_id, number, chunk)
                parts.append({"ETag": etag, "PartNumber": number})
                if beat is not None:
                    beat()
                number += 1
        s3.complete_multipart_upload(
            Bucket=dest.bucket,
            Key=dest.key,
            UploadId=upload_id,
            MultipartUpload={"Parts": parts},
        )
    except BaseException:
        with contextlib.suppress(Exception):
            s3.abort_multipart_upload(Bucket=dest.bucket, Key=dest.key, UploadId=upload_id)
        raise


def upload_part(s3: Any, dest: S3Path, upload_id: str, number: int, chunk: bytes) -> str:
    """Upload one part of a multipart upload; its ETag."""
    found = s3.upload_part(
        Bucket=dest.bucket, Key=dest.key, UploadId=upload_id, PartNumber=number, Body=chunk
    )
    return found["ETag"]


def abort_uploads(prefix: S3Path) -> int:
    """Abort every incomplete multipart upload under the prefix ``prefix`` (left by a killed
    worker or run); how many."""
    return _abort(prefix, prefix.key + "/" if prefix.key else "", None)


def _abort(where: S3Path, prefix: str, keys: set[str] | None) -> int:
    bucket = where.bucket
    s3 = client(where.options)
    aborted = 0
    try:
        for page in s3.get_paginator("list_multipart_uploads").paginate(
            Bucket=bucket, Prefix=prefix
        ):
            for found in page.get("Uploads", []):
                if keys is None or found["Key"] in keys:
                    s3.abort_multipart_upload(
                        Bucket=bucket, Key=found["Key"], UploadId=found["UploadId"]
                    )
                    aborted += 1
    except Exception as exc:
        raise request_failed(
            f"s3://{bucket}/{prefix}", "abort the incomplete uploads of", exc
        ) from exc
    return aborted


def set_publisher(
    options: StorageOptions, beat: Callable[[], None] | None = None
) -> Callable[[Sequence[tuple[str, str]]], None]:
    """How a trainer format's file set goes to S3 (with ``options``), in the order of
    :func:`batchtok.formats.files.publish`: an older primary object deleted first, the others
    uploaded one by one, the primary one last."""

    def publish(staged: Sequence[tuple[str, str]]) -> None:
        S3Path.parse(staged[-1][1], options).unlink(missing_ok=True)
        for tmp, dest in staged:
            upload(tmp, S3Path.parse(dest, options), beat)

    return publish


def abort_uploads_of(target: S3Path) -> int:
    """Abort the incomplete uploads of the file ``target`` (for a trainer format, of every
    file of its set) that a killed worker left; how many."""
    stem = target.key.removesuffix(".idx")
    keys = {target.key, stem + ".bin", stem + ".batchtok.json"}
    keys |= {target.key + suffix for suffix in (".index", ".metadata", ".batchtok.json")}
    return _abort(target, stem, keys)
