"""A derived output (Megatron, datatrove, MDS, packed Parquet rows) is checked as a Parquet output
is: a file whose stat changed since it was written is trusted only if it still has the
content hash recorded then, ``--verify`` compares every file's hash, and a changed file is
rebuilt with its ids equal to the oracle's again; locally and in object storage (moto's S3
server on 127.0.0.1). An output written before sidecars carried hashes is still complete."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from batchtok.formats import datatrove, mds, megatron
from batchtok.runner.io.stores import stat_of
from tests.support.runner import basic_job, invoke, oracle_ids, summary, texts, write_parquet
from tests.support.s3 import bucket, moto_server, objects, s3_client

EOS = 50256  # GPT-2's <|endoftext|>
DOCS = texts(120, seed=5)
# output.format / pack_length of each derived output, and the file holding its ids
FORMATS = {
    "megatron": ({"output__format": "megatron"}, "a.bin"),
    "datatrove": ({"output__format": "datatrove"}, "a.ds"),
    "mds": ({"output__format": "mds"}, "a.mds/shard.00000.mds"),
    "packed": ({"output__pack_length": 37}, "a.parquet"),
}
SETS = {
    "megatron": ["a.bin", "a.batchtok.json", "a.idx"],
    "datatrove": ["a.ds.index", "a.ds.metadata", "a.ds.batchtok.json", "a.ds"],
    "mds": ["a.mds/index.batchtok.json", "a.mds/shard.00000.mds", "a.mds/index.json"],
    "packed": ["a.parquet"],
}
PRIMARY = {
    "megatron": "a.idx",
    "datatrove": "a.ds",
    "mds": "a.mds/index.json",
    "packed": "a.parquet",
}
SIDECAR = {
    "megatron": "a.batchtok.json",
    "datatrove": "a.ds.batchtok.json",
    "mds": "a.mds/index.batchtok.json",
}


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


def _job(tmp_path: Path, kind: str, **settings: object) -> Path:
    """A job over one input of several shards (its output is built from their parts)."""
    write_parquet(tmp_path / "in" / "a.parquet", DOCS, row_group_size=20)
    return basic_job(
        tmp_path, run__shard_mb=0.004, output__append_eos=True, **FORMATS[kind][0], **settings
    )


def _want() -> list[int]:
    return [i for row in oracle_ids(DOCS) if row for i in row + [EOS]]


def _tokens(out: Path, kind: str) -> list[int]:
    """Every id of the output, in order."""
    if kind == "megatron":
        return [i for d in megatron.read_documents(str(out / "a")) for i in d.tolist()]
    if kind == "datatrove":
        return [i for d in datatrove.read_documents(str(out / "a.ds")) for i in d.tolist()]
    if kind == "mds":
        return [i for d in mds.read_documents(str(out / "a.mds")) for i in d.tolist()]
    return [i for row in pq.read_table(out / "a.parquet")["input_ids"].to_pylist() for i in row]


def _change_an_id(data: bytes) -> bytes:
    """The bytes with one id changed in the middle, the size kept."""
    changed = bytearray(data)
    at = len(changed) // 2 - len(changed) // 2 % 4
    changed[at] ^= 0x01
    return bytes(changed)


def _record(out: Path) -> Path:
    return out / ".batchtok" / "records" / "a.parquet.json"


def _written_then_changed(tmp_path: Path, kind: str) -> tuple[Path, Path, str]:
    """(job, output dir, the changed file's name) after a run and one id changed in place."""
    job, out, name = _job(tmp_path, kind), tmp_path / "out", FORMATS[kind][1]
    assert invoke("run", job)[0] == 0
    (out / name).write_bytes(_change_an_id((out / name).read_bytes()))
    return job, out, name


@pytest.mark.parametrize("kind", FORMATS)
def test_a_file_changed_in_place_is_noticed_by_its_stat_and_rebuilt(
    tmp_path: Path, kind: str
) -> None:
    job, out, name = _written_then_changed(tmp_path, kind)
    code, output = invoke("run", job)
    assert code == 0, output
    assert f"existing output {out}" in output and "will be rewritten" in output, output
    assert os.path.basename(name) in output or kind == "packed", output
    shards = summary(out)["shards"]
    assert shards["done"] == shards["total"] > 1, shards
    assert _tokens(out, kind) == _want()
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output
    files = json.loads(_record(out).read_text())["output"]["files"]  # every file's stat
    assert sorted(files) == sorted(os.path.basename(n) for n in SETS[kind])


@pytest.mark.parametrize("kind", FORMATS)
def test_verify_compares_content_hashes_where_the_stat_cannot_see_a_change(
    tmp_path: Path, kind: str
) -> None:
    job, out, name = _written_then_changed(tmp_path, kind)
    record = json.loads(_record(out).read_text())  # make the record claim the new stat
    record["output"]["files"] = {os.path.basename(n): stat_of(out / n) for n in SETS[kind]}
    record["output"]["stat"] = stat_of(out / PRIMARY[kind])
    _record(out).write_text(json.dumps(record))
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output  # the stat is trusted ...
    code, output = invoke("run", job, "--verify")  # ... --verify reads the content
    assert code == 0 and "will be rewritten" in output, output
    shards = summary(out)["shards"]
    assert shards["done"] == shards["total"], shards
    assert _tokens(out, kind) == _want()


@pytest.mark.parametrize("kind", FORMATS)
def test_an_s3_object_replaced_with_a_new_etag_is_noticed_and_rebuilt(
    tmp_path: Path, kind: str, endpoint: str
) -> None:
    name = f"trainer-{kind}"
    bucket(endpoint, name)
    job = _job(tmp_path, kind, output__dir=f"s3://{name}/out/", storage__endpoint=endpoint)
    assert invoke("run", job)[0] == 0
    s3 = s3_client(endpoint)
    key = f"out/{FORMATS[kind][1]}"
    for flags in ((), ("--verify",)):
        data = s3.get_object(Bucket=name, Key=key)["Body"].read()
        s3.put_object(Bucket=name, Key=key, Body=_change_an_id(data))  # same size, new ETag
        code, output = invoke("run", job, *flags)
        assert code == 0 and "will be rewritten" in output, output
        local = tmp_path / "copy"
        for rel, body in objects(endpoint, name, "out/").items():
            if not rel.startswith((".", "_")):
                (local / rel).parent.mkdir(parents=True, exist_ok=True)
                (local / rel).write_bytes(body)
        assert _tokens(local, kind) == _want()
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output


@pytest.mark.parametrize("kind", ["megatron", "datatrove", "mds"])
def test_an_output_written_before_sidecars_held_hashes_is_still_complete(
    tmp_path: Path, kind: str
) -> None:
    job, out = _job(tmp_path, kind), tmp_path / "out"
    assert invoke("run", job)[0] == 0
    # What the earlier version wrote: a sidecar without hashes, a record of the primary
    # file's stat only, no list of the files the job owns.
    sidecar = out / SIDECAR[kind]
    doc = json.loads(sidecar.read_text())
    del doc["xxh3_128"]
    sidecar.write_text(json.dumps(doc, sort_keys=True) + "\n")
    record = json.loads(_record(out).read_text())
    del record["owned"], record["output"]["files"], record["output"]["xxh3_128"]
    _record(out).write_text(json.dumps(record))
    before = {p: os.stat(out / p) for p in SETS[kind]}
    for flags in ((), ("--verify",)):  # --verify reads the set back, as it did then
        code, output = invoke("run", job, *flags)
        assert code == 0 and "nothing to do" in output, output
        assert "rewritten" not in output, output
    for p, stat in before.items():
        assert os.stat(out / p).st_ino == stat.st_ino, p
        assert os.stat(out / p).st_mtime_ns == stat.st_mtime_ns, p
    assert _tokens(out, kind) == _want()


@pytest.mark.parametrize("kind", ["megatron", "datatrove", "mds"])
def test_a_file_touched_but_unchanged_is_kept_and_its_new_stat_recorded(
    tmp_path: Path, kind: str
) -> None:
    job, out = _job(tmp_path, kind), tmp_path / "out"
    assert invoke("run", job)[0] == 0
    data = out / FORMATS[kind][1]
    inode = data.stat().st_ino
    os.utime(data, ns=(1, 1))
    for _ in range(2):  # the first re-run checks its hash and records its new stat
        code, output = invoke("run", job)
        assert code == 0 and "nothing to do" in output, output
    assert data.stat().st_ino == inode
    assert json.loads(_record(out).read_text())["output"]["files"][data.name] == stat_of(data)
