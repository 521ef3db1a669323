"""``batchtok audit``: a finished job's ids (or a tokenizer's ids on a text file) checked
against Hugging Face ``tokenizers`` on a reproducible random sample of rows.

The oracle is ``tokenizers`` (the ``batchtok[audit]`` extra), imported by :func:`import_oracle`
only, when an audit runs: batchtok never imports it otherwise. It loads the bytes of the job's
tokenizer file and encodes as the job did (:class:`Oracle`): special tokens added or not,
special-token strings in the text as specials or as text, the job's applied truncation (the
job's ``encode.max_length``, the file's, or none), pairs, never padding; ``output.append_eos``
is appended to every non-empty document as the runner does.

**The sample** (:func:`draw_sample`) is ``sample`` input rows in all, spread over every shard
of every file (each shard a stratum, its share proportional to its rows, at least one row each
while the sample is large enough), drawn by ``random.Random(seed)``: the same job, seed and
size give the same rows. The text comes from the inputs, read by the runner's own readers
(:func:`.exec.worker.read_batches`), numbered as the output numbers them.

**Finding a row's ids in the output** (see :class:`JobAudit`):

- Parquet keeping every row: output row *i* is input row *i*;
- Parquet with ``bad_rows = "skip"``, and Megatron / datatrove files (a bad row without ids is
  no document there): the document is the input row less the bad rows before it, found by
  reading the whole input (bad rows are those null or invalid in the input, or refused by the
  oracle); the count is checked against the output's rows or its index's documents, and when it
  differs every row is encoded by the oracle to find the rows it refuses. A trainer format's
  document offset and length come from its own index;
- packed rows (``output.pack_length``, any format): the offset in the token stream is the sum
  of the oracle's lengths (with the EOS) of every document before it, so every row up to the
  last one sampled is encoded; each sampled window is compared up to the first token of the
  next document, so a wrong length anywhere shows as a mismatch, never as a skip.

Nothing is written: outputs and inputs are only read, local or in object storage, through the
runner's own readers (:mod:`.io.stores` for outputs: ``readable`` for Parquet, ``files_for`` for a
trainer format's files; :func:`.inputs.files.open_source` for inputs).
"""

from __future__ import annotations

import bisect
import contextlib
import random
from array import array
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from batchtok.formats.files import FormatError

from . import exit_codes as codes
from .errors import OracleMissing, RunnerError
from .exec.encode import Encoder, TokenizerFacts, applied_truncation, described_options, eos_id
from .exec.worker import EncodeSettings, encode_settings, read_batches, texts_and_bad_rows
from .inputs.arrow_ipc import is_arrow, read_column
from .inputs.files import InputFile, open_source
from .inputs.jsonl import is_jsonl, jsonl_compression, open_stream, read_rows
from .io import stores
from .io.arrow_fs import StorageOptions
from .job import Job, display_path
from .job.settings import AUDIT_SAMPLE, AUDIT_SEED
from .outputs.formats import FORMATS
from .outputs.parquet import PAGE_CHECKSUMS, PART_ROW
from .plan.prepare import Prepared, plan_job, prepare, state_dir
from .plan.states import FileState, part_locations

EXTRA = "pip install 'batchtok[audit]'"
BATCH_ROWS = 2048  # input rows read (and encoded) at a time
MISMATCHES_KEPT = 100  # listed in the report; the rest are counted


def import_oracle() -> Any:
    """The ``tokenizers`` module, or :class:`OracleMissing` naming the extra to install."""
    try:
        import tokenizers  # the oracle: imported here only, when an audit runs
    except ImportError as exc:
        raise OracleMissing(
            f"batchtok audit needs Hugging Face tokenizers, which is not installed ({exc}); "
            f"install it with: {EXTRA}"
        ) from exc
    return tokenizers


FILE_TRUNCATION = "file"  # keep the truncation the tokenizer file carries, as the oracle reads it


class Oracle:
    """``tokenizers``' Tokenizer loaded from ``data`` (a tokenizer.json's bytes), set to encode
    as a job does: ``truncation`` is ``enable_truncation``'s arguments, None (off) or
    :data:`FILE_TRUNCATION`; padding is always off."""

    def __init__(
        self,
        data: bytes,
        add_special_tokens: bool,
        special_tokens_as_text: bool,
        truncation: dict[str, Any] | str | None = FILE_TRUNCATION,
    ) -> None:
        module = import_oracle()
        self.version: str = module.__version__
        try:
            self.tok = module.Tokenizer.from_str(data.decode("utf-8"))
        except Exception as exc:  # noqa: BLE001 - a file batchtok reads and the oracle does not
            raise RunnerError(
                f"tokenizers {self.version} cannot load the tokenizer: {exc}"
            ) from exc
        self.tok.no_padding()
        self.tok.encode_special_tokens = special_tokens_as_text
        if truncation is None:
            self.tok.no_truncation()
        elif truncation != FILE_TRUNCATION:
            assert isinstance(truncation, dict)
            self.tok.enable_truncation(
                truncation["max_length"],
                stride=truncation["stride"],
                strategy=truncation["strategy"],
                direction=truncation["direction"],
            )
        self.add = add_special_tokens

    @property
    def truncation(self) -> dict[str, Any] | None:
        return self.tok.truncation

    def encode(self, texts: Sequence[str], pairs: Sequence[str] | None = None) -> list:
        """Per input: its ids (a list), or why ``tokenizers`` refuses it (a str)."""
        inputs = list(texts) if pairs is None else list(zip(texts, pairs))
        if not inputs:
            return []
        # encode_batch_fast (tokenizers 0.20+) gives the same ids without computing offsets
        batch = getattr(self.tok, "encode_batch_fast", self.tok.encode_batch)
        try:
            return [e.ids for e in batch(inputs, add_special_tokens=self.add)]
        except Exception:  # noqa: BLE001 - find the inputs at fault, keep the others
            out: list = []
            for one in inputs:
                args = one if pairs is not None else (one,)
                try:
                    out.append(self.tok.encode(*args, add_special_tokens=self.add).ids)
                except Exception as exc:  # noqa: BLE001
                    out.append(f"{type(exc).__name__}: {exc}")
            return out

    def token(self, token_id: int | None) -> str | None:
        """The vocabulary string of ``token_id`` (None when there is none)."""
        if token_id is None or token_id < 0:
            return None
        return self.tok.id_to_token(token_id)


# -- the sample ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Stratum:
    """Rows ``[first_row, first_row + rows)`` of one file (a shard), sampled together."""

    name: str
    first_row: int
    rows: int


def draw_sample(strata: Sequence[Stratum], size: int, seed: int) -> dict[str, list[int]]:
    """``size`` rows (all, if there are fewer) over ``strata``, as {name: sorted rows}.

    Each stratum gets a share proportional to its rows (largest remainders) and at least one
    row while ``size`` allows; a sample smaller than the strata takes one row from as many as
    it can, one from every file first. The same strata, size and seed give the same rows.
    """
    rng = random.Random(seed)
    full = [s for s in strata if s.rows > 0]
    total = sum(s.rows for s in full)
    size = max(0, min(size, total))
    shares = [0] * len(full)
    if size >= len(full):
        # one row each, the rest by largest remainders of (rows - 1) * spare / room, in integers
        spare, room = size - len(full), max(1, total - len(full))
        quotas = [divmod(spare * (s.rows - 1), room) for s in full]
        shares = [1 + q for q, _ in quotas]
        order = sorted(range(len(full)), key=lambda i: (-quotas[i][1], i))
        left = size - sum(shares)
        for i in order:
            if left == 0:
                break
            if shares[i] < full[i].rows:
                shares[i] += 1
                left -= 1
    elif size:
        by_file: dict[str, list[int]] = {}
        for i, s in enumerate(full):
            by_file.setdefault(s.name, []).append(i)
        firsts = [rng.choice(indices) for indices in by_file.values()]
        chosen = rng.sample(firsts, size) if size < len(firsts) else firsts
        taken = set(chosen)
        rest = [i for i in range(len(full)) if i not in taken]
        chosen += rng.sample(rest, size - len(chosen))
        for i in chosen:
            shares[i] = 1
    out: dict[str, list[int]] = {}
    for s, k in zip(full, shares):
        if k:
            picked = rng.sample(range(s.rows), k)
            out.setdefault(s.name, []).extend(s.first_row + r for r in picked)
    return {name: sorted(rows) for name, rows in out.items()}


# -- the report ----------------------------------------------------------------------------------


@dataclass
class Mismatch:
    """One sampled row whose written ids differ from the oracle's."""

    file: str  # the output file
    row: int  # the input row (the document)
    where: str  # where its ids are in the output ("row 17", "packed row 3 position 9", ...)
    position: int | None  # first differing position in the document's ids (None: no ids)
    written: int | None  # the id written there (None: none)
    written_token: str | None
    expected: int | None  # tokenizers' id there (None: none)
    expected_token: str | None
    reason: str

    def describe(self) -> str:
        def side(token_id: int | None, token: str | None) -> str:
            if token_id is None:
                return "nothing"
            return f"{token_id} ({token!r})" if token is not None else f"{token_id} (no token)"

        at = "" if self.position is None else f" position {self.position}"
        where = "" if self.where == f"row {self.row}" else f" ({self.where})"
        return (
            f"{self.file} row {self.row}{where}{at}: {self.reason}; written "
            f"{side(self.written, self.written_token)}, tokenizers "
            f"{side(self.expected, self.expected_token)}"
        )


@dataclass
class FileAudit:
    """What was checked in one output file."""

    output: str
    input: str
    format: str
    located_by: str = ""
    rows_checked: int = 0
    rows_equal: int = 0
    bad_rows: int = 0  # sampled rows without ids in the input or for the oracle (and the output)
    rows: list[int] = field(default_factory=list)  # the input rows sampled

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass
class AuditReport:
    """The whole audit: per-file counts, every mismatch (the first :data:`MISMATCHES_KEPT`
    listed) and the problems found beside the ids (a missing or stale output, ...)."""

    tokenizers_version: str
    seed: int
    sample: int
    source: str  # the job file, or the tokenizer of a text-file audit
    files: list[FileAudit] = field(default_factory=list)
    mismatches: list[Mismatch] = field(default_factory=list)
    mismatch_count: int = 0
    problems: list[str] = field(default_factory=list)

    @property
    def rows_checked(self) -> int:
        return sum(f.rows_checked for f in self.files)

    @property
    def rows_equal(self) -> int:
        return sum(f.rows_equal for f in self.files)

    @property
    def ok(self) -> bool:
        return not self.problems and self.rows_equal == self.rows_checked

    @property
    def exit_code(self) -> int:
        return codes.EXIT_OK if self.ok else codes.EXIT_FAILURE

    def add(self, mismatch: Mismatch) -> None:
        self.mismatch_count += 1
        if len(self.mismatches) < MISMATCHES_KEPT:
            self.mismatches.append(mismatch)

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "source": self.source,
            "tokenizers_version": self.tokenizers_version,
            "seed": self.seed,
            "sample": self.sample,
            "rows_checked": self.rows_checked,
            "rows_equal": self.rows_equal,
            "files": [f.to_json() for f in self.files],
            "mismatch_count": self.mismatch_count,
            "mismatches": [m.__dict__ for m in self.mismatches],
            "problems": self.problems,
        }

    def lines(self) -> list[str]:
        """The report as ``batchtok audit`` prints it."""
        out = [
            f"audit of {self.source} against tokenizers {self.tokenizers_version} "
            f"(sample of {self.sample:,} rows asked, seed {self.seed})"
        ]
        for f in self.files:
            bad = f", {f.bad_rows} of them bad rows confirmed" if f.bad_rows else ""
            out.append(
                f"  {f.output}: {f.rows_checked:,} rows checked, {f.rows_equal:,} equal{bad}"
            )
            if f.located_by:
                out.append(f"    located by {f.located_by}")
        out += [f"mismatch: {m.describe()}" for m in self.mismatches]
        if self.mismatch_count > len(self.mismatches):
            out.append(f"... and {self.mismatch_count - len(self.mismatches)} more mismatches")
        out += [f"problem: {p}" for p in self.problems]
        verdict = "all equal" if self.ok else "NOT all equal"
        out.append(
            f"rows checked: {self.rows_checked:,}, rows equal: {self.rows_equal:,}: {verdict}"
        )
        return out


def compare(
    report: AuditReport,
    audit: FileAudit,
    oracle: Oracle,
    row: int,
    where: str,
    written: Sequence[int] | None,
    expected: Sequence[int] | None,
    reason: str = "",
    force: bool = False,
) -> bool:
    """Check one row: ``written`` against ``expected`` (None: no ids); a mismatch (also when
    ``force``: something beside the ids is wrong, ``reason`` says what) is added to the report
    naming the first differing position and the tokens on both sides."""
    audit.rows_checked += 1
    if written is not None:
        written = list(written)
    if expected is not None:
        expected = list(expected)
    if written == expected and not force:
        audit.rows_equal += 1
        audit.bad_rows += expected is None
        return True
    if written is None or expected is None:
        position = None
        why = reason or (
            "the output holds no ids for a row tokenizers encodes"
            if written is None
            else "the output holds ids for a row without any (null or invalid in the input, or "
            "refused by tokenizers)"
        )
        w = written[0] if written else None
        e = expected[0] if expected else None
    else:
        position = next(
            (i for i, (a, b) in enumerate(zip(written, expected)) if a != b),
            min(len(written), len(expected)),
        )
        if position == len(written) == len(expected):  # forced: the ids themselves agree
            position = None
        w = written[position] if position is not None and position < len(written) else None
        e = expected[position] if position is not None and position < len(expected) else None
        why = reason or (
            "ids differ"
            if w is not None and e is not None
            else f"{len(written)} ids written, tokenizers gives {len(expected)}"
        )
    report.add(
        Mismatch(audit.output, row, where, position, w, oracle.token(w), e, oracle.token(e), why)
    )
    return False


# -- reading the outputs -------------------------------------------------------------------------


class ParquetRows:
    """An output Parquet file's ids and counts by row number, read a row group at a time with
    page checksums verified (a page that fails is reported, then read without the check, so
    its ids are still compared)."""

    def __init__(
        self,
        path: str,
        ids_column: str,
        count_column: str,
        problems: list[str],
        options: StorageOptions | None = None,
    ):
        self.path = path
        self.options = options  # the job's [storage], for an output in object storage
        self.columns = [ids_column, count_column]
        self.problems = problems
        self.file = pq.ParquetFile(
            stores.readable(path, options), page_checksum_verification=PAGE_CHECKSUMS
        )
        meta = self.file.metadata
        self.starts = list(
            accumulate((meta.row_group(i).num_rows for i in range(meta.num_row_groups)), initial=0)
        )
        self.num_rows = meta.num_rows
        self.unreadable: set[int] = set()  # rows asked for in row groups that cannot be read
        self.last: tuple[int, pa.Table | None] | None = None  # packed windows come in order

    def _group(self, i: int) -> pa.Table | None:
        """Row group ``i``'s ids and counts (the last one read is kept); None (a problem
        said) if it cannot be read."""
        if self.last is None or self.last[0] != i:
            self.last = (i, self._read_group(i))
        return self.last[1]

    def _read_group(self, i: int) -> pa.Table | None:
        try:
            return self.file.read_row_group(i, columns=self.columns, use_threads=False)
        except (OSError, pa.ArrowException) as exc:
            problem = f"{self.path} row group {i} does not read back whole ({exc})"
        try:
            unchecked = pq.ParquetFile(
                stores.readable(self.path, self.options), page_checksum_verification=False
            )
            table = unchecked.read_row_group(i, columns=self.columns, use_threads=False)
        except (OSError, pa.ArrowException) as exc:
            self.problems.append(f"{problem}; nor without page checksums ({exc})")
            return None
        self.problems.append(f"{problem}; its ids are compared as read without page checksums")
        return table

    def rows(self, wanted: Sequence[int]) -> dict[int, tuple[list[int] | None, int | None]]:
        """{row: (its ids or None, its count or None)} for the rows ``wanted``."""
        out: dict[int, tuple[list[int] | None, int | None]] = {}
        groups: dict[int, list[int]] = {}
        for row in wanted:
            if 0 <= row < self.num_rows:
                groups.setdefault(_group_of(self.starts, row), []).append(row)
        for i, rows in sorted(groups.items()):
            table = self._group(i)
            if table is None:
                self.unreadable.update(rows)
                continue
            ids, counts = table.column(0), table.column(1)
            for row in rows:
                at = row - self.starts[i]
                out[row] = (ids[at].as_py(), counts[at].as_py())
        return out


def _group_of(starts: Sequence[int], row: int) -> int:
    """The index of the range of ``starts`` (cumulative, from 0) that holds ``row``."""
    lo, hi = 0, len(starts) - 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if starts[mid] <= row:
            lo = mid
        else:
            hi = mid - 1
    return lo


class PackedRows:
    """Packed Parquet rows read as one token stream (rows of ``length`` ids, the last one
    shorter); a row of another length before the last is a problem, reported. ``length``
    None: rows of any length (one document each), read as one stream too."""

    def __init__(self, rows: ParquetRows, length: int | None, problems: list[str]) -> None:
        self.rows = rows
        self.length = length
        self.problems = problems
        counts = pq.read_table(stores.readable(rows.path, rows.options), columns=[rows.columns[1]])
        counts = counts.column(0).to_pylist()
        self.row_starts = list(accumulate((n or 0 for n in counts), initial=0))
        wrong = [] if length is None else [i for i, n in enumerate(counts[:-1]) if n != length]
        if wrong:
            problems.append(
                f"{rows.path}: packed row {wrong[0]} holds {counts[wrong[0]]} ids, not "
                f"{length} ({len(wrong)} such rows before the last)"
            )
        self.total = sum(n or 0 for n in counts)
        self.bounds = self._piece_bounds(counts)

    def _piece_bounds(self, counts: list[int | None]) -> array | None:
        """Every place in the token stream where a document piece starts or ends, from the
        rows' ``seq_lens`` (sorted; None for rows written without them); a row whose pieces do
        not sum to its length is a problem, reported."""
        if "seq_lens" not in self.rows.file.schema_arrow.names:  # (the footer read already)
            return None
        table = pq.read_table(
            stores.readable(self.rows.path, self.rows.options), columns=["seq_lens"]
        )
        bounds = array("q", [0])
        at = 0
        for i, (lengths, count) in enumerate(zip(table.column(0).to_pylist(), counts)):
            if sum(lengths or ()) != (count or 0):
                self.problems.append(
                    f"{self.rows.path}: packed row {i}'s seq_lens sum to {sum(lengths or ())}, "
                    f"not its {count or 0} ids"
                )
                return None
            for n in lengths or ():
                at += n
                bounds.append(at)
        return bounds

    def cuts_inside(self, start: int, end: int) -> list[int]:
        """The piece bounds strictly between ``start`` and ``end`` that are not a row's end
        (a document is cut only where a row ends); [] if the rows have no seq_lens."""
        if self.bounds is None:
            return []
        first = bisect.bisect_right(self.bounds, start)
        last = bisect.bisect_left(self.bounds, end)
        return [b for b in self.bounds[first:last] if b % self.length]

    def bounded(self, offset: int) -> bool:
        """Whether a piece starts or ends at ``offset`` (True if the rows have no seq_lens)."""
        if self.bounds is None:
            return True
        i = bisect.bisect_left(self.bounds, offset)
        return i < len(self.bounds) and self.bounds[i] == offset

    def _row(self, offset: int) -> int:
        return bisect.bisect_right(self.row_starts, offset) - 1

    def read(self, start: int, length: int) -> list[int]:
        if length <= 0 or start >= self.total:
            return []
        first, last = self._row(start), self._row(min(start + length, self.total) - 1)
        got = self.rows.rows(range(first, last + 1))
        stream: list[int] = []
        for r in range(first, last + 1):
            stream += got.get(r, (None, None))[0] or []
        skip = start - self.row_starts[first]
        return stream[skip : skip + length]

    def where(self, offset: int) -> str:
        row = self._row(offset)
        kind = "row" if self.length is None else "packed row"
        return f"{kind} {row} position {offset - self.row_starts[row]}"


class _UnitStream:
    """A unit's files read as one stream of ids (in the unit's order), and where each
    document of its parts is in it (see :mod:`.plan.units`)."""

    def __init__(self, audit: JobAudit, unit: Any, files: list[Any], parts: list[Any]) -> None:
        import numpy as np

        from batchtok.formats import layout

        job = audit.job
        self.audit = audit
        self.files = files
        self.index = {p.path: i for i, p in enumerate(parts)}
        counts = [len(p.lengths) for p in parts]
        self.starts = list(accumulate(counts, initial=0))
        lengths = np.concatenate([p.lengths for p in parts]) if parts else np.zeros(0, np.int64)
        order, _ = layout.shuffle_order(lengths, job.shuffle_seed, job.shuffle_window, unit.salt)
        self.position = np.empty(len(order), dtype=np.int64)
        self.position[order] = np.arange(len(order))
        self.offsets = np.concatenate(([0], np.cumsum(lengths[order], dtype=np.int64)))
        self.lengths = lengths
        self.kept = files[-1].tokens[1] if files else 0
        self.readers: dict[int, Any] = {}
        self.parts_dir = state_dir(job) / "parts"

    def part_path(self, st: FileState, shard: int) -> str:
        return part_locations(self.parts_dir, st.file.rel, st.keys[shard])[0]

    def place(self, part: str, document: int) -> tuple[int, int]:
        """(first id in the stream, ids) of a part's document."""
        g = self.starts[self.index[part]] + document
        return int(self.offsets[self.position[g]]), int(self.lengths[g])

    def where(self, offset: int) -> str:
        for uf in self.files:
            if uf.tokens[0] <= offset < max(uf.tokens[1], uf.tokens[0] + 1):
                return f"{display_path(uf.output)} id {offset - uf.tokens[0]}"
        return f"id {offset} of the stream"

    def read(self, start: int, length: int) -> list[int]:
        got: list[int] = []
        for i, uf in enumerate(self.files):
            lo, hi = max(start, uf.tokens[0]), min(start + length, uf.tokens[1])
            if lo < hi:
                got += self._reader(i).read(lo - uf.tokens[0], hi - lo)
        return got

    def _reader(self, i: int) -> Any:
        if i not in self.readers:
            job, uf = self.audit.job, self.files[i]
            output_format = self.audit.output_format
            path = stores.as_path(str(uf.output), job.storage)
            if output_format.token_file:
                info, _ = output_format.document_lengths(path)
                reader: Any = output_format.token_stream(path, info.dtype)
                self.audit.open_files.enter_context(contextlib.closing(reader))
            else:
                rows = ParquetRows(
                    str(uf.output),
                    job.ids_column,
                    job.count_column,
                    self.audit.report.problems,
                    job.storage,
                )
                reader = PackedRows(rows, job.pack_length, self.audit.report.problems)
            self.readers[i] = reader
        return self.readers[i]


# -- reading the inputs --------------------------------------------------------------------------


def input_rows(
    job: Job, f: InputFile, settings: EncodeSettings, groups: Sequence[int] | None = None
) -> Iterator[tuple[int, str | None, str | None, str]]:
    """(row, text, pair, why it is bad or "") for the rows of row groups ``groups`` of an input
    (blocks of a JSON Lines file; None: every one), in order, read by the runner's readers."""
    starts = list(accumulate((rg.rows for rg in f.row_groups), initial=0))
    spans = (
        [(0, len(f.row_groups))] if groups is None else [(g, g + 1) for g in sorted(set(groups))]
    )
    with open_source(f.path, job.storage) as (raw, _):
        for first, end in spans:
            row = starts[first]
            blocks = f.blocks[first:end] if f.jsonl else ()
            for batch, known in read_batches(
                raw,
                settings,
                (first, end),
                blocks,
                f.compression,
                (),
                BATCH_ROWS,
                arrow=f.arrow,
                batches=f.batches[first:end],
            ):
                texts, pairs, bad = texts_and_bad_rows(batch, settings, known)
                for i, text in enumerate(texts):
                    pair = pairs[i] if pairs is not None else None
                    yield row + i, text, pair, bad.get(i, "")
                row += len(texts)


def sampled_rows(
    job: Job, f: InputFile, settings: EncodeSettings, rows: Sequence[int]
) -> list[tuple[int, str | None, str | None, str]]:
    """(row, text, pair, why it is bad or "") of the ``rows`` of an input, in order, read by
    the runner's readers from the row groups (blocks, batches) that hold them only."""
    starts = list(accumulate((rg.rows for rg in f.row_groups), initial=0))
    wanted = set(rows)
    groups = sorted({_group_of(starts, r) for r in wanted})
    return [r for r in input_rows(job, f, settings, groups) if r[0] in wanted]


def _encoded(oracle: Oracle, rows: list[tuple[int, str | None, str | None, str]], pairs: bool):
    """{row: ids, or why there are none} for input rows (row, text, pair, bad reason)."""
    valid = [r for r in rows if not r[3]]
    results = oracle.encode([r[1] for r in valid], [r[2] for r in valid] if pairs else None)
    out: dict[int, list[int] | str] = {r[0]: r[3] for r in rows if r[3]}
    out.update((r[0], result) for r, result in zip(valid, results))
    return out


def _batched(rows: Iterator, size: int) -> Iterator[list]:
    batch: list = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


# -- auditing a job ------------------------------------------------------------------------------


class JobAudit:
    """The audit of a prepared job's outputs; :meth:`run` fills the report."""

    def __init__(self, prep: Prepared, report: AuditReport, oracle: Oracle) -> None:
        self.prep = prep
        self.job = prep.job
        self.output_format = FORMATS[self.job.format]
        self.drops_empty = not self.output_format.keeps_empty_documents
        self.facts: TokenizerFacts = prep.facts
        self.report = report
        self.oracle = oracle
        self.settings = encode_settings(self.job, self.facts)
        self.eos = eos_id(self.job, self.facts)
        self.open_files = contextlib.ExitStack()

    def expected(self, result: list[int] | str) -> list[int] | None:
        """The ids the runner writes for an oracle result (None: a bad row's)."""
        if isinstance(result, str):
            return None if self.job.bad_rows != "empty_ids" else []
        if self.eos is not None and result:
            return [*result, self.eos]
        return list(result)

    def run(self, sample: dict[str, list[int]]) -> None:
        if self.job.units:
            self.run_units(sample)
            return
        for f in self.prep.files:
            st = self.prep.states[f.rel]
            out = str(st.output)
            audit = FileAudit(display_path(st.output), display_path(f.path), self.job.format)
            self.report.files.append(audit)
            if not st.output.exists():
                self.report.problems.append(f"{audit.output} does not exist: run the job first")
                continue
            self.check_provenance(out)
            rows = audit.rows = sample.get(f.rel, [])
            try:
                with contextlib.ExitStack() as self.open_files:  # the data files read
                    self.check_file(f, audit, rows)
            except (OSError, pa.ArrowException, FormatError) as exc:
                self.report.problems.append(
                    f"{audit.output} (or its input {audit.input}) cannot be read: {exc}"
                )
            if self.job.provenance:
                self.check_docs(f, out, rows)

    def sampled(self, f: InputFile, rows: list[int]) -> dict[int, list[int] | str]:
        """{row: the oracle's ids, or why it has none} for the sampled ``rows`` of ``f``,
        read by the runner's readers (only their row groups)."""
        picked = sampled_rows(self.job, f, self.settings, rows)
        return _encoded(self.oracle, picked, self.job.pair_column is not None)

    def run_units(self, sample: dict[str, list[int]]) -> None:
        """Files cut from streams of documents (:mod:`.plan.units`): each sampled row's
        document is found by the plan the run wrote them by (its shard's part, the row's
        place among the part's documents, the shuffled order and the cuts), and read from the
        unit's files as one stream of ids."""
        from .plan.unit_writer import UnitWriter

        job, problems = self.job, self.report.problems
        todo = [st.file.rel for st in self.prep.states.values() if not st.complete]
        if todo:
            problems.append(
                f"{len(todo)} inputs (e.g. {todo[0]}) have shards not encoded under the job as "
                "it is now: run the job first"
            )
            return
        sdir = state_dir(job)
        writer = UnitWriter(job, sdir, sdir / "parts", Path(sdir / "tmp"), verify=False)
        writer.prep = self.prep
        try:
            plans = writer.plan(self.prep)
        except (OSError, pa.ArrowException) as exc:
            problems.append(f"the parts the outputs were cut from cannot be read: {exc}")
            return
        todo_files, _ = writer.stale()
        for _, uf in todo_files:
            problems.append(f"{display_path(uf.output)} is not written as the job plans it: run "
                            "the job first")  # fmt: skip
        for (unit, files), parts in zip(plans, writer.parts):
            with contextlib.ExitStack() as self.open_files:
                stream = _UnitStream(self, unit, files, parts)
                for uf in files:
                    self.check_provenance(str(uf.output))
                for st in unit.members:
                    rows = sample.get(st.file.rel, [])
                    shown = display_path(files[0].output) + (
                        f" (and {len(files) - 1} more)" if len(files) > 1 else ""
                    )
                    audit = FileAudit(shown, display_path(st.file.path), job.format, rows=rows)
                    audit.located_by = (
                        "the plan the files were cut by: the row's document among its shard's "
                        "(the rows with ids), its place in the shuffled order and the cuts, "
                        "read from the files as one stream of ids"
                    )
                    self.report.files.append(audit)
                    try:
                        self._check_unit_rows(st, audit, rows, stream)
                    except (OSError, pa.ArrowException, FormatError) as exc:
                        problems.append(f"{shown} (or {audit.input}) cannot be read: {exc}")

    def _check_unit_rows(
        self, st: FileState, audit: FileAudit, rows: list[int], stream: _UnitStream
    ) -> None:
        f = st.file
        results = self.sampled(f, rows)
        by_shard: dict[int, list[int]] = {}
        for row in rows:
            shard = next(i for i, s in enumerate(st.shards) if s.first_row + s.rows > row)
            by_shard.setdefault(shard, []).append(row)
        for i, shard_rows in sorted(by_shard.items()):
            shard = st.shards[i]
            part = str(stream.part_path(st, i))
            documents = self._shard_documents(f, shard, part)
            for row in shard_rows:
                expected = self.expected(results[row])
                document = documents.get(row)
                if document is None:  # no document: a bad row, or an empty one left out
                    compare(self.report, audit, self.oracle, row, "no document", expected if (
                        expected is None or (not expected and self.drops_empty)) else None,
                        expected)  # fmt: skip
                    continue
                start, length = stream.place(part, document)
                end = min(start + length, stream.kept)
                want = (expected or [])[: max(0, end - start)]
                got = stream.read(start, end - start)
                compare(self.report, audit, self.oracle, row, stream.where(start), got, want)

    def _shard_documents(self, f: InputFile, shard: Any, part: str) -> dict[int, int]:
        """{input row: its document's number among the part's documents} for a shard: from
        the part's own row column (a provenance file's), else one part row a shard row (every
        policy but "skip"), else the shard's rows read and encoded to find those left out."""
        table = pq.read_table(stores.readable(part, self.job.storage))
        names = table.column_names
        counts = table.column(names[-1]).to_pylist()
        if PART_ROW in names:
            rows = table.column(PART_ROW).to_pylist()
        elif self.job.bad_rows != "skip":
            rows = list(range(shard.first_row, shard.first_row + len(counts)))
        else:
            groups = range(shard.row_groups[0], shard.row_groups[1])
            rows = []
            for batch in _batched(input_rows(self.job, f, self.settings, groups), BATCH_ROWS):
                results = _encoded(self.oracle, batch, self.job.pair_column is not None)
                rows += [r[0] for r in batch if self.expected(results[r[0]]) is not None]
            if len(rows) != len(counts):
                self.report.problems.append(
                    f"{part}: {len(counts)} rows, its shard's rows with ids are {len(rows)}"
                )
        found = {}
        document = 0
        for row, count in zip(rows, counts):
            if count is None or (count == 0 and self.drops_empty):
                continue
            found[row] = document
            document += 1
        return found

    def check_file(self, f: InputFile, audit: FileAudit, rows: list[int]) -> None:
        """Compare the sampled ``rows`` of input ``f`` with its output, found as the job's
        format and options place them."""
        if self.job.pack_length is not None:
            self.packed(f, audit, rows)
        elif not self.output_format.token_file and self.job.bad_rows != "skip":
            self.direct(f, audit, rows)
        else:
            self.by_document(f, audit, rows)

    def check_provenance(self, out: str) -> None:
        """The output's recorded tokenizer and options are the job's (else its ids are another
        job's: a problem, and the mismatches say where)."""
        try:
            doc, _ = self.output_format.provenance(stores.as_path(out, self.job.storage))
        except (OSError, pa.ArrowException, ValueError, KeyError) as exc:
            self.report.problems.append(f"{out}: its provenance cannot be read ({exc})")
            return
        wanted = {
            "tokenizer.sha256": self.facts.sha256,
            **{f"encode.{k}": v for k, v in described_options(self.job, self.facts).items()},
            **{f"output.{k}": v for k, v in self.job.output_format().items()},
        }
        written = {
            "tokenizer.sha256": (doc.get("tokenizer") or {}).get("sha256"),
            **{f"encode.{k}": v for k, v in (doc.get("encode") or {}).items()},
            **{f"output.{k}": v for k, v in (doc.get("output") or {}).items()},
        }
        differ = [
            f"{key} {written.get(key)!r} (the job: {value!r})"
            for key, value in wanted.items()
            if written.get(key) != value
        ]
        if differ:
            self.report.problems.append(
                f"{display_path(out)} was written with {', '.join(differ)}: run the job "
                "again, or audit with the options it was run with"
            )

    def check_docs(self, f: InputFile, out: str, rows: list[int]) -> None:
        """The output's provenance file: its entries name this input, follow one another
        through the output's ids without a gap and sum to them; and each sampled row's
        entries, read where they say, are its oracle ids in order (a row is checked as one)."""
        docs = self.output_format.docs_file(out)
        audit = FileAudit(display_path(docs), display_path(f.path), "provenance")
        self.report.files.append(audit)
        audit.rows = rows
        audit.located_by = (
            "the provenance entries naming the row, each read at its output_row and offset"
        )
        try:
            with contextlib.ExitStack() as self.open_files:
                self._check_docs(f, out, docs, audit, rows)
        except (OSError, pa.ArrowException, FormatError, KeyError) as exc:
            self.report.problems.append(f"{audit.output} cannot be read: {exc}")

    def _check_docs(
        self, f: InputFile, out: str, docs: str, audit: FileAudit, rows: list[int]
    ) -> None:
        job, problems = self.job, self.report.problems
        table = pq.read_table(
            stores.readable(docs, job.storage),
            columns=["source", "row", "tokens", "start", "output_row", "offset"],
        )
        sources = set(table.column("source").unique().to_pylist())
        if sources - {f.path}:
            problems.append(f"{audit.output} names {sorted(sources - {f.path})[0]}, not {f.path}")
        size = job.pack_length
        if size is not None and not self.output_format.token_file:
            stream: Any = PackedRows(
                ParquetRows(out, job.ids_column, job.count_column, problems, job.storage),
                size,
                problems,
            )
        else:
            lengths = self._trainer_lengths(out)
            if lengths is None:
                return
            stream = self._data_file(out, lengths[0].dtype)
        column = {name: table.column(name).to_pylist() for name in table.column_names}
        at = 0  # each entry must start where the one before it ends
        for i, (tokens, row, offset) in enumerate(
            zip(column["tokens"], column["output_row"], column["offset"])
        ):
            place = offset if size is None else row * size + offset
            if place != at:
                problems.append(
                    f"{audit.output}: entry {i} starts at id {place} of the output, the entries "
                    f"before it end at {at}"
                )
                return
            at += tokens
        if at != stream.total:
            problems.append(f"{audit.output}: its entries hold {at} ids, the output {stream.total}")
        entries: dict[int, list[int]] = {}
        wanted = set(rows)
        for i, row in enumerate(column["row"]):
            if row in wanted:
                entries.setdefault(row, []).append(i)
        results = self.sampled(f, rows)
        last_row = max(column["row"], default=-1)
        for row in rows:
            expected = self.expected(results[row])
            mine = entries.get(row, [])
            if not mine:  # a bad row, an empty document, or one in a dropped short last row
                dropped = (
                    size is not None
                    and not job.pack_keep_last
                    and row > last_row
                    and len(expected or []) < size
                )
                empty_left_out = self.drops_empty or size is not None  # (packed: no piece)
                none = expected is None or (not expected and empty_left_out) or dropped
                where = "no entry"
                written = expected if none else None
                compare(self.report, audit, self.oracle, row, where, written, expected)
                continue
            got: list[int] = []
            for i in mine:
                start = column["offset"][i]
                if size is not None:
                    start += column["output_row"][i] * size
                got += stream.read(start, column["tokens"][i])
            first = mine[0]
            want = list(expected or [])[column["start"][first] :]
            if size is not None and not job.pack_keep_last and row == last_row:
                want = want[: len(got)]  # the short last row dropped
            where = f"entries {first}-{mine[-1]}, {stream.where(start)}"
            reason = "" if column["start"][first] == 0 else "its first entry does not start at 0"
            compare(self.report, audit, self.oracle, row, where, got, want, reason, bool(reason))

    def direct(self, f: InputFile, audit: FileAudit, rows: list[int]) -> None:
        audit.located_by = "row number (every input row is an output row)"
        problems = self.report.problems
        out = ParquetRows(
            audit.output, self.job.ids_column, self.job.count_column, problems, self.job.storage
        )
        if out.num_rows != f.rows:
            problems.append(f"{audit.output} holds {out.num_rows} rows, its input {f.rows}")
        results = self.sampled(f, rows)
        written = out.rows(rows)
        for row in rows:
            self._compare_row(audit, row, row, out, written, self.expected(results[row]))

    def _compare_row(
        self,
        audit: FileAudit,
        row: int,
        output_row: int,
        out: ParquetRows,
        written: dict[int, tuple[list[int] | None, int | None]],
        expected: list[int] | None,
    ) -> None:
        """One Parquet row: its ids, and its count column, which must be their number."""
        ids, count = written.get(output_row, (None, None))
        wrong = count != (None if ids is None else len(ids))
        reason = f"the count column says {count} for {len(ids or [])} ids" if wrong else ""
        if output_row in out.unreadable:
            wrong, reason = True, "its row group cannot be read"
        where = f"row {output_row}"
        compare(self.report, audit, self.oracle, row, where, ids, expected, reason, wrong)

    def _documents(
        self, f: InputFile, rows: list[int], encode_all: bool
    ) -> tuple[dict[int, tuple[int, list[int] | None]], int]:
        """({sampled row: (its document number, expected ids)}, documents in the file): the
        whole input read in order; rows are encoded when sampled (all if ``encode_all``)."""
        wanted = set(rows)
        pairs = self.job.pair_column is not None
        found: dict[int, tuple[int, list[int] | None]] = {}
        document = 0
        for batch in _batched(input_rows(self.job, f, self.settings), BATCH_ROWS):
            todo = batch if encode_all else [r for r in batch if r[0] in wanted]
            results = _encoded(self.oracle, todo, pairs)
            for row, _, _, bad in batch:
                result = results.get(row)  # ids or why the oracle refuses, if encoded
                refused = bad or (result if isinstance(result, str) else "")
                expected = self.expected(bad if result is None else result)
                if row in wanted:
                    found[row] = (document, expected)
                # a format leaving empty documents out (datatrove, MDS) has none for an empty row
                dropped = self.drops_empty and (bad or result is not None) and expected == []
                if (not refused or self.job.bad_rows == "empty_ids") and not dropped:
                    document += 1
        return found, document

    def by_document(self, f: InputFile, audit: FileAudit, rows: list[int]) -> None:
        problems = self.report.problems
        if not self.output_format.token_file:
            out: Any = ParquetRows(
                audit.output, self.job.ids_column, self.job.count_column, problems, self.job.storage
            )
            count, what = out.num_rows, "rows"
        else:
            lengths = self._trainer_lengths(audit.output)
            if lengths is None:
                return
            info, _ = lengths
            count, what = info.documents, "documents"
        found, documents = self._documents(f, rows, encode_all=False)
        how = "every row"
        if documents != count:  # rows the oracle refuses are bad rows too: find them
            found, documents = self._documents(f, rows, encode_all=True)
            how = "every row, each encoded by tokenizers to find the ones it refuses,"
        if documents != count:
            problems.append(
                f"{audit.output} holds {count} {what}, the input's rows less its bad rows give "
                f"{documents}: sampled rows may be matched to the wrong documents"
            )
        audit.located_by = (
            f"document number: the input row less the bad rows before it ({how} read), "
            f"checked against the output's {count} {what}"
            + ("; offsets and lengths from its index" if self.output_format.token_file else "")
        )
        if not self.output_format.token_file:
            written = out.rows(sorted(d for d, e in found.values()))
            for row in rows:
                document, expected = found[row]
                if expected is None and self.job.bad_rows == "skip":
                    compare(self.report, audit, self.oracle, row, "skipped", None, None)
                    continue
                self._compare_row(audit, row, document, out, written, expected)
            return
        self._compare_documents(f, audit, rows, found)

    def _trainer_lengths(self, out: str) -> Any:
        try:
            return self.output_format.document_lengths(stores.as_path(out, self.job.storage))
        except (OSError, FormatError) as exc:
            self.report.problems.append(f"{out} cannot be read: {exc}")
            return None

    def _data_file(self, out: str, dtype: str) -> Any:
        """The output's ids by token offset (its data file, MDS's samples), open until the
        file's audit ends."""
        stream = self.output_format.token_stream(stores.as_path(out, self.job.storage), dtype)
        return self.open_files.enter_context(contextlib.closing(stream))

    def _compare_documents(
        self,
        f: InputFile,
        audit: FileAudit,
        rows: list[int],
        found: dict[int, tuple[int, list[int] | None]],
    ) -> None:
        lengths = self._trainer_lengths(audit.output)
        if lengths is None:
            return
        info, stream = lengths
        data = self._data_file(audit.output, info.dtype)
        wanted = {d for d, e in found.values() if e is not None}
        spans: dict[int, tuple[int, int]] = {}
        offset = 0
        try:
            for document, length in enumerate(stream):
                if document in wanted:
                    spans[document] = (offset, length)
                offset += length
        except FormatError as exc:
            self.report.problems.append(f"{audit.output}: {exc}")
        for row in rows:
            document, expected = found[row]
            if expected is None:  # a bad row is no document here
                compare(self.report, audit, self.oracle, row, "no document", None, None)
                continue
            if self.drops_empty and not expected:  # nor an empty one in datatrove, MDS
                where = "no document (an empty one is left out)"
                compare(self.report, audit, self.oracle, row, where, [], expected)
                continue
            if document not in spans:
                compare(
                    self.report,
                    audit,
                    self.oracle,
                    row,
                    f"document {document}",
                    None,
                    expected,
                    f"the output has no document {document}",
                )
                continue
            start, length = spans[document]
            compare(
                self.report,
                audit,
                self.oracle,
                row,
                f"document {document}, {data.where(start)}",
                data.read(start, length),
                expected,
            )

    def packed(self, f: InputFile, audit: FileAudit, rows: list[int]) -> None:
        """Packed rows: each sampled document's window found by the oracle's lengths of every
        document before it, checked up to the first token of the next one."""
        job, problems = self.job, self.report.problems
        assert job.pack_length is not None
        if not self.output_format.token_file:
            stream: Any = PackedRows(
                ParquetRows(audit.output, job.ids_column, job.count_column, problems, job.storage),
                job.pack_length,
                problems,
            )
        else:
            lengths = self._trainer_lengths(audit.output)
            if lengths is None:
                return
            stream = self._data_file(audit.output, lengths[0].dtype)
        last = rows[-1] if rows else -1
        pending: list[tuple[int, int, list[int] | None]] = []  # (row, offset, expected)
        windows: list[tuple[int, int, list[int] | None, int | None]] = []
        offset = 0
        reached_end = True
        pairs = job.pair_column is not None
        wanted = set(rows)
        for batch in _batched(input_rows(job, f, self.settings), BATCH_ROWS):
            results = _encoded(self.oracle, batch, pairs)
            for row, _, _, _ in batch:
                expected = self.expected(results[row])
                ids = expected or []
                if ids and pending:  # the first token after each pending document
                    windows += [(r, at, e, ids[0]) for r, at, e in pending]
                    pending = []
                if row in wanted:
                    pending.append((row, offset, expected))
                offset += len(ids)
            if not pending and batch[-1][0] >= last:
                reached_end = batch[-1][0] == f.rows - 1
                break
        windows += [(r, at, e, None) for r, at, e in pending]  # the file's last documents
        end = offset
        if reached_end:
            if not job.pack_keep_last:
                end -= end % job.pack_length
            if stream.total != end:
                problems.append(
                    f"{audit.output} holds {stream.total} tokens, the oracle's documents "
                    f"{'packed ' if end != offset else ''}make {end}"
                )
        audit.located_by = (
            "token offset: the sum of tokenizers' lengths (with the EOS) of the documents "
            "before it, each window checked up to the next document's first token"
        )
        for row, start, expected, following in windows:
            ids = expected or []
            want = ids + ([following] if following is not None else [])
            if reached_end:
                want = want[: max(0, end - start)]  # the short last row dropped
            got = stream.read(start, len(want))
            reason = ""
            if len(got) == len(want) and got[: len(ids)] == ids and got != want:
                reason = "the document runs on past its end (its next token is not the next one's)"
            compare(self.report, audit, self.oracle, row, stream.where(start), got, want, reason)
            if isinstance(stream, PackedRows) and ids and start + len(ids) <= stream.total:
                stop = start + len(ids)
                inside = stream.cuts_inside(start, stop)
                if inside or not (stream.bounded(start) and stream.bounded(stop)):
                    problems.append(
                        f"{audit.output}: the seq_lens of input row {row}'s document "
                        f"({stream.where(start)}, {len(ids)} ids) do not bound it"
                        + (f" (a piece ends at {stream.where(inside[0])})" if inside else "")
                    )


def audit_job(job: Job, sample: int = AUDIT_SAMPLE, seed: int = AUDIT_SEED) -> AuditReport:
    """Audit the finished outputs of ``job``: ``sample`` input rows (see :func:`draw_sample`)
    encoded by ``tokenizers`` under the job's options and compared with what was written.
    Raises :class:`OracleMissing` without ``tokenizers``, JobError for an invalid job."""
    import_oracle()  # before any work: the missing extra is the first thing said
    prep = prepare(job, remember=False)
    truncation = applied_truncation(job, prep.facts)
    oracle = Oracle(
        prep.tokenizer_bytes,
        job.add_special_tokens,
        job.special_tokens_in_text == "text",
        FILE_TRUNCATION if job.max_length == "tokenizer" else truncation,
    )
    source = display_path(job.file) if job.file else "the job"
    report = AuditReport(oracle.version, seed, sample, source)
    if job.max_length == "tokenizer" and oracle.truncation != prep.facts.truncation:
        report.problems.append(
            f"tokenizers reads the truncation of {job.tokenizer_path.name} as "
            f"{oracle.truncation}, batchtok as {prep.facts.truncation}"
        )
    # Whether each output is the job's as the inputs are now, from the run's records (inputs
    # whose stat changed are not hashed again: their outputs cannot be vouched for).
    planned = plan_job(job, hash_inputs=False, prep=prep)
    for planned_file in planned["files"]:
        if planned_file["output"] is None:  # an input of a stream: see JobAudit.run_units
            continue
        output_path = stores.as_path(planned_file["output"], job.storage)
        if planned_file["complete"] or not output_path.exists():
            continue
        output, source = display_path(planned_file["output"]), planned_file["file"]
        statuses = [s["status"] for s in planned_file["shards"]]
        if "unknown" in statuses:
            report.problems.append(
                f"{display_path(source)} changed since {output} was written (or "
                "the run left no record of it): run the job first"
            )
        else:
            todo = sum(s != "cached" for s in statuses)
            report.problems.append(
                f"{output} is not complete for the job as it is now ({todo} of "
                f"{len(statuses)} shards to do): run the job first"
            )
    strata = [
        Stratum(f.rel, shard.first_row, shard.rows)
        for f in prep.files
        for shard in prep.states[f.rel].shards
    ]
    JobAudit(prep, report, oracle).run(draw_sample(strata, sample, seed))
    return report


# -- auditing a tokenizer on text files ----------------------------------------------------------


def read_texts(path: str, column: str) -> list[str | None]:
    """The texts of a file: each line of a text file (without its line break), or the
    ``column`` of a Parquet, JSON Lines or Arrow file (None for a null or unreadable row)."""
    if path.endswith(".parquet"):
        table = pq.read_table(path, columns=[column])
        return table.column(0).to_pylist()
    if is_arrow(path):
        return read_column(path, column)
    if is_jsonl(path):
        codec = jsonl_compression(path)
        schema = pa.schema([pa.field(column, pa.string())])
        with open(path, "rb") as raw:
            stream = open_stream(raw, None if codec is False else codec)
            out: list[str | None] = []
            for batch, _ in read_rows(stream, 1, (column,), 1, BATCH_ROWS, schema):
                out += batch.column(0).to_pylist()
            return out
    with open(path, encoding="utf-8", newline="") as f:
        return [line.removesuffix("\n").removesuffix("\r") for line in f]


def audit_texts(
    tokenizer_path: str,
    paths: Sequence[str],
    column: str = "text",
    sample: int = AUDIT_SAMPLE,
    seed: int = AUDIT_SEED,
    add_special_tokens: bool = True,
    special_tokens_as_text: bool = False,
) -> AuditReport:
    """batchtok's ids for ``sample`` texts of ``paths`` (lines, or a column) compared with
    ``tokenizers``', both loading ``tokenizer_path`` with its truncation, without padding."""
    from batchtok import Tokenizer

    import_oracle()
    data = Path(tokenizer_path).read_bytes()
    oracle = Oracle(data, add_special_tokens, special_tokens_as_text)
    tok = Tokenizer.from_buffer(data)
    tok.no_padding()
    tok.encode_special_tokens = special_tokens_as_text
    encoder = Encoder(tok, add_special_tokens)
    report = AuditReport(oracle.version, seed, sample, f"batchtok's ids with {tokenizer_path}")
    texts = {path: read_texts(path, column) for path in paths}
    chosen = draw_sample([Stratum(p, 0, len(t)) for p, t in texts.items()], sample, seed)
    for path in paths:
        rows = chosen.get(path, [])
        by_line = not path.endswith(".parquet") and not is_jsonl(path) and not is_arrow(path)
        audit = FileAudit(path, path, "text", "line number" if by_line else "row number")
        audit.rows = rows
        report.files.append(audit)
        picked = [texts[path][r] for r in rows]
        valid = [t for t in picked if t is not None]
        ours, errors = encoder.encode(valid)
        theirs = iter(zip(ours, oracle.encode(valid), range(len(valid))))
        for row, text in zip(rows, picked):
            if text is None:  # a null row: neither side has ids
                compare(report, audit, oracle, row, f"row {row}", None, None)
                continue
            mine, result, j = next(theirs)
            expected = None if isinstance(result, str) else result
            reason = f"batchtok refuses it ({errors[j]})" if j in errors else ""
            if isinstance(result, str) and mine is not None:
                reason = f"tokenizers refuses it ({result}), batchtok encodes it"
            compare(
                report,
                audit,
                oracle,
                row,
                f"line {row + 1}" if by_line else f"row {row}",
                mine,
                expected,
                reason,
            )
    return report
