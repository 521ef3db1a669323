"""The records that make a re-run cheap, read and written here only, as typed values.

A **record** (``OUT/.batchtok/records/<file>.json``, one per input file, written only by the
run's main process) remembers for its input its ``(size, mtime_ns, ctime_ns, inode)`` with the
row-group hashes computed from it (:class:`InputMemo`), and for its output the same stat of
every file (an S3 output's: size and ETag; a trainer format's set: each of its files), their
content hashes as written and the shard keys it was written with (:class:`OutputRecord`); and
the names of the output files the job wrote or began to write (``owned``: what lets a run
replace them, :mod:`batchtok.runner.outputs.ownership`). A re-run with nothing changed
therefore reads no input data: it compares stats and reads each output's footer or sidecar.
An output file whose stat no longer matches its record (or that has no record) is checked
before it is trusted again: a Parquet output is read whole, with page checksums verified; a
derived output's file must hash as recorded. ``--verify`` ignores the records' stats.

A record carries its version (``"format"``, :data:`~.keys.CACHE_FORMAT`): one of another
version is read as no record. Reading is lenient, value by value: a field of the wrong type is
read as absent, never trusted (a record is a hint that saves work; the outputs themselves
decide what is complete). The JSON keys are those earlier versions wrote, so a run of an
older batchtok's state resumes (``tests/runner/test_resume_across_versions.py``).
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from ..io.stores import OutPath, write_whole
from .keys import CACHE_FORMAT, RowGroupHash


def count_of(value: Any) -> int:
    """A recorded count: a positive int, else 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def recorded_hashes(value: Any) -> dict[str, str]:
    """The file name -> content hash pairs of ``value`` (none where it is not such a dict)."""
    if not isinstance(value, dict):
        return {}
    return {k: v for k, v in value.items() if isinstance(k, str) and isinstance(v, str)}


@dataclass
class InputMemo:
    """What a record remembers of its input: the stat and hash spec the row-group hashes were
    computed under, a JSON Lines input's blocks and an Arrow input's record batches."""

    path: str
    stat: Any
    spec: Any
    row_groups: list[Any]
    jsonl: dict[str, Any] | None = None  # {"block_bytes": n, "blocks": [[offset, ...], ...]}
    arrow: dict[str, Any] | None = None  # {"format": f, "text_columns": [...], "batches": [...]}

    @classmethod
    def from_json(cls, data: Any) -> InputMemo | None:
        if not isinstance(data, dict):
            return None
        row_groups = data.get("row_groups")
        jsonl = data.get("jsonl")
        arrow = data.get("arrow")
        return cls(
            path=str(data.get("path") or ""),
            stat=data.get("stat"),
            spec=data.get("spec"),
            row_groups=row_groups if isinstance(row_groups, list) else [],
            jsonl=jsonl if isinstance(jsonl, dict) else None,
            arrow=arrow if isinstance(arrow, dict) else None,
        )

    def to_json(self) -> dict[str, Any]:
        doc = {
            "path": self.path,
            "stat": self.stat,
            "spec": self.spec,
            "row_groups": self.row_groups,
        }
        if self.jsonl is not None:
            doc["jsonl"] = self.jsonl
        if self.arrow is not None:
            doc["arrow"] = self.arrow
        return doc

    def hashes(self, stat: dict[str, int], spec: dict[str, Any]) -> list[RowGroupHash] | None:
        """The row-group hashes, if the input's stat and hash spec are still these."""
        if self.stat != stat or self.spec != spec:
            return None
        try:
            return [RowGroupHash.from_json(h) for h in self.row_groups]
        except (KeyError, TypeError, ValueError):
            return None


@dataclass
class OutputRecord:
    """What a record remembers of a complete output, as it was written."""

    stat: Any  # of the primary file
    files: dict[str, Any] | None  # every file of the output -> its stat (None: not recorded)
    keys: Any  # the shard keys it holds, in order (compared, never trusted as a type)
    xxh3_128: dict[str, str] = field(default_factory=dict)  # file name -> content hash
    bad_rows: dict[str, int] = field(default_factory=dict)  # shard key -> bad rows it holds
    token_stats: Any = None  # shard key -> its TokenStats' JSON

    @classmethod
    def from_json(cls, data: Any) -> OutputRecord | None:
        if not isinstance(data, dict):
            return None
        files = data.get("files")
        bad = data.get("bad_rows")
        return cls(
            stat=data.get("stat"),
            files=files if isinstance(files, dict) else None,
            keys=data.get("keys"),
            xxh3_128=recorded_hashes(data.get("xxh3_128")),
            bad_rows={k: count_of(v) for k, v in bad.items()} if isinstance(bad, dict) else {},
            token_stats=data.get("token_stats"),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "stat": self.stat,
            "files": self.files,
            "xxh3_128": self.xxh3_128,
            "keys": self.keys,
            "bad_rows": self.bad_rows,
            "token_stats": self.token_stats,
        }

    def bad_rows_of(self, keys: Any) -> dict[str, int]:
        """The bad rows recorded for each of the shard ``keys`` (0 where none)."""
        return {k: self.bad_rows.get(k, 0) for k in keys}


UNITS_FORMAT = 1  # the version of the units' record below


@dataclass
class UnitFileRecord:
    """What the units' record remembers of one file cut from a stream, as it was written."""

    key: str  # what it holds (see batchtok.runner.plan.units)
    stats: dict[str, Any]  # every file of its set -> its stat
    xxh3_128: dict[str, str] = field(default_factory=dict)  # file name -> content hash

    @classmethod
    def from_json(cls, data: Any) -> UnitFileRecord | None:
        if not isinstance(data, dict) or not isinstance(data.get("key"), str):
            return None
        stats = data.get("stats")
        return cls(
            data["key"],
            stats if isinstance(stats, dict) else {},
            recorded_hashes(data.get("xxh3_128")),
        )

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "stats": self.stats, "xxh3_128": self.xxh3_128}


@dataclass
class UnitsRecord:
    """``OUT/.batchtok/units.json``: the files cut from streams that this job wrote or began
    to write (``owned``, names in the output directory: listed before any is written), and
    what each finished one holds. Read whole or not at all: a record of another version, or
    unreadable, is an empty one (the files are then checked by their own provenance)."""

    owned: list[str] = field(default_factory=list)
    files: dict[str, UnitFileRecord] = field(default_factory=dict)

    @classmethod
    def from_json(cls, data: Any) -> UnitsRecord:
        if not isinstance(data, dict) or data.get("format") != UNITS_FORMAT:
            return cls()
        owned = data.get("owned")
        files = data.get("files")
        found = {
            str(name): record
            for name, value in (files.items() if isinstance(files, dict) else ())
            if (record := UnitFileRecord.from_json(value)) is not None
        }
        names = [n for n in owned if isinstance(n, str)] if isinstance(owned, list) else []
        return cls(names, found)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": UNITS_FORMAT,
            "owned": sorted(self.owned),
            "files": {name: f.to_json() for name, f in sorted(self.files.items())},
        }


@dataclass
class FileRecord:
    """One input's record (see the module docstring); empty when there is none."""

    input: InputMemo | None = None
    output: OutputRecord | None = None
    owned: list[str] | None = None  # None: a record of a run that did not list them

    @classmethod
    def from_json(cls, data: Any) -> FileRecord:
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
            return cls()
        owned = data.get("owned")
        return cls(
            input=InputMemo.from_json(data.get("input")),
            output=OutputRecord.from_json(data.get("output")),
            owned=[n for n in owned if isinstance(n, str)] if isinstance(owned, list) else None,
        )

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"format": CACHE_FORMAT}
        if self.input is not None:
            doc["input"] = self.input.to_json()
        if self.output is not None:
            doc["output"] = self.output.to_json()
        if self.owned is not None:
            doc["owned"] = self.owned
        return doc


class Records:
    """Per-input records under ``OUT/.batchtok/records/`` (see the module docstring)."""

    def __init__(self, state_dir: OutPath) -> None:
        self.root = state_dir / "records"

    def path(self, rel: str) -> OutPath:
        return self.root / (rel + ".json")

    def load(self, rel: str) -> FileRecord:
        try:
            data = json.loads(self.path(rel).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return FileRecord()
        return FileRecord.from_json(data)

    def save(self, rel: str, record: FileRecord) -> None:
        # json's ASCII escapes carry a name that is not UTF-8 (its surrogates) exactly, so a
        # record read back names the files as the file system does (records are batchtok's own
        # state; what users read, the summary and metadata, is escaped for display instead)
        write_whole(self.path(rel), json.dumps(record.to_json(), sort_keys=True).encode())

    def remove(self, rel: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            self.path(rel).unlink()

    def all_rels(self) -> Iterator[str]:
        if not self.root.is_dir():
            return
        for path in self.root.rglob("*.json"):
            if not path.name.startswith("."):
                yield path.relative_to(self.root).as_posix()[: -len(".json")]


def memo_hashes(
    record: FileRecord, stat: dict[str, int], hash_spec: dict[str, Any]
) -> list[RowGroupHash] | None:
    """The row-group hashes remembered for an input, if its stat and hash spec are unchanged."""
    return None if record.input is None else record.input.hashes(stat, hash_spec)


def remember_hashes(
    record: FileRecord,
    path: str,
    stat: dict[str, int] | None,
    hash_spec: dict[str, Any],
    hashes: list[RowGroupHash],
    blocks: dict[str, Any] | None = None,
    batches: dict[str, Any] | None = None,
) -> None:
    """Store an input's row-group hashes in its record, for :func:`memo_hashes`; and a JSON
    Lines input's blocks (``{"block_bytes": n, "blocks": [...]}``) or an Arrow input's record
    batches (``{"format": ..., "batches": [...]}``), so that planning the next run does not
    read the file again while its stat is unchanged."""
    found = [h.to_json() for h in hashes]
    record.input = InputMemo(path, stat, hash_spec, found, blocks, batches)
