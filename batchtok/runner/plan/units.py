"""Outputs cut from streams of documents: ``output.layout = "stream"``,
``output.max_tokens_per_file`` and ``output.shuffle_seed``.

A **unit** is one stream of documents and the numbered files it becomes: the whole job's
inputs in the plan's order (``"stream"``: ``OUT/NAME-00000...``, NAME the job's name), or one
input's (``"mirror"``: ``OUT/a/b-00000...``, or ``OUT/a/b`` when only shuffled). Its documents
are the rows with ids of its shards' parts, in order (an empty one left out where the format
leaves it out). Every shard's part is kept in ``OUT/.batchtok/parts`` while its input is in the
job: the parts are what the files are cut from, so a changed input re-encodes its own shards
only.

Once every shard has its part, the driver reads each part's lengths (its count column) and
plans each unit (:func:`plan_unit`): the shuffled order and the cut points
(:mod:`batchtok.formats.layout`, pure functions of the lengths and the options), and for each
file what it holds as **slices** of windows: the parts (and their document ranges) of a window,
the window's number (-1: the plan's order, no permutation) and the positions taken from it.
A file's **key** hashes exactly that (the shard keys, the ranges, the options); a file whose
recorded key is the new one, and whose bytes are as written, is kept. So a changed shard
rewrites the files that draw from it, and those whose cut points it moved.

The worker rebuilds a window's permutation from its number and the seed, reads the documents
it takes (spilling them to a local file when shuffled, to write them in the permuted order)
and writes the file with the format's writer (:func:`batchtok.runner.exec.worker.assemble_unit`).
"""

from __future__ import annotations

import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow.parquet as pq
import xxhash

from ..exec.worker import Segment, WindowSlice
from ..io.stores import OutPath, as_path, readable, write_whole
from ..job import Job
from ..outputs.formats import FORMATS
from .keys import hex128
from .prepare import Prepared
from .records import UnitsRecord
from .states import FileState, part_locations

if TYPE_CHECKING:
    import numpy as np

READERS = 16  # parts whose lengths are read at once (object storage: one request each)
RECORD = "units.json"  # in the state directory: the unit files written, and their keys


@dataclass
class Unit:
    """One stream of documents: its members' shards in order, and where its files go."""

    rel: str  # the files' name in the output directory, before "-00000" and the format's
    members: list[FileState]
    salt: int  # separates the permutations of two units with the same seed
    numbered: bool  # files "NAME-00000..." (else one file, "NAME")


@dataclass
class UnitFile:
    """One output file of a unit: where it goes, what it holds (:class:`UnitTask`'s
    ``slices``, ``skip``, ``take``) and its key; also what the output checks of
    :mod:`.states` read (``output``, ``format``, ``docs``, ``stats``)."""

    output: OutPath
    format: str
    docs: bool
    key: str
    slices: tuple[WindowSlice, ...]
    skip: int
    take: int | None
    inputs: list[str]  # the inputs it draws from, in order
    index: int
    tokens: tuple[int, int]  # the ids it holds: [first, end) of the unit's ordered stream
    stats: dict[str, Any] = field(default_factory=dict)


def build_units(prep: Prepared) -> list[Unit]:
    """The job's units, in the plan's order."""
    job = prep.job
    states = [prep.states[f.rel] for f in prep.files]
    if job.layout == "stream":
        return [Unit(job.name + ".parquet", states, 0, True)]
    return [
        Unit(
            st.file.rel,
            [st],
            xxhash.xxh3_64_intdigest(st.file.rel.encode()),
            bool(job.max_tokens_per_file is not None),
        )
        for st in states
    ]


def unit_primary(job: Job, unit: Unit, index: int) -> OutPath:
    """Where file ``index`` of ``unit`` goes (its format's primary file)."""
    rel = unit.rel
    if unit.numbered:
        base = rel[: -len(".parquet")] if rel.lower().endswith(".parquet") else rel
        rel = f"{base}-{index:05d}.parquet"
    return as_path(FORMATS[job.format].primary(str(job.output_dir), rel), job.storage)


@dataclass(frozen=True)
class PartDocuments:
    """A shard's part as a unit reads it: where it is, and its documents' lengths."""

    path: str
    digest: str
    key: str
    rel: str  # its input
    source: str  # the input's path or URI
    lengths: np.ndarray


PartOf = tuple[str, str, str, str, str]  # (part, digest, shard key, input rel, input path)


def unit_parts(unit: Unit, parts_dir: OutPath) -> list[PartOf]:
    """(part, its recorded digest, shard key, input, its path) of each shard of ``unit``, in
    order."""
    found = []
    for st in unit.members:
        for key in st.keys:
            part, _ = part_locations(parts_dir, st.file.rel, key)
            found.append((part, st.part_digests[key], key, st.file.rel, st.file.path))
    return found


def read_lengths(parts: list[PartOf], job: Job, keeps_empty: bool) -> list[PartDocuments]:
    """Each part's documents' lengths: the count column's rows with ids (non-empty ones only
    where the format leaves empty documents out). Read :data:`READERS` at a time."""

    import numpy as np  # (a run that cuts no stream imports no numpy)

    def one(item: PartOf) -> PartDocuments:
        path, digest, key, rel, source = item
        table = pq.read_table(readable(as_path(path, job.storage)), columns=[job.count_column])
        counts = table.column(0)
        valid = counts.drop_null() if counts.null_count else counts
        lengths = np.asarray(valid.to_numpy(zero_copy_only=False), dtype=np.int64)
        if not keeps_empty:
            lengths = lengths[lengths > 0]
        return PartDocuments(path, digest, key, rel, source, lengths)

    if len(parts) <= 1:
        return [one(p) for p in parts]
    with ThreadPoolExecutor(min(READERS, len(parts))) as pool:
        return list(pool.map(one, parts))


def plan_unit(prep: Prepared, unit: Unit, parts: list[PartDocuments]) -> list[UnitFile]:
    """The files of ``unit`` (see the module docstring)."""
    import numpy as np

    from batchtok.formats import layout

    job = prep.job
    counts = np.array([len(p.lengths) for p in parts], dtype=np.int64)
    starts = np.concatenate(([0], np.cumsum(counts)))
    lengths = np.concatenate([p.lengths for p in parts]) if parts else np.zeros(0, np.int64)
    order, windows = layout.shuffle_order(lengths, job.shuffle_seed, job.shuffle_window, unit.salt)
    shuffled = job.shuffle_seed is not None
    ordered = lengths[order]
    ends = np.concatenate(([0], np.cumsum(ordered, dtype=np.int64)))
    spans: list[tuple[int, int, int, int | None]] = []  # (first doc, end doc, skip, take)
    if job.pack_length is not None:
        for t0, t1 in layout.cut_packed(
            int(ends[-1]), job.pack_length, job.max_tokens_per_file, job.pack_keep_last
        ):
            first = int(np.searchsorted(ends, t0, side="right")) - 1
            end = int(np.searchsorted(ends, t1, side="left"))
            first = min(max(first, 0), len(ordered))
            spans.append((first, max(end, first), t0 - int(ends[first]), t1 - t0))
    else:
        cuts = layout.cut_documents(ordered, job.max_tokens_per_file)
        spans = [(int(a), int(b), 0, None) for a, b in zip(cuts[:-1], cuts[1:])]
    files = []
    for index, (first, end, skip, take) in enumerate(spans):
        slices = []
        if shuffled:
            for w in range(len(windows) - 1):
                ws, we = int(windows[w]), int(windows[w + 1])
                lo, hi = max(first, ws), min(end, we)
                if lo < hi:
                    slices.append(
                        WindowSlice(_segments(parts, starts, ws, we), w, we - ws, lo - ws, hi - ws)
                    )
        elif end > first:
            slices.append(WindowSlice(_segments(parts, starts, first, end), -1, end - first, 0,
                                      end - first))  # fmt: skip
        inputs = list(dict.fromkeys(s.rel for ws in slices for s in ws.segments))
        output = unit_primary(job, unit, index)
        key = _file_key(prep, unit, index, slices, skip, take)
        begin = int(ends[first]) + skip
        held = (begin, int(ends[end]) if take is None else begin + take)
        files.append(
            UnitFile(
                output,
                job.format,
                job.provenance,
                key,
                tuple(slices),
                skip,
                take,
                inputs,
                index,
                held,
            )  # fmt: skip
        )
    return files


def _segments(
    parts: list[PartDocuments], starts: np.ndarray, first: int, end: int
) -> tuple[Segment, ...]:
    """The parts' document ranges covering documents [first, end) of the plan's order."""
    import numpy as np

    out = []
    p = int(np.searchsorted(starts, first, side="right")) - 1
    while p < len(parts) and starts[p] < end:
        lo, hi = max(first, int(starts[p])), min(end, int(starts[p + 1]))
        if lo < hi:
            part = parts[p]
            out.append(
                Segment(
                    part.path,
                    part.digest,
                    part.key,
                    part.rel,
                    part.source,
                    lo - int(starts[p]),
                    hi - int(starts[p]),
                )  # fmt: skip
            )
        p += 1
    return tuple(out)


def _file_key(
    prep: Prepared,
    unit: Unit,
    index: int,
    slices: list[WindowSlice],
    skip: int,
    take: int | None,
) -> str:
    """What a unit file's bytes are a function of: the shards' keys (which hold the tokenizer,
    the encode and format options) and the ranges taken of them, the layout, where it is."""
    job = prep.job
    doc = {
        "unit": unit.rel,
        "index": index,
        "numbered": unit.numbered,
        "layout": job.layout_options(),
        "salt": unit.salt,
        "output": job.output_format(),
        "provenance": [job.provenance, job.id_column],
        "skip": skip,
        "take": take,
        "slices": [
            [[[s.key, s.rel, s.first, s.end] for s in ws.segments], ws.window, ws.n, ws.p0, ws.p1]
            for ws in slices
        ],
    }
    return hex128(json.dumps(doc, sort_keys=True).encode())


# -- the record of the files written -----------------------------------------------------------


def load_record(state_dir: OutPath) -> UnitsRecord:
    """The units' record of the job at ``state_dir`` (empty if there is none)."""
    try:
        data = json.loads((state_dir / RECORD).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        data = None
    return UnitsRecord.from_json(data)


def save_record(state_dir: OutPath, record: UnitsRecord) -> None:
    write_whole(state_dir / RECORD, json.dumps(record.to_json(), sort_keys=True).encode())


def relative(job: Job, path: OutPath | str) -> str:
    """A path's name relative to the output directory (how the record names files)."""
    root = str(job.output_dir).rstrip("/") + "/"
    text = str(path)
    return text[len(root) :] if text.startswith(root) else os.path.basename(text)
