"""The typed records (batchtok/runner/plan/records.py): written as earlier versions wrote
them, read back equal, and lenient field by field: a value of the wrong type is read as
absent (a record only saves work; it is never trusted against the outputs themselves)."""

from __future__ import annotations

import json

from batchtok.runner.plan.keys import CACHE_FORMAT, RowGroupHash
from batchtok.runner.plan.records import FileRecord, InputMemo, OutputRecord, Records

WELL_FORMED = {
    "format": CACHE_FORMAT,
    "input": {
        "path": "/data/a.parquet",
        "stat": {"size": 10, "mtime_ns": 1, "ctime_ns": 2, "inode": 3},
        "spec": {"columns": ["text"]},
        "row_groups": [["ab", 2, 0, 9]],
        "jsonl": {"block_bytes": 8, "blocks": [[0, 10, 2, 0, 9]]},
    },
    "output": {
        "stat": {"size": 5},
        "files": {"a.parquet": {"size": 5}},
        "xxh3_128": {"a.parquet": "ff"},
        "keys": ["k1", "k2"],
        "bad_rows": {"k1": 3},
        "token_stats": {"k1": {"documents": 2}},
    },
    "owned": ["a.parquet"],
}


def test_a_record_reads_back_as_it_was_written(tmp_path):
    record = FileRecord.from_json(WELL_FORMED)
    assert isinstance(record.input, InputMemo) and isinstance(record.output, OutputRecord)
    assert record.to_json() == WELL_FORMED
    records = Records(tmp_path)
    records.save("sub/a.parquet", record)
    on_disk = json.loads((tmp_path / "records" / "sub" / "a.parquet.json").read_text())
    assert on_disk == WELL_FORMED
    assert records.load("sub/a.parquet") == record
    assert list(records.all_rels()) == ["sub/a.parquet"]


def test_a_record_of_another_version_or_no_record_is_empty(tmp_path):
    assert FileRecord.from_json({**WELL_FORMED, "format": CACHE_FORMAT + 1}) == FileRecord()
    assert FileRecord.from_json(["not", "a", "record"]) == FileRecord()
    assert Records(tmp_path).load("missing.parquet") == FileRecord()
    (tmp_path / "records").mkdir()
    (tmp_path / "records" / "bad.parquet.json").write_text("{not json")
    assert Records(tmp_path).load("bad.parquet") == FileRecord()


def test_fields_of_the_wrong_type_are_read_as_absent():
    odd = {
        "format": CACHE_FORMAT,
        "input": ["a list"],
        "output": {
            "files": "not a dict",
            "xxh3_128": {"a": 1, "b": "ok"},
            "bad_rows": {"k": -4, "j": True, "i": 7},
        },
        "owned": ["a.parquet", 3, None],
    }
    record = FileRecord.from_json(odd)
    assert record.input is None
    assert record.output is not None and record.output.files is None
    assert record.output.xxh3_128 == {"b": "ok"}
    assert record.output.bad_rows == {"k": 0, "j": 0, "i": 7}
    assert record.output.bad_rows_of(["i", "z"]) == {"i": 7, "z": 0}
    assert record.owned == ["a.parquet"]


def test_remembered_hashes_hold_only_under_the_same_stat_and_spec():
    memo = FileRecord.from_json(WELL_FORMED).input
    assert memo is not None
    stat, spec = WELL_FORMED["input"]["stat"], WELL_FORMED["input"]["spec"]
    assert memo.hashes(stat, spec) == [RowGroupHash("ab", 2, 0, 9)]
    assert memo.hashes({**stat, "size": 11}, spec) is None
    assert memo.hashes(stat, {"columns": ["other"]}) is None
    assert InputMemo("p", stat, spec, [["too", "short"]]).hashes(stat, spec) is None


def test_the_units_record_round_trips_and_refuses_another_version() -> None:
    from batchtok.runner.plan.records import UNITS_FORMAT, UnitFileRecord, UnitsRecord

    record = UnitsRecord(["job-00001.bin", "job-00000.bin"], {
        "job-00000.idx": UnitFileRecord("k" * 32, {"job-00000.idx": {"size": 3}}, {"a": "b"}),
    })  # fmt: skip
    doc = record.to_json()
    assert doc["format"] == UNITS_FORMAT and doc["owned"] == ["job-00000.bin", "job-00001.bin"]
    back = UnitsRecord.from_json(doc)
    assert back.to_json() == doc
    assert UnitsRecord.from_json({**doc, "format": UNITS_FORMAT + 1}) == UnitsRecord()
    broken = {**doc, "files": {"x": {"key": 3}, "y": "no"}, "owned": ["a", 4]}
    assert UnitsRecord.from_json(broken) == UnitsRecord(["a"], {})
