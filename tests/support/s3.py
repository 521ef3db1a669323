"""An S3-compatible server on 127.0.0.1 for the object-storage tests (moto's server mode), and
helpers to fill and read its buckets."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs

CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}


@contextlib.contextmanager
def moto_server() -> Iterator[str]:
    """A ThreadedMotoServer on 127.0.0.1 (any free port) with test credentials in the
    environment; yields its endpoint URL."""
    from moto.server import ThreadedMotoServer

    saved = {k: os.environ.get(k) for k in CREDENTIALS}
    os.environ.update(CREDENTIALS)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    try:
        yield f"http://{host}:{port}"
    finally:
        server.stop()
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def bucket(endpoint: str, name: str) -> pafs.S3FileSystem:
    """A new bucket ``name`` on the server; the file system to fill it through."""
    fs = pafs.S3FileSystem(
        endpoint_override=endpoint, region="us-east-1", allow_bucket_creation=True
    )
    fs.create_dir(name)
    return fs


def upload_tree(fs: pafs.S3FileSystem, local: Path, prefix: str) -> None:
    """Every file under ``local`` to ``prefix`` ("bucket/corpus"), at its relative path."""
    for path in sorted(local.rglob("*")):
        if path.is_file():
            key = f"{prefix}/{path.relative_to(local).as_posix()}"
            pafs.copy_files(str(path), key, destination_filesystem=fs)


def s3_client(endpoint: str):
    import boto3

    return boto3.session.Session().client("s3", endpoint_url=endpoint, region_name="us-east-1")


def objects(endpoint: str, bucket_name: str, prefix: str = "") -> dict[str, bytes]:
    """key (relative to ``prefix``) -> bytes of every object under ``prefix``."""
    s3 = s3_client(endpoint)
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket_name, Prefix=prefix):
        for entry in page.get("Contents", []):
            body = s3.get_object(Bucket=bucket_name, Key=entry["Key"])["Body"].read()
            out[entry["Key"][len(prefix) :]] = body
    return out


def incomplete_uploads(endpoint: str, bucket_name: str) -> list[str]:
    found = s3_client(endpoint).list_multipart_uploads(Bucket=bucket_name)
    return [u["Key"] for u in found.get("Uploads", [])]
