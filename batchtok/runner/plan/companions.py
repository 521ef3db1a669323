"""Several tokenizers in one pass (``tokenizer.paths``): the later tokenizers' side of a run.

A job naming several tokenizers runs as one job per tokenizer (:meth:`Job.for_tokenizer`:
outputs in ``output.dir/NAME``, each with its own state, cache keys, records and summary),
one after another. While the run of tokenizer *i* encodes a shard, the tokenizers after it
that need the same shard (its **companions**) encode each batch read too, into parts of their
own state directories (:attr:`ShardTask.also`). Their own runs then find those parts
complete and only join them. So each shard is read and decoded once, by the first tokenizer
that needs it; a tokenizer added to a finished job encodes alone, with nothing to share, and
one dropped touches nothing of the others.

A companion's run resolves its shards here with the hashes the leading run computed (and
remembers them in its records, so that its own run does not hash the inputs again).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from pathlib import Path

from ..errors import JobError
from ..exec.encode import configure_tokenizer
from ..exec.worker import ShardTask, WorkerContext, encode_settings
from ..inputs.files import InputFile, arrow_memo, jsonl_memo
from ..io.stores import OutPath
from ..job import Job
from ..plan.keys import RowGroupHash
from .prepare import Prepared, prepare, state_dir
from .records import Records, memo_hashes, remember_hashes
from .states import hash_spec, listed_parts, resolve
from .tasks import shard_tasks

log = logging.getLogger("batchtok.runner")


@dataclass
class Companion:
    """A later tokenizer of the job, as the leading run sees it."""

    name: str
    job: Job
    prep: Prepared
    records: Records
    parts_dir: OutPath
    parts_found: frozenset[str] = field(default_factory=frozenset)

    @property
    def files(self) -> dict[str, InputFile]:
        return {f.rel: f for f in self.prep.files}


def companions_of(jobs: list[tuple[str, Job]]) -> list[Companion]:
    """The later tokenizers' jobs, prepared (one whose job is refused is left to its own run,
    which says why)."""
    found = []
    for name, job in jobs:
        try:  # (its facts remembered: its own run does not load the tokenizer to learn them)
            prep = prepare(job, remember=True)
        except JobError as exc:
            log.warning("tokenizer %s is left to its own run: %s", name, exc)
            continue
        sdir = state_dir(job)
        parts_dir = sdir / "parts"
        found.append(Companion(name, job, prep, Records(sdir), parts_dir, listed_parts(parts_dir)))
    return found


def resolve_companions(
    companions: list[Companion], f: InputFile, hashes: list[RowGroupHash], verify: bool
) -> None:
    """Resolve input ``f``'s shards in each companion with the leading run's ``hashes``,
    remembered in its record unless it has them."""
    for c in companions:
        mine = c.files.get(f.rel)
        if mine is None:
            continue
        record = c.records.load(f.rel)
        spec = hash_spec(c.job, mine)
        if memo_hashes(record, mine.stat_key(), spec) != hashes:
            blocks = jsonl_memo(c.job, mine) if mine.jsonl else None
            batches = arrow_memo(c.job, mine) if mine.arrow else None
            remember_hashes(record, mine.path, mine.stat_key(), spec, hashes, blocks, batches)
            c.records.save(f.rel, record)
        st = c.prep.states[f.rel]
        resolve(st, hashes, c.prep.fingerprint(mine), c.parts_dir, record, verify, c.parts_found)


def with_companions(
    task: ShardTask, index: int, companions: list[Companion], tmp_dir: Path
) -> ShardTask:
    """``task`` (shard ``index`` of its file) with the companions that need the same shard
    writing their parts from its batches."""
    also = []
    for c in companions:
        st = c.prep.states.get(task.rel)
        if st is None or not st.resolved or st.status(index) != "to do":
            continue
        mine = shard_tasks(c.prep, st, [index], c.parts_dir, tmp_dir, parts=True)[0]
        also.append((c.name, mine))
        st.parts[st.keys[index]] = c.parts_dir / mine.dest.rpartition("/")[2]  # (being written)
    return replace(task, also=tuple(also)) if also else task


def companion_contexts(companions: list[Companion], lock: object) -> dict[str, WorkerContext]:
    """Each companion's worker context: its tokenizer loaded and configured as its run would
    (in the parent, before the workers are forked: its tables are shared copy-on-write)."""
    contexts = {}
    for c in companions:
        tok = c.prep.loaded_tokenizer()
        configure_tokenizer(tok, c.job, c.prep.facts)
        settings = encode_settings(c.job, c.prep.facts)
        contexts[c.name] = WorkerContext(settings, tok, c.prep.facts, lock)  # type: ignore[arg-type]
    return contexts
