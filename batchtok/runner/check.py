"""``batchtok check JOB``: what the job will make of its corpus, on a sample, before any run.

The silent failures of a tokenization run are policy mistakes more often than encoding bugs:
a doubled BOS or EOS, special-token strings in raw text becoming control ids, a dtype twice
as wide as the ids need, documents cut by truncation, bad rows. Each shows in a sample. This
reads a reproducible sample of every input (``check.sample_mb`` of text, rows drawn by
``check.seed`` over every input and shard), encodes it as the run would (the job's tokenizer
and options, with this engine) and reports each finding with its count, an example (the
file, the row, the ids around it) and the key that changes it.

A finding whose key the job sets itself (in so many words: in its file or on the command
line) is reported as information: the job decided. The exit code is 1 when a finding needs a
decision, 0 when none does (2: an invalid job, as every command).
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .exec.encode import KNOWN_EOS, Encoder, applied_truncation, configure_tokenizer, eos_id
from .exec.worker import encode_settings
from .exit_codes import EXIT_FAILURE, EXIT_OK
from .job import Job, display_path
from .plan.prepare import prepare

SAMPLE_EXAMPLE_IDS = 8  # ids shown around a finding's place
MB = 1_000_000


@dataclass
class Finding:
    """One thing the job will do to its corpus that a person should decide on."""

    kind: str
    message: str
    count: int
    key: str  # the job key that changes it
    example: dict[str, Any] | None = None  # file, row, ids (around the place)
    decided: bool = False  # the job sets ``key`` itself: information, not a finding

    def line(self) -> str:
        where = ""
        if self.example:
            e = self.example
            ids = " ".join(map(str, e.get("ids", [])))
            where = f" (e.g. {e['file']} row {e['row']}" + (f": ids {ids}" if ids else "") + ")"
        label = "info" if self.decided else "finding"
        decided = f" (the job sets {self.key})" if self.decided else f"; key: {self.key}"
        return f"{label}: {self.kind}: {self.message}{where}{decided}"


@dataclass
class CheckReport:
    job: str
    seed: int
    sample_mb: float
    rows: int = 0
    text_bytes: int = 0
    documents: int = 0
    tokens: int = 0
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was looked at, figures

    @property
    def exit_code(self) -> int:
        return EXIT_FAILURE if any(not f.decided for f in self.findings) else EXIT_OK

    def to_json(self) -> dict[str, Any]:
        doc = asdict(self)
        doc["exit_code"] = self.exit_code
        return doc

    def lines(self) -> list[str]:
        out = [
            f"check of {self.job}: {self.rows:,} rows ({self.text_bytes / MB:.2f} MB of text) "
            f"sampled, seed {self.seed}; {self.documents:,} documents, {self.tokens:,} ids"
        ]
        out += [f"  {note}" for note in self.notes]
        out += [f.line() for f in self.findings]
        needs = sum(not f.decided for f in self.findings)
        out.append(f"{needs} finding(s) need a decision" if needs else "nothing needs a decision")
        return out

    def add(self, job: Job, finding: Finding, decidable: bool = True) -> None:
        """Add ``finding``: information if the job sets its key itself (``decidable``: a
        key can decide it at all)."""
        finding.decided = decidable and finding.key in job.sources
        self.findings.append(finding)


def check_job(job: Job, sample_mb: float | None = None, seed: int | None = None) -> CheckReport:
    """Sample the job's inputs, encode the sample as the run would, report (see the module
    docstring). Raises JobError for an invalid job."""
    from .audit import Stratum, draw_sample, sampled_rows

    sample_mb = job.check_sample_mb if sample_mb is None else sample_mb
    seed = job.check_seed if seed is None else seed
    prep = prepare(job, remember=False)
    facts = prep.facts
    tok = prep.loaded_tokenizer()
    configure_tokenizer(tok, job, facts)
    report = CheckReport(display_path(job.file) if job.file else "the job", seed, sample_mb)
    total_rows = sum(f.rows for f in prep.files)
    total_bytes = sum(f.text_bytes for f in prep.files)
    want = total_rows if not total_bytes else math.ceil(sample_mb * MB * total_rows / total_bytes)
    strata = [
        Stratum(f.rel, shard.first_row, shard.rows)
        for f in prep.files
        for shard in prep.states[f.rel].shards
    ]
    sample = draw_sample(strata, want, seed)
    settings = encode_settings(job, facts)
    rows: list[tuple[str, int, str | None, str | None, str]] = []  # file, row, text, pair, bad
    for f in prep.files:
        if sample.get(f.rel):
            shown = display_path(f.path)
            rows += [(shown, *r) for r in sampled_rows(job, f, settings, sample[f.rel])]
    report.rows = len(rows)
    report.text_bytes = sum(len((r[2] or "").encode()) + len((r[3] or "").encode()) for r in rows)
    _findings(job, prep, tok, rows, report)
    return report


def _findings(job: Job, prep: Any, tok: Any, rows: list, report: CheckReport) -> None:
    facts = prep.facts
    valid = [r for r in rows if not r[4]]
    texts = [r[2] for r in valid]
    pairs = [r[3] for r in valid] if job.pair_column else None
    special = job.add_special_tokens
    encoded, failed = Encoder(tok, special).encode(texts, pairs) if texts else ([], {})
    errors = [(valid[i], f"encode error: {why}") for i, why in sorted(failed.items())]
    kept = [i for i in range(len(valid)) if i not in failed]
    valid = [valid[i] for i in kept]
    texts = [texts[i] for i in kept]
    pairs = None if pairs is None else [pairs[i] for i in kept]
    ids_of: list[list[int]] = [encoded[i] or [] for i in kept]
    report.documents = sum(1 for ids in ids_of if ids)
    report.tokens = sum(len(ids) for ids in ids_of)
    # -- bad rows -----------------------------------------------------------------------
    bad = [r for r in rows if r[4]] + [(*r[:4], why) for r, why in errors]
    if bad:
        report.add(
            job,
            Finding(
                "bad rows",
                f"{len(bad)} of {len(rows)} sampled rows have no text the run can encode "
                f"({bad[0][4]}); run.bad_rows = {json.dumps(job.bad_rows)} "
                + {
                    "null_ids": "writes null ids for them",
                    "empty_ids": "writes empty ids for them",
                    "skip": "leaves them out",
                    "fail": "fails the run at the first",
                }[job.bad_rows],
                len(bad),
                "run.bad_rows",
                {"file": bad[0][0], "row": bad[0][1]},
            ),
        )
    # -- BOS and EOS the post-processor adds -----------------------------------------------
    around = tok.encode_batch_ids(["", "x"], True)
    empty, plain = around[0], around[1]
    specials = {tok.token_to_id(s) for s in facts.special_contents} - {None}
    bos = empty[0] if empty and plain and plain[0] == empty[0] and empty[0] in specials else None
    bos_text = tok.id_to_token(bos) if bos is not None else None
    if special and bos is not None and bos_text:
        starting = [
            (r, ids) for r, ids in zip(valid, ids_of) if ids and (r[2] or "").startswith(bos_text)
        ]
        if starting:
            r, ids = starting[0]
            makes = (
                f"they begin with [{bos}, {bos}]"
                if job.special_tokens_in_text == "special"
                else "the string is encoded as text after it"
            )
            report.add(
                job,
                Finding(
                    "double BOS",
                    f"{len(starting)} of {len(valid)} texts start with {bos_text!r} and the "
                    f"post-processor adds {bos_text!r} (id {bos}) too: {makes}",
                    len(starting),
                    "encode.add_special_tokens",
                    {"file": r[0], "row": r[1], "ids": ids[:SAMPLE_EXAMPLE_IDS]},
                ),
            )
    expected = _config_bos(job)
    if expected is not None and (not special or bos is None):
        how = "encode.add_special_tokens = false" if not special else "its post-processor"
        report.add(
            job,
            Finding(
                "no BOS",
                f"{expected[1]} says add_bos_token = true ({expected[0]!r}), but no BOS is "
                f"added ({how}): a model trained with one will not see it",
                len(valid),
                "encode.add_special_tokens" if not special else "tokenizer.path",
            ),
            decidable=not special,  # (no key makes a post-processor add one)
        )
    report.notes.append(
        f"the post-processor adds {facts.added_single} special token(s) to a text"
        + (f", BOS {bos_text!r} (id {bos}) first" if bos is not None else "")
        + (
            f"; tokenizer_config.json read: add_bos_token = true ({expected[0]!r})"
            if expected
            else ""
        )  # fmt: skip
    )
    try:
        eos = eos_id(job, facts)
    except KeyError:
        eos = None
    if eos is not None and special and plain and plain[-1] == eos:
        docs = sum(1 for ids in ids_of if ids)
        report.add(
            job,
            Finding(
                "double EOS",
                f"the post-processor ends every text with {tok.id_to_token(eos)!r} (id {eos}) "
                "and output.append_eos appends it again: every non-empty document ends with "
                f"[{eos}, {eos}]",
                docs,
                "output.append_eos",
                {"file": valid[0][0], "row": valid[0][1], "ids": plain + [eos]} if valid else None,
            ),
        )
    # -- special-token strings inside the texts --------------------------------------------
    for content in facts.special_contents:
        if not content or (content == bos_text and special):
            continue
        hits = [r for r in valid if content in (r[2] or "") or content in (r[3] or "")]
        if not hits:
            continue
        files = sorted({r[0] for r in hits})
        makes = (
            f"becomes its control id {tok.token_to_id(content)}"
            if job.special_tokens_in_text == "special"
            else "is encoded as plain text"
        )
        r = hits[0]
        at = (r[2] or "").find(content)
        report.add(
            job,
            Finding(
                "special-token string in text",
                f"{content!r} is in {len(hits)} of {len(valid)} texts ({len(files)} input(s), "
                f"e.g. {files[0]}); it {makes} (encode.special_tokens_in_text = "
                f'"{job.special_tokens_in_text}")',
                len(hits),
                "encode.special_tokens_in_text",
                {"file": r[0], "row": r[1], "text": (r[2] or "")[max(0, at - 20) : at + 40]},
            ),
        )
    # -- the dtype ---------------------------------------------------------------------------
    from .outputs.formats import FORMATS

    written = FORMATS[job.format].token_dtype(max(facts.vocab_size, facts.max_id + 1))
    if not written and job.dtype in ("int32", "uint32") and facts.max_id <= 65_535:
        report.add(
            job,
            Finding(
                "dtype twice as wide",
                f"output.dtype {job.dtype} takes 4 bytes an id, but every id of "
                f"{job.tokenizer_path.name} (the largest: {facts.max_id}) fits uint16",
                report.tokens,
                "output.dtype",
            ),
        )
    elif written == "int32" and facts.max_id <= 65_535:
        report.notes.append(
            f"{job.format} writes int32 for a vocabulary of {facts.vocab_size} ids (its own rule, "
            "uint16 below 65,500): twice the bytes uint16 would take; output.dtype does not apply"
        )
    # -- truncation, empty and long documents ---------------------------------------------
    truncation = applied_truncation(job, facts)
    if truncation is not None and texts:
        tok.no_truncation()
        whole = Encoder(tok, special).encode(texts, pairs)[0]
        configure_tokenizer(tok, job, facts)
        cut = [
            (r, len(w or []) - len(ids))
            for r, w, ids in zip(valid, whole, ids_of)
            if len(w or []) > len(ids)
        ]
        if cut:
            lost = sum(n for _, n in cut)
            r, n = max(cut, key=lambda x: x[1])
            report.add(
                job,
                Finding(
                    "truncated documents",
                    f"{len(cut)} of {len(valid)} documents are cut to "
                    f"{truncation['max_length']} ids, losing {lost:,} ids "
                    f"({lost / max(1, lost + report.tokens):.1%} of the sample's); the longest "
                    f"loses {n:,}",
                    len(cut),
                    "encode.max_length",
                    {"file": r[0], "row": r[1]},
                ),
            )
    empty_docs = [r for r, ids in zip(valid, ids_of) if not ids]
    if empty_docs:
        report.notes.append(
            f"{len(empty_docs)} empty document(s) (e.g. {empty_docs[0][0]} row {empty_docs[0][1]})"
            + (
                "; the format leaves them out"
                if not FORMATS[job.format].keeps_empty_documents
                else ""
            )  # fmt: skip
        )
    lengths = sorted((len(ids) for ids in ids_of if ids), reverse=True)
    if lengths:
        top = lengths[: max(1, len(lengths) // 100)]
        report.notes.append(
            f"the longest 1% of documents ({len(top)}) hold {sum(top) / sum(lengths):.1%} of "
            f"the ids; the longest has {lengths[0]:,}; "
            f"{report.text_bytes / max(1, report.tokens):.2f} bytes of text an id"
        )
    if eos is None and job.append_eos is False:
        known = [name for name in KNOWN_EOS if name in facts.eos_ids]
        if known:
            report.notes.append(
                f"no EOS is appended (output.append_eos = false); {known[0]!r} could be"
            )


def _config_bos(job: Job) -> tuple[str, str] | None:
    """(the BOS token, where it was read) when a ``tokenizer_config.json`` beside the
    tokenizer file says ``add_bos_token = true``; None otherwise."""
    path = job.tokenizer_path
    if not isinstance(path, Path):
        return None
    config = path.with_name("tokenizer_config.json")
    try:
        doc = json.loads(config.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("add_bos_token") is not True:
        return None
    token = doc.get("bos_token")
    if isinstance(token, dict):
        token = token.get("content")
    return (str(token), display_path(config))
