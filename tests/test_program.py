"""The ``batchtok`` program ends without freeing its objects (batchtok/utils/program.py), and
loses nothing that way: its exit status is the command's, what it printed is all there (to a
pipe as well), the atexit handlers ran and the threads that are not daemons finished."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.support.runner import basic_job, oracle, texts, write_parquet

SCRIPT = """
import atexit, sys, threading, time
from batchtok.utils.program import run_program

def late():
    time.sleep(0.2)
    print("thread done", flush=True)

def main():
    atexit.register(lambda: print("atexit ran"))
    threading.Thread(target=late).start()
    print("x" * 100_000)  # more than a pipe's buffer, unflushed
    sys.exit(CODE)

run_program(main)
"""


@pytest.mark.parametrize(("code", "status"), [("None", 0), ("0", 0), ("3", 3), ("'bad'", 1)])
def test_the_program_ends_as_python_would(code, status):
    script = textwrap.dedent(SCRIPT).replace("CODE", code)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == status, done.stderr
    assert done.stdout.splitlines() == ["x" * 100_000, "thread done", "atexit ran"]
    assert done.stderr == ("bad\n" if code == "'bad'" else "")


def test_a_run_of_the_program_writes_everything_and_says_so(tmp_path: Path):
    docs = texts(40, seed=3, max_words=30)
    write_parquet(tmp_path / "in" / "a.parquet", docs, row_group_size=10)
    job = basic_job(tmp_path)
    command = [sys.executable, "-m", "batchtok", "run", str(job)]
    done = subprocess.run(command, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "summary:" in done.stdout + done.stderr
    table = pq.read_table(tmp_path / "out" / "a.parquet")
    assert table["input_ids"].to_pylist() == [e.ids for e in oracle().encode_batch(docs)]
    missing = subprocess.run(
        [*command[:-1], str(tmp_path / "nothing.toml")], capture_output=True, text=True
    )
    assert missing.returncode == 2 and "nothing.toml" in missing.stderr
