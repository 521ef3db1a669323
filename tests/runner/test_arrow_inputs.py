"""Arrow inputs: a Hugging Face ``datasets`` save_to_disk directory (made by the real
``datasets`` library), Arrow IPC files and streams, Feather v2; record batches as shards,
hashed and resumed like Parquet row groups; fsspec URIs (the memory and a local file system,
never the Hub) read end to end."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import datasets
import fsspec
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc as ipc
import pyarrow.parquet as pq
import pytest
from fsspec.implementations.local import LocalFileSystem

from batchtok.runner import load_job
from batchtok.runner.inputs import arrow_ipc
from batchtok.runner.inputs.discovery import expand_inputs
from batchtok.runner.inputs.files import read_input
from batchtok.runner.io.arrow_fs import StorageOptions, filesystem
from batchtok.runner.plan.records import Records
from tests.support.runner import GPT2, basic_job, invoke, oracle_ids, summary, texts

ALL = "1000000"  # an audit sample larger than any input here: every row is checked


@pytest.fixture(autouse=True)
def _small_batches(monkeypatch: pytest.MonkeyPatch) -> None:
    """save_to_disk writes record batches of 40 rows: several in each file."""
    monkeypatch.setattr(datasets.config, "DEFAULT_MAX_BATCH_SIZE", 40)
    datasets.disable_progress_bars()


def _dataset(docs: list[str | None]) -> object:
    return datasets.Dataset.from_dict({"text": docs, "id": list(range(len(docs)))})


def _stream_batches(path: Path) -> list[pa.RecordBatch]:
    with pa.OSFile(str(path)) as source:  # read, not mapped: the file is written again
        return list(ipc.open_stream(source))


def _write_stream(path: Path, batches: list[pa.RecordBatch]) -> None:
    with ipc.new_stream(str(path), batches[0].schema) as writer:
        for batch in batches:
            writer.write_batch(batch)


def _ids(path: Path) -> list:
    return pq.read_table(path)["input_ids"].to_pylist()


# -- datasets directories ------------------------------------------------------------------


def test_a_datasets_directory_equals_the_oracle_reruns_nothing_and_redoes_a_changed_batch(
    tmp_path: Path,
) -> None:
    docs = texts(300, seed=21)
    _dataset(docs).save_to_disk(str(tmp_path / "in" / "corpus"), num_shards=3)
    data = sorted((tmp_path / "in" / "corpus").glob("*.arrow"))
    assert len(data) == 3 and len(_stream_batches(data[0])) > 1  # streams of several batches
    job = basic_job(tmp_path, run__shard_mb=0.0001)  # each batch its own shard
    code, output = invoke("run", job)
    assert code == 0, output
    out = tmp_path / "out" / "corpus"
    assert sorted(p.name for p in out.iterdir()) == [p.stem + ".parquet" for p in data]
    got = []
    for path in data:
        table = pq.read_table(out / (path.stem + ".parquet"))
        assert table.column_names == ["text", "id", "input_ids", "num_tokens"]
        got += table["input_ids"].to_pylist()
    assert got == oracle_ids(docs)
    first = summary(tmp_path / "out")["shards"]
    assert first["done"] == first["total"] > 6

    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output
    again = summary(tmp_path / "out")["shards"]
    assert again["done"] == 0 and again["cached"] == first["total"]

    # one row of the middle file's second batch changes: that batch's shard alone is encoded
    batches = _stream_batches(data[1])
    rows = batches[1].column("text").to_pylist()
    rows[3] = "a changed row"
    batches[1] = pa.RecordBatch.from_arrays(
        [pa.array(rows, pa.string()), batches[1].column("id")], schema=batches[1].schema
    )
    _write_stream(data[1], batches)
    code, output = invoke("run", job)
    assert code == 0, output
    assert summary(tmp_path / "out")["shards"]["done"] == 1
    changed = list(docs)
    changed[100 + 40 + 3] = "a changed row"  # file 1 starts at row 100; batches of 40 rows
    got = [i for p in data for i in _ids(out / (p.stem + ".parquet"))]
    assert got == oracle_ids(changed)


def test_a_datasets_directory_gives_the_files_its_state_lists_in_its_order(
    tmp_path: Path,
) -> None:
    corpus = tmp_path / "in" / "corpus"
    _dataset(texts(60, seed=22)).save_to_disk(str(corpus), num_shards=3)
    state = json.loads((corpus / "state.json").read_text())
    names = [entry["filename"] for entry in state["_data_files"]]
    state["_data_files"] = [{"filename": name} for name in reversed(names[1:])]
    (corpus / "state.json").write_text(json.dumps(state))
    (tmp_path / "in" / "zz.arrow").write_bytes((corpus / names[0]).read_bytes())
    job = load_job(basic_job(tmp_path))
    pairs, warnings = expand_inputs(job)
    assert [rel for _, rel in pairs] == [
        f"corpus/{Path(names[2]).stem}.parquet",
        f"corpus/{Path(names[1]).stem}.parquet",
        "zz.parquet",  # a file beside the directory: by name, as ever
    ]
    assert any(names[0] in w and "does not list" in w for w in warnings), warnings
    # a file listed that is not there is a job error naming it
    state["_data_files"].append({"filename": "data-gone.arrow"})
    (corpus / "state.json").write_text(json.dumps(state))
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 2 and "data-gone.arrow, which is not there" in output, output


def test_a_dataset_dicts_splits_are_found_below_the_directory(tmp_path: Path) -> None:
    train, test = texts(50, seed=23), texts(20, seed=24)
    splits = datasets.DatasetDict({"train": _dataset(train), "test": _dataset(test)})
    splits.save_to_disk(str(tmp_path / "in"))
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 0, output
    out = tmp_path / "out"
    assert _ids(out / "train" / "data-00000-of-00001.parquet") == oracle_ids(train)
    assert _ids(out / "test" / "data-00000-of-00001.parquet") == oracle_ids(test)


# -- Arrow IPC files and streams -----------------------------------------------------------


def _table(docs: list[str | None], text_type: pa.DataType | None = None) -> pa.Table:
    kinds = pa.array([("a", "b", "c")[i % 3] for i in range(len(docs))]).dictionary_encode()
    return pa.table(
        {
            "id": pa.array(range(len(docs)), pa.int64()),
            "kind": kinds,
            "text": pa.array(docs, text_type or pa.string()),
        }
    )


WRITERS = {
    "file": lambda path, table: _write_ipc(ipc.new_file, path, table),
    "stream": lambda path, table: _write_ipc(ipc.new_stream, path, table),
    "feather": lambda path, table: feather.write_feather(table, str(path), chunksize=25),
}


def _write_ipc(new, path: Path, table: pa.Table) -> None:
    with new(str(path), table.schema) as writer:
        writer.write_table(table, max_chunksize=25)


@pytest.mark.parametrize("text_type", [pa.string(), pa.large_string()], ids=str)
@pytest.mark.parametrize(
    ("writer", "name"),
    [("file", "a.arrow"), ("stream", "a.arrows"), ("stream", "b.arrow"), ("feather", "a.feather")],
)
def test_ipc_files_and_streams_give_the_oracles_ids_and_keep_the_columns(
    tmp_path: Path, writer: str, name: str, text_type: pa.DataType
) -> None:
    docs = texts(110, seed=25)
    docs[7] = None  # a null text: a bad row
    table = _table(docs, text_type)
    (tmp_path / "in").mkdir()
    WRITERS[writer](tmp_path / "in" / name, table)
    job = basic_job(tmp_path, run__shard_mb=0.002)
    code, output = invoke("run", job)
    assert code == 3, output  # the null row
    got = pq.read_table(tmp_path / "out" / (name.rsplit(".", 1)[0] + ".parquet"))
    assert got.column_names == ["id", "kind", "text", "input_ids", "num_tokens"]
    assert got.select(["id", "kind", "text"]).equals(table.combine_chunks())
    ids = got["input_ids"].to_pylist()
    assert ids[7] is None
    assert ids[:7] + ids[8:] == oracle_ids(docs[:7] + docs[8:])
    shards = summary(tmp_path / "out")["shards"]
    assert shards["total"] > 1  # five batches of 25 rows, cut into shards
    code, output = invoke("run", job)
    assert code == 3 and "nothing to do" in output, output  # the bad row, still reported


def test_verify_and_audit_read_an_arrow_input(tmp_path: Path) -> None:
    docs = texts(90, seed=26)
    (tmp_path / "in").mkdir()
    WRITERS["stream"](tmp_path / "in" / "s.arrow", _table(docs))
    WRITERS["file"](tmp_path / "in" / "f.arrow", _table(docs[::-1]))
    job = basic_job(tmp_path, run__shard_mb=0.002)
    code, output = invoke("run", job)
    assert code == 0, output
    code, output = invoke("run", job, "--verify")
    assert code == 0, output
    assert summary(tmp_path / "out")["shards"]["done"] == 0  # re-hashed, the same
    code, output = invoke("audit", job, "--sample", ALL, "--json")
    assert code == 0, output
    report = json.loads(output)
    assert report["ok"] and report["problems"] == []
    code, output = invoke("audit", "-t", GPT2, tmp_path / "in" / "s.arrow")
    assert code == 0 and "90 rows checked, 90 equal" in output, output


def test_a_streams_batches_are_remembered_until_its_stat_changes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "s.arrow"
    WRITERS["stream"](path, _table(texts(80, seed=27)))
    jobfile = basic_job(tmp_path, run__shard_mb=0.002)
    code, output = invoke("run", jobfile)
    assert code == 0, output
    record = Records(tmp_path / "out" / ".batchtok").load("s.parquet")
    assert record.input is not None and record.input.arrow["format"] == "stream"
    job = load_job(jobfile)
    planned = read_input(str(path), "s.parquet", job, [], None)
    assert planned is not None and len(planned.batches) == 4

    def no_scan(*args, **kwargs):
        raise AssertionError("the remembered batches must be used")

    monkeypatch.setattr(arrow_ipc, "scan", no_scan)
    remembered = read_input(str(path), "s.parquet", job, [], record)
    assert remembered == planned
    os.utime(path, ns=(1, 1))  # another stat: the file is read again
    with pytest.raises(AssertionError, match="remembered"):
        read_input(str(path), "s.parquet", job, [], record)


def test_a_stream_with_a_dictionary_text_column_is_read_from_its_start(tmp_path: Path) -> None:
    docs = texts(100, seed=28)
    table = pa.table({"text": pa.array(docs).dictionary_encode()})
    (tmp_path / "in").mkdir()
    WRITERS["stream"](tmp_path / "in" / "d.arrow", table)
    code, output = invoke("run", basic_job(tmp_path, run__shard_mb=0.0005))
    assert code == 0, output
    assert summary(tmp_path / "out")["shards"]["total"] > 1
    assert _ids(tmp_path / "out" / "d.parquet") == oracle_ids(docs)


# -- refusals ------------------------------------------------------------------------------


def test_a_corrupt_arrow_file_is_a_job_error_naming_it(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    WRITERS["file"](tmp_path / "in" / "good.arrow", _table(texts(30, seed=29)))
    data = (tmp_path / "in" / "good.arrow").read_bytes()
    (tmp_path / "in" / "cut.arrow").write_bytes(data[: len(data) // 2])
    (tmp_path / "in" / "noise.arrow").write_bytes(b"not arrow at all, " * 20)
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 2, output
    for name in ("cut.arrow", "noise.arrow"):
        assert f"cannot read {tmp_path / 'in' / name} as Arrow IPC" in output
    assert "good.arrow" not in output


@pytest.mark.filterwarnings("ignore:Feather V1 files are deprecated:DeprecationWarning")
def test_a_feather_v1_file_is_refused_saying_how_to_write_it_again(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    feather.write_feather(
        pa.table({"text": texts(10, seed=30)}), str(tmp_path / "in" / "old.feather"), version=1
    )
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 2, output
    assert "old.feather as Arrow IPC: it is a Feather v1 file" in output
    assert "write_feather" in output


def test_an_arrow_and_a_parquet_file_of_one_name_are_refused(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    WRITERS["file"](tmp_path / "in" / "a.arrow", _table(["x"]))
    pq.write_table(pa.table({"text": ["y"]}), tmp_path / "in" / "a.parquet")
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 2 and "would both be written to a.parquet" in output, output


def test_output_names() -> None:
    assert arrow_ipc.output_name("a/b.arrow") == "a/b.parquet"
    assert arrow_ipc.output_name("b.FEATHER") == "b.parquet"
    assert arrow_ipc.output_name("b.arrows") == "b.parquet"
    assert arrow_ipc.output_name("b.parquet") == "b.parquet"


# -- fsspec file systems -------------------------------------------------------------------


@pytest.fixture
def memory() -> Iterator[Any]:
    """fsspec's memory file system, its /corpus removed after the test."""
    fs = fsspec.filesystem("memory")
    yield fs
    if fs.exists("/corpus"):
        fs.rm("/corpus", recursive=True)


def test_a_memory_file_system_is_read_through_fsspec_end_to_end(tmp_path: Path, memory) -> None:
    """The workers are forked from this process, so they see its memory file system."""
    docs, more = texts(120, seed=31), texts(30, seed=32)
    _dataset(docs).save_to_disk("memory://corpus/d", num_shards=2)
    with memory.open("/corpus/more.arrow", "wb") as f:
        with ipc.new_file(f, _table(more).schema) as writer:
            writer.write_table(_table(more), max_chunksize=25)
    job = basic_job(tmp_path, input__paths=["memory://corpus"], run__shard_mb=0.002)
    code, output = invoke("run", job)
    assert code == 0, output
    out = tmp_path / "out"
    got = _ids(out / "d" / "data-00000-of-00002.parquet") + _ids(
        out / "d" / "data-00001-of-00002.parquet"
    )
    assert got == oracle_ids(docs)
    assert _ids(out / "more.parquet") == oracle_ids(more)
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output


class _TestLocal(LocalFileSystem):
    """fsspec's local file system under a scheme pyarrow does not know."""

    protocol = ("batchtoklocal",)

    @classmethod
    def _strip_protocol(cls, path):
        return super()._strip_protocol(str(path).removeprefix("batchtoklocal://"))


def test_a_scheme_only_fsspec_knows_is_read_through_it(tmp_path: Path) -> None:
    fsspec.register_implementation("batchtoklocal", _TestLocal, clobber=True)
    docs = texts(60, seed=33)
    _dataset(docs).save_to_disk(str(tmp_path / "in" / "d"))
    uri = f"batchtoklocal://{tmp_path / 'in'}"
    job = basic_job(tmp_path, input__paths=[uri])
    code, output = invoke("run", job)
    assert code == 0, output
    assert _ids(tmp_path / "out" / "d" / "data-00000-of-00001.parquet") == oracle_ids(docs)


def test_a_scheme_no_file_system_knows_is_refused_naming_it(tmp_path: Path) -> None:
    code, output = invoke("run", basic_job(tmp_path, input__paths=["nosuchfs://bucket/in"]))
    assert code == 2, output
    assert "nosuchfs://" in output and "neither pyarrow nor fsspec" in output


def test_hf_without_its_package_names_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    """The Hub cannot be reached here: only the message when huggingface_hub is missing."""

    def missing(*args, **kwargs):
        raise ImportError("Install huggingface_hub to access HfFileSystem")

    monkeypatch.setattr(fsspec, "url_to_fs", missing)
    monkeypatch.setattr(fsspec.core, "url_to_fs", missing)
    with pytest.raises(OSError, match=r"hf://.*huggingface_hub"):
        filesystem("hf://datasets/someone/corpus/data", StorageOptions())
