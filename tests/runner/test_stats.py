"""One statistics type from the worker to the summary: a shard's counts, their merge, and the
summary's figures are the same fields."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path

import pytest

from batchtok.runner.exec.encode import configure_tokenizer
from batchtok.runner.exec.worker import (
    ShardResult,
    WorkerContext,
    encode_settings,
    encode_shard,
)
from batchtok.runner.job import load_job
from batchtok.runner.plan.keys import hash_row_groups
from batchtok.runner.plan.prepare import prepare, state_dir
from batchtok.runner.plan.states import resolve, text_columns
from batchtok.runner.plan.tasks import shard_task
from batchtok.runner.report.stats import MAX_EXAMPLES, ShardStats
from batchtok.runner.run import run_job
from tests.support.runner import basic_job, summary, texts, write_parquet


@pytest.fixture(scope="module")
def shards(tmp_path_factory) -> tuple[Path, list[ShardResult], list[list[ShardStats]]]:
    """A job with bad rows and special tokens, its shards encoded one by one in this process:
    (job file, each shard's result, each shard's progress reports)."""
    tmp = tmp_path_factory.mktemp("stats")
    rows = texts(240, seed=3)
    for i in range(0, len(rows), 37):
        rows[i] = None
    write_parquet(tmp / "in" / "a.parquet", rows, row_group_size=20)
    job_file = basic_job(tmp, run__shard_mb=0.002)
    job = load_job(job_file)
    prep = prepare(job, remember=False)
    tok = prep.loaded_tokenizer()
    configure_tokenizer(tok, job, prep.facts)
    ctx = WorkerContext(encode_settings(job), tok, prep.facts)
    (st,) = prep.states.values()
    hashes = hash_row_groups(st.file.path, text_columns(job), st.file.keep_leaves)
    resolve(st, hashes, prep.fingerprint(st.file), tmp / "parts", {}, False)
    results, reports = [], []
    for i in range(len(st.shards)):
        task = shard_task(prep, st, i, tmp / "parts", tmp / "tmp")
        sent: list[ShardStats] = []
        results.append(encode_shard(task, sent.append, ctx))
        reports.append(sent)
    assert len(results) > 3
    return job_file, results, reports


def test_progress_reports_add_up_to_the_shard_result(shards) -> None:
    _, results, reports = shards
    for result, sent in zip(results, reports):
        total = ShardStats()
        for added in sent:
            total.merge(added)
        got = (total.rows_in, total.tokens, total.text_bytes, total.bad_rows)
        want = (result.stats.rows_in, result.stats.tokens, result.stats.text_bytes)
        assert got == (*want, result.stats.bad_rows)


def test_merge_is_associative_over_real_shard_results(shards) -> None:
    _, results, _ = shards
    a, b, c = (r.stats for r in results[:3])
    left = copy.deepcopy(a).merge(copy.deepcopy(b)).merge(copy.deepcopy(c))
    right = copy.deepcopy(a).merge(copy.deepcopy(b).merge(copy.deepcopy(c)))
    assert left == right
    assert left.bad_rows == a.bad_rows + b.bad_rows + c.bad_rows > 0
    assert left.peak_rss_mb == max(a.peak_rss_mb, b.peak_rss_mb, c.peak_rss_mb)


def test_the_summary_reports_the_merged_shard_stats(shards, tmp_path: Path) -> None:
    job_file, results, _ = shards
    merged = ShardStats()
    for result in results:
        merged += copy.deepcopy(result.stats)
    job = load_job(job_file, {"output.dir": str(tmp_path / "out")})
    assert run_job(job, quiet=True).exit_code == 3  # success with bad rows
    doc = summary(tmp_path / "out")
    assert doc["rows"] == {"read": merged.rows_in, "written": merged.rows_out}
    assert doc["tokens"] == merged.tokens
    assert doc["text_mb"] == round(merged.text_bytes / 1e6, 3)
    assert doc["bad_rows"]["count"] == merged.bad_rows
    assert doc["bad_rows"]["by_reason"] == dict(merged.bad_reasons) == {"null text": 7}
    # shards finish in any order, and their examples are merged as they arrive
    by_row = sorted(merged.bad_examples, key=lambda e: e["row"])
    assert sorted(doc["bad_rows"]["examples"], key=lambda e: e["row"]) == by_row
    specials = doc["special_tokens_in_text"]
    assert specials["counts"] == dict(merged.special_tokens) and specials["total"] > 0
    assert not (state_dir(job) / "tmp").exists()


def test_merge_keeps_the_first_examples_only() -> None:
    example = {"file": "a.parquet", "row": 0, "reason": "null text"}
    one = ShardStats(bad_rows=60, bad_examples=[example] * 60)
    total = ShardStats()
    for _ in range(3):
        total.merge(one)
    assert total.bad_rows == 180 and len(total.bad_examples) == MAX_EXAMPLES


def test_identical_shards_count_once_per_copy_but_keep_one_set_of_examples() -> None:
    example = {"file": "a.parquet", "row": 3, "reason": "null text"}
    one = ShardStats(
        rows_in=10,
        rows_out=10,
        tokens=50,
        text_bytes=200,
        bad_rows=1,
        bad_reasons=Counter({"null text": 1}),
        bad_examples=[example],
        special_tokens=Counter({"<|endoftext|>": 2}),
        seconds=0.5,
        peak_rss_mb=100.0,
    )
    three = one.times(3)
    assert (three.rows_in, three.tokens, three.text_bytes, three.bad_rows) == (30, 150, 600, 3)
    assert three.bad_reasons == {"null text": 3}
    assert three.special_tokens == {"<|endoftext|>": 6}
    assert three.bad_examples == [example]
    assert (three.seconds, three.peak_rss_mb) == (0.5, 100.0)
    assert one.rows_in == 10  # the original is unchanged
