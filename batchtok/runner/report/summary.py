"""The run summary: ``OUT/_batchtok_summary.json`` and the one log line that ends a run.

The summary's keys are public (``batchtok status``, scripts and dashboards read them): rows
read and written, tokens, text MB, bad rows, special tokens found in the text, shards done,
cached and failed, timings and memory. They come from
:class:`~batchtok.runner.report.stats.RunStats`.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from batchtok import __version__

from .. import exit_codes as codes
from ..errors import JobError, reason
from ..exec.encode import TokenizerFacts
from ..io import stores
from ..io.names import escaped_json
from ..job import Job
from .stats import MAX_EXAMPLES, RunStats
from .token_stats import CHART_NAME, OLD_CHART_NAME, TokenStats, draw_chart

SUMMARY_NAME = "_batchtok_summary.json"
#: The summary's version (its key ``summary_format``): a key changes meaning only with it.
SUMMARY_FORMAT = 1
TMP_PREFIX = "summary."  # + pid + ".tmp": the summary being written, in the state directory
TIME_FORMAT = "%Y-%m-%dT%H:%M:%S%z"

log = logging.getLogger("batchtok.runner")


def outcome(stats: RunStats) -> tuple[str, int]:
    """(status, exit code) of a run that was not refused."""
    if stats.interrupted:
        return "interrupted", codes.EXIT_INTERRUPTED
    if stats.failures:
        return "failed", codes.EXIT_FAILURE
    if stats.encoded.bad_rows or stats.cached_bad_rows:
        return "success_with_bad_rows", codes.EXIT_OK_WITH_BAD_ROWS
    return "success", codes.EXIT_OK


def _tokenizer(job: Job, facts: TokenizerFacts | None) -> dict[str, Any]:
    if facts is None:
        return {"path": str(job.tokenizer_path)}
    return {"path": str(job.tokenizer_path), "sha256": facts.sha256, "xxh3_128": facts.xxh3}


def _counts(job: Job, stats: RunStats) -> dict[str, Any]:
    """What was encoded: rows, tokens, text, bad rows, special tokens in the text."""
    encoded = stats.encoded
    return {
        "rows": {"read": encoded.rows_in, "written": encoded.rows_out},
        "tokens": encoded.tokens,
        "text_mb": round(encoded.text_bytes / 1e6, 3),
        "mb_per_second": (
            round(encoded.text_bytes / 1e6 / stats.encode_seconds, 3)
            if stats.encode_seconds
            else None
        ),
        "bad_rows": {
            # in the outputs: found now, and in the shards complete from earlier runs
            "count": encoded.bad_rows + stats.cached_bad_rows,
            "from_earlier_runs": stats.cached_bad_rows,
            "policy": job.bad_rows,
            "by_reason": dict(encoded.bad_reasons),
            "examples": encoded.bad_examples,
        },
        "special_tokens_in_text": {
            "mode": job.special_tokens_in_text,
            "counts": dict(sorted(encoded.special_tokens.items())),
            "total": sum(encoded.special_tokens.values()),
        },
    }


def build_summary(
    job: Job,
    facts: TokenizerFacts | None,
    stats: RunStats,
    *,
    files_total: int,
    shards_total: int,
    workers: int,
    memory_pool: str,
) -> dict[str, Any]:
    """The summary of a run that was not refused (see :func:`invalid_summary`)."""
    status, code = outcome(stats)
    return {
        "summary_format": SUMMARY_FORMAT,
        "status": status,
        "exit_code": code,
        "job": job.describe(),
        "engine_version": __version__,
        "tokenizer": _tokenizer(job, facts),
        "started": time.strftime(TIME_FORMAT, time.localtime(stats.started_wall)),
        "finished": time.strftime(TIME_FORMAT),
        "elapsed_seconds": round(stats.elapsed(), 3),
        "hash_seconds": round(stats.hash_seconds, 3),
        "encode_seconds": round(stats.encode_seconds, 3),
        "startup_seconds": (
            round(stats.startup_seconds, 3) if stats.startup_seconds is not None else None
        ),
        "workers": workers,
        "start_method": "fork",
        "arrow_memory_pool": memory_pool,
        "files": {
            "total": files_total,
            "written": stats.files_written,
            "failed": len(stats.failed_files),
        },
        "shards": {
            "total": shards_total,
            "done": stats.shards_done,
            "cached": stats.shards_cached,
            "failed": stats.failed_shards,
        },
        "failures": [f.to_json() for f in stats.failures[:MAX_EXAMPLES]],
        # tasks whose first attempt failed and that were run again in a fresh worker (the
        # second attempt's outcome is in the counts above, or in "failures"), or on another
        # Ray node, their node lost
        "retries": [r.to_json() for r in stats.retries[:MAX_EXAMPLES]],
        # Ray nodes lost during the run, with the tasks they were running (queued again)
        "lost_nodes": [n.to_json() for n in stats.lost_nodes],
        **_counts(job, stats),
        "peak_worker_rss_mb": round(stats.encoded.peak_rss_mb, 1),
        "parent_rss_mb_at_fork": (
            round(stats.fork_rss_mb, 1) if stats.fork_rss_mb is not None else None
        ),
        "orphan_outputs": stats.orphans,
    }


def invalid_summary(job: Job, exc: JobError) -> dict[str, Any]:
    """The summary of a run refused after taking the lock (an input or the tokenizer), so that
    ``batchtok status`` does not show the previous run's result."""
    return {
        "summary_format": SUMMARY_FORMAT,
        "status": "invalid",
        "exit_code": exc.exit_code,
        "job": job.describe(),
        "finished": time.strftime(TIME_FORMAT),
        "problems": [str(p) for p in exc.problems],
    }


def log_summary(summary: dict[str, Any], stats: RunStats) -> None:
    status, code = summary["status"], summary["exit_code"]
    ok = code in (codes.EXIT_OK, codes.EXIT_OK_WITH_BAD_ROWS)
    log.log(
        logging.INFO if ok else logging.ERROR,
        "%s: %d shards done, %d cached, %d failed; %d rows, %d tokens, %d bad rows, %.1fs",
        status,
        stats.shards_done,
        stats.shards_cached,
        stats.failed_shards,
        stats.encoded.rows_out,
        stats.encoded.tokens,
        summary["bad_rows"]["count"],
        summary["elapsed_seconds"],
        extra={"event": "summary", "status": status, "exit_code": code},
    )


def write_chart(tokens: TokenStats, output_dir: stores.OutPath, tmp_dir: Path, title: str) -> None:
    """Write the document-length histogram beside the summary (SVG), removing a chart an
    older batchtok drew under another name; like the summary, a failure is logged, not
    raised."""
    if not tokens.documents:
        return
    target = output_dir / CHART_NAME
    tmp = tmp_dir / f"chart.{os.getpid()}.tmp"
    try:
        tmp_dir.mkdir(parents=True, exist_ok=True)
        tmp.write_text(draw_chart(tokens, title), encoding="utf-8")
        stores.replace(tmp, target)
        (output_dir / OLD_CHART_NAME).unlink(missing_ok=True)
    except (OSError, ValueError) as exc:
        log.error("cannot write the token-length chart %s: %s", target, exc)
    finally:
        with contextlib.suppress(OSError):
            tmp.unlink()


def write_summary(
    summary: dict[str, Any], output_dir: stores.OutPath, tmp_dir: stores.OutPath
) -> str | None:
    """Write ``output_dir/_batchtok_summary.json`` atomically (through ``tmp_dir``); returns
    None, or why it could not be written (logged too, naming the file): the outputs are
    written whatever happens to their summary, so the caller decides what it means."""
    summary = escaped_json(summary)  # a file name that is not UTF-8 is shown escaped
    target = output_dir / SUMMARY_NAME
    try:
        data = (json.dumps(summary, indent=2, ensure_ascii=False) + "\n").encode("utf-8")
        stores.write_whole(target, data, tmp_dir / f"{TMP_PREFIX}{os.getpid()}.tmp")
    except (OSError, ValueError) as exc:  # ValueError: a text that cannot be encoded
        return _cannot_write(target, exc)
    return None


def _cannot_write(target: stores.OutPath, exc: Exception) -> str:
    message = f"cannot write the run summary {target}: {reason(exc)}"
    log.error("%s", message, extra={"event": "summary_not_written", "file": str(target)})
    return message


def remove_dead_tmp(state_dir: stores.OutPath) -> int:
    """Delete the summaries a killed run left half written in ``state_dir`` (call holding the
    lock: every summary is written under it, so any there is a dead run's); how many."""
    if not stores.store_of(state_dir).renames:  # written in one PUT: nothing is left
        return 0
    removed = 0
    for leftover in Path(state_dir).glob(f"{TMP_PREFIX}*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            leftover.unlink()
            removed += 1
    return removed


def read_summary(path: stores.OutPath) -> tuple[dict[str, Any] | None, str]:
    """(the summary, "") or (None, why there is none to show): not found, unreadable, or not
    a summary (truncated by a crash or a full disk, or not JSON)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None, f"{path} not found"
    except (OSError, UnicodeDecodeError) as exc:
        return None, f"cannot read {path}: {reason(exc)}"
    try:
        found = json.loads(text)
    except ValueError as exc:
        return None, (
            f"{path} is unreadable (truncated or not JSON: {exc}); the next run of the job "
            "writes it again"
        )
    if not isinstance(found, dict) or "status" not in found:
        return None, f"{path} is unreadable: not a batchtok run summary"
    version = found.get("summary_format", 1)  # (summaries before the key was written: 1)
    if not isinstance(version, int) or version > SUMMARY_FORMAT:
        return None, (
            f"{path} was written by a newer batchtok (summary format {version!r}; this one "
            f"reads {SUMMARY_FORMAT}): use that version to read it"
        )
    return found, ""


def summary_job(summary: dict[str, Any]) -> tuple[str, str]:
    """(name, job file) of the job a summary is of ("" when it does not say)."""
    job = summary.get("job")
    if not isinstance(job, dict):
        return "", ""
    return str(job.get("name") or ""), str(job.get("file") or "")


def is_of(summary: dict[str, Any], job: Job) -> bool:
    """Whether ``summary`` is of ``job``: the same job file (or, run without one, the same
    name). Two jobs writing to one output directory overwrite each other's summary."""
    name, file = summary_job(summary)
    if file and job.file is not None:
        return file == str(job.file)
    return not name or name == job.name
