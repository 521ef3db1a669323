"""JSON Lines inputs: plain, gzip and zstd; broken lines are bad rows with their line numbers;
byte-range shards resume after a killed worker; the cache redoes nothing unchanged."""

from __future__ import annotations

import gzip
import io
import json
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok.runner.inputs import files as inputs_module
from batchtok.runner.inputs import jsonl as jsonl_module
from batchtok.runner.inputs.jsonl import is_row, iter_lines, output_name, scan_blocks
from tests.support.runner import (
    REPO,
    SAMPLE,
    basic_job,
    invoke,
    kill_worker_on_shard,
    oracle_ids,
    summary,
    texts,
    visible_files,
    write_parquet,
)
from tests.support.tier import examples

PARENT = os.getpid()


def _lines(docs: list[str]) -> list[str]:
    return [json.dumps({"id": i, "text": t, "meta": {"n": i}}) for i, t in enumerate(docs)]


def _write(path: Path, lines: list[str], codec: str | None = None) -> Path:
    data = ("\n".join(lines) + "\n").encode()
    path.parent.mkdir(parents=True, exist_ok=True)
    if codec == "gzip":
        data = gzip.compress(data)
    if codec == "zstd":
        with pa.CompressedOutputStream(str(path), "zstd") as out:
            out.write(data)
    else:
        path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("name", "codec"), [("a.jsonl", None), ("a.jsonl.gz", "gzip"), ("a.json.zst", "zstd")]
)
def test_each_compression_gives_the_oracles_ids_and_keeps_the_fields(
    tmp_path: Path, name: str, codec: str | None
) -> None:
    docs = texts(120, seed=4)
    path = _write(tmp_path / "in" / name, _lines(docs), codec)
    # named: a directory picks JSON Lines by .jsonl or .ndjson, a .json file only when named
    job = basic_job(
        tmp_path, input__paths=[str(path)], output__keep_columns=["id", "text", "meta", "absent"]
    )
    code, output = invoke("run", job)
    assert code == 0, output
    table = pq.read_table(tmp_path / "out" / "a.parquet")
    assert table["input_ids"].to_pylist() == oracle_ids(docs)
    assert table["text"].to_pylist() == docs
    assert table["id"].to_pylist() == [str(i) for i in range(len(docs))]  # JSON text
    assert table["meta"].to_pylist()[3] == '{"n": 3}'
    assert table["absent"].null_count == len(docs)
    assert summary(tmp_path / "out")["rows"]["read"] == len(docs)


def test_broken_lines_are_bad_rows_named_by_line_and_the_rest_is_written(tmp_path: Path) -> None:
    docs = texts(30, seed=5)
    lines = _lines(docs)
    lines[3] = "{broken"
    lines[5] = json.dumps({"id": 5})
    lines[7] = json.dumps({"text": 12})
    lines[9] = json.dumps({"text": "\ud800"})  # valid JSON, not text
    lines[11] = '["a list"]'
    raw = "\n".join(lines[:20]) + "\n\n  \n" + "\n".join(lines[20:]) + "\n"  # two blank lines
    data = raw.encode().replace(b'"id": 13,', b'"id": 13, "x": "\xff",')  # invalid UTF-8
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "a.jsonl").write_bytes(data)
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 3, output
    for line, reason in [
        (4, "not JSON"),
        (6, "no field 'text'"),
        (8, "field 'text' holds a number, not a string"),
        (10, "field 'text' holds a lone surrogate"),
        (12, "an array, not a JSON object"),
        (14, "invalid UTF-8"),
    ]:
        assert f"line {line}: {reason}" in output
    assert "line 23" not in output  # blank lines are not rows, and not bad
    ids = pq.read_table(tmp_path / "out" / "a.parquet")["input_ids"].to_pylist()
    bad = {3, 5, 7, 9, 11, 13}
    assert len(ids) == len(docs)
    assert [i for i, row in enumerate(ids) if row is None] == sorted(bad)
    good = [d for i, d in enumerate(docs) if i not in bad]
    assert [row for row in ids if row is not None] == oracle_ids(good)
    assert summary(tmp_path / "out")["bad_rows"]["count"] == len(bad)


def test_byte_range_shards_resume_after_a_killed_worker_and_the_cache_holds(
    tmp_path: Path, monkeypatch
) -> None:
    docs = texts(600, seed=6, max_words=60)
    _write(tmp_path / "in" / "big.jsonl", _lines(docs))
    # blocks of 64 kB, shards of ~one block: several parts, joined at the end
    job = basic_job(tmp_path, run__shard_mb=0.07)
    out = tmp_path / "out"
    kill_worker_on_shard("big.parquet#1", monkeypatch, PARENT)
    code, output = invoke("run", job)
    assert code == 1, output
    assert "shard big.parquet#1" in output and visible_files(out) == []
    total = summary(out)["shards"]["total"]
    assert total >= 3
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 0, output
    assert summary(out)["shards"]["done"] == 1  # only the shard that died
    assert pq.read_table(out / "big.parquet")["input_ids"].to_pylist() == oracle_ids(docs)
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output
    # an edit in the last lines re-encodes the last shard only
    lines = _lines(docs)
    lines[-1] = json.dumps({"id": -1, "text": "changed"})
    _write(tmp_path / "in" / "big.jsonl", lines)
    code, output = invoke("run", job)
    assert code == 0, output
    assert summary(out)["shards"]["done"] == 1
    want = oracle_ids(docs[:-1] + ["changed"])
    assert pq.read_table(out / "big.parquet")["input_ids"].to_pylist() == want


def test_a_jsonl_and_a_parquet_file_of_one_name_are_refused(tmp_path: Path) -> None:
    _write(tmp_path / "in" / "a.jsonl", _lines(["x"]))
    pq.write_table(pa.table({"text": ["y"]}), tmp_path / "in" / "a.parquet")
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 2, output
    assert "would both be written to a.parquet" in output


def test_the_example_jsonl_job_gives_the_example_jobs_rows(tmp_path: Path) -> None:
    job = REPO / "jobs" / "example-jsonl.toml"
    code, output = invoke("run", job, "--set", f"output.dir={json.dumps(str(tmp_path))}")
    assert code == 0, output
    table = pq.read_table(tmp_path / "sample.parquet")
    want = pq.read_table(SAMPLE)
    assert table.column_names == ["id", "kind", "text", "input_ids", "num_tokens"]
    assert table["text"].to_pylist() == want["text"].to_pylist()
    assert table["id"].to_pylist() == [str(i) for i in want["id"].to_pylist()]
    assert table["input_ids"].to_pylist() == oracle_ids(want["text"].to_pylist())


def test_output_names() -> None:
    assert output_name("a/b.jsonl") == "a/b.parquet"
    assert output_name("a/b.json.gz") == "a/b.parquet"
    assert output_name("b.ndjson.zst") == "b.parquet"
    assert output_name("b.parquet") == "b.parquet"


_LINE = st.text(st.sampled_from('ab{}" \t\r'), max_size=12)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(_LINE, max_size=40), st.integers(1, 30), st.booleans())
def test_blocks_tile_the_file_at_line_breaks_and_count_its_rows(
    lines: list[str], block: int, final_break: bool
) -> None:
    data = "\n".join(lines).encode() + (b"\n" if final_break and lines else b"")
    blocks = scan_blocks(io.BytesIO(data), None, block)
    assert b"".join(data[b.offset : b.offset + b.length] for b in blocks) == data
    assert all(data[b.offset + b.length - 1 : b.offset + b.length] == b"\n" for b in blocks[:-1])
    assert [b.offset for b in blocks] == sorted({b.offset for b in blocks})
    rows = [line for line in iter_lines(io.BytesIO(data)) if is_row(line)]
    assert sum(b.rows for b in blocks) == len(rows)
    for b in blocks:  # each block's first line number is its place in the file
        assert b.first_line == data[: b.offset].count(b"\n") + 1


def test_a_rerun_plans_from_the_remembered_blocks_until_the_file_changes(
    tmp_path: Path, monkeypatch
) -> None:
    docs = texts(300, seed=10, max_words=60)
    path = _write(tmp_path / "in" / "a.jsonl", _lines(docs))
    job = basic_job(tmp_path, run__shard_mb=0.07)
    code, output = invoke("run", job)
    assert code == 0, output
    scans = []
    original = jsonl_module.scan_blocks

    def counting(*args, **kwargs):
        scans.append(args)
        return original(*args, **kwargs)

    monkeypatch.setattr(inputs_module, "scan_blocks", counting)
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output and scans == [], output
    with open(path, "a", encoding="utf-8") as f:  # a new line: the file is read again
        f.write(json.dumps({"text": "one more"}) + "\n")
    code, output = invoke("run", job)
    assert code == 0 and len(scans) == 1, output
    table = pq.read_table(tmp_path / "out" / "a.parquet")
    assert table["input_ids"].to_pylist() == oracle_ids([*docs, "one more"])


def test_plan_hashes_a_jsonl_file_by_its_blocks_as_a_run_does(tmp_path: Path) -> None:
    docs = texts(600, seed=8, max_words=60)
    _write(tmp_path / "in" / "big.jsonl", _lines(docs))
    job = basic_job(tmp_path, run__shard_mb=0.07)
    code, before = invoke("plan", job, "--json")
    assert code == 0, before
    planned = json.loads(before)
    assert (
        planned["shards"]["total"] >= 2 and planned["shards"]["to do"] == planned["shards"]["total"]
    )
    code, output = invoke("run", job)
    assert code == 0, output
    code, after = invoke("plan", job, "--json")
    assert code == 0, after
    done = json.loads(after)
    assert done["shards"]["total"] == planned["shards"]["total"]
    assert done["shards"].get("to do", 0) == 0


@pytest.mark.parametrize("codec", [None, "gzip"])
def test_a_line_of_a_form_feed_or_vertical_tab_is_one_bad_row_and_the_rest_is_written(
    tmp_path: Path, codec: str | None
) -> None:
    docs = texts(14, seed=11)
    lines = _lines(docs)
    odd = {2: "\x0c", 5: "\x0b", 8: " \x0c\t", 10: "\x1c", 12: "\x00"}  # no JSON, not blank
    for i, line in odd.items():
        lines[i] = line
    # characters str.splitlines breaks at are no line break here: each of these is one row
    docs[3] = "a\u2028b\x85c\u2029d\x1ee"
    lines[3] = json.dumps({"text": docs[3]}, ensure_ascii=False) + "\r"  # and a CRLF line end
    lines[6] = json.dumps({"text": docs[6]}) + "\x0c"  # not JSON either
    odd[6] = lines[6]
    _write(tmp_path / "in" / ("a.jsonl.gz" if codec else "a.jsonl"), lines, codec)
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 3, output
    for i in odd:
        assert f"line {i + 1}: not JSON" in output
    ids = pq.read_table(tmp_path / "out" / "a.parquet")["input_ids"].to_pylist()
    assert [i for i, row in enumerate(ids) if row is None] == sorted(odd)
    good = [d for i, d in enumerate(docs) if i not in odd]
    assert [row for row in ids if row is not None] == oracle_ids(good)
    assert summary(tmp_path / "out")["bad_rows"]["count"] == len(odd)


def test_a_line_nested_past_the_recursion_limit_is_read_as_json(tmp_path: Path) -> None:
    docs = texts(6, seed=12)
    lines = _lines(docs)
    depth = 100_000
    deep = "[" * depth + "]" * depth
    lines[1] = json.dumps({"text": docs[1]})[:-1] + ', "meta": ' + deep + "}"  # a good row
    lines[2] = deep  # valid JSON, but no object
    lines[4] = '{"text": "x", "meta": ' + "[" * depth + "}"  # not JSON
    _write(tmp_path / "in" / "a.jsonl", lines)
    code, output = invoke("run", basic_job(tmp_path, output__keep_columns=["text", "meta"]))
    assert code == 3, output
    assert "line 3: an array, not a JSON object" in output
    assert "line 5: not JSON" in output
    table = pq.read_table(tmp_path / "out" / "a.parquet")
    assert table["meta"].to_pylist()[1] == deep  # kept as its JSON text, as json.dumps gives it
    ids = table["input_ids"].to_pylist()
    assert [i for i, row in enumerate(ids) if row is None] == [2, 4]
    assert [row for row in ids if row is not None] == oracle_ids([docs[i] for i in (0, 1, 3, 5)])


def _zstd(data: bytes) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.CompressedOutputStream(sink, "zstd") as out:
        out.write(data)
    return sink.getvalue().to_pybytes()


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("a.jsonl", b""),
        ("a.jsonl", b"\n \r\n\t\n"),
        ("a.jsonl.gz", b""),
        ("a.jsonl.gz", gzip.compress(b"", mtime=0)),
        ("a.jsonl.zst", b""),
        ("a.jsonl.zst", _zstd(b"")),
    ],
)
def test_an_empty_file_is_an_input_with_no_rows(tmp_path: Path, name: str, data: bytes) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / name).write_bytes(data)
    job = basic_job(tmp_path)
    code, output = invoke("plan", job)
    assert code == 0 and "1 files, 1 shards: 1 to do" in output, output
    code, output = invoke("run", job)
    assert code == 0, output
    table = pq.read_table(tmp_path / "out" / "a.parquet")
    assert table.num_rows == 0 and summary(tmp_path / "out")["rows"]["read"] == 0
    # the output an input Parquet file with no rows (and only a text column) gets
    write_parquet(tmp_path / "parquet" / "in" / "a.parquet", [])
    code, output = invoke("run", basic_job(tmp_path / "parquet", output__keep_columns=["text"]))
    assert code == 0, output
    want = pq.read_table(tmp_path / "parquet" / "out" / "a.parquet")
    assert [(f.name, f.type) for f in table.schema] == [(f.name, f.type) for f in want.schema]
    code, output = invoke("run", job)
    assert code == 0 and "nothing to do" in output, output


_STREAM = b'{"text": "a"}\n' * 2000


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("a.jsonl.gz", gzip.compress(_STREAM, mtime=0)[:-30]),
        ("a.jsonl.gz", b"\x1f\x8b not gzip"),
        ("a.jsonl.zst", _zstd(_STREAM)[:-10]),
        ("a.jsonl.zst", b"not zstd at all"),
    ],
    # the same ids in every pytest-xdist worker (a gzip stream holds its time of writing)
    ids=["truncated-gzip", "corrupt-gzip", "truncated-zstd", "corrupt-zstd"],
)
def test_a_truncated_or_corrupt_compressed_file_is_refused_naming_it(
    tmp_path: Path, name: str, data: bytes
) -> None:
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / name
    path.write_bytes(data)
    for command in ("plan", "run"):
        code, output = invoke(command, basic_job(tmp_path))
        assert code == 2, output
        assert f"cannot read {path}: " in output and "Traceback" not in output, output
