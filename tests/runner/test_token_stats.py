"""Token statistics of a job's outputs: equal to what the outputs hold, for the whole output
after a re-run or a partial re-run, with unknown and byte-fallback rates as the oracle's ids
give them, and a chart beside the summary."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from xml.etree import ElementTree

import pyarrow.parquet as pq
import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok.runner.report.token_stats import LONGEST, VECTOR_ROWS, TokenStats, bucket_label
from tests.support.models import model_file
from tests.support.runner import basic_job, invoke, summary, texts, write_parquet
from tests.support.tier import examples


def _expected(out: Path, names: list[str]) -> dict:
    """The statistics computed straight from the output files."""
    lengths, longest, special, text_bytes = [], [], Counter(), 0
    for name in names:
        table = pq.read_table(out / name)
        for row, (text, n) in enumerate(
            zip(table["text"].to_pylist(), table["num_tokens"].to_pylist())
        ):
            if n is None:
                continue
            lengths.append(n)
            longest.append((-n, name, row))
            special["<|endoftext|>"] += text.count("<|endoftext|>")
            text_bytes += len(text.encode())
    histogram = Counter(n.bit_length() for n in lengths)
    return {
        "documents": len(lengths),
        "tokens": sum(lengths),
        "bytes_per_token": round(text_bytes / sum(lengths), 3),
        "special_tokens_in_text": {k: v for k, v in special.items() if v},
        "longest_documents": [
            {"tokens": -n, "file": f, "row": r} for n, f, r in sorted(longest)[:LONGEST]
        ],
        "length_histogram": {bucket_label(b): histogram[b] for b in sorted(histogram)},
    }


def _check(out: Path, names: list[str]) -> dict:
    report = summary(out)["token_stats"]
    got = {key: report[key] for key in _expected(out, names)}
    assert got == _expected(out, names)
    assert report["shards_without_stats"] == 0
    return report


def test_the_statistics_are_the_whole_outputs_after_a_rerun_and_a_partial_rerun(
    tmp_path: Path,
) -> None:
    docs = texts(300, seed=8, max_words=80)
    docs[5] = None  # a bad row: no ids, not a document
    write_parquet(tmp_path / "in" / "a.parquet", docs[:200], row_group_size=40)
    write_parquet(tmp_path / "in" / "b.parquet", docs[200:], row_group_size=40)
    job = basic_job(tmp_path, run__shard_mb=0.004)
    out = tmp_path / "out"
    code, output = invoke("run", job)
    assert code == 3, output
    first = _check(out, ["a.parquet", "b.parquet"])
    _check_chart(out / "_batchtok_token_stats.svg", first)
    code, output = invoke("run", job)
    assert code == 3 and "nothing to do" in output, output
    assert summary(out)["token_stats"] == first
    code, output = invoke("status", job)
    assert f"outputs hold {first['documents']:,} documents" in output
    # one file changes: the other's statistics come from its record
    write_parquet(tmp_path / "in" / "b.parquet", texts(50, seed=9), row_group_size=40)
    code, output = invoke("run", job)
    assert code == 3, output
    assert summary(out)["shards"]["cached"] >= 5
    _check(out, ["a.parquet", "b.parquet"])


def _fallback_tokenizer(path: Path, byte_fallback: bool) -> Path:
    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": 1 + b for b in range(256)}}
    for piece in ("a", "b", "ab", " "):
        vocab[piece] = len(vocab)
    model = {
        "type": "BPE",
        "unk_token": "<unk>",
        "fuse_unk": False,
        "byte_fallback": byte_fallback,
        "vocab": vocab,
        "merges": [["a", "b"]],
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(model_file(model), encoding="utf-8")
    return path


@pytest.mark.parametrize("byte_fallback", [True, False])
def test_unknown_and_byte_fallback_rates_count_the_oracles_ids(
    tmp_path: Path, byte_fallback: bool
) -> None:
    docs = ["ab ab", "abc", "é a b", "", "ab" * 50, "日本 ab", "xyz"]
    write_parquet(tmp_path / "in" / "a.parquet", docs)
    tok = _fallback_tokenizer(tmp_path / "tok" / "tokenizer.json", byte_fallback)
    code, output = invoke("run", basic_job(tmp_path, tokenizer__path=str(tok)))
    assert code == 0, output
    ids = [e.ids for e in tokenizers.Tokenizer.from_file(str(tok)).encode_batch(docs)]
    flat = [i for row in ids for i in row]
    report = summary(tmp_path / "out")["token_stats"]
    assert report["tokens"] == len(flat)
    assert report["unknown_tokens"] == flat.count(0)
    assert report["byte_fallback_tokens"] == (
        sum(1 <= i <= 256 for i in flat) if byte_fallback else 0
    )
    assert (report["unknown_tokens"] > 0) != byte_fallback


_STATS = st.builds(
    lambda rows, name, first, unk: _stats(rows, name, first, unk),
    st.lists(st.one_of(st.none(), st.integers(0, 5000)), max_size=30),
    st.sampled_from(["a.parquet", "b.parquet", "c/d.parquet"]),
    st.integers(0, 100),
    st.integers(0, 50),
)


def _stats(rows: list[int | None], name: str, first: int, unk: int) -> TokenStats:
    s = TokenStats(unknown=unk)
    s.add_documents(rows, 10 * len(rows), name, first)
    return s


def _copy(s: TokenStats) -> TokenStats:
    got = TokenStats.from_json(json.loads(json.dumps(s.to_json())))
    assert got is not None
    return got


@settings(max_examples=examples(200), deadline=None)
@given(_STATS, _STATS, _STATS)
def test_merging_is_associative_commutative_and_survives_json(
    x: TokenStats, y: TokenStats, z: TokenStats
) -> None:
    left = _copy(x).merge(_copy(y)).merge(_copy(z))
    right = _copy(x).merge(_copy(z).merge(_copy(y)))
    assert left.to_json() == right.to_json()
    assert _copy(left).to_json() == left.to_json()


def _check_chart(chart: Path, report: dict) -> None:
    """The SVG chart parses and holds one bar per histogram bucket, its count in the tooltip
    and its height proportional to it, under a title with the headline counts."""
    root = ElementTree.fromstring(chart.read_text(encoding="utf-8"))
    ns = "{http://www.w3.org/2000/svg}"
    bars = [r for r in root.iter(f"{ns}rect") if r.find(f"{ns}title") is not None]
    histogram = report["length_histogram"]
    assert [b.find(f"{ns}title").text for b in bars] == [
        f"{label} tokens: {count:,} documents" for label, count in histogram.items()
    ]
    heights = [float(b.get("height")) for b in bars]
    peak = max(histogram.values())
    for height, count in zip(heights, histogram.values()):
        assert abs(height - count / peak * max(heights)) < 0.1
    texts = [t.text for t in root.iter(f"{ns}text")]
    assert f"{report['documents']:,} documents, {report['tokens']:,} tokens" in texts[0]


def test_the_chart_replaces_one_an_older_batchtok_drew_and_escapes_the_job_name(
    tmp_path: Path,
) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(40, seed=3), row_group_size=40)
    job = basic_job(tmp_path, name="a<b>&c")
    out = tmp_path / "out"
    out.mkdir()
    (out / "_batchtok_token_stats.png").write_bytes(b"\x89PNG\r\n\x1a\n old")
    code, output = invoke("run", job)
    assert code == 0, output
    assert not (out / "_batchtok_token_stats.png").exists()
    chart = out / "_batchtok_token_stats.svg"
    _check_chart(chart, summary(out)["token_stats"])
    root = ElementTree.fromstring(chart.read_text(encoding="utf-8"))
    heading = next(root.iter("{http://www.w3.org/2000/svg}text")).text
    assert heading.startswith("a<b>&c: 40 documents")


_LENGTH = st.one_of(st.none(), st.integers(0, 3), st.integers(0, 2**40))


def _rowwise(lengths: list[int | None], name: str, first: int) -> dict:
    """What add_documents counts, by its definition: row by row."""
    found = [(n, name, first + i) for i, n in enumerate(lengths) if n is not None]
    return {
        "documents": len(found),
        "tokens": sum(n for n, _, _ in found),
        "lengths": Counter(n.bit_length() for n, _, _ in found),
        "longest": sorted(found, key=lambda x: (-x[0], x[1], x[2]))[:LONGEST],
    }


@settings(max_examples=examples(200), deadline=None)
@given(
    st.one_of(
        st.lists(_LENGTH, max_size=VECTOR_ROWS),
        st.lists(_LENGTH, min_size=VECTOR_ROWS, max_size=400),
    ),
    st.integers(0, 10**9),
    st.booleans(),
)
def test_documents_counted_a_batch_at_a_time_equal_the_rows_counted_one_by_one(
    lengths: list[int | None], first: int, with_numpy: bool
) -> None:
    """Short and long batches, nulls anywhere, ties at the LONGEST cut, lengths far beyond
    a row's; with numpy and without it."""
    from batchtok.runner.report import token_stats

    saved = token_stats.np
    token_stats.np = saved if with_numpy else None
    try:
        got = TokenStats()
        got.add_documents(lengths, 7, "f.parquet", first)
    finally:
        token_stats.np = saved
    want = _rowwise(lengths, "f.parquet", first)
    assert got.documents == want["documents"] and got.tokens == want["tokens"]
    assert got.lengths == want["lengths"] and got.longest == want["longest"]
    assert got.text_bytes == 7
    assert all(type(x) is int for row in got.longest for x in (row[0], row[2]))
    assert all(type(k) is int and type(v) is int for k, v in got.lengths.items())
