"""Before any encoding: read the inputs' footers, check the tokenizer against the job, cut the
shards; and ``batchtok plan``, which reports that and stops.

Everything here validates before any work: a problem raises
:class:`~batchtok.runner.errors.JobError` (exit code 2) naming the key.
"""

from __future__ import annotations

import functools
import os
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any

from batchtok import __version__

from ..errors import JobError
from ..exec.encode import (
    TokenizerFacts,
    check_against_job,
    described_options,
    eos_id,
    facts_of,
    load_tokenizer,
    read_tokenizer,
    remember_facts,
    remembered_facts,
)
from ..exec.worker import HashTask, WorkerContext, encode_settings, hash_file
from ..inputs.discovery import capped
from ..inputs.files import STATE_DIR, InputFile, resolve_inputs
from ..io.arrow_fs import StorageOptions
from ..io.stores import STORES, OutPath, store_of
from ..job import Job, display_path
from ..outputs.formats import FORMATS
from ..outputs.ownership import check_outputs
from .records import Records, memo_hashes
from .states import (
    FileState,
    file_fingerprint,
    hash_spec,
    listed_parts,
    make_shards,
    output_path,
    resolve,
    text_columns,
)


def state_dir(job: Job) -> OutPath:
    return job.output_dir / STATE_DIR


@dataclass
class Prepared:
    """A validated job: its input files, their shards (not resolved yet), the tokenizer's
    facts, and the engine version that goes into every key and output."""

    job: Job
    files: list[InputFile]
    states: dict[str, FileState]
    facts: TokenizerFacts
    tokenizer: Any  # the loaded Tokenizer, or None while its facts were remembered
    warnings: list[str]
    engine_version: str
    tokenizer_bytes: bytes = b""  # the file as read (and hashed) once; loaded from these

    def loaded_tokenizer(self) -> Any:
        """The tokenizer, loaded now if validation did not need it."""
        if self.tokenizer is None:
            facts = self.facts
            self.tokenizer = load_tokenizer(
                self.job, facts.xxh3, self.tokenizer_bytes, facts.sha256
            )
            if self.job.executor == "local":  # Ray actors load their own from the bytes
                self.tokenizer_bytes = b""
        return self.tokenizer

    def fingerprint(self, f: InputFile) -> str:
        return file_fingerprint(self.job, f, self.engine_version, self.facts)

    @functools.cached_property
    def provenance(self) -> dict[str, Any]:
        """What every output's metadata says of the run: its engine, tokenizer, encode
        options and output format (:func:`.tasks.file_doc` adds the file's); made once, the
        same object in every file's document (never changed)."""
        job, facts = self.job, self.facts
        return {
            "format": 1,
            "engine": "batchtok",
            "engine_version": self.engine_version,
            "tokenizer": {
                "name": job.tokenizer_path.name,
                "sha256": facts.sha256,
                "xxh3_128": facts.xxh3,
                "vocab_size": facts.vocab_size,
                "max_id": facts.max_id,
            },
            "encode": described_options(job, facts),
            "output": job.output_format(),
            # what a reader of the ids relies on: their dtype as written (a trainer format's
            # own rule, else output.dtype), the EOS appended, the specials the post-processor
            # adds to a text (batchtok.verify and audit read it)
            "ids": {
                "dtype": FORMATS[job.format].token_dtype(max(facts.vocab_size, facts.max_id + 1))
                or job.dtype,
                "append_eos_id": _eos_or_none(job, facts),
                "special_tokens_added": facts.added_single if job.add_special_tokens else 0,
                # what the post-processor puts around a text (around an empty one: its BOS,
                # EOS...), as applied: none without encode.add_special_tokens
                "special_ids": (
                    (None if facts.special_ids is None else list(facts.special_ids))
                    if job.add_special_tokens
                    else []
                ),
            },
        }


def prepare(job: Job, *, remember: bool) -> Prepared:
    """Validation that needs the inputs and the tokenizer, then the shards (no hashing).

    The tokenizer is loaded only if its facts are not remembered from an earlier run (in the
    state directory; ``remember`` stores them)."""
    try:
        return _prepare(job, remember)
    except JobError as exc:
        raise _explain_credentials(exc, job.storage) from exc


def _explain_credentials(exc: JobError, storage: StorageOptions) -> JobError:
    """``exc``, each problem naming an s3:// object saying so if no AWS credentials were found
    (for requests with the job's ``storage``):
    pyarrow then sends its requests unsigned, and a private bucket's refusal names no cause."""
    problems = list(exc.problems)
    for store in STORES.values():
        about = [p for p in problems if store.scheme and f"{store.scheme}://" in p.message]
        reason = store.credentials_problem(storage) if about else None
        if reason is not None:
            problems = [
                replace(p, message=f"{p.message.rstrip('.')}; {reason}")
                if p in about and reason not in p.message
                else p
                for p in problems
            ]
    return JobError(problems, exc.job) if problems != exc.problems else exc


def _prepare(job: Job, remember: bool) -> Prepared:
    sdir = state_dir(job)
    files, warnings = resolve_inputs(job, Records(sdir))
    data, xxh3, sha256 = read_tokenizer(job)
    facts = remembered_facts(sdir, xxh3)
    tok = None
    if facts is None:
        tok = load_tokenizer(job, xxh3, data, sha256)
        facts = facts_of(tok, xxh3, sha256)
        if remember:
            remember_facts(sdir, facts)
    check_against_job(job, facts)
    states = {
        f.rel: FileState(
            f,
            make_shards(f, job.shard_mb),
            output_path(job, f),
            format=job.format,
            derived=job.derived_output,
            docs=job.provenance,
            unit=job.units,
        )
        for f in files
    }
    check_one_file_system(job, [st.output for st in states.values()])
    check_docs_names(job, states)
    for f in files:
        big = [i for i, rg in enumerate(f.row_groups) if rg.text_bytes > 4 * job.shard_mb * 1e6]
        if big:
            warnings.append(
                f"{f.path}: {len(big)} row group(s) hold more than 4x run.shard_mb of text; a "
                "shard cannot split a row group, so a crash there loses more work"
            )
    return Prepared(job, files, states, facts, tok, warnings, __version__, data)


def _eos_or_none(job: Job, facts: TokenizerFacts) -> int | None:
    try:
        return eos_id(job, facts)
    except KeyError:  # (refused when the job is checked)
        return None


def check_docs_names(job: Job, states: dict[str, FileState]) -> None:
    """:class:`JobError` naming ``output.provenance`` if an output's provenance file would be
    another input's output (packed Parquet of ``a.parquet`` and of ``a.docs.parquet``)."""
    if not job.provenance or job.units:  # (a unit's files are named apart: see .units)
        return
    output_format = FORMATS[job.format]
    outputs = {str(st.output): st.file.path for st in states.values()}
    problems = []
    for st in states.values():
        docs = output_format.docs_file(st.output)
        if docs in outputs:
            problems.append(
                job.problem(
                    "output.provenance",
                    f"the provenance file of {display_path(st.file.path)} would be "
                    f"{display_path(docs)}, the output of {display_path(outputs[docs])}: rename "
                    "one of the inputs, or give them distinct directories",
                )
            )
    if problems:
        raise JobError(capped(problems), str(job.file or ""))


def check_one_file_system(job: Job, outputs: list[OutPath]) -> None:
    """:class:`JobError` naming ``output.dir`` if the state directory, its ``tmp`` or
    ``parts``, or a directory an output goes in is on another file system than the output
    directory (a symlink or a mount): files written there are renamed into place, which
    cannot cross file systems, so every shard would be encoded and then fail."""
    out = job.output_dir
    if not store_of(out).renames:  # its temporary files are local and uploaded, not renamed
        return
    try:
        device = os.stat(out).st_dev
    except OSError:
        return  # made by the run, with everything in it
    sdir = out / STATE_DIR
    dirs = dict.fromkeys([sdir, sdir / "tmp", sdir / "parts", *(o.parent for o in outputs)])
    problems = []
    for d in dirs:
        try:
            other = os.stat(d).st_dev != device
        except OSError:
            continue  # not there yet: made inside the output directory
        if other:
            problems.append(
                job.problem(
                    "output.dir",
                    f"{display_path(d)} is on another file system than {display_path(out)} "
                    "(a symlink or a mount there?); batchtok writes files in "
                    f"{display_path(sdir / 'tmp')} and renames them into place, which cannot "
                    f"cross file systems: make {display_path(d)} a plain directory inside "
                    f"{display_path(out)} (move what it holds), or choose another output.dir",
                )
            )
    if problems:
        raise JobError(capped(problems), str(job.file or ""))


def earlier_runs_in(job: Job) -> bool:
    """Whether the output holds the state of earlier runs; :class:`JobError` naming
    ``output.dir`` if it cannot be read (an S3 bucket missing or forbidden)."""
    try:
        return state_dir(job).is_dir()
    except OSError as exc:
        raise JobError(
            [job.problem("output.dir", f"cannot read {job.output_dir}: {exc}")],
            str(job.file or ""),
        ) from exc


def hash_task(job: Job, f: InputFile) -> HashTask:
    """The task that hashes input ``f``'s text (what a run's hash phase runs)."""
    return HashTask(
        f.rel, f.path, text_columns(job), f.keep_leaves, f.text_bytes, f.stat_key(), f.blocks
    )


#: The plan report's version (its key ``plan_format``): a key changes meaning only with it.
PLAN_FORMAT = 1


def plan_job(
    job: Job, *, verify: bool = False, hash_inputs: bool = True, prep: Prepared | None = None
) -> dict[str, Any]:
    """What a run would do, without writing anything: every shard with its status (``prep``:
    the job prepared already; its states are resolved here)."""
    earlier_runs_in(job)
    prep = prep or prepare(job, remember=False)
    records = Records(state_dir(job))
    check_outputs(job, prep.states, records)
    files_out = []
    totals: Counter = Counter()
    notes = list(prep.warnings)
    parts_dir = state_dir(job) / "parts"
    parts = listed_parts(parts_dir)
    for f in prep.files:
        st = prep.states[f.rel]
        record = records.load(f.rel)
        hashes = None if verify else memo_hashes(record, f.stat_key(), hash_spec(job, f))
        if hashes is None and hash_inputs:
            # As a run hashes it: a JSON Lines file by its blocks' bytes, Parquet by row group.
            reading = WorkerContext(encode_settings(job))  # the job's storage options
            hashes = hash_file(hash_task(job, f), lambda _stats: None, reading).row_groups
        if hashes is not None:
            resolve(st, hashes, prep.fingerprint(f), parts_dir, record, verify, parts)
        if st.note:
            notes.append(st.note)
        files_out.append(_planned_file(st))
        totals.update(shard["status"] for shard in files_out[-1]["shards"])
    return {
        "plan_format": PLAN_FORMAT,
        "job": str(job.file) if job.file else None,
        "tokenizer": {"path": str(job.tokenizer_path), "sha256": prep.facts.sha256},
        "output_dir": str(job.output_dir),
        "files": files_out,
        "shards": {"total": sum(totals.values()), **dict(totals)},
        "notes": notes,
    }


def _planned_file(st: FileState) -> dict[str, Any]:
    f = st.file
    shards = [
        {
            "shard": shard.id,
            "row_groups": list(shard.row_groups),
            "rows": shard.rows,
            "text_mb": round(shard.text_bytes / 1e6, 3),
            "status": st.status(i),
            "key": st.keys[i] if st.resolved else None,
        }
        for i, shard in enumerate(st.shards)
    ]
    return {
        "file": f.path,
        # (an input of a stream cut into files has none of its own: see .units)
        "output": None if st.unit else str(st.output),
        "rows": f.rows,
        "row_groups": len(f.row_groups),
        "shards": shards,
        "complete": st.complete,
    }
