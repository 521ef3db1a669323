"""What a worker does with one task: hash an input, encode a shard, or join a file's parts.

These are plain functions of a small task description (paths, row-group ranges, options), a
``report`` callback for progress and the phase's :class:`WorkerContext`; the data is read here,
never sent. Every executor calls the same functions, so caching and resume behave the same
whatever runs them.

The tokenizer is not in the task but in the context, made in the parent before the worker
processes are forked: each child uses the parent's loaded tables (copy-on-write), so a
tokenizer is loaded once per run, not once per worker or per task (a Ray actor loads it once
from the bytes the driver put).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import resource
import tempfile
import time
from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from itertools import repeat
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq
import xxhash

if TYPE_CHECKING:
    from batchtok import Tokenizer

    from ..job import Job

from batchtok.formats.provenance import DocsWriter

from ..errors import BadRowError, CorruptFileError, InputChangedError
from ..inputs import arrow_ipc, text_arrays
from ..inputs.arrow_ipc import Batch, hash_batches, is_arrow
from ..inputs.jsonl import Block, block_bytes_of, open_stream, read_rows
from ..io import stores
from ..io.arrow_fs import StorageOptions, is_uri, open_input
from ..io.arrow_fs import stat as storage_stat
from ..io.lock import check_lock
from ..io.stores import stat_key
from ..outputs.formats import DEFAULT_FORMAT, FORMATS
from ..outputs.parquet import (
    PAGE_CHECKSUMS,
    PART_LINE,
    TYPECODES,
    AtomicParquet,
    FileOutput,
    copy_row_groups,
    list_arrays,
)
from ..plan.keys import RowGroupHash, file_xxh3, hash_row_groups
from ..report.stats import ShardStats
from ..report.token_stats import IdCounter, TokenStats
from .encode import Encoder, SpecialCounter, TokenizerFacts, eos_id

log = logging.getLogger("batchtok.runner.exec.worker")

Report = Callable[[ShardStats], None]  # sends a progress report to the parent
BAD_ROWS_LOGGED = 10  # per shard; the rest are counted
BAD_ROW_EXAMPLES = 20  # per shard, returned for the summary
PACKED_ROW_GROUP_IDS = 16_000_000  # ids per row group of packed Parquet


@dataclass(frozen=True)
class EncodeSettings:
    text_column: str
    pair_column: str | None
    add_special_tokens: bool
    dtype: str
    compression: str
    bad_rows: str
    eos_id: int | None = None  # appended to every non-empty row (output.append_eos)
    storage: StorageOptions = StorageOptions()  # how s3:// (and other URI) inputs are read
    # parts carry each row's row (and line) in the input, and its id column (output.provenance)
    provenance: bool = False
    id_column: str = ""
    group_column: str = ""  # the token statistics are counted by its values too


def encode_settings(job: Job, facts: TokenizerFacts | None = None) -> EncodeSettings:
    """The settings a job's tasks encode and write with (``facts``: the tokenizer's, for the
    EOS id; none in a phase that only hashes)."""
    return EncodeSettings(
        text_column=job.text_column,
        pair_column=job.pair_column,
        add_special_tokens=job.add_special_tokens,
        dtype=job.dtype,
        compression=job.compression,
        bad_rows=job.bad_rows,
        eos_id=None if facts is None else eos_id(job, facts),
        storage=job.storage,
        provenance=job.provenance,
        id_column=job.id_column,
        group_column=job.group_column,
    )


@dataclass
class WorkerContext:
    """What a worker's tasks read, handed to every task (:func:`run_task`): the encode
    settings, the tokenizer and its facts (None in a phase that only hashes), the run lock to
    check before publishing, and whom to tell that the task moves on.

    Made in the parent before the local workers are forked, which
    share it copy-on-write; a Ray actor gets :meth:`portable`'s copy and loads the tokenizer
    itself."""

    settings: EncodeSettings
    tokenizer: Tokenizer | None = None
    facts: TokenizerFacts | None = None
    lock: tuple[Any, str] | None = None  # the run lock's path and run id
    alive: Callable[[int], None] | None = field(default=None, repr=False, compare=False)
    # the job's other tokenizers' contexts, by name (ShardTask.also)
    companions: dict[str, WorkerContext] = field(default_factory=dict, repr=False)

    def hear(self, notify: Callable[[int], None] | None) -> None:
        """Have ``notify(text_bytes)`` called whenever a task moves on: before it encodes a
        batch (``text_bytes``: the batch's text, which bounds how long it may take), after
        each step of hashing or joining, and after each part of an upload (0). The stall
        watch (``run.stall_timeout``) hears it; call in the worker process."""
        self.alive = notify

    def beat(self, text_bytes: int = 0) -> None:
        if self.alive is not None:
            self.alive(text_bytes)

    def upload_beat(self) -> None:
        """A part of an upload done (the task moves on)."""
        self.beat(0)

    def guard(self) -> None:
        """Raise LockLost if the run's lock file was deleted or replaced (see
        :mod:`batchtok.runner.io.lock`); called before anything is published."""
        if self.lock is not None:
            check_lock(*self.lock)

    def sink(
        self, dest: str, tmp_dir: str, schema: pa.Schema, compression: str, tag: str, **more: Any
    ) -> AtomicParquet:
        """A Parquet file written to ``dest`` and published whole (renamed, or uploaded with
        the job's storage options, the run lock checked first, progress told as it uploads);
        ``more``: :class:`AtomicParquet`'s other options."""
        return AtomicParquet(
            dest,
            tmp_dir,
            schema,
            compression,
            tag,
            guard=self.guard,
            options=self.settings.storage,
            beat=self.upload_beat,
            **more,
        )

    def portable(self) -> WorkerContext:
        """This context without what stays in this process (the tokenizer, the listener)."""
        return replace(self, tokenizer=None, alive=None, companions={})


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def current_rss_mb() -> float | None:
    """This process's resident memory now (Linux; None elsewhere)."""
    try:
        with open("/proc/self/statm") as f:
            pages = int(f.read().split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class UnchangedInput:
    """An input file opened for reading, checked to be the one the run planned (same size,
    mtime, ctime and inode) when opened and again when closed; else
    :class:`InputChangedError` naming it. Reading through the one descriptor means a file
    replaced meanwhile is never half old, half new."""

    def __init__(self, path: str, expected: dict[str, int], storage: StorageOptions) -> None:
        self.path = path
        self.expected = expected
        self.file: Any = None
        self.storage = storage if is_uri(path) else None

    def _stat_now(self) -> tuple[dict[str, int] | None, dict[str, int] | None]:
        """(the open file's stat, the path's stat now; None if it is gone)."""
        if self.storage is not None:  # an object: no descriptor to stat, only its name
            now = storage_stat(self.path, self.storage)
            return now, now
        now = stat_key(os.fstat(self.file.fileno()))
        try:
            return now, stat_key(os.stat(self.path))
        except FileNotFoundError:
            return now, None

    def check(self) -> None:
        assert self.file is not None
        now, named = self._stat_now()
        if now != self.expected or named != self.expected:
            gone = "was deleted" if named is None else "changed"
            raise InputChangedError(
                f"{self.path} {gone} while the run was reading it (size, mtime, ctime or "
                "inode differ from when it was planned); this file fails in this run, a re-run "
                "reads it again"
            )

    def __enter__(self) -> Any:
        try:
            if self.storage is not None:
                self.file = open_input(self.path, self.storage)
            else:
                self.file = open(self.path, "rb")
        except FileNotFoundError as exc:
            raise InputChangedError(
                f"{self.path} was deleted while the run was going; this file fails in this run"
            ) from exc
        try:
            self.check()
        except BaseException:
            self.file.close()
            raise
        return self.file

    def __exit__(self, exc_type, exc, tb) -> None:
        try:
            if exc_type is None:
                self.check()
        finally:
            self.file.close()


# -- hashing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HashTask:
    rel: str
    path: str
    text_columns: tuple[str, ...]  # the text column, and the pair column if any
    keep_leaves: tuple[int, ...]  # Parquet leaf columns (an Arrow input's fields) kept
    text_bytes: int  # estimate, for progress
    stat: dict[str, int]  # of the file when planned
    blocks: tuple[Block, ...] = ()  # a JSON Lines file's: each is hashed by its bytes

    @property
    def label(self) -> str:
        return f"hash {self.rel}"


@dataclass
class HashResult:
    row_groups: list[RowGroupHash]


def hash_file(task: HashTask, report: Report, ctx: WorkerContext) -> HashResult:
    with UnchangedInput(task.path, task.stat, ctx.settings.storage) as source:
        if task.blocks:
            hashes = []
            for block in task.blocks:
                hashes.append(_hash_block(source, block, task.path))
                ctx.beat()
        elif is_arrow(task.path):  # by record batch, as planning cut it
            hashes = hash_batches(source, task.text_columns, task.keep_leaves, alive=ctx.beat)
        else:
            hashes = hash_row_groups(source, task.text_columns, task.keep_leaves, alive=ctx.beat)
    report(ShardStats(text_bytes=task.text_bytes))
    return HashResult(hashes)


def _hash_block(source: Any, block: Block, path: str) -> RowGroupHash:
    """A JSON Lines block's hash: of its bytes as stored (compressed or not)."""
    x = xxhash.xxh3_128()
    source.seek(block.offset)
    remaining = block.length
    while remaining > 0:
        chunk = source.read(min(1 << 20, remaining))
        if not chunk:
            raise InputChangedError(f"{path}: shorter than when it was planned")
        x.update(chunk)
        remaining -= len(chunk)
    return RowGroupHash(x.hexdigest(), block.rows, 0, block.text_bytes)


# -- encoding ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)  # (slots: a run queues one for each shard)
class ShardTask:
    shard_id: str
    rel: str
    path: str
    row_groups: tuple[int, int]  # [first, end) of the input file
    first_row: int  # index in the input file of the shard's first row
    splits: tuple[int, ...]  # rows from the shard start where each output row group ends
    batch_rows: int
    keep: tuple[str, ...]
    output: FileOutput  # the schema and metadata document its input file's tasks share
    dest: str  # the output file (one-shard file) or the part file
    tmp_dir: str
    key: str
    text_bytes: int
    stat: dict[str, int]  # of the input when planned (and hashed)
    record_file: str = ""  # a part's: where its content hash and bad rows are recorded
    blocks: tuple[Block, ...] = ()  # a JSON Lines input's blocks in this shard
    compression: str | None = None  # of a JSON Lines input
    arrow: str = ""  # an Arrow input's IPC format (arrow_ipc.FILE or STREAM)
    batches: tuple[Batch, ...] = ()  # an Arrow input's record batches in this shard
    # the same shard for other tokenizers of the job (tokenizer.paths), by name: each writes
    # its own part from the batches read once (see WorkerContext.companions)
    also: tuple[tuple[str, ShardTask], ...] = ()

    @property
    def label(self) -> str:
        return f"shard {self.shard_id}"

    @property
    def schema(self) -> pa.Schema:
        """The schema, with its metadata, of the file it writes: made from the file's shared
        :class:`FileOutput` where it is written, so a task carries no metadata of its own."""
        part = self.shard_id if self.record_file else None  # only a part has a record file
        return self.output.shard_schema(self.key, self.row_groups, part)


class _ShardState:
    """A shard's counts as it is encoded, and what to do with its bad rows."""

    def __init__(self, task: ShardTask, settings: EncodeSettings) -> None:
        self.task = task
        self.settings = settings
        self.stats = ShardStats()
        self.tokens = TokenStats()

    def bad_row(self, row: int, reason: str) -> None:
        task, policy, stats = self.task, self.settings.bad_rows, self.stats
        if policy == "fail":
            raise BadRowError(
                f'{task.path} row {row}: {reason} (run.bad_rows = "fail"); fix the input or '
                "choose another run.bad_rows policy"
            )
        stats.bad_rows += 1
        stats.bad_reasons[reason.split(":")[0]] += 1
        if len(stats.bad_examples) < BAD_ROW_EXAMPLES:
            stats.bad_examples.append({"file": task.path, "row": row, "reason": reason})
        if stats.bad_rows <= BAD_ROWS_LOGGED:
            log.warning(
                "bad row: %s row %d: %s (policy %s)",
                task.path,
                row,
                reason,
                policy,
                extra={"event": "bad_row", "file": task.path, "row": row, "reason": reason},
            )

    def mark(self) -> tuple[int, int, int, int]:
        s = self.stats
        return s.rows_in, s.tokens, s.text_bytes, s.bad_rows

    def since(self, mark: tuple[int, int, int, int]) -> ShardStats:
        """What was added to the counts since ``mark``: a progress report."""
        s = self.stats
        return ShardStats(
            rows_in=s.rows_in - mark[0],
            tokens=s.tokens - mark[1],
            text_bytes=s.text_bytes - mark[2],
            bad_rows=s.bad_rows - mark[3],
        )


def _strings(column: pa.Array, what: str, bad: dict[int, str]) -> list[str | None]:
    """The values of a text column of any text type; a null, or a value that is not UTF-8
    (other writers do store such bytes in string columns), is None with its reason added to
    ``bad``."""
    column = text_arrays.plain_text(column)
    try:
        values = column.to_pylist()
    except UnicodeDecodeError:
        binary = pa.large_binary() if pa.types.is_large_string(column.type) else pa.binary()
        values = []
        for i, raw in enumerate(column.view(binary).to_pylist()):
            try:
                values.append(None if raw is None else raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                bad.setdefault(i, f"invalid UTF-8 in the {what}: {exc.reason} at byte {exc.start}")
                values.append(None)
    if column.null_count:
        for i, value in enumerate(values):
            if value is None:
                bad.setdefault(i, f"null {what}")
    return values


def texts_and_bad_rows(
    piece: pa.RecordBatch, settings: EncodeSettings, known: dict[int, str]
) -> tuple[list, list | None, dict]:
    """(texts, pairs or None, {index: reason} for null or undecodable texts and pairs, and the
    ``known`` bad rows)."""
    bad: dict[int, str] = dict(known)
    texts = _strings(piece.column(settings.text_column), "text", bad)
    pairs = None
    if settings.pair_column is not None:
        pairs = _strings(piece.column(settings.pair_column), "pair", bad)
    return texts, pairs, bad


def _row_bytes(piece: pa.RecordBatch, settings: EncodeSettings) -> list[int]:
    """Each row's text (and pair) bytes."""
    import pyarrow.compute as pc

    total = None
    for name in (settings.text_column, settings.pair_column):
        if name is not None:
            size = pc.fill_null(pc.binary_length(text_arrays.plain_text(piece.column(name))), 0)
            total = size if total is None else pc.add(total, size)
    return total.to_pylist() if total is not None else [0] * piece.num_rows


def _text_bytes(piece: pa.RecordBatch, settings: EncodeSettings) -> int:
    total = 0
    for name in (settings.text_column, settings.pair_column):
        if name is not None:
            total += text_arrays.text_bytes(piece.column(name))
    return total


def _encode_piece(
    piece: pa.RecordBatch,
    first_row: int,
    state: _ShardState,
    encoder: Encoder,
    counter: SpecialCounter,
    ids_counter: IdCounter,
    schema: pa.Schema,
    known_bad: dict[int, str],
) -> pa.RecordBatch:
    settings, stats = state.settings, state.stats
    texts, pairs, bad = texts_and_bad_rows(piece, settings, known_bad)
    n = len(texts)
    valid = [i for i in range(n) if i not in bad] if bad else range(n)
    valid_texts = [texts[i] for i in valid] if bad else texts
    valid_pairs = [pairs[i] for i in valid] if bad and pairs is not None else pairs
    del texts, pairs  # a long row's text is held once, by valid_texts
    # the ids of every row, one after another, become the output column's buffer as they are
    values = array(TYPECODES[settings.dtype])
    encoded, errors = encoder.encode_into(valid_texts, valid_pairs, values)
    if settings.eos_id is not None:
        values, encoded = _with_eos(values, encoded, settings.eos_id)
    counter.count(valid_texts, stats.special_tokens)
    if valid_pairs is not None:
        counter.count(valid_pairs, stats.special_tokens)
    del valid_texts, valid_pairs
    lengths: list[int | None]
    if bad:
        lengths = [None] * n
        for i, length in zip(valid, encoded):
            lengths[i] = length
    else:
        lengths = encoded
    for j, message in errors.items():
        bad[valid[j]] = f"encode error: {message}"
    for i in sorted(bad):
        state.bad_row(first_row + i, bad[i])
    text_bytes = _text_bytes(piece, settings)
    state.tokens.add_documents(lengths, text_bytes, state.task.rel, first_row)
    if settings.group_column:
        state.tokens.add_groups(
            piece.column(settings.group_column).to_pylist(), lengths, _row_bytes(piece, settings)
        )
    if bad and settings.bad_rows == "empty_ids":
        for i in bad:
            lengths[i] = 0
    ids_arr, counts = list_arrays(values, lengths, settings.dtype)
    ids_counter.count(values, state.tokens)
    columns = [piece.column(name) for name in state.task.keep] + [ids_arr, counts]
    if settings.provenance:  # where each row came from, for the provenance file
        rows = pa.Array.from_buffers(
            pa.int64(), n, [None, pa.py_buffer(array("q", range(first_row, first_row + n)))]
        )
        found = [piece.column(PART_LINE)] if PART_LINE in piece.schema.names else []
        if settings.id_column:
            found.append(piece.column(settings.id_column))
        columns[:0] = [rows, *found]
    out = pa.RecordBatch.from_arrays(columns, schema=schema)
    if bad and settings.bad_rows == "skip":
        out = out.filter(pa.array([i not in bad for i in range(n)], pa.bool_()))
    stats.rows_in += n
    stats.rows_out += out.num_rows
    stats.tokens += len(values)
    stats.text_bytes += text_bytes
    return out


def _with_eos(values: array, lengths: list[int | None], eos: int) -> tuple[array, list[int | None]]:
    """``values`` (rows of ``lengths`` ids, one after another) with ``eos`` after every
    non-empty row, and the new lengths; an empty row stays empty, a failed one (None) None."""
    out = array(values.typecode)
    at = 0
    for n in lengths:
        if n:
            out.extend(values[at : at + n])
            out.append(eos)
            at += n
    return out, [n + 1 if n else n for n in lengths]


def _batches(
    task: ShardTask, settings: EncodeSettings, source: Any
) -> Iterator[tuple[pa.RecordBatch, dict[int, str]]]:
    """The shard's rows in batches of at most ``task.batch_rows`` (see :func:`read_batches`)."""
    return read_batches(
        source,
        settings,
        task.row_groups,
        task.blocks,
        task.compression,
        task.keep,
        task.batch_rows,
        arrow=task.arrow,
        batches=task.batches,
    )


def read_batches(
    source: Any,
    settings: EncodeSettings,
    row_groups: tuple[int, int],
    blocks: tuple[Block, ...],
    compression: str | None,
    keep: tuple[str, ...],
    batch_rows: int,
    *,
    arrow: str = "",
    batches: tuple[Batch, ...] = (),
) -> Iterator[tuple[pa.RecordBatch, dict[int, str]]]:
    """The rows of an open input (row groups ``[first, end)`` of a Parquet file, the
    ``blocks`` of a JSON Lines file, or record batches ``[first, end)`` of an Arrow file in
    IPC format ``arrow``, ``batches`` as planned) in batches of at most ``batch_rows``, with
    the text (and pair) column and the ``keep`` columns; each batch with {row in the batch:
    why it is bad} for rows the reading already found bad (a broken JSON line)."""
    extra = [settings.id_column] if settings.provenance and settings.id_column else []
    if settings.group_column:
        extra.append(settings.group_column)
    if blocks:
        texts = [settings.text_column] + ([settings.pair_column] if settings.pair_column else [])
        fields = tuple(dict.fromkeys(texts + list(keep) + extra))
        lines = settings.provenance
        schema = pa.schema(
            [pa.field(name, pa.string()) for name in fields]
            + ([pa.field(PART_LINE, pa.int64())] if lines else [])
        )
        for block in blocks:
            if compression is None:
                stream: Any = io.BytesIO(block_bytes_of(source, block))
            else:
                source.seek(0)
                stream = open_stream(source, compression)
            yield from read_rows(
                stream, block.first_line, fields, len(texts), batch_rows, schema, lines
            )
        return
    wanted = set(keep) | {settings.text_column, settings.pair_column} | set(extra)
    if arrow:
        wanted.discard(None)
        for batch in arrow_ipc.read_batches(source, arrow, row_groups, batches, wanted, batch_rows):
            yield batch, {}
        return
    pf = text_arrays.open_parquet(source, buffer_size=1 << 20)
    columns = [n for n in pf.schema_arrow.names if n in wanted]
    first, end = row_groups
    for batch in pf.iter_batches(
        batch_size=batch_rows, row_groups=range(first, end), columns=columns, use_threads=False
    ):
        yield batch, {}


def _pieces(
    task: ShardTask, settings: EncodeSettings, source: Any
) -> Iterator[tuple[int, pa.RecordBatch, dict[int, str], bool]]:
    """The shard's batches cut at the output row-group boundaries: (row in the shard, batch,
    its known bad rows, whether an output row group ends with it)."""
    splits = iter(task.splits)
    next_split = next(splits, None)
    row = 0
    for batch, bad in _batches(task, settings, source):
        offset = 0
        while offset < batch.num_rows:
            if next_split is None:
                raise CorruptFileError(f"{task.path}: more rows than when it was planned")
            take = min(batch.num_rows - offset, next_split - row)
            ends = row + take == next_split
            known = {i - offset: r for i, r in bad.items() if offset <= i < offset + take}
            yield row, batch.slice(offset, take), known, ends
            row += take
            offset += take
            if ends:
                next_split = next(splits, None)
    if next_split is not None:
        raise CorruptFileError(f"{task.path}: fewer rows than when it was planned")


@dataclass
class ShardResult:
    stats: ShardStats
    row_groups_out: int  # row groups written
    digest: str = ""  # xxh3-128 of the file written, checked again before it is joined
    tokens: TokenStats | None = None


class _Target:
    """One tokenizer's writing of a shard: its task (where its part goes), its context (the
    tokenizer, its facts and settings) and what it has encoded."""

    def __init__(self, task: ShardTask, ctx: WorkerContext) -> None:
        assert ctx.tokenizer is not None and ctx.facts is not None, "a context without a tokenizer"
        self.task = task
        self.ctx = ctx
        self.encoder = Encoder(ctx.tokenizer, ctx.settings.add_special_tokens)
        self.counter = SpecialCounter(ctx.facts.special_contents)
        self.ids_counter = IdCounter(ctx.facts.unk_id, ctx.facts.byte_ids)
        self.state = _ShardState(task, ctx.settings)
        self.pending: list[pa.RecordBatch] = []
        self.schema = task.output.schema  # (without the metadata)

    def sink(self) -> AtomicParquet:
        task, settings = self.task, self.ctx.settings
        return self.ctx.sink(
            task.dest,
            task.tmp_dir,
            task.schema,
            settings.compression,
            task.key,
            record_file=task.record_file,
            no_statistics=(settings.text_column, settings.pair_column),
        )


def encode_shard(task: ShardTask, report: Report, ctx: WorkerContext) -> ShardResult:
    """Encode one shard and write it (atomically) to ``task.dest``; returns its counts. The
    shard's other tokenizers (``task.also``: several tokenizers in one pass) encode each batch
    read into their own parts, so the input is read and decoded once for all."""
    started = time.monotonic()
    settings = ctx.settings
    targets = [_Target(task, ctx)] + [_Target(t, ctx.companions[name]) for name, t in task.also]
    main = targets[0]
    state = main.state
    # The input is checked unchanged before the outputs are published (entered last).
    with contextlib.ExitStack() as stack:
        sinks = [stack.enter_context(t.sink()) for t in targets]
        source = stack.enter_context(UnchangedInput(task.path, task.stat, settings.storage))
        for row, piece, known_bad, ends_row_group in _pieces(task, settings, source):
            # read: what encoding it may take (by each tokenizer)
            ctx.beat(_text_bytes(piece, settings) * len(targets))
            for target in targets:
                mark = target.state.mark()
                target.pending.append(
                    _encode_piece(
                        piece,
                        task.first_row + row,
                        target.state,
                        target.encoder,
                        target.counter,
                        target.ids_counter,
                        target.schema,
                        known_bad,
                    )
                )
                if target is main:
                    report(state.since(mark))
            if ends_row_group:
                for target, sink in zip(targets, sinks):
                    sink.write(pa.Table.from_batches(target.pending, schema=target.schema))
                    target.pending = []
        for target, sink in zip(targets, sinks):
            found = target.state
            found.tokens.special_in_text.update(found.stats.special_tokens)
            sink.record = {"bad_rows": found.stats.bad_rows, "token_stats": found.tokens.to_json()}
        row_groups_out = sinks[0].row_groups
    sink = sinks[0]
    stats = state.stats
    if stats.bad_rows > BAD_ROWS_LOGGED:
        log.warning(
            "%s: %d more bad rows in rows %d-%d not logged one by one (policy %s)",
            task.path,
            stats.bad_rows - BAD_ROWS_LOGGED,
            task.first_row,
            task.first_row + stats.rows_in - 1,
            settings.bad_rows,
            extra={"event": "bad_rows", "file": task.path, "count": stats.bad_rows},
        )
    stats.seconds = time.monotonic() - started
    stats.peak_rss_mb = peak_rss_mb()
    return ShardResult(stats, row_groups_out, sink.digest, state.tokens)


# -- joining parts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AssembleTask:
    rel: str
    dest: str
    tmp_dir: str
    schema: pa.Schema
    compression: str
    # (file, first row group, end row group, xxh3-128 its bytes must have; "" for the
    # previous output, verified by its page checksums)
    sources: tuple[tuple[str, int, int, str], ...]
    tag: str
    format: str = DEFAULT_FORMAT
    pack_length: int | None = None  # cut the file's ids into rows of this many
    pack_keep_last: bool = True
    token_dtype: str = ""  # a trainer format's
    provenance: dict | None = None  # a trainer format's sidecar: the output's metadata doc
    previous: tuple[str, ...] = ()  # a trainer format's: the files of its set there now
    source: str = ""  # the input's path or URI
    docs: str = ""  # where its provenance file goes (output.provenance; "": none)
    id_field: pa.Field | None = None  # the input's id column, in the provenance file

    @property
    def label(self) -> str:
        return f"join {self.rel}"


@dataclass
class JoinResult:
    rows_out: int
    peak_rss_mb: float
    # file name -> xxh3-128 of each file written, as computed while writing it
    digests: dict[str, str] = field(default_factory=dict)


TaskResult = HashResult | ShardResult | JoinResult


def assemble_file(task: AssembleTask, report: Report, ctx: WorkerContext) -> JoinResult:
    """Write ``task.dest`` from row groups of parts and of the previous output, in order."""
    settings = ctx.settings
    if FORMATS[task.format].token_file or task.pack_length is not None:
        return _assemble_derived(task, ctx)
    with _joined(task, ctx, no_statistics=(settings.text_column, settings.pair_column)) as sink:
        for source, first, end, digest in task.sources:
            _check_part(source, digest, ctx)
            for _ in copy_row_groups(sink, source, first, end, ctx.settings.storage):
                ctx.beat()
        rows = sink.rows
    return JoinResult(rows, peak_rss_mb(), {os.path.basename(task.dest): sink.digest})


def _joined(task: AssembleTask, ctx: WorkerContext, **more: Any) -> AtomicParquet:
    """The Parquet file a join writes (see :meth:`WorkerContext.sink`)."""
    return ctx.sink(task.dest, task.tmp_dir, task.schema, task.compression, task.tag, **more)


def _check_part(source: str, digest: str, ctx: WorkerContext) -> None:
    got = file_xxh3(source, ctx.settings.storage) if digest else digest
    if got != digest:
        raise CorruptFileError(
            f"{source}: its content differs from what was written (content hash "
            f"{got[:12]}..., recorded {digest[:12]}...); it is not joined, and "
            "a re-run encodes its shard again"
        )


def _part_documents(task: AssembleTask, ctx: WorkerContext) -> Iterator[tuple[Any, tuple]]:
    """Each row's ids over the parts in order (:func:`_part_rows`)."""
    for source, first, end, digest in task.sources:
        yield from _part_rows(source, digest, first, end, bool(task.docs), ctx)


def _part_rows(
    source: str, digest: str, first: int, end: int | None, whence: bool, ctx: WorkerContext
) -> Iterator[tuple[Any, tuple]]:
    """Each row's ids (an Arrow array, or None for a null row) of row groups [first, end) of
    a part (None: to its last), its content hash checked first and every page's checksum
    verified, with where the row came from when ``whence`` (the output has a provenance file):
    (its row in the input, its line or None, its id column's value or None); else ()."""
    _check_part(source, digest, ctx)
    pf = pq.ParquetFile(
        stores.readable(source, ctx.settings.storage),
        page_checksum_verification=PAGE_CHECKSUMS,
    )
    names = pf.schema_arrow.names
    ids_name = names[-2]  # a derived output's parts end with the ids and counts
    before = names[: names.index(ids_name)] if whence else []  # (see tasks._part_schema)
    for i in range(first, pf.metadata.num_row_groups if end is None else end):
        table = pf.read_row_group(i, columns=[*before, ids_name], use_threads=False)
        ctx.beat()
        places: Iterator[tuple] = iter(())
        if before:
            row = table.column(0).to_pylist()
            line = table.column(PART_LINE).to_pylist() if PART_LINE in before else None
            named = ctx.settings.id_column
            ident = table.column(named).to_pylist() if named else None
            places = zip(row, line or repeat(None), ident or repeat(None))
        for chunk in table.column(ids_name).chunks:
            values = chunk.flatten()  # the non-null rows' ids, one after another
            at = 0
            for n in chunk.value_lengths().to_pylist():
                where = next(places, ())
                if n is None:
                    yield None, where
                else:
                    yield values.slice(at, n), where
                    at += n


def _assemble_derived(task: AssembleTask, ctx: WorkerContext) -> JoinResult:
    """A trainer-format file, or packed Parquet rows, from the file's parts in order."""
    documents = ((ids, where, 0) for ids, where in _part_documents(task, ctx) if ids is not None)
    if not FORMATS[task.format].token_file:
        return _write_parquet(task, ctx, documents, task.pack_keep_last)
    return _write_token_files(task, ctx, documents, task.pack_keep_last)


def _write_token_files(
    task: AssembleTask | UnitTask,
    ctx: WorkerContext,
    documents: Iterator[tuple[Any, tuple, int]],
    keep_last: bool,
) -> JoinResult:
    """Write a trainer format's file set (and its provenance file) from ``documents``
    ((ids, where from, where in its document the ids start))."""
    output_format = FORMATS[task.format]
    writer = output_format.writer(
        task.dest,
        task.tmp_dir,
        task.token_dtype,
        task.provenance,
        pack_length=task.pack_length,
        keep_last=keep_last,
        # to object storage: uploaded in the order renamed on disk, the primary file last
        publisher=stores.store_of(task.dest).set_publisher(ctx.settings.storage, ctx.upload_beat),
        previous=task.previous,  # those the new set lacks are removed
    )
    ctx.guard()
    keeps_empty = output_format.keeps_empty_documents
    with writer, _docs_writer(task, writer.tmp_dir, keep_last) as docs:
        for ids, where, start in documents:
            values = ids.to_numpy(zero_copy_only=False)
            writer.add_document(values)
            if docs is not None and (len(values) or keeps_empty):
                docs.add(len(values), *where, first=start)
        if docs is not None:
            writer.add_companion(docs.tmp, task.docs, docs.finish())
        ctx.guard()
    return JoinResult(writer.published_documents(), peak_rss_mb(), dict(writer.digests))


def _write_parquet(
    task: AssembleTask | UnitTask,
    ctx: WorkerContext,
    documents: Iterator[tuple[Any, tuple, int]],
    keep_last: bool,
) -> JoinResult:
    """Write Parquet rows of ``documents`` (packed if the task packs; see :func:`_write_rows`)
    and their provenance file, published together."""
    sink = ctx.sink(task.dest, task.tmp_dir, task.schema, task.compression, task.tag)
    with sink, _docs_writer(task, task.tmp_dir, keep_last) as docs:
        _write_rows(sink, documents, task.schema, ctx.settings.dtype, task.pack_length,
                    keep_last, docs)  # fmt: skip
        digests = {}
        if docs is not None:
            digests[os.path.basename(task.docs)] = docs.finish()
            sink.companions.append((docs.tmp, task.docs))
        # an earlier output's file this one has not (its provenance file): removed first
        stale = [p for p in task.previous if p not in (task.dest, task.docs)]
        sink.companions[:0] = [("", p) for p in stale]
    digests[os.path.basename(task.dest)] = sink.digest
    return JoinResult(sink.rows, peak_rss_mb(), digests)


@contextlib.contextmanager
def _docs_writer(
    task: AssembleTask | UnitTask, tmp_dir: str, keep_last: bool
) -> Iterator[DocsWriter | None]:
    """The writer of the output's provenance file (None if it has none), its temporary file
    removed if the output is not written; ``keep_last``: as the output's packing (a unit's
    file names each entry's source itself)."""
    if not task.docs:
        yield None
        return
    writer = DocsWriter(
        os.path.join(tmp_dir, f"{task.tag}.{os.getpid()}.docs.parquet.tmp"),
        task.source if isinstance(task, AssembleTask) else "",
        task.pack_length,
        keep_last,
        task.id_field,
    )
    try:
        yield writer
    except BaseException:
        writer.abort()
        raise


def _write_rows(
    sink: AtomicParquet,
    documents: Iterator[tuple[Any, tuple, int]],
    schema: pa.Schema,
    dtype: str,
    pack_length: int | None,
    keep_last: bool,
    docs: DocsWriter | None,
) -> None:
    """Write ``documents`` ((ids, where from, where in its document it starts)) as Parquet
    rows: packed into rows of ``pack_length`` ids with their pieces' lengths (and position
    ids, if the schema has them), or one row each; each document told to ``docs``."""
    from batchtok.formats.packing import Packer, Piece

    packer = Packer(pack_length or 1, keep_last=keep_last)
    positions = "position_ids" in schema.names
    rows: list[tuple[Any, list]] = []

    def flush() -> None:
        values = array(TYPECODES[dtype])
        for row, _ in rows:
            values.extend(row)
        ids_arr, counts = list_arrays(values, [len(r) for r, _ in rows], dtype)
        columns = [ids_arr, counts]
        if pack_length is not None:
            # each row's pieces: their lengths (summing to the row's) and, if asked, each
            # id's position in its piece
            lengths = array("i", (p.length for _, pieces in rows for p in pieces))
            columns.append(list_arrays(lengths, [len(pieces) for _, pieces in rows], "int32")[0])
            if positions:
                at = array("i")
                for _, pieces in rows:
                    for p in pieces:
                        at.extend(range(p.length))
                columns.append(list_arrays(at, [len(r) for r, _ in rows], "int32")[0])
        sink.write(pa.Table.from_arrays(columns, schema=schema))
        rows.clear()

    held = 0
    for ids, where, start in documents:
        values = ids.to_pylist()
        if pack_length is not None:
            rows += packer.add_pieces(values)
            held = len(rows) * pack_length
        else:
            rows.append((values, [Piece(0, 0, len(values), 0)]))
            held += len(values)
        if docs is not None:
            docs.add(len(values), *where, first=start)
        if held >= PACKED_ROW_GROUP_IDS:
            flush()
            held = 0
    if pack_length is not None:
        rows += packer.finish_pieces()
    if rows:
        flush()


# -- writing a unit's file ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Segment:
    """Documents [first, end) of a part (its rows with ids, in order; the empty ones left out
    where the format leaves them out)."""

    part: str
    digest: str
    key: str
    rel: str  # the input it is a shard of
    source: str  # that input's path or URI
    first: int
    end: int


@dataclass(frozen=True, slots=True)
class WindowSlice:
    """Positions [p0, p1) of a shuffle window of ``n`` documents (its segments, in the plan's
    order) after the window's permutation (``window``: its number; -1: no permutation)."""

    segments: tuple[Segment, ...]
    window: int
    n: int
    p0: int
    p1: int


@dataclass(frozen=True)
class UnitTask:
    """Write one file of a unit (:mod:`batchtok.runner.plan.units`)."""

    dest: str
    tmp_dir: str
    format: str
    schema: pa.Schema  # Parquet's, with its metadata
    compression: str
    token_dtype: str
    provenance: dict  # the file's metadata document
    slices: tuple[WindowSlice, ...]
    skip: int  # ids of its first document that an earlier file holds (packed rows)
    take: int | None  # ids it holds (packed rows; None: its documents whole)
    seed: int | None
    salt: int
    pack_length: int | None
    tag: str
    docs: str = ""
    id_field: pa.Field | None = None
    previous: tuple[str, ...] = ()
    rel: str = ""  # (for the progress display and failures: the file's name)

    @property
    def label(self) -> str:
        return f"write {self.rel}"


def assemble_unit(task: UnitTask, report: Report, ctx: WorkerContext) -> JoinResult:
    """Write a unit's file from its documents, read from the parts in the file's order (a
    dropped short last row is left out of ``take``: every row it holds is kept)."""
    keeps_empty = FORMATS[task.format].keeps_empty_documents
    with contextlib.ExitStack() as stack:
        documents = _cut(_unit_documents(task, ctx, keeps_empty, stack), task.skip, task.take)
        if FORMATS[task.format].token_file:
            return _write_token_files(task, ctx, documents, keep_last=True)
        return _write_parquet(task, ctx, documents, keep_last=True)


def _cut(
    documents: Iterator[tuple[Any, tuple]], skip: int, take: int | None
) -> Iterator[tuple[Any, tuple, int]]:
    """(ids, where from, first id's place in its document) of the file's documents: the first
    one's first ``skip`` ids left out (an earlier file holds them), ``take`` ids in all."""
    left = take
    start = skip
    for ids, where in documents:
        if left is not None and left <= 0:
            return
        piece = ids.slice(start) if start else ids
        if left is not None:
            piece = piece.slice(0, left)
            left -= len(piece)
        yield piece, where, start
        start = 0


def _unit_documents(
    task: UnitTask, ctx: WorkerContext, keeps_empty: bool, stack: contextlib.ExitStack
) -> Iterator[tuple[Any, tuple]]:
    """The file's documents, (ids, where from), in its order: each slice's positions of its
    window, permuted as the plan permuted them (the documents a shuffled slice takes are read
    in the plan's order, kept in a local file, and given in the permutation's order)."""
    import numpy as np  # (a run that cuts no stream imports no numpy)

    from batchtok.formats.layout import permutation

    for piece in task.slices:
        if piece.window < 0:
            for segment in piece.segments:
                yield from _segment_documents(segment, bool(task.docs), keeps_empty, ctx)
            continue
        assert task.seed is not None
        wanted = permutation(piece.n, task.seed, task.salt, piece.window)[piece.p0 : piece.p1]
        slot = np.full(piece.n, -1, dtype=np.int64)
        slot[wanted] = np.arange(len(wanted))
        spill = stack.enter_context(
            tempfile.TemporaryFile(dir=task.tmp_dir, prefix=f"{task.tag}.spill.")
        )
        places = np.zeros((len(wanted), 2), dtype=np.int64)  # (byte offset, ids)
        whence: list[tuple] = [()] * len(wanted)
        dtype = None
        k = 0
        for segment in piece.segments:
            for ids, where in _segment_documents(segment, bool(task.docs), keeps_empty, ctx):
                s = slot[k]
                k += 1
                if s < 0:
                    continue
                values = ids.to_numpy(zero_copy_only=False)
                dtype = values.dtype
                places[s] = (spill.tell(), len(values))
                spill.write(values.tobytes())
                whence[s] = where
        if k != piece.n:
            raise CorruptFileError(
                f"a shuffle window of {piece.n} documents read back as {k}: its parts changed"
            )
        for s in range(len(wanted)):
            offset, n = places[s]
            spill.seek(int(offset))
            data = spill.read(int(n) * (dtype.itemsize if dtype is not None else 4))
            values = np.frombuffer(data, dtype=dtype or np.int32)
            yield pa.array(values), whence[s]


def _segment_documents(
    segment: Segment, whence: bool, keeps_empty: bool, ctx: WorkerContext
) -> Iterator[tuple[Any, tuple]]:
    """Documents [first, end) of a part (its rows with ids; empty ones only if kept)."""
    k = 0
    for ids, where in _part_rows(segment.part, segment.digest, 0, None, whence, ctx):
        if ids is None or (not keeps_empty and len(ids) == 0):
            continue
        if k >= segment.end:
            return
        if k >= segment.first:
            yield ids, (*where, segment.source) if where else ()
        k += 1
    if k < segment.end:
        raise CorruptFileError(
            f"{segment.part}: {k} documents, where {segment.end} were planned from it"
        )


TASK_FUNCTIONS: dict[type, Callable[[Any, Report, WorkerContext], TaskResult]] = {
    HashTask: hash_file,
    ShardTask: encode_shard,
    AssembleTask: assemble_file,
    UnitTask: assemble_unit,
}


def run_task(task: Any, report: Report, ctx: WorkerContext) -> TaskResult:
    return TASK_FUNCTIONS[type(task)](task, report, ctx)
