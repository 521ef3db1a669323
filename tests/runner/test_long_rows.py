"""One very long row: exact ids, and worker memory that grows with the row, not 25x it.

A row over LONG_CHARS is encoded straight into the output's id array, its pieces streamed
(tests/test_long_texts.py checks the ids of the streaming path on every file). Measured on
this machine, peak worker RSS over a small-row run, for one 6 MB ASCII row: 162 MB before
(27x the row: every piece a Python str, every id a list slot), 79 MB after; for 50 MB, 922
MB before, 494 MB after. What remains is the Arrow reader's copy, the text as a Python
str and pyarrow's writer, which buffers a record's levels and values whole (~16 bytes an
id for one huge list value): see "Long rows" in docs/jobs.md.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from batchtok.runner.exec.encode import LONG_CHARS
from tests.support import corpora
from tests.support.runner import basic_job, oracle, summary

ROW_CHARS = LONG_CHARS * 3 // 2


def _long_ascii_row() -> str:
    english = "\n\n".join(corpora.sample_docs("english", 400, 20_000))
    text = english.encode("ascii", "ignore").decode()
    return (text * (ROW_CHARS // len(text) + 1))[:ROW_CHARS]


def _run(tmp_path: Path, text: str) -> dict:
    (tmp_path / "in").mkdir(parents=True)
    pq.write_table(pa.table({"text": [text]}), tmp_path / "in" / "a.parquet")
    job = basic_job(tmp_path, run__workers=1)
    # a fresh process: the worker's peak RSS must not start from this test process's
    done = subprocess.run(
        [sys.executable, "-m", "batchtok", "run", str(job)], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return summary(tmp_path / "out")


def test_a_long_row_is_exact_and_memory_grows_with_it(tmp_path: Path) -> None:
    text = _long_ascii_row()
    small = _run(tmp_path / "small", text[:20_000])
    long = _run(tmp_path / "long", text)
    table = pq.read_table(tmp_path / "long" / "out" / "a.parquet")
    want = oracle().encode_batch_fast([text]).__getitem__(0).ids
    assert table["input_ids"].to_pylist() == [want]
    assert table["num_tokens"].to_pylist() == [len(want)]
    grown_mb = long["peak_worker_rss_mb"] - small["peak_worker_rss_mb"]
    row_mb = len(text) / 1e6
    assert grown_mb <= 20 * row_mb, f"{grown_mb:.0f} MB for a {row_mb:.1f} MB row"
