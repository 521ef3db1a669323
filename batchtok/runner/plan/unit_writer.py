"""The run's side of units (:mod:`.units`): which of their files to write, their tasks, what
is recorded of them, and the files of an earlier plan that the new one has no more.

The record (``OUT/.batchtok/units.json``) lists every file this job wrote or began to write
(``owned``: listed before any task writes it, so a file a crash left half written is still
the job's), and each finished file's key, stats and content hashes. A file at a unit's path
that the record does not list, and whose own provenance does not show it is a batchtok unit
file, is never replaced: the run stops (exit code 2) naming it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pyarrow as pa

from ..errors import JobError
from ..exec.executor import Executor
from ..exec.worker import JoinResult, UnitTask
from ..io.stores import OutPath, as_path, stat_of, store_of
from ..job import Job
from ..outputs.formats import FORMATS, NotBatchtoks
from ..outputs.parquet import METADATA_KEY, metadata_bytes, output_schema
from .prepare import Prepared
from .records import UnitFileRecord, UnitsRecord
from .states import PART_RECORD, FileState, derived_change, output_set, part_name
from .units import (
    PartDocuments,
    Unit,
    UnitFile,
    build_units,
    load_record,
    plan_unit,
    read_lengths,
    relative,
    save_record,
    unit_parts,
    unit_primary,
)

log = logging.getLogger("batchtok.runner.units")
SHOWN = 10


class UnitWriter:
    """Plans the job's units and writes the files that are not up to date."""

    def __init__(
        self, job: Job, state_dir: OutPath, parts_dir: OutPath, tmp_dir: Path, verify: bool
    ) -> None:
        self.job = job
        self.state_dir = state_dir
        self.parts_dir = parts_dir
        self.tmp_dir = tmp_dir
        self.verify = verify
        self.prep: Prepared | None = None
        self.record = UnitsRecord()
        self.plans: list[tuple[Unit, list[UnitFile]]] = []
        self.partial = False  # units were left out of the plan (an input failed)
        self.parts: list[list[PartDocuments]] = []  # each unit's, as planned
        self.lengths: dict[str, PartDocuments] = {}  # each part read so far, by its path
        self.writing: dict[str, UnitFile] = {}  # dest -> its file, while its task runs

    # -- planning ---------------------------------------------------------------------------

    def plan(
        self, prep: Prepared, failed: set[str] | None = None
    ) -> list[tuple[Unit, list[UnitFile]]]:
        """Every unit's files, from its parts' lengths (every member must be complete).
        ``failed``: the inputs that failed in this run; the units they (or an input not
        complete) belong to are left out of the plan, and the plan is partial."""
        self.prep = prep
        self.record = load_record(self.state_dir)
        keeps_empty = FORMATS[self.job.format].keeps_empty_documents
        self.plans = []
        self.parts = []
        self.partial = False
        units = []
        for unit in build_units(prep):
            if failed is not None and any(
                st.file.rel in failed or not st.complete for st in unit.members
            ):
                self.partial = True  # (its files wait for the next run)
                continue
            units.append((unit, unit_parts(unit, self.parts_dir)))
        # every unit's parts read at once (in parallel), each once a run: a part is named by
        # its shard's key, so the lengths read by an earlier plan of this run are still its
        missing = [p for _, parts in units for p in parts if p[0] not in self.lengths]
        for found in read_lengths(list(dict.fromkeys(missing)), self.job, keeps_empty):
            self.lengths[found.path] = found
        for unit, parts in units:
            read = [self.lengths[p[0]] for p in parts]
            self.plans.append((unit, plan_unit(prep, unit, read)))
            self.parts.append(read)
        return self.plans

    def stale(self) -> tuple[list[tuple[Unit, UnitFile]], list[str]]:
        """(the files to write, the names of files owned by earlier plans that this one has
        not): every file whose recorded key is its key and whose bytes are as written is kept
        (its record written again if only its stat moved)."""
        todo = []
        for unit, files in self.plans:
            for uf in files:
                if not self._kept(uf):
                    todo.append((unit, uf))
        current = self.current_names()
        extra = [
            name
            for name in self.record.owned
            if name not in current and _present(as_path(self._path(name), self.job.storage))
        ]
        return todo, extra

    def up_to_date(self) -> bool:
        """Whether every unit file is written and kept (planning them: every member is
        complete)."""
        assert self.prep is not None
        self.plan(self.prep)
        todo, extra = self.stale()
        return not todo and not extra

    def current_names(self) -> set[str]:
        return {relative(self.job, p) for _, files in self.plans for uf in files for p in
                output_set(uf)}  # fmt: skip

    def _path(self, name: str) -> str:
        return f"{str(self.job.output_dir).rstrip('/')}/{name}"

    def _kept(self, uf: UnitFile) -> bool:
        name = relative(self.job, uf.output)
        found = self.record.files.get(name)
        if found is not None and found.key == uf.key:
            if derived_change(uf, self.verify, found.stats, found.xxh3_128) is None:
                if found.stats != uf.stats:
                    found.stats = uf.stats
                    save_record(self.state_dir, self.record)
                return True
            return False
        if not uf.output.exists():
            return False
        try:
            doc, hashes = FORMATS[uf.format].provenance(uf.output)
        except (OSError, ValueError, pa.ArrowException):
            return False
        if (doc.get("unit") or {}).get("key") != uf.key:
            return False
        if derived_change(uf, True, None, hashes) is not None:
            return False
        self._remember(uf, hashes)  # written by this job, its record lost
        return True

    # -- writing ----------------------------------------------------------------------------

    def write(self, executor: Executor, failed: set[str]) -> None:
        """Plan the units again (their parts are all there now, but for the units of an
        input that ``failed``) and submit the task of each file to write; the files of the
        job's earlier plans not in this one are removed by :meth:`finish`."""
        prep = self.prep
        assert prep is not None
        self.plan(prep, failed)
        todo, _ = self.stale()
        self._check_ownership([uf for _, uf in todo])
        self.record.owned = sorted(set(self.record.owned) | self.current_names())
        save_record(self.state_dir, self.record)  # (the job's before any is written)
        if todo:
            log.info(
                "writing %d of %d output files cut from the documents' stream",
                len(todo),
                sum(len(files) for _, files in self.plans),
            )
        for unit, uf in todo:
            task = self._task(prep, unit, uf)
            self.writing[task.dest] = uf
            executor.submit(task)

    def done(self, task: UnitTask, result: JoinResult) -> None:
        uf = self.writing.pop(task.dest)
        self._remember(uf, result.digests)

    def finish(self) -> None:
        """Remove the files of earlier plans that this one has not (once every file of this
        one is written)."""
        if self.writing or self.partial:  # (a partial plan does not know every file)
            return
        _, extra = self.stale()
        for name in extra:
            path = as_path(self._path(name), self.job.storage)
            path.unlink(missing_ok=True)
        if extra:
            log.info("removed %d output files the new cut has no more", len(extra))
        current = self.current_names()
        self.record.owned = sorted(current)
        self.record.files = {k: v for k, v in self.record.files.items() if k in current}
        save_record(self.state_dir, self.record)

    def part_names(self, states: dict[str, FileState]) -> set[str]:
        """The names in the parts directory of every member's shards (and their records)."""
        names = set()
        for st in states.values():
            for key in st.keys:
                name = part_name(st.file.rel, key)
                names |= {name, name + PART_RECORD}
        return names

    def _remember(self, uf: UnitFile, digests: dict[str, str]) -> None:
        files = {p.name: stat_of(p) for p in output_set(uf)}
        uf.stats = files
        self.record.files[relative(self.job, uf.output)] = UnitFileRecord(
            uf.key, files, dict(digests)
        )
        save_record(self.state_dir, self.record)

    def check_first_files(self, prep: Prepared) -> None:
        """Refuse (exit 2) before any work a file at the place of a unit's first file that
        batchtok did not write (the others are checked when their cut is known)."""
        self.prep = prep
        self.record = load_record(self.state_dir)
        self.plans = []
        for unit in build_units(prep):
            first = UnitFile(unit_primary(self.job, unit, 0), self.job.format, self.job.provenance,
                             "", (), 0, None, [], 0, (0, 0))  # fmt: skip
            self.plans.append((unit, [first]))
        self._check_ownership([uf for _, files in self.plans for uf in files])
        self.plans = []

    def _check_ownership(self, files: list[UnitFile]) -> None:
        owned = set(self.record.owned)
        foreign = []
        for uf in files:
            for path in output_set(uf):
                name = relative(self.job, path)
                if name in owned or not _present(path):
                    continue
                why = _not_a_unit_file(uf, self._member_rels(uf))
                if why:
                    foreign.append(f"{path} is not a file batchtok wrote ({why})")
        if foreign:
            shown = foreign[:SHOWN] + (
                [f"... and {len(foreign) - SHOWN} more"] if len(foreign) > SHOWN else []
            )
            raise JobError(
                [
                    self.job.problem(
                        "output.dir",
                        f"{line}; a run never replaces a file batchtok did not write: move it "
                        "away, or choose another output.dir",
                    )
                    for line in shown
                ],
                str(self.job.file or ""),
            )

    def _member_rels(self, uf: UnitFile) -> set[str]:
        for unit, files in self.plans:
            if any(f is uf for f in files):
                return {st.file.rel for st in unit.members}
        return set()

    def _task(self, prep: Prepared, unit: Unit, uf: UnitFile) -> UnitTask:
        job = prep.job
        output_format = FORMATS[job.format]
        doc = {
            **prep.provenance,
            "unit": {
                "name": unit.rel,
                "index": uf.index,
                "key": uf.key,
                "inputs": len(uf.inputs),
                "first_input": uf.inputs[0] if uf.inputs else None,
                "last_input": uf.inputs[-1] if uf.inputs else None,
                **job.layout_options(),
            },
        }
        schema = output_schema(pa.schema([]), (), job.ids_column, job.count_column, job.dtype)
        if job.pack_length is not None and not output_format.token_file:
            for name in job.packed_columns():
                schema = schema.append(pa.field(name, pa.list_(pa.int32())))
        schema = schema.with_metadata({METADATA_KEY: metadata_bytes(doc)})
        vocab = max(prep.facts.vocab_size, prep.facts.max_id + 1)
        return UnitTask(
            dest=str(uf.output),
            tmp_dir=str(self.tmp_dir),
            format=job.format,
            schema=schema,
            compression=job.compression,
            token_dtype=output_format.token_dtype(vocab) or job.dtype,
            provenance=doc,
            slices=uf.slices,
            skip=uf.skip,
            take=uf.take,
            seed=job.shuffle_seed,
            salt=unit.salt,
            pack_length=job.pack_length,
            tag="unit-" + uf.key[:24],
            docs=output_format.docs_file(uf.output) if job.provenance else "",
            id_field=_id_field(job, unit),
            previous=tuple(str(p) for p in output_set(uf)) if output_format.token_file else (),
            rel=relative(job, uf.output),
        )


def _id_field(job: Job, unit: Unit) -> pa.Field | None:
    """The id column's field in the unit's provenance files: the inputs' type when they
    agree, else strings."""
    if not (job.provenance and job.id_column):
        return None
    types = {st.file.schema.field(job.id_column).type for st in unit.members}
    if len(types) == 1:
        return pa.field(job.id_column, types.pop())
    return pa.field(job.id_column, pa.string())


def _not_a_unit_file(uf: UnitFile, inputs: set[str]) -> str:
    """Why the file at ``uf``'s place is not batchtok's: a file cut from a stream, or the
    output of one of the unit's ``inputs`` (a run before the job shuffled it) ("" if it is)."""
    try:
        doc = FORMATS[uf.format].own_provenance(uf.output)
    except NotBatchtoks as exc:
        return str(exc)
    found = doc.get("input")
    named = found.get("file") if isinstance(found, dict) else None
    if doc.get("engine") != "batchtok" or not (
        isinstance(doc.get("unit"), dict) or named in inputs
    ):
        return "its batchtok provenance names neither a stream of documents nor its input"
    return ""


def _present(path: OutPath) -> bool:
    return store_of(path).present(path)
