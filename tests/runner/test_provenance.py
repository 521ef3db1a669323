"""Provenance files (``output.provenance``): each document (piece of a packed row) of an output
traced back to its input row, checked against the oracle's ids of that row; the file is part
of the output's set (published with it, verified with it, audited), and the job keys that
cannot hold together are refused naming both."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from batchtok.formats import datatrove, mds, megatron
from tests.support.runner import (
    EXAMPLE_JOB,
    SAMPLE,
    basic_job,
    invoke,
    oracle_ids,
    texts,
    write_parquet,
)

COLUMNS = ["source", "row", "line", "tokens", "start", "output_row", "offset"]


def _docs(path: Path) -> list[dict]:
    table = pq.read_table(path)
    assert table.column_names[: len(COLUMNS)] == COLUMNS
    return table.to_pylist()


def _ids_at(rows: list[list[int]], entry: dict, pack_length: int | None) -> list[int]:
    """The ids an entry names: ``tokens`` ids at ``offset`` of packed row ``output_row``, or
    of the output's documents one after another."""
    if pack_length is not None:
        row = rows[entry["output_row"]]
        return row[entry["offset"] : entry["offset"] + entry["tokens"]]
    flat = [i for r in rows for i in r]
    return flat[entry["offset"] : entry["offset"] + entry["tokens"]]


def _entries_are_the_rows_ids(
    entries: list[dict],
    rows: list[list[int]],
    want: list[list[int]],
    pack: int | None,
    tail_dropped: bool = False,
) -> None:
    """Every entry's ids are its row's oracle ids from ``start``; each row's entries, in
    order, are its ids whole (the last row's a beginning of them, if the short last packed
    row was dropped); they follow the output's order without a gap."""
    by_row: dict[int, list[int]] = {}
    for entry in entries:
        got = _ids_at(rows, entry, pack)
        doc = want[entry["row"]]
        assert got == doc[entry["start"] : entry["start"] + entry["tokens"]], entry
        assert entry["start"] == len(by_row.setdefault(entry["row"], []))
        by_row[entry["row"]] += got
    last = max(by_row, default=None)
    if tail_dropped and last is not None:
        by_row[last] += want[last][len(by_row[last]) :]
    assert all(ids == want[row] for row, ids in by_row.items())
    places = [e["offset"] + (e["output_row"] * pack if pack else 0) for e in entries]
    assert places == [sum(e["tokens"] for e in entries[:i]) for i in range(len(entries))]


def test_the_example_job_packed_with_provenance_names_each_pieces_input_row(
    tmp_path: Path,
) -> None:
    """The issue's first check: pack_length=512 and provenance: each row's seq_lens sum to
    its length and are its entries' lengths, and every docs.parquet row, read where it says,
    is the named input row's oracle ids (several shards joined, so rows span parts)."""
    out = tmp_path / "out"
    code, output = invoke(
        "run",
        EXAMPLE_JOB,
        "-o",
        out,
        "--set",
        "output.pack_length=512",
        "--set",
        "output.provenance=true",
        "--set",
        "run.shard_mb=0.02",
    )
    assert code == 0, output
    table = pq.read_table(out / "sample.parquet")
    rows = table["input_ids"].to_pylist()
    entries = _docs(out / "sample.docs.parquet")
    want = oracle_ids(pq.read_table(SAMPLE)["text"].to_pylist())
    assert {e["source"] for e in entries} == {str(SAMPLE)}
    assert {e["line"] for e in entries} == {None}
    for i, seq_lens in enumerate(table["seq_lens"].to_pylist()):
        assert sum(seq_lens) == len(rows[i])
        assert seq_lens == [e["tokens"] for e in entries if e["output_row"] == i]
    _entries_are_the_rows_ids(entries, rows, want, 512)
    assert {e["row"] for e in entries} == {i for i, ids in enumerate(want) if ids}
    shards = ("--set", "run.shard_mb=0.02")
    code, output = invoke("audit", EXAMPLE_JOB, "-o", out, *_sets(512, "parquet"), *shards)
    assert code == 0 and "sample.docs.parquet: 453 rows checked, 453 equal" in output, output


def _sets(pack: int | None, format: str, *more: str) -> list[str]:
    settings = ["output.provenance=true", f"output.format={format}", *more]
    if pack is not None:
        settings.append(f"output.pack_length={pack}")
    return [arg for s in settings for arg in ("--set", s)]


def _read(out: Path, name: str, format: str, pack: int | None) -> list[list[int]]:
    if format == "parquet":
        return pq.read_table(out / f"{name}.parquet")["input_ids"].to_pylist()
    if format == "megatron":
        return [d.tolist() for d in megatron.read_documents(str(out / name))]
    if format == "mds":
        return [d.tolist() for d in mds.read_documents(str(out / f"{name}.mds"))]
    return [d.tolist() for d in datatrove.read_documents(str(out / f"{name}.ds"))]


def _docs_path(out: Path, name: str, format: str) -> Path:
    return out / (f"{name}.mds/docs.parquet" if format == "mds" else f"{name}.docs.parquet")


LINES = [
    '{"id": 7, "text": "hello world"}',
    "",
    '{"id": "b", "text": null}',
    "not json",
    '{"id": "c", "text": ""}',
    '{"id": "d", "text": "the last one, a little longer than the others"}',
    "   ",
    '{"id": "e", "text": "after two blank lines"}',
]


@pytest.mark.parametrize("bad_rows", ["skip", "null_ids", "empty_ids"])
@pytest.mark.parametrize(
    ("format", "pack", "keep_last"),
    [
        ("megatron", None, True),
        ("datatrove", None, True),
        ("mds", None, True),
        ("parquet", 4, True),
        ("parquet", 4, False),
        ("megatron", 3, False),
    ],
)
def test_json_lines_entries_give_row_line_and_id_in_every_format(
    tmp_path: Path, format: str, pack: int | None, keep_last: bool, bad_rows: str
) -> None:
    """Rows count the lines that hold one (blank lines are none), ``line`` is the file's line,
    the id column is copied as read (a number as its JSON text); a bad row, an empty document
    left out, or a dropped short last row has no entry; and the audit agrees."""
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.jsonl").write_text("\n".join(LINES) + "\n", encoding="utf-8")
    job = basic_job(
        tmp_path,
        output__keep_columns=[],
        run__bad_rows=bad_rows,
        input__id_column="id",
        output__provenance=True,
        output__format=format,
        output__pack_keep_last=keep_last,
        **({"output__pack_length": pack} if pack else {}),
    )
    code, output = invoke("run", job)
    assert code in (0, 3), output  # (3: bad rows were found)
    out = tmp_path / "out"
    entries = _docs(_docs_path(out, "a", format))
    rows = _read(out, "a", format, pack)
    texts_by_row = [
        "hello world",
        None,
        None,
        "",
        json.loads(LINES[5])["text"],
        json.loads(LINES[7])["text"],
    ]
    want = oracle_ids([t or "" for t in texts_by_row])
    for bad in (1, 2):
        want[bad] = [] if bad_rows == "empty_ids" else None
    lines = {0: 1, 1: 3, 2: 4, 3: 5, 4: 6, 5: 8}
    ids = {0: "7", 1: "b", 2: None, 3: "c", 4: "d", 5: "e"}
    for entry in entries:
        assert (entry["line"], entry["id"]) == (lines[entry["row"]], ids[entry["row"]])
    clean = [w or [] for w in want]
    _entries_are_the_rows_ids(entries, rows, clean, pack, not keep_last)
    kept = sum(len(r) for r in rows)
    assert sum(e["tokens"] for e in entries) == kept
    empty_entries = format == "megatron" and pack is None  # an empty document is one there
    expected_rows = {r for r, w in enumerate(want) if w or (w == [] and empty_entries)}
    if pack is not None and not keep_last:  # the dropped tail's documents lose their entries
        expected_rows = {r for r in expected_rows if r in {e["row"] for e in entries}}
        assert kept % pack == 0
    assert {e["row"] for e in entries} == expected_rows
    code, output = invoke("audit", job)
    assert code == 0, output


def test_a_changed_provenance_file_is_found_and_written_again_and_the_audit_names_it(
    tmp_path: Path,
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(300, seed=3), row_group_size=40)
    job = basic_job(
        tmp_path,
        output__format="megatron",
        output__provenance=True,
        run__shard_mb=0.002,
    )
    assert invoke("run", job)[0] == 0
    docs = tmp_path / "out" / "a.docs.parquet"
    good = docs.read_bytes()
    code, output = invoke("run", job)
    assert code == 0 and "0 shards done" in output, output
    table = pq.read_table(docs)
    shifted = table.set_column(1, "row", pa.array([r + 1 for r in table["row"].to_pylist()]))
    pq.write_table(shifted, docs)
    code, output = invoke("audit", job)
    assert code == 1 and "a.docs.parquet" in output and "mismatch" in output, output
    code, output = invoke("run", job)
    assert code == 0 and docs.read_bytes() == good, output
    docs.unlink()
    code, output = invoke("run", job, "--verify")
    assert code == 0 and docs.read_bytes() == good, output


def test_the_id_column_is_part_of_what_is_hashed(tmp_path: Path) -> None:
    """A changed id (its text unchanged) gives a provenance file with the new id."""
    sample = texts(50, seed=4)
    path = write_parquet(tmp_path / "in" / "a.parquet", sample)
    job = basic_job(
        tmp_path,
        output__pack_length=16,
        output__provenance=True,
        input__id_column="url",
        output__keep_columns=[],
    )
    for urls in ([f"u{i}" for i in range(50)], [f"v{i}" for i in range(50)]):
        write_parquet(path, sample, extra={"url": pa.array(urls)})
        assert invoke("run", job)[0] == 0
        entries = _docs(tmp_path / "out" / "a.docs.parquet")
        assert {e["url"] for e in entries} <= set(urls) and entries


@pytest.mark.parametrize(
    ("settings", "key", "says"),
    [
        (["output.provenance=true"], "output.provenance", "applies to packed rows or a trainer"),
        (["input.id_column=id"], "input.id_column", "applies only with output.provenance"),
        (
            ["output.provenance=true", "output.format=megatron", "input.id_column=row"],
            "input.id_column",
            "is a column of the provenance file",
        ),
        (
            ["output.provenance=true", "output.format=megatron", "input.id_column=nope"],
            "input.id_column",
            'column "nope" is missing',
        ),
    ],
)
def test_keys_that_cannot_hold_together_are_refused_naming_them(
    tmp_path: Path, settings: list[str], key: str, says: str
) -> None:
    args = [arg for s in settings for arg in ("--set", s)]
    code, output = invoke("run", EXAMPLE_JOB, "-o", tmp_path / "out", *args)
    assert code == 2 and key in output and says in output, output
    assert not (tmp_path / "out").exists()


def test_a_provenance_file_that_would_be_another_inputs_output_is_refused(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    write_parquet(tmp_path / "in" / "a.docs.parquet", texts(5))
    job = basic_job(tmp_path, output__pack_length=8, output__provenance=True)
    code, output = invoke("run", job)
    assert code == 2 and "output.provenance" in output and "a.docs.parquet" in output, output


def test_the_sidecar_lists_the_provenance_file_with_its_size_and_hash(tmp_path: Path) -> None:
    code, output = invoke("run", EXAMPLE_JOB, "-o", tmp_path, *_sets(None, "datatrove"))
    assert code == 0, output
    sidecar = json.loads((tmp_path / "sample.ds.batchtok.json").read_text())
    assert (
        sidecar["files"]["sample.docs.parquet"] == (tmp_path / "sample.docs.parquet").stat().st_size
    )
    assert "sample.docs.parquet" in sidecar["xxh3_128"]


@pytest.mark.parametrize(("format", "pack"), [("megatron", None), ("parquet", 64), ("mds", None)])
def test_a_provenance_file_no_longer_asked_for_is_removed_with_the_new_output(
    tmp_path: Path, format: str, pack: int | None
) -> None:
    """A job run with output.provenance, then without: the output is written again and the
    provenance file it wrote goes (it would describe an output that is not there any more);
    a user's file of that name beside a job that never wrote one stays."""
    docs = _docs_path(tmp_path / "out", "sample", format)
    args = ("-o", tmp_path / "out", *_sets(pack, format))
    assert invoke("run", EXAMPLE_JOB, *args)[0] == 0 and docs.exists()
    code, output = invoke("run", EXAMPLE_JOB, *_without_provenance(args))
    assert code == 0, output
    assert not docs.exists()
    mine = tmp_path / "other"
    (mine).mkdir()
    user = _docs_path(mine, "sample", format)
    user.parent.mkdir(parents=True, exist_ok=True)
    user.write_bytes(b"mine")
    code, output = invoke("run", EXAMPLE_JOB, "-o", mine, *_without_provenance(args)[2:])
    assert code == 0 and user.read_bytes() == b"mine", output


def _without_provenance(args: tuple) -> list:
    out = list(args)
    i = out.index("output.provenance=true")
    return out[: i - 1] + out[i + 1 :]
