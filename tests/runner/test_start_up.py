"""What a run pays before and after its shards: closing the log session neither waits on
nor prints its wake-up record, the parent encodes nothing itself (no pre-warm: a sample
encoded in the parent before forking cost more wall time than it saved the workers), a run
that has the tokenizer loaded forks its workers once for hashing and encoding, and a run
imports only what it uses."""

from __future__ import annotations

import io
import logging
import subprocess
import sys
import time
from pathlib import Path

import pyarrow.parquet as pq

from batchtok import Tokenizer
from batchtok.runner.exec import encode as encode_module
from batchtok.runner.exec import local as executor_module
from batchtok.runner.report.progress import LogSession
from tests.support.runner import basic_job, invoke, oracle, summary, texts, write_parquet


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


def test_workers_are_forked_once_when_the_tokenizer_is_loaded_already(
    tmp_path: Path, monkeypatch
) -> None:
    """The first run loads the tokenizer to learn its facts: the same workers hash and encode.
    A later run with a new input hashes it on workers without a tokenizer (an input touched
    but unchanged then costs no load), and forks again to encode only if there is work."""
    forks: list[list[str]] = []
    real_enter = executor_module.LocalExecutor.__enter__
    real_submit = executor_module.LocalExecutor.submit

    def entering(self):
        forks.append([])
        return real_enter(self)

    def submitting(self, task, first=False):
        forks[-1].append(type(task).__name__)
        return real_submit(self, task, first)

    monkeypatch.setattr(executor_module.LocalExecutor, "__enter__", entering)
    monkeypatch.setattr(executor_module.LocalExecutor, "submit", submitting)
    write_parquet(tmp_path / "in" / "a.parquet", texts(40, seed=1))
    job = basic_job(tmp_path)
    assert invoke("run", job)[0] == 0
    assert forks == [["HashTask", "ShardTask"]]

    forks.clear()
    monkeypatch.setattr(encode_module, "_LOADED", {})  # as in a new process
    write_parquet(tmp_path / "in" / "b.parquet", texts(40, seed=2))
    assert invoke("run", job)[0] == 0
    assert forks == [["HashTask"], ["ShardTask"]]

    forks.clear()
    loaded: dict = {}
    monkeypatch.setattr(encode_module, "_LOADED", loaded)
    (tmp_path / "in" / "b.parquet").touch()  # a new stat, the same content
    assert invoke("run", job)[0] == 0
    assert forks == [["HashTask"]] and not loaded
    for name, seed in (("a", 1), ("b", 2)):
        table = pq.read_table(tmp_path / "out" / f"{name}.parquet")
        expected = [e.ids for e in oracle().encode_batch(texts(40, seed=seed))]
        assert table["input_ids"].to_pylist() == expected


def test_a_run_imports_nothing_it_does_not_use(tmp_path: Path) -> None:
    """Neither the parent nor a worker of a Parquet run imports pyarrow.compute (about 40 ms:
    lengths and nulls are read from the arrays' buffers), xml or urllib (an SVG escape) or the
    Ray executor. ``-X importtime`` reports every first import, the forked
    workers' included."""
    docs = texts(60, seed=7, max_words=40)
    write_parquet(tmp_path / "in" / "a.parquet", docs, row_group_size=20)
    job = basic_job(tmp_path, run__shard_mb=0.002)  # several shards: both workers encode
    command = [sys.executable, "-X", "importtime", "-m", "batchtok", "run", str(job), "--quiet"]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "batchtok.runner.exec.worker" in imported  # the report is read right
    unwanted = {"pyarrow.compute", "xml", "urllib.request", "batchtok.runner.exec.ray_cluster"}
    assert not imported & unwanted
    table = pq.read_table(tmp_path / "out" / "a.parquet")
    assert table["input_ids"].to_pylist() == [e.ids for e in oracle().encode_batch(docs)]


def test_a_run_needs_no_numpy(tmp_path: Path) -> None:
    """A Parquet job runs in a process where numpy cannot be imported (the trainer formats
    use it, a declared dependency; the engine and Parquet outputs do not): batchtok.formats
    once asked pyarrow for its integer types by numpy dtype names at import, which fails
    without numpy."""
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


def test_the_summary_says_how_long_the_run_took_to_start(tmp_path: Path) -> None:
    """``startup_seconds``: from the program's start to its first shard handed to a worker
    (interpreter, imports, tokenizer load, hash phase, fork): more than the interpreter alone
    takes to start, less than the whole run's wall time; a run called in a longer-lived
    process counts from the call; a run with nothing to encode has none."""
    write_parquet(tmp_path / "in" / "a.parquet", texts(30, seed=8), row_group_size=10)
    job = basic_job(tmp_path)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-m", "batchtok", "run", str(job), "--quiet"])
    wall = time.monotonic() - started
    assert done.returncode == 0
    found = summary(tmp_path / "out")
    begun = time.monotonic()
    subprocess.run([sys.executable, "-c", "import pyarrow"], check=True)
    floor = time.monotonic() - begun  # an interpreter that imports what a run imports first
    assert floor * 0.5 < found["startup_seconds"] < wall
    assert invoke("run", job)[0] == 0  # nothing to do
    assert summary(tmp_path / "out")["startup_seconds"] is None
    (tmp_path / "out" / "a.parquet").unlink()
    assert invoke("run", job)[0] == 0  # in this (long-lived) process
    assert 0 < summary(tmp_path / "out")["startup_seconds"] < found["elapsed_seconds"] + 5
