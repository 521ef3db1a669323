"""Reading what planning needs from the input files' Parquet footers (which files are inputs
is :mod:`batchtok.runner.inputs.discovery`'s), JSON Lines blocks (:mod:`.jsonl`) and Arrow
record batches (:mod:`.arrow_ipc`).

Only footers are read here (schemas, row-group sizes): cheap whatever the file size. Every
problem (a path that matches nothing, an unreadable file, a missing or non-text column, a
column to read or keep whose name another column has too) is collected and reported at
once, naming the job key, before any work starts.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import JobError, Problem, reason
from ..io.arrow_fs import StorageOptions, is_uri, open_input, stat
from ..io.stores import stat_key
from ..job import Job
from ..plan.records import FileRecord, Records
from . import arrow_ipc, text_arrays
from .arrow_ipc import Batch, is_arrow
from .discovery import capped, expand_inputs
from .jsonl import Block, is_jsonl, jsonl_compression, scan_blocks

STATE_DIR = ".batchtok"


@dataclass(frozen=True)
class RowGroup:
    rows: int
    text_bytes: int  # uncompressed size of the text (and pair) column chunks: an estimate
    total_bytes: int  # uncompressed size of the whole row group


@dataclass(frozen=True)
class InputFile:
    """One input file (Parquet, JSON Lines or Arrow) and what planning read of it."""

    path: str  # absolute
    rel: str  # its place in the output directory (posix separators)
    size: int
    mtime_ns: int
    inode: int
    row_groups: tuple[RowGroup, ...]
    schema: pa.Schema
    keep: tuple[str, ...]  # input columns copied to the output, in file order
    text_leaf: int  # Parquet leaf-column index of the text column
    keep_leaves: tuple[int, ...]  # leaf indices of kept columns other than the text column
    pair_leaf: int | None = None  # leaf index of the pair column, if the job has one
    ctime_ns: int = 0
    # JSON Lines: its blocks (its "row groups"), and its compression (None: plain)
    jsonl: bool = False
    blocks: tuple[Block, ...] = ()
    compression: str | None = None
    # Arrow IPC: its format (arrow_ipc.FILE or STREAM; "" for another input) and its record
    # batches (its "row groups")
    arrow: str = ""
    batches: tuple[Batch, ...] = ()

    @property
    def rows(self) -> int:
        return sum(rg.rows for rg in self.row_groups)

    @property
    def text_bytes(self) -> int:
        return sum(rg.text_bytes for rg in self.row_groups)

    def stat_key(self) -> dict[str, int]:
        """What the file system says of the file for free: an edit, even one that keeps the
        size and sets the mtime back, changes the ctime; a replaced file has another inode."""
        return {
            "size": self.size,
            "mtime_ns": self.mtime_ns,
            "ctime_ns": self.ctime_ns,
            "inode": self.inode,
        }


@contextlib.contextmanager
def open_source(path: str, storage: StorageOptions) -> Iterator[tuple[Any, dict[str, int]]]:
    """An input opened for reading (a local file, or an object through ``pyarrow.fs``) and
    its stat key, taken from the open file where the file system allows."""
    if is_uri(path):
        st = stat(path, storage)
        if st is None:
            raise FileNotFoundError(f"{path}: no such object")
        with open_input(path, storage) as raw:
            yield raw, st
        return
    with open(path, "rb") as raw:
        yield raw, stat_key(os.fstat(raw.fileno()))


def _leaf_count(t: pa.DataType) -> int:
    if pa.types.is_struct(t):
        return sum(_leaf_count(t.field(i).type) for i in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaf_count(t.key_type) + _leaf_count(t.item_type)
    if (
        pa.types.is_list(t)
        or pa.types.is_large_list(t)
        or pa.types.is_fixed_size_list(t)
        or (hasattr(pa.types, "is_list_view") and pa.types.is_list_view(t))
        or (hasattr(pa.types, "is_large_list_view") and pa.types.is_large_list_view(t))
    ):
        return _leaf_count(t.value_type)
    return 1


def _output_column_clash(job: Job, keep: tuple[str, ...], path: str) -> Problem | None:
    """The problem if the ids or count column would take the name of a kept input column."""
    for key, column in (
        ("output.ids_column", job.ids_column),
        ("output.count_column", job.count_column),
    ):
        if column in keep:
            return job.problem(
                key,
                f'"{column}" is also a column of {path} kept in the output; choose another '
                "name or leave that column out with output.keep_columns",
            )
    return None


def _shown_names(names: list[str]) -> str:
    return ", ".join(f'"{n}"' for n in names)


def _is_bytes_type(t: pa.DataType) -> bool:
    return (
        pa.types.is_binary(t)
        or pa.types.is_large_binary(t)
        or pa.types.is_fixed_size_binary(t)
        or (hasattr(pa.types, "is_binary_view") and pa.types.is_binary_view(t))
    )


def _text_column_problem(job: Job, path: str, schema: pa.Schema) -> Problem | None:
    """The problem with an input's text (or pair) column, if any: missing, named by more than
    one column (which of them is meant cannot be told), or not text."""
    names = schema.names
    for key, column in (
        ("input.text_column", job.text_column),
        ("input.pair_column", job.pair_column),
    ):
        if column is None:
            continue
        count = names.count(column)
        if count == 0:
            return job.problem(
                key, f'column "{column}" is missing from {path} (columns: {", ".join(names)})'
            )
        if count > 1:
            return job.problem(
                key,
                f'{count} columns of {path} are named "{column}"; the column to encode must '
                "have a name of its own: rename the others in the file, or name another column",
            )
        column_type = schema.field(column).type
        if not text_arrays.is_text(column_type):
            hint = (
                "; binary holds bytes with no declared encoding: write the column as strings"
                if _is_bytes_type(column_type)
                else ""
            )
            return job.problem(
                key,
                f'column "{column}" of {path} holds {column_type}, expected strings '
                f"({text_arrays.TEXT_TYPES}){hint}",
            )
    return None


def _kept_columns(job: Job, path: str, names: list[str]) -> tuple[tuple[str, ...], Problem | None]:
    """The input columns copied to the output, in file order, or the problem: a listed column
    missing, or a kept name that more than one column has (an output cannot hold two columns
    of one name, and a reader could not tell them apart)."""
    if job.keep_columns is None:
        keep = tuple(names)
    else:
        missing = [c for c in job.keep_columns if c not in names]
        if missing:
            return (), job.problem(
                "output.keep_columns",
                f"{', '.join(missing)} missing from {path} (columns: {', '.join(names)})",
            )
        wanted = set(job.keep_columns)
        keep = tuple(n for n in names if n in wanted)
    if job.group_column and job.group_column not in names:
        return (), job.problem(
            "report.group_column",
            f'column "{job.group_column}" is missing from {path} (columns: {", ".join(names)})',
        )
    if job.id_column:  # read (and hashed) with the text, for the provenance file
        if job.id_column not in names:
            return (), job.problem(
                "input.id_column",
                f'column "{job.id_column}" is missing from {path} (columns: {", ".join(names)})',
            )
        if job.id_column not in keep:
            keep += (job.id_column,)
    twice = [n for n in dict.fromkeys(keep) if keep.count(n) > 1]
    if twice:
        shown = f"{path} has more than one column named {_shown_names(twice)}"
        if job.keep_columns is None:
            told = f'{shown}, and "all" keeps each: list the columns to keep, leaving those out'
        else:
            told = f"{shown}, which the list names: leave them out of it"
        return (), job.problem("output.keep_columns", f"{told}, or rename them in the file")
    return keep, None


DELTA_PAGES = ("DELTA_BYTE_ARRAY", "DELTA_LENGTH_BYTE_ARRAY")


def _dictionary_in_delta_pages(
    job: Job,
    path: str,
    schema: pa.Schema,
    meta: pq.FileMetaData,
    keep: tuple[str, ...],
    leaf: Callable[[str], int],
) -> Problem | None:
    """The problem if a column the run reads is a dictionary (so the file's Arrow schema
    says) stored in DELTA pages: pyarrow cannot read those back as a dictionary ("Not yet
    implemented"), so every shard of the file would fail after the work began."""
    read = {name: "output.keep_columns" for name in keep}
    read.update({job.text_column: "input.text_column"})
    if job.pair_column is not None:
        read[job.pair_column] = "input.pair_column"
    for name, key in read.items():
        if not pa.types.is_dictionary(schema.field(name).type):
            continue
        j = leaf(name)
        for i in range(meta.num_row_groups):
            found = sorted(set(meta.row_group(i).column(j).encodings) & set(DELTA_PAGES))
            if found:
                instead = (
                    "leave it out of output.keep_columns, or "
                    if key == "output.keep_columns"
                    else ""
                )
                return job.problem(
                    key,
                    f'column "{name}" of {path} is a dictionary stored in {found[0]} pages '
                    f"(row group {i}), which pyarrow cannot read as a dictionary: {instead}"
                    "write the file again with the column as strings or in dictionary pages",
                )
    return None


def read_input(
    path: str, rel: str, job: Job, problems: list[Problem], record: FileRecord | None = None
) -> InputFile | None:
    """Footer facts of one input, or None with the problems appended. ``record``: the
    input's record from earlier runs (a JSON Lines file's blocks and an Arrow file's batches
    are remembered there)."""
    if is_jsonl(path):
        return read_jsonl_input(path, rel, job, problems, record or FileRecord())
    if is_arrow(path):
        return read_arrow_input(path, rel, job, problems, record or FileRecord())
    try:
        with open_source(path, job.storage) as (raw, st):
            pf = text_arrays.open_parquet(raw)
            meta = pf.metadata
            schema = pf.schema_arrow
    except (OSError, pa.ArrowException) as exc:
        problems.append(job.problem("input.paths", f"cannot read {path} as Parquet: {reason(exc)}"))
        return None
    names = schema.names
    text, pair = job.text_column, job.pair_column
    problem = _text_column_problem(job, path, schema)
    if problem is None:
        keep, problem = _kept_columns(job, path, names)
    if problem is not None:
        problems.append(problem)
        return None
    clash = _output_column_clash(job, keep, path)
    if clash is not None:
        problems.append(clash)
        return None
    # Parquet numbers leaf columns depth-first over the schema; map each field to its leaves.
    leaves: dict[str, range] = {}
    at = 0
    for f in schema:
        n = _leaf_count(f.type)
        leaves[f.name] = range(at, at + n)
        at += n
    if at != meta.num_columns:  # an unusual file: hash every other leaf (never stale)
        keep_leaves = tuple(i for i in range(meta.num_columns) if i != leaves[text][0])

        def leaf(name: str) -> int:
            return next(i for i in range(meta.num_columns) if meta.schema.column(i).path == name)
    else:
        # (report.group_column's values are hashed too: the statistics counted by them are
        # cached with the shards)
        hashed = (*keep, *([job.group_column] if job.group_column not in keep else []))
        keep_leaves = tuple(i for c in hashed if c and c != text for i in leaves[c])

        def leaf(name: str) -> int:
            return leaves[name][0]

    problem = _dictionary_in_delta_pages(job, path, schema, meta, keep, leaf)
    if problem is not None:
        problems.append(problem)
        return None
    text_leaf = leaf(text)
    pair_leaf = None if pair is None else leaf(pair)
    text_leaves = (text_leaf,) if pair_leaf is None else (text_leaf, pair_leaf)
    row_groups = tuple(
        RowGroup(
            rows=meta.row_group(i).num_rows,
            text_bytes=sum(
                meta.row_group(i).column(j).total_uncompressed_size for j in text_leaves
            ),
            total_bytes=meta.row_group(i).total_byte_size,
        )
        for i in range(meta.num_row_groups)
    )
    return InputFile(
        path=path,
        rel=rel,
        **st,
        row_groups=row_groups,
        schema=schema,
        keep=keep,
        text_leaf=text_leaf,
        pair_leaf=pair_leaf,
        keep_leaves=keep_leaves,
    )


def jsonl_fields(job: Job) -> tuple[str, ...]:
    """The fields read from a JSON Lines input, text (and pair) first, then those kept."""
    fields = [job.text_column] + ([job.pair_column] if job.pair_column else [])
    more = [c for c in (job.id_column, job.group_column) if c]
    for name in (*(job.keep_columns or ()), *more):
        if name not in fields:
            fields.append(name)
    return tuple(fields)


def jsonl_block_bytes(job: Job) -> int:
    """Bytes per block of a plain JSON Lines file: a quarter of a shard (or of an output row
    group, if smaller), so shards are cut finely enough and row groups stay bounded."""
    return max(1 << 16, int(min(job.shard_mb, job.row_group_mb) * 1e6 / 4))


def jsonl_memo(job: Job, f: InputFile) -> dict[str, Any]:
    """What an input's record keeps of its blocks (see :func:`remembered_blocks`)."""
    return {
        "block_bytes": jsonl_block_bytes(job),
        "blocks": [[b.offset, b.length, b.rows, b.first_line, b.data_bytes] for b in f.blocks],
    }


def remembered_blocks(job: Job, record: FileRecord, stat: dict[str, int]) -> list[Block] | None:
    """The blocks an earlier run found in a JSON Lines input, if its stat and the block size
    are unchanged (else None: the file is read again)."""
    memo = record.input
    if memo is None or memo.stat != stat:
        return None
    jsonl = memo.jsonl
    if not isinstance(jsonl, dict) or jsonl.get("block_bytes") != jsonl_block_bytes(job):
        return None
    try:
        blocks = [Block(*map(int, b)) for b in jsonl["blocks"]]
    except (KeyError, TypeError, ValueError):
        return None
    if not blocks:  # every file has a block now; an older run's record of an empty one
        return None
    ends = [b.offset + b.length for b in blocks]
    if [b.offset for b in blocks] != [0, *ends[:-1]] or (ends and ends[-1] != stat["size"]):
        return None  # not a tiling of the file as it is
    return blocks


def read_jsonl_input(
    path: str, rel: str, job: Job, problems: list[Problem], record: FileRecord
) -> InputFile | None:
    """A JSON Lines input's blocks (remembered, or one read of the file), or None with the
    problems."""
    compression = jsonl_compression(path)
    assert compression is not False
    try:
        with open_source(path, job.storage) as (raw, st):
            blocks = remembered_blocks(job, record, st)
            if blocks is None:
                blocks = scan_blocks(raw, compression, jsonl_block_bytes(job))
    except (OSError, pa.ArrowException, EOFError) as exc:
        problems.append(job.problem("input.paths", f"cannot read {path}: {reason(exc)}"))
        return None
    fields = jsonl_fields(job)
    # (the group column is read for the statistics, not kept unless listed)
    read_only = {job.group_column} - {job.text_column, job.pair_column, job.id_column}
    keep = (
        tuple(f for f in fields if f not in read_only)
        if job.keep_columns is None
        else tuple(dict.fromkeys(job.keep_columns))
    )
    if job.id_column and job.id_column not in keep:
        keep += (job.id_column,)
    clash = _output_column_clash(job, keep, path)
    if clash is not None:
        problems.append(clash)
        return None
    return InputFile(
        path=path,
        rel=rel,
        **st,
        row_groups=tuple(RowGroup(b.rows, b.text_bytes, b.text_bytes) for b in blocks),
        schema=pa.schema([pa.field(name, pa.string()) for name in fields]),
        keep=keep,
        text_leaf=0,
        pair_leaf=None if job.pair_column is None else 1,
        keep_leaves=(),
        jsonl=True,
        blocks=tuple(blocks),
        compression=compression,
    )


def arrow_memo(job: Job, f: InputFile) -> dict[str, Any]:
    """What an input's record keeps of an Arrow input's batches (see
    :func:`remembered_layout`)."""
    return {
        "format": f.arrow,
        "text_columns": list(text_column_names(job)),
        "batches": [b.to_json() for b in f.batches],
    }


def text_column_names(job: Job) -> tuple[str, ...]:
    return (job.text_column,) if job.pair_column is None else (job.text_column, job.pair_column)


def remembered_layout(
    job: Job, record: FileRecord, stat: dict[str, int]
) -> tuple[str, tuple[Batch, ...]] | None:
    """The format and batches an earlier run found in an Arrow input, if its stat and the
    text columns (whose sizes the batches carry) are unchanged (else None: the file is read
    again)."""
    memo = record.input
    if memo is None or memo.stat != stat or not isinstance(memo.arrow, dict):
        return None
    found = memo.arrow
    if found.get("format") not in (arrow_ipc.FILE, arrow_ipc.STREAM):
        return None
    if found.get("text_columns") != list(text_column_names(job)):
        return None
    batches = arrow_ipc.batches_of(found.get("batches"))
    return None if batches is None else (found["format"], batches)


def read_arrow_input(
    path: str, rel: str, job: Job, problems: list[Problem], record: FileRecord
) -> InputFile | None:
    """An Arrow IPC input's schema and record batches (the schema read again, the batches
    remembered; or one read of the file, see :func:`.arrow_ipc.scan`), or None with the
    problems."""
    try:
        with open_source(path, job.storage) as (raw, st):
            remembered = remembered_layout(job, record, st)
            if remembered is None:
                layout = arrow_ipc.scan(raw, text_column_names(job), st["size"])
            else:
                layout = arrow_ipc.Layout(
                    remembered[0], arrow_ipc.schema_of(raw, remembered[0]), remembered[1]
                )
    except (OSError, pa.ArrowException) as exc:
        problems.append(
            job.problem("input.paths", f"cannot read {path} as Arrow IPC: {reason(exc)}")
        )
        return None
    schema = layout.schema
    problem = _text_column_problem(job, path, schema)
    if problem is None:
        keep, problem = _kept_columns(job, path, schema.names)
    if problem is None:
        problem = _output_column_clash(job, keep, path)
    if problem is not None:
        problems.append(problem)
        return None
    names = schema.names
    texts = text_column_names(job)
    return InputFile(
        path=path,
        rel=rel,
        **st,
        row_groups=tuple(RowGroup(b.rows, b.text_bytes, b.total_bytes) for b in layout.batches),
        schema=schema,
        keep=keep,
        text_leaf=names.index(job.text_column),
        pair_leaf=None if job.pair_column is None else names.index(job.pair_column),
        keep_leaves=tuple(
            i
            for i, name in enumerate(names)
            if (name in keep or name == job.group_column) and name not in texts
        ),
        arrow=layout.kind,
        batches=layout.batches,
    )


#: Inputs in object storage (URIs) read at once while planning: a store answers many requests
#: together, where one file at a time 10,000 files cost 10,000 round trips and more one after
#: another. Local files are read one at a time: reading a footer is mostly Python work here,
#: and threads contending for the GIL read 10,000 local footers slower, not faster.
READERS = 16
LOCAL_READERS = 1

_T = TypeVar("_T")
_R = TypeVar("_R")


class _RealPaths:
    """``os.path.realpath`` of many files in few directories: each directory is resolved once,
    then a file's own name only if it is a link (a full resolution looks at every component
    of every path)."""

    def __init__(self) -> None:
        self._dirs: dict[str, str] = {}

    def __call__(self, path: str) -> str:
        head, name = os.path.split(os.path.abspath(path))
        real = self._dirs.get(head)
        if real is None:
            real = self._dirs[head] = os.path.realpath(head)
        found = os.path.join(real, name)
        return os.path.realpath(found) if os.path.islink(found) else found


def _in_threads(work: Callable[[_T], _R], items: list[_T], threads: int) -> list[_R]:
    """``[work(item) for item in items]`` in up to ``threads`` threads; the first exception
    raised (in the items' order) is raised. Each thread takes a run of items at a time: a
    pool's hand-over of each item costs more than a local file's footer."""
    if threads < 2 or len(items) < 2:
        return [work(item) for item in items]
    size = max(1, min(64, len(items) // (4 * threads)))
    runs = [items[i : i + size] for i in range(0, len(items), size)]
    pool = ThreadPoolExecutor(min(threads, len(runs)), thread_name_prefix="batchtok-inputs")
    try:
        done = pool.map(lambda run: [work(item) for item in run], runs)
        return [result for run in done for result in run]
    finally:  # (an interrupted plan leaves the runs not started unread)
        pool.shutdown(cancel_futures=True)


def _same_file(a: str, b: str, realpath: Callable[[str], str] = os.path.realpath) -> bool:
    if is_uri(a) or is_uri(b):
        return a == b
    return realpath(a) == realpath(b)


def resolve_inputs(job: Job, records: Records | None = None) -> tuple[list[InputFile], list[str]]:
    """Every input file with its footer facts; :class:`JobError` if any is unusable.
    ``records``: the output's records of earlier runs (read, never written here).

    Inputs in object storage are read :data:`READERS` at a time; the files and every problem
    come in the order of the inputs all the same."""
    pairs, warnings = expand_inputs(job)
    realpath = _RealPaths()

    def read(pair: tuple[str, str]) -> tuple[InputFile | None, list[Problem]]:
        path, rel = pair
        problems: list[Problem] = []
        if _same_file(str(job.output_dir / rel), path, realpath):
            problem = f"the output for {path} would overwrite the input"
            return None, [job.problem("output.dir", problem)]
        remembers = is_jsonl(path) or is_arrow(path)  # (their blocks or batches)
        record = records.load(rel) if records is not None and remembers else None
        return read_input(path, rel, job, problems, record), problems

    remote = any(is_uri(path) for path, _ in pairs)
    found = _in_threads(read, pairs, READERS if remote else LOCAL_READERS)
    problems = [problem for _, some in found for problem in some]
    if problems:
        raise JobError(capped(problems), str(job.file or ""))
    return [info for info, _ in found if info is not None], warnings
