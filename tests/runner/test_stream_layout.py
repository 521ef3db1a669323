"""Files sized by tokens, the whole job as one stream, and the seeded shuffle: outputs whose
concatenation is the oracle's ids of every document in the plan's order (or the seed's order,
the same on a re-run and with another worker count), each file at most
``output.max_tokens_per_file`` ids, cached and resumed file by file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from batchtok.formats import datatrove, mds, megatron
from tests.support.runner import basic_job, invoke, oracle_ids, texts, write_parquet

INPUTS = 30
LIMIT = 900


def _inputs(tmp_path: Path, n: int = INPUTS) -> list[list[str]]:
    """``n`` input files of 12 rows each (some empty), in row groups of 4."""
    written = []
    for i in range(n):
        rows = texts(12, seed=i)
        write_parquet(tmp_path / "in" / f"f{i:02d}.parquet", rows, row_group_size=4)
        written.append(rows)
    return written


def _documents(out: Path, format: str, name: str = "job") -> tuple[list[list[int]], list[int]]:
    """Every document (packed row) of the numbered files, in order, and each file's ids."""
    docs: list[list[int]] = []
    sizes = []
    for i in range(10_000):
        base = out / f"{name}-{i:05d}"
        if format == "parquet":
            if not base.with_suffix(".parquet").exists():
                break
            got = pq.read_table(base.with_suffix(".parquet"))["input_ids"].to_pylist()
        elif format == "megatron":
            if not base.with_suffix(".idx").exists():
                break
            got = [d.tolist() for d in megatron.read_documents(str(base))]
        elif format == "datatrove":
            if not Path(f"{base}.ds").exists():
                break
            got = [d.tolist() for d in datatrove.read_documents(f"{base}.ds")]
        else:
            if not Path(f"{base}.mds").exists():
                break
            got = [d.tolist() for d in mds.read_documents(f"{base}.mds")]
        docs += got
        sizes.append(sum(len(d) for d in got))
    return docs, sizes


def _stream_job(tmp_path: Path, **more: object) -> Path:
    settings = {
        "name": "job",
        "output__layout": "stream",
        "output__max_tokens_per_file": LIMIT,
        "run__shard_mb": 0.0005,
        **more,
    }
    return basic_job(tmp_path, **settings)


@pytest.mark.parametrize("format", ["parquet", "megatron", "datatrove", "mds"])
def test_thirty_inputs_become_files_of_at_most_n_ids_whose_concatenation_is_the_oracles(
    tmp_path: Path, format: str
) -> None:
    """The issue's second check: 30 inputs in stream layout give numbered files of at most
    N ids, fewer than the inputs, whose documents, in order, are the oracle's of every input
    row in the plan's order (an empty one left out where the format leaves it out)."""
    written = _inputs(tmp_path)
    code, output = invoke("run", _stream_job(tmp_path, output__format=format))
    assert code == 0, output
    docs, sizes = _documents(tmp_path / "out", format)
    want = [ids for rows in written for ids in oracle_ids(rows)]
    if format in ("datatrove", "mds"):
        want = [ids for ids in want if ids]
    assert docs == want
    assert 1 < len(sizes) < INPUTS and max(sizes) <= LIMIT
    # greedy: each file but the last would not have held the next file's first document
    assert sum(sizes) == sum(len(d) for d in want)
    code, output = invoke("run", _stream_job(tmp_path, output__format=format))
    assert code == 0 and "nothing to do" in output, output
    code, output = invoke("audit", _stream_job(tmp_path, output__format=format))
    assert code == 0 and "rows checked: 360, rows equal: 360: all equal" in output, output


def test_packed_rows_are_cut_into_files_of_whole_rows(tmp_path: Path) -> None:
    written = _inputs(tmp_path)
    job = _stream_job(tmp_path, output__pack_length=100, output__pack_keep_last=False)
    code, output = invoke("run", job)
    assert code == 0, output
    rows, sizes = _documents(tmp_path / "out", "parquet")
    flat = [i for rows_ in written for ids in oracle_ids(rows_) for i in ids]
    assert [i for r in rows for i in r] == flat[: len(flat) - len(flat) % 100]
    assert all(len(r) == 100 for r in rows)
    assert all(size == 900 for size in sizes[:-1]) and sizes[-1] <= 900
    code, output = invoke("audit", job)
    assert code == 0 and "all equal" in output, output


def _files(out: Path) -> dict[str, bytes]:
    return {
        p.name: p.read_bytes()
        for p in sorted(out.iterdir())
        if p.is_file() and not p.name.startswith("_")
    }


def test_a_seeded_shuffle_is_the_same_on_a_rerun_and_with_another_worker_count(
    tmp_path: Path,
) -> None:
    written = _inputs(tmp_path)
    want = [ids for rows in written for ids in oracle_ids(rows)]
    outputs = []
    for workers in (1, 2):
        out = tmp_path / f"out{workers}"
        job = _stream_job(
            tmp_path,
            output__dir=str(out),
            output__format="megatron",
            output__shuffle_seed=11,
            output__shuffle_window=2000,
            run__workers=workers,
        )
        code, output = invoke("run", job)
        assert code == 0, output
        outputs.append(_files(out))
        code, output = invoke("run", job)
        assert code == 0 and "nothing to do" in output, output
    assert outputs[0].keys() == outputs[1].keys()
    for name in outputs[0]:  # (a sidecar names its place: compared by its ids below)
        if not name.endswith(".batchtok.json"):
            assert outputs[0][name] == outputs[1][name], name
    docs, sizes = _documents(tmp_path / "out1", "megatron")
    assert docs != want and sorted(map(tuple, docs)) == sorted(map(tuple, want))
    assert max(sizes) <= LIMIT


def test_the_shuffle_keeps_each_window_in_its_place(tmp_path: Path) -> None:
    """Windows of at most W ids: the documents of the first window (in plan order) are the
    first documents of the output, in another order."""
    written = _inputs(tmp_path)
    want = [ids for rows in written for ids in oracle_ids(rows)]
    job = _stream_job(
        tmp_path, output__format="megatron", output__shuffle_seed=3, output__shuffle_window=1500
    )
    assert invoke("run", job)[0] == 0
    docs, _ = _documents(tmp_path / "out", "megatron")
    held, first = 0, 0
    while first < len(want) and held + len(want[first]) <= 1500:
        held += len(want[first])
        first += 1
    assert sorted(map(tuple, docs[:first])) == sorted(map(tuple, want[:first]))
    assert docs[:first] != want[:first]
    code, output = invoke("audit", job)
    assert code == 0 and "all equal" in output, output
    data = tmp_path / "out" / "job-00001.bin"
    raw = bytearray(data.read_bytes())
    raw[10] ^= 0xFF
    data.write_bytes(bytes(raw))
    code, output = invoke("audit", job)
    assert code == 1 and "mismatch" in output and "job-00001" in output, output
    code, output = invoke("run", job, "--verify")
    assert code == 0, output
    code, output = invoke("audit", job)
    assert code == 0 and "all equal" in output, output


@pytest.mark.parametrize("bad_rows", ["skip", "null_ids", "empty_ids"])
def test_bad_and_empty_rows_are_found_by_the_audit_in_a_shuffled_stream(
    tmp_path: Path, bad_rows: str
) -> None:
    """Rows without ids (null texts) and empty ones are no documents (or empty ones where
    the format keeps them): the audit finds every sampled row's document all the same."""
    for i in range(4):
        rows = texts(12, seed=i)
        rows[3] = None
        rows[5] = ""
        write_parquet(tmp_path / "in" / f"f{i:02d}.parquet", rows, row_group_size=4)
    for format in ("megatron", "datatrove"):
        job = _stream_job(
            tmp_path,
            output__dir=str(tmp_path / format),
            output__format=format,
            output__shuffle_seed=2,
            run__bad_rows=bad_rows,
        )
        code, output = invoke("run", job)
        assert code in (0, 3), output
        code, output = invoke("audit", job)
        assert code == 0 and "rows checked: 48, rows equal: 48" in output, output


def test_a_changed_input_rewrites_only_the_files_from_where_it_is(tmp_path: Path) -> None:
    """The last input changed: the files before the one that holds its first document are
    kept (not written again), and every input but it is not encoded again."""
    _inputs(tmp_path)
    job = _stream_job(tmp_path, output__format="datatrove")
    assert invoke("run", job)[0] == 0
    out = tmp_path / "out"
    before = {p.name: p.stat().st_mtime_ns for p in out.glob("job-*.ds")}
    write_parquet(tmp_path / "in" / "f29.parquet", texts(12, seed=99), row_group_size=4)
    code, output = invoke("run", job)
    assert code == 0, output
    summary = json.loads((out / "_batchtok_summary.json").read_text())
    assert summary["shards"]["done"] == 3  # the changed input's shards only
    after = {p.name: p.stat().st_mtime_ns for p in out.glob("job-*.ds")}
    kept = [name for name in before if after.get(name) == before[name]]
    assert len(kept) >= len(before) - 2, (len(kept), len(before))
    written = [texts(12, seed=i) for i in range(29)] + [texts(12, seed=99)]
    want = [ids for rows in written for ids in oracle_ids(rows) if ids]
    assert _documents(out, "datatrove")[0] == want


def test_files_a_new_cut_has_no_more_are_removed(tmp_path: Path) -> None:
    _inputs(tmp_path)
    job = _stream_job(tmp_path, output__format="megatron")
    assert invoke("run", job)[0] == 0
    out = tmp_path / "out"
    count = len(list(out.glob("job-*.idx")))
    for i in range(10, 30):
        (tmp_path / "in" / f"f{i:02d}.parquet").unlink()
    code, output = invoke("run", job)
    assert code == 0, output
    left = sorted(p.name for p in out.glob("job-*"))
    assert len([n for n in left if n.endswith(".idx")]) < count
    numbers = sorted({n.split(".")[0] for n in left})
    assert numbers == [f"job-{i:05d}" for i in range(len(numbers))]
    written = [texts(12, seed=i) for i in range(10)]
    want = [ids for rows in written for ids in oracle_ids(rows)]
    assert _documents(out, "megatron")[0] == want


def test_a_users_file_where_a_stream_file_goes_is_never_replaced(tmp_path: Path) -> None:
    _inputs(tmp_path, 3)
    out = tmp_path / "out"
    out.mkdir()
    (out / "job-00000.bin").write_bytes(b"mine")
    code, output = invoke("run", _stream_job(tmp_path, output__format="megatron"))
    assert code == 2 and "job-00000.bin" in output and "never replaces" in output, output
    assert (out / "job-00000.bin").read_bytes() == b"mine"


def test_mirror_layout_cuts_each_inputs_output_into_numbered_files(tmp_path: Path) -> None:
    written = _inputs(tmp_path, 2)
    job = basic_job(
        tmp_path, output__format="megatron", output__max_tokens_per_file=150, run__shard_mb=0.0005
    )
    code, output = invoke("run", job)
    assert code == 0, output
    for i, rows in enumerate(written):
        docs, sizes = _documents(tmp_path / "out", "megatron", f"f{i:02d}")
        assert docs == oracle_ids(rows) and len(sizes) > 1 and max(sizes) <= 150
    assert not (tmp_path / "out" / "f00.idx").exists()


def test_a_stream_with_provenance_names_each_documents_input_row(tmp_path: Path) -> None:
    written = _inputs(tmp_path, 5)
    job = _stream_job(
        tmp_path, output__format="megatron", output__provenance=True, output__shuffle_seed=5
    )
    assert invoke("run", job)[0] == 0
    out = tmp_path / "out"
    docs, _ = _documents(out, "megatron")
    entries = []
    for i in range(len(list(out.glob("job-*.idx")))):
        entries += pq.read_table(out / f"job-{i:05d}.docs.parquet").to_pylist()
    assert len(entries) == len(docs)
    for entry, ids in zip(entries, docs):
        source = int(os.path.basename(entry["source"])[1:3])
        assert oracle_ids(written[source])[entry["row"]] == ids


def test_keys_that_cannot_hold_together_are_refused(tmp_path: Path) -> None:
    _inputs(tmp_path, 1)
    for settings, key in (
        ({"output__max_tokens_per_file": 10, "output__pack_length": 64}, "max_tokens_per_file"),
        ({"output__shuffle_window": 100}, "output.shuffle_window"),
        ({"output__layout": "stream", "output__keep_columns": ["id"]}, "output.keep_columns"),
    ):
        code, output = invoke("run", basic_job(tmp_path, **settings))
        assert code == 2 and key in output, output


PARENT = os.getpid()


def test_a_worker_killed_writing_a_file_leaves_it_unwritten_and_the_rerun_finishes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed while it writes job-00001: nothing of it is visible, and the next run writes
    the files the failed run left unwritten (those it finished are kept; no shard is encoded
    again), equal to a clean run's."""
    from batchtok.formats import files as token_files

    _inputs(tmp_path, 8)
    job = _stream_job(tmp_path, output__format="megatron", output__shuffle_seed=1)
    original = token_files.TokenFileWriter.add_document

    def add_document(self, ids):  # type: ignore[no-untyped-def]
        if os.getpid() != PARENT and self.dest.endswith("job-00001"):
            os._exit(9)
        original(self, ids)

    monkeypatch.setattr(token_files.TokenFileWriter, "add_document", add_document)
    code, output = invoke("run", job)
    assert code == 1, output
    out = tmp_path / "out"
    assert not (out / "job-00001.idx").exists() and (out / "job-00000.idx").exists()
    finished = {p.name: p.stat().st_mtime_ns for p in out.glob("job-*")}
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 0 and "writing" in output, output
    assert all(out.joinpath(n).stat().st_mtime_ns == t for n, t in finished.items())
    assert json.loads((out / "_batchtok_summary.json").read_text())["shards"]["done"] == 0
    clean = _stream_job(
        tmp_path, output__dir=str(tmp_path / "clean"), output__format="megatron",
        output__shuffle_seed=1,
    )  # fmt: skip
    assert invoke("run", clean)[0] == 0
    assert _documents(out, "megatron") == _documents(tmp_path / "clean", "megatron")


def test_an_input_that_fails_holds_back_only_its_own_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Mirror layout cut by tokens: an input failing (its worker killed on each try) leaves
    its own files unwritten; the other input's are written, and kept by the run that
    finishes the failed one."""
    from tests.support.runner import kill_worker_on_shard

    write_parquet(tmp_path / "in" / "a.parquet", texts(12, seed=0), row_group_size=4)
    write_parquet(tmp_path / "in" / "b.parquet", texts(12, seed=1), row_group_size=4)
    job = basic_job(
        tmp_path, output__format="megatron", output__max_tokens_per_file=150, run__shard_mb=0.0005
    )
    kill_worker_on_shard("b.parquet#1", monkeypatch, PARENT)
    code, output = invoke("run", job)
    assert code == 1, output
    out = tmp_path / "out"
    written = sorted(p.name for p in out.glob("a-*.idx"))
    assert written and not list(out.glob("b-*")), output
    kept = {n: (out / n).stat().st_mtime_ns for n in written}
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 0, output
    assert list(out.glob("b-*.idx"))
    assert {n: (out / n).stat().st_mtime_ns for n in written} == kept
    assert _documents(out, "megatron", "b")[0] == oracle_ids(texts(12, seed=1))
