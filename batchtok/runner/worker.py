"""What a worker does with one task: hash an input, encode a shard, or join a file's parts.

These are plain functions of a small task description (paths, row-group ranges, options) and a
``report`` callback for progress; the data is read here, never sent. Every executor calls the
same functions, so caching and resume behave the same whatever runs them.

The tokenizer is not in the task: :func:`prepare` puts it in this module before the worker
processes are forked, and each child uses the parent's loaded tables (copy-on-write), so a
tokenizer is loaded once per run, not once per worker or per task.
"""

from __future__ import annotations

import logging
import os
import resource
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

if TYPE_CHECKING:
    from batchtok import Tokenizer

from .cache import hash_row_groups
from .encode import Encoder, SpecialCounter, TokenizerFacts
from .output import AtomicParquet, copy_row_groups, ids_arrays

log = logging.getLogger("batchtok.runner.worker")

Report = Callable[..., None]
BAD_ROWS_LOGGED = 10  # per shard; the rest are counted
BAD_ROW_EXAMPLES = 20  # per shard, returned for the summary


@dataclass(frozen=True)
class EncodeSettings:
    text_column: str
    pair_column: str | None
    add_special_tokens: bool
    dtype: str
    compression: str
    bad_rows: str


class BadRowError(Exception):
    """A bad row under ``bad_rows = "fail"``."""


_STATE: dict[str, Any] = {}


def prepare(tok: Tokenizer | None, facts: TokenizerFacts | None, settings: EncodeSettings) -> None:
    """Set what encode tasks use; call in the parent before forking the workers."""
    _STATE.update(tokenizer=tok, facts=facts, settings=settings)


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


# -- hashing -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class HashTask:
    rel: str
    path: str
    text_columns: tuple[str, ...]  # the text column, and the pair column if any
    keep_leaves: tuple[int, ...]
    text_bytes: int  # estimate, for progress

    @property
    def label(self) -> str:
        return f"hash {self.rel}"


def hash_file(task: HashTask, report: Report) -> dict[str, Any]:
    hashes = hash_row_groups(task.path, task.text_columns, task.keep_leaves)
    report(hashed_bytes=task.text_bytes)
    return {"row_groups": [h.to_json() for h in hashes]}


# -- encoding ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ShardTask:
    shard_id: str
    rel: str
    path: str
    row_groups: tuple[int, int]  # [first, end) of the input file
    first_row: int  # index in the input file of the shard's first row
    splits: tuple[int, ...]  # rows from the shard start where each output row group ends
    batch_rows: int
    keep: tuple[str, ...]
    schema: pa.Schema  # of the output, with its metadata
    dest: str  # the output file (one-shard file) or the part file
    tmp_dir: str
    key: str
    text_bytes: int

    @property
    def label(self) -> str:
        return f"shard {self.shard_id}"


class _ShardState:
    def __init__(self, task: ShardTask, settings: EncodeSettings) -> None:
        self.task = task
        self.settings = settings
        self.rows_in = 0
        self.rows_out = 0
        self.tokens = 0
        self.text_bytes = 0
        self.bad = 0
        self.bad_reasons: Counter = Counter()
        self.examples: list[dict[str, Any]] = []
        self.specials: Counter = Counter()

    def bad_row(self, row: int, reason: str) -> None:
        task, policy = self.task, self.settings.bad_rows
        if policy == "fail":
            raise BadRowError(
                f'{task.path} row {row}: {reason} (run.bad_rows = "fail"); fix the input or '
                "choose another run.bad_rows policy"
            )
        self.bad += 1
        self.bad_reasons[reason.split(":")[0]] += 1
        if len(self.examples) < BAD_ROW_EXAMPLES:
            self.examples.append({"file": task.path, "row": row, "reason": reason})
        if self.bad <= BAD_ROWS_LOGGED:
            log.warning(
                "bad row: %s row %d: %s (policy %s)",
                task.path,
                row,
                reason,
                policy,
                extra={"event": "bad_row", "file": task.path, "row": row, "reason": reason},
            )


def _encode_piece(
    piece: pa.RecordBatch,
    first_row: int,
    state: _ShardState,
    encoder: Encoder,
    counter: SpecialCounter,
    schema: pa.Schema,
) -> pa.RecordBatch:
    settings = state.settings
    column = piece.column(settings.text_column)
    texts = column.to_pylist()
    n = len(texts)
    bad: dict[int, str] = {}
    if column.null_count:
        bad = {i: "null text" for i in range(n) if texts[i] is None}
    pair_column = pairs = None
    if settings.pair_column is not None:
        pair_column = piece.column(settings.pair_column)
        pairs = pair_column.to_pylist()
        if pair_column.null_count:
            for i in range(n):
                if pairs[i] is None:
                    bad.setdefault(i, "null pair")
    valid = [i for i in range(n) if i not in bad] if bad else range(n)
    valid_texts = [texts[i] for i in valid] if bad else texts
    valid_pairs = [pairs[i] for i in valid] if bad and pairs is not None else pairs
    encoded, errors = encoder.encode(valid_texts, valid_pairs)
    counter.count(valid_texts, state.specials)
    if valid_pairs is not None:
        counter.count(valid_pairs, state.specials)
    ids_list: list[list[int] | None]
    if bad:
        ids_list = [None] * n
        for i, ids in zip(valid, encoded):
            ids_list[i] = ids
    else:
        ids_list = encoded
    for j, message in errors.items():
        bad[valid[j]] = f"encode error: {message}"
    for i in sorted(bad):
        state.bad_row(first_row + i, bad[i])
    if bad and settings.bad_rows == "empty_ids":
        for i in bad:
            ids_list[i] = []
    keep_mask = None
    if bad and settings.bad_rows == "skip":
        keep_mask = pa.array([i not in bad for i in range(n)], pa.bool_())
    ids_arr, counts = ids_arrays(ids_list, settings.dtype)
    columns = [piece.column(name) for name in state.task.keep] + [ids_arr, counts]
    out = pa.RecordBatch.from_arrays(columns, schema=schema)
    if keep_mask is not None:
        out = out.filter(keep_mask)
    tokens = sum(len(ids) for ids in ids_list if ids)
    state.rows_in += n
    state.rows_out += out.num_rows
    state.tokens += tokens
    import pyarrow.compute as pc  # ~0.1 s to import: only when hashing

    text_bytes = pc.sum(pc.binary_length(column)).as_py() or 0
    if pair_column is not None:
        text_bytes += pc.sum(pc.binary_length(pair_column)).as_py() or 0
    state.text_bytes += text_bytes
    return out


def encode_shard(task: ShardTask, report: Report) -> dict[str, Any]:
    """Encode one shard and write it (atomically) to ``task.dest``; returns its counts."""
    started = time.monotonic()
    settings: EncodeSettings = _STATE["settings"]
    tok: Tokenizer = _STATE["tokenizer"]
    facts: TokenizerFacts = _STATE["facts"]
    encoder = Encoder(tok, settings.add_special_tokens)
    counter = SpecialCounter(facts.special_contents)
    state = _ShardState(task, settings)
    pf = pq.ParquetFile(task.path, buffer_size=1 << 20)
    names = pf.schema_arrow.names
    wanted = set(task.keep) | {settings.text_column, settings.pair_column}
    columns = [n for n in names if n in wanted]
    first, end = task.row_groups
    splits = iter(task.splits)
    next_split = next(splits, None)
    row = 0
    pending: list[pa.RecordBatch] = []
    plain_schema = task.schema.remove_metadata()
    with AtomicParquet(
        task.dest, task.tmp_dir, task.schema, settings.compression, task.key
    ) as sink:
        for batch in pf.iter_batches(
            batch_size=task.batch_rows,
            row_groups=range(first, end),
            columns=columns,
            use_threads=False,
        ):
            offset = 0
            while offset < batch.num_rows:
                if next_split is None:
                    raise ValueError(f"{task.path}: more rows than its footer says")
                take = min(batch.num_rows - offset, next_split - row)
                piece = batch.slice(offset, take)
                before = (state.rows_out, state.tokens, state.text_bytes, state.bad)
                pending.append(
                    _encode_piece(
                        piece, task.first_row + row, state, encoder, counter, plain_schema
                    )
                )
                report(
                    rows=take,
                    tokens=state.tokens - before[1],
                    text_bytes=state.text_bytes - before[2],
                    bad_rows=state.bad - before[3],
                )
                row += take
                offset += take
                if row == next_split:
                    sink.write(pa.Table.from_batches(pending, schema=plain_schema))
                    pending = []
                    next_split = next(splits, None)
        if pending:
            sink.write(pa.Table.from_batches(pending, schema=plain_schema))
        if next_split is not None:
            raise ValueError(f"{task.path}: fewer rows than its footer says")
        out_row_groups = sink.row_groups
    if state.bad > BAD_ROWS_LOGGED:
        log.warning(
            "%s: %d more bad rows in rows %d-%d not logged one by one (policy %s)",
            task.path,
            state.bad - BAD_ROWS_LOGGED,
            task.first_row,
            task.first_row + state.rows_in - 1,
            settings.bad_rows,
            extra={"event": "bad_rows", "file": task.path, "count": state.bad},
        )
    return {
        "rows_in": state.rows_in,
        "rows_out": state.rows_out,
        "tokens": state.tokens,
        "text_bytes": state.text_bytes,
        "bad_rows": state.bad,
        "bad_reasons": dict(state.bad_reasons),
        "bad_examples": state.examples,
        "special_tokens": dict(state.specials),
        "row_groups_out": out_row_groups,
        "seconds": time.monotonic() - started,
        "peak_rss_mb": peak_rss_mb(),
    }


# -- joining parts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class AssembleTask:
    rel: str
    dest: str
    tmp_dir: str
    schema: pa.Schema
    compression: str
    sources: tuple[tuple[str, int, int], ...]  # (file, first row group, end row group)
    tag: str

    @property
    def label(self) -> str:
        return f"join {self.rel}"


def assemble_file(task: AssembleTask, report: Report) -> dict[str, Any]:
    """Write ``task.dest`` from row groups of parts and of the previous output, in order."""
    with AtomicParquet(task.dest, task.tmp_dir, task.schema, task.compression, task.tag) as sink:
        for source, first, end in task.sources:
            for _ in copy_row_groups(sink, source, first, end):
                pass
        rows = sink.rows
    return {"rows_out": rows, "peak_rss_mb": peak_rss_mb()}


TASK_FUNCTIONS: dict[type, Callable[[Any, Report], dict[str, Any]]] = {
    HashTask: hash_file,
    ShardTask: encode_shard,
    AssembleTask: assemble_file,
}


def run_task(task: Any, report: Report) -> dict[str, Any]:
    return TASK_FUNCTIONS[type(task)](task, report)
