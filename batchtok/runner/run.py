"""Running a job: lock, validate, hash, plan, encode, join, record, summarize.

:func:`run_job` is what ``batchtok run`` calls. It validates everything before any work: a
problem raises :class:`~batchtok.runner.errors.JobError` (exit code 2) naming the key.

The order of a run:

1. take the lock (``OUT/.batchtok/lock``), delete temporary files a dead run left;
2. read the inputs' footers and check columns and types; hash the tokenizer file and check
   the options that depend on it (dtype range, pairs, truncation) (:mod:`.plan.prepare`);
3. cut the shards; take each input's row-group hashes from its record when its stat is
   unchanged, else hash it (in the workers);
4. from the keys, find what is complete: the existing output file (and which of its shards
   are still valid), parts of an interrupted run;
5. encode the shards left, largest first; write one-shard files directly, join the parts of
   the others as soon as all are there (:mod:`.plan.tasks`, :mod:`.exec.worker`);
6. record each output's stat, write ``OUT/_batchtok_summary.json`` (:mod:`.report.summary`), release
   the lock.

The tokenizer is loaded only if some shard needs encoding: a re-run with nothing to do reads
footers and records, nothing else.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import shutil
import signal
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..utils import program
from .errors import JobError, LockHeld, reason
from .exec.dispatch import Dispatcher
from .exec.encode import configure_tokenizer, remember_facts
from .exec.executor import Event, Executor
from .exec.local import LocalExecutor
from .exec.worker import (
    JoinResult,
    ShardTask,
    UnitTask,
    WorkerContext,
    current_rss_mb,
    encode_settings,
)
from .exit_codes import (
    EXIT_FAILURE,
    EXIT_INTERRUPTED,
    EXIT_LOCKED,
    EXIT_OK,
    EXIT_OK_WITH_BAD_ROWS,
)
from .inputs.files import InputFile, arrow_memo, jsonl_memo
from .io.lock import run_lock
from .io.stores import as_path, scheme_of, store_of, write_whole
from .job import Job
from .outputs.formats import FORMATS
from .outputs.ownership import check_outputs, claim
from .outputs.parquet import use_returning_memory_pool
from .plan.companions import (
    Companion,
    companion_contexts,
    companions_of,
    resolve_companions,
    with_companions,
)
from .plan.keys import RowGroupHash
from .plan.prepare import Prepared, earlier_runs_in, hash_task, prepare, state_dir
from .plan.records import FileRecord, Records, memo_hashes, remember_hashes
from .plan.states import (
    FileState,
    hash_spec,
    listed_parts,
    orphan_outputs,
    output_moved,
    record_output,
    remove_part,
    resolve,
)
from .plan.tasks import join_task, shard_tasks
from .plan.unit_writer import UnitWriter
from .report.progress import LogSession, Progress
from .report.stats import FailureRecord, RunStats, ShardStats, process_started
from .report.summary import (
    build_summary,
    invalid_summary,
    log_summary,
    remove_dead_tmp,
    write_chart,
    write_summary,
)
from .report.token_stats import TokenStats

log = logging.getLogger("batchtok.runner")
COMPARE_NAME = "_batchtok_compare.html"  # a job of several tokenizers: beside their outputs


@dataclass
class RunResult:
    exit_code: int
    summary: dict[str, Any] = field(default_factory=dict)


def available_cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


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
    """Run ``job``; returns the exit code (see :mod:`.exit_codes`) and the
    summary written to ``OUT/_batchtok_summary.json``. Raises JobError (exit code 2) for an
    invalid job, before any work."""
    stream = stream if stream is not None else sys.stderr
    tty = hasattr(stream, "isatty") and stream.isatty()
    live = bool(progress if progress is not None else tty) and not quiet and log_format == "text"
    mode = "live" if live else ("off" if quiet or progress is False else "log")
    session = LogSession(stream, log_format, quiet, live)
    try:
        if job.tokenizers:
            return _run_several(job, verify, session, mode, progress_interval)
        return _Run(job, verify, session, mode, progress_interval).execute()
    finally:
        session.close()


def _run_several(
    job: Job, verify: bool, session: LogSession, mode: str, interval: float
) -> RunResult:
    """A job of several tokenizers (``tokenizer.paths``): one run per tokenizer, in order,
    each into ``output.dir/NAME``, each shard read once by the first that needs it (see
    :mod:`.plan.companions`);
    then the comparison report, ``output.dir/_batchtok_compare.html`` and ``.json``."""
    names = list(job.tokenizers)
    jobs = [(name, job.for_tokenizer(name)) for name in names]
    missing = [
        job.problem("tokenizer.paths", f"{name}: no such file: {sub.tokenizer_path}")
        for name, sub in jobs
        if not sub.tokenizer_path.exists()
    ]
    if missing:  # (before any tokenizer's run: not after the first ones)
        raise JobError(missing, str(job.file or ""))
    results: dict[str, RunResult] = {}
    for i, (name, sub) in enumerate(jobs):
        log.info(
            "tokenizer %s (%d of %d): %s -> %s",
            name,
            i + 1,
            len(jobs),
            sub.tokenizer_path,
            sub.output_dir,
            extra={"event": "tokenizer", "tokenizer": name},
        )
        results[name] = _Run(sub, verify, session, mode, interval, jobs[i + 1 :]).execute()
        if results[name].exit_code == EXIT_INTERRUPTED:  # Ctrl-C, SIGTERM: the whole job stops
            break
    codes = {r.exit_code for r in results.values()}
    worst = (EXIT_INTERRUPTED, EXIT_FAILURE, EXIT_LOCKED, EXIT_OK_WITH_BAD_ROWS)
    code = next((c for c in worst if c in codes), EXIT_OK)
    summary: dict[str, Any] = {"tokenizers": {n: r.summary for n, r in results.items()}}
    if code in (EXIT_OK, EXIT_OK_WITH_BAD_ROWS) and not scheme_of(job.output_dir):
        summary["comparison"] = _write_comparison(job, [sub.output_dir for _, sub in jobs])
    return RunResult(code, summary)


def _write_comparison(job: Job, outputs: list[Any]) -> str:
    """The tokenizers compared (:mod:`.report.compare`), beside their outputs; its path."""
    import json

    from .report.compare import CompareError, compare

    try:
        result = compare([Path(o) for o in outputs])
    except CompareError as exc:
        log.warning("no comparison report: %s", exc)
        return ""
    page = Path(job.output_dir) / COMPARE_NAME
    write_whole(as_path(page), result.html().encode("utf-8"))
    doc = json.dumps(result.to_json(), indent=2).encode("utf-8")
    write_whole(as_path(page.with_suffix(".json")), doc)
    for line in result.lines():
        log.info("%s", line, extra={"event": "comparison"})
    return str(page)


class _Run:
    """One run of a job: drives the phases and keeps the parent's :class:`RunStats`."""

    def __init__(
        self,
        job: Job,
        verify: bool,
        session: LogSession,
        mode: str,
        interval: float,
        companions: list[tuple[str, Job]] | None = None,
    ) -> None:
        self.job = job
        # the job's later tokenizers, which encode the shards this run reads (companions)
        self.companion_jobs = companions or []
        self.companions: list[Companion] = []
        self.verify = verify
        self.session = session
        self.progress = Progress(session.console, mode, interval)
        self.sdir = state_dir(job)
        # Temporary files are local (an S3 output's are uploaded once whole).
        out = job.output_dir
        self.store = store_of(out)
        self.tmp_dir = self.store.tmp_dir(out, self.sdir)
        self.parts_dir = self.sdir / "parts"
        self.parts_found: frozenset[str] = frozenset()  # its names before the work began
        self.records = Records(self.sdir)
        self.stats = RunStats()
        self.states: dict[str, FileState] = {}
        self.prep: Prepared | None = None
        self.workers = job.workers or available_cores()
        self.memory_pool = ""
        self.context: WorkerContext | None = None  # the workers' (set before each phase)
        self.dispatch = Dispatcher(self.progress, self.stats, self.store, self.tmp_dir, job.storage)
        self.units = UnitWriter(job, self.sdir, self.parts_dir, self.tmp_dir, self.verify)

    # -- top level ----------------------------------------------------------------------

    def execute(self) -> RunResult:
        job = self.job
        self.memory_pool = use_returning_memory_pool()
        cores = available_cores()
        if self.workers > cores:
            log.warning(
                "run.workers = %d, but this machine gives the run %d cores: using %d workers",
                self.workers,
                cores,
                cores,
                extra={"event": "workers_capped"},
            )
            self.workers = cores
        # Validate before taking the lock: a refused job writes nothing anywhere.
        earlier_runs = earlier_runs_in(job)
        try:
            self.prep = prepare(job, remember=False)
            check_outputs(job, self.prep.states, self.records)
            if job.units:
                self.units.check_first_files(self.prep)
        except JobError as exc:
            if earlier_runs and not any(p.key == "output.dir" for p in exc.problems):
                self._record_refusal(exc)
            raise
        try:
            lock = run_lock(self.sdir / "lock", job=str(job.file or job.name)).acquire()
        except LockHeld as exc:
            log.error("%s; nothing was run", exc, extra={"event": "locked"})
            return RunResult(exc.exit_code, {"status": "locked", "message": str(exc)})
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):
                message = f"no space left on device for {self.sdir / 'lock'}; nothing was run"
                log.error("%s: free some space and run again", message)
                return RunResult(EXIT_FAILURE, {"status": "failed", "message": message})
            raise JobError(
                [job.problem("output.dir", _unwritable(exc, self.sdir))], str(job.file or "")
            ) from exc
        self.dispatch.lock = lock  # (checked between events, and by the workers)
        previous = _install_sigterm()
        try:
            if lock.stale is not None:
                log.warning(
                    "took over a stale lock: the run with %s ended without releasing it",
                    lock.stale.describe(),
                    extra={"event": "stale_lock"},
                )
            self._clear_tmp()
            self._check_writable()
            self._abort_uploads()
            return self._work_and_summarize()
        finally:
            with contextlib.suppress(ValueError):
                signal.signal(signal.SIGTERM, previous)
            self._clear_tmp()
            lock.release()

    def _check_writable(self) -> None:
        """Refuse (exit 2) a state directory the lock could be taken in but nothing written
        to (a read-only directory holding a writable lock file): every shard would fail."""
        if not self.store.renames:  # its temporary files are local, its outputs uploaded
            return
        probe = self.tmp_dir / f"probe.{os.getpid()}"
        try:
            self.tmp_dir.mkdir(parents=True, exist_ok=True)
            probe.write_bytes(b"")
            probe.unlink()
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, errno.EDQUOT):  # a full disk fails the run (exit 1)
                return
            problem = self.job.problem("output.dir", _unwritable(exc, self.sdir))
            raise JobError([problem], str(self.job.file or "")) from exc

    def _record_refusal(self, exc: JobError) -> None:
        """An output directory of earlier runs says this run was refused (``batchtok
        status`` must not show the previous result), if no other run holds it."""
        try:
            lock = run_lock(self.sdir / "lock", job=str(self.job.file or self.job.name)).acquire()
        except (LockHeld, OSError):
            return
        try:
            write_summary(invalid_summary(self.job, exc), self.job.output_dir, self.sdir)
        finally:
            lock.release()

    def _abort_uploads(self) -> None:
        """Abort the incomplete multipart uploads under an S3 output: only the lock holder
        uploads there, so they are a killed run's."""
        if not self.store.renames:
            try:
                aborted = self.store.abort_incomplete(self.job.output_dir)
            except OSError as exc:  # invisible anyway; the next run tries again
                log.warning("%s", exc)
                return
            if aborted:
                log.warning(
                    "aborted %d incomplete uploads a killed run left under %s",
                    aborted,
                    self.job.output_dir,
                    extra={"event": "uploads_aborted", "count": aborted},
                )

    def _work_and_summarize(self) -> RunResult:
        try:
            self._work()
        except KeyboardInterrupt:
            self.stats.interrupted = True
            log.error("interrupted; completed shards are kept, a re-run resumes")
        except JobError as exc:
            # Found after the lock (inputs, tokenizer): the summary says so.
            write_summary(invalid_summary(self.job, exc), self.job.output_dir, self.sdir)
            raise
        except Exception as exc:  # noqa: BLE001 - reported, summarized, exit code 1
            log.exception("run failed: %s", exc)
            self.stats.failures.append(FailureRecord("run", f"{type(exc).__name__}: {exc}"))
        summary = build_summary(
            self.job,
            self.prep.facts if self.prep else None,
            self.stats,
            files_total=len(self.states),
            shards_total=sum(len(st.shards) for st in self.states.values()),
            workers=self.workers,
            memory_pool=self.memory_pool,
        )
        tokens, missing = self._output_token_stats()
        summary["token_stats"] = {**tokens.report(), "shards_without_stats": missing}
        log_summary(summary, self.stats)
        code = summary["exit_code"]
        if self.dispatch.lock is None or self.dispatch.lock.holds_path():
            unwritten = write_summary(summary, self.job.output_dir, self.sdir)
            write_chart(tokens, self.job.output_dir, self.tmp_dir, self.job.name)
            if unwritten is not None and code in (EXIT_OK, EXIT_OK_WITH_BAD_ROWS):
                # The outputs are complete and valid, but `batchtok status` and scripts
                # reading the summary would see the previous run's: not a success.
                log.error(
                    "the outputs are complete and valid, but without their summary `batchtok "
                    "status` shows an earlier run: fix that and run again (nothing is encoded "
                    "again)",
                    extra={"event": "summary_not_written"},
                )
                code = EXIT_FAILURE
            if unwritten is not None:
                summary = {**summary, "summary_error": unwritten}
        return RunResult(code, summary)

    def _output_token_stats(self) -> tuple[TokenStats, int]:
        """The token statistics of every output file written, now or by earlier runs."""
        total, missing = TokenStats(), 0
        for st in self.states.values():
            if st.resolved and st.file.rel not in self.stats.failed_files:
                found, lacking = st.output_token_stats()
                total.merge(found)
                missing += lacking
        return total, missing

    def _clear_tmp(self) -> None:
        # Only our lock holder writes here, so anything present is a dead run's leftover:
        # its temporary files, and a summary it was writing when it was killed.
        if self.tmp_dir.exists():
            shutil.rmtree(self.tmp_dir, ignore_errors=True)
        with contextlib.suppress(OSError):
            remove_dead_tmp(self.sdir)

    def _work(self) -> None:
        job = self.job
        prep = self.prep
        assert prep is not None
        if prep.tokenizer is not None:  # loaded to learn its facts: remember them
            remember_facts(self.sdir, prep.facts)
        self.states = prep.states
        self.units.prep = prep
        if self.companion_jobs:
            self.companions = companions_of(self.companion_jobs)
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
        # Listed once, under the lock: no part appears before the encode phase writes them.
        self.parts_found = listed_parts(self.parts_dir)
        need_hash = self._inputs_to_hash()
        if need_hash and prep.tokenizer is not None and job.executor == "local":
            # Loaded already (to learn its facts): hash and encode on the same workers, one
            # fork for both phases.
            self._prepare_encoders()
            with self._executor() as executor:
                self._hash_phase(executor, need_hash)
                if self.dispatch.stopping or self._nothing_to_do():
                    return
                self._encode_phase(executor)
        else:
            if need_hash:
                # Workers without a tokenizer: an input whose stat changed but not its content
                # (touched, copied back) costs a hash, not a tokenizer load.
                self.context = WorkerContext(encode_settings(job), lock=self.dispatch.lock_state())
                self.session.for_workers()
                with self._executor() as executor:
                    self._hash_phase(executor, need_hash)
            if self.dispatch.stopping or self._nothing_to_do():
                return
            self._prepare_encoders()
            with self._executor() as executor:
                self._encode_phase(executor)
        if not self.stats.failures and self.parts_dir.exists():
            # Every file is complete, so any part left is from inputs that changed since (a
            # unit's parts are what its files are cut from: those of its shards stay).
            kept = self.units.part_names(self.states) if job.units else set()
            for stale in self.parts_dir.glob("*.parquet"):
                if stale.name not in kept:
                    remove_part(stale)

    def _prepare_encoders(self) -> None:
        """Load and configure the tokenizer and set the workers' state (call before forking
        the workers that encode)."""
        job, prep = self.job, self.prep
        assert prep is not None
        tok = prep.loaded_tokenizer()
        configure_tokenizer(tok, job, prep.facts)
        self.context = WorkerContext(
            encode_settings(job, prep.facts), tok, prep.facts, self.dispatch.lock_state()
        )
        if self.companions:
            self.context.companions = companion_contexts(
                self.companions, self.dispatch.lock_state()
            )
        self.session.for_workers()
        # what each worker starts from: its copy-on-write view of the parent's pages
        self.stats.fork_rss_mb = current_rss_mb()

    def _executor(self) -> Executor:
        """A phase's workers: forked processes, or actors on a Ray cluster (never both:
        forking a process that talks to Ray can deadlock)."""
        if self.job.executor == "ray":
            from .exec.ray_cluster import RayExecutor  # only a Ray job reads it

            assert self.prep is not None
            return RayExecutor(
                self.workers,
                job=self.job,
                context=self.context,
                tokenizer_bytes=self.prep.tokenizer_bytes,
                companions=[(c.name, c.job, c.prep.tokenizer_bytes) for c in self.companions],
            )
        return LocalExecutor(
            self.workers,
            context=self.context,
            stall_timeout=self.job.stall_timeout,
            stall_unit_bytes=int(self.job.batch_mb * 1e6),
        )

    def _inputs_to_hash(self) -> list[InputFile]:
        """Resolve the shards of every input whose stat is unchanged since its hashes were
        remembered; the others, to hash."""
        assert self.prep is not None
        need_hash: list[InputFile] = []
        for f in self.prep.files:
            record = self.records.load(f.rel)
            spec = hash_spec(self.job, f)
            hashes = None if self.verify else memo_hashes(record, f.stat_key(), spec)
            if hashes is None:
                need_hash.append(f)
            else:
                self._resolve(f, hashes, record)
        return need_hash

    def _nothing_to_do(self) -> bool:
        if not all(st.complete for st in self.states.values() if st.resolved):
            return False
        if self.job.units and not self.units.up_to_date():
            return False
        resolved = [st for st in self.states.values() if st.resolved]
        self.stats.shards_cached = sum(len(st.shards) for st in resolved)
        self.stats.cached_bad_rows = sum(st.cached_bad_rows() for st in resolved)
        if not self.stats.failures:
            log.info(
                "nothing to do: all %d shards of %d files are complete in %s",
                sum(len(st.shards) for st in self.states.values()),
                len(self.states),
                self.job.output_dir,
            )
        return True

    # -- cache records --------------------------------------------------------------------

    def _resolve(
        self, f: InputFile, hashes: list[RowGroupHash], record: FileRecord, changed: bool = False
    ) -> None:
        """Find what of ``f`` is complete; list the files of an output with work left in its
        record as this job's, before any is written; save the record if that (or the
        caller: ``changed``) changed it."""
        assert self.prep is not None
        st = self.states[f.rel]
        fingerprint = self.prep.fingerprint(f)
        resolve(st, hashes, fingerprint, self.parts_dir, record, self.verify, self.parts_found)
        if st.note:
            log.warning("%s", st.note, extra={"event": "output_redo", "file": str(st.output)})
        for note in st.discarded:
            log.warning("%s", note, extra={"event": "part_discarded", "file": f.rel})
        if not st.complete and claim(record, st):
            changed = True
        if changed:
            self.records.save(f.rel, record)
        if self.companions:
            resolve_companions(self.companions, f, hashes, self.verify)
        if st.output_trusted and output_moved(st, record.output):
            record_output(self.records, st, record)

    def _report_orphans(self) -> None:
        orphans = orphan_outputs(self.records, self.job.output_dir, set(self.states))
        self.stats.orphans = orphans
        if orphans:
            log.warning(
                "%d outputs have no input any more (e.g. %s); they are left in place",
                len(orphans),
                orphans[0],
                extra={"event": "orphan_outputs", "count": len(orphans)},
            )

    # -- phases ---------------------------------------------------------------------------

    def _hash_phase(self, executor: Executor, files: list[InputFile]) -> None:
        started = time.monotonic()
        by_rel = {f.rel: f for f in files}
        self.progress.start("hash", len(files), sum(f.text_bytes for f in files))
        for f in sorted(files, key=lambda f: -f.text_bytes):
            executor.submit(hash_task(self.job, f))

        def done(event: Event) -> None:
            f = by_rel[event.task.rel]
            hashes = event.payload.row_groups
            record = self.records.load(f.rel)
            blocks = jsonl_memo(self.job, f) if f.jsonl else None
            batches = arrow_memo(self.job, f) if f.arrow else None
            spec = hash_spec(self.job, f)
            remember_hashes(record, f.path, f.stat_key(), spec, hashes, blocks, batches)
            self._resolve(f, hashes, record, changed=True)  # (one write: hashes and claim)
            self.progress.shards_done += 1

        self.dispatch.drive(executor, done)
        self.stats.hash_seconds = time.monotonic() - started
        self.progress.finish()

    def _encode_phase(self, executor: Executor) -> None:
        if self.dispatch.stopping:
            return
        job = self.job
        log.info(
            "job %s: %d files, %d shards, %d workers (%s), tokenizer %s",
            job.name,
            len(self.states),
            sum(len(st.shards) for st in self.states.values()),
            self.workers,
            "fork" if job.executor == "local" else "Ray actors",
            job.tokenizer_path.name,
        )
        tasks, joins = self._shards_to_encode()
        # Exact text bytes (counted while hashing), for the progress display's ETA.
        total_bytes = 0
        for _, t in tasks:
            hashes = self.states[t.rel].hashes or []
            total_bytes += sum(h.text_bytes for h in hashes[t.row_groups[0] : t.row_groups[1]])
        self.progress.start("encode", len(tasks), total_bytes)
        started = time.monotonic()
        for st in joins:
            self._join(executor, st)
        for _, task in sorted(tasks, key=lambda x: -x[0]):
            executor.submit(task)
        if tasks:
            log.info(
                "encoding %d shards (%.1f MB of text); %d shards already complete",
                len(tasks),
                total_bytes / 1e6,
                self.stats.shards_cached,
            )
        if joins:
            log.info("joining the completed parts of %d files", len(joins))
        self.dispatch.drive(executor, lambda event: self._encode_done(executor, event))
        if job.units and not self.dispatch.stopping:  # (an input's failure holds back its own)
            self.units.write(executor, set(self.stats.failed_files))
            self.dispatch.drive(executor, lambda event: self._encode_done(executor, event))
            self.units.finish()
        self.stats.encode_seconds = time.monotonic() - started
        first = executor.first_sent.get("ShardTask")
        if first is not None:
            start = process_started() if program.PROGRAM else self.stats.started
            self.stats.startup_seconds = first - start
        if tasks:
            self.progress.tick(force=True)
        self.progress.finish()

    def _shards_to_encode(self) -> tuple[list[tuple[int, ShardTask]], list[FileState]]:
        """(text bytes, task) of each shard to encode, and the files only left to join;
        counts the shards found complete."""
        assert self.prep is not None
        tasks: list[tuple[int, ShardTask]] = []
        joins = []
        for st in self.states.values():
            if not st.resolved or st.complete or st.file.rel in self.stats.failed_files:
                if st.resolved and st.complete:
                    self.stats.shards_cached += len(st.shards)
                    self.stats.cached_bad_rows += st.cached_bad_rows()
                continue
            todo = st.todo()  # (its output's files were claimed when it was resolved)
            self.stats.shards_cached += len(st.shards) - len(todo)
            self.stats.cached_bad_rows += st.cached_bad_rows()
            if not todo:
                if not st.unit:  # (a unit's files are written once all its parts are)
                    joins.append(st)
                continue
            unique: dict[str, int] = {}  # shards of identical content are encoded once
            for i in todo:
                unique.setdefault(st.keys[i], i)
            made = shard_tasks(self.prep, st, unique.values(), self.parts_dir, self.tmp_dir)
            if self.companions:  # the later tokenizers that need a shard encode it too
                made = [
                    with_companions(task, i, self.companions, self.tmp_dir)
                    for task, i in zip(made, unique.values())
                ]
            tasks += [(task.text_bytes, task) for task in made]
        return tasks, joins

    def _join(self, executor: Executor, st: FileState) -> None:
        assert self.prep is not None
        st.joining = True
        drop: tuple[str, ...] = ()
        output_format = FORMATS[st.format]
        if st.derived and not st.docs:  # a provenance file an earlier run wrote goes
            docs = output_format.docs_file(st.output)
            if os.path.basename(docs) in (self.records.load(st.file.rel).owned or ()):
                drop = (docs,)
        executor.submit(join_task(self.prep, st, self.tmp_dir, drop), first=True)

    def _encode_done(self, executor: Executor, event: Event) -> None:
        task, result = event.task, event.payload
        if isinstance(task, UnitTask):
            self.units.done(task, result)
            self.stats.encoded.merge(ShardStats(peak_rss_mb=result.peak_rss_mb))
            self.stats.files_written += 1
            return
        st = self.states[task.rel]
        if isinstance(result, JoinResult):
            self.stats.encoded.merge(ShardStats(peak_rss_mb=result.peak_rss_mb))
            record_output(self.records, st, written=result.digests)
            self.stats.files_written += 1
            for part in st.parts.values():
                remove_part(part)
            return
        copies = st.keys.count(task.key)  # shards of identical content, encoded once
        st.bad_rows[task.key] = result.stats.bad_rows
        if result.tokens is not None:
            st.token_stats[task.key] = result.tokens
        self.stats.shards_done += copies
        self.stats.encoded.merge(result.stats.times(copies))
        self.progress.shards_done += 1
        if len(st.shards) == 1 and not st.derived:
            record_output(self.records, st, written={st.output.name: result.digest})
            self.stats.files_written += 1
            return
        st.parts[task.key] = as_path(task.dest, self.job.storage)
        st.part_digests[task.key] = result.digest
        if st.unit:
            st.complete = not st.todo()
        elif task.rel not in self.stats.failed_files and not st.todo() and not st.joining:
            self._join(executor, st)


def _unwritable(exc: OSError, state_dir: Any) -> str:
    """What taking the lock in ``state_dir`` failed with, naming the path that refused."""
    path = exc.filename or state_dir
    if exc.errno in (errno.EEXIST, errno.ENOTDIR, errno.ENOENT):  # a file where a directory goes
        return f"cannot create {path}: {reason(exc)}"
    return f"cannot write {path}: {reason(exc)} (the run keeps its lock and records in {state_dir})"


def _install_sigterm():
    """SIGTERM (cron timeout, systemd stop) ends the run like Ctrl-C: cleanly, resumable."""

    def handler(signum, frame):
        raise KeyboardInterrupt

    try:
        return signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread
        return signal.getsignal(signal.SIGTERM)
