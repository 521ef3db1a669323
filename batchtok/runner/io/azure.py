"""Azure Blob Storage: inputs and outputs at ``az://container/prefix/``, the store
:data:`batchtok.runner.io.stores.STORES` holds under ``az``.

Requests go through Microsoft's own client (``pip install "batchtok[azure]"``:
``azure-storage-blob``, and ``azure-identity`` for the default credential chain). The storage
account and its credentials come from the standard environment: ``AZURE_STORAGE_CONNECTION_STRING``
(Azurite's included), or ``AZURE_STORAGE_ACCOUNT_NAME`` with ``AZURE_STORAGE_ACCOUNT_KEY`` or
``AZURE_STORAGE_SAS_TOKEN``, or the account name alone with the default credential chain
(managed identity, workload identity, the Azure CLI's login...). The job's ``[storage]`` table
may set the endpoint (the account's URL) or anonymous access (a public container).

An output keeps the rules of every store (:mod:`.objects`): a file is uploaded whole from a
local temporary file, in one request or as blocks that become the blob only when their list
is committed last (a killed upload's blocks are never visible and Azure drops them after a
week: nothing to abort); the lock is created with ``If-None-Match: *`` and rewritten or
deleted with ``If-Match`` on the ETag it wrote.
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

MISSING = 'az:// locations need azure-storage-blob: pip install "batchtok[azure]"'
NO_ACCOUNT = (
    "no Azure storage account was named: set AZURE_STORAGE_CONNECTION_STRING, or "
    "AZURE_STORAGE_ACCOUNT_NAME (with AZURE_STORAGE_ACCOUNT_KEY, AZURE_STORAGE_SAS_TOKEN, or a "
    "credential of the default chain), or storage.endpoint to the account's URL"
)
NO_CREDENTIALS = (
    "no Azure credentials were found: set AZURE_STORAGE_CONNECTION_STRING, or "
    "AZURE_STORAGE_ACCOUNT_KEY or AZURE_STORAGE_SAS_TOKEN, or install azure-identity for the "
    "default credential chain (storage.anonymous = true reads a public container)"
)

# A file larger than this goes up as blocks of BLOCK_BYTES, committed last (Azure's limits:
# 5,000 MiB in one request, 50,000 blocks of up to 4,000 MiB).
SINGLE_PUT_BYTES = 64 * 2**20
BLOCK_BYTES = 16 * 2**20

_SERVICES: dict[tuple[int, StorageOptions, tuple[str, ...]], Any] = {}  # per process and options
_ENVIRONMENT = (
    "AZURE_STORAGE_CONNECTION_STRING",
    "AZURE_STORAGE_ACCOUNT_NAME",
    "AZURE_STORAGE_ACCOUNT_KEY",
    "AZURE_STORAGE_SAS_TOKEN",
)


def connection_fields(text: str) -> dict[str, str]:
    """The fields of a connection string (``Name=value;...``), names lower-cased."""
    fields = {}
    for part in text.split(";"):
        name, sep, value = part.partition("=")
        if sep and name.strip():
            fields[name.strip().lower()] = value.strip()
    return fields


def _credential(environ: dict[str, str], options: StorageOptions, account: str) -> Any:
    if options.anonymous:
        return None
    fields = connection_fields(environ.get("AZURE_STORAGE_CONNECTION_STRING", ""))
    key = environ.get("AZURE_STORAGE_ACCOUNT_KEY") or fields.get("accountkey")
    if key:
        return {"account_name": account, "account_key": key}
    sas = environ.get("AZURE_STORAGE_SAS_TOKEN") or fields.get("sharedaccesssignature")
    if sas:
        return sas
    try:
        from azure.identity import DefaultAzureCredential
    except ImportError as exc:
        raise ObjectStoreError(NO_CREDENTIALS) from exc
    return DefaultAzureCredential()


def service(options: StorageOptions) -> Any:
    """This process's ``BlobServiceClient`` for ``options`` (one per process and environment:
    a client is not fork-safe)."""
    environ = {name: os.environ.get(name, "") for name in _ENVIRONMENT}
    cache_key = (os.getpid(), options, tuple(environ.values()))
    if cache_key in _SERVICES:
        return _SERVICES[cache_key]
    try:
        from azure.storage.blob import BlobServiceClient
    except ImportError as exc:
        raise ObjectStoreError(MISSING) from exc
    connection = environ["AZURE_STORAGE_CONNECTION_STRING"]
    settings: dict[str, Any] = {
        "retry_total": 5,
        "max_single_put_size": SINGLE_PUT_BYTES,
        "max_block_size": BLOCK_BYTES,
    }
    if connection and not options.endpoint and not options.anonymous:
        try:
            found = BlobServiceClient.from_connection_string(connection, **settings)
        except ValueError as exc:
            raise ObjectStoreError(f"AZURE_STORAGE_CONNECTION_STRING: {exc}") from exc
    else:
        fields = connection_fields(connection)
        account = environ["AZURE_STORAGE_ACCOUNT_NAME"] or fields.get("accountname", "")
        url = options.endpoint or fields.get("blobendpoint", "")
        if not url and account:
            url = f"https://{account}.blob.core.windows.net"
        if not url:
            raise ObjectStoreError(NO_ACCOUNT)
        account = account or url.rstrip("/").rsplit("/", 1)[-1]
        credential = _credential(environ, options, account)
        found = BlobServiceClient(url, credential=credential, **settings)
    _SERVICES[cache_key] = found
    return found


def _errors() -> Any:
    from azure.core import exceptions

    return exceptions


def _failed(path: AzurePath, what: str, exc: Exception) -> ObjectStoreError:
    message = getattr(exc, "message", None) or str(exc)
    return ObjectStoreError(f"cannot {what} {path}: {message.splitlines()[0] if message else exc}")


class AzurePath(ObjectPath):
    """A blob (or a prefix) ``az://container/key``."""

    scheme = "az"
    extra = "azure"
    client_module = "azure.storage.blob"
    missing = MISSING

    @classmethod
    def credentials_problem(cls, options: StorageOptions) -> str | None:
        if options.anonymous or not installed(cls.client_module):
            return None
        try:
            service(options)
        except ObjectStoreError as exc:
            return str(exc)
        return None

    def _blob(self) -> Any:
        return service(self.options).get_blob_client(self.bucket, self.key)

    def meta(self) -> ObjectMeta | None:
        try:
            found = self._blob().get_blob_properties()
        except ObjectStoreError:
            raise
        except Exception as exc:
            if isinstance(exc, _errors().ResourceNotFoundError):
                return None
            raise _failed(self, "read the size of", exc) from exc
        return ObjectMeta(int(found.size), str(found.etag), found.last_modified)

    def read_range(self, start: int, end: int) -> bytes:
        try:
            return self._blob().download_blob(offset=start, length=end - start).readall()
        except Exception as exc:
            raise _failed(self, "read", exc) from exc

    def read_bytes(self) -> bytes:
        try:
            return self._blob().download_blob().readall()
        except ObjectStoreError:
            raise
        except Exception as exc:
            if isinstance(exc, _errors().ResourceNotFoundError):
                raise FileNotFoundError(f"{self}: no such object") from exc
            raise _failed(self, "read", exc) from exc

    def keys(self, limit: int = 0) -> Iterator[tuple[str, int, int]]:
        prefix = self.key + "/" if self.key else ""
        try:
            container = service(self.options).get_container_client(self.bucket)
            for blob in container.list_blobs(name_starts_with=prefix or None):
                yield blob.name, int(blob.size or 0), ns_of(blob.last_modified)
                limit -= 1
                if limit == 0:
                    return
        except ObjectStoreError:
            raise
        except Exception as exc:
            raise _failed(self, "list", exc) from exc

    def write_bytes(self, data: bytes) -> None:
        try:
            self._blob().upload_blob(data, overwrite=True)
        except ObjectStoreError:
            raise
        except Exception as exc:
            raise _failed(self, "write", exc) from exc

    def put_if(self, data: bytes, version: str | None) -> str | None:
        from azure.core import MatchConditions

        errors = _errors()
        condition: dict[str, Any] = {"overwrite": False}  # If-None-Match: *
        if version is not None:
            condition = {
                "overwrite": True,
                "etag": version,
                "match_condition": MatchConditions.IfNotModified,
            }
        try:
            found = self._blob().upload_blob(data, **condition)
        except (errors.ResourceExistsError, errors.ResourceModifiedError):
            return None
        except ObjectStoreError:
            raise
        except Exception as exc:
            if getattr(exc, "status_code", 0) in (409, 412):
                return None
            raise _failed(self, "write", exc) from exc
        return str(found["etag"])

    def read_versioned(self) -> tuple[bytes, str, float] | None:
        try:
            download = self._blob().download_blob()
            data = download.readall()
        except ObjectStoreError:
            raise
        except Exception as exc:
            if isinstance(exc, _errors().ResourceNotFoundError):
                return None
            raise _failed(self, "read", exc) from exc
        properties = download.properties
        modified = properties.last_modified
        age = time.time() - modified.timestamp() if modified else 0.0
        return data, str(properties.etag), age

    def delete_if(self, version: str) -> None:
        from azure.core import MatchConditions

        errors = _errors()
        try:
            self._blob().delete_blob(etag=version, match_condition=MatchConditions.IfNotModified)
        except (errors.ResourceNotFoundError, errors.ResourceModifiedError):
            return  # gone, or not at that version: leave it
        except Exception as exc:
            if getattr(exc, "status_code", 0) == 412:
                return
            raise _failed(self, "delete", exc) from exc

    def unlink(self, missing_ok: bool = False) -> None:
        try:
            self._blob().delete_blob()
        except ObjectStoreError:
            raise
        except Exception as exc:
            if isinstance(exc, _errors().ResourceNotFoundError):
                if missing_ok:
                    return
                raise FileNotFoundError(f"{self}: no such object") from exc
            raise _failed(self, "delete", exc) from exc

    def upload(self, tmp: str | os.PathLike[str], beat: Callable[[], None] | None = None) -> None:
        blob = self._blob()
        size = os.path.getsize(tmp)

        def send() -> None:
            # one request, or blocks committed last: visible only once complete
            with open(tmp, "rb") as f:
                blob.upload_blob(f, length=size, overwrite=True, max_concurrency=2)

        try:
            upload_beating(send, beat)
        except ObjectStoreError:
            raise
        except Exception as exc:
            raise _failed(self, "upload", exc) from exc
        remove_local(tmp)
