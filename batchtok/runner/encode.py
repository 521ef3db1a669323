"""The runner's side of encoding: load the tokenizer once, truncate, dedup, count special tokens.

The engine knows nothing of jobs; this module turns a job's encode options into calls of
:meth:`batchtok.Tokenizer.encode_batch_ids`.

Truncation (``encode.max_length``) follows `tokenizers` for a single sequence, direction right,
no stride: the text's ids are cut to ``max_length`` minus the number of special tokens the
post-processor adds (when ``add_special_tokens``), then those are added. The special tokens are
read off the loaded tokenizer once (:class:`TokenizerFacts`); a ``max_length`` smaller than
their count is refused, since `tokenizers` then silently does not truncate at all.
"""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from batchtok import EncodeError, TokenizerFileError, __version__

if TYPE_CHECKING:
    from batchtok import Tokenizer

from .cache import file_digests
from .job import Job, JobError

DTYPE_MAX = {"int32": 2**31 - 1, "uint16": 2**16 - 1, "uint32": 2**32 - 1}
MEMO_BYTES = 64 << 20  # texts and ids remembered per shard for dedup across batches


@dataclass(frozen=True)
class TokenizerFacts:
    """What validation and the workers need to know about a tokenizer file, cheap to store.

    Derived from the file's bytes and the engine version only, so it is remembered under
    ``OUT/.batchtok/tokenizers/`` and a re-run with nothing to do never loads the tokenizer.
    """

    xxh3: str
    sha256: str
    engine_version: str
    max_id: int
    vocab_size: int
    prefix: tuple[int, ...]  # ids the post-processor adds before the text
    suffix: tuple[int, ...]  # ... and after it
    affixes_known: bool  # False: the template is not "prefix + text + suffix"
    special_contents: tuple[str, ...]

    @property
    def added_by_template(self) -> int:
        return len(self.prefix) + len(self.suffix)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> TokenizerFacts:
        return cls(
            xxh3=data["xxh3"],
            sha256=data["sha256"],
            engine_version=data["engine_version"],
            max_id=int(data["max_id"]),
            vocab_size=int(data["vocab_size"]),
            prefix=tuple(data["prefix"]),
            suffix=tuple(data["suffix"]),
            affixes_known=bool(data["affixes_known"]),
            special_contents=tuple(data["special_contents"]),
        )


_LOADED: dict[tuple[str, str], Tokenizer] = {}  # (path, xxh3) -> tokenizer, per process


def load_tokenizer(job: Job, xxh3: str) -> Tokenizer:
    """Load (once per process and file content) the job's tokenizer, or raise JobError."""
    key = (str(job.tokenizer_path), xxh3)
    tok = _LOADED.get(key)
    if tok is None:
        try:
            from batchtok import Tokenizer  # the engine, loaded only when a shard needs it

            tok = Tokenizer.from_file(job.tokenizer_path)
        except TokenizerFileError as exc:
            raise JobError(
                [job.problem("tokenizer.path", f"{job.tokenizer_path} is refused: {exc}")],
                str(job.file or ""),
            ) from exc
        except OSError as exc:
            raise JobError(
                [job.problem("tokenizer.path", f"cannot read {job.tokenizer_path}: {exc}")],
                str(job.file or ""),
            ) from exc
        _LOADED.clear()  # keep one: a tokenizer can hold hundreds of MB of caches
        _LOADED[key] = tok
    return tok


def tokenizer_digests(job: Job) -> tuple[str, str]:
    try:
        return file_digests(job.tokenizer_path)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise JobError(
            [job.problem("tokenizer.path", f"cannot read {job.tokenizer_path}: {reason}")],
            str(job.file or ""),
        ) from exc


def facts_of(tok: Tokenizer, xxh3: str, sha256: str) -> TokenizerFacts:
    vocab = tok.get_vocab()
    prefix: tuple[int, ...] = ()
    suffix: tuple[int, ...] = ()
    known = False
    try:
        probe = "a"
        full = tok.encode(probe, True)
        plain = tok.encode_batch_ids([probe], False)[0]
        mask = full.special_tokens_mask
        start, end = 0, len(mask)
        while start < end and mask[start]:
            start += 1
        while end > start and mask[end - 1]:
            end -= 1
        prefix, suffix = tuple(full.ids[:start]), tuple(full.ids[end:])
        empty = tok.encode_batch_ids([""], True)[0]
        known = list(full.ids[start:end]) == list(plain) and list(empty) == [*prefix, *suffix]
    except (EncodeError, ValueError):
        known = False
    ids = list(vocab.values()) + list(prefix) + list(suffix)
    return TokenizerFacts(
        xxh3=xxh3,
        sha256=sha256,
        engine_version=__version__,
        max_id=max(ids) if ids else 0,
        vocab_size=tok.get_vocab_size(),
        prefix=prefix,
        suffix=suffix,
        affixes_known=known,
        special_contents=tuple(sorted(tok.added_vocabulary.special_contents)),
    )


def remembered_facts(state_dir: Path, xxh3: str) -> TokenizerFacts | None:
    try:
        with open(state_dir / "tokenizers" / f"{xxh3}.json", encoding="utf-8") as f:
            facts = TokenizerFacts.from_json(json.load(f))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return facts if facts.engine_version == __version__ and facts.xxh3 == xxh3 else None


def remember_facts(state_dir: Path, facts: TokenizerFacts) -> None:
    target = state_dir / "tokenizers" / f"{facts.xxh3}.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(facts.to_json(), f)
    os.replace(tmp, target)


def check_against_job(job: Job, facts: TokenizerFacts) -> None:
    """The job options that depend on the tokenizer: dtype range and truncation."""
    problems = []
    if facts.max_id > DTYPE_MAX[job.dtype]:
        wider = next(d for d in ("uint16", "uint32", "int32") if facts.max_id <= DTYPE_MAX[d])
        problems.append(
            job.problem(
                "output.dtype",
                f"{job.dtype} cannot hold id {facts.max_id} of {job.tokenizer_path.name} "
                f"(vocab size {facts.vocab_size}); use {wider}",
            )
        )
    if job.max_length and job.add_special_tokens:
        if not facts.affixes_known:
            problems.append(
                job.problem(
                    "encode.max_length",
                    "this tokenizer's post-processor does not add its special tokens as a plain "
                    "prefix and suffix, which batchtok's truncation needs; set "
                    "encode.add_special_tokens = false or drop encode.max_length",
                )
            )
        elif job.max_length < facts.added_by_template:
            problems.append(
                job.problem(
                    "encode.max_length",
                    f"{job.max_length} is less than the {facts.added_by_template} special tokens "
                    "the post-processor adds (tokenizers would then not truncate at all); "
                    f"use at least {facts.added_by_template}",
                )
            )
    if problems:
        raise JobError(problems, str(job.file or ""))


class SpecialCounter:
    """Counts special-token strings inside texts (a plain scan, leftmost-longest)."""

    def __init__(self, contents: Sequence[str]) -> None:
        ordered = sorted(contents, key=lambda c: (-len(c), c))
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        prefixes = {c[:2] for c in ordered}
        self.prefixes = tuple(prefixes) if len(prefixes) <= 8 else ()

    def count(self, texts: Sequence[str], into: Counter) -> None:
        if self.pattern is None:
            return
        findall = self.pattern.findall
        prefixes = self.prefixes
        for text in texts:
            if prefixes and not any(p in text for p in prefixes):
                continue
            found = findall(text)
            if found:
                into.update(found)


class Encoder:
    """Ids for a list of texts under one job's options; identical texts are encoded once per
    shard (up to :data:`MEMO_BYTES` remembered; a batch is always deduplicated whole)."""

    def __init__(
        self,
        tok: Tokenizer,
        facts: TokenizerFacts,
        add_special_tokens: bool,
        max_length: int,
        memo_bytes: int = MEMO_BYTES,
    ) -> None:
        self.tok = tok
        self.add = add_special_tokens
        self.max_length = max_length
        self.prefix = list(facts.prefix)
        self.suffix = list(facts.suffix)
        self.keep = max_length - (facts.added_by_template if add_special_tokens else 0)
        self.memo: dict[str, list[int]] = {}
        self.memo_budget = memo_bytes
        self.memo_used = 0

    def _encode_all(self, texts: list[str]) -> list[list[int]]:
        if not self.max_length:
            return self.tok.encode_batch_ids(texts, self.add)
        plain = self.tok.encode_batch_ids(texts, False)
        keep = self.keep
        if self.add:
            prefix, suffix = self.prefix, self.suffix
            return [prefix + ids[:keep] + suffix for ids in plain]
        return [ids if len(ids) <= keep else ids[:keep] for ids in plain]

    def encode(self, texts: list[str]) -> tuple[list[list[int] | None], dict[int, str]]:
        """(ids per text, {index: error} for texts the engine could not encode)."""
        memo = self.memo
        out: list[list[int] | None] = [memo.get(t) for t in texts]
        todo = [i for i, ids in enumerate(out) if ids is None]
        if not todo:
            return out, {}
        todo_texts = [texts[i] for i in todo]
        errors: dict[int, str] = {}
        try:
            fresh: list[list[int] | None] = list(self._encode_all(todo_texts))
        except Exception:  # noqa: BLE001 - find the row(s) at fault, keep the others
            fresh = []
            for i, text in zip(todo, todo_texts):
                try:
                    fresh.append(self._encode_all([text])[0])
                except Exception as exc:  # noqa: BLE001
                    errors[i] = f"{type(exc).__name__}: {exc}"
                    fresh.append(None)
        for i, text, ids in zip(todo, todo_texts, fresh):
            out[i] = ids
            if ids is not None and text not in memo:
                self.memo_used += len(text) + 8 * len(ids) + 120
                if self.memo_used > self.memo_budget:
                    memo.clear()
                    self.memo_used = 0
                memo[text] = ids
        return out, errors
