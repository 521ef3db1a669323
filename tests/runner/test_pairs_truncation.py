"""Pair inputs and truncation in the runner: ids equal to `tokenizers`' for every row, with the
truncation of the job or of the tokenizer file, padding never applied, cache keys that follow
exactly what changed, and validation errors that name their key."""

from __future__ import annotations

import json
import random
import sys
import tracemalloc
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tokenizers
from hypothesis import given, settings
from hypothesis import strategies as st

import batchtok
from batchtok.runner.exec.encode import MEMO_BYTES, Encoder
from tests.support.adversarial import adversarial_cases
from tests.support.fixtures import fixture_path
from tests.support.runner import (
    GPT2,
    basic_job,
    invoke,
    oracle_ids,
    summary,
    template_tokenizer,
    texts,
    write_parquet,
)

MINILM = fixture_path("minilm")  # truncation (128) and padding (fixed 128) in the file
BERT = fixture_path("trained-wordpiece-bert")  # BertProcessing, no truncation in the file


def _rows(n: int, seed: int) -> tuple[list[str], list[str]]:
    """Texts and pairs of very different lengths (some over MiniLM's 128), with adversarial
    strings among them."""
    rng = random.Random(seed)
    odd = [text for _, text in adversarial_cases()]
    rng.shuffle(odd)
    text = texts(n, seed=seed, max_words=90)
    pair = texts(n, seed=seed + 1, max_words=30)
    for i in range(0, n, 7):
        text[i] = odd[i % len(odd)][:400]
    for i in range(3, n, 11):
        pair[i] = odd[(i * 5) % len(odd)][:400]
    pair[1] = text[1] = ""
    return text, pair


def _write(tmp: Path, name: str, n: int, seed: int, **parquet) -> tuple[list, list]:
    text, pair = _rows(n, seed)
    write_parquet(tmp / "in" / name, text, extra={"question": pair}, **parquet)
    return text, pair


@pytest.fixture
def paired(tmp_path: Path) -> Path:
    """Two inputs with a pair column "question": one cut into several shards, one small."""
    _write(tmp_path, "a.parquet", 120, 1, row_group_size=20)
    _write(tmp_path, "b.parquet", 25, 2)
    return tmp_path


def _job(tmp: Path, tokenizer: Path, **settings) -> Path:
    return basic_job(tmp, tokenizer__path=str(tokenizer), run__shard_mb=0.004, **settings)


def _oracle_rows(
    path: Path, text: list, pair: list | None, max_length: int | str, **options
) -> list[list[int] | None]:
    """The oracle's ids per row, None where it refuses the row (as batchtok's bad rows)."""
    ref = tokenizers.Tokenizer.from_file(str(path))
    ref.no_padding()
    if isinstance(max_length, int):
        ref.enable_truncation(max_length, **options)
    elif max_length == "none":
        ref.no_truncation()
    out: list[list[int] | None] = []
    for i, t in enumerate(text):
        try:
            out.append(ref.encode(t, None if pair is None else pair[i]).ids)
        except Exception:  # noqa: BLE001 - the library refuses the row (error or panic)
            out.append(None)
    return out


def _check(tmp: Path, tokenizer: Path, *, pairs: bool = True, **oracle) -> list[list[int]]:
    """Every output row equals the oracle's; returns all ids written."""
    written = []
    max_length = oracle.pop("max_length", "tokenizer")
    for path in sorted((tmp / "in").glob("*.parquet")):
        source = pq.read_table(path)
        text = source["text"].to_pylist()
        pair = source["question"].to_pylist() if pairs else None
        got = pq.read_table(tmp / "out" / path.name)["input_ids"].to_pylist()
        expected = _oracle_rows(tokenizer, text, pair, max_length, **oracle)
        bad = [i for i, (a, b) in enumerate(zip(got, expected)) if a != b]
        assert not bad and len(got) == len(text), f"{path.name}: rows {bad[:5]} differ"
        written += got
    return written


def _run(job: Path, *args: str, expect: int = 0) -> str:
    code, output = invoke("run", job, *args)
    assert code == expect, output
    return output


def _meta(out: Path, name: str = "a.parquet") -> dict:
    return json.loads(pq.read_metadata(out / name).metadata[b"batchtok"])


# -- pairs end to end --------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["minilm", "bert", "template-gpt2"])
def test_pairs_equal_the_oracle_for_every_row(paired: Path, name: str) -> None:
    tok = {"minilm": MINILM, "bert": BERT}.get(name) or template_tokenizer(paired)
    output = _run(_job(paired, tok, input__pair_column="question"))
    report = summary(paired / "out")
    assert report["shards"]["total"] > 3 and report["status"] == "success"
    written = _check(paired, tok)
    meta = _meta(paired / "out")
    assert meta["input"]["pair_column"] == "question"
    if name == "minilm":  # the file's truncation applies, its padding does not
        assert meta["encode"]["truncation"]["max_length"] == 128
        assert meta["encode"]["truncation_from"] == "tokenizer file"
        assert meta["encode"]["tokenizer_padding_not_applied"]["length"] == 128
        assert "not applied" in output and "unpadded" in output
        lengths = {len(ids) for ids in written}
        assert max(lengths) == 128 and min(lengths) < 20
        assert not any(ids[-1] == 0 for ids in written)  # no [PAD]
    else:
        assert meta["encode"]["truncation"] is None and "not applied" not in output


def test_a_null_pair_is_a_bad_row_logged_with_file_and_row(tmp_path: Path) -> None:
    text, pair = _rows(30, 4)
    pair[5] = None
    text[9] = None
    write_parquet(tmp_path / "in" / "a.parquet", text, extra={"question": pair})
    output = _run(_job(tmp_path, BERT, input__pair_column="question"), expect=3)
    assert "a.parquet row 5: null pair" in output and "a.parquet row 9: null text" in output
    report = summary(tmp_path / "out")["bad_rows"]
    assert report["count"] == 2 and report["by_reason"] == {"null pair": 1, "null text": 1}
    got = pq.read_table(tmp_path / "out" / "a.parquet")["input_ids"].to_pylist()
    assert got[5] is None and got[9] is None
    keep = [i for i in range(30) if i not in (5, 9)]
    expected = oracle_ids([text[i] for i in keep], pairs=[pair[i] for i in keep], path=BERT)
    assert [got[i] for i in keep] == expected


# -- truncation --------------------------------------------------------------------------------


@pytest.mark.parametrize("strategy", ["longest_first", "only_first", "only_second"])
@pytest.mark.parametrize("direction", ["right", "left"])
def test_job_truncation_of_pairs_matches_the_oracle(
    paired: Path, strategy: str, direction: str
) -> None:
    job = _job(
        paired,
        BERT,
        input__pair_column="question",
        encode__max_length=24,
        encode__truncation_strategy=strategy,
        encode__truncation_direction=direction,
    )
    code, output = invoke("run", job)
    # only_first/only_second: `tokenizers` refuses rows whose truncated side is too short
    assert code == (0 if strategy == "longest_first" else 3), output
    written = _check(paired, BERT, max_length=24, strategy=strategy, direction=direction)
    assert max(len(ids) for ids in written if ids) == 24
    if code == 3:
        assert "Sequence to truncate too short" in output
    meta = _meta(paired / "out")["encode"]
    assert meta["truncation"] == {
        "max_length": 24,
        "stride": 0,
        "strategy": strategy,
        "direction": direction,
    }
    assert meta["truncation_from"] == "job"


@pytest.mark.parametrize(("max_length", "direction"), [(2, "right"), (9, "left"), (40, "right")])
def test_job_truncation_of_single_texts_matches_the_oracle(
    paired: Path, max_length: int, direction: str
) -> None:
    tok = template_tokenizer(paired)  # two special tokens around each text
    settings = {"encode__max_length": max_length, "encode__truncation_direction": direction}
    _run(_job(paired, tok, **settings))
    _check(paired, tok, pairs=False, max_length=max_length, direction=direction)


def test_the_tokenizer_files_truncation_applies_unless_the_job_says_none(paired: Path) -> None:
    job = _job(paired, MINILM)
    _run(job)
    lengths = [len(ids) for ids in _check(paired, MINILM, pairs=False)]
    assert max(lengths) == 128
    _run(job, "--set", 'encode.max_length="none"')
    lengths = [len(ids) for ids in _check(paired, MINILM, pairs=False, max_length="none")]
    assert max(lengths) > 128
    assert _meta(paired / "out")["encode"]["truncation"] is None


# -- the cache ---------------------------------------------------------------------------------


def _shards(out: Path) -> dict:
    return summary(out)["shards"]


def test_pair_and_truncation_changes_recompute_exactly_the_affected_shards(paired: Path) -> None:
    out = paired / "out"
    job = _job(paired, MINILM, input__pair_column="question")
    _run(job)
    total = _shards(out)["total"]
    _run(job)
    assert _shards(out)["cached"] == total and _shards(out)["done"] == 0
    # the same truncation as the file's, spelled in the job: same ids, same keys
    _run(job, "--set", "encode.max_length=128")
    assert _shards(out)["done"] == 0
    # a different truncation: every shard
    _run(job, "--set", "encode.max_length=128", "--set", "encode.truncation_direction=left")
    assert _shards(out)["done"] == total
    _check(paired, MINILM, max_length=128, direction="left")
    _run(job)
    assert _shards(out)["done"] == total
    # one pair changed: its shard only
    path = paired / "in" / "a.parquet"
    table = pq.read_table(path)
    pair = table["question"].to_pylist()
    pair[50] = "a changed question"
    table = table.set_column(table.schema.get_field_index("question"), "question", pa.array(pair))
    pq.write_table(table, path, row_group_size=20)
    _run(job, "--set", "output.keep_columns=[]")  # kept columns off: only the pair hash changes
    _run(job, "--set", "output.keep_columns=[]")
    pair[50] = "changed again"
    table = table.set_column(table.schema.get_field_index("question"), "question", pa.array(pair))
    pq.write_table(table, path, row_group_size=20)
    _run(job, "--set", "output.keep_columns=[]")
    assert _shards(out)["done"] == 1
    _check(paired, MINILM)
    # no pair column at all: every shard
    _run(job, "--set", 'input.pair_column=""', "--set", "output.keep_columns=[]")
    assert _shards(out)["done"] == total
    _check(paired, MINILM, pairs=False)


# -- validation --------------------------------------------------------------------------------


def _usage_error(job: Path, *args: str) -> str:
    code, output = invoke("run", job, *args)
    assert code == 2, output
    return output


def test_a_missing_or_non_string_pair_column_names_its_key(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(5), extra={"n": list(range(5))})
    job = _job(tmp_path, BERT, input__pair_column="question")
    output = _usage_error(job)
    assert "input.pair_column" in output and 'column "question" is missing' in output
    output = _usage_error(job, "--set", "input.pair_column=n")
    assert "input.pair_column" in output and "holds int64, expected strings" in output


def _tokenizer_with(tmp: Path, base: Path, **changes) -> Path:
    data = json.loads(base.read_text(encoding="utf-8"))
    data.update(changes)
    path = tmp / "tok" / "changed.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_impossible_truncation_settings_name_their_key(paired: Path) -> None:
    job = _job(paired, BERT, input__pair_column="question", encode__max_length=2)
    output = _usage_error(job)  # BertProcessing adds 3 to a pair (2 to a single text)
    assert "encode.max_length" in output and "3 special tokens" in output
    single = ("--set", 'input.pair_column=""')
    assert "2 special tokens" in _usage_error(job, *single, "--set", "encode.max_length=1")
    _run(job, *single)  # max_length 2 = the special tokens: each row is [CLS] [SEP]
    _check(paired, BERT, pairs=False, max_length=2)
    trunc = {"max_length": 10, "strategy": "LongestFirst", "stride": 8, "direction": "Right"}
    tok = _tokenizer_with(paired, MINILM, truncation=trunc)
    output = _usage_error(_job(paired, tok))
    assert "encode.max_length" in output and "stride 8" in output and "changed.json" in output
    assert invoke("run", _job(paired, tok), "--set", 'encode.max_length="none"')[0] == 0
    tok = _tokenizer_with(paired, MINILM, truncation={**trunc, "stride": 0, "max_length": 1})
    assert "2 special tokens" in _usage_error(_job(paired, tok))
    tok = _tokenizer_with(
        paired, MINILM, truncation={**trunc, "stride": 0, "strategy": "OnlySecond"}
    )
    output = _usage_error(_job(paired, tok))
    assert "encode.max_length" in output and "only_second" in output
    with_pair = _job(paired, tok, input__pair_column="question")
    code, output = invoke("run", with_pair)
    assert code == 3, output  # rows whose pair is too short to truncate are bad rows
    _check(paired, tok)


def test_engine_refusals_become_job_errors(paired: Path, monkeypatch) -> None:
    def refuse(self, *args, **kwargs):
        raise ValueError("no truncation today")

    monkeypatch.setattr(batchtok.Tokenizer, "enable_truncation", refuse)
    output = _usage_error(_job(paired, BERT, encode__max_length=10))
    assert "encode.max_length" in output and "no truncation today" in output


# -- the per-shard memo ------------------------------------------------------------------------


class _Counting:
    """A tokenizer stand-in that counts the inputs it is asked to encode."""

    def __init__(self, tok: batchtok.Tokenizer) -> None:
        self.tok, self.inputs = tok, 0

    def encode_batch_ids(self, texts, add_special_tokens=True, pairs=None):
        self.inputs += len(texts)
        return self.tok.encode_batch_ids(texts, add_special_tokens, pairs)


def test_identical_pairs_are_encoded_once_per_shard() -> None:
    counting = _Counting(batchtok.Tokenizer.from_file(BERT))
    encoder = Encoder(counting, True)  # type: ignore[arg-type]
    text, pair = ["a b", "a b", "c"], ["x", "y", "x"]
    first, _ = encoder.encode(text, pair)
    again, _ = encoder.encode(text[::-1], pair[::-1])
    assert counting.inputs == 3 and again == first[::-1]
    assert first == oracle_ids(text, pairs=pair, path=BERT)
    assert first[0] != first[1]  # keyed by the pair too, not the text alone


def test_the_memo_accounts_what_it_holds() -> None:
    assert MEMO_BYTES == 16 << 20
    tok = batchtok.Tokenizer.from_file(GPT2)
    rows = [f"{t} Привет 日本語 {i}" for i, t in enumerate(texts(3000, seed=9, max_words=30))]
    pairs = [t[::-1] for t in rows]
    tok.encode_batch_ids(rows, True, pairs)  # the piece cache is not the memo's to count
    encoder = Encoder(tok, True, memo_bytes=1 << 40)
    batches = [
        ([s.encode().decode() for s in rows[k : k + 500]], pairs[k : k + 500])
        for k in range(0, len(rows), 500)
    ]
    tracemalloc.start()
    for text, pair in batches:
        encoder.encode(list(text), [p.encode().decode() for p in pair])
    held, _ = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert 0.85 * held <= encoder.memo_used <= 1.3 * held, (held, encoder.memo_used)
    small = Encoder(tok, True, memo_bytes=200_000)
    for text, pair in batches:
        small.encode(text, pair)
        sizes = sum(sys.getsizeof(v) + sys.getsizeof(k) for k, v in small.memo.items())
        assert small.memo_used <= 200_000 and sizes <= small.memo_used


_WIDE = st.text(st.characters(codec="utf-8"), max_size=40)
_BERT_TRUNCATED = batchtok.Tokenizer.from_file(BERT)
_BERT_TRUNCATED.enable_truncation(12, strategy="longest_first", direction="left")
_BERT_ORACLE = tokenizers.Tokenizer.from_file(str(BERT))
_BERT_ORACLE.enable_truncation(12, strategy="longest_first", direction="left")


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(_WIDE, _WIDE), max_size=6))
def test_encoder_pairs_with_truncation_equal_the_oracle(rows: list[tuple[str, str]]) -> None:
    got, errors = Encoder(_BERT_TRUNCATED, True).encode([r[0] for r in rows], [r[1] for r in rows])
    assert not errors
    assert got == [e.ids for e in _BERT_ORACLE.encode_batch(rows)]
