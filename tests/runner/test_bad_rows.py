"""Null texts under each bad-row policy: written, counted, logged with file and row."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from tests.support.runner import basic_job, invoke, oracle_ids, summary, texts, write_parquet

NULL_ROWS = (3, 41, 42)


@pytest.fixture
def job(tmp_path: Path) -> Path:
    text: list[str | None] = list(texts(60))
    for i in NULL_ROWS:
        text[i] = None
    write_parquet(tmp_path / "in" / "a.parquet", text, row_group_size=20)
    return basic_job(tmp_path)


def _input(job: Path) -> list[str | None]:
    return pq.read_table(job.parent / "in" / "a.parquet")["text"].to_pylist()


def _logged_rows(output: str) -> set[int]:
    rows = set()
    for line in output.splitlines():
        if "bad row" in line and "a.parquet row" in line:
            rows.add(int(line.split("a.parquet row ")[1].split(":")[0]))
    return rows


@pytest.mark.parametrize("policy", ["null_ids", "empty_ids", "skip"])
def test_policies_that_keep_going(job: Path, policy: str) -> None:
    code, output = invoke("run", job, "--set", f"run.bad_rows={policy}")
    assert code == 3, output  # success with bad rows
    assert _logged_rows(output) == set(NULL_ROWS)
    report = summary(job.parent / "out")
    assert report["status"] == "success_with_bad_rows"
    assert report["bad_rows"]["count"] == len(NULL_ROWS)
    assert report["bad_rows"]["policy"] == policy
    assert report["bad_rows"]["by_reason"] == {"null text": len(NULL_ROWS)}
    assert sorted(e["row"] for e in report["bad_rows"]["examples"]) == list(NULL_ROWS)
    text = _input(job)
    table = pq.read_table(job.parent / "out" / "a.parquet")
    ids, counts = table["input_ids"].to_pylist(), table["num_tokens"].to_pylist()
    if policy == "skip":
        kept = [t for t in text if t is not None]
        assert table["text"].to_pylist() == kept
        assert table["id"].to_pylist() == [i for i in range(60) if i not in NULL_ROWS]
        assert ids == oracle_ids(kept)
        assert report["rows"] == {"read": 60, "written": 57}
        return
    expected = oracle_ids([t or "" for t in text])
    for i in range(60):
        if i in NULL_ROWS:
            want = (None, None) if policy == "null_ids" else ([], 0)
            assert (ids[i], counts[i]) == want
        else:
            assert ids[i] == expected[i] and counts[i] == len(expected[i])


def test_fail_policy_fails_the_run_naming_file_and_row(job: Path) -> None:
    code, output = invoke("run", job, "--set", "run.bad_rows=fail")
    assert code == 1, output
    assert "a.parquet row 3: null text" in output
    assert not (job.parent / "out" / "a.parquet").exists()
    report = summary(job.parent / "out")
    assert report["status"] == "failed" and report["shards"]["failed"] == 1
    assert "row 3" in report["failures"][0]["error"]


def test_empty_strings_are_not_bad_rows(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", ["", " ", "x"])
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 0, output
    ids = pq.read_table(tmp_path / "out" / "a.parquet")["input_ids"].to_pylist()
    assert ids == oracle_ids(["", " ", "x"])


@pytest.mark.parametrize("workers", [1, 2])
def test_invalid_utf8_in_a_string_column_is_a_bad_row(tmp_path: Path, workers: int) -> None:
    """Other writers store bytes that are not UTF-8 in string columns; such a row is a bad
    row (named by file and row), and the shard does not stop on it."""
    raw = [t.encode() for t in texts(40, seed=4)]
    raw[7] = b"caf\xe9 \xff\xfe"
    column = pa.array(raw, pa.binary()).view(pa.string())
    path = tmp_path / "in" / "a.parquet"
    path.parent.mkdir()
    pq.write_table(pa.table({"text": column}), path, row_group_size=20)
    job = basic_job(tmp_path, run__workers=workers)
    code, output = invoke("run", job)
    assert code == 3, output
    assert "a.parquet row 7: invalid UTF-8 in the text" in output
    report = summary(tmp_path / "out")
    assert report["bad_rows"]["count"] == 1
    assert report["bad_rows"]["by_reason"] == {"invalid UTF-8 in the text": 1}
    ids = pq.read_table(tmp_path / "out" / "a.parquet")["input_ids"].to_pylist()
    good = [t.decode() for i, t in enumerate(raw) if i != 7]
    assert ids[7] is None
    assert ids[:7] + ids[8:] == oracle_ids(good)


def test_a_rerun_still_reports_the_bad_rows_its_outputs_hold(job: Path) -> None:
    out = job.parent / "out"
    for c in ("b.parquet", "c.parquet"):  # one-shard and multi-shard files
        write_parquet(job.parent / "in" / c, [None, *texts(30, seed=5), None], row_group_size=8)
    code, output = invoke("run", job, "--set", "run.shard_mb=0.0005")
    assert code == 3, output
    assert summary(out)["bad_rows"]["count"] == len(NULL_ROWS) + 4
    for rerun in range(2):  # nothing to do, then one file changed
        if rerun:
            write_parquet(job.parent / "in" / "b.parquet", texts(10, seed=6))
        code, output = invoke("run", job, "--set", "run.shard_mb=0.0005")
        assert code == 3, output
        report = summary(out)
        assert report["status"] == "success_with_bad_rows"
        expected = len(NULL_ROWS) + 4 - 2 * rerun
        assert report["bad_rows"]["count"] == expected
        assert report["bad_rows"]["from_earlier_runs"] == expected
        assert f"{expected} bad rows" in output
        code, output = invoke("status", job, "--set", "run.shard_mb=0.0005")
        assert code == 0 and f"bad rows {expected}" in output
