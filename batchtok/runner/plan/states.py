"""Planning: cut each input file into shards, and find which shards are already complete.

A **shard** is a range of whole row groups of one input file, holding about ``run.shard_mb``
MB of text (by the footer's uncompressed size of the text column). Shards are cut file by
file, in row-group order, greedily: a function of that file's footer and ``run.shard_mb``
only. The same inputs give the same shards whatever the worker count, and a new input file
does not move the shards of the others (their cache keys stay valid).

A row group is never split across shards, so a single row group larger than ``run.shard_mb``
makes a larger shard (``plan`` warns): rewrite such inputs with smaller row groups to bound
the work a crash can lose.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection
from dataclasses import dataclass, field, replace
from typing import Any

import pyarrow as pa

from ..exec.encode import TokenizerFacts, applied_options
from ..inputs.files import InputFile
from ..io.stores import OutPath, as_path, options_of, stat_of
from ..job import Job
from ..outputs.formats import DEFAULT_FORMAT, FORMATS
from ..outputs.parquet import full_read_ok, read_metadata, shard_row_groups
from ..report.token_stats import TokenStats
from .keys import RowGroupHash, content_hash, file_xxh3, fingerprint, hex128, shard_key
from .records import FileRecord, OutputRecord, Records, count_of, recorded_hashes

MB = 1_000_000
MAX_BATCH_ROWS = 65_536


@dataclass(frozen=True, slots=True)  # (slots: a run holds one for each shard)
class Shard:
    rel: str
    index: int
    row_groups: tuple[int, int]  # [first, end)
    first_row: int
    rows: int
    text_bytes: int  # footer estimate

    @property
    def id(self) -> str:
        return f"{self.rel}#{self.index}"


def make_shards(f: InputFile, shard_mb: float) -> list[Shard]:
    """The shards of one file; a file without row groups is one empty shard."""
    target = shard_mb * MB
    shards: list[Shard] = []
    start = first_row = rows = size = 0
    for i, rg in enumerate(f.row_groups):
        if i > start and size + rg.text_bytes > target:
            shards.append(Shard(f.rel, len(shards), (start, i), first_row, rows, size))
            start, first_row, rows, size = i, first_row + rows, 0, 0
        rows += rg.rows
        size += rg.text_bytes
    shards.append(Shard(f.rel, len(shards), (start, len(f.row_groups)), first_row, rows, size))
    return shards


def output_splits(f: InputFile, shard: Shard, row_group_mb: float) -> tuple[int, ...]:
    """Where the shard's output row groups end (rows from its start): one per input row group,
    cut in equal parts when a row group holds more than ``row_group_mb`` of text."""
    cap = row_group_mb * MB
    ends: list[int] = []
    at = 0
    for rg in f.row_groups[shard.row_groups[0] : shard.row_groups[1]]:
        if rg.rows == 0:
            continue
        pieces = min(rg.rows, max(1, math.ceil(rg.text_bytes / cap)))
        step = math.ceil(rg.rows / pieces)
        ends += [at + min(k, rg.rows) for k in range(step, rg.rows + step, step)]
        at += rg.rows
    return tuple(ends)


def batch_rows(f: InputFile, shard: Shard, batch_mb: float) -> int:
    """Rows read at a time so that a batch holds about ``batch_mb`` MB (all read columns)."""
    groups = f.row_groups[shard.row_groups[0] : shard.row_groups[1]]
    rows = sum(rg.rows for rg in groups)
    size = sum(rg.total_bytes for rg in groups)
    if not rows or not size:
        return 1024
    return max(1, min(MAX_BATCH_ROWS, int(batch_mb * MB * rows / size)))


def keep_schema(f: InputFile) -> pa.Schema:
    return pa.schema([f.schema.field(name) for name in f.keep])


def hash_spec(job: Job, f: InputFile) -> dict[str, Any]:
    """What the remembered row-group hashes of an input depend on besides its bytes."""
    spec: dict[str, Any] = {
        "text_column": job.text_column,
        "pair_column": job.pair_column,
        "keep_leaves": list(f.keep_leaves),
    }
    if f.jsonl:  # blocks, not the fields read, decide what is hashed
        spec["jsonl_blocks"] = [[b.offset, b.length] for b in f.blocks]
    return spec


def text_columns(job: Job) -> tuple[str, ...]:
    """The columns encoded: the text column, and the pair column if the job has one."""
    return (job.text_column,) if job.pair_column is None else (job.text_column, job.pair_column)


# -- cache state --------------------------------------------------------------------------------


@dataclass
class FileState:
    """One input file, its shards, and where each shard's output can come from."""

    file: InputFile
    shards: list[Shard]
    output: OutPath
    hashes: list[RowGroupHash] | None = None
    keys: list[str] = field(default_factory=list)
    fingerprint: str = ""
    reusable: dict[str, tuple[int, int]] = field(default_factory=dict)  # key -> output rgs
    parts: dict[str, OutPath] = field(default_factory=dict)  # key -> completed part file
    part_digests: dict[str, str] = field(default_factory=dict)  # key -> its recorded xxh3
    discarded: list[str] = field(default_factory=list)  # why parts found were not used
    # key -> bad rows its output holds (recorded when written: a re-run reports them too)
    bad_rows: dict[str, int] = field(default_factory=dict)
    token_stats: dict[str, TokenStats] = field(default_factory=dict)  # key -> its output's
    complete: bool = False  # the output is complete under these keys: nothing to do
    format: str = DEFAULT_FORMAT  # output.format
    derived: bool = False  # built from parts when complete (a trainer format, packed rows)
    docs: bool = False  # a provenance file beside the output (output.provenance)
    # a member of a unit (:mod:`.units`): its shards' parts are kept, the unit's files cut
    # from them; it has no output of its own, and is complete once every shard has its part
    unit: bool = False
    output_trusted: bool = False  # its stat matches the record (no need to re-verify)
    joining: bool = False  # its parts are being joined
    stats: dict[str, Any] = field(default_factory=dict)  # file name -> its stat when resolved
    note: str = ""  # why an existing output is not used

    @property
    def resolved(self) -> bool:
        return self.hashes is not None

    def status(self, i: int) -> str:
        """cached (in the output) / part (done, waiting to be joined) / to do / unknown."""
        if not self.resolved:
            return "unknown"
        key = self.keys[i]
        if self.complete or key in self.reusable:
            return "cached"
        if key in self.parts:
            return "part"
        return "to do"

    def todo(self) -> list[int]:
        return [i for i in range(len(self.shards)) if self.status(i) == "to do"]

    def cached_bad_rows(self) -> int:
        """Bad rows in the shards found complete (in the output or as parts)."""
        return sum(
            self.bad_rows.get(self.keys[i], 0)
            for i in range(len(self.shards))
            if self.status(i) in ("cached", "part")
        )

    def output_token_stats(self) -> tuple[TokenStats, int]:
        """The token statistics of this file's shards written (now or by earlier runs), and
        how many complete shards have none (written before batchtok kept them)."""
        total, missing = TokenStats(), 0
        for i, key in enumerate(self.keys):
            if key in self.token_stats:
                total.merge(self.token_stats[key])
            elif self.status(i) in ("cached", "part"):
                missing += 1
        return total, missing

    def content_hash(self) -> str:
        assert self.hashes is not None
        return content_hash(self.hashes)


def resolve(
    state: FileState,
    hashes: list[RowGroupHash],
    fingerprint_json: str,
    parts_dir: OutPath,
    record: FileRecord,
    verify: bool,
    parts: Collection[str] | None = None,
) -> None:
    """Compute the shards' keys and look for their outputs (existing output file, parts).
    ``parts``: the names in ``parts_dir`` (:func:`listed_parts`), so that only the parts
    there are looked at (None: each shard's is looked for)."""
    state.hashes = hashes
    state.fingerprint = fingerprint_json
    state.keys = [
        shard_key(fingerprint_json, hashes[s.row_groups[0] : s.row_groups[1]]) for s in state.shards
    ]
    out = state.output
    if state.unit:
        pass
    elif state.derived:
        _resolve_derived(state, verify, record.output)
    elif out.exists():
        try:
            doc, footer = read_metadata(out)
        except (OSError, pa.ArrowException, ValueError) as exc:
            state.note = f"existing output {out} is unreadable ({exc}); it will be rewritten"
        else:
            old_keys = [s.get("key") for s in doc.get("shards") or []]
            ranges = shard_row_groups(doc, footer)
            remembered = record.output
            if remembered is not None and remembered.keys != old_keys:
                remembered = None  # a record of another output: its stats say nothing
            state.stats = {out.name: stat_of(out)}
            trusted = (
                not verify and remembered is not None and remembered.stat == state.stats[out.name]
            )
            problem = None if trusted else full_read_ok(out)
            if problem is not None:
                state.note = f"existing output {out} is corrupt ({problem}); it will be rewritten"
            elif not ranges:
                state.note = f"existing output {out} has no usable shard index; rewriting it"
            else:
                state.output_trusted = True
                state.complete = old_keys == state.keys
                state.reusable = {k: r for k, r in ranges.items() if k in set(state.keys)}
                if remembered is not None:
                    state.bad_rows = remembered.bad_rows_of(state.reusable)
                    _load_token_stats(state, remembered.token_stats, state.reusable)
    # (a file of one shard has a part when another tokenizer's run of the job wrote it)
    if not state.complete:
        for i, key in enumerate(state.keys):
            if key in state.reusable:
                continue
            if parts is not None and part_name(state.file.rel, key) not in parts:
                continue  # no part (a part's record without it is no part either)
            part = part_path(parts_dir, state.file.rel, key)
            recorded = part_record(part)
            digest = recorded.get("xxh3_128")
            problem = part_problem(part, key, digest if isinstance(digest, str) else "", verify)
            if problem is None:
                state.parts[key] = part
                state.part_digests[key] = digest
                state.bad_rows[key] = count_of(recorded.get("bad_rows"))
                _load_token_stats(state, {key: recorded.get("token_stats")}, (key,))
            elif problem:
                state.discarded.append(
                    f"part {part.name} of shard {state.shards[i].id} {problem}; it is discarded "
                    "and the shard encoded again"
                )
    if state.unit:
        state.complete = all(key in state.parts for key in state.keys)


def output_set(state: FileState) -> list[OutPath]:
    """Every file of the state's output (a trainer format's set, the primary file last)."""
    if getattr(state, "unit", False):
        return []  # (a unit's files are its own: see .units)
    options = options_of(state.output)
    output_format = FORMATS[state.format]
    files = output_format.files(state.output)
    if state.docs and (docs := output_format.docs_file(state.output)) not in files:
        files.insert(-1, docs)  # (MDS's sidecar lists it already)
    return [as_path(p, options) for p in files]


def derived_source(state: FileState) -> tuple[list[Any], dict[str, str]] | None:
    """The shard keys a derived output (trainer format, packed rows) was built from, from its
    sidecar or metadata, and the content hashes its sidecar records (file name -> xxh3-128;
    none for packed Parquet, or a sidecar written before batchtok recorded them); None if it
    is missing or unreadable."""
    try:
        doc, hashes = FORMATS[state.format].provenance(state.output)
        keys = [s.get("key") for s in doc.get("shards") or []]
    except (OSError, pa.ArrowException, ValueError, AttributeError):
        return None
    return keys, recorded_hashes(hashes)


def derived_keys(state: FileState) -> list[str] | None:
    """The shard keys a derived output was built from (:func:`derived_source`)."""
    found = derived_source(state)
    return None if found is None else found[0]


def _resolve_derived(state: FileState, verify: bool, remembered: OutputRecord | None) -> None:
    """A derived output is complete when it was built from exactly these shards (its sidecar
    checks every file's size) and each of its files is as written (:func:`derived_change`);
    otherwise every shard without a part is encoded again."""
    if not state.output.exists():
        return
    found = derived_source(state)
    if found is None or found[0] != state.keys:
        state.note = (
            f"existing output {state.output} was built from other shards (or is unreadable); "
            "it will be rewritten"
        )
        return
    keys, sidecar_hashes = found
    if remembered is not None and remembered.keys != keys:
        remembered = None  # a record of another output: its stats say nothing
    hashes = {**sidecar_hashes, **(remembered.xxh3_128 if remembered is not None else {})}
    problem = derived_change(state, verify, remembered and remembered.files, hashes)
    problem = problem or FORMATS[state.format].outdated(state.output)
    if problem:
        state.note = f"existing output {state.output} {problem}; it will be rewritten"
        return
    state.complete = state.output_trusted = True
    if remembered is not None:  # what its shards held, recorded when it was written
        state.bad_rows = remembered.bad_rows_of(keys)
        _load_token_stats(state, remembered.token_stats, keys)


def derived_change(
    state: FileState, verify: bool, recorded: Any, hashes: dict[str, str]
) -> str | None:
    """Why a derived output is not the one batchtok wrote (None if it is), checked as a
    Parquet output is: each file whose stat differs from the one ``recorded`` when it was
    written (every file under ``--verify``, or without a record) must hash to the xxh3-128
    recorded then (``hashes``, by file name); a file without a recorded hash (written before
    batchtok recorded them) is read back whole instead, as ``--verify`` always does."""
    paths = output_set(state)
    state.stats = {p.name: stat_of(p) for p in paths}
    if verify or not isinstance(recorded, dict):
        changed = paths
    else:
        changed = [p for p in paths if recorded.get(p.name) != state.stats[p.name]]
    if not changed:
        return None
    if verify or any(p.name not in hashes for p in changed):
        problem = derived_problem(state)
        if problem:
            return f"is corrupt ({problem})"
    for p in changed:
        want = hashes.get(p.name)
        if not want:
            continue
        try:
            got = file_xxh3(p)
        except OSError as exc:
            return f"is unreadable ({exc})"
        if got != want:
            return (
                f"changed since it was written ({p.name} has content hash {got[:12]}..., "
                f"{want[:12]}... when it was written)"
            )
    return None


def derived_problem(state: FileState) -> str | None:
    """Why a derived output does not read back whole (None if it does); a trainer format's
    set in object storage is read where it is (its index streamed, its data file sized); its
    provenance file, if it has one, is read whole."""
    output_format = FORMATS[state.format]
    problem = output_format.read_back(state.output)
    if problem is None and state.docs:
        docs = as_path(output_format.docs_file(state.output), options_of(state.output))
        problem = full_read_ok(docs) if docs.exists() else f"{docs.name} is missing"
    return problem


def part_name(rel: str, key: str) -> str:
    """The name of the part of input ``rel``'s shard of key ``key``: named by the file and
    the key, so two input files with identical content never share (and delete) each other's
    parts."""
    name = rel.encode("utf-8", "surrogateescape")  # a file name's bytes, UTF-8 or not
    return f"{hex128(name)[:16]}-{key}.parquet"


def part_path(parts_dir: OutPath, rel: str, key: str) -> OutPath:
    """Where a shard of a multi-shard file waits to be joined (:func:`part_name`)."""
    return parts_dir / part_name(rel, key)


PART_RECORD = ".json"  # a part's record is named as the part with this added


def part_record_path(part: OutPath | str) -> OutPath:
    """Where a part's record is: its content hash and bad-row count, written (by the worker
    that wrote the part) before the part itself is renamed into place."""
    return as_path(f"{part}{PART_RECORD}", options_of(part))


def part_locations(parts_dir: OutPath, rel: str, key: str) -> tuple[str, str]:
    """(the part, its record) as a task names them: ``str()`` of :func:`part_path` and of
    :func:`part_record_path`, without making either path (a run names 100,000s)."""
    part = f"{parts_dir}/{part_name(rel, key)}"
    return part, f"{part}{PART_RECORD}"


def listed_parts(parts_dir: OutPath) -> frozenset[str]:
    """The names in the parts directory (none if it is absent), for :func:`resolve`: listed
    once, where looking for each shard's part and its record took two look-ups (three
    requests in object storage) whether it was there or not."""
    return frozenset(p.name for p in parts_dir.glob("*"))


def part_record(part: OutPath) -> dict[str, Any]:
    try:
        data = json.loads(part_record_path(part).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def remove_part(part: OutPath) -> None:
    for path in (part, part_record_path(part)):
        path.unlink(missing_ok=True)


def part_problem(part: OutPath, key: str, digest: str | None, verify: bool) -> str | None:
    """Why a part cannot be joined ("" if there is none), or None if it can: its bytes must
    hash to the digest recorded when it was written (so a bit flipped since never reaches an
    output), and its metadata must name its key."""
    if not part.exists():
        return ""
    if not digest:
        return "has no recorded content hash"
    try:
        if file_xxh3(part) != digest:
            return "is corrupt (its content hash differs from the one recorded when written)"
        doc, _ = read_metadata(part)
    except (OSError, pa.ArrowException, ValueError) as exc:
        return f"is unreadable ({exc})"
    if (doc.get("part") or {}).get("key") != key:
        return "belongs to another shard"
    problem = full_read_ok(part) if verify else None
    return None if problem is None else f"is corrupt ({problem})"


def _load_token_stats(state: FileState, stored: Any, keys: Any) -> None:
    if not isinstance(stored, dict):
        return
    for key in keys:
        found = TokenStats.from_json(stored.get(key))
        if found is not None:
            state.token_stats[key] = found


def file_fingerprint(job: Job, f: InputFile, engine_version: str, facts: TokenizerFacts) -> str:
    return fingerprint(
        engine_version=engine_version,
        tokenizer_xxh3=facts.xxh3,
        text_column=job.text_column,
        pair_column=job.pair_column,
        keep_schema=keep_schema(f),
        encode_options=applied_options(job, facts),
        output_format=job.output_format(),
    )


def output_path(job: Job, f: InputFile) -> OutPath:
    return as_path(FORMATS[job.format].primary(str(job.output_dir), f.rel), job.storage)


def record_output(
    records: Records,
    st: FileState,
    record: FileRecord | None = None,
    written: dict[str, str] | None = None,
) -> None:
    """Remember the stat of each file of a complete output and the shard keys it holds, so
    that the next run trusts it without reading it again while its stats are unchanged (and
    checks the content hashes, ``written`` by file name as the writer computed them, of a
    file whose stat changed); and the bad rows each shard holds, so that every later run (and
    ``batchtok status``) reports them. The files are listed as this job's (see
    :mod:`batchtok.runner.outputs.ownership`)."""
    record = replace(record) if record is not None else records.load(st.file.rel)
    previous = record.output
    if st.derived:
        found = derived_keys(st)
        if found is None:
            return
        keys = found
    else:
        try:
            doc, _ = read_metadata(st.output)
            keys = [s.get("key") for s in doc.get("shards") or []]
        except (OSError, pa.ArrowException, ValueError):
            return
    if written is None and previous is not None and previous.keys == keys:
        written = previous.xxh3_128  # verified against them: still theirs
    bad = {k: st.bad_rows[k] for k in keys if st.bad_rows.get(k)}
    tokens = {k: st.token_stats[k].to_json() for k in keys if k in st.token_stats}
    files = {p.name: stat_of(p) for p in output_set(st)}
    record.output = OutputRecord(files[st.output.name], files, keys, written or {}, bad, tokens)
    record.owned = sorted(set(owned_names(record, st)) | set(files))
    records.save(st.file.rel, record)


def output_moved(st: FileState, remembered: OutputRecord | None) -> bool:
    """Whether a trusted output's files have other stats (or more files) than its record
    says: the record is written again."""
    files = None if remembered is None else remembered.files
    return files is None or any(files.get(name) != stat for name, stat in st.stats.items())


def owned_names(record: FileRecord, st: FileState) -> list[str]:
    """The output files (names in the input's output directory) the job's record says this
    job wrote or began to write; a record of a run that did not list them proves the files
    of the output it describes."""
    if record.owned is not None:
        return record.owned
    if record.output is not None:
        return [p.name for p in output_set(st)]
    return []


def orphan_outputs(records: Records, output_dir: OutPath, inputs: set[str]) -> list[str]:
    """Outputs recorded by an earlier run whose input is not among ``inputs`` any more."""
    return sorted(
        rel for rel in records.all_rels() if rel not in inputs and (output_dir / rel).exists()
    )
