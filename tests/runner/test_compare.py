"""``batchtok compare``: two tokenizers' outputs of the example job side by side. The figures
are the runs' own (each summary's, each input's record), the documents whose lengths differ
most have the lengths the oracle gives, and the HTML page renders in headless Chromium with
both tokenizers' bars drawn."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import tokenizers

from batchtok.runner.report.compare import COLORS
from tests.support import browser
from tests.support.fixtures import tokenizer_path
from tests.support.runner import EXAMPLE_JOB, SAMPLE, invoke, summary

GPT2 = Path(__file__).resolve().parents[2] / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """OUT/gpt2 and OUT/gemma3: the example job with each tokenizer."""
    root = tmp_path_factory.mktemp("compare")
    for name, path in (("gpt2", GPT2), ("gemma3", tokenizer_path("gemma3"))):
        code, output = invoke(
            "run",
            EXAMPLE_JOB,
            "-o",
            root / name,
            "--set",
            f"tokenizer.path={json.dumps(str(path))}",
        )
        assert code == 0, output
    return root


def test_the_figures_are_the_runs_and_the_most_different_lengths_the_oracles(
    outputs: Path,
) -> None:
    code, output = invoke("compare", outputs, "--json")
    assert code == 0, output
    report = json.loads(output)
    assert sorted(report["tokenizers"]) == ["gemma3", "gpt2"]
    for name in ("gpt2", "gemma3"):
        stats = summary(outputs / name)["token_stats"]
        assert report["overall"][name]["tokens"] == stats["tokens"]
        assert report["overall"][name]["bytes_per_token"] == stats["bytes_per_token"]
        assert report["files"]["sample.parquet"][name]["tokens"] == stats["tokens"]
        assert report["length_histogram"]["documents"][name] == [
            stats["length_histogram"].get(b, 0) for b in report["length_histogram"]["buckets"]
        ]
    texts = pq.read_table(SAMPLE)["text"].to_pylist()
    oracles = {
        "gpt2": tokenizers.Tokenizer.from_file(str(GPT2)),
        "gemma3": tokenizers.Tokenizer.from_file(str(tokenizer_path("gemma3"))),
    }
    different = report["most_different"]
    assert len(different) == 10
    for d in different:
        for name, tok in oracles.items():
            assert d["tokens"][name] == len(tok.encode(texts[d["row"]]).ids)
    ratios = [d["ratio"] for d in different]
    assert ratios == sorted(ratios, reverse=True) and ratios[0] > 2
    code, output = invoke("compare", outputs / "gpt2", outputs / "gemma3")
    assert code == 0 and "bytes a token" in output and "sample.parquet row" in output, output


def test_the_page_renders_both_tokenizers_charts_in_chromium(outputs: Path, tmp_path: Path) -> None:
    page = tmp_path / "compare.html"
    code, output = invoke("compare", outputs, "--html", page)
    assert code == 0, output
    text = page.read_text(encoding="utf-8")
    assert "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # no network
    # both tokenizers' bars are drawn, in area and on many rows (bars of several heights)
    drawn = browser.drawn(page, list(COLORS[:2]), tmp_path)
    assert all(pixels > 500 and rows > 50 for pixels, rows in drawn.values()), drawn


def test_a_comparison_needs_two_finished_outputs(tmp_path: Path, outputs: Path) -> None:
    code, output = invoke("compare", outputs / "gpt2")
    assert code == 2 and "at least two" in output, output
    (tmp_path / "empty").mkdir()
    code, output = invoke("compare", outputs / "gpt2", tmp_path / "empty")
    assert code == 2 and "run the job first" in output, output
