"""Several tokenizers in one pass (``tokenizer.paths``): the example job with GPT-2 and
Gemma 3 writes each tokenizer's outputs equal to the oracle, reading each shard once; a
tokenizer added to a finished job encodes alone, one dropped touches nothing; the comparison
page is written beside the outputs and renders in Chromium with both tokenizers' bars."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from batchtok.formats import megatron
from batchtok.runner.exec import worker
from batchtok.runner.report.compare import COLORS
from tests.support import browser
from tests.support.fixtures import tokenizer_path
from tests.support.runner import EXAMPLE_JOB, SAMPLE, invoke, oracle_ids, summary

GPT2 = Path(__file__).resolve().parents[2] / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"


def _paths(**names: Path) -> list[str]:
    table = ", ".join(f"{n} = {json.dumps(str(p))}" for n, p in names.items())
    return ["--set", f"tokenizer.paths={{{table}}}"]


def _count_reads(monkeypatch: pytest.MonkeyPatch, log: Path) -> None:
    """Log every read of an input's rows by a worker (the encode's reads, one a shard)."""
    original = worker.read_batches

    def read_batches(*args, **kwargs):  # type: ignore[no-untyped-def]
        with open(log, "a", encoding="utf-8") as f:
            f.write(f"{os.getpid()}\n")
        return original(*args, **kwargs)

    monkeypatch.setattr(worker, "read_batches", read_batches)


def _reads(log: Path) -> int:
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_two_tokenizers_in_one_read_each_equal_to_its_oracle(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gemma3 = tokenizer_path("gemma3")
    log = tmp_path / "reads"
    _count_reads(monkeypatch, log)
    out = tmp_path / "out"
    shards = ["--set", "run.shard_mb=0.03"]
    code, output = invoke("run", EXAMPLE_JOB, "-o", out, *_paths(gpt2=GPT2, gemma3=gemma3), *shards)
    assert code == 0, output
    texts = pq.read_table(SAMPLE)["text"].to_pylist()
    for name, path in (("gpt2", GPT2), ("gemma3", gemma3)):
        ids = pq.read_table(out / name / "sample.parquet")["input_ids"].to_pylist()
        assert ids == oracle_ids(texts, path=path), name
    shards_read = summary(out / "gpt2")["shards"]["done"]
    assert shards_read == 3 and _reads(log) == 3  # each shard read once, for both
    assert summary(out / "gemma3")["shards"]["done"] == 0  # joined from the parts written
    # two separate runs read every shard twice
    log.unlink()
    for name, path in (("gpt2", GPT2), ("gemma3", gemma3)):
        args = ("-o", tmp_path / "apart" / name, "--set", f"tokenizer.path={json.dumps(str(path))}")
        assert invoke("run", EXAMPLE_JOB, *args, *shards)[0] == 0
    assert _reads(log) == 6
    report = json.loads((out / "_batchtok_compare.json").read_text())
    assert sorted(report["overall"]) == ["gemma3", "gpt2"]
    drawn = browser.drawn(out / "_batchtok_compare.html", list(COLORS[:2]), tmp_path)
    assert all(pixels > 500 and rows > 50 for pixels, rows in drawn.values()), drawn
    code, output = invoke(
        "audit", EXAMPLE_JOB, "-o", out, *_paths(gpt2=GPT2, gemma3=gemma3), *shards
    )
    assert code == 0 and output.count("all equal") == 2, output


def test_a_tokenizer_added_encodes_alone_and_one_dropped_touches_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gemma3, llama2 = tokenizer_path("gemma3"), tokenizer_path("llama2")
    out = tmp_path / "out"
    args = ("-o", out, "--set", "output.format=megatron")
    assert invoke("run", EXAMPLE_JOB, *args, *_paths(gpt2=GPT2, gemma3=gemma3))[0] == 0
    before = {p: p.stat().st_mtime_ns for p in out.rglob("*.bin")}
    log = tmp_path / "reads"
    _count_reads(monkeypatch, log)
    code, output = invoke(
        "run", EXAMPLE_JOB, *args, *_paths(gpt2=GPT2, gemma3=gemma3, llama2=llama2)
    )
    assert code == 0, output
    assert summary(out / "gpt2")["shards"]["done"] == summary(out / "gemma3")["shards"]["done"] == 0
    assert summary(out / "llama2")["shards"]["done"] == 1 and _reads(log) == 1
    texts = pq.read_table(SAMPLE)["text"].to_pylist()
    got = [d.tolist() for d in megatron.read_documents(str(out / "llama2" / "sample"))]
    assert got == oracle_ids(texts, path=llama2)
    code, output = invoke("run", EXAMPLE_JOB, *args, *_paths(gpt2=GPT2, llama2=llama2))
    assert code == 0 and output.count("nothing to do") == 2, output
    assert all(p.stat().st_mtime_ns == t for p, t in before.items())


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        (['tokenizer.paths={"a/b" = "x.json"}'], 'must not hold "/"'),
        (["tokenizer.paths=[1]"], "expected a table of names"),
        (['tokenizer.path=""'], "required key is missing"),
        (['tokenizer.paths={a = "no/such/tokenizer.json"}'], "a: no such file"),
    ],
)
def test_a_bad_table_of_tokenizers_is_refused(
    tmp_path: Path, settings: list[str], says: str
) -> None:
    args = [a for s in settings for a in ("--set", s)]
    code, output = invoke("run", EXAMPLE_JOB, "-o", tmp_path / "out", *args)
    assert code == 2 and says in output, output


def test_the_statistics_by_group_and_the_largest_id_are_the_oracles(tmp_path: Path) -> None:
    """report.group_column: each tokenizer's tokens and documents per value of the column
    (and its largest id written) equal the oracle's, in the summaries and the comparison."""
    import pyarrow as pa

    from tests.support.runner import texts as sample_texts

    rows = sample_texts(120, seed=9)
    rows[4] = None  # a bad row: no document of any group
    langs = ["en" if i % 3 else "xx" for i in range(120)]
    (tmp_path / "in").mkdir()
    pq.write_table(pa.table({"text": rows, "lang": langs}), tmp_path / "in" / "a.parquet")
    gemma3 = tokenizer_path("gemma3")
    out = tmp_path / "out"
    args = ("-i", tmp_path / "in", "-o", out, "--set", "report.group_column=lang")
    code, output = invoke("run", EXAMPLE_JOB, *args, *_paths(gpt2=GPT2, gemma3=gemma3))
    assert code == 3, output  # (the bad row)
    report = json.loads((out / "_batchtok_compare.json").read_text())
    for name, path in (("gpt2", GPT2), ("gemma3", gemma3)):
        ids = oracle_ids([t or "" for t in rows], path=path)
        stats = summary(out / name)["token_stats"]
        for lang in ("en", "xx"):
            mine = [i for i, lg in enumerate(langs) if lg == lang and rows[i] is not None]
            want = {"documents": len(mine), "tokens": sum(len(ids[i]) for i in mine)}
            got = stats["groups"][lang]
            assert {k: got[k] for k in want} == want, (name, lang)
            assert report["groups"][lang][name]["tokens"] == want["tokens"]
        assert stats["largest_id"] == max(i for j, doc in enumerate(ids) if rows[j] for i in doc)


def test_plan_and_audit_of_several_tokenizers_give_one_json_document(tmp_path: Path) -> None:
    gemma3 = tokenizer_path("gemma3")
    args = ("-o", tmp_path / "out", *_paths(gpt2=GPT2, gemma3=gemma3))
    assert invoke("run", EXAMPLE_JOB, *args)[0] == 0
    for command in ("plan", "audit"):
        code, output = invoke(command, EXAMPLE_JOB, *args, "--json")
        assert code == 0, output
        doc = json.loads(output[output.index("{") :])
        assert sorted(doc["tokenizers"]) == ["gemma3", "gpt2"], command
    assert doc["tokenizers"]["gemma3"]["ok"] is True


def test_a_changed_group_column_is_counted_again(tmp_path: Path) -> None:
    """report.group_column's values are hashed with the text: new values alone re-encode
    the shards, and the statistics count the new groups."""
    import pyarrow as pa

    from tests.support.runner import texts as sample_texts

    rows = sample_texts(30, seed=2)
    (tmp_path / "in").mkdir()
    path = tmp_path / "in" / "a.parquet"
    args = ("-i", tmp_path / "in", "-o", tmp_path / "out", "--set", "report.group_column=lang")
    for lang in ("en", "de"):
        pq.write_table(pa.table({"text": rows, "lang": [lang] * 30}), path)
        code, output = invoke("run", EXAMPLE_JOB, *args)
        assert code == 0, output
        assert list(summary(tmp_path / "out")["token_stats"]["groups"]) == [lang]


def test_an_interrupted_tokenizer_run_stops_the_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C or SIGTERM during the first tokenizer's run ends the job (exit 130): the next
    tokenizer's run does not start."""
    from batchtok.runner import load_job
    from batchtok.runner import run as run_module
    from batchtok.runner.exit_codes import EXIT_INTERRUPTED

    started = []

    def execute(self):  # type: ignore[no-untyped-def]
        started.append(self.job.output_dir.name)
        return run_module.RunResult(EXIT_INTERRUPTED, {"status": "interrupted"})

    monkeypatch.setattr(run_module._Run, "execute", execute)
    table = {"gpt2": str(GPT2), "gemma3": str(tokenizer_path("gemma3"))}
    job = load_job(EXAMPLE_JOB, {"tokenizer.paths": table, "output.dir": str(tmp_path / "o")})
    result = run_module.run_job(job, quiet=True)
    assert result.exit_code == EXIT_INTERRUPTED and started == ["gpt2"]
