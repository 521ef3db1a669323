"""Inputs in object storage: an s3:// prefix (an S3-compatible server on 127.0.0.1, moto's)
gives the outputs a local copy of the same files gives; a re-run redoes nothing; an object
overwritten is encoded again; what cannot be read is refused naming the key."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest

from tests.support.runner import basic_job, invoke, summary, texts, write_parquet
from tests.support.s3 import bucket, moto_server, upload_tree


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


def _upload(fs: pafs.S3FileSystem, local: Path, name: str) -> None:
    upload_tree(fs, local, f"{name}/corpus")


def _ids(out: Path) -> dict[str, list]:
    return {
        p.relative_to(out).as_posix(): pq.read_table(p)["input_ids"].to_pylist()
        for p in sorted(out.rglob("*.parquet"))
        if ".batchtok" not in p.parts
    }


def test_an_s3_prefix_gives_the_outputs_of_the_same_files_on_disk(
    tmp_path: Path, endpoint: str
) -> None:
    local = tmp_path / "in"
    write_parquet(local / "a.parquet", texts(120, seed=1), row_group_size=30)
    lines = [json.dumps({"text": t}) for t in texts(80, seed=2)]
    (local / "sub").mkdir()
    (local / "sub" / "b.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    fs = bucket(endpoint, "corpus-a")
    _upload(fs, local, "corpus-a")
    for d in ("disk", "s3"):
        (tmp_path / d).mkdir()
    on_disk = basic_job(tmp_path / "disk", input__paths=[str(local)], run__shard_mb=0.002)
    code, output = invoke("run", on_disk)
    assert code == 0, output
    remote = basic_job(
        tmp_path / "s3",
        input__paths=["s3://corpus-a/corpus/"],
        storage__endpoint=endpoint,
        storage__region="us-east-1",
        run__shard_mb=0.002,
    )
    code, output = invoke("run", remote)
    assert code == 0, output
    want = _ids(tmp_path / "disk" / "out")
    assert set(want) == {"a.parquet", "sub/b.parquet"}
    assert _ids(tmp_path / "s3" / "out") == want
    code, output = invoke("run", remote)
    assert code == 0 and "nothing to do" in output, output
    # an object overwritten with other rows is encoded again, the other file is not
    changed = tmp_path / "changed"
    write_parquet(changed / "a.parquet", texts(50, seed=7), row_group_size=50)
    pafs.copy_files(
        str(changed / "a.parquet"), "corpus-a/corpus/a.parquet", destination_filesystem=fs
    )
    code, output = invoke("run", remote)
    assert code == 0, output
    report = summary(tmp_path / "s3" / "out")
    assert report["rows"]["read"] == 50
    shutil.copy(changed / "a.parquet", local / "a.parquet")
    code, output = invoke("run", on_disk)
    assert code == 0, output
    assert _ids(tmp_path / "s3" / "out") == _ids(tmp_path / "disk" / "out")


def test_what_cannot_be_read_in_object_storage_is_refused_naming_the_key(
    tmp_path: Path, endpoint: str
) -> None:
    bucket(endpoint, "corpus-b")
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    missing = basic_job(
        tmp_path / "a", input__paths=["s3://corpus-b/nothing/"], storage__endpoint=endpoint
    )
    code, output = invoke("run", missing)
    assert code == 2 and "input.paths" in output and "no such object or prefix" in output, output
    # a scheme no store writes is refused naming the key and the schemes that are written
    remote_out = basic_job(tmp_path / "b", output__dir="hdfs://corpus-b/out/")
    code, output = invoke("run", remote_out)
    assert code == 2 and "output.dir" in output and "not hdfs://" in output, output
    assert "s3://, gs://, az://" in output, output


def test_with_only_aws_endpoint_url_set_every_request_goes_to_that_server(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No [storage] table: the standard AWS_ENDPOINT_URL (as boto3 and the AWS CLI read it)
    reaches the inputs (pyarrow), the outputs and the lock (boto3) alike."""
    from tests.support.s3 import s3_client

    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    local = tmp_path / "in"
    write_parquet(local / "a.parquet", texts(60, seed=3), row_group_size=20)
    fs = bucket(endpoint, "corpus-env")
    _upload(fs, local, "corpus-env")
    for d in ("disk", "s3"):
        (tmp_path / d).mkdir()
    code, output = invoke("run", basic_job(tmp_path / "disk", input__paths=[str(local)]))
    assert code == 0, output
    remote = basic_job(
        tmp_path / "s3",
        input__paths=["s3://corpus-env/corpus/"],
        output__dir="s3://corpus-env/tokens",
        run__shard_mb=0.002,
    )
    code, output = invoke("run", remote)
    assert code == 0, output
    written = s3_client(endpoint).get_object(Bucket="corpus-env", Key="tokens/a.parquet")
    remote_out = tmp_path / "remote-a.parquet"
    remote_out.write_bytes(written["Body"].read())
    want = pq.read_table(tmp_path / "disk" / "out" / "a.parquet")["input_ids"].to_pylist()
    assert pq.read_table(remote_out)["input_ids"].to_pylist() == want
    code, output = invoke("run", remote)
    assert code == 0 and "nothing to do" in output, output


def test_a_profiles_endpoint_url_reaches_every_request_too(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No [storage] table and no AWS_ENDPOINT_URL: the endpoint_url of the profile in use
    (AWS_PROFILE in AWS_CONFIG_FILE) reaches the inputs and the outputs alike."""
    config = tmp_path / "aws-config"
    config.write_text(f"[profile batchtok-test]\nendpoint_url = {endpoint}\n", encoding="utf-8")
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_PROFILE", "batchtok-test")
    local = tmp_path / "in"
    write_parquet(local / "a.parquet", texts(40, seed=5), row_group_size=20)
    _upload(bucket(endpoint, "corpus-profile"), local, "corpus-profile")
    job = basic_job(
        tmp_path,
        input__paths=["s3://corpus-profile/corpus/"],
        output__dir="s3://corpus-profile/tokens",
    )
    code, output = invoke("run", job)
    assert code == 0, output
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output
