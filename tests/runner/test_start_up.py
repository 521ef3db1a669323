"""What a run pays before and after its shards: closing the log session neither waits on
nor prints its wake-up record, and the parent encodes nothing itself (no pre-warm: a sample
encoded in the parent before forking cost more wall time than it saved the workers)."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pyarrow.parquet as pq

from batchtok import Tokenizer
from batchtok.runner.progress import LogSession
from tests.support.runner import basic_job, invoke, oracle, texts, write_parquet


def test_closing_the_log_session_prints_no_wake_up_record() -> None:
    stream = io.StringIO()
    session = LogSession(stream, "text", quiet=False, live=False)
    session.for_workers()
    logging.getLogger("batchtok.runner").info("one line")
    session.close()
    lines = stream.getvalue().splitlines()
    assert len(lines) == 1 and lines[0].endswith("INFO    one line")


def test_the_parent_encodes_no_row_of_a_job_its_workers_encode(tmp_path: Path, monkeypatch) -> None:
    docs = texts(200, seed=4, max_words=60)
    write_parquet(tmp_path / "in" / "a.parquet", docs, row_group_size=50)
    parent_texts: list[str] = []
    real = Tokenizer.encode_batch_ids

    def counting(self, *args, **kwargs):
        parent_texts.extend(args[0])
        return real(self, *args, **kwargs)

    # patched in the parent before the workers fork: they inherit it, so only the calls
    # made by this process are counted here (a fork's list is its own copy)
    monkeypatch.setattr(Tokenizer, "encode_batch_ids", counting)
    code, output = invoke("run", basic_job(tmp_path, run__shard_mb=0.01))
    assert code == 0, output
    # (it encodes probes of its own, "a" and the like, to learn the file's special tokens)
    assert not set(parent_texts) & set(docs)
    table = pq.read_table(tmp_path / "out" / "a.parquet")
    assert table["input_ids"].to_pylist() == [e.ids for e in oracle().encode_batch(docs)]


def test_a_run_needs_no_numpy(tmp_path: Path) -> None:
    """A Parquet job runs in a process where numpy cannot be imported (the trainer formats
    use it, a declared dependency; the engine and Parquet outputs do not): batchtok.formats
    once asked pyarrow for its integer types by numpy dtype names at import, which fails
    without numpy."""
    import subprocess
    import sys

    docs = texts(60, seed=6, max_words=40)
    write_parquet(tmp_path / "in" / "a.parquet", docs, row_group_size=20)
    job = basic_job(tmp_path)
    script = (
        "import sys; sys.modules['numpy'] = None\n"
        "from batchtok.cli import main\n"
        f"sys.argv = ['batchtok', 'run', {str(job)!r}, '--quiet']\n"
        "main()\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    table = pq.read_table(tmp_path / "out" / "a.parquet")
    assert table["input_ids"].to_pylist() == [e.ids for e in oracle().encode_batch(docs)]
