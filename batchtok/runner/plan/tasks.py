"""What the parent sends the workers: task descriptions built from a file's cache state, and
the metadata document each output (or part) carries.

A task holds paths, row-group ranges and its file's output schema and metadata (one object
for all the file's tasks, :class:`~batchtok.runner.outputs.parquet.FileOutput`), never the
data.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..exec.worker import AssembleTask, ShardTask
from ..inputs.files import InputFile
from ..io.stores import OutPath, readable
from ..job import Job
from ..outputs.formats import FORMATS
from ..outputs.parquet import (
    METADATA_KEY,
    PART_LINE,
    PART_ROW,
    FileOutput,
    metadata_bytes,
    output_schema,
)
from .keys import hex128
from .prepare import Prepared
from .states import (
    FileState,
    batch_rows,
    output_set,
    output_splits,
    part_locations,
)


def file_doc(prep: Prepared, state: FileState, shards: list[dict]) -> dict:
    """The ``batchtok`` metadata of an output file: provenance, options, and its shards."""
    job, f = prep.job, state.file
    return {
        **prep.provenance,
        "input": {
            "file": f.rel,
            "content_xxh3_128": state.content_hash(),
            "text_column": job.text_column,
            "pair_column": job.pair_column,
            "rows": f.rows,
            "row_groups": len(f.row_groups),
        },
        "shards": shards,
    }


def _schema(job: Job, f: InputFile, doc: dict) -> pa.Schema:
    return _output_schema(job, f).with_metadata({METADATA_KEY: metadata_bytes(doc)})


def _output_schema(job: Job, f: InputFile) -> pa.Schema:
    keep = () if job.derived_output else f.keep
    return output_schema(f.schema, keep, job.ids_column, job.count_column, job.dtype)


def _part_schema(job: Job, f: InputFile) -> pa.Schema:
    """The schema of the files a file's shards are written to: the output's, and, for a
    provenance file, each row's place in the input and its id column before the ids."""
    schema = _output_schema(job, f)
    if not (job.derived_output and job.provenance):
        return schema
    fields = [pa.field(PART_ROW, pa.int64())]
    if f.jsonl:
        fields.append(pa.field(PART_LINE, pa.int64()))
    if job.id_column:
        fields.append(f.schema.field(job.id_column))
    return pa.schema(fields + list(schema))


def _joined_schema(job: Job, f: InputFile, doc: dict) -> pa.Schema:
    """The schema of a file joined from its parts: packed Parquet rows carry their pieces'
    lengths (and position ids) too."""
    schema = _schema(job, f, doc)
    if job.pack_length is None or FORMATS[job.format].token_file:
        return schema
    for name in job.packed_columns():
        schema = schema.append(pa.field(name, pa.list_(pa.int32())))
    return schema


def file_output(prep: Prepared, st: FileState) -> FileOutput:
    """The output schema and metadata document (but its shards) every task of ``st``'s file
    shares."""
    doc = file_doc(prep, st, [])
    del doc["shards"]  # each file written says its own (FileOutput.shard_schema)
    return FileOutput(_part_schema(prep.job, st.file), doc)


def shard_tasks(
    prep: Prepared,
    st: FileState,
    indices: Iterable[int],
    parts_dir: OutPath,
    tmp_dir: Path,
    parts: bool = False,
) -> list[ShardTask]:
    """The tasks that encode shards ``indices`` of one file (see :func:`shard_task`). What
    they have alike (the output's schema and metadata, the input's stat) is made once and
    shared: the parent holds each once, and a task stays small to send. ``parts``: into parts
    even for a file of one shard (another tokenizer's run writes them, its own joins them)."""
    job, f = prep.job, st.file
    output = file_output(prep, st)
    stat = f.stat_key()
    keep = () if job.derived_output else f.keep
    tmp = str(tmp_dir)
    # written straight to the output
    whole = len(st.shards) == 1 and not job.derived_output and not parts
    tasks = []
    for i in indices:
        shard, key = st.shards[i], st.keys[i]
        first, end = shard.row_groups
        if whole:
            dest, record_file = str(st.output), ""
        else:
            dest, record_file = part_locations(parts_dir, f.rel, key)
        tasks.append(
            ShardTask(
                shard_id=shard.id,
                rel=f.rel,
                path=f.path,
                row_groups=shard.row_groups,
                first_row=shard.first_row,
                splits=output_splits(f, shard, job.row_group_mb),
                batch_rows=batch_rows(f, shard, job.batch_mb),
                keep=keep,
                output=output,
                dest=dest,
                tmp_dir=tmp,
                key=key,
                text_bytes=shard.text_bytes,
                stat=stat,
                record_file=record_file,
                blocks=f.blocks[first:end],
                compression=f.compression,
                arrow=f.arrow,
                batches=f.batches[first:end],
            )
        )
    return tasks


def shard_task(
    prep: Prepared, st: FileState, i: int, parts_dir: OutPath, tmp_dir: Path
) -> ShardTask:
    """Encode shard ``i``: straight into the output if it is the file's only shard, else into
    a part file that waits to be joined. (A file's tasks are made together by
    :func:`shard_tasks`, which builds what they share once.)"""
    return shard_tasks(prep, st, [i], parts_dir, tmp_dir)[0]


def join_task(
    prep: Prepared, st: FileState, tmp_dir: Path, drop: tuple[str, ...] = ()
) -> AssembleTask:
    """Write a file's output from its parts and the still-valid row groups of its previous
    output, in shard order; ``drop``: files of the job's earlier output that this one has
    not (a provenance file no longer asked for), removed as it is published."""
    sources = []
    shards = []
    old_footer = None
    for shard, key in zip(st.shards, st.keys):
        if key in st.parts:
            part = st.parts[key]
            footer = pq.read_metadata(readable(part))
            sources.append((str(part), 0, footer.num_row_groups, st.part_digests[key]))
            rows = footer.num_rows
        else:
            first, end = st.reusable[key]
            if old_footer is None:
                old_footer = pq.read_metadata(readable(st.output))
            sources.append((str(st.output), first, end, ""))
            rows = sum(old_footer.row_group(i).num_rows for i in range(first, end))
        shards.append({"key": key, "row_groups": list(shard.row_groups), "rows_out": rows})
    doc = file_doc(prep, st, shards)
    job = prep.job
    return AssembleTask(
        rel=st.file.rel,
        dest=str(st.output),
        tmp_dir=str(tmp_dir),
        schema=_joined_schema(job, st.file, doc),
        compression=job.compression,
        sources=tuple(sources),
        tag="join-" + hex128("|".join(st.keys).encode()),
        format=job.format,
        pack_length=job.pack_length,
        pack_keep_last=job.pack_keep_last,
        token_dtype=FORMATS[job.format].token_dtype(
            max(prep.facts.vocab_size, prep.facts.max_id + 1)
        )
        or job.dtype,
        provenance=doc,
        previous=(*(str(p) for p in output_set(st)), *drop) if job.derived_output else (),
        source=st.file.path,
        docs=FORMATS[job.format].docs_file(st.output) if st.docs else "",
        id_field=st.file.schema.field(job.id_column) if st.docs and job.id_column else None,
    )
