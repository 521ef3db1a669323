"""Google Cloud Storage: inputs and outputs at ``gs://bucket/prefix/``, the store
:data:`batchtok.runner.io.stores.STORES` holds under ``gs``.

Requests go through Google's own client (``pip install "batchtok[gcs]"``:
``google-cloud-storage``), which reads the standard environment as Google documents it:
application default credentials (``GOOGLE_APPLICATION_CREDENTIALS``, ``gcloud auth
application-default login``, the metadata server on Google Cloud) and ``STORAGE_EMULATOR_HOST``
for an emulator. The job's ``[storage]`` table may set the endpoint (``api_endpoint``) or
anonymous access (a public bucket).

An output keeps the rules of every store (:mod:`.objects`): a file is uploaded whole from a
local temporary file, in one request or as a resumable upload that GCS makes visible only when
its last byte has arrived (a killed upload is never visible and expires by itself: nothing to
abort); the lock is created with ``ifGenerationMatch=0`` and rewritten or deleted with
``ifGenerationMatch`` on the generation it wrote. An object's version is its generation.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from typing import Any

from .arrow_fs import StorageOptions, ns_of
from .objects import (
    ObjectMeta,
    ObjectPath,
    ObjectStoreError,
    installed,
    remove_local,
    upload_beating,
)

MISSING = 'gs:// locations need google-cloud-storage: pip install "batchtok[gcs]"'
NO_CREDENTIALS = (
    "no Google Cloud credentials were found: set GOOGLE_APPLICATION_CREDENTIALS to a key "
    "file, or run `gcloud auth application-default login`, or run on Google Cloud with a "
    "service account (STORAGE_EMULATOR_HOST points at an emulator; storage.anonymous = true "
    "reads a public bucket)"
)

# A file larger than the client's one-request limit (8 MB) goes up as a resumable upload in
# chunks of this size (a multiple of 256 KiB); GCS makes it visible when its last chunk is in.
CHUNK_BYTES = 64 * 2**20

_CLIENTS: dict[tuple[int, StorageOptions, str], Any] = {}  # one per process and options


def client(options: StorageOptions) -> Any:
    """This process's client for ``options`` (one per process: a client is not fork-safe)."""
    emulator = os.environ.get("STORAGE_EMULATOR_HOST", "")
    key = (os.getpid(), options, emulator)
    if key not in _CLIENTS:
        try:
            from google.cloud import storage
        except ImportError as exc:
            raise ObjectStoreError(MISSING) from exc
        kwargs: dict[str, Any] = {}
        if options.endpoint:
            kwargs["client_options"] = {"api_endpoint": options.endpoint}
        project = os.environ.get("GOOGLE_CLOUD_PROJECT") or None
        try:
            if options.anonymous:
                from google.auth.credentials import AnonymousCredentials

                kwargs["credentials"] = AnonymousCredentials()
                project = project or "<none>"
            _CLIENTS[key] = storage.Client(project=project, **kwargs)
        except Exception as exc:  # google.auth's DefaultCredentialsError: none found
            if type(exc).__name__ == "DefaultCredentialsError":
                raise ObjectStoreError(NO_CREDENTIALS) from exc
            raise ObjectStoreError(f"cannot reach Google Cloud Storage: {exc}") from exc
    return _CLIENTS[key]


def _failed(path: GCSPath, what: str, exc: Exception) -> ObjectStoreError:
    return ObjectStoreError(f"cannot {what} {path}: {getattr(exc, 'message', None) or exc}")


def _code(exc: BaseException) -> int:
    return int(getattr(exc, "code", 0) or 0)


class GCSPath(ObjectPath):
    """An object (or a prefix) ``gs://bucket/key``."""

    scheme = "gs"
    extra = "gcs"
    client_module = "google.cloud.storage"
    missing = MISSING

    @classmethod
    def credentials_problem(cls, options: StorageOptions) -> str | None:
        if (
            options.anonymous
            or os.environ.get("STORAGE_EMULATOR_HOST")
            or not installed(cls.client_module)
        ):
            return None
        import google.auth

        try:
            google.auth.default()
        except Exception:
            return NO_CREDENTIALS
        return None

    def _blob(self) -> Any:
        return client(self.options).bucket(self.bucket).blob(self.key)

    def meta(self) -> ObjectMeta | None:
        try:
            found = client(self.options).bucket(self.bucket).get_blob(self.key)
        except Exception as exc:
            raise _failed(self, "read the size of", exc) from exc
        if found is None:
            return None
        return ObjectMeta(int(found.size or 0), str(found.generation), found.updated)

    def read_range(self, start: int, end: int) -> bytes:
        try:
            return self._blob().download_as_bytes(start=start, end=end - 1, raw_download=True)
        except Exception as exc:
            raise _failed(self, "read", exc) from exc

    def read_bytes(self) -> bytes:
        try:
            return self._blob().download_as_bytes(raw_download=True)
        except Exception as exc:
            if _code(exc) == 404:
                raise FileNotFoundError(f"{self}: no such object") from exc
            raise _failed(self, "read", exc) from exc

    def keys(self, limit: int = 0) -> Iterator[tuple[str, int, int]]:
        prefix = self.key + "/" if self.key else ""
        try:
            listed = client(self.options).list_blobs(
                self.bucket, prefix=prefix, max_results=limit or None
            )
            for blob in listed:
                yield blob.name, int(blob.size or 0), ns_of(blob.updated)
        except ObjectStoreError:
            raise
        except Exception as exc:
            raise _failed(self, "list", exc) from exc

    def write_bytes(self, data: bytes) -> None:
        try:
            self._blob().upload_from_string(data, content_type="application/octet-stream")
        except Exception as exc:
            raise _failed(self, "write", exc) from exc

    def put_if(self, data: bytes, version: str | None) -> str | None:
        blob = self._blob()
        try:
            blob.upload_from_string(
                data,
                content_type="application/octet-stream",
                if_generation_match=0 if version is None else int(version),
            )
        except Exception as exc:
            if _code(exc) == 412:
                return None
            raise _failed(self, "write", exc) from exc
        return str(blob.generation)

    def read_versioned(self) -> tuple[bytes, str, float] | None:
        for _ in range(5):  # rewritten between the two requests: read it again
            found = self.meta()
            if found is None:
                return None
            try:
                data = self._blob().download_as_bytes(
                    if_generation_match=int(found.etag), raw_download=True
                )
            except Exception as exc:
                if _code(exc) in (404, 412):
                    continue
                raise _failed(self, "read", exc) from exc
            modified = found.modified.timestamp() if found.modified else time.time()
            return data, found.etag, time.time() - modified
        raise ObjectStoreError(f"{self} keeps being replaced while it is read")

    def delete_if(self, version: str) -> None:
        try:
            self._blob().delete(if_generation_match=int(version))
        except Exception as exc:
            if _code(exc) not in (404, 412):  # gone, or not at that version: leave it
                raise _failed(self, "delete", exc) from exc

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            self._blob().delete()
        except Exception as exc:
            if _code(exc) == 404 and missing_ok:
                return
            if _code(exc) == 404:
                raise FileNotFoundError(f"{self}: no such object") from exc
            raise _failed(self, "delete", exc) from exc

    def upload(self, tmp: str | os.PathLike[str], beat: Callable[[], None] | None = None) -> None:
        blob = client(self.options).bucket(self.bucket).blob(self.key, chunk_size=CHUNK_BYTES)

        def send() -> None:
            # one request up to 8 MB, else a resumable upload: visible only once complete
            blob.upload_from_filename(os.fspath(tmp), content_type="application/octet-stream")

        try:
            upload_beating(send, beat)
        except Exception as exc:
            raise _failed(self, "upload", exc) from exc
        remove_local(tmp)
