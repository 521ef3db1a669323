"""Running a job: lock, validate, hash, plan, encode, join, record, summarize.

:func:`run_job` is what ``batchtok run`` calls; :func:`plan_job` is ``batchtok plan``. Both
validate everything before any work: a problem raises :class:`~batchtok.runner.job.JobError`
(exit code 2) naming the key.

The order of a run:

1. take the lock (``OUT/.batchtok/lock``), delete temporary files a dead run left;
2. read the inputs' footers and check columns and types; hash the tokenizer file and check
   the options that depend on it (dtype range, pairs, truncation);
3. cut the shards; take each input's row-group hashes from its record when its stat is
   unchanged, else hash it (in the workers);
4. from the keys, find what is complete: the existing output file (and which of its shards
   are still valid), parts of an interrupted run;
5. encode the shards left, largest first; write one-shard files directly, join the parts of
   the others as soon as all are there;
6. record each output's stat, write ``OUT/_batchtok_summary.json``, release the lock.

The tokenizer is loaded only if some shard needs encoding: a re-run with nothing to do reads
footers and records, nothing else.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import signal
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from batchtok import __version__

from . import exit_codes as codes
from .cache import Records, RowGroupHash, hash_row_groups, hex128, memo_hashes, stat_of
from .encode import (
    TokenizerFacts,
    check_against_job,
    configure_tokenizer,
    described_options,
    facts_of,
    load_tokenizer,
    remember_facts,
    remembered_facts,
    tokenizer_digests,
)
from .executor import Event, LocalExecutor
from .inputs import STATE_DIR, InputFile, resolve_inputs
from .job import Job, JobError
from .lock import LockHeld, RunLock
from .output import (
    METADATA_KEY,
    metadata_bytes,
    output_schema,
    read_metadata,
    use_returning_memory_pool,
)
from .plan import (
    FileState,
    batch_rows,
    file_fingerprint,
    hash_spec,
    make_shards,
    output_path,
    output_splits,
    part_path,
    resolve,
    text_columns,
)
from .progress import LogSession, Progress
from .worker import (
    AssembleTask,
    EncodeSettings,
    HashTask,
    ShardTask,
    current_rss_mb,
    prepare,
)

# Chars of text encoded in the parent before forking (see Run._prewarm).
PREWARM_BYTES = 4_000_000

log = logging.getLogger("batchtok.runner")

SUMMARY_NAME = "_batchtok_summary.json"
MAX_EXAMPLES = 100


@dataclass
class RunResult:
    exit_code: int
    summary: dict[str, Any] = field(default_factory=dict)


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def state_dir(job: Job) -> Path:
    return job.output_dir / STATE_DIR


# -- shared by run and plan -----------------------------------------------------------------


@dataclass
class Prepared:
    job: Job
    files: list[InputFile]
    states: dict[str, FileState]
    facts: TokenizerFacts
    tokenizer: Any  # loaded Tokenizer, or None if its facts were remembered
    warnings: list[str]


def _prepare(job: Job, *, remember: bool) -> Prepared:
    """Validation that needs the inputs and the tokenizer, then the shards (no hashing)."""
    files, warnings = resolve_inputs(job)
    xxh3, sha256 = tokenizer_digests(job)
    sdir = state_dir(job)
    facts = remembered_facts(sdir, xxh3)
    tok = None
    if facts is None:
        tok = load_tokenizer(job, xxh3)
        facts = facts_of(tok, xxh3, sha256)
        if remember:
            remember_facts(sdir, facts)
    check_against_job(job, facts)
    states = {f.rel: FileState(f, make_shards(f, job.shard_mb), output_path(job, f)) for f in files}
    for f in files:
        big = [i for i, rg in enumerate(f.row_groups) if rg.text_bytes > 4 * job.shard_mb * 1e6]
        if big:
            warnings.append(
                f"{f.path}: {len(big)} row group(s) hold more than 4x run.shard_mb of text; a "
                "shard cannot split a row group, so a crash there loses more work"
            )
    return Prepared(job, files, states, facts, tok, warnings)


def _file_doc(job: Job, facts: TokenizerFacts, state: FileState, shards: list[dict]) -> dict:
    f = state.file
    return {
        "format": 1,
        "engine": "batchtok",
        "engine_version": __version__,
        "tokenizer": {
            "name": job.tokenizer_path.name,
            "sha256": facts.sha256,
            "xxh3_128": facts.xxh3,
        },
        "encode": described_options(job, facts),
        "output": job.output_format(),
        "input": {
            "file": f.rel,
            "content_xxh3_128": state.content_hash(),
            "text_column": job.text_column,
            "pair_column": job.pair_column,
            "rows": f.rows,
            "row_groups": len(f.row_groups),
        },
        "shards": shards,
    }


def _schema(job: Job, f: InputFile, doc: dict) -> pa.Schema:
    schema = output_schema(f.schema, f.keep, job.ids_column, job.count_column, job.dtype)
    return schema.with_metadata({METADATA_KEY: metadata_bytes(doc)})


# -- plan -------------------------------------------------------------------------------------


def plan_job(job: Job, *, verify: bool = False, hash_inputs: bool = True) -> dict[str, Any]:
    """What a run would do, without writing anything: every shard with its status."""
    prep = _prepare(job, remember=False)
    records = Records(state_dir(job))
    parts_dir = state_dir(job) / "parts"
    files_out = []
    totals: Counter = Counter()
    notes = list(prep.warnings)
    for f in prep.files:
        st = prep.states[f.rel]
        record = records.load(f.rel)
        hashes = None if verify else memo_hashes(record, f.stat_key(), hash_spec(job, f))
        if hashes is None and hash_inputs:
            hashes = hash_row_groups(f.path, text_columns(job), f.keep_leaves)
        if hashes is not None:
            fp = file_fingerprint(job, f, __version__, prep.facts)
            resolve(st, hashes, fp, parts_dir, record, verify)
        if st.note:
            notes.append(st.note)
        shards = []
        for i, shard in enumerate(st.shards):
            status = st.status(i)
            totals[status] += 1
            shards.append(
                {
                    "shard": shard.id,
                    "row_groups": list(shard.row_groups),
                    "rows": shard.rows,
                    "text_mb": round(shard.text_bytes / 1e6, 3),
                    "status": status,
                    "key": st.keys[i] if st.resolved else None,
                }
            )
        files_out.append(
            {
                "file": f.path,
                "output": str(st.output),
                "rows": f.rows,
                "row_groups": len(f.row_groups),
                "shards": shards,
                "complete": st.complete,
            }
        )
    return {
        "job": str(job.file) if job.file else None,
        "tokenizer": {"path": str(job.tokenizer_path), "sha256": prep.facts.sha256},
        "output_dir": str(job.output_dir),
        "files": files_out,
        "shards": {"total": sum(totals.values()), **dict(totals)},
        "notes": notes,
    }


# -- run --------------------------------------------------------------------------------------


def run_job(
    job: Job,
    *,
    verify: bool = False,
    quiet: bool = False,
    log_format: str = "text",
    progress: bool | None = None,
    progress_interval: float = 30.0,
    stream: IO[str] | None = None,
) -> RunResult:
    """Run ``job``; returns the exit code (see :mod:`batchtok.runner.exit_codes`) and the
    summary written to ``OUT/_batchtok_summary.json``. Raises JobError (exit code 2) for an
    invalid job, before any work."""
    stream = stream if stream is not None else sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    live = bool(progress if progress is not None else tty) and not quiet and log_format == "text"
    mode = "live" if live else ("off" if quiet or progress is False else "log")
    session = LogSession(stream, log_format, quiet, live)
    try:
        return _Run(job, verify, session, mode, progress_interval).execute()
    finally:
        session.close()


class _Run:
    def __init__(
        self, job: Job, verify: bool, session: LogSession, mode: str, interval: float
    ) -> None:
        self.job = job
        self.verify = verify
        self.session = session
        self.progress = Progress(session.console, mode, interval)
        self.sdir = state_dir(job)
        self.tmp_dir = self.sdir / "tmp"
        self.parts_dir = self.sdir / "parts"
        self.records = Records(self.sdir)
        self.started_wall = time.time()
        self.started = time.monotonic()
        self.states: dict[str, FileState] = {}
        self.prep: Prepared | None = None
        self.failures: list[dict[str, Any]] = []
        self.failed_files: set[str] = set()
        self.shards_done = 0
        self.shards_cached = 0
        self.files_written = 0
        self.rows_in = 0
        self.rows_out = 0
        self.tokens = 0
        self.text_bytes = 0
        self.bad_rows = 0
        self.bad_reasons: Counter = Counter()
        self.bad_examples: list[dict[str, Any]] = []
        self.specials: Counter = Counter()
        self.peak_rss_mb = 0.0
        self.fork_rss_mb: float | None = None
        self.encode_seconds = 0.0
        self.hash_seconds = 0.0
        self.interrupted = False
        self.stopping = ""
        self.workers = job.workers or available_cores()

    # -- top level ----------------------------------------------------------------------

    def execute(self) -> RunResult:
        job = self.job
        self.memory_pool = use_returning_memory_pool()
        try:
            lock = RunLock(self.sdir / "lock", job=str(job.file or job.name)).acquire()
        except LockHeld as exc:
            log.error("%s; nothing was run", exc, extra={"event": "locked"})
            return RunResult(codes.EXIT_LOCKED, {"status": "locked", "message": str(exc)})
        except OSError as exc:
            raise JobError(
                [job.problem("output.dir", f"cannot create {self.sdir}: {exc.strerror or exc}")],
                str(job.file or ""),
            ) from exc
        previous = _install_sigterm()
        try:
            if lock.stale is not None:
                log.warning(
                    "took over a stale lock: the run with %s ended without releasing it",
                    lock.stale.describe(),
                    extra={"event": "stale_lock"},
                )
            self._clear_tmp()
            try:
                self._work()
            except KeyboardInterrupt:
                self.interrupted = True
                log.error("interrupted; completed shards are kept, a re-run resumes")
            except JobError as exc:
                # Found after the lock (inputs, tokenizer): leave a summary saying so, so that
                # `batchtok status` does not show the previous run's result.
                self._write_summary(
                    {
                        "status": "invalid",
                        "exit_code": codes.EXIT_USAGE,
                        "job": job.describe(),
                        "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                        "problems": [str(p) for p in exc.problems],
                    }
                )
                raise
            except Exception as exc:  # noqa: BLE001 - reported, summarized, exit code 1
                log.exception("run failed: %s", exc)
                self.failures.append({"task": "run", "error": f"{type(exc).__name__}: {exc}"})
            summary = self._summary()
            self._write_summary(summary)
            return RunResult(summary["exit_code"], summary)
        finally:
            with contextlib.suppress(ValueError):
                signal.signal(signal.SIGTERM, previous)
            self._clear_tmp()
            lock.release()

    def _clear_tmp(self) -> None:
        # Only our lock holder writes here, so anything present is a dead run's leftover.
        if self.tmp_dir.exists():
            shutil.rmtree(self.tmp_dir, ignore_errors=True)

    def _work(self) -> None:
        job = self.job
        self.prep = prep = _prepare(job, remember=True)
        self.states = prep.states
        for warning in prep.warnings:
            log.warning("%s", warning)
        if prep.facts.padding is not None:
            log.info(
                "%s carries padding (%s); it is not applied: ids are written unpadded (pad when "
                "collating batches)",
                job.tokenizer_path.name,
                ", ".join(f"{k}={v}" for k, v in prep.facts.padding.items() if v is not None),
                extra={"event": "padding_not_applied"},
            )
        self._report_orphans()
        need_hash: list[InputFile] = []
        for f in prep.files:
            record = self.records.load(f.rel)
            hashes = None if self.verify else memo_hashes(record, f.stat_key(), hash_spec(job, f))
            if hashes is None:
                need_hash.append(f)
            else:
                self._resolve(f, hashes, record)
        total_shards = sum(len(st.shards) for st in self.states.values())
        if need_hash:
            # Workers without a tokenizer: an input whose stat changed but not its content
            # (touched, copied back) costs a hash, not a tokenizer load.
            prepare(None, None, self._settings())
            self.session.for_workers()
            with LocalExecutor(self.workers) as executor:
                self._hash_phase(executor, need_hash)
            if self.stopping:
                return
        if all(st.complete for st in self.states.values() if st.resolved):
            self.shards_cached = sum(len(st.shards) for st in self.states.values() if st.resolved)
            if not self.failures:
                log.info(
                    "nothing to do: all %d shards of %d files are complete in %s",
                    total_shards,
                    len(prep.files),
                    job.output_dir,
                )
            return
        tok = prep.tokenizer or load_tokenizer(job, prep.facts.xxh3)
        configure_tokenizer(tok, job, prep.facts)
        prepare(tok, prep.facts, self._settings())
        log.info(
            "job %s: %d files, %d shards, %d workers (fork), tokenizer %s",
            job.name,
            len(prep.files),
            total_shards,
            self.workers,
            job.tokenizer_path.name,
        )
        if self.workers > 1:
            self._prewarm(tok)
        self.session.for_workers()
        # what each worker starts from: its copy-on-write view of the parent's pages
        self.fork_rss_mb = current_rss_mb()
        with LocalExecutor(self.workers) as executor:
            self._encode_phase(executor)
        if not self.failures and self.parts_dir.exists():
            # Every file is complete, so any part left is from inputs that changed since.
            for stale in self.parts_dir.glob("*.parquet"):
                stale.unlink(missing_ok=True)

    def _prewarm(self, tok) -> None:
        """Encode a small sample in the parent before forking, so every worker starts with
        the most frequent pieces already in its (inherited) cache instead of each computing
        them again. Results are unchanged: the cache only ever holds exact ids."""
        pending = [st.file for st in self.states.values() if st.resolved and not st.complete]
        budget = PREWARM_BYTES
        texts: list[str] = []
        for f in pending:
            if budget <= 0:
                break
            try:
                table = pq.ParquetFile(f.path).read_row_group(0, columns=[self.job.text_column])
            except (OSError, pa.ArrowException):
                continue  # the worker reports the file properly
            for text in table.column(0).to_pylist():
                if isinstance(text, str):
                    texts.append(text)
                    budget -= len(text)
                    if budget <= 0:
                        break
        if texts:
            started = time.monotonic()
            try:
                tok.encode_batch_ids(texts, self.job.add_special_tokens)
            except Exception:  # a bad row is the workers' to report, with its position
                return
            log.debug(
                "pre-warmed the piece cache with %d texts in %.1fs",
                len(texts),
                time.monotonic() - started,
            )

    def _settings(self) -> EncodeSettings:
        job = self.job
        return EncodeSettings(
            text_column=job.text_column,
            pair_column=job.pair_column,
            add_special_tokens=job.add_special_tokens,
            dtype=job.dtype,
            compression=job.compression,
            bad_rows=job.bad_rows,
        )

    def _resolve(self, f: InputFile, hashes: list[RowGroupHash], record: dict) -> None:
        assert self.prep is not None
        st = self.states[f.rel]
        fp = file_fingerprint(self.job, f, __version__, self.prep.facts)
        resolve(st, hashes, fp, self.parts_dir, record, self.verify)
        if st.note:
            log.warning("%s", st.note, extra={"event": "output_redo", "file": str(st.output)})
        if st.output_trusted and not self._record_matches(record, st):
            self._record_output(st, record)

    def _record_matches(self, record: dict, st: FileState) -> bool:
        out = record.get("output") or {}
        return out.get("stat") == stat_of(st.output)

    def _record_output(self, st: FileState, record: dict | None = None) -> None:
        record = dict(record if record is not None else self.records.load(st.file.rel))
        try:
            doc, _ = read_metadata(st.output)
            keys = [s.get("key") for s in doc.get("shards") or []]
        except (OSError, pa.ArrowException, ValueError):
            return
        record["output"] = {"stat": stat_of(st.output), "keys": keys}
        self.records.save(st.file.rel, record)

    def _report_orphans(self) -> None:
        current = {f.rel for f in self.prep.files} if self.prep else set()
        orphans = sorted(
            rel
            for rel in self.records.all_rels()
            if rel not in current and (self.job.output_dir / rel).exists()
        )
        self.orphans = orphans
        if orphans:
            log.warning(
                "%d outputs have no input any more (e.g. %s); they are left in place",
                len(orphans),
                orphans[0],
                extra={"event": "orphan_outputs", "count": len(orphans)},
            )

    # -- phases ---------------------------------------------------------------------------

    def _drive(self, executor: LocalExecutor, on_done) -> None:
        for event in executor.events():
            if event is None:
                self.progress.tick()
                continue
            if event.kind == "progress":
                self.progress.add(event.payload)
                self.progress.tick()
            elif event.kind == "done":
                on_done(event)
            else:
                self._failed(executor, event)

    def _failed(self, executor: LocalExecutor, event: Event) -> None:
        task, payload = event.task, event.payload
        error = payload.get("error", "failed")
        rel = task.rel
        self.failed_files.add(rel)
        if isinstance(task, ShardTask):
            self.progress.shards_failed += 1
        kind = {ShardTask: "shard", HashTask: "hash", AssembleTask: "join"}[type(task)]
        self.failures.append({"task": task.label, "kind": kind, "file": rel, "error": error})
        log.error("%s failed: %s", task.label, error, extra={"event": "failed", "file": rel})
        if payload.get("detail"):
            log.error("%s", payload["detail"].rstrip())
        if payload.get("died"):
            for leftover in self.tmp_dir.glob(f"*.{payload['pid']}.parquet.tmp"):
                with contextlib.suppress(FileNotFoundError):
                    leftover.unlink()
        if payload.get("fatal") and not self.stopping:
            self.stopping = error
            dropped = executor.cancel_pending()
            if dropped:
                log.error(
                    "stopping: %d tasks not started (completed shards are kept)", len(dropped)
                )

    def _hash_phase(self, executor: LocalExecutor, files: list[InputFile]) -> None:
        started = time.monotonic()
        by_rel = {f.rel: f for f in files}
        self.progress.start("hash", len(files), sum(f.text_bytes for f in files))
        for f in sorted(files, key=lambda f: -f.text_bytes):
            executor.submit(
                HashTask(f.rel, f.path, text_columns(self.job), f.keep_leaves, f.text_bytes)
            )

        def done(event: Event) -> None:
            f = by_rel[event.task.rel]
            hashes = [RowGroupHash.from_json(h) for h in event.payload["row_groups"]]
            record = self.records.load(f.rel)
            record["input"] = {
                "path": f.path,
                "stat": f.stat_key(),
                "spec": hash_spec(self.job, f),
                "row_groups": [h.to_json() for h in hashes],
            }
            self.records.save(f.rel, record)
            self._resolve(f, hashes, record)
            self.progress.shards_done += 1

        self._drive(executor, done)
        self.hash_seconds = time.monotonic() - started
        self.progress.finish()

    def _encode_phase(self, executor: LocalExecutor) -> None:
        if self.stopping:
            return
        tasks: list[tuple[int, ShardTask]] = []
        joins = []
        for st in self.states.values():
            if not st.resolved or st.complete or st.file.rel in self.failed_files:
                if st.resolved and st.complete:
                    self.shards_cached += len(st.shards)
                continue
            todo = st.todo()
            self.shards_cached += len(st.shards) - len(todo)
            keys = set()
            for i in todo:
                if st.keys[i] not in keys:  # shards of identical content are encoded once
                    keys.add(st.keys[i])
                    tasks.append((st.shards[i].text_bytes, self._shard_task(st, i)))
            if not todo:
                joins.append(st)
        # Exact text bytes (counted while hashing), for the progress display's ETA.
        total_bytes = 0
        for _, t in tasks:
            hashes = self.states[t.rel].hashes or []
            total_bytes += sum(h.text_bytes for h in hashes[t.row_groups[0] : t.row_groups[1]])
        self.progress.start("encode", len(tasks), total_bytes)
        started = time.monotonic()
        for st in joins:
            st.joining = True
            executor.submit(self._join_task(st), first=True)
        for _, task in sorted(tasks, key=lambda x: -x[0]):
            executor.submit(task)
        if tasks:
            log.info(
                "encoding %d shards (%.1f MB of text); %d shards already complete",
                len(tasks),
                total_bytes / 1e6,
                self.shards_cached,
            )
        if joins:
            log.info("joining the completed parts of %d files", len(joins))
        self._drive(executor, lambda event: self._encode_done(executor, event))
        self.encode_seconds = time.monotonic() - started
        if tasks:
            self.progress.tick(force=True)
        self.progress.finish()

    def _shard_task(self, st: FileState, i: int) -> ShardTask:
        job, f, shard = self.job, st.file, st.shards[i]
        key = st.keys[i]
        single = len(st.shards) == 1
        if single:
            doc = self._doc(st, [{"key": key, "row_groups": list(shard.row_groups)}])
            dest = st.output
        else:
            doc = self._doc(st, [])
            doc.pop("shards")
            doc["part"] = {"key": key, "row_groups": list(shard.row_groups), "shard": shard.id}
            dest = part_path(self.parts_dir, f.rel, key)
        return ShardTask(
            shard_id=shard.id,
            rel=f.rel,
            path=f.path,
            row_groups=shard.row_groups,
            first_row=shard.first_row,
            splits=output_splits(f, shard, job.row_group_mb),
            batch_rows=batch_rows(f, shard, job.batch_mb),
            keep=f.keep,
            schema=_schema(job, f, doc),
            dest=str(dest),
            tmp_dir=str(self.tmp_dir),
            key=key,
            text_bytes=shard.text_bytes,
        )

    def _doc(self, st: FileState, shards: list[dict]) -> dict:
        assert self.prep is not None
        return _file_doc(self.job, self.prep.facts, st, shards)

    def _join_task(self, st: FileState) -> AssembleTask:
        import pyarrow.parquet as pq

        sources = []
        shards = []
        old_footer = None
        for shard, key in zip(st.shards, st.keys):
            if key in st.parts:
                part = st.parts[key]
                footer = pq.read_metadata(part)
                sources.append((str(part), 0, footer.num_row_groups))
                rows = footer.num_rows
            else:
                first, end = st.reusable[key]
                if old_footer is None:
                    old_footer = pq.read_metadata(st.output)
                sources.append((str(st.output), first, end))
                rows = sum(old_footer.row_group(i).num_rows for i in range(first, end))
            shards.append({"key": key, "row_groups": list(shard.row_groups), "rows_out": rows})
        doc = self._doc(st, shards)
        return AssembleTask(
            rel=st.file.rel,
            dest=str(st.output),
            tmp_dir=str(self.tmp_dir),
            schema=_schema(self.job, st.file, doc),
            compression=self.job.compression,
            sources=tuple(sources),
            tag="join-" + hex128("|".join(st.keys).encode()),
        )

    def _encode_done(self, executor: LocalExecutor, event: Event) -> None:
        task, result = event.task, event.payload
        self.peak_rss_mb = max(self.peak_rss_mb, result.get("peak_rss_mb", 0.0))
        st = self.states[task.rel]
        if isinstance(task, AssembleTask):
            self._record_output(st)
            self.files_written += 1
            for part in st.parts.values():
                with contextlib.suppress(FileNotFoundError):
                    part.unlink()
            return
        copies = st.keys.count(task.key)  # shards of identical content, encoded once
        self.shards_done += copies
        self.progress.shards_done += 1
        self.rows_in += copies * result["rows_in"]
        self.rows_out += copies * result["rows_out"]
        self.tokens += copies * result["tokens"]
        self.text_bytes += copies * result["text_bytes"]
        self.bad_rows += copies * result["bad_rows"]
        self.bad_reasons.update({k: copies * v for k, v in result["bad_reasons"].items()})
        room = MAX_EXAMPLES - len(self.bad_examples)
        self.bad_examples += result["bad_examples"][: max(room, 0)]
        self.specials.update({k: copies * v for k, v in result["special_tokens"].items()})
        if len(st.shards) == 1:
            self._record_output(st)
            self.files_written += 1
            return
        st.parts[task.key] = Path(task.dest)
        if task.rel not in self.failed_files and not st.todo() and not st.joining:
            st.joining = True
            executor.submit(self._join_task(st), first=True)

    # -- summary ------------------------------------------------------------------------------

    def _summary(self) -> dict[str, Any]:
        job = self.job
        total_shards = sum(len(st.shards) for st in self.states.values())
        failed = len(self.failures)
        failed_shards = sum(1 for f in self.failures if f.get("kind") == "shard")
        if self.interrupted:
            status, code = "interrupted", codes.EXIT_INTERRUPTED
        elif failed:
            status, code = "failed", codes.EXIT_FAILURE
        elif self.bad_rows:
            status, code = "success_with_bad_rows", codes.EXIT_OK_WITH_BAD_ROWS
        else:
            status, code = "success", codes.EXIT_OK
        elapsed = time.monotonic() - self.started
        facts = self.prep.facts if self.prep else None
        summary = {
            "status": status,
            "exit_code": code,
            "job": job.describe(),
            "engine_version": __version__,
            "tokenizer": (
                {"path": str(job.tokenizer_path), "sha256": facts.sha256, "xxh3_128": facts.xxh3}
                if facts
                else {"path": str(job.tokenizer_path)}
            ),
            "started": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(self.started_wall)),
            "finished": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "elapsed_seconds": round(elapsed, 3),
            "hash_seconds": round(self.hash_seconds, 3),
            "encode_seconds": round(self.encode_seconds, 3),
            "workers": self.workers,
            "start_method": "fork",
            "arrow_memory_pool": self.memory_pool,
            "files": {
                "total": len(self.states),
                "written": self.files_written,
                "failed": len(self.failed_files),
            },
            "shards": {
                "total": total_shards,
                "done": self.shards_done,
                "cached": self.shards_cached,
                "failed": failed_shards,
            },
            "failures": self.failures[:MAX_EXAMPLES],
            "rows": {"read": self.rows_in, "written": self.rows_out},
            "tokens": self.tokens,
            "text_mb": round(self.text_bytes / 1e6, 3),
            "mb_per_second": (
                round(self.text_bytes / 1e6 / self.encode_seconds, 3)
                if self.encode_seconds
                else None
            ),
            "bad_rows": {
                "count": self.bad_rows,
                "policy": job.bad_rows,
                "by_reason": dict(self.bad_reasons),
                "examples": self.bad_examples,
            },
            "special_tokens_in_text": {
                "mode": job.special_tokens_in_text,
                "counts": dict(sorted(self.specials.items())),
                "total": sum(self.specials.values()),
            },
            "peak_worker_rss_mb": round(self.peak_rss_mb, 1),
            "parent_rss_mb_at_fork": (
                round(self.fork_rss_mb, 1) if self.fork_rss_mb is not None else None
            ),
            "orphan_outputs": getattr(self, "orphans", []),
        }
        level = (
            logging.INFO
            if code in (codes.EXIT_OK, codes.EXIT_OK_WITH_BAD_ROWS)
            else (logging.ERROR)
        )
        log.log(
            level,
            "%s: %d shards done, %d cached, %d failed; %d rows, %d tokens, %d bad rows, %.1fs",
            status,
            self.shards_done,
            self.shards_cached,
            failed_shards,
            self.rows_out,
            self.tokens,
            self.bad_rows,
            elapsed,
            extra={"event": "summary", "status": status, "exit_code": code},
        )
        return summary

    def _write_summary(self, summary: dict[str, Any]) -> None:
        import json

        target = self.job.output_dir / SUMMARY_NAME
        tmp = self.sdir / f"summary.{os.getpid()}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(summary, f, indent=2, ensure_ascii=False)
                f.write("\n")
            os.replace(tmp, target)
        except OSError as exc:
            log.error("cannot write the run summary %s: %s", target, exc)
            with contextlib.suppress(OSError):
                tmp.unlink()


def _install_sigterm():
    """SIGTERM (cron timeout, systemd stop) ends the run like Ctrl-C: cleanly, resumable."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        return signal.getsignal(signal.SIGTERM)
