"""The runner's side of encoding: load the tokenizer once, set its truncation, dedup, count
special tokens.

The engine knows nothing of jobs; this module turns a job's encode options into settings of
the loaded :class:`batchtok.Tokenizer` and calls of its ``encode_batch_ids``.

**Truncation is the engine's**, as `tokenizers` applies it (:func:`configure_tokenizer`):
``encode.max_length = "tokenizer"`` keeps the truncation the tokenizer file carries (if any),
``"none"`` turns it off, a number sets ``enable_truncation(max_length, stride=0, strategy,
direction)`` from ``encode.truncation_strategy`` and ``encode.truncation_direction``. The runner
writes ``encode(...).ids`` only, the first window: a stride decides the overflowing windows,
never that one, so the job has no stride key (a stride in the tokenizer file is kept, as
`tokenizers` keeps it, since it decides which rows `tokenizers` refuses). Settings that
`tokenizers` would silently ignore or fail on for every truncated row are refused before any
work (:func:`check_against_job`).

**Padding is never applied**: ids are written unpadded whatever the tokenizer file says
(padding is a batch-collation concern, and padding a batch of rows to its longest would make
the ids depend on which rows share a batch).
"""

from __future__ import annotations

import json
import re
import sys
from array import array
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from batchtok import EncodeError, TokenizerFileError, __version__
from batchtok.tokenizer import STREAM_CHARS

if TYPE_CHECKING:
    from batchtok import Tokenizer

from ..errors import JobError, reason
from ..io.stores import OutPath, write_whole
from ..job import Job
from ..plan.keys import digests

DTYPE_MAX = {"int32": 2**31 - 1, "uint16": 2**16 - 1, "uint32": 2**32 - 1}
MEMO_BYTES = 16 << 20  # inputs and ids remembered per shard for dedup across batches
# Texts joined for one scan by SpecialCounter: bounds the copy (at most 4 bytes a char).
JOIN_CHARS = 1 << 20
# A text longer than this (in chars) is encoded straight into the output's id array.
LONG_CHARS = STREAM_CHARS


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
    special_contents: tuple[str, ...]
    added_single: int  # special tokens the post-processor adds to one sequence
    added_pair: int  # ... and to a pair
    pair_errors: tuple[str, str]  # why pairs cannot be encoded ("" if they can), without and
    # with special tokens
    truncation: dict[str, Any] | None  # the file's, as Tokenizer.truncation shows it
    padding: dict[str, Any] | None  # the file's (never applied by the runner)
    unk_id: int | None  # the model's unknown token, for the token statistics
    byte_ids: tuple[int, ...]  # a byte-fallback model's <0x00>..<0xFF> tokens
    eos_ids: dict[str, int]  # tokens output.append_eos may name: added ones, known EOS names
    # the ids the post-processor puts around an empty text (BOS, EOS...): None when learned
    # before batchtok kept them (the facts remembered by an earlier version)
    special_ids: tuple[int, ...] | None = None

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
            special_contents=tuple(data["special_contents"]),
            added_single=int(data["added_single"]),
            added_pair=int(data["added_pair"]),
            pair_errors=(str(data["pair_errors"][0]), str(data["pair_errors"][1])),
            truncation=data["truncation"],
            padding=data["padding"],
            unk_id=None if data["unk_id"] is None else int(data["unk_id"]),
            byte_ids=tuple(int(i) for i in data["byte_ids"]),
            eos_ids={str(k): int(v) for k, v in data["eos_ids"].items()},
            special_ids=None
            if data.get("special_ids") is None
            else tuple(int(i) for i in data["special_ids"]),
        )


# (path, xxh3) -> (tokenizer, the file's truncation, the file's padding), per process
_LOADED: dict[tuple[str, str], tuple[Tokenizer, dict | None, dict | None]] = {}


def load_tokenizer(job: Job, xxh3: str, data: bytes, sha256: str | None = None) -> Tokenizer:
    """The job's tokenizer from ``data``, the file's bytes read once by
    :func:`read_tokenizer` (so the tokenizer is the one its hash names, whatever happens to
    the file meanwhile), as the file configures it (loaded once per process and file content:
    a previous job's settings are undone), or raise JobError."""
    key = (str(job.tokenizer_path), xxh3)
    if key in _LOADED and _restore(*_LOADED[key]):
        return _LOADED[key][0]
    try:
        from batchtok import Tokenizer  # the engine, loaded only when a shard needs it

        # the load cache's key, hashed once; a job never writes the tokenizer back
        tok = Tokenizer.from_buffer(data, sha256=sha256, keep_source=False)
    except TokenizerFileError as exc:
        raise JobError(
            [job.problem("tokenizer.path", f"{job.tokenizer_path} is refused: {exc}")],
            str(job.file or ""),
        ) from exc
    _LOADED.clear()  # keep one: a tokenizer can hold hundreds of MB of caches
    _LOADED[key] = (tok, tok.truncation, tok.padding)
    return tok


def _restore(tok: Tokenizer, truncation: dict | None, padding: dict | None) -> bool:
    """Put back the file's settings; False where only loading the file again can."""
    tok.encode_special_tokens = False
    if padding is None:
        tok.no_padding()
    else:
        tok.enable_padding(**padding)
    if truncation is None:
        tok.no_truncation()
        return True
    try:
        tok.enable_truncation(**truncation)
    except ValueError:  # a stride the file may carry but enable_truncation refuses
        return False
    return True


def read_tokenizer(job: Job) -> tuple[bytes, str, str]:
    """The tokenizer file's bytes and their (xxh3-128, sha256): read once, so that the hash
    recorded in every output is the hash of the bytes the ids come from."""
    try:
        data = job.tokenizer_path.read_bytes()
        return (data, *digests(data))
    except OSError as exc:
        raise JobError(
            [job.problem("tokenizer.path", f"cannot read {job.tokenizer_path}: {reason(exc)}")],
            str(job.file or ""),
        ) from exc


def _unknown_and_byte_ids(tok: Tokenizer) -> tuple[int | None, tuple[int, ...]]:
    """The id the model gives an unknown piece, and its byte tokens if it falls back to bytes."""
    model = tok.model
    unk_id = getattr(model, "unk_id", None)
    unk_token = getattr(model, "unk_token", None)
    if unk_id is None and isinstance(unk_token, str):
        unk_id = tok.token_to_id(unk_token)
    byte_ids: tuple[int, ...] = ()
    if getattr(model, "byte_fallback", False):
        found = (tok.token_to_id(f"<0x{b:02X}>") for b in range(256))
        byte_ids = tuple(sorted({i for i in found if i is not None}))
    return unk_id, byte_ids


# End-of-text tokens by the names tokenizer.json files give them, most common first:
# GPT-2/Qwen, Llama-3, Llama-2/Mistral/T5, Gemma.
KNOWN_EOS = ("<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>")


def _eos_ids(tok: Tokenizer) -> dict[str, int]:
    found = dict(tok.added_vocabulary.content_to_id)
    for name in KNOWN_EOS:
        token_id = tok.token_to_id(name)
        if token_id is not None:
            found.setdefault(name, token_id)
    return found


def eos_id(job: Job, facts: TokenizerFacts) -> int | None:
    """The id output.append_eos appends (None: none); KeyError naming what is missing."""
    if job.append_eos is False:
        return None
    if job.append_eos is True:
        for name in KNOWN_EOS:
            if name in facts.eos_ids:
                return facts.eos_ids[name]
        raise KeyError(
            f"{job.tokenizer_path.name} has none of {', '.join(KNOWN_EOS)}; name the token "
            'to append, e.g. output.append_eos = "[SEP]"'
        )
    if job.append_eos not in facts.eos_ids:
        raise KeyError(
            f"{job.append_eos!r} is not an added token of {job.tokenizer_path.name} (nor one of "
            f"{', '.join(KNOWN_EOS)})"
        )
    return facts.eos_ids[job.append_eos]


def facts_of(tok: Tokenizer, xxh3: str, sha256: str) -> TokenizerFacts:
    """The facts of a freshly loaded tokenizer. Leaves it without truncation and padding:
    :func:`configure_tokenizer` sets them for a job."""
    truncation, padding = tok.truncation, tok.padding
    tok.no_truncation()
    tok.no_padding()
    # every id of the vocab and of the added tokens (get_vocab would copy the vocab first)
    ids = [tok.model.max_id()]
    ids += tok.added_vocabulary.content_to_id.values()
    pair_errors = []
    single: list[list[int]] = []
    for add in (False, True):
        try:
            ids += tok.encode_batch_ids(["a"], add, pairs=["b"])[0]
            pair_errors.append("")
        except EncodeError as exc:
            pair_errors.append(str(exc) or type(exc).__name__)
        try:
            single.append(tok.encode_batch_ids(["a"], add)[0])
            ids += single[-1]
        except EncodeError:
            pass  # every row would fail the same way, and say so
    processor = tok.post_processor
    special_ids = _added_around(*single) if len(single) == 2 else ()
    unk_id, byte_ids = _unknown_and_byte_ids(tok)
    return TokenizerFacts(
        xxh3=xxh3,
        sha256=sha256,
        engine_version=__version__,
        max_id=max(ids) if ids else 0,
        vocab_size=tok.get_vocab_size(),
        special_contents=tuple(sorted(tok.added_vocabulary.special_contents)),
        added_single=processor.added_tokens(False) if processor else 0,
        added_pair=processor.added_tokens(True) if processor else 0,
        pair_errors=(pair_errors[0], pair_errors[1]),
        truncation=truncation,
        padding=padding,
        unk_id=unk_id,
        byte_ids=byte_ids,
        eos_ids=_eos_ids(tok),
        special_ids=special_ids,
    )


def _added_around(plain: list[int], special: list[int]) -> tuple[int, ...]:
    """The ids the post-processor put around a text's: ``special`` (the text encoded with
    them) less ``plain`` (without), where ``plain`` stands in it whole."""
    n = len(plain)
    for i in range(len(special) - n + 1):
        if special[i : i + n] == plain:
            return tuple(special[:i] + special[i + n :])
    return tuple(special)


def remembered_facts(state_dir: OutPath, xxh3: str) -> TokenizerFacts | None:
    try:
        text = (state_dir / "tokenizers" / f"{xxh3}.json").read_text(encoding="utf-8")
        facts = TokenizerFacts.from_json(json.loads(text))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if facts.special_ids is None:  # remembered before batchtok kept them: learned again
        return None
    return facts if facts.engine_version == __version__ and facts.xxh3 == xxh3 else None


def remember_facts(state_dir: OutPath, facts: TokenizerFacts) -> None:
    target = state_dir / "tokenizers" / f"{facts.xxh3}.json"
    write_whole(target, json.dumps(facts.to_json()).encode())


def applied_truncation(job: Job, facts: TokenizerFacts) -> dict[str, Any] | None:
    """The truncation the job's rows are encoded with (``enable_truncation``'s arguments), or
    None: the job's numeric ``encode.max_length``, else the tokenizer file's unless "none"."""
    if isinstance(job.max_length, int):
        return {
            "max_length": job.max_length,
            "stride": 0,
            "strategy": job.truncation_strategy,
            "direction": job.truncation_direction,
        }
    return facts.truncation if job.max_length == "tokenizer" else None


def applied_options(job: Job, facts: TokenizerFacts) -> dict[str, Any]:
    """The options that decide the ids, as applied (part of every shard's cache key): where a
    truncation came from does not matter, only what it is."""
    return {
        "add_special_tokens": job.add_special_tokens,
        "special_tokens_in_text": job.special_tokens_in_text,
        "truncation": applied_truncation(job, facts),
    }


def described_options(job: Job, facts: TokenizerFacts) -> dict[str, Any]:
    """:func:`applied_options` with where the truncation came from and the padding left out,
    for the output's metadata."""
    truncation = applied_truncation(job, facts)
    source = "job" if isinstance(job.max_length, int) else "tokenizer file"
    return {
        **applied_options(job, facts),
        "truncation_from": source if truncation else None,
        "padding": None,
        "tokenizer_padding_not_applied": facts.padding,
    }


def check_against_job(job: Job, facts: TokenizerFacts) -> None:
    """The job options that depend on the tokenizer: dtype range, pairs and truncation."""
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
    pair_error = facts.pair_errors[job.add_special_tokens]
    if job.pair_column and pair_error:
        problems.append(
            job.problem(
                "input.pair_column",
                f"{job.tokenizer_path.name} cannot encode pairs: {pair_error}",
            )
        )
    truncation = applied_truncation(job, facts)
    if truncation is not None:
        problems += _truncation_problems(job, facts, truncation)
    try:
        eos_id(job, facts)
    except KeyError as exc:
        problems.append(job.problem("output.append_eos", exc.args[0]))
    if problems:
        raise JobError(problems, str(job.file or ""))


def _truncation_problems(job: Job, facts: TokenizerFacts, truncation: dict) -> list:
    from_job = isinstance(job.max_length, int)
    whose = "" if from_job else f"the truncation in {job.tokenizer_path.name}: "
    fix = "" if from_job else '; set encode.max_length to a number or "none"'
    max_length, stride = truncation["max_length"], truncation["stride"]
    added = (facts.added_pair if job.pair_column else facts.added_single) * job.add_special_tokens
    if max_length < added:
        return [
            job.problem(
                "encode.max_length",
                f"{whose}max_length {max_length} is less than the {added} special tokens the "
                f"post-processor adds (tokenizers would then not truncate at all); use at least "
                f"{added}{fix}",
            )
        ]
    if max_length > added and stride >= max_length - added:
        return [
            job.problem(
                "encode.max_length",
                f"{whose}stride {stride} is not below max_length {max_length} less the {added} "
                f"special tokens (tokenizers fails on every row it truncates){fix}",
            )
        ]
    if truncation["strategy"] == "only_second" and not job.pair_column:
        return [
            job.problem(
                "encode.max_length",
                f'{whose}strategy "only_second" truncates the pair, but input.pair_column is not '
                f"set (tokenizers fails on every row it truncates){fix}",
            )
        ]
    return []


def configure_tokenizer(tok: Tokenizer, job: Job, facts: TokenizerFacts) -> None:
    """Set the job's options on the loaded tokenizer: truncation (:func:`applied_truncation`),
    no padding, special-token strings in text, the piece cache's memory. Raises JobError where
    the engine refuses."""
    tok.encode_special_tokens = job.special_tokens_in_text == "text"
    tok.set_cache_size(job.cache_mb)
    tok.no_padding()
    truncation = applied_truncation(job, facts)
    if truncation is None:
        tok.no_truncation()
        return
    try:
        tok.enable_truncation(**truncation)
    except ValueError as exc:
        raise JobError(
            [job.problem("encode.max_length", f"the engine refuses this truncation: {exc}")],
            str(job.file or ""),
        ) from exc


class SpecialCounter:
    """Counts special-token strings inside texts (a plain scan, leftmost-longest).

    Texts are scanned joined, up to :data:`JOIN_CHARS` at a time, by a separator that no
    special token's string holds: no match can then span two texts, and every match within
    one is the match it would be alone, so the counts are those of each text scanned by
    itself, at one scan a group instead of one a text.
    """

    def __init__(self, contents: Sequence[str]) -> None:
        ordered = sorted(contents, key=lambda c: (-len(c), c))
        self.pattern = re.compile("|".join(map(re.escape, ordered))) if ordered else None
        prefixes = {c[:2] for c in ordered}
        self.prefixes = tuple(prefixes) if len(prefixes) <= 8 else ()
        used = set("".join(ordered))
        # an empty string would match between texts too: such contents scan text by text
        self.separator = (
            None
            if "" in prefixes
            else next(chr(c) for c in range(sys.maxunicode + 1) if chr(c) not in used)
        )

    def count(self, texts: Sequence[str], into: Counter) -> None:
        if self.pattern is None:
            return
        findall = self.pattern.findall
        prefixes = self.prefixes
        for text in self._groups(texts):
            if prefixes and not any(p in text for p in prefixes):
                continue
            found = findall(text)
            if found:
                into.update(found)

    def _groups(self, texts: Sequence[str]) -> Iterator[str]:
        """The texts joined by the separator, at most :data:`JOIN_CHARS` chars a group
        unless one text alone is longer (it goes by itself, never copied)."""
        if self.separator is None:
            yield from texts
            return
        group: list[str] = []
        chars = 0
        for text in texts:
            if chars + len(text) > JOIN_CHARS and group:
                yield self.separator.join(group)
                group, chars = [], 0
            group.append(text)
            chars += len(text) + 1
        if group:
            yield self.separator.join(group)  # (one text's join is that text, not a copy)


def memo_cost(key: str | tuple[str, str], ids: list[int]) -> int:
    """Bytes a memo entry holds: the key's objects, the list, and the dict's share (its slot
    and growth). Id ints are not counted: they are the tokenizer cache's own objects."""
    size = sys.getsizeof(ids) + MEMO_ENTRY_BYTES
    if type(key) is tuple:
        return size + sys.getsizeof(key) + sys.getsizeof(key[0]) + sys.getsizeof(key[1])
    return size + sys.getsizeof(key)


MEMO_ENTRY_BYTES = 100  # a dict slot and index with growth headroom, averaged (measured)


class Encoder:
    """Ids for a list of texts (and pairs) with the tokenizer as :func:`configure_tokenizer`
    set it; identical inputs are encoded once per shard (up to ``memo_bytes`` remembered,
    counted as :func:`memo_cost` does; a batch is always deduplicated whole)."""

    def __init__(
        self, tok: Tokenizer, add_special_tokens: bool, memo_bytes: int = MEMO_BYTES
    ) -> None:
        self.tok = tok
        self.add = add_special_tokens
        self.memo: dict[str | tuple[str, str], list[int]] = {}
        self.memo_budget = memo_bytes
        self.memo_used = 0
        # the engine's batch call that gives one flat array (a stand-in may lack it)
        self._flat = getattr(tok, "encode_batch_ids_flat", None)

    def _encode_all(self, keys: list) -> list[list[int]]:
        if not keys or type(keys[0]) is str:
            return self.tok.encode_batch_ids(keys, self.add)
        return self.tok.encode_batch_ids([k[0] for k in keys], self.add, [k[1] for k in keys])

    def encode_into(
        self, texts: list[str], pairs: list[str] | None, values: array
    ) -> tuple[list[int | None], dict[int, str]]:
        """Append each input's ids to ``values`` in order; returns (ids appended per input,
        None where the engine could not encode it; {index: error}).

        Texts without pairs go to the engine's ``encode_batch_ids_flat`` as one batch (its
        ids as one array, no Python int per id), not through the memo: on text that does not
        repeat, the memo's lists and dict cost more than the piece table's hits save. A
        single text over :data:`LONG_CHARS` is encoded straight into ``values`` (the engine
        streams its pieces), never remembered: memory stays near the text plus its ids.
        """
        long = (
            set() if pairs is not None else {i for i, t in enumerate(texts) if len(t) > LONG_CHARS}
        )
        if pairs is None and not long and self._flat is not None:
            try:
                flat, offsets = self._flat(texts, self.add)
            except Exception:  # noqa: BLE001 - the rows one by one below find the one at fault
                pass
            else:
                values.frombytes(flat.astype(values.typecode, copy=False).tobytes())
                return (offsets[1:] - offsets[:-1]).tolist(), {}
        short = [i for i in range(len(texts)) if i not in long]
        encoded, short_errors = (
            self.encode(
                [texts[i] for i in short], None if pairs is None else [pairs[i] for i in short]
            )
            if long
            else self.encode(texts, pairs)
        )
        errors = {short[j]: message for j, message in short_errors.items()}
        found = iter(encoded)
        lengths: list[int | None] = []
        for i, text in enumerate(texts):
            if i in long:
                try:
                    lengths.append(self.tok.encode_ids_into(text, values, self.add))
                except Exception as exc:  # noqa: BLE001 - one row at fault, not the batch
                    errors[i] = f"{type(exc).__name__}: {exc}"
                    lengths.append(None)
                continue
            ids = next(found)
            if ids is None:
                lengths.append(None)
            else:
                values.fromlist(ids)
                lengths.append(len(ids))
        return lengths, errors

    def encode(
        self, texts: list[str], pairs: list[str] | None = None
    ) -> tuple[list[list[int] | None], dict[int, str]]:
        """(ids per text, {index: error} for inputs the engine could not encode)."""
        memo = self.memo
        keys: list = texts if pairs is None else list(zip(texts, pairs))
        out: list[list[int] | None] = [memo.get(k) for k in keys]
        todo = [i for i, ids in enumerate(out) if ids is None]
        if not todo:
            return out, {}
        todo_keys = [keys[i] for i in todo]
        errors: dict[int, str] = {}
        try:
            fresh: list[list[int] | None] = list(self._encode_all(todo_keys))
        except Exception:  # noqa: BLE001 - find the row(s) at fault, keep the others
            fresh = []
            for i, key in zip(todo, todo_keys):
                try:
                    fresh.append(self._encode_all([key])[0])
                except Exception as exc:  # noqa: BLE001
                    errors[i] = f"{type(exc).__name__}: {exc}"
                    fresh.append(None)
        for i, key, ids in zip(todo, todo_keys, fresh):
            out[i] = ids
            if ids is not None and key not in memo:
                cost = memo_cost(key, ids)
                if self.memo_used + cost > self.memo_budget:
                    memo.clear()
                    self.memo_used = 0
                self.memo_used += cost
                memo[key] = ids
        return out, errors
