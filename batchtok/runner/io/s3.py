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
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from .arrow_fs import StorageOptions, filesystem, ns_of
from .objects import ObjectMeta, ObjectPath, ObjectStoreError, installed, remove_local

BOTO3_MISSING = 'S3 outputs need boto3: pip install "batchtok[s3]"'
# Above this size a file is uploaded in parts (S3 takes at most 5 GB in one PUT).
MULTIPART_BYTES = 256 * 2**20
PART_BYTES = 64 * 2**20  # S3 wants at least 5 MiB a part but the last

_CLIENTS: dict[tuple[int, StorageOptions], Any] = {}  # one per process and options


def boto3_available() -> bool:
    return installed("boto3")


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


class S3Path(ObjectPath):
    """An object (or a prefix) ``s3://bucket/key``: its requests through boto3, its reads
    through ``pyarrow.fs`` like the inputs'."""

    scheme = "s3"
    extra = "s3"
    arrow_reads = True
    client_module = "boto3"
    missing = BOTO3_MISSING

    @classmethod
    def credentials_problem(cls, options: StorageOptions) -> str | None:
        return credentials_problem(options)

    def head(self) -> dict[str, Any] | None:
        """The object's HEAD response (None if there is none)."""
        try:
            return client(self.options).head_object(Bucket=self.bucket, Key=self.key)
        except Exception as exc:
            if error_code(exc) in ("404", "NoSuchKey", "NotFound"):
                return None
            raise request_failed(str(self), "read the size of", exc) from exc

    def meta(self) -> ObjectMeta | None:
        found = self.head()
        if found is None:
            return None
        size, etag = int(found["ContentLength"]), str(found["ETag"])
        return ObjectMeta(size, etag, found.get("LastModified"))

    def read_range(self, start: int, end: int) -> bytes:
        with self.open_input() as f:
            f.seek(start)
            return f.read(end - start)

    def read_bytes(self) -> bytes:
        fs, path = filesystem(str(self), self.options)
        with fs.open_input_stream(path) as f:
            return f.read()

    def open_input(self) -> Any:
        """A seekable Arrow file over the object (for pyarrow.parquet)."""
        fs, path = filesystem(str(self), self.options)
        return fs.open_input_file(path)

    def keys(self, limit: int = 0) -> Iterator[tuple[str, int, int]]:
        prefix = self.key + "/" if self.key else ""
        pages = client(self.options).get_paginator("list_objects_v2")
        try:
            for page in pages.paginate(Bucket=self.bucket, Prefix=prefix):
                for entry in page.get("Contents", []):
                    yield entry["Key"], int(entry.get("Size", 0)), ns_of(entry.get("LastModified"))
                    limit -= 1
                    if limit == 0:
                        return
        except Exception as exc:
            if error_code(exc) or _from_botocore(exc):  # no credentials, no connection
                raise request_failed(str(self), "list", exc) from exc
            raise

    def write_bytes(self, data: bytes) -> None:
        try:
            client(self.options).put_object(Bucket=self.bucket, Key=self.key, Body=data)
        except Exception as exc:
            raise request_failed(str(self), "write", exc) from exc

    def put_if(self, data: bytes, version: str | None) -> str | None:
        condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}
        try:
            found = client(self.options).put_object(
                Bucket=self.bucket, Key=self.key, Body=data, **condition
            )
        except Exception as exc:
            if error_code(exc) in CONFLICT:
                return None
            raise request_failed(str(self), "write", exc) from exc
        return str(found["ETag"])

    def read_versioned(self) -> tuple[bytes, str, float] | None:
        from email.utils import parsedate_to_datetime

        try:
            found = client(self.options).get_object(Bucket=self.bucket, Key=self.key)
            data = found["Body"].read()
        except Exception as exc:
            if error_code(exc) in ("NoSuchKey", "404"):
                return None
            raise request_failed(str(self), "read", exc) from exc
        modified = found["LastModified"]
        try:  # the age by the server's clock: no skew between hosts
            now = parsedate_to_datetime(found["ResponseMetadata"]["HTTPHeaders"]["date"])
            age = (now - modified).total_seconds()
        except (KeyError, TypeError, ValueError):
            age = time.time() - modified.timestamp()
        return data, str(found["ETag"]), age

    def delete_if(self, version: str) -> None:
        try:
            client(self.options).delete_object(Bucket=self.bucket, Key=self.key, IfMatch=version)
        except Exception as exc:
            if error_code(exc) in CONFLICT:  # not at that version any more: leave it
                return
            # a server without conditional deletes: check, then delete
            found = self.read_versioned()
            if found is not None and found[1] == version:
                self.unlink()

    def unlink(self, missing_ok: bool = False) -> None:
        # S3 answers a delete of a missing key with success: missing_ok holds either way.
        try:
            client(self.options).delete_object(Bucket=self.bucket, Key=self.key)
        except Exception as exc:
            raise request_failed(str(self), "delete", exc) from exc

    def upload(self, tmp: str | os.PathLike[str], beat: Callable[[], None] | None = None) -> None:
        upload(tmp, self, beat)

    def abort_incomplete(self, keys: set[str] | None = None) -> int:
        if keys is None:
            return _abort(self, self.key + "/" if self.key else "", None)
        return _abort(self, self.key.removesuffix(".idx"), keys)


#: the error codes of a conditional request whose condition did not hold
CONFLICT = ("PreconditionFailed", "412", "ConditionalRequestConflict", "409")


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
    remove_local(tmp)


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
