"""``batchtok audit``: a finished job's ids compared with `tokenizers`' on a sample, in every
output format. A clean output passes; one id changed in the written file is found with its
file, row and position; the sample is the seed's; the job's pairs and truncation are the
oracle's too; without `tokenizers` the command refuses in one line naming the extra; the
text-file mode finds a wrong id batchtok gave; and a job reading from and writing to S3 is
audited as a local one is."""

from __future__ import annotations

import bisect
import json
import os
import random
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import batchtok
from batchtok.formats import datatrove, mds, megatron
from batchtok.formats import files as files_module
from batchtok.runner import audit as audit_module
from batchtok.runner.audit import Stratum, draw_sample
from batchtok.runner.outputs.formats import FORMATS
from tests.support.fixtures import fixture_path
from tests.support.runner import (
    EXAMPLE_JOB,
    GPT2,
    REPO,
    basic_job,
    invoke,
    oracle_ids,
    texts,
    write_parquet,
)
from tests.support.s3 import bucket, moto_server, s3_client, upload_tree

ALL = "1000000"  # a sample larger than any input here: every row is checked


def _inputs(tmp_path: Path) -> dict[str, list[str | None]]:
    """Two input files, one cut into several shards, with a null row and an empty one."""
    a = texts(90, seed=11)
    a[5] = None
    a[6] = ""
    b = texts(25, seed=12)
    write_parquet(tmp_path / "in" / "a.parquet", a, row_group_size=15)
    write_parquet(tmp_path / "in" / "b.parquet", b, row_group_size=25)
    return {"a": a, "b": b}


def _run(tmp_path: Path, **settings) -> Path:
    job = basic_job(tmp_path, run__shard_mb=0.002, **settings)
    code, output = invoke("run", job)
    assert code in (0, 3), output
    return job


def _audit(job: Path, *args: str) -> tuple[int, str]:
    return invoke("audit", job, *args)


def _report(job: Path, *args: str) -> dict:
    code, output = _audit(job, "--json", *args)
    report = json.loads(output)
    assert code == (0 if report["ok"] else 1)
    return report


# -- planting one wrong id ------------------------------------------------------------------


def _other(token_id: int) -> int:
    return (token_id + 1) % 50000


def _plant_in_parquet(path: Path, row: int, position: int) -> tuple[int, int]:
    """Rewrite ``path`` with the id at (row, position) of its ids column changed, row groups
    and metadata kept; returns (old id, new id)."""
    pf = pq.ParquetFile(path)
    schema = pf.schema_arrow
    name = "input_ids"  # the ids column (packed rows carry seq_lens after the count)
    groups = [pf.read_row_group(i) for i in range(pf.metadata.num_row_groups)]
    at = row
    old = new = -1
    with pq.ParquetWriter(str(path) + ".tmp", schema, write_page_checksum=True) as writer:
        for table in groups:
            if 0 <= at < table.num_rows:
                rows = table.column(name).to_pylist()
                old = rows[at][position]
                new = rows[at][position] = _other(old)
                column = pa.array(rows, schema.field(name).type)
                table = table.set_column(schema.names.index(name), schema.field(name), column)
            at -= table.num_rows
            writer.write_table(table, row_group_size=table.num_rows)
    os.replace(str(path) + ".tmp", path)
    assert old >= 0
    return old, new


def _flip_a_byte_of_the_ids(path: Path) -> None:
    """Flip one byte in the middle of the ids column's first page (its checksum now fails)."""
    group = pq.read_metadata(path).row_group(0)
    columns = [group.column(i) for i in range(group.num_columns)]
    (column,) = [c for c in columns if c.path_in_schema.startswith("input_ids")]
    with open(path, "r+b") as f:
        f.seek(column.data_page_offset + column.total_compressed_size // 2)
        byte = f.read(1)
        f.seek(-1, os.SEEK_CUR)
        f.write(bytes([byte[0] ^ 0x5A]))


def _plant_in_bytes(path: Path, token: int, itemsize: int = 2) -> tuple[int, int]:
    """Overwrite token number ``token`` of a trainer format's data file in place."""
    with open(path, "r+b") as f:
        f.seek(token * itemsize)
        (old,) = struct.unpack("<H", f.read(itemsize))
        new = _other(old)
        f.seek(token * itemsize)
        f.write(struct.pack("<H", new))
    return old, new


def _document_offset(documents: list[list[int]], document: int) -> int:
    return sum(len(d) for d in documents[:document])


def _documents(rows: list[str | None], eos: bool, bad_rows: str) -> list[list[int]]:
    """The documents the oracle gives ``rows`` as the runner writes them (EOS appended, the
    null rows dropped unless ``empty_ids``): the independent reading of an output."""
    encoded = iter(oracle_ids([t for t in rows if t is not None]))
    per_row = [None if t is None else next(encoded) for t in rows]
    per_row = [ids + [50256] if eos and ids else ids for ids in per_row]
    if bad_rows != "empty_ids":
        return [ids for ids in per_row if ids is not None]
    return [[] if ids is None else ids for ids in per_row]


CASES = [
    ("parquet", None, "null_ids"),
    ("parquet", None, "skip"),
    ("parquet", 64, "null_ids"),
    ("megatron", None, "null_ids"),
    ("datatrove", None, "empty_ids"),
    ("megatron", 64, "null_ids"),
]


@pytest.mark.parametrize(("format", "pack", "bad_rows"), CASES)
def test_a_clean_output_passes_and_one_planted_wrong_id_is_found(
    tmp_path: Path, format: str, pack: int | None, bad_rows: str, monkeypatch
) -> None:
    monkeypatch.setattr(audit_module, "BATCH_ROWS", 16)  # documents found across batches
    rows = _inputs(tmp_path)
    settings: dict = {"output__format": format, "run__bad_rows": bad_rows}
    if format != "parquet" or pack:
        settings["output__append_eos"] = True
    if pack:
        settings["output__pack_length"] = pack
    job = _run(tmp_path, **settings)
    report = _report(job, "--sample", ALL)
    assert report["ok"], report
    assert report["rows_checked"] == report["rows_equal"] == 115
    assert report["tokenizers_version"] == "0.23.3"
    assert _report(job, "--sample", "10")["ok"]  # a sample: every file and shard drawn

    # the independent check: what the format's own reader gives is the oracle's, so the audit
    # had something right to pass on
    documents = _documents(rows["a"], format != "parquet" or bool(pack), bad_rows)
    out = tmp_path / "out"
    row = 40  # the planted id: input row 40 of a.parquet, position 3 of its ids
    position = 3
    document = row - (bad_rows != "empty_ids")  # the null row 5 is no document (unless empty)
    offset = _document_offset(documents, document) + position  # of the id in the token stream
    if format == "parquet" and not pack:
        output_row = row if bad_rows == "null_ids" else document
        old, new = _plant_in_parquet(out / "a.parquet", output_row, position)
        where = f"row {output_row}"
    elif format == "parquet":
        old, new = _plant_in_parquet(out / "a.parquet", offset // pack, offset % pack)
        start = offset - position
        where = f"packed row {start // pack} position {start % pack}"
    else:
        path = out / ("a.bin" if format == "megatron" else "a.ds")
        keeps_empty = FORMATS[format].keeps_empty_documents  # datatrove: no empty document
        if not pack:  # the format's own reader: the documents are the oracle's plus EOS
            reader = (
                megatron.read_documents(str(out / "a"))
                if format == "megatron"
                else datatrove.read_documents(str(path))
            )
            assert [d.tolist() for d in reader] == [d for d in documents if d or keeps_empty]
        old, new = _plant_in_bytes(path, offset)
        number = document if keeps_empty else sum(1 for d in documents[:document] if d)
        where = f"token {offset - position} of {path.name}" if pack else f"document {number}"
    code, output = _audit(job, "--sample", ALL)
    assert code == 1, output
    lines = [line for line in output.splitlines() if line.startswith("mismatch:")]
    assert len(lines) == 1, output
    written_file = {"parquet": "a.parquet", "megatron": "a.idx", "datatrove": "a.ds"}[format]
    assert f"/out/{written_file} row {row} " in lines[0]
    assert where in lines[0] and f"position {position}:" in lines[0]
    assert f"written {new} " in lines[0] and f"tokenizers {old} " in lines[0]
    assert "rows checked: 115, rows equal: 114" in output


@pytest.mark.parametrize(
    ("pack", "bad_rows"), [(None, "null_ids"), (None, "empty_ids"), (64, "null_ids")]
)
def test_an_mds_output_is_audited_through_its_samples_across_shards(
    tmp_path: Path, pack: int | None, bad_rows: str, monkeypatch
) -> None:
    """MDS leaves empty documents out (the empty row 6; under empty_ids the null row 5 too):
    the audit finds each row's sample past them, across shards, and one planted wrong id."""
    monkeypatch.setattr(audit_module, "BATCH_ROWS", 16)
    monkeypatch.setattr(mds, "SIZE_LIMIT", 1 << 10)  # 1 kB shards: many of them
    rows = _inputs(tmp_path)
    settings: dict = {"output__format": "mds", "run__bad_rows": bad_rows}
    settings["output__append_eos"] = True
    if pack:
        settings["output__pack_length"] = pack
    job = _run(tmp_path, **settings)
    out = tmp_path / "out" / "a.mds"
    assert len(list(out.glob("shard.*.mds"))) > 3
    report = _report(job, "--sample", ALL)
    assert report["ok"], report
    assert report["rows_checked"] == report["rows_equal"] == 115
    documents = _documents(rows["a"], True, bad_rows)
    if not pack:  # the format's own reader: the non-empty documents, the oracle's plus EOS
        assert [d.tolist() for d in mds.read_documents(str(out))] == [d for d in documents if d]
    row, position = 40, 3
    offset = _document_offset(documents, row - (bad_rows != "empty_ids")) + position
    tokens = mds.MdsTokens(str(out))
    sample = bisect.bisect_right(tokens.starts, offset) - 1
    shard = out / tokens.names[tokens.shard[sample]]
    at = tokens.byte[sample] + (offset - tokens.starts[sample]) * 4
    data = bytearray(shard.read_bytes())
    (old,) = struct.unpack_from("<i", data, at)
    new = _other(old)
    struct.pack_into("<i", data, at, new)
    shard.write_bytes(bytes(data))
    code, output = _audit(job, "--sample", ALL)
    assert code == 1, output
    lines = [line for line in output.splitlines() if line.startswith("mismatch:")]
    assert len(lines) == 1, output
    assert f"/out/a.mds/index.json row {row} " in lines[0]
    assert f"of {shard.name})" in lines[0] and f"position {position}:" in lines[0]
    assert f"written {new} " in lines[0] and f"tokenizers {old} " in lines[0]
    assert "rows checked: 115, rows equal: 114" in output


def test_a_flipped_byte_in_a_parquet_output_is_a_failure_naming_its_row_group(
    tmp_path: Path,
) -> None:
    _inputs(tmp_path)
    job = _run(tmp_path, output__compression="none")
    _flip_a_byte_of_the_ids(tmp_path / "out" / "b.parquet")
    code, output = _audit(job, "--sample", ALL)
    assert code == 1
    assert "b.parquet row group 0 does not read back whole" in output, output
    assert "its row group cannot be read" in output or "ids differ" in output


def test_a_document_length_changed_in_the_index_is_a_mismatch(tmp_path: Path) -> None:
    rows = _inputs(tmp_path)
    row_of = [i for i, text in enumerate(rows["a"]) if text]  # datatrove's documents: no empty
    job = _run(tmp_path, output__format="datatrove", output__append_eos=True)
    index = tmp_path / "out" / "a.ds.index"
    ends = list(struct.unpack(f"<{index.stat().st_size // 8}Q", index.read_bytes()))
    ends[20] += 1  # document 20 one token longer, document 21 one shorter: sizes unchanged
    index.write_bytes(struct.pack(f"<{len(ends)}Q", *ends))
    code, output = _audit(job, "--sample", ALL)
    assert code == 1
    mismatches = [line for line in output.splitlines() if line.startswith("mismatch:")]
    assert len(mismatches) == 2, output
    assert f"a.ds row {row_of[20]} (document 20, " in mismatches[0], output
    assert "ids written" in mismatches[0]
    assert f"a.ds row {row_of[21]} (document 21, " in mismatches[1], output


def test_the_example_job_passes_and_the_sample_is_the_seed_s(tmp_path: Path) -> None:
    out = json.dumps(str(tmp_path / "out"))
    assert invoke("run", EXAMPLE_JOB, "--set", f"output.dir={out}")[0] == 0
    first = _report(EXAMPLE_JOB, "--set", f"output.dir={out}", "--sample", "40", "--seed", "5")
    again = _report(EXAMPLE_JOB, "--set", f"output.dir={out}", "--sample", "40", "--seed", "5")
    other = _report(EXAMPLE_JOB, "--set", f"output.dir={out}", "--sample", "40", "--seed", "6")
    rows = first["files"][0]["rows"]
    assert first["ok"] and len(rows) == 40 == first["rows_checked"]
    assert again["files"][0]["rows"] == rows
    assert other["files"][0]["rows"] != rows
    code, output = _audit(EXAMPLE_JOB, "--set", f"output.dir={out}")
    assert code == 0, output
    assert "453 rows checked, 453 equal" in output


def test_a_json_lines_job_is_audited_by_its_line_rows(tmp_path: Path) -> None:
    job = REPO / "jobs" / "example-jsonl.toml"
    out = json.dumps(str(tmp_path / "out"))
    assert invoke("run", job, "--set", f"output.dir={out}")[0] in (0, 3)
    report = _report(job, "--set", f"output.dir={out}", "--sample", "50")
    assert report["ok"] and report["rows_checked"] == 50


def test_the_sample_is_stratified_over_every_shard_and_reproducible() -> None:
    strata = [Stratum("a", 0, 500), Stratum("a", 500, 3), Stratum("b", 0, 97), Stratum("c", 0, 0)]
    sample = draw_sample(strata, 60, seed=1)
    assert sum(map(len, sample.values())) == 60
    assert any(500 <= r < 503 for r in sample["a"]) and sample["b"]  # every shard is drawn
    assert all(0 <= r < 503 for r in sample["a"]) and all(0 <= r < 97 for r in sample["b"])
    assert len(set(sample["a"])) == len(sample["a"])
    assert draw_sample(strata, 60, seed=1) == sample != draw_sample(strata, 60, seed=2)
    assert draw_sample(strata, 10_000, seed=1) == {"a": list(range(503)), "b": list(range(97))}
    small = draw_sample(strata, 2, seed=3)  # fewer rows than shards: one per file first
    assert sorted(small) == ["a", "b"] and sum(map(len, small.values())) == 2


MINILM = fixture_path("minilm")  # truncation (128) and padding in the file; BERT pairs


def test_pairs_and_truncation_are_the_job_s(tmp_path: Path) -> None:
    text = texts(60, seed=21, max_words=200)
    pair = texts(60, seed=22, max_words=30)
    pair[3] = None  # a bad row
    write_parquet(tmp_path / "in" / "p.parquet", text, extra={"question": pair})
    common = {"tokenizer__path": str(MINILM), "input__pair_column": "question"}
    job = _run(tmp_path, **common)  # the file's truncation (128)
    assert _report(job, "--sample", ALL)["ok"]

    # a numeric truncation whose only_second refuses some rows (bad rows, as in tokenizers)
    job = _run(
        tmp_path,
        **common,
        encode__max_length=40,
        encode__truncation_strategy="only_second",
        output__dir=str(tmp_path / "out40"),
    )
    report = _report(job, "--sample", ALL)
    assert report["ok"], report
    assert report["files"][0]["bad_rows"] > 1  # the null pair and rows tokenizers refuses
    # audited under other options than those the job ran with: said, and the ids differ
    code, output = _audit(job, "--sample", ALL, "--set", "encode.max_length=60")
    assert code == 1
    assert "was written with encode.truncation " in output and "mismatch:" in output


_BLOCKED = """
import sys
sys.modules["tokenizers"] = None  # import tokenizers now raises ImportError
from batchtok.cli import main
sys.argv = ["batchtok", *sys.argv[1:]]
main()
"""


def test_without_tokenizers_audit_refuses_in_one_line_and_run_still_works(
    tmp_path: Path,
) -> None:
    _inputs(tmp_path)
    job = basic_job(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(REPO)}

    def batchtok_cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-c", _BLOCKED, *args], capture_output=True, text=True, env=env
        )

    ran = batchtok_cli("run", str(job), "-q")
    assert ran.returncode == 3, ran.stderr  # done, with the null row as a bad row
    for args in ([str(job)], ["-t", str(GPT2), str(tmp_path / "job.toml")]):
        refused = batchtok_cli("audit", *args)
        assert refused.returncode == 2
        assert refused.stdout == ""
        assert len(refused.stderr.strip().splitlines()) == 1, refused.stderr
        assert "pip install 'batchtok[audit]'" in refused.stderr


def test_the_text_file_mode_finds_a_wrong_id_from_batchtok(tmp_path: Path, monkeypatch) -> None:
    lines = [t for t in texts(40, seed=31) if "\n" not in t and "\r" not in t]
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    write_parquet(tmp_path / "t.parquet", [*lines, None], text_column="body")
    code, output = invoke("audit", "-t", GPT2, corpus)
    assert code == 0, output
    assert f"{len(lines)} rows checked, {len(lines)} equal" in output
    code, output = invoke("audit", "-t", GPT2, tmp_path / "t.parquet", "--column", "body")
    assert code == 0, output

    target = 7
    original = batchtok.Tokenizer.encode_batch_ids

    def wrong(self, inputs, *args, **kwargs):
        ids = original(self, inputs, *args, **kwargs)
        return [
            [*row[:2], _other(row[2]), *row[3:]] if text == lines[target] else row
            for text, row in zip(inputs, ids)
        ]

    assert len(oracle_ids([lines[target]])[0]) > 2
    monkeypatch.setattr(batchtok.Tokenizer, "encode_batch_ids", wrong)
    code, output = invoke("audit", "-t", GPT2, corpus, "--sample", ALL)
    assert code == 1, output
    mismatch = [line for line in output.splitlines() if line.startswith("mismatch:")]
    assert len(mismatch) == lines.count(lines[target])
    assert f"(line {target + 1}) position 2:" in mismatch[0]


# -- inputs and outputs in object storage ----------------------------------------------------


@pytest.fixture(scope="module")
def endpoint() -> Iterator[str]:
    with moto_server() as url:
        yield url


def _plant_in_object(
    endpoint: str, name: str, key: str, tmp: Path, plant: Callable[[Path], Any]
) -> Any:
    """Rewrite the object ``key`` of bucket ``name`` by ``plant`` applied to a local copy;
    what ``plant`` returns."""
    s3 = s3_client(endpoint)
    local = tmp / key.replace("/", "_")
    local.write_bytes(s3.get_object(Bucket=name, Key=key)["Body"].read())
    changed = plant(local)
    s3.put_object(Bucket=name, Key=key, Body=local.read_bytes())
    return changed


@pytest.mark.parametrize("format", ["parquet", "megatron"])
def test_a_job_read_from_and_written_to_s3_passes_and_a_planted_wrong_id_is_found(
    tmp_path: Path, endpoint: str, format: str, monkeypatch
) -> None:
    monkeypatch.setattr(audit_module, "BATCH_ROWS", 16)
    rows = _inputs(tmp_path)
    local_in = tmp_path / "in"
    (local_in / "b.parquet").unlink()  # b as JSON Lines: both readers take their text from S3
    lines = [json.dumps({"text": t}) for t in rows["b"]]
    (local_in / "b.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    name = f"audit-{format}"
    fs = bucket(endpoint, name)
    upload_tree(fs, local_in, f"{name}/corpus")
    upload_tree(fs, GPT2.parent, f"{name}/tokenizer")  # the oracle loads it from S3 too
    shutil.rmtree(local_in)  # the text is in the bucket only
    eos = format != "parquet"
    job = basic_job(
        tmp_path,
        input__paths=[f"s3://{name}/corpus/"],
        output__dir=f"s3://{name}/tokens/",
        tokenizer__path=f"s3://{name}/tokenizer/tokenizer.json",
        storage__endpoint=endpoint,
        output__format=format,
        output__append_eos=eos,
        run__bad_rows="null_ids",
        run__workers=1,  # one shard a file: fewer uploads, the test stays fast
    )
    code, output = invoke("run", job)
    assert code == 3, output  # the null row
    report = _report(job, "--sample", ALL)
    assert report["ok"], report
    assert report["rows_checked"] == report["rows_equal"] == 115
    primary = "a.parquet" if format == "parquet" else "a.idx"
    by_input = {f["input"]: f["output"] for f in report["files"]}
    assert by_input[f"s3://{name}/corpus/a.parquet"] == f"s3://{name}/tokens/{primary}"
    assert f"s3://{name}/corpus/b.jsonl" in by_input

    row, position = 40, 3  # as in the local test: input row 40 of a.parquet, its id 3
    if format == "parquet":
        old, new = _plant_in_object(
            endpoint,
            name,
            "tokens/a.parquet",
            tmp_path,
            lambda path: _plant_in_parquet(path, row, position),
        )
        where = f"s3://{name}/tokens/a.parquet row {row} position {position}:"
    else:
        document = row - 1  # the null row 5 is no document
        offset = _document_offset(_documents(rows["a"], eos, "null_ids"), document) + position
        old, new = _plant_in_object(
            endpoint, name, "tokens/a.bin", tmp_path, lambda path: _plant_in_bytes(path, offset)
        )
        where = f"s3://{name}/tokens/a.idx row {row} (document {document}, "
    code, output = _audit(job, "--sample", ALL)
    assert code == 1, output
    mismatches = [line for line in output.splitlines() if line.startswith("mismatch:")]
    assert len(mismatches) == 1, output

    assert where in mismatches[0] and f"position {position}:" in mismatches[0]
    assert f"written {new} " in mismatches[0] and f"tokenizers {old} " in mismatches[0]
    assert "rows checked: 115, rows equal: 114" in output

    if format == "parquet":  # a flipped byte fails its page checksum, read from S3 too
        _plant_in_object(endpoint, name, "tokens/b.parquet", tmp_path, _flip_a_byte_of_the_ids)
        code, output = _audit(job, "--sample", ALL)
        assert code == 1
        assert f"s3://{name}/tokens/b.parquet row group 0 does not read back whole" in output
        assert "CRC checksum verification failed" in output, output


def test_a_data_file_reads_every_span_right_across_its_read_ahead(tmp_path: Path) -> None:
    """Spans in order and out of it, inside, across and past the read-ahead buffer and the
    file's end, against the values the file was written with."""
    rng = random.Random(7)
    values = [rng.randrange(65536) for _ in range(100_000)]
    path = tmp_path / "a.bin"
    path.write_bytes(struct.pack(f"<{len(values)}H", *values))
    step = files_module.READ_AHEAD // 2  # a buffer holds this many 2-byte tokens
    spans = [(0, 5), (3, 10), (step - 2, 4), (step + 1, 3 * step), (50, 7), (99_990, 20)]
    spans += [(rng.randrange(100_000), rng.randrange(3000)) for _ in range(40)]
    data = files_module.FlatTokens(str(path), "uint16")
    try:
        assert data.total == len(values)
        for start, length in spans:
            assert data.read(start, length) == values[start : start + length], (start, length)
    finally:
        data.close()


def test_packed_rows_whose_seq_lens_do_not_bound_their_documents_are_found(
    tmp_path: Path,
) -> None:
    """The audit checks each sampled document's piece bounds in a packed row's seq_lens: a
    row whose pieces are the right ids but whose lengths are moved (the ids untouched) fails."""
    _inputs(tmp_path)
    job = _run(tmp_path, output__append_eos=True, output__pack_length=64)
    assert _report(job, "--sample", ALL)["ok"]
    path = tmp_path / "out" / "a.parquet"
    table = pq.read_table(path)
    lengths = table["seq_lens"].to_pylist()
    row = next(i for i, ls in enumerate(lengths) if len(ls) >= 2 and ls[0] > 1)
    lengths[row] = [lengths[row][0] - 1, lengths[row][1] + 1, *lengths[row][2:]]
    column = pa.array(lengths, table.schema.field("seq_lens").type)
    moved = table.set_column(table.schema.get_field_index("seq_lens"), "seq_lens", column)
    pq.write_table(moved.replace_schema_metadata(table.schema.metadata), path)
    code, output = _audit(job, "--sample", ALL)
    assert code == 1, output
    assert "do not bound it" in output and f"packed row {row} " in output, output
