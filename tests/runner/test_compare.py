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
    from PIL import Image

    page = tmp_path / "compare.html"
    code, output = invoke("compare", outputs, "--html", page)
    assert code == 0, output
    text = page.read_text(encoding="utf-8")
    assert "http" not in text.replace('xmlns="http://www.w3.org/2000/svg"', "")  # no network
    shot = browser.screenshot(page, tmp_path / "page.png")
    pixels = Image.open(shot).convert("RGB")
    drawn = {color: 0 for color in COLORS[:2]}
    wanted = {tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)): c for c in COLORS[:2]}
    for count, rgb in pixels.getcolors(maxcolors=1 << 20) or []:
        if rgb in wanted:
            drawn[wanted[rgb]] += count
    # both tokenizers' bars (and their keys) are drawn, in area: many pixels of each color
    assert all(count > 500 for count in drawn.values()), drawn
    # bars of both colors stand in the same band of the page (the histogram's groups), each
    # on many rows: bars of several heights, not a key's square alone
    width, height = pixels.size
    data = list(pixels.get_flattened_data())
    rows = {
        c: {i // width for i, rgb in enumerate(data) if rgb == key} for key, c in wanted.items()
    }
    assert all(len(ys) > 50 for ys in rows.values()), {c: len(ys) for c, ys in rows.items()}
    assert len(rows[COLORS[0]] & rows[COLORS[1]]) > 50


def test_a_comparison_needs_two_finished_outputs(tmp_path: Path, outputs: Path) -> None:
    code, output = invoke("compare", outputs / "gpt2")
    assert code == 2 and "at least two" in output, output
    (tmp_path / "empty").mkdir()
    code, output = invoke("compare", outputs / "gpt2", tmp_path / "empty")
    assert code == 2 and "run the job first" in output, output
