"""Google Cloud Storage and Azure Blob Storage servers on 127.0.0.1 for the object-storage
tests, and helpers to fill and read them.

* GCS: ``gcp-storage-emulator`` (PyPI, in the ``test`` extra), in this process, with the
  generation preconditions it lacks added (:mod:`tests.support.gcs_emulator`).
* Azure: Azurite (npm, run by the machine's Node.js), installed once into the fixture cache
  (``$BATCHTOK_CACHE/azurite-VERSION``) by :func:`azurite_command` (``tests.support.fetch_all``
  calls it before the tests), started as a process per test module, its data in memory.

Each server's context sets the standard variable its cloud's clients read
(``STORAGE_EMULATOR_HOST``, ``AZURE_STORAGE_CONNECTION_STRING``) while it runs, and nothing else:
the tests that use it show that the standard environment alone reaches every request.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from tests.support.fixtures import cache_root

AZURITE_VERSION = "3.35.0"
# Azurite's well-known development account (documented by Microsoft; not a secret)
AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def environment(**values: str) -> Iterator[None]:
    saved = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _wait_for(url: str, seconds: float = 30.0) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            urllib.request.urlopen(url, timeout=2).close()
            return
        except urllib.error.HTTPError:
            return  # it answers
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


# -- Google Cloud Storage --------------------------------------------------------------------


@contextlib.contextmanager
def gcs_server() -> Iterator[str]:
    """The GCS emulator on a free port, ``STORAGE_EMULATOR_HOST`` naming it; yields its URL."""
    from gcp_storage_emulator.server import create_server

    from tests.support.gcs_emulator import with_preconditions

    with_preconditions()
    port = free_port()
    server = create_server("127.0.0.1", port, in_memory=True)
    server.start()
    url = f"http://127.0.0.1:{port}"
    _wait_for(url + "/")
    try:
        with environment(STORAGE_EMULATOR_HOST=url):
            yield url
    finally:
        server.stop()


def gcs_client():
    from google.cloud import storage

    return storage.Client(project="test")


def gcs_bucket(name: str) -> None:
    gcs_client().create_bucket(name)


def gcs_upload_tree(local: Path, bucket: str, prefix: str) -> None:
    b = gcs_client().bucket(bucket)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            b.blob(f"{prefix}/{path.relative_to(local).as_posix()}").upload_from_filename(path)


def gcs_objects(bucket: str, prefix: str = "") -> dict[str, bytes]:
    client = gcs_client()
    return {
        blob.name[len(prefix) :]: blob.download_as_bytes(raw_download=True)
        for blob in client.list_blobs(bucket, prefix=prefix or None)
    }


# -- Azure Blob Storage ----------------------------------------------------------------------


def azurite_command() -> list[str]:
    """The command that starts Azurite's blob service, installed with npm into the fixture
    cache the first time."""
    home = cache_root() / f"azurite-{AZURITE_VERSION}"
    binary = home / "node_modules" / ".bin" / "azurite-blob"
    if not binary.exists():
        npm = shutil.which("npm")
        if npm is None:
            raise RuntimeError("Azurite needs Node.js and npm (Debian: apt install nodejs npm)")
        home.mkdir(parents=True, exist_ok=True)
        subprocess.run(
            [
                npm,
                "install",
                "--prefix",
                str(home),
                "--no-audit",
                "--no-fund",
                "--silent",
                f"azurite@{AZURITE_VERSION}",
            ],
            check=True,
        )
    return [str(binary)]


def azurite_connection_string(port: int) -> str:
    return (
        f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};AccountKey={AZURITE_KEY};"
        f"BlobEndpoint=http://127.0.0.1:{port}/{AZURITE_ACCOUNT};"
    )


@contextlib.contextmanager
def azurite_server(workdir: Path) -> Iterator[str]:
    """Azurite's blob service on a free port, its data in memory,
    ``AZURE_STORAGE_CONNECTION_STRING`` naming it; yields the connection string."""
    port = free_port()
    workdir.mkdir(parents=True, exist_ok=True)
    command = azurite_command() + [
        "--blobHost",
        "127.0.0.1",
        "--blobPort",
        str(port),
        "--inMemoryPersistence",
        "--disableTelemetry",
        "--skipApiVersionCheck",
        "--silent",
    ]
    log = open(workdir / "azurite.log", "wb")
    proc = subprocess.Popen(
        command, cwd=workdir, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        _wait_for(f"http://127.0.0.1:{port}/{AZURITE_ACCOUNT}?comp=list")
        connection = azurite_connection_string(port)
        with environment(AZURE_STORAGE_CONNECTION_STRING=connection):
            yield connection
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def az_service():
    from azure.storage.blob import BlobServiceClient

    return BlobServiceClient.from_connection_string(os.environ["AZURE_STORAGE_CONNECTION_STRING"])


def az_container(name: str) -> None:
    az_service().create_container(name)


def az_upload_tree(local: Path, container: str, prefix: str) -> None:
    client = az_service().get_container_client(container)
    for path in sorted(local.rglob("*")):
        if path.is_file():
            with open(path, "rb") as f:
                client.upload_blob(f"{prefix}/{path.relative_to(local).as_posix()}", f)


def az_objects(container: str, prefix: str = "") -> dict[str, bytes]:
    client = az_service().get_container_client(container)
    return {
        blob.name[len(prefix) :]: client.download_blob(blob.name).readall()
        for blob in client.list_blobs(name_starts_with=prefix or None)
    }
