"""Trainer formats from a job: Megatron bin/idx, datatrove .ds and MDS (read by streaming's
own StreamingDataset) read back equal to the oracle's ids (plus EOS), packed rows of exactly N
ids whatever the shards and workers, the cache and resume as for Parquet, and refusals that
name the key."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from batchtok.formats import datatrove, mds, megatron
from batchtok.runner.outputs.formats import FORMATS
from tests.support import streaming
from tests.support.models import EMPTY_FILE
from tests.support.oracle import added_token, with_changes
from tests.support.runner import (
    EXAMPLE_JOB,
    SAMPLE,
    basic_job,
    invoke,
    kill_worker_on_shard,
    oracle_ids,
    summary,
    texts,
    write_parquet,
)

PARENT = os.getpid()
EOS = 50256  # GPT-2's <|endoftext|>


def _read(out: Path, name: str, format: str) -> list[list[int]]:
    if format == "megatron":
        return [d.tolist() for d in megatron.read_documents(str(out / name))]
    if format == "mds":  # an empty document is no sample
        return [d.tolist() for d in mds.read_documents(str(out / f"{name}.mds"))]
    return [d.tolist() for d in datatrove.read_documents(str(out / f"{name}.ds"))]


def _primary(name: str, format: str) -> str:
    return {"megatron": f"{name}.idx", "datatrove": f"{name}.ds", "mds": f"{name}.mds/index.json"}[
        format
    ]


def _with_eos(rows: list[list[int]]) -> list[list[int]]:
    return [row + [EOS] if row else [] for row in rows]


@pytest.mark.parametrize("format", ["megatron", "datatrove"])
def test_the_example_job_in_a_trainer_format_reads_back_as_its_ids_plus_eos(
    tmp_path: Path, format: str
) -> None:
    code, output = invoke(
        "run",
        EXAMPLE_JOB,
        "--set",
        f"output.dir={json.dumps(str(tmp_path))}",
        "--set",
        f"output.format={format}",
        "--set",
        "output.append_eos=true",
    )
    assert code == 0, output
    want = _with_eos(oracle_ids(pq.read_table(SAMPLE)["text"].to_pylist()))
    got = _read(tmp_path, "sample", format)
    if format == "megatron":  # Megatron keeps a document for an empty row, with no tokens
        assert got == want
    else:
        assert got == [row for row in want if row] or got == want
    provenance = (megatron if format == "megatron" else datatrove).read_provenance(
        str(tmp_path / ("sample" if format == "megatron" else "sample.ds"))
    )
    assert provenance["tokenizer"]["sha256"] == summary(tmp_path)["tokenizer"]["sha256"]


@pytest.mark.parametrize("format", ["megatron", "datatrove", "mds"])
def test_a_multi_shard_file_resumes_after_a_killed_worker_and_the_cache_holds(
    tmp_path: Path, format: str, monkeypatch
) -> None:
    docs = texts(200, seed=3)
    docs[7] = None  # a bad row: no document
    write_parquet(tmp_path / "in" / "c.parquet", docs, row_group_size=20)
    write_parquet(tmp_path / "in" / "a.parquet", texts(30, seed=1), row_group_size=30)
    job = basic_job(tmp_path, run__shard_mb=0.004, output__format=format, output__append_eos=True)
    out = tmp_path / "out"
    kill_worker_on_shard("c.parquet#2", monkeypatch, PARENT)
    code, output = invoke("run", job)
    assert code == 1, output
    assert not (out / _primary("c", format)).exists()
    monkeypatch.undo()
    code, output = invoke("run", job)
    assert code == 3, output  # the null row
    assert summary(out)["shards"]["done"] == 1
    good = [d for d in docs if d is not None]
    want = _with_eos(oracle_ids(good))
    if not FORMATS[format].keeps_empty_documents:  # datatrove, MDS: no empty document
        want = [r for r in want if r]
    assert _read(out, "c", format) == want
    code, output = invoke("run", job)
    assert code == 3 and "nothing to do" in output, output
    assert list((out / ".batchtok" / "parts").glob("*")) == []


@pytest.mark.parametrize("format", ["parquet", "megatron", "datatrove", "mds"])
@pytest.mark.parametrize("keep_last", [True, False])
def test_packed_rows_hold_every_token_once_in_order_whatever_the_shards_and_workers(
    tmp_path: Path, format: str, keep_last: bool
) -> None:
    docs = texts(150, seed=12)
    write_parquet(tmp_path / "in" / "a.parquet", docs, row_group_size=10)
    stream = [i for row in _with_eos(oracle_ids(docs)) for i in row]
    n = 37
    results = []
    for workers, shard_mb in ((1, 100.0), (2, 0.002)):
        run = tmp_path / f"run{workers}"
        (run / "in").mkdir(parents=True)
        os.link(tmp_path / "in" / "a.parquet", run / "in" / "a.parquet")
        job = basic_job(
            run,
            run__workers=workers,
            run__shard_mb=shard_mb,
            output__format=format,
            output__append_eos=True,
            output__pack_length=n,
            output__pack_keep_last=keep_last,
        )
        code, output = invoke("run", job)
        assert code == 0, output
        if format == "parquet":
            rows = pq.read_table(run / "out" / "a.parquet")["input_ids"].to_pylist()
        else:
            rows = _read(run / "out", "a", format)
        results.append(rows)
    assert results[0] == results[1]
    rows = results[0]
    assert all(len(r) == n for r in rows[:-1])
    flat = [i for r in rows for i in r]
    if keep_last:
        assert flat == stream and 0 < len(rows[-1]) <= n
    else:
        assert flat == stream[: len(stream) - len(stream) % n] and len(rows[-1]) == n


@pytest.mark.parametrize("workers", [1, 2])
def test_packed_rows_carry_their_documents_pieces_which_give_back_the_oracles_ids(
    tmp_path: Path, workers: int
) -> None:
    """The example job, packed into rows of 512 ids with position ids: each row's seq_lens
    sum to its length, its position ids count from 0 in each piece, and its pieces, read in
    order, are every non-empty document's oracle ids, whole, in order: a document is cut only
    where a row ends, its rest being the next row's first piece."""
    code, output = invoke(
        "run",
        EXAMPLE_JOB,
        "-o",
        tmp_path / "out",
        "--workers",
        workers,
        "--set",
        "output.pack_length=512",
        "--set",
        "output.position_ids=true",
        "--set",
        "run.shard_mb=0.01",
    )
    assert code == 0, output
    table = pq.read_table(tmp_path / "out" / "sample.parquet")
    assert table.column_names == ["input_ids", "num_tokens", "seq_lens", "position_ids"]
    pieces = []  # (ids, first in its row)
    for row in table.to_pylist():
        assert sum(row["seq_lens"]) == len(row["input_ids"]) == row["num_tokens"]
        assert row["position_ids"] == [i for n in row["seq_lens"] for i in range(n)]
        at = 0
        for k, n in enumerate(row["seq_lens"]):
            assert n >= 1
            pieces.append((row["input_ids"][at : at + n], k == 0))
            at += n
    docs = [d for d in oracle_ids(pq.read_table(SAMPLE)["text"].to_pylist()) if d]
    pieces.reverse()
    for doc in docs:
        got, first = pieces.pop()
        while len(got) < len(doc):
            rest, starts_row = pieces.pop()
            assert starts_row  # a document goes on only at the start of the next row
            got += rest
        assert got == doc
    assert pieces == []


def test_the_example_job_in_mds_reads_back_through_streaming_as_its_ids_plus_eos(
    tmp_path: Path,
) -> None:
    """streaming's own StreamingDataset reads each document's ids plus EOS (an empty one is no
    sample), int32 by default (llm-foundry's ndarray:int32) or the job's output.dtype."""
    want = [row for row in _with_eos(oracle_ids(pq.read_table(SAMPLE)["text"].to_pylist())) if row]
    outs = {}
    for dtype in ("int32", "uint16"):
        outs[dtype] = tmp_path / dtype
        code, output = invoke(
            "run",
            EXAMPLE_JOB,
            "--set",
            f"output.dir={json.dumps(str(outs[dtype]))}",
            "--set",
            "output.format=mds",
            "--set",
            "output.append_eos=true",
            "--set",
            f"output.dtype={dtype}",
        )
        assert code == 0, output
        got = streaming.read_back(outs[dtype] / "sample.mds")
        assert got["samples"] == got["iterated"] == want
        assert got["dtypes"] == [dtype]
        index = json.loads((outs[dtype] / "sample.mds" / "index.json").read_text())
        assert index["shards"][0]["column_encodings"] == [f"ndarray:{dtype}"]
    provenance = mds.read_provenance(str(outs["int32"] / "sample.mds"))
    assert provenance["tokenizer"]["sha256"] == summary(outs["int32"])["tokenizer"]["sha256"]
    # several outputs read as one dataset, as streams
    both = streaming.read_back(outs["int32"] / "sample.mds", outs["uint16"] / "sample.mds")
    assert both["samples"] == want + want


def test_packed_mds_rows_are_concat_tokens_samples_in_shards_of_the_size_limit(
    tmp_path: Path, monkeypatch
) -> None:
    """output.pack_length = N with pack_keep_last = false writes what llm-foundry's
    --concat_tokens N does with its EOS text: samples of exactly N ids, the documents' ids
    plus EOS one after another, the short rest dropped; shards are cut at the size limit."""
    monkeypatch.setattr(mds, "SIZE_LIMIT", 1 << 12)  # 4 kB shards: several of them
    docs = texts(150, seed=12)
    write_parquet(tmp_path / "in" / "a.parquet", docs, row_group_size=10)
    n = 64
    job = basic_job(
        tmp_path,
        run__workers=1,
        run__shard_mb=0.002,
        output__format="mds",
        output__append_eos=True,
        output__pack_length=n,
        output__pack_keep_last=False,
    )
    code, output = invoke("run", job)
    assert code == 0, output
    stream = [i for row in _with_eos(oracle_ids(docs)) for i in row]
    rows = [stream[at : at + n] for at in range(0, len(stream) - n + 1, n)]
    out = tmp_path / "out" / "a.mds"
    got = streaming.read_back(out)
    assert got["samples"] == rows
    shards = json.loads((out / "index.json").read_text())["shards"]
    assert len(shards) > 2 and all(s["raw_data"]["bytes"] <= 1 << 12 for s in shards)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        ["index.json", "index.batchtok.json"] + [s["raw_data"]["basename"] for s in shards]
    )


def test_an_mds_directory_batchtok_did_not_write_is_never_replaced(tmp_path: Path) -> None:
    """MDSWriter's own directory at the output path (no sidecar names the input): refused
    before any work, its index.json and shard named; nothing in it is touched."""
    write_parquet(tmp_path / "in" / "a.parquet", texts(20, seed=4))
    theirs = tmp_path / "out" / "a.mds"
    shutil.copytree(Path(__file__).parents[1] / "formats" / "data" / "mds_example", theirs)
    before = {p.name: p.read_bytes() for p in theirs.iterdir()}
    code, output = invoke("run", basic_job(tmp_path, output__format="mds"))
    assert code == 2 and "output.dir" in output, output
    assert "a.mds/index.json is not a file batchtok wrote" in output, output
    assert "a.mds/shard.00000.mds is not a file batchtok wrote" in output, output
    assert {p.name: p.read_bytes() for p in theirs.iterdir()} == before


def test_an_eos_the_vocab_lacks_is_refused_naming_the_key(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5))
    code, output = invoke("run", basic_job(tmp_path, output__append_eos="</s>"))
    assert code == 2, output
    assert "output.append_eos" in output and "'</s>' is not an added token" in output
    assert not (tmp_path / "out").exists()


def test_a_trainer_output_changed_on_disk_is_rewritten(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(40, seed=2))
    job = basic_job(tmp_path, output__format="megatron")
    code, output = invoke("run", job)
    assert code == 0, output
    with open(tmp_path / "out" / "a.bin", "ab") as f:  # the sidecar's sizes no longer hold
        f.write(b"\0\0")
    code, output = invoke("run", job)
    assert code == 0 and "will be rewritten" in output, output
    assert _read(tmp_path / "out", "a", "megatron") == oracle_ids(texts(40, seed=2))


@pytest.mark.parametrize("format", ["megatron", "datatrove", "mds"])
def test_an_upper_case_parquet_input_names_its_trainer_output_without_the_extension(
    tmp_path: Path, format: str
) -> None:
    write_parquet(tmp_path / "in" / "A.PARQUET", texts(20, seed=4))
    code, output = invoke("run", basic_job(tmp_path, output__format=format))
    assert code == 0, output
    assert _read(tmp_path / "out", "A", format) == oracle_ids(texts(20, seed=4))
    assert not list((tmp_path / "out").glob("A.PARQUET*")), os.listdir(tmp_path / "out")


def test_eos_follows_every_non_empty_row_and_a_refused_row_keeps_null_ids(tmp_path: Path) -> None:
    model = {
        "type": "BPE",
        "unk_token": "<unk>",  # not in the vocab: an unknown char is an error, as in tokenizers
        "vocab": {"a": 0, "b": 1, "ab": 2},
        "merges": [["a", "b"]],
    }
    eos = added_token("</s>", special=True, normalized=False)
    path = tmp_path / "tok" / "tokenizer.json"
    path.parent.mkdir()
    path.write_text(with_changes(EMPTY_FILE, model=model, added_tokens=[eos]), encoding="utf-8")
    write_parquet(tmp_path / "in" / "a.parquet", ["ab", "xq", "", "abab"])
    job = basic_job(tmp_path, tokenizer__path=str(path), output__append_eos="</s>")
    code, output = invoke("run", job)
    assert code == 3 and "row 1: encode error" in output, output
    ids = pq.read_table(tmp_path / "out" / "a.parquet")["input_ids"].to_pylist()
    assert ids == [[2, 3], None, [], [2, 2, 3]]


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        (["output.position_ids=true"], "applies only with output.pack_length set"),
        (
            ["output.position_ids=true", "output.pack_length=64", "output.format=megatron"],
            'applies to packed Parquet, not output.format "megatron"',
        ),
        (["output.pack_length=64", "output.count_column=seq_lens"], "is a column of packed rows"),
    ],
)
def test_packed_columns_that_cannot_be_are_refused_naming_the_keys(
    tmp_path: Path, settings: list[str], says: str
) -> None:
    args = [a for s in settings for a in ("--set", s)]
    code, output = invoke("run", EXAMPLE_JOB, "-o", tmp_path / "out", *args)
    assert code == 2 and says in output, output
    assert not (tmp_path / "out").exists()
