"""The content-hash cache: a hit on nothing changed, a miss on each key component, and
outputs that went missing or bad are redone."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import batchtok.runner.plan.prepare as prepare_module
from batchtok.runner.io.stores import stat_of
from batchtok.runner.plan.keys import TextHasher
from tests.support.runner import (
    GPT2,
    basic_job,
    invoke,
    oracle_ids,
    summary,
    texts,
    write_parquet,
)

N_ROWS, ROW_GROUP, SHARD_MB = 200, 20, 0.002  # 10 row groups of ~1 kB: several shards


@pytest.fixture
def done(tmp_path: Path) -> tuple[Path, Path]:
    """A job over two files, run once: (job file, output dir)."""
    write_parquet(tmp_path / "in" / "a.parquet", texts(N_ROWS), row_group_size=ROW_GROUP)
    write_parquet(tmp_path / "in" / "b.parquet", texts(30, seed=1), row_group_size=50)  # 1 shard
    job = basic_job(tmp_path, run__shard_mb=SHARD_MB)
    code, output = invoke("run", job)
    assert code == 0, output
    first = summary(tmp_path / "out")["shards"]
    assert first["done"] == first["total"] > 3 and first["cached"] == 0
    return job, tmp_path / "out"


def _rerun(job: Path, *args: str) -> dict:
    code, output = invoke("run", job, *args)
    assert code == 0, output
    return summary(job.parent / "out")["shards"]


def _check_against_oracle(out: Path, inputs: Path, **options) -> None:
    for path in sorted(inputs.glob("*.parquet")):
        text = pq.read_table(path)["text"].to_pylist()
        got = pq.read_table(out / path.name)["input_ids"].to_pylist()
        assert got == oracle_ids(text, **options)


def test_rerun_with_nothing_changed_does_nothing(done, monkeypatch) -> None:
    job, out = done
    before = {p: p.stat().st_mtime_ns for p in out.glob("*.parquet")}

    def no_tokenizer(*args, **kwargs):
        raise AssertionError("a run with nothing to do must not load the tokenizer")

    monkeypatch.setattr(prepare_module, "load_tokenizer", no_tokenizer)
    shards = _rerun(job)
    assert shards["done"] == 0 and shards["cached"] == shards["total"]
    assert {p: p.stat().st_mtime_ns for p in out.glob("*.parquet")} == before


def test_changing_one_row_recomputes_exactly_its_shard(done) -> None:
    job, out = done
    path = job.parent / "in" / "a.parquet"
    table = pq.read_table(path)
    text = table["text"].to_pylist()
    text[45] = "a changed row"  # row group 2
    write_parquet(path, text, row_group_size=ROW_GROUP)
    shards = _rerun(job)
    assert shards["done"] == 1 and shards["cached"] == shards["total"] - 1
    _check_against_oracle(out, job.parent / "in")
    meta = json.loads(pq.read_metadata(out / "a.parquet").metadata[b"batchtok"])
    assert len(meta["shards"]) > 1  # the other shards were copied from the previous output


def test_changing_a_kept_column_recomputes_its_shard(done) -> None:
    job, out = done
    path = job.parent / "in" / "b.parquet"
    table = pq.read_table(path)
    ids = list(range(100, 130))
    table = table.set_column(0, "id", pa.array(ids, pa.int64()))
    pq.write_table(table, path, row_group_size=50)
    shards = _rerun(job)
    assert shards["done"] == 1
    assert pq.read_table(out / "b.parquet")["id"].to_pylist() == ids


def test_changing_the_tokenizer_bytes_recomputes_everything(done) -> None:
    job, out = done
    tok = job.parent / "tokenizer.json"
    tok.write_text(json.dumps(json.loads(GPT2.read_text()), indent=1))  # same tokenizer
    code, output = invoke("run", job, "--set", f"tokenizer.path={tok}")
    assert code == 0, output
    shards = summary(out)["shards"]
    assert shards["done"] == shards["total"] and shards["cached"] == 0
    meta = json.loads(pq.read_metadata(out / "a.parquet").metadata[b"batchtok"])
    assert meta["tokenizer"]["sha256"] == __import__("hashlib").sha256(tok.read_bytes()).hexdigest()


@pytest.mark.parametrize(
    ("setting", "check"),
    [
        ("encode.add_special_tokens=false", {"add_special_tokens": False}),
        ('encode.special_tokens_in_text="text"', {"special_as_text": True}),
        ("encode.max_length=5", {"max_length": 5}),
    ],
)
def test_changing_an_encode_option_recomputes_everything(done, setting, check) -> None:
    job, out = done
    code, output = invoke("run", job, "--set", setting)
    assert code == 0, output
    shards = summary(out)["shards"]
    assert shards["done"] == shards["total"]
    _check_against_oracle(out, job.parent / "in", **check)
    # ... and changing it back is a miss again (the key is not just "changed since last")
    shards = _rerun(job)
    assert shards["done"] == shards["total"]
    _check_against_oracle(out, job.parent / "in")


@pytest.mark.parametrize(
    "setting",
    [
        "output.dtype=uint16",
        "output.compression=snappy",
        'output.ids_column="ids"',
        "run.bad_rows=skip",
    ],
)
def test_changing_the_output_format_recomputes_everything(done, setting) -> None:
    job, out = done
    code, output = invoke("run", job, "--set", setting)
    assert code == 0, output
    shards = summary(out)["shards"]
    assert shards["done"] == shards["total"]
    if "uint16" in setting:
        assert pq.read_schema(out / "a.parquet").field("input_ids").type == pa.list_(pa.uint16())


def test_engine_version_is_part_of_the_key(done, monkeypatch) -> None:
    job, out = done
    monkeypatch.setattr(prepare_module, "__version__", "9.9.9")
    shards = _rerun(job)
    assert shards["done"] == shards["total"]


def test_the_worker_count_is_not_part_of_the_key(done) -> None:
    job, _ = done
    shards = _rerun(job, "--workers", "1")
    assert shards["done"] == 0


def test_a_new_input_file_is_picked_up(done) -> None:
    job, out = done
    write_parquet(job.parent / "in" / "new" / "c.parquet", texts(10, seed=9))
    summary_before = summary(out)["shards"]["total"]
    shards = _rerun(job)
    assert shards["done"] == 1 and shards["total"] == summary_before + 1
    assert (out / "new" / "c.parquet").exists()
    _check_against_oracle(out / "new", job.parent / "in" / "new")


def test_a_deleted_output_is_redone(done) -> None:
    job, out = done
    (out / "b.parquet").unlink()
    shards = _rerun(job)
    assert shards["done"] == 1
    _check_against_oracle(out, job.parent / "in")


@pytest.mark.parametrize("damage", ["flip bytes", "truncate", "garbage"])
def test_a_corrupted_output_is_detected_and_redone(done, damage) -> None:
    job, out = done
    target = out / "a.parquet"
    data = bytearray(target.read_bytes())
    if damage == "flip bytes":
        for i in range(len(data) // 3, len(data) // 3 + 64):
            data[i] ^= 0xFF
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = bytearray(b"x" * len(data))
    target.write_bytes(bytes(data))
    code, output = invoke("run", job)
    assert code == 0, output
    assert "a.parquet" in output and ("corrupt" in output or "unreadable" in output)
    shards = summary(out)["shards"]
    assert shards["done"] == shards["total"] - 1  # every shard of a.parquet, none of b
    _check_against_oracle(out, job.parent / "in")


def test_outputs_are_verified_not_trusted_when_the_records_are_lost(done) -> None:
    job, out = done
    shutil.rmtree(out / ".batchtok" / "records")
    shards = _rerun(job)
    assert shards["done"] == 0  # verified by reading them whole, then recorded again
    assert (out / ".batchtok" / "records" / "a.parquet.json").exists()


def test_verify_rehashes_inputs_and_rereads_outputs(done) -> None:
    job, out = done
    path = job.parent / "in" / "b.parquet"
    text = pq.read_table(path)["text"].to_pylist()
    text[0] = "a change that keeps the file's stat as recorded"
    write_parquet(path, text, row_group_size=50)
    # Make the record claim the new stat: a change the stat cannot see.
    record_path = out / ".batchtok" / "records" / "b.parquet.json"
    record = json.loads(record_path.read_text())
    record["input"]["stat"] = stat_of(path)
    record_path.write_text(json.dumps(record))
    assert _rerun(job)["done"] == 0  # the stat memo trusts the recorded hashes ...
    assert _rerun(job, "--verify")["done"] == 1  # ... --verify reads the content
    _check_against_oracle(out, job.parent / "in")


def test_text_hash_ignores_batching_and_tells_null_from_empty() -> None:
    values = ["a", "", None, "ü" * 5, "x y"] * 7

    def digest(batch: int) -> str:
        h = TextHasher()
        arr = pa.array(values, pa.string())
        for start in range(0, len(values), batch):
            h.update(arr.slice(start, batch))
        return h.hexdigest()

    assert digest(1) == digest(4) == digest(100)
    large = TextHasher()
    large.update(pa.array(values, pa.large_string()))
    assert large.hexdigest() == digest(3)
    other = TextHasher()
    other.update(pa.array(["" if v is None else v for v in values], pa.string()))
    assert other.hexdigest() != digest(3)


def test_a_touched_input_is_rehashed_without_loading_the_tokenizer(done, monkeypatch) -> None:
    job, out = done
    path = job.parent / "in" / "a.parquet"
    st = path.stat()
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))

    def no_tokenizer(*args, **kwargs):
        raise AssertionError("an unchanged content must not load the tokenizer")

    monkeypatch.setattr(prepare_module, "load_tokenizer", no_tokenizer)
    assert _rerun(job)["done"] == 0
    record = json.loads((out / ".batchtok" / "records" / "a.parquet.json").read_text())
    assert record["input"]["stat"]["mtime_ns"] == st.st_mtime_ns + 10**9
