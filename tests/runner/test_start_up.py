"""What a run pays before and after its shards: the pre-warm sample scales with the job (a
small job is encoded once, by the workers), and closing the log session neither waits on nor
prints its wake-up record."""

from __future__ import annotations

import io
import logging
from pathlib import Path

import pyarrow.parquet as pq

from batchtok.runner import run as run_module
from batchtok.runner import worker
from batchtok.runner.progress import LogSession
from batchtok.runner.worker import PREWARM_CHARS, PREWARM_MIN_CHARS, prewarm_budget
from tests.support.runner import basic_job, invoke, oracle, texts, write_parquet


def test_the_prewarm_budget_is_a_share_of_a_worker_part_within_bounds() -> None:
    assert prewarm_budget(0, 2) == 0
    assert prewarm_budget(100_000, 2) == 0  # a small job: no pre-warm at all
    assert prewarm_budget(10_000_000, 2) == 625_000
    assert prewarm_budget(10_000_000, 8) == 0  # 1.25 MB a worker: under the minimum
    assert prewarm_budget(10**9, 2) == PREWARM_CHARS
    share = PREWARM_MIN_CHARS / worker.PREWARM_SHARE
    assert prewarm_budget(int(share * 2), 2) == PREWARM_MIN_CHARS
    assert prewarm_budget(int(share * 2) - 8, 2) == 0


def _run_counting_prewarms(tmp_path: Path, monkeypatch, docs: list[str]) -> list[int]:
    calls: list[int] = []
    real = run_module.prewarm

    def counting(*args, **kwargs):
        calls.append(args[5] if len(args) > 5 else kwargs.get("chars", PREWARM_CHARS))
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "prewarm", counting)
    write_parquet(tmp_path / "in" / "a.parquet", docs, row_group_size=50)
    code, output = invoke("run", basic_job(tmp_path, run__shard_mb=0.01))
    assert code == 0, output
    table = pq.read_table(tmp_path / "out" / "a.parquet")
    assert table["input_ids"].to_pylist() == [e.ids for e in oracle().encode_batch(docs)]
    return calls


def test_a_small_job_is_not_prewarmed_and_a_larger_one_is_with_its_budget(
    tmp_path: Path, monkeypatch
) -> None:
    docs = texts(200, seed=4, max_words=60)
    assert _run_counting_prewarms(tmp_path / "small", monkeypatch, docs) == []
    # the same rows, with the minimum lowered under their size: pre-warmed, same ids
    monkeypatch.setattr(worker, "PREWARM_MIN_CHARS", 1000)
    text_bytes = sum(len(d.encode()) for d in docs)
    calls = _run_counting_prewarms(tmp_path / "larger", monkeypatch, docs)
    # the budget comes from the footers' size estimate: about an eighth of a worker's half
    assert len(calls) == 1 and 1000 <= calls[0] <= text_bytes * worker.PREWARM_SHARE


def test_closing_the_log_session_prints_no_wake_up_record() -> None:
    stream = io.StringIO()
    session = LogSession(stream, "text", quiet=False, live=False)
    session.for_workers()
    logging.getLogger("batchtok.runner").info("one line")
    session.close()
    assert stream.getvalue().splitlines()[-1].endswith("INFO    one line")
    assert len(stream.getvalue().splitlines()) == 1
