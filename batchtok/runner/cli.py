"""``batchtok run``, ``plan``, ``status`` and ``audit``: the job runner's commands.

They are :class:`click.Command` objects (``run``, ``plan``, ``status``, ``audit``) that the one
``batchtok`` group (:mod:`batchtok.cli`) registers; options other commands take too are
:mod:`batchtok.cli_options`'.
"""

from __future__ import annotations

import functools
import json
import sys
from typing import Any

import click

from ..cli_options import CONTEXT, special_token_options
from . import exit_codes as codes
from .errors import JobError, RunnerError
from .io.names import escaped, escaped_json
from .job import Job, load_job, parse_override, settings_table
from .job.settings import AUDIT_SAMPLE, AUDIT_SEED, COMMAND_LINE

# Each command imports what it runs (pyarrow and the engine are a third of a small run's
# start-up; ``batchtok status`` needs neither).

KEYS_HELP = "\b\nJob file keys (section.key, default, meaning):\n" + "\n".join(
    "  " + line for line in settings_table().splitlines()
)

EXIT_HELP = f"""\b
Exit codes:
  {codes.EXIT_OK}    success (everything written or already complete)
  {codes.EXIT_FAILURE}    failure (a shard failed; completed shards are kept, re-run resumes)
  {codes.EXIT_USAGE}    usage or validation error (nothing was run)
  {codes.EXIT_OK_WITH_BAD_ROWS}    success, but some rows had a null text (see run.bad_rows)
  {codes.EXIT_LOCKED}    another run of this job (same output directory) is running
  {codes.EXIT_INTERRUPTED}  interrupted (Ctrl-C, SIGTERM); re-run resumes"""


_OVERRIDE_OPTIONS = (
    click.option(
        "--input",
        "-i",
        "inputs",
        multiple=True,
        metavar="PATH",
        help="Replace input.paths (repeatable; files, directories or globs).",
    ),
    click.option("--output", "-o", metavar="DIR", help="Replace output.dir."),
    click.option("--workers", "-w", metavar="N", help='Replace run.workers (N or "auto").'),
    click.option(
        "--executor",
        type=click.Choice(["local", "ray"]),
        help="Replace run.executor: forked local workers, or actors on a Ray cluster.",
    ),
    click.option(
        "--set",
        "sets",
        multiple=True,
        metavar="KEY=VALUE",
        help="Set any job key, e.g. --set output.dtype=uint16 --set encode.max_length=512 "
        "(VALUE is read as TOML, else as a string). Repeatable.",
    ),
)


def _override_options(command):
    """The options that override job keys (--input, --output, --workers, --executor, --set)."""
    for option in reversed(_OVERRIDE_OPTIONS):
        command = option(command)
    return command


def _load_job_or_exit(job_file, inputs, output, workers, executor, sets):
    """The job file with the command line's overrides, or exit 2 naming what is wrong."""
    overrides: dict[str, Any] = {}
    try:
        for assignment in sets:
            key, value = parse_override(assignment)
            overrides[key] = value
    except JobError as exc:
        _fail_usage(exc)
    if inputs:
        overrides["input.paths"] = list(inputs)
    if output:
        overrides["output.dir"] = output
    if workers:
        overrides["run.workers"] = int(workers) if workers.isdigit() else workers
    if executor:
        overrides["run.executor"] = executor
    try:
        return load_job(job_file, overrides)
    except JobError as exc:
        _fail_usage(exc)


def _job_options(command):
    """Arguments shared by run, plan and status: the job file and its overrides."""

    @click.argument("job_file", type=click.Path(dir_okay=False))
    @_override_options
    @functools.wraps(command)
    def wrapper(job_file, inputs, output, workers, executor, sets, **kwargs):
        job = _load_job_or_exit(job_file, inputs, output, workers, executor, sets)
        if job.tokenizers and command.__name__ != "run":
            as_json = bool(kwargs.get("as_json"))
            _for_each_tokenizer(job, lambda sub: command(job=sub, **kwargs), as_json)
        return command(job=job, **kwargs)

    return wrapper


def _for_each_tokenizer(job: Job, command: Any, as_json: bool = False) -> None:
    """Run ``command(sub_job)`` for each tokenizer of a job of several (``tokenizer.paths``),
    each introduced on stderr; exit with the highest exit code. ``as_json``: each one's JSON
    gathered into one document, ``{"tokenizers": {name: its document}}``."""
    import contextlib
    import io

    codes = []
    documents: dict[str, Any] = {}
    for name in job.tokenizers:
        sub = job.for_tokenizer(name)
        click.echo(f"tokenizer {name} ({sub.output_dir}):", err=True)
        printed = io.StringIO()
        try:
            with contextlib.redirect_stdout(printed) if as_json else contextlib.nullcontext():
                command(sub)
            codes.append(0)
        except SystemExit as exc:
            codes.append(exc.code if isinstance(exc.code, int) else 1)
        if as_json:
            try:
                documents[name] = json.loads(printed.getvalue())
            except ValueError:
                documents[name] = {"output": printed.getvalue()}
    if as_json:
        click.echo(json.dumps({"tokenizers": documents}, indent=2))
    sys.exit(max(codes))


def _fail_usage(exc: JobError) -> None:
    click.echo(f"Error: {escaped(str(exc))}", err=True)
    if any(p.source == COMMAND_LINE for p in exc.problems):
        click.echo("(keys set on the command line with --set/--input/--output/--workers)", err=True)
    sys.exit(exc.exit_code)


@click.command(
    "run",
    epilog=KEYS_HELP + "\n\n" + EXIT_HELP,
    context_settings={**CONTEXT, "max_content_width": 120},
)
@_job_options
@click.option(
    "--verify",
    is_flag=True,
    help="Re-hash every input and re-read every output instead of trusting unchanged file "
    "stats (slower; catches silent corruption).",
)
@click.option("--quiet", "-q", is_flag=True, help="Only warnings and errors (for cron).")
@click.option(
    "--log-format",
    type=click.Choice(["text", "json"]),
    default="text",
    show_default=True,
    help="json: one JSON object per line on stderr.",
)
@click.option(
    "--progress/--no-progress",
    default=None,
    help="Live progress line (default: on when stderr is a terminal; otherwise a progress "
    "line is logged every --progress-interval seconds).",
)
@click.option(
    "--progress-interval",
    type=float,
    default=30.0,
    show_default=True,
    metavar="SECONDS",
    help="Seconds between logged progress lines when not on a terminal.",
)
@click.option(
    "--check",
    "check_first",
    type=click.Choice(["stop", "warn"]),
    is_flag=False,
    flag_value="stop",
    default=None,
    help="Run `batchtok check` first: stop (exit 1) on a finding that needs a decision, or "
    "--check=warn: print the findings and run.",
)
def run(job, verify, quiet, log_format, progress, progress_interval, check_first) -> None:
    """Tokenize the Parquet and JSON Lines inputs of JOB_FILE into its output directory.

    Shards already complete under the same cache key (text content, tokenizer bytes, engine
    version, options, output format) are skipped, so re-running is cheap and resumes after a
    crash. The summary goes to OUTPUT_DIR/_batchtok_summary.json, logs and progress to stderr.

    \b
    Example:
      batchtok run jobs/example.toml
      batchtok run jobs/example.toml -o /tmp/out --set output.dtype=uint16 -q
    """
    from .report.summary import SUMMARY_NAME
    from .run import run_job

    if check_first is not None:
        from .check import check_job

        try:
            report = check_job(job)
        except JobError as exc:
            _fail_usage(exc)
        if report.findings or not quiet:
            for line in report.lines():
                click.echo(line, err=True)
        if report.exit_code and check_first == "stop":
            click.echo(
                "nothing was run: decide on the findings (--check=warn runs anyway)", err=True
            )
            sys.exit(report.exit_code)
    try:
        result = run_job(
            job,
            verify=verify,
            quiet=quiet,
            log_format=log_format,
            progress=progress,
            progress_interval=progress_interval,
        )
    except JobError as exc:
        _fail_usage(exc)
    if job.tokenizers:  # a summary each, and the comparison
        if not quiet:
            for name in job.tokenizers:
                click.echo(f"summary: {job.output_dir / name / SUMMARY_NAME}", err=True)
            if result.summary.get("comparison"):
                click.echo(f"comparison: {result.summary['comparison']}", err=True)
        sys.exit(result.exit_code)
    written = "summary_error" not in result.summary
    if not quiet and written and result.summary.get("status") not in (None, "locked"):
        click.echo(f"summary: {job.output_dir / SUMMARY_NAME}", err=True)
    sys.exit(result.exit_code)


@click.command(
    "plan",
    epilog=KEYS_HELP,
    context_settings={**CONTEXT, "max_content_width": 120},
)
@_job_options
@click.option("--json", "as_json", is_flag=True, help="Print the plan as JSON.")
@click.option(
    "--verify", is_flag=True, help="Re-hash inputs and re-read outputs, as run --verify does."
)
@click.option(
    "--no-hash",
    is_flag=True,
    help="Do not read inputs that are not hashed yet (their shards show as unknown).",
)
def plan(job, as_json, verify, no_hash) -> None:
    """Show the shards of JOB_FILE and which are cached or to do, without running.

    Nothing is written. Inputs not seen before are hashed (their text is read) to know their
    cache keys, unless --no-hash.

    \b
    Example:
      batchtok plan jobs/example.toml
    """
    from .plan.prepare import plan_job

    try:
        report = _escaped(plan_job(job, verify=verify, hash_inputs=not no_hash))
    except JobError as exc:
        _fail_usage(exc)
    if as_json:
        click.echo(json.dumps(report, indent=2))
        return
    click.echo(f"job: {report['job'] or '-'}")
    click.echo(f"tokenizer: {report['tokenizer']['path']} (sha256 {report['tokenizer']['sha256']})")
    click.echo(f"output: {report['output_dir']}")
    width = max([len(s["shard"]) for f in report["files"] for s in f["shards"]] + [5])
    click.echo(f"  {'SHARD':<{width}}  {'ROW GROUPS':>10}  {'ROWS':>9}  {'TEXT MB':>8}  STATUS")
    for f in report["files"]:
        for s in f["shards"]:
            first, end = s["row_groups"]
            groups = f"{first}-{end - 1}" if end > first else "-"
            click.echo(
                f"  {s['shard']:<{width}}  {groups:>10}  {s['rows']:>9}  {s['text_mb']:>8.2f}  "
                f"{s['status']}"
            )
    counts = report["shards"]
    parts = ", ".join(
        f"{counts[k]} {k}" for k in ("cached", "part", "to do", "unknown") if k in counts
    )
    click.echo(f"{len(report['files'])} files, {counts['total']} shards: {parts}")
    for note in report["notes"]:
        click.echo(f"note: {note}")


@click.command("check", epilog=KEYS_HELP, context_settings={**CONTEXT, "max_content_width": 120})
@_job_options
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def check(job, as_json) -> None:
    """What JOB_FILE will make of its corpus, on a sample, before any run.

    Reads a reproducible sample of every input (check.sample_mb of text, rows drawn by
    check.seed), encodes it as the run would, and reports each finding with its count, an
    example and the key that changes it: a doubled BOS or EOS, special-token strings in the
    text, a dtype wider than the ids need, truncated documents, bad rows. A finding whose key
    the job sets itself is information: the job decided. Nothing is written.

    \b
    Example:
      batchtok check jobs/example.toml
      batchtok check jobs/example.toml --set check.sample_mb=20 --json

    \b
    Exit codes:
      0    nothing needs a decision
      1    a finding needs a decision
      2    usage error or invalid job
    """
    from .check import check_job

    try:
        report = check_job(job)
    except JobError as exc:
        _fail_usage(exc)
    _print_report(report, as_json)


@click.command("compare", context_settings=CONTEXT)
@click.argument("outputs", nargs=-1, required=True, metavar="OUT...")
@click.option("--json", "as_json", is_flag=True, help="Print the comparison as JSON.")
@click.option(
    "--html",
    "html_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="Also write the comparison as one self-contained HTML page with its charts.",
)
def compare(outputs, as_json, html_path) -> None:
    """Compare tokenizers from their outputs: the same inputs, one job output each.

    Each OUT is a finished job's output directory (or a directory of them, one per
    tokenizer). Per tokenizer: tokens, bytes of text a token, tokens a document, unknown and
    byte-fallback rates, overall and per input; the length histograms side by side; the
    documents whose lengths differ most. Reads what the runs recorded; encodes nothing.

    \b
    Example:
      batchtok compare out/gpt2 out/llama3 --html compare.html
    """
    from pathlib import Path

    from .report.compare import CompareError
    from .report.compare import compare as compare_outputs

    try:
        result = compare_outputs([Path(o) for o in outputs])
    except CompareError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(2)
    if html_path:
        Path(html_path).write_text(result.html(), encoding="utf-8")
    if as_json:
        click.echo(json.dumps(result.to_json(), indent=2))
    else:
        for line in result.lines():
            click.echo(line)
        if html_path:
            click.echo(f"page: {html_path}")


def _print_report(report: Any, as_json: bool) -> None:
    """Print an audit's or a check's report (``.to_json()``, ``.lines()``) and exit with its
    code."""
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2))
    else:
        for line in report.lines():
            click.echo(line)
    sys.exit(report.exit_code)


def _escaped(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` with its strings escaped for display (:func:`escaped_json`), or as it is
    when none needs it: a plan of 100,000 shards holds a million strings, all looked at in
    one encoding here (a lone surrogate, a name that is not UTF-8, does not encode)."""
    try:
        json.dumps(report, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return escaped_json(report)
    return report


@click.command("status", context_settings=CONTEXT)
@_job_options
@click.option("--json", "as_json", is_flag=True, help="Print as JSON.")
def status(job, as_json) -> None:
    """Say whether JOB_FILE is running now, and how its last run ended.

    Reads the lock and OUTPUT_DIR/_batchtok_summary.json; touches nothing. Exits 0 if the
    last run succeeded (or with bad rows), 1 if it failed, did not finish (killed) or there
    was none.
    """
    from .io.lock import current_holder, unfinished_run
    from .plan.prepare import state_dir
    from .report.summary import SUMMARY_NAME, is_of, read_summary, summary_job
    from .report.token_stats import token_stats_lines

    try:
        holder = current_holder(state_dir(job) / "lock")
        unfinished = unfinished_run(state_dir(job) / "lock")
    except OSError as exc:  # an S3 output that cannot be read
        raise click.ClickException(str(exc)) from exc
    summary_path = job.output_dir / SUMMARY_NAME
    summary, missing = read_summary(summary_path)
    other_job = summary is not None and not is_of(summary, job)
    if as_json:
        click.echo(
            json.dumps(
                {
                    "running": holder.__dict__ if holder else None,
                    "unfinished_run": unfinished.__dict__ if unfinished else None,
                    "last_run": summary,
                    # why there is no last run to show, or that it is another job's
                    "summary_problem": missing or None,
                    "summary_of_another_job": other_job,
                },
                indent=2,
            )
        )
    else:
        click.echo(f"running: {holder.describe() if holder else 'no'}")
        if unfinished is not None:
            click.echo(
                f"last run: did not finish ({unfinished.describe()} ended without releasing "
                "the lock: killed?); outputs may be stale or missing: run the job again"
            )
            click.echo("before it:")
        if summary is not None and other_job:
            name, file = summary_job(summary)
            click.echo(
                f"last run: unknown: {summary_path} is the summary of another job, "
                f"{name or '?'} ({file or 'no job file'}), not of {job.name} "
                f"({job.file or 'no job file'}): the two jobs share output.dir and overwrite "
                "each other's summary; give each job its own output.dir"
            )
            click.echo("that job's last run:")
        if summary is None:
            if missing.endswith("not found"):
                click.echo(f"last run: none ({missing})")
            else:
                click.echo(f"last run: unknown: {missing}")
        elif "shards" not in summary:
            click.echo(f"last run: {summary.get('status')} (exit {summary.get('exit_code')})")
            for problem in summary.get("problems", [])[:5]:
                click.echo(f"  {problem}")
        else:
            shards = summary["shards"]
            click.echo(
                f"last run: {summary['status']} (exit {summary['exit_code']}), finished "
                f"{summary['finished']}, {summary['elapsed_seconds']}s"
            )
            click.echo(
                f"  shards: {shards['done']} done, {shards['cached']} cached, "
                f"{shards['failed']} failed of {shards['total']}; rows written "
                f"{summary['rows']['written']}, tokens {summary['tokens']}, bad rows "
                f"{summary['bad_rows']['count']}"
            )
            for line in token_stats_lines(summary.get("token_stats")):
                click.echo(f"  {line}")
            for failure in summary.get("failures", [])[:5]:
                click.echo(f"  failed: {failure.get('task')}: {failure.get('error')}")
    ok = (
        unfinished is None
        and summary is not None
        and not other_job
        and summary.get("exit_code")
        in (
            codes.EXIT_OK,
            codes.EXIT_OK_WITH_BAD_ROWS,
        )
    )
    sys.exit(codes.EXIT_OK if ok else codes.EXIT_FAILURE)


class _AuditModes(click.Command):
    """``batchtok audit``'s two modes as click parses them: ``JOB_FILE`` (a finished job's
    outputs), or ``-t TOKENIZER.json FILE...`` (a tokenizer on texts). The usage shows both;
    a mode's arguments and options are checked while parsing, so mixing them is a usage error
    (exit 2) before anything is read."""

    JOB_ONLY = ("inputs", "output", "workers", "executor", "sets")
    TEXTS_ONLY = {"column": "text", "special_tokens": True, "special_text_as_text": False}

    def format_usage(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        formatter.write_usage(ctx.command_path, "[OPTIONS] JOB_FILE")
        formatter.write_usage(ctx.command_path, "-t TOKENIZER.json [OPTIONS] FILE...", "   or: ")

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        rest = super().parse_args(ctx, args)
        params = ctx.params
        if params.get("tokenizer_path") is not None:
            if not params["paths"]:
                raise click.UsageError("give the text files to audit the tokenizer on", ctx)
            if any(params.get(name) for name in self.JOB_ONLY):
                raise click.UsageError(
                    "--input/--output/--workers/--executor/--set need a job", ctx
                )
        else:
            if len(params["paths"]) != 1:
                raise click.UsageError(
                    "give one job file, or -t TOKENIZER.json and text files", ctx
                )
            if any(params.get(name) != value for name, value in self.TEXTS_ONLY.items()):
                raise click.UsageError(
                    "--column/--no-special-tokens/--special-text-as-text are for -t; a job "
                    "names its own (--set input.text_column=...)",
                    ctx,
                )
        return rest


@click.command(
    "audit",
    cls=_AuditModes,
    context_settings={**CONTEXT, "max_content_width": 120},
)
@click.argument("paths", nargs=-1, metavar="JOB_FILE | -t TOKENIZER.json FILE...")
@click.option(
    "--tokenizer",
    "-t",
    "tokenizer_path",
    type=click.Path(exists=True, dir_okay=False),
    help="Audit this tokenizer.json on the texts of FILE... (no job): each line of a text "
    "file, or --column of a .parquet / .jsonl / .arrow file.",
)
@click.option(
    "--sample",
    "-n",
    type=click.IntRange(min=1),
    default=AUDIT_SAMPLE,
    show_default=True,
    help="Rows checked in all, spread over every output file and shard.",
)
@click.option(
    "--seed",
    type=int,
    default=AUDIT_SEED,
    show_default=True,
    help="The same seed draws the same rows.",
)
@click.option(
    "--column",
    default="text",
    show_default=True,
    help="With -t: the text column of .parquet / .jsonl / .arrow files.",
)
@special_token_options(when="With -t: ")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@_override_options
def audit(
    paths,
    tokenizer_path,
    sample,
    seed,
    column,
    special_tokens,
    special_text_as_text,
    as_json,
    inputs,
    output,
    workers,
    executor,
    sets,
) -> None:
    """Check a finished job's ids against Hugging Face `tokenizers`, on a random sample.

    Re-encodes --sample input rows of JOB_FILE (spread over every output file and shard,
    the same rows for the same --seed) with `tokenizers` under the job's encode options and
    compares them, row by row, with what the job wrote, in every output format. Reads the
    outputs and inputs, never writes. With -t, compares batchtok's ids with `tokenizers'` on
    the texts of FILE... instead: a check before the first run.

    Needs the `tokenizers` package: pip install 'batchtok[audit]'.

    \b
    Example:
      batchtok audit jobs/example.toml
      batchtok audit jobs/example.toml --sample 5000 --seed 7 --json
      batchtok audit -t configs/tokenizers/gpt2/tokenizer.json corpus.txt

    \b
    Exit codes:
      0    every row checked is equal
      1    a mismatch, or an output missing, stale or unreadable
      2    usage error, invalid job, or tokenizers not installed
    """
    import pyarrow as pa

    from .audit import audit_job, audit_texts

    try:
        if tokenizer_path is not None:  # the modes' arguments are checked (_AuditModes)
            report = audit_texts(
                tokenizer_path,
                list(paths),
                column,
                sample,
                seed,
                add_special_tokens=special_tokens,
                special_tokens_as_text=special_text_as_text,
            )
        else:
            job = _load_job_or_exit(paths[0], inputs, output, workers, executor, sets)
            if job.tokenizers:
                _for_each_tokenizer(
                    job, lambda sub: _print_report(audit_job(sub, sample, seed), as_json), as_json
                )
            report = audit_job(job, sample, seed)
    except JobError as exc:
        _fail_usage(exc)
    except RunnerError as exc:  # tokenizers missing (exit 2), or unable to load the file (1)
        click.echo(f"Error: {exc}", err=True)
        sys.exit(exc.exit_code)
    except (OSError, UnicodeDecodeError, pa.ArrowException) as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(codes.EXIT_USAGE)
    _print_report(report, as_json)
