"""Which files at output paths a run may replace: only those it can show batchtok wrote.

A file at an output path (each file of a trainer format's set counts: ``.bin``, ``.idx``,
``.ds``, ``.ds.index``, ``.ds.metadata``, the ``.batchtok.json`` sidecar) is this job's when

* the job's record of its input (``OUT/.batchtok/records/``) lists it: a run lists the files
  of an output before it starts writing them (:func:`claim`), so a file it wrote and that was
  corrupted since, or a set a crash left half renamed, is still known as its own and is
  rewritten; a record written before records listed files proves the files of the output it
  describes;
* or, without such a record (the records were deleted), the file's own provenance names the
  input it was written from: a Parquet output's ``batchtok`` metadata, a trainer set's sidecar.

Anything else (a user's file, unreadable bytes nothing records, another tool's sidecar) is
refused before any work (:func:`check_outputs`, exit code 2): a run never replaces a file it
cannot show it wrote.
"""

from __future__ import annotations

from typing import Any

from ..errors import JobError
from ..io.names import escaped
from ..io.stores import OutPath, store_of
from ..job import Job
from ..plan.records import FileRecord, Records
from ..plan.states import FileState, output_set, owned_names
from .formats import FORMATS, NotBatchtoks

SHOWN = 10  # foreign files named one by one; the rest are counted


def claim(record: FileRecord, st: FileState) -> bool:
    """List the files of ``st``'s output in its ``record`` as this job's (the caller saves
    it before any of them is written); whether that changed the record (not if they are
    listed already)."""
    owned = set(owned_names(record, st))
    names = {p.name for p in output_set(st)}
    if record.owned is not None and names <= owned:
        return False
    record.owned = sorted(owned | names)
    return True


def check_outputs(job: Job, states: dict[str, FileState], records: Records) -> None:
    """Raise :class:`JobError` (exit code 2), naming each file, if a file at an output path
    is not one this job can show it wrote (see the module docstring)."""
    foreign: list[str] = []
    for st in states.values():
        foreign += foreign_files(st, records.load(st.file.rel))
    if not foreign:
        return
    lines = foreign[:SHOWN]
    if len(foreign) > SHOWN:
        lines.append(f"... and {len(foreign) - SHOWN} more")
    problems = [
        job.problem(
            "output.dir",
            f"{line}; a run never replaces a file batchtok did not write: move it away, or "
            "choose another output.dir",
        )
        for line in lines
    ]
    raise JobError(problems, str(job.file or ""))


def foreign_files(st: FileState, record: FileRecord) -> list[str]:
    """Each file at ``st``'s output paths that this job cannot show it wrote, with why."""
    owned = set(owned_names(record, st))
    present = [p for p in output_set(st) if p.name not in owned and _present(p)]
    if not present:
        return []
    why = _provenance_problem(st)
    if why is None:
        return []
    return [f"{p} is not a file batchtok wrote ({why})" for p in present]


def _present(path: OutPath) -> bool:
    return store_of(path).present(path)


def _provenance_problem(st: FileState) -> str | None:
    """Why the output's own provenance does not show it is this job's output of its input
    (None if it does)."""
    rel = st.file.rel
    try:
        doc = FORMATS[st.format].own_provenance(st.output)
    except NotBatchtoks as exc:
        return str(exc)
    unit = doc.get("unit")  # (a file an earlier run cut from this input's documents)
    mine = _names_input(doc, rel) or (isinstance(unit, dict) and unit.get("name") == rel)
    if doc.get("engine") != "batchtok" or not mine:
        return f"its batchtok provenance does not name the input {rel}"
    return None


def _names_input(doc: dict[str, Any], rel: str) -> bool:
    """Whether a ``batchtok`` metadata document says its output was written from input
    ``rel`` (Parquet metadata holds a name that is not UTF-8 escaped, a sidecar as it is)."""
    found = doc.get("input")
    named = found.get("file") if isinstance(found, dict) else None
    return named in (rel, escaped(rel))
