"""benchmarks/RESULTS.md: the latest figures of each benchmark, one section per benchmark.

A benchmark run with ``--write-results`` replaces its own section (``## <benchmark>``) and
keeps the others; each section names the commit, the date and the machine's speed probe
(``benchmarks.table.machine_speed``: `tokenizers` on 1 MB of English against the rate the time
plan assumes), so that figures of different days can be told apart.
"""

from __future__ import annotations

import os
import platform
import re
import time
from collections.abc import Sequence
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "RESULTS.md"
HEADER = (
    "# Benchmark results\n\n"
    "The latest figures of each benchmark, written by its `--write-results` run (one section "
    "per benchmark; a run replaces only its own). See benchmarks/README.md for what each "
    "measures.\n"
)


def write_section(
    name: str, table: Sequence[str], notes: Sequence[str], speed: float | None
) -> Path:
    """Replace (or add) the section ``## name`` of RESULTS.md with ``table`` (markdown lines)
    and ``notes``, stamped with the commit, the date and the speed probe; the file's path."""
    from benchmarks.bench import git_commit

    probe = "-" if speed is None else f"{speed:.2f}× the time plan's assumed machine"
    stamp = (
        f"commit {git_commit() or '?'}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
        f"{os.cpu_count()} CPUs, Python {platform.python_version()}, speed probe {probe}"
    )
    body = [f"## {name}", "", stamp, "", *(f"- {n}" for n in notes), "", *table, ""]
    text = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else HEADER
    pattern = re.compile(rf"^## {re.escape(name)}\n.*?(?=^## |\Z)", re.S | re.M)
    section = "\n".join(body) + "\n"
    if pattern.search(text):
        text = pattern.sub(lambda _: section, text, count=1)
    else:
        text = text.rstrip("\n") + "\n\n" + section
    RESULTS.write_text(text, encoding="utf-8")
    return RESULTS
