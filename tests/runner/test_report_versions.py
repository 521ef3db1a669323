"""The run summary and the plan report carry their version (``summary_format``,
``plan_format``), and ``batchtok status`` refuses, naming it, a summary a newer batchtok
wrote rather than reading its keys with today's meaning."""

from __future__ import annotations

import json
from pathlib import Path

from batchtok.runner.plan.prepare import PLAN_FORMAT
from batchtok.runner.report.summary import SUMMARY_FORMAT, SUMMARY_NAME
from tests.support.runner import basic_job, invoke, texts, write_parquet


def test_the_summary_and_the_plan_carry_their_version(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(20))
    job = basic_job(tmp_path)
    code, output = invoke("plan", str(job), "--json")
    assert code == 0, output
    assert json.loads(output)["plan_format"] == PLAN_FORMAT
    code, output = invoke("run", str(job))
    assert code == 0, output
    summary = json.loads((tmp_path / "out" / SUMMARY_NAME).read_text(encoding="utf-8"))
    assert summary["summary_format"] == SUMMARY_FORMAT


def test_status_refuses_a_summary_of_a_newer_format_naming_it(tmp_path: Path) -> None:
    write_parquet(tmp_path / "in" / "a.parquet", texts(20))
    job = basic_job(tmp_path)
    code, output = invoke("run", str(job))
    assert code == 0, output
    target = tmp_path / "out" / SUMMARY_NAME
    summary = json.loads(target.read_text(encoding="utf-8"))
    code, output = invoke("status", str(job))
    assert code == 0, output
    target.write_text(json.dumps({**summary, "summary_format": SUMMARY_FORMAT + 1}))
    code, output = invoke("status", str(job))
    assert code == 1, output
    assert f"summary format {SUMMARY_FORMAT + 1}" in output and "newer batchtok" in output
