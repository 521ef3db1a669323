"""Outputs in object storage (``output.dir = "s3://..."``, moto's S3 server on 127.0.0.1):
the same files a local output gets, byte for byte; a re-run redoes nothing; nothing partial
is ever visible (an upload that fails or is killed leaves no object and no incomplete
multipart upload); the lock is an object two runs cannot both create."""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from batchtok.formats import mds
from batchtok.runner.errors import LockHeld
from batchtok.runner.io import lock as lock_module
from batchtok.runner.io import s3
from batchtok.runner.io.arrow_fs import StorageOptions
from batchtok.runner.io.lock import ObjectRunLock, object_lock_run_id
from batchtok.runner.io.s3 import S3Path
from batchtok.runner.outputs import parquet as output_module
from tests.support.runner import GPT2, REPO, basic_job, invoke, texts, write_parquet
from tests.support.s3 import (
    bucket,
    incomplete_uploads,
    moto_server,
    objects,
    s3_client,
    upload_tree,
)


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


def _s3_job(
    tmp_path: Path, local_in: Path, endpoint: str, output_dir: str, **settings: Any
) -> Path:
    """A job over the local inputs ``local_in`` whose output is ``output_dir`` on the server."""
    return basic_job(
        tmp_path,
        input__paths=[str(local_in)],
        output__dir=output_dir,
        storage__endpoint=endpoint,
        **settings,
    )


def test_an_s3_output_holds_the_files_a_local_output_holds_and_a_rerun_redoes_nothing(
    tmp_path: Path, endpoint: str
) -> None:
    local_in = _corpus(tmp_path / "in")
    fs = bucket(endpoint, "out-a")
    upload_tree(fs, local_in, "out-a/corpus")
    upload_tree(fs, GPT2.parent, "out-a/tokenizer")  # read once from S3, hashed as read
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
        tokenizer__path="s3://out-a/tokenizer/tokenizer.json",
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
    make = s3.client

    def record(params: dict, **_: object) -> None:
        with open(log, "a", encoding="utf-8") as f:  # one short append: atomic
            f.write(params["Key"] + "\n")

    def counting(options: StorageOptions) -> object:
        s3 = make(options)
        if not getattr(s3, "_logged", False):
            for call in ("PutObject", "CompleteMultipartUpload"):
                s3.meta.events.register(f"provide-client-params.s3.{call}", record)
            s3._logged = True
        return s3

    monkeypatch.setattr(s3, "_CLIENTS", {})  # new clients, logged here only
    monkeypatch.setattr(s3, "client", counting)
    return lambda: log.read_text(encoding="utf-8").split() if log.exists() else []


def test_a_rerun_of_an_s3_output_puts_no_output_part_or_record(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_in = _corpus(tmp_path / "in")
    bucket(endpoint, "out-b")
    job = _s3_job(tmp_path, local_in, endpoint, "s3://out-b/tokens", run__shard_mb=0.002)
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
        "tokens/_batchtok_token_stats.svg",
    }, puts()
    after = objects(endpoint, "out-b", "tokens/")
    assert {k: v for k, v in after.items() if not k.startswith("_")} == {
        k: v for k, v in before.items() if not k.startswith("_")
    }
    # --verify reads every output back from S3 (page checksums) and still redoes nothing
    code, output = invoke("run", job, "--verify")
    assert code == 0, output
    report = json.loads(objects(endpoint, "out-b", "tokens/")["_batchtok_summary.json"])
    assert report["shards"]["done"] == 0
    # one shard's rows changed: that shard is encoded again, the others are copied out of the
    # S3 output; the result is what a local run over the changed input writes
    rows = texts(120, seed=1)
    rows[-1] = "a changed last row"
    write_parquet(local_in / "a.parquet", rows, row_group_size=30)
    code, output = invoke("run", job)
    assert code == 0, output
    report = json.loads(objects(endpoint, "out-b", "tokens/")["_batchtok_summary.json"])
    assert report["shards"]["done"] == 1 and report["shards"]["cached"] > 1, report["shards"]
    (tmp_path / "disk").mkdir()
    on_disk = basic_job(tmp_path / "disk", input__paths=[str(local_in)], run__shard_mb=0.002)
    code, output = invoke("run", on_disk)
    assert code == 0, output
    assert _remote_files(endpoint, "out-b", "tokens/") == _local_files(tmp_path / "disk" / "out")


def test_a_megatron_output_on_s3_matches_the_local_one_and_the_primary_file_comes_last(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_in = _corpus(tmp_path / "in")
    bucket(endpoint, "out-c")
    (tmp_path / "disk").mkdir()
    on_disk = basic_job(
        tmp_path / "disk",
        input__paths=[str(local_in)],
        output__format="megatron",
        run__shard_mb=0.002,
    )
    code, output = invoke("run", on_disk)
    assert code == 0, output
    remote = _s3_job(
        tmp_path,
        local_in,
        endpoint,
        "s3://out-c/mega/",
        output__format="megatron",
        run__shard_mb=0.002,
    )
    puts = _put_log(monkeypatch, tmp_path / "puts.log")  # the workers are forked: they log too
    code, output = invoke("run", remote)
    assert code == 0, output
    order = puts()
    for stem in ("a", "sub/b"):
        at = {
            suffix: order.index(f"mega/{stem}{suffix}")
            for suffix in (".bin", ".batchtok.json", ".idx")
        }
        record = order.index(f"mega/.batchtok/records/{stem}.parquet.json", at[".idx"])
        assert at[".bin"] < at[".batchtok.json"] < at[".idx"] < record, order
    want = _local_files(tmp_path / "disk" / "out")
    assert set(want) == {
        f"{stem}{suffix}"
        for stem in ("a", "sub/b")
        for suffix in (".bin", ".idx", ".batchtok.json")
    }
    assert _remote_files(endpoint, "out-c", "mega/") == want
    code, output = invoke("run", remote, "--verify")
    assert code == 0, output
    code, output = invoke("run", remote)
    assert code == 0 and "nothing to do" in output, output


def test_an_mds_output_on_s3_matches_the_local_one_and_its_index_comes_last(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each input's MDS directory on S3: the files of the local run byte for byte, the
    sidecar uploaded first and index.json last; --verify reads it back whole; a rewrite with
    fewer shards deletes the older set's extra shard objects."""
    monkeypatch.setattr(mds, "SIZE_LIMIT", 1 << 12)  # 4 kB shards: several of them
    local_in = _corpus(tmp_path / "in")
    bucket(endpoint, "out-mds")
    (tmp_path / "disk").mkdir()
    settings = {"output__format": "mds", "run__shard_mb": 0.002}
    on_disk = basic_job(tmp_path / "disk", input__paths=[str(local_in)], **settings)
    code, output = invoke("run", on_disk)
    assert code == 0, output
    remote = _s3_job(tmp_path, local_in, endpoint, "s3://out-mds/mds/", **settings)
    puts = _put_log(monkeypatch, tmp_path / "puts.log")  # the workers are forked: they log too
    code, output = invoke("run", remote)
    assert code == 0, output
    order = puts()
    for stem in ("a", "sub/b"):
        written = [k for k in order if k.startswith(f"mds/{stem}.mds/")]
        shards = [f"mds/{stem}.mds/{mds.shard_name(i)}" for i in range(len(written) - 2)]
        assert written == [
            f"mds/{stem}.mds/index.batchtok.json",
            *shards,
            f"mds/{stem}.mds/index.json",
        ]
        # the record of the output written after it (it lists the files' stats)
        assert f"mds/.batchtok/records/{stem}.parquet.json" in order[order.index(written[-1]) :]
    assert len([k for k in order if k.startswith("mds/a.mds/shard.")]) > 2
    want = _local_files(tmp_path / "disk" / "out")
    assert _remote_files(endpoint, "out-mds", "mds/") == want
    code, output = invoke("run", remote, "--verify")
    assert code == 0 and "nothing to do" in output, output
    write_parquet(local_in / "a.parquet", texts(3, seed=1))  # one shard's worth now
    for job in (on_disk, remote):
        code, output = invoke("run", job)
        assert code == 0, output
    want = _local_files(tmp_path / "disk" / "out")
    assert sorted(k for k in want if k.startswith("a.mds/")) == [
        "a.mds/index.batchtok.json",
        "a.mds/index.json",
        "a.mds/shard.00000.mds",
    ]
    assert _remote_files(endpoint, "out-mds", "mds/") == want


def test_verify_finds_a_corrupt_datatrove_index_on_s3_and_writes_it_again(
    tmp_path: Path, endpoint: str
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(60, seed=3), row_group_size=20)
    bucket(endpoint, "out-verify")
    job = basic_job(
        tmp_path,
        output__dir="s3://out-verify/ds/",
        output__format="datatrove",
        storage__endpoint=endpoint,
    )
    assert invoke("run", job)[0] == 0
    assert invoke("run", job, "--verify")[0] == 0
    s3 = s3_client(endpoint)
    index = s3.get_object(Bucket="out-verify", Key="ds/a.ds.index")["Body"].read()
    corrupt = index[:-8] + struct.pack("<Q", 5)  # the last end before the ones before it
    s3.put_object(Bucket="out-verify", Key="ds/a.ds.index", Body=corrupt)
    code, output = invoke("run", job, "--verify")
    assert code == 0, output
    assert "s3://out-verify/ds/a.ds is corrupt (s3://out-verify/ds/a.ds.index: document" in output
    assert objects(endpoint, "out-verify", "ds/")["a.ds.index"] == index  # written again


def test_an_s3_output_that_cannot_be_read_is_refused_naming_the_key(
    tmp_path: Path, endpoint: str
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(20))
    job = basic_job(tmp_path, output__dir="s3://no-such-bucket/x", storage__endpoint=endpoint)
    for command in ("run", "plan"):
        code, output = invoke(command, job)
        assert code == 2 and "output.dir" in output, output
        assert "cannot read s3://no-such-bucket/x" in output and "NoSuchBucket" in output, output


def test_an_s3_output_without_boto3_and_other_schemes_are_refused_naming_the_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(20))
    from batchtok.runner.io import objects

    monkeypatch.setattr(s3, "boto3_available", lambda: False)
    monkeypatch.setattr(objects, "installed", lambda module: module != "boto3")
    code, output = invoke("run", basic_job(tmp_path, output__dir="s3://some-bucket/x"))
    assert code == 2 and "output.dir" in output, output
    assert 'S3 outputs need boto3: pip install "batchtok[s3]"' in output, output
    code, output = invoke("run", basic_job(tmp_path, tokenizer__path="hdfs://host/tok.json"))
    assert code == 2 and "tokenizer.path" in output and "not hdfs://" in output, output
    assert not (tmp_path / "out").exists()


def test_an_upload_that_fails_leaves_no_object_and_no_incomplete_upload(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket(endpoint, "out-d")
    options = StorageOptions(endpoint=endpoint)
    monkeypatch.setattr(s3, "MULTIPART_BYTES", 1)  # every file in parts of 5 MiB
    monkeypatch.setattr(s3, "PART_BYTES", 5 * 2**20)
    original = s3.upload_part

    def fail_second(s3: object, dest: S3Path, upload_id: str, number: int, chunk: bytes) -> str:
        if number == 2:
            raise ConnectionError("the network went away")
        return original(s3, dest, upload_id, number, chunk)

    monkeypatch.setattr(s3, "upload_part", fail_second)
    tmp = tmp_path / "big.bin"
    tmp.write_bytes(os.urandom(6 * 2**20))
    dest = S3Path("out-d", "tokens/big.bin", options)
    with pytest.raises(OSError, match="cannot upload s3://out-d/tokens/big.bin"):
        s3.upload(tmp, dest)
    assert dest.head() is None
    assert incomplete_uploads(endpoint, "out-d") == []
    assert tmp.exists()  # the caller's to delete (AtomicParquet.abort does)
    monkeypatch.setattr(s3, "upload_part", original)
    s3.upload(tmp, dest)
    assert objects(endpoint, "out-d", "tokens/")["big.bin"] == dest.read_bytes()
    assert not tmp.exists()


def test_a_worker_killed_mid_upload_leaves_nothing_visible_and_the_retry_completes(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    local_in = _corpus(tmp_path / "in")
    bucket(endpoint, "out-e")
    (tmp_path / "disk").mkdir()
    on_disk = basic_job(tmp_path / "disk", input__paths=[str(local_in)], run__shard_mb=0.002)
    code, output = invoke("run", on_disk)
    assert code == 0, output
    monkeypatch.setattr(s3, "MULTIPART_BYTES", 1)  # every upload multipart
    marker = tmp_path / "killed.json"
    parent = os.getpid()
    original = s3.upload_part

    def killed(s3: object, dest: S3Path, upload_id: str, number: int, chunk: bytes) -> str:
        etag = original(s3, dest, upload_id, number, chunk)
        if os.getpid() != parent and "/.batchtok/" not in dest.key:
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:  # the retry: let it through
                return etag
            seen = {
                "key": dest.key,
                "visible": dest.head() is not None,
                "uploads": incomplete_uploads(endpoint, "out-e"),
            }
            os.write(fd, json.dumps(seen).encode())
            os.close(fd)
            os.kill(os.getpid(), signal.SIGKILL)  # kill -9, its part uploaded, not completed
        return etag

    monkeypatch.setattr(s3, "upload_part", killed)
    job = _s3_job(tmp_path, local_in, endpoint, "s3://out-e/tokens", run__shard_mb=0.002)
    code, output = invoke("run", job)
    assert code == 0, output
    seen = json.loads(marker.read_text())
    assert not seen["visible"] and seen["key"] in seen["uploads"], seen
    assert "retrying it once" in output, output
    assert incomplete_uploads(endpoint, "out-e") == []  # the dead worker's upload, aborted
    assert _remote_files(endpoint, "out-e", "tokens/") == _local_files(tmp_path / "disk" / "out")
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output


def test_a_run_aborts_the_incomplete_uploads_a_killed_run_left(
    tmp_path: Path, endpoint: str
) -> None:
    local_in = _corpus(tmp_path / "in")
    bucket(endpoint, "out-f")
    s3 = s3_client(endpoint)
    s3.create_multipart_upload(Bucket="out-f", Key="tokens/a.parquet")
    s3.create_multipart_upload(Bucket="out-f", Key="elsewhere/x")  # not this output's
    job = _s3_job(tmp_path, local_in, endpoint, "s3://out-f/tokens")
    code, output = invoke("run", job)
    assert code == 0, output
    assert "aborted 1 incomplete uploads" in output, output
    assert incomplete_uploads(endpoint, "out-f") == ["elsewhere/x"]


def _lock_job(tmp_path: Path, endpoint: str, name: str, **overrides: object) -> Path:
    write_parquet(tmp_path / "in" / "a.parquet", texts(20))
    bucket(endpoint, name)
    return basic_job(
        tmp_path, output__dir=f"s3://{name}/tokens", storage__endpoint=endpoint, **overrides
    )


def _put_lock(endpoint: str, name: str, **holder: object) -> str:
    body = {"started": "2026-01-01T00:00:00+0000", "job": "the other run", "run_id": "r1"}
    found = s3_client(endpoint).put_object(
        Bucket=name, Key="tokens/.batchtok/lock", Body=json.dumps({**body, **holder}).encode()
    )
    return found["ETag"]


def _dead_pid() -> int:
    proc = subprocess.Popen([sys.executable, "-c", "pass"])
    proc.wait()
    return proc.pid


def test_a_second_run_on_an_s3_output_exits_4_naming_the_holder(
    tmp_path: Path, endpoint: str
) -> None:
    job = _lock_job(tmp_path, endpoint, "lock-a")
    _put_lock(endpoint, "lock-a", pid=4321, host="another-host")
    code, output = invoke("run", job)
    assert code == 4, output
    assert "another run holds s3://lock-a/tokens/.batchtok/lock" in output, output
    assert "pid 4321 on another-host" in output and "the other run" in output, output
    assert set(objects(endpoint, "lock-a", "tokens/")) == {".batchtok/lock"}  # nothing written
    code, output = invoke("status", job)
    assert "running: pid 4321 on another-host" in output, output
    s3_client(endpoint).delete_object(Bucket="lock-a", Key="tokens/.batchtok/lock")
    code, output = invoke("run", job)
    assert code == 0, output
    assert ".batchtok/lock" not in objects(endpoint, "lock-a", "tokens/")  # released


def test_s3_locks_exclude_each_other_and_one_of_two_takeovers_wins(endpoint: str) -> None:
    bucket(endpoint, "lock-b")
    options = StorageOptions(endpoint=endpoint)
    path = S3Path("lock-b", "tokens/.batchtok/lock", options)
    first = ObjectRunLock(path, job="first").acquire()
    with pytest.raises(LockHeld, match="another run holds"):
        ObjectRunLock(path, job="second").acquire()
    first.release()
    assert path.head() is None
    # a stale lock (a dead pid on this host): two runs read its ETag, one replaces it
    etag = _put_lock(endpoint, "lock-b", pid=_dead_pid(), host=socket.gethostname())
    winner, loser = ObjectRunLock(path), ObjectRunLock(path)
    assert winner._put(etag) and not loser._put(etag)
    assert object_lock_run_id(path) == winner.run_id
    with pytest.raises(LockHeld):  # the winner's lock is fresh and its pid alive
        loser.acquire()
    assert winner.holds_path()
    winner.release()


def test_an_s3_lock_heartbeat_rewrites_it_only_while_it_is_ours(
    endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket(endpoint, "lock-e")
    options = StorageOptions(endpoint=endpoint)
    path = S3Path("lock-e", "tokens/.batchtok/lock", options)
    held = ObjectRunLock(path).acquire()
    monkeypatch.setattr(lock_module, "HEARTBEAT_SECONDS", 0.0)
    etag = held.etag
    assert held.holds_path(cached=True) and held.etag != etag  # rewritten, If-Match its ETag
    assert object_lock_run_id(path) == held.run_id
    _put_lock(endpoint, "lock-e", pid=1, host="another-host", run_id="theirs")  # taken over
    assert not held.holds_path(cached=True)  # the heartbeat's If-Match fails: lost for good
    held.release()  # leaves the other run's lock
    assert object_lock_run_id(path) == "theirs"


def test_a_stale_s3_lock_is_taken_over_and_status_says_the_last_run_did_not_finish(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _lock_job(tmp_path, endpoint, "lock-c")
    dead = _dead_pid()
    _put_lock(endpoint, "lock-c", pid=dead, host=socket.gethostname())
    code, output = invoke("status", job)
    assert "running: no" in output and "last run: did not finish" in output, output
    assert f"pid {dead}" in output
    code, output = invoke("run", job)
    assert code == 0, output
    assert "took over a stale lock" in output and f"pid {dead}" in output, output
    code, output = invoke("status", job)
    assert code == 0 and "did not finish" not in output, output
    # another host's lock is stale once it went STALE_SECONDS without a heartbeat
    _put_lock(endpoint, "lock-c", pid=1, host="another-host")
    code, output = invoke("run", job)
    assert code == 4, output
    monkeypatch.setattr(lock_module, "STALE_SECONDS", 0.0)
    time.sleep(1.1)  # the server's clock has whole seconds
    code, output = invoke("run", job)
    assert code == 0 and "took over a stale lock" in output, output


def test_an_s3_lock_deleted_mid_run_stops_publishing(
    tmp_path: Path, endpoint: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    job = _lock_job(tmp_path, endpoint, "lock-d", run__workers=1)
    parent = os.getpid()
    original = output_module.AtomicParquet.write

    def write(self: object, table: object) -> None:
        original(self, table)
        if os.getpid() != parent:  # in the worker: someone deletes the lock
            s3_client(endpoint).delete_object(Bucket="lock-d", Key="tokens/.batchtok/lock")

    monkeypatch.setattr(output_module.AtomicParquet, "write", write)
    code, output = invoke("run", job)
    assert code == 1, output
    assert "was deleted or replaced during the run" in output, output
    # nothing published, no summary: only the state written before (the input's hashes)
    assert {k.split("/")[1] for k in objects(endpoint, "lock-d", "tokens/")} <= {
        "records",
        "tokenizers",
    }
    assert incomplete_uploads(endpoint, "lock-d") == []


# A run whose first worker upload of an output blocks (its first part sent, never completed)
# after writing a marker: the test kills the whole run there, as a power loss would.
BLOCKED_RUN = """
import os, sys, time
from batchtok.runner.io import s3, stores
s3.MULTIPART_BYTES = 1
original = s3.upload_part
def blocked(s3, dest, upload_id, number, chunk):
    etag = original(s3, dest, upload_id, number, chunk)
    if "/.batchtok/" not in dest.key:
        try:
            fd = os.open(sys.argv[2], os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return etag
        os.write(fd, dest.key.encode())
        os.close(fd)
        time.sleep(600)
    return etag
s3.upload_part = blocked
from batchtok.cli import main
main(["run", sys.argv[1]])
"""


def test_a_run_killed_mid_upload_leaves_nothing_visible_and_the_next_run_resumes(
    tmp_path: Path, endpoint: str
) -> None:
    local_in = _corpus(tmp_path / "in")
    bucket(endpoint, "out-g")
    (tmp_path / "disk").mkdir()
    on_disk = basic_job(tmp_path / "disk", input__paths=[str(local_in)], run__shard_mb=0.002)
    code, output = invoke("run", on_disk)
    assert code == 0, output
    job = _s3_job(tmp_path, local_in, endpoint, "s3://out-g/tokens", run__shard_mb=0.002)
    marker = tmp_path / "blocked"
    proc = subprocess.Popen(
        [sys.executable, "-c", BLOCKED_RUN, str(job), str(marker)],
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not marker.exists() or not marker.read_text():
            assert proc.poll() is None, "the run ended before it could be killed"
            assert time.monotonic() < deadline
            time.sleep(0.05)
        # meanwhile a second run of the job is refused, naming the first
        code, output = invoke("run", job)
        assert (
            code == 4
            and f"another run holds s3://out-g/tokens/.batchtok/lock (pid {proc.pid}" in output
        ), output
        code, output = invoke("status", job)
        assert f"running: pid {proc.pid} on {socket.gethostname()}" in output, output
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the run and its workers, mid-upload
        proc.wait()
    key = marker.read_text()
    assert key in incomplete_uploads(endpoint, "out-g")
    options = StorageOptions(endpoint=endpoint)
    assert S3Path("out-g", key, options).head() is None  # started, never visible
    code, output = invoke("run", job)
    assert code == 0, output
    assert "took over a stale lock" in output and f"pid {proc.pid}" in output, output
    assert "incomplete uploads a killed run left" in output, output
    assert incomplete_uploads(endpoint, "out-g") == []
    assert _remote_files(endpoint, "out-g", "tokens/") == _local_files(tmp_path / "disk" / "out")
