"""S3 without credentials: every key that names an s3:// location (output.dir, input.paths,
tokenizer.path) is refused with exit 2, naming the key and saying that no credentials were
found, never with a traceback. The server (moto's, on 127.0.0.1) refuses unsigned requests, as
a private bucket does; the AWS files are empty and instance metadata is off, so the credential
chain ends at once, offline."""

from __future__ import annotations

import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from batchtok.runner.io import arrow_fs as storage
from batchtok.runner.io import s3 as store
from tests.support.runner import GPT2, basic_job, invoke, texts, write_parquet
from tests.support.s3 import bucket, moto_server, upload_tree

NO_CREDENTIALS = "no AWS credentials were found"


@pytest.fixture(scope="module")
def endpoint(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A server holding s3://creds/in/a.parquet and s3://creds/tok/tokenizer.json that, once
    filled, checks every request's signature (moto's auth mode)."""
    local = tmp_path_factory.mktemp("corpus")
    write_parquet(local / "a.parquet", texts(20))
    with moto_server() as url:
        fs = bucket(url, "creds")
        upload_tree(fs, local, "creds/in")
        pafs.copy_files(str(GPT2), "creds/tok/tokenizer.json", destination_filesystem=fs)
        _set_auth(url, b"0")  # requests left before authentication starts
        try:
            yield url
        finally:
            # moto keeps this setting per process, for every server: the other S3 tests of
            # this pytest worker must find it off again
            _set_auth(url, b"inf")


def _set_auth(url: str, requests_before_auth: bytes) -> None:
    request = urllib.request.Request(
        f"{url}/moto-api/reset-auth",
        data=requests_before_auth,
        method="POST",
        headers={"Content-Type": "text/plain"},
    )
    urllib.request.urlopen(request).read()


@pytest.fixture
def no_credentials(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    empty = tmp_path / "empty-aws-file"
    empty.write_text("")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(empty))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(empty))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    # clients and file systems made with the credentials of other tests are not reused
    monkeypatch.setattr(store, "_CLIENTS", {})
    monkeypatch.setattr(storage, "_FILESYSTEMS", {})


def _refused(job: Path, command: str, key: str, uri: str) -> None:
    code, output = invoke(command, job)
    assert code == 2, output
    assert "Traceback" not in output and "NoCredentialsError" not in output, output
    assert f"{key} (set in {job}): cannot" in output and uri in output, output
    assert NO_CREDENTIALS in output, output


@pytest.mark.usefixtures("no_credentials")
def test_an_s3_output_without_credentials_is_refused_naming_output_dir(
    tmp_path: Path, endpoint: str
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(20))
    job = basic_job(tmp_path, output__dir="s3://creds/out", storage__endpoint=endpoint)
    for command in ("run", "plan"):
        _refused(job, command, "output.dir", "cannot read s3://creds/out")
    code, output = invoke("status", job)
    assert code == 1 and "Traceback" not in output and NO_CREDENTIALS in output, output


@pytest.mark.usefixtures("no_credentials")
def test_s3_inputs_without_credentials_are_refused_naming_input_paths(
    tmp_path: Path, endpoint: str
) -> None:
    for paths in (["s3://creds/in/"], ["s3://creds/in/a.parquet"]):
        job = basic_job(
            tmp_path, input__paths=paths, storage__endpoint=endpoint, storage__region="us-east-1"
        )
        _refused(job, "run", "input.paths", paths[0])
    assert not (tmp_path / "out").exists()


@pytest.mark.usefixtures("no_credentials")
def test_an_s3_tokenizer_without_credentials_is_refused_naming_tokenizer_path(
    tmp_path: Path, endpoint: str
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(20))
    uri = "s3://creds/tok/tokenizer.json"
    job = basic_job(
        tmp_path, tokenizer__path=uri, storage__endpoint=endpoint, storage__region="us-east-1"
    )
    _refused(job, "run", "tokenizer.path", f"cannot read {uri}")
