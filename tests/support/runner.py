"""Small Parquet inputs, job files and CLI calls for the runner tests (tests/runner/)."""

from __future__ import annotations

import functools
import json
import os
import random
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import tokenizers
from click.testing import CliRunner

from batchtok.runner import cli
from batchtok.runner.outputs import parquet as output_module

REPO = Path(__file__).resolve().parents[2]
GPT2 = REPO / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"
EXAMPLE_JOB = REPO / "jobs" / "example.toml"
SAMPLE = REPO / "configs" / "samples" / "sample.parquet"
WORDS = (
    "the of and to in is was for on that with as by at from it an be this are or his "
    "Straße naïve café 日本語 테스트 Привет مرحبا 1234 3.14 <|endoftext|> def return {} ( ) "
    "\n \t  "
).split(" ")


def texts(n: int, seed: int = 0, max_words: int = 40) -> list[str]:
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(0, max_words))) for _ in range(n)]


def write_parquet(
    path: Path,
    text: Sequence[str | None],
    *,
    row_group_size: int = 50,
    extra: dict[str, Sequence[Any]] | None = None,
    text_column: str = "text",
) -> Path:
    columns: dict[str, Any] = {"id": pa.array(range(len(text)), pa.int64())}
    columns.update(extra or {})
    columns[text_column] = pa.array(list(text), pa.string())
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.table(columns), path, row_group_size=row_group_size)
    return path


def toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    raise TypeError(value)


def write_job(path: Path, settings: dict[str, Any], extra: str = "") -> Path:
    """A job file from dotted keys: {"input.paths": [...], "run.workers": 2}."""
    sections: dict[str, dict[str, Any]] = {}
    top: dict[str, Any] = {}
    for key, value in settings.items():
        if "." in key:
            section, name = key.split(".", 1)
            sections.setdefault(section, {})[name] = value
        else:
            top[key] = value
    lines = [f"{k} = {toml_value(v)}" for k, v in top.items()]
    for section, values in sections.items():
        lines.append(f"\n[{section}]")
        lines += [f"{k} = {toml_value(v)}" for k, v in values.items()]
    path.write_text("\n".join(lines) + "\n" + extra, encoding="utf-8")
    return path


def basic_job(tmp_path: Path, **overrides: Any) -> Path:
    """A job over tmp_path/in/*.parquet into tmp_path/out with the GPT-2 tokenizer."""
    settings: dict[str, Any] = {
        "input.paths": [str(tmp_path / "in")],
        "tokenizer.path": str(GPT2),
        "output.dir": str(tmp_path / "out"),
        "run.workers": 2,
    }
    settings.update({k.replace("__", "."): v for k, v in overrides.items()})
    return write_job(tmp_path / "job.toml", settings)


def invoke(command: str, *args: str) -> tuple[int, str]:
    """(exit code, stdout + stderr) of ``batchtok COMMAND ARGS`` through click's runner."""
    result = CliRunner().invoke(getattr(cli, command), [str(a) for a in args])
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result.exit_code, result.output


def summary(out: Path) -> dict[str, Any]:
    return json.loads((out / "_batchtok_summary.json").read_text(encoding="utf-8"))


@functools.cache
def oracle(path: str = str(GPT2)) -> tokenizers.Tokenizer:
    return tokenizers.Tokenizer.from_file(path)


def oracle_ids(
    text: Sequence[str],
    *,
    pairs: Sequence[str] | None = None,
    add_special_tokens: bool = True,
    special_as_text: bool = False,
    max_length: int | str = "tokenizer",
    strategy: str = "longest_first",
    direction: str = "right",
    path: Path = GPT2,
) -> list[list[int]]:
    """``tokenizers``' ids for each text (and pair), unpadded, with the truncation a job's
    ``encode.max_length`` (and strategy, direction) would give."""
    ref = tokenizers.Tokenizer.from_file(str(path))
    ref.encode_special_tokens = special_as_text
    ref.no_padding()
    if isinstance(max_length, int):
        ref.enable_truncation(max_length, strategy=strategy, direction=direction)
    elif max_length == "none":
        ref.no_truncation()
    inputs = list(text) if pairs is None else list(zip(text, pairs))
    return [e.ids for e in ref.encode_batch(inputs, add_special_tokens=add_special_tokens)]


def kill_worker_on_shard(shard: str, monkeypatch: Any, parent: int) -> None:
    """Make the worker writing shard ``shard`` (``"c.parquet#2"``) die (exit 9) after its
    first row group hit the disk. Workers are forked from the test process (pid ``parent``),
    so the patch reaches them."""
    original = output_module.AtomicParquet.write

    def write(self: Any, table: pa.Table) -> None:
        original(self, table)
        doc = self.schema.metadata[b"batchtok"].decode()
        if os.getpid() != parent and f'"shard":"{shard}"' in doc:
            os._exit(9)

    monkeypatch.setattr(output_module.AtomicParquet, "write", write)


def visible_files(out: Path) -> list[str]:
    """Files a reader of the output directory sees (hidden and _-prefixed excluded)."""
    return sorted(
        p.relative_to(out).as_posix()
        for p in out.rglob("*")
        if p.is_file() and not any(part.startswith((".", "_")) for part in p.relative_to(out).parts)
    )


def template_tokenizer(tmp_path: Path) -> Path:
    """GPT-2 with a post-processor that puts <|endoftext|> before and after each text."""
    data = json.loads(GPT2.read_text(encoding="utf-8"))
    eot = {"id": "<|endoftext|>", "type_id": 0}
    data["post_processor"] = {
        "type": "TemplateProcessing",
        "single": [
            {"SpecialToken": eot},
            {"Sequence": {"id": "A", "type_id": 0}},
            {"SpecialToken": eot},
        ],
        "pair": [{"Sequence": {"id": "A", "type_id": 0}}, {"Sequence": {"id": "B", "type_id": 1}}],
        "special_tokens": {
            "<|endoftext|>": {"id": "<|endoftext|>", "ids": [50256], "tokens": ["<|endoftext|>"]}
        },
    }
    path = tmp_path / "tok" / "tokenizer.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def check_outputs(out: Path, inputs: Path) -> None:
    """The output directory holds one file per ``inputs/*.parquet``, each with ``tokenizers``'
    ids of its text column."""
    names = visible_files(out)
    assert names == sorted(p.name for p in inputs.glob("*.parquet"))
    for name in names:
        text = pq.read_table(inputs / name)["text"].to_pylist()
        assert pq.read_table(out / name)["input_ids"].to_pylist() == oracle_ids(text)
