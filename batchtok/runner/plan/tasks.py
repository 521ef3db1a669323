"""What the parent sends the workers: task descriptions built from a file's cache state, and
the metadata document each output (or part) carries.

A task holds paths, row-group ranges and the output schema, never the data.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from ..exec.encode import described_options
from ..exec.worker import AssembleTask, ShardTask
from ..inputs.files import InputFile
from ..io.stores import OutPath, readable
from ..job import Job
from ..outputs.formats import FORMATS
from ..outputs.parquet import METADATA_KEY, metadata_bytes, output_schema
from .keys import hex128
from .prepare import Prepared
from .states import FileState, batch_rows, output_splits, part_path, part_record_path


def file_doc(prep: Prepared, state: FileState, shards: list[dict]) -> dict:
    """The ``batchtok`` metadata of an output file: provenance, options, and its shards."""
    job, facts, f = prep.job, prep.facts, state.file
    return {
        "format": 1,
        "engine": "batchtok",
        "engine_version": prep.engine_version,
        "tokenizer": {
            "name": job.tokenizer_path.name,
            "sha256": facts.sha256,
            "xxh3_128": facts.xxh3,
        },
        "encode": described_options(job, facts),
        "output": job.output_format(),
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
    keep = () if job.derived_output else f.keep
    schema = output_schema(f.schema, keep, job.ids_column, job.count_column, job.dtype)
    return schema.with_metadata({METADATA_KEY: metadata_bytes(doc)})


def shard_task(
    prep: Prepared, st: FileState, i: int, parts_dir: OutPath, tmp_dir: Path
) -> ShardTask:
    """Encode shard ``i``: straight into the output if it is the file's only shard, else into
    a part file that waits to be joined."""
    job, f, shard = prep.job, st.file, st.shards[i]
    key = st.keys[i]
    record_file = ""
    if len(st.shards) == 1 and not job.derived_output:
        doc = file_doc(prep, st, [{"key": key, "row_groups": list(shard.row_groups)}])
        dest = st.output
    else:
        doc = file_doc(prep, st, [])
        doc.pop("shards")
        doc["part"] = {"key": key, "row_groups": list(shard.row_groups), "shard": shard.id}
        dest = part_path(parts_dir, f.rel, key)
        record_file = str(part_record_path(dest))
    return ShardTask(
        shard_id=shard.id,
        rel=f.rel,
        path=f.path,
        row_groups=shard.row_groups,
        first_row=shard.first_row,
        splits=output_splits(f, shard, job.row_group_mb),
        batch_rows=batch_rows(f, shard, job.batch_mb),
        keep=() if job.derived_output else f.keep,
        schema=_schema(job, f, doc),
        dest=str(dest),
        tmp_dir=str(tmp_dir),
        key=key,
        text_bytes=shard.text_bytes,
        stat=f.stat_key(),
        record_file=record_file,
        blocks=f.blocks[shard.row_groups[0] : shard.row_groups[1]],
        compression=f.compression,
        arrow=f.arrow,
        batches=f.batches[shard.row_groups[0] : shard.row_groups[1]],
    )


def join_task(prep: Prepared, st: FileState, tmp_dir: Path) -> AssembleTask:
    """Write a file's output from its parts and the still-valid row groups of its previous
    output, in shard order."""
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
        schema=_schema(job, st.file, doc),
        compression=job.compression,
        sources=tuple(sources),
        tag="join-" + hex128("|".join(st.keys).encode()),
        format=job.format,
        pack_length=job.pack_length,
        pack_keep_last=job.pack_keep_last,
        token_dtype=FORMATS[job.format].token_dtype(
            max(prep.facts.vocab_size, prep.facts.max_id + 1)
        ),
        provenance=doc,
    )
