"""End to end: Parquet in, Parquet out, ids equal to the oracle's for every row."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from batchtok import __version__
from batchtok.runner.outputs.parquet import use_returning_memory_pool
from tests.support.runner import (
    EXAMPLE_JOB,
    SAMPLE,
    basic_job,
    invoke,
    oracle_ids,
    summary,
    template_tokenizer,
    texts,
    visible_files,
    write_parquet,
)


def _sample_texts() -> list[str]:
    return pq.read_table(SAMPLE)["text"].to_pylist()


def test_the_example_job_runs_out_of_the_box(tmp_path: Path) -> None:
    out = tmp_path / "example"
    before = hashlib.sha256(SAMPLE.read_bytes()).hexdigest()
    code, output = invoke("run", EXAMPLE_JOB, "--output", out)
    assert code == 0, output
    assert hashlib.sha256(SAMPLE.read_bytes()).hexdigest() == before  # inputs never written
    assert visible_files(out) == ["sample.parquet"]
    table = pq.read_table(out / "sample.parquet")
    source = pq.read_table(SAMPLE)
    assert table.column_names == ["id", "kind", "text", "input_ids", "num_tokens"]
    assert table.schema.field("input_ids").type == pa.list_(pa.int32())
    assert table.select(["id", "kind", "text"]).equals(source)
    expected = oracle_ids(source["text"].to_pylist())
    assert table["input_ids"].to_pylist() == expected
    assert table["num_tokens"].to_pylist() == [len(e) for e in expected]
    meta = json.loads(pq.read_metadata(out / "sample.parquet").metadata[b"batchtok"])
    assert meta["engine_version"] == __version__
    assert (
        meta["tokenizer"]["sha256"]
        == hashlib.sha256(
            (EXAMPLE_JOB.parent.parent / "configs/tokenizers/gpt2/tokenizer.json").read_bytes()
        ).hexdigest()
    )
    assert meta["encode"] == {
        "add_special_tokens": True,
        "special_tokens_in_text": "special",
        "truncation": None,
        "truncation_from": None,
        "padding": None,
        "tokenizer_padding_not_applied": None,
    }
    assert meta["input"]["pair_column"] is None
    assert meta["output"]["dtype"] == "int32" and len(meta["input"]["content_xxh3_128"]) == 32
    report = summary(out)
    assert report["status"] == "success" and report["rows"]["written"] == source.num_rows
    assert report["tokens"] == sum(map(len, expected))
    found = sum(t.count("<|endoftext|>") for t in source["text"].to_pylist())
    assert report["special_tokens_in_text"]["counts"] == {"<|endoftext|>": found} and found > 0
    assert report["arrow_memory_pool"] in ("jemalloc", "system")
    assert report["peak_worker_rss_mb"] > 0 and report["parent_rss_mb_at_fork"] > 0
    code, output = invoke("status", EXAMPLE_JOB, "--output", out)
    assert code == 0 and "last run: success" in output


def test_arrow_allocates_from_a_pool_that_gives_memory_back(monkeypatch) -> None:
    before = pa.default_memory_pool()
    try:
        monkeypatch.delenv("ARROW_DEFAULT_MEMORY_POOL", raising=False)
        assert use_returning_memory_pool() in ("jemalloc", "system")
        # with ARROW_DEFAULT_MEMORY_POOL set, the pool in use is left alone
        pa.set_memory_pool(pa.system_memory_pool())
        monkeypatch.setenv("ARROW_DEFAULT_MEMORY_POOL", "mimalloc")
        assert use_returning_memory_pool() == "system"
    finally:
        pa.set_memory_pool(before)


@pytest.fixture
def mixed(tmp_path: Path) -> Path:
    """Sample texts and generated ones in a file of several shards and a nested file."""
    text = _sample_texts() + texts(150, seed=5)
    write_parquet(tmp_path / "in" / "mixed.parquet", text, row_group_size=40)
    write_parquet(tmp_path / "in" / "deep" / "er" / "small.parquet", texts(7, seed=8))
    return tmp_path


def _compare(tmp: Path, **options) -> None:
    for path in sorted((tmp / "in").rglob("*.parquet")):
        rel = path.relative_to(tmp / "in")
        text = pq.read_table(path)["text"].to_pylist()
        got = pq.read_table(tmp / "out" / rel)
        expected = oracle_ids(text, **options)
        bad = [i for i, (a, b) in enumerate(zip(got["input_ids"].to_pylist(), expected)) if a != b]
        assert not bad and got.num_rows == len(text), f"{rel}: rows {bad[:5]} differ"


@pytest.mark.parametrize(
    ("settings", "options"),
    [
        ([], {}),
        (["encode.add_special_tokens=false"], {"add_special_tokens": False}),
        (['encode.special_tokens_in_text="text"'], {"special_as_text": True}),
        (["encode.max_length=7"], {"max_length": 7}),
    ],
)
def test_ids_equal_the_oracle_for_every_row(mixed: Path, settings, options) -> None:
    args = [x for s in settings for x in ("--set", s)]
    code, output = invoke("run", basic_job(mixed, run__shard_mb=0.01), *args)
    assert code == 0, output
    assert summary(mixed / "out")["shards"]["total"] > 3
    _compare(mixed, **options)
    assert visible_files(mixed / "out") == ["deep/er/small.parquet", "mixed.parquet"]


@pytest.mark.parametrize("max_length", [2, 3, 8, 1000])
@pytest.mark.parametrize("add_special_tokens", [True, False])
def test_truncation_with_template_special_tokens_matches_the_oracle(
    mixed: Path, max_length: int, add_special_tokens: bool
) -> None:
    tok = template_tokenizer(mixed)
    job = basic_job(
        mixed,
        tokenizer__path=str(tok),
        encode__max_length=max_length,
        encode__add_special_tokens=add_special_tokens,
    )
    code, output = invoke("run", job)
    assert code == 0, output
    _compare(mixed, path=tok, max_length=max_length, add_special_tokens=add_special_tokens)


@pytest.mark.parametrize("dtype", ["uint16", "uint32"])
def test_narrow_dtypes_hold_the_same_ids(mixed: Path, dtype: str) -> None:
    code, output = invoke("run", basic_job(mixed, output__dtype=dtype))
    assert code == 0, output
    table = pq.read_table(mixed / "out" / "mixed.parquet")
    assert table.schema.field("input_ids").type == pa.list_(getattr(pa, dtype)())
    _compare(mixed)


def test_output_does_not_depend_on_the_worker_count(mixed: Path) -> None:
    job = basic_job(mixed, run__shard_mb=0.01)
    outputs = []
    for workers in ("1", "2"):
        shutil.rmtree(mixed / "out", ignore_errors=True)
        assert invoke("run", job, "--workers", workers)[0] == 0
        files = visible_files(mixed / "out")
        outputs.append({name: (mixed / "out" / name).read_bytes() for name in files})
    assert outputs[0] == outputs[1] and len(outputs[0]) == 2


def test_kept_columns_and_output_names(mixed: Path) -> None:
    write_parquet(mixed / "in" / "mixed.parquet", texts(30), extra={"url": ["u"] * 30})
    shutil.rmtree(mixed / "in" / "deep")
    job = basic_job(
        mixed,
        output__keep_columns=["url", "id"],
        output__ids_column="tokens",
        output__count_column="n",
    )
    assert invoke("run", job)[0] == 0
    table = pq.read_table(mixed / "out" / "mixed.parquet")
    assert table.column_names == ["id", "url", "tokens", "n"]  # input order, then ours
    assert invoke("run", job, "--set", "output.keep_columns=[]")[0] == 0
    assert pq.read_table(mixed / "out" / "mixed.parquet").column_names == ["tokens", "n"]


def test_big_row_groups_are_split_and_shards_joined(mixed: Path) -> None:
    job = basic_job(mixed, run__shard_mb=0.01, output__row_group_mb=0.002)
    assert invoke("run", job)[0] == 0
    meta = pq.read_metadata(mixed / "out" / "mixed.parquet")
    doc = json.loads(meta.metadata[b"batchtok"])
    assert meta.num_row_groups > len(doc["shards"]) > 1
    assert sum(s["rows_out"] for s in doc["shards"]) == meta.num_rows
    _compare(mixed)
    assert list((mixed / "out" / ".batchtok" / "parts").iterdir()) == []


def test_json_logs_and_quiet(mixed: Path) -> None:
    job = basic_job(mixed)
    code, output = invoke("run", job, "--log-format", "json", "--progress-interval", "0")
    assert code == 0
    records = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    assert {"time", "level", "message", "process"} <= set(records[0])
    events = {r.get("event") for r in records}
    assert "summary" in events and "progress" in events
    shutil.rmtree(mixed / "out")
    code, output = invoke("run", job, "--quiet")
    assert code == 0 and output == ""


def test_a_file_without_rows_gives_an_empty_output(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "empty.parquet", [])
    code, output = invoke("run", basic_job(tmp_path))
    assert code == 0, output
    table = pq.read_table(tmp_path / "out" / "empty.parquet")
    assert table.num_rows == 0 and table.column_names[-2:] == ["input_ids", "num_tokens"]


def test_identical_shards_and_identical_files(tmp_path: Path) -> None:
    block = texts(20, seed=4)
    for name in ("a.parquet", "copy.parquet"):  # same content, so the same cache keys
        write_parquet(tmp_path / "in" / name, block * 4, row_group_size=20)
    job = basic_job(tmp_path, run__shard_mb=0.001, output__keep_columns=["text"])
    code, output = invoke("run", job)
    assert code == 0, output
    report = summary(tmp_path / "out")
    assert report["shards"]["total"] == report["shards"]["done"] == 8
    assert report["rows"] == {"read": 160, "written": 160}
    assert "encoding 2 shards" in output  # one per file: identical shards are encoded once
    _compare(tmp_path)
    assert invoke("run", job)[0] == 0 and summary(tmp_path / "out")["shards"]["done"] == 0


@pytest.mark.parametrize("shards", [1, 3])
def test_the_ids_column_is_written_without_a_dictionary_the_kept_columns_with_one(
    tmp_path: Path, shards: int
) -> None:
    """Plain pages for the ids (smaller and faster under zstd than a dictionary of a
    vocabulary's ids), dictionary pages for the kept columns as pyarrow writes them; for a
    file written by its worker and for one joined from parts."""
    docs = texts(300, seed=4)
    kinds = [("a", "b", "c")[i % 3] for i in range(len(docs))]
    write_parquet(tmp_path / "in" / "a.parquet", docs, extra={"kind": kinds}, row_group_size=100)
    job = basic_job(tmp_path, run__shard_mb=0.008 if shards > 1 else 32)
    code, output = invoke("run", job)
    assert code == 0, output
    assert summary(tmp_path / "out")["shards"]["done"] == shards
    path = tmp_path / "out" / "a.parquet"
    footer = pq.read_metadata(path)
    for rg in range(footer.num_row_groups):
        columns = {footer.schema.column(i).path: footer.row_group(rg).column(i) for i in range(5)}
        assert columns["input_ids.list.element"].dictionary_page_offset is None
        assert not {"RLE_DICTIONARY", "PLAIN_DICTIONARY"} & set(
            columns["input_ids.list.element"].encodings
        )
        assert columns["kind"].dictionary_page_offset is not None
    table = pq.read_table(path)
    assert table["input_ids"].to_pylist() == oracle_ids(docs)
    assert table["kind"].to_pylist() == kinds
