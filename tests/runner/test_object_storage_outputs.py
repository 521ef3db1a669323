"""Outputs in object storage (``output.dir = "s3://..."``, moto's S3 server on 127.0.0.1):
the same files a local output gets, byte for byte; a re-run redoes nothing; nothing partial
is ever visible (an upload that fails or is killed leaves no object and no incomplete
multipart upload); the lock is an object two runs cannot both create."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from batchtok.runner import store
from tests.support.runner import basic_job, invoke, texts, write_parquet
from tests.support.s3 import bucket, incomplete_uploads, moto_server, objects, upload_tree


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


def _local_files(out: Path) -> dict[str, bytes]:
    """What a reader sees of a local output (state and summary left out)."""
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and not p.relative_to(out).as_posix().startswith((".batchtok", "_"))
    }


def _remote_files(endpoint: str, name: str, prefix: str) -> dict[str, bytes]:
    return {
        k: v
        for k, v in objects(endpoint, name, prefix).items()
        if not k.startswith((".batchtok", "_"))
    }


def _corpus(root: Path) -> Path:
    write_parquet(root / "a.parquet", texts(120, seed=1), row_group_size=30)
    write_parquet(root / "sub" / "b.parquet", texts(40, seed=2), row_group_size=40)
    return root


def test_an_s3_output_holds_the_files_a_local_output_holds_and_a_rerun_redoes_nothing(
    tmp_path: Path, endpoint: str
) -> None:
    local_in = _corpus(tmp_path / "in")
    fs = bucket(endpoint, "out-a")
    upload_tree(fs, local_in, "out-a/corpus")
    for d in ("disk", "s3"):
        (tmp_path / d).mkdir()
    # several shards per file: parts under .batchtok/parts/, joined once complete
    on_disk = basic_job(tmp_path / "disk", input__paths=[str(local_in)], run__shard_mb=0.002)
    code, output = invoke("run", on_disk)
    assert code == 0, output
    remote = basic_job(
        tmp_path / "s3",
        input__paths=["s3://out-a/corpus/"],
        output__dir="s3://out-a/tokens/",
        storage__endpoint=endpoint,
        run__shard_mb=0.002,
    )
    code, output = invoke("run", remote)
    assert code == 0, output
    want = _local_files(tmp_path / "disk" / "out")
    assert set(want) == {"a.parquet", "sub/b.parquet"}
    assert _remote_files(endpoint, "out-a", "tokens/") == want
    assert not incomplete_uploads(endpoint, "out-a")
    remote_summary = json.loads(objects(endpoint, "out-a", "tokens/")["_batchtok_summary.json"])
    assert remote_summary["status"] == "success" and remote_summary["shards"]["done"] > 2
    assert not list(Path.cwd().glob("s3:*")), "an s3:// path was used as a local one"
    code, output = invoke("run", remote)
    assert code == 0 and "nothing to do" in output, output


def _put_log(monkeypatch: pytest.MonkeyPatch, log: Path) -> Callable[[], list[str]]:
    """Log the key of every PUT (single or multipart) this process's S3 clients send from
    now on, and those of the workers it forks; returns a reader of the log, in order."""
    make = store.client

    def record(params: dict, **_: object) -> None:
        with open(log, "a", encoding="utf-8") as f:  # one short append: atomic
            f.write(params["Key"] + "\n")

    def counting() -> object:
        s3 = make()
        if not getattr(s3, "_logged", False):
            for call in ("PutObject", "CompleteMultipartUpload"):
                s3.meta.events.register(f"provide-client-params.s3.{call}", record)
            s3._logged = True
        return s3

    monkeypatch.setattr(store, "_CLIENTS", {})  # new clients, logged here only
    monkeypatch.setattr(store, "client", counting)
    return lambda: log.read_text(encoding="utf-8").split() if log.exists() else []


def test_a_rerun_of_an_s3_output_puts_no_output_part_or_record(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_in = _corpus(tmp_path / "in")
    bucket(endpoint, "out-b")
    job = basic_job(
        tmp_path,
        input__paths=[str(local_in)],
        output__dir="s3://out-b/tokens",
        storage__endpoint=endpoint,
        run__shard_mb=0.002,
    )
    code, output = invoke("run", job)
    assert code == 0, output
    before = objects(endpoint, "out-b", "tokens/")
    assert not any(k.startswith(".batchtok/parts/") for k in before)  # joined, then removed
    assert ".batchtok/lock" not in before  # released
    puts = _put_log(monkeypatch, tmp_path / "puts.log")
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output
    # the lock, and (as on disk) the summary and its chart: nothing else
    assert set(puts()) <= {
        "tokens/.batchtok/lock",
        "tokens/_batchtok_summary.json",
        "tokens/_batchtok_token_stats.png",
    }, puts()
    after = objects(endpoint, "out-b", "tokens/")
    assert {k: v for k, v in after.items() if not k.startswith("_")} == {
        k: v for k, v in before.items() if not k.startswith("_")
    }
    # --verify reads every output back from S3 (page checksums) and still redoes nothing
    code, output = invoke("run", job, "--verify")
    assert code == 0, output
    assert json.loads(objects(endpoint, "out-b", "tokens/")["_batchtok_summary.json"])[
        "shards"
    ]["done"] == 0


def test_a_megatron_output_on_s3_matches_the_local_one_and_the_primary_file_comes_last(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_in = _corpus(tmp_path / "in")
    bucket(endpoint, "out-c")
    (tmp_path / "disk").mkdir()
    on_disk = basic_job(
        tmp_path / "disk", input__paths=[str(local_in)], output__format="megatron", run__shard_mb=0.002
    )
    code, output = invoke("run", on_disk)
    assert code == 0, output
    remote = basic_job(
        tmp_path,
        input__paths=[str(local_in)],
        output__dir="s3://out-c/mega/",
        output__format="megatron",
        storage__endpoint=endpoint,
        run__shard_mb=0.002,
    )
    puts = _put_log(monkeypatch, tmp_path / "puts.log")  # the workers are forked: they log too
    code, output = invoke("run", remote)
    assert code == 0, output
    order = puts()
    for stem in ("a", "sub/b"):
        at = {suffix: order.index(f"mega/{stem}{suffix}") for suffix in (".bin", ".batchtok.json", ".idx")}
        record = order.index(f"mega/.batchtok/records/{stem}.parquet.json", at[".idx"])
        assert at[".bin"] < at[".batchtok.json"] < at[".idx"] < record, order
    want = _local_files(tmp_path / "disk" / "out")
    assert set(want) == {
        f"{stem}{suffix}" for stem in ("a", "sub/b") for suffix in (".bin", ".idx", ".batchtok.json")
    }
    assert _remote_files(endpoint, "out-c", "mega/") == want
    code, output = invoke("run", remote, "--verify")
    assert code == 0, output
    code, output = invoke("run", remote)
    assert code == 0 and "nothing to do" in output, output
