"""Job files: TOML read with :mod:`tomllib`, shared pieces included, validated whole.

A job file::

    include = ["../configs/defaults.toml"]     # optional; later files and the job win

    [input]
    paths = ["../data/*.parquet"]              # files, directories (every *.parquet below), globs
    text_column = "text"
    pair_column = "question"                   # optional: encode (text, pair) pairs

    [tokenizer]
    path = "../configs/tokenizers/gpt2/tokenizer.json"

    [encode]
    add_special_tokens = true
    special_tokens_in_text = "special"         # or "text"
    max_length = "tokenizer"                   # the file's truncation; "none"; or a number
    truncation_strategy = "longest_first"      # with a number: also only_first, only_second
    truncation_direction = "right"             # with a number: or "left"

    [output]
    dir = "../out/example"
    ...

Every key, its default and what it accepts is in :data:`SETTINGS` (``batchtok run --help``
prints it as a table). Relative paths are resolved against the directory of the file
that sets them (a job run from cron works from any working directory); paths given on the
command line are resolved against the working directory.

Validation reads the whole file (and its includes) and reports every problem at once, each as
``key: what was expected (got ...)`` with the file that set the key. Checks that need the inputs
or the tokenizer (a missing column, a vocabulary too large for ``uint16``, a truncation shorter
than the special tokens) run later, but still before any work, and name their key the same way.
"""

from __future__ import annotations

import importlib.util
import math
import os
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import InvalidValue, JobError, Problem, reason
from .names import escaped
from .storage import StorageOptions, is_uri
from .store import BOTO3_MISSING, OUTPUT_SCHEMES, OutPath, S3Path, as_path, boto3_available

# ``batchtok audit``'s defaults: rows sampled and the sample's seed
AUDIT_SAMPLE = 1000
AUDIT_SEED = 0

REQUIRED = object()
COMMAND_LINE = "command line"


# -- value checks: each returns the normalized value or raises InvalidValue -------------------


def _shown(value: Any) -> str:
    text = repr(value) if not isinstance(value, bool) else str(value).lower()
    return text if len(text) <= 80 else text[:77] + "..."


def _string(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidValue(f"expected a non-empty string (got {_shown(value)})")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidValue(f"expected true or false (got {_shown(value)})")
    return value


def _choice(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed:
            listed = ", ".join(f'"{a}"' for a in allowed)
            raise InvalidValue(f"expected one of {listed} (got {_shown(value)})")
        return value

    return check


def _positive_number(value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InvalidValue(f"expected a number > 0 (got {_shown(value)})")
    return float(value)


def _string_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        raise InvalidValue(f'expected a list of strings, e.g. ["{value}"] (got a string)')
    if not isinstance(value, list) or not value:
        raise InvalidValue(f"expected a non-empty list of strings (got {_shown(value)})")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise InvalidValue(f"item [{i}]: expected a non-empty string (got {_shown(item)})")
    return tuple(value)


def _optional_string(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidValue(f"expected a string (got {_shown(value)})")
    return value


def _workers(value: Any) -> int:
    if value == "auto":
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidValue(f'expected "auto" or an integer >= 1 (got {_shown(value)})')
    return value


def _keep_columns(value: Any) -> tuple[str, ...] | None:
    if value == "all":
        return None
    if isinstance(value, list) and not value:
        return ()
    if not isinstance(value, list):
        raise InvalidValue(f'expected "all" or a list of column names (got {_shown(value)})')
    names = _string_list(value)
    if len(set(names)) != len(names):
        raise InvalidValue(f"column names must be unique (got {_shown(value)})")
    return names


def _column_name(value: Any) -> str:
    return _string(value)


def _optional_column(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidValue(f'expected a column name, or "" for none (got {_shown(value)})')
    return value


TRUNCATION_WORDS = ("tokenizer", "none")


MAX_LENGTH_LIMIT = 2**31 - 1  # the token-count column is int32
# run.stall_timeout's default. A worker reports progress after each batch it encodes (at most
# run.batch_mb, 8 MB, of text, unless one row is longer: that batch gets the timeout once per
# run.batch_mb it holds), after each 8192 rows it hashes and each row group it joins. Real
# files encode at 1-10 MB/s a worker; the default allows a full batch 0.03 MB/s (an assumed
# floor for a slow or overloaded machine, not a measurement), and uploads are at most one
# 256 MB PUT or one 64 MB part between reports. A stopped worker costs five minutes, not a
# night.
STALL_TIMEOUT = 300.0


def _max_length(value: Any) -> int | str:
    if value in TRUNCATION_WORDS:
        return value
    if isinstance(value, int) and not isinstance(value, bool) and value > MAX_LENGTH_LIMIT:
        raise InvalidValue(
            f'expected at most {MAX_LENGTH_LIMIT} ids (the token counts are int32; "none" '
            f"turns truncation off) (got {_shown(value)})"
        )
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    hint = ' ("none" turns truncation off)' if value == 0 else ""
    raise InvalidValue(
        f'expected "tokenizer", "none" or an integer >= 1 (got {_shown(value)}){hint}'
    )


def _append_eos(value: Any) -> bool | str:
    if isinstance(value, bool) or (isinstance(value, str) and value):
        return value
    raise InvalidValue(f"expected true, false or a token's name (got {_shown(value)})")


def _pack_length(value: Any) -> int | None:
    if value == "none":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_LENGTH_LIMIT:
        return value
    raise InvalidValue(
        f'expected "none" or an integer from 1 to {MAX_LENGTH_LIMIT} (got {_shown(value)})'
    )


def _name(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidValue(f"expected a string (got {_shown(value)})")
    return value


@dataclass(frozen=True)
class Setting:
    key: str
    default: Any
    check: Callable[[Any], Any]
    help: str
    path: bool = False  # resolved against the directory of the file that sets it

    @property
    def shown_default(self) -> str:
        if self.default is REQUIRED:
            return "required"
        if isinstance(self.default, str):
            return f'"{self.default}"'
        return _shown(self.default)


SETTINGS: tuple[Setting, ...] = (
    Setting("name", "", _name, "Job name for logs and the summary (default: the file's name)."),
    Setting(
        "input.paths",
        REQUIRED,
        _string_list,
        "Inputs: files, directories (every *.parquet, *.jsonl and *.ndjson below, in any case, "
        "JSON Lines maybe .gz/.zst; hidden and _-prefixed entries skipped; links followed once) "
        "or globs (** for any depth). A .json file is read when named or globbed as *.json.",
        path=True,
    ),
    Setting("input.text_column", "text", _column_name, "The string column to tokenize."),
    Setting(
        "input.pair_column",
        "",
        _optional_column,
        "A second string column: each row is encoded as the pair (text, pair), as tokenizers "
        'encodes (sequence, pair) inputs; "": single texts.',
    ),
    Setting("tokenizer.path", REQUIRED, _string, "A tokenizer.json file.", path=True),
    Setting(
        "encode.add_special_tokens",
        True,
        _boolean,
        "Add the post-processor's special tokens (BOS/EOS...) around each text.",
    ),
    Setting(
        "encode.special_tokens_in_text",
        "special",
        _choice("special", "text"),
        'What special-token strings inside a text become: "special" (their id, as tokenizers '
        'does by default) or "text" (encoded as ordinary text).',
    ),
    Setting(
        "encode.max_length",
        "tokenizer",
        _max_length,
        'Truncation: "tokenizer" (the tokenizer file\'s own truncation, if any, as tokenizers '
        'applies it), "none" (never truncate), or the number of ids to keep per row, special '
        "tokens included. Only the first window is written (a stride changes nothing here).",
    ),
    Setting(
        "encode.truncation_strategy",
        "longest_first",
        _choice("longest_first", "only_first", "only_second"),
        "Which sequence of a pair loses ids (tokenizers' strategy); only with a numeric "
        "encode.max_length.",
    ),
    Setting(
        "encode.truncation_direction",
        "right",
        _choice("right", "left"),
        '"right" keeps the start of each sequence, "left" its end; only with a numeric '
        "encode.max_length.",
    ),
    Setting("output.dir", REQUIRED, _string, "Output directory.", path=True),
    Setting("output.ids_column", "input_ids", _column_name, "Name of the token-id column."),
    Setting("output.count_column", "num_tokens", _column_name, "Name of the token-count column."),
    Setting(
        "output.dtype",
        "int32",
        _choice("int32", "uint16", "uint32"),
        "Type of the ids (a list of it); uint16 and uint32 only where every id fits.",
    ),
    Setting(
        "output.compression",
        "zstd",
        _choice("zstd", "snappy", "gzip", "brotli", "lz4", "none"),
        "Parquet compression of the output.",
    ),
    Setting(
        "output.format",
        "parquet",
        _choice("parquet", "megatron", "datatrove"),
        'What each input file becomes: "parquet" (its rows with an ids column), "megatron" '
        '(Megatron-LM\'s .bin/.idx indexed dataset) or "datatrove" (a .ds token file with '
        ".ds.index and .ds.metadata, as nanotron reads).",
    ),
    Setting(
        "output.append_eos",
        False,
        _append_eos,
        "Append an end-of-text token to every non-empty document, as Megatron's --append-eod: "
        "true (the file's own: <|endoftext|>, <|end_of_text|>, </s> or <eos>) or its name.",
    ),
    Setting(
        "output.pack_length",
        "none",
        _pack_length,
        "Pack each file's documents (with their EOS) into rows of exactly this many ids, in "
        'order; "none" keeps one row per document. Packed Parquet holds the ids and count '
        "columns only.",
    ),
    Setting(
        "output.pack_keep_last",
        True,
        _boolean,
        "With output.pack_length: keep each file's last, shorter row (false drops it).",
    ),
    Setting(
        "output.keep_columns",
        "all",
        _keep_columns,
        'Input columns copied to the output: "all", or a list of names ([] for none).',
    ),
    Setting(
        "output.row_group_mb",
        64.0,
        _positive_number,
        "Input row groups holding more text than this (MB) are split into several output row "
        "groups; bounds a worker's memory.",
    ),
    Setting(
        "storage.endpoint",
        "",
        _name,
        'For s3:// inputs and outputs: an S3-compatible server ("http://127.0.0.1:9000"); "": AWS. '
        "Credentials come from the AWS environment variables or profiles.",
    ),
    Setting(
        "storage.region",
        "",
        _name,
        'For s3:// inputs and outputs: the region; "": from the environment.',
    ),
    Setting(
        "storage.anonymous",
        False,
        _boolean,
        "For s3:// inputs and outputs: unsigned requests (public buckets, or a server "
        "that takes no credentials).",
    ),
    Setting(
        "run.workers",
        "auto",
        _workers,
        'Worker processes: "auto" (all cores available to this process) or a count.',
    ),
    Setting(
        "run.executor",
        "local",
        _choice("local", "ray"),
        'Where the tasks run: "local" (forked worker processes) or "ray" (actors on a Ray '
        'cluster; pip install "batchtok[ray]"). Same outputs, cache and resume either way.',
    ),
    Setting(
        "run.ray_address",
        "",
        _optional_string,
        'With run.executor = "ray": the cluster to join; "": $RAY_ADDRESS if set, else a '
        "local cluster of run.workers CPUs.",
    ),
    Setting(
        "run.bad_rows",
        "null_ids",
        _choice("null_ids", "empty_ids", "skip", "fail"),
        "A row whose text is null (or cannot be encoded): write null ids, write empty ids, "
        "leave the row out, or fail the run. Counted and logged with file and row either way.",
    ),
    Setting(
        "run.shard_mb",
        32.0,
        _positive_number,
        "Target text per shard (MB, whole row groups): a crash loses at most one shard of work "
        "per worker.",
    ),
    Setting(
        "run.batch_mb",
        8.0,
        _positive_number,
        "Text read and encoded at a time by a worker (MB); bounds memory, not the output.",
    ),
    Setting(
        "run.stall_timeout",
        STALL_TIMEOUT,
        _positive_number,
        "Seconds a worker may go without reporting progress before it is killed and its task "
        "retried in a fresh worker (a stopped process, a hung read); a batch holding more "
        "than run.batch_mb of text (one long row) is allowed this much per run.batch_mb.",
    ),
    Setting(
        "run.cache_mb",
        48.0,
        _positive_number,
        "Memory a worker gives its cache of encoded pieces (MB, estimated): larger is faster "
        "on varied text, and a worker's memory stays flat however large the input.",
    ),
)

BY_KEY = {s.key: s for s in SETTINGS}
SECTIONS = sorted({s.key.split(".")[0] for s in SETTINGS if "." in s.key})
TOP_LEVEL = sorted({s.key for s in SETTINGS if "." not in s.key} | {"include"})


def settings_table() -> str:
    """Every key with its default, one a line (for --help and docs)."""
    width = max(len(s.key) for s in SETTINGS)
    shown = max(len(s.shown_default) for s in SETTINGS)
    return "\n".join(f"{s.key:<{width}}  {s.shown_default:<{shown}}  {s.help}" for s in SETTINGS)


# -- the job -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """A validated job. Paths are absolute; ``sources`` says where each key was set."""

    file: Path | None
    name: str
    inputs: tuple[str, ...]
    text_column: str
    pair_column: str | None
    tokenizer_path: OutPath  # a local file or an s3:// object
    add_special_tokens: bool
    special_tokens_in_text: str
    max_length: int | str  # a count, or "tokenizer" / "none"
    truncation_strategy: str
    truncation_direction: str
    output_dir: OutPath  # a local directory or an s3:// prefix
    ids_column: str
    count_column: str
    dtype: str
    compression: str
    keep_columns: tuple[str, ...] | None
    row_group_mb: float
    workers: int
    bad_rows: str
    shard_mb: float
    batch_mb: float
    cache_mb: float
    storage: StorageOptions = StorageOptions()
    format: str = "parquet"
    append_eos: bool | str = False
    pack_length: int | None = None
    pack_keep_last: bool = True
    executor: str = "local"
    ray_address: str = ""
    stall_timeout: float = STALL_TIMEOUT
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def problem(self, key: str, message: str) -> Problem:
        return Problem(key, message, self.sources.get(key, ""))

    def encode_options(self) -> dict[str, Any]:
        """The encode settings as the job gives them (the cache key holds the options they
        resolve to with the tokenizer: see :func:`batchtok.runner.encode.applied_options`)."""
        return {
            "add_special_tokens": self.add_special_tokens,
            "special_tokens_in_text": self.special_tokens_in_text,
            "max_length": self.max_length,
            "truncation_strategy": self.truncation_strategy,
            "truncation_direction": self.truncation_direction,
        }

    def output_format(self) -> dict[str, Any]:
        """The options that decide the output file's bytes besides the ids."""
        return {
            "ids_column": self.ids_column,
            "count_column": self.count_column,
            "dtype": self.dtype,
            "compression": self.compression,
            "bad_rows": self.bad_rows,
            "row_group_mb": self.row_group_mb,
            "format": self.format,
            "append_eos": self.append_eos,
            "pack_length": self.pack_length,
            "pack_keep_last": self.pack_keep_last,
        }

    @property
    def derived_output(self) -> bool:
        """The output is built from parts when a file is complete (a trainer format, or packed
        rows), not row groups copied in place."""
        return self.format != "parquet" or self.pack_length is not None

    def describe(self) -> dict[str, Any]:
        """Every setting, as JSON-friendly values (for the run summary)."""
        return {
            "name": self.name,
            "file": str(self.file) if self.file else None,
            "inputs": list(self.inputs),
            "text_column": self.text_column,
            "pair_column": self.pair_column,
            "tokenizer": str(self.tokenizer_path),
            "encode": self.encode_options(),
            "output": {
                "dir": str(self.output_dir),
                **self.output_format(),
                "keep_columns": "all" if self.keep_columns is None else list(self.keep_columns),
            },
            "run": {
                "workers": self.workers or "auto",
                "executor": self.executor,
                "shard_mb": self.shard_mb,
                "batch_mb": self.batch_mb,
                "cache_mb": self.cache_mb,
                "stall_timeout": self.stall_timeout,
            },
        }


# -- reading files -------------------------------------------------------------------------


@dataclass
class _Value:
    value: Any
    source: str  # file that set it, or COMMAND_LINE
    base: Path  # directory relative paths are resolved against


def _flatten(
    data: dict, source: str, base: Path, out: dict[str, _Value], problems: list[Problem]
) -> None:
    for top, value in data.items():
        if top == "include":
            continue
        if top in TOP_LEVEL:
            out[top] = _Value(value, source, base)
            continue
        if top not in SECTIONS:
            hint = _suggest(top, SECTIONS + TOP_LEVEL)
            problems.append(
                Problem(
                    top,
                    f"unknown key or section{hint}; expected sections "
                    + ", ".join(f"[{s}]" for s in SECTIONS),
                    source,
                )
            )
            continue
        if not isinstance(value, dict):
            problems.append(Problem(top, f"expected a table [{top}] (got {_shown(value)})", source))
            continue
        for key, inner in value.items():
            dotted = f"{top}.{key}"
            if dotted not in BY_KEY:
                known = [s.key.split(".", 1)[1] for s in SETTINGS if s.key.startswith(top + ".")]
                problems.append(
                    Problem(
                        dotted,
                        f"unknown key{_suggest(key, known, top + '.')}; [{top}] accepts "
                        + ", ".join(known),
                        source,
                    )
                )
                continue
            out[dotted] = _Value(inner, source, base)


def _suggest(word: str, choices: list[str], prefix: str = "") -> str:
    import difflib  # only a job with an unknown key reads it

    close = difflib.get_close_matches(word, choices, n=1)
    return f" (did you mean {prefix}{close[0]}?)" if close else ""


def _read_toml(path: Path, shown: str, problems: list[Problem], key: str, source: str) -> dict:
    try:
        with open(path, "rb") as f:
            return tomllib.load(f)
    except FileNotFoundError:
        problems.append(Problem(key, f"file not found: {shown}", source))
    except tomllib.TOMLDecodeError as exc:
        problems.append(Problem(key, f"{shown} is not valid TOML: {exc}", source))
    except OSError as exc:
        problems.append(Problem(key, f"cannot read {shown}: {reason(exc)}", source))
    return {}


def _load_file(
    path: Path,
    out: dict[str, _Value],
    problems: list[Problem],
    stack: tuple[Path, ...],
    key: str,
    source: str,
) -> None:
    shown = display_path(path)
    data = _read_toml(path, shown, problems, key, source)
    includes = data.get("include", [])
    if isinstance(includes, str):
        includes = [includes]
    if not isinstance(includes, list) or not all(isinstance(i, str) and i for i in includes):
        problems.append(
            Problem("include", f"expected a list of file paths (got {_shown(includes)})", shown)
        )
        includes = []
    for entry in includes:
        target = (path.parent / entry).resolve()
        if target in stack:
            chain = " -> ".join(display_path(p) for p in (*stack, target))
            problems.append(Problem("include", f"includes itself: {chain}", shown))
            continue
        _load_file(target, out, problems, (*stack, target), "include", shown)
    _flatten(data, shown, path.parent, out, problems)


def display_path(path: str | os.PathLike[str] | S3Path) -> str:
    """The path as the user likely typed it: relative to the working directory if below it;
    an object in storage as its URI (``s3://bucket/key``); a name that is not UTF-8
    :func:`escaped`."""
    if isinstance(path, S3Path) or (isinstance(path, str) and is_uri(path)):
        return str(path)
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return escaped(os.fspath(path))
    return escaped(os.fspath(path) if rel.startswith("..") else rel)


def parse_override(assignment: str) -> tuple[str, Any]:
    """``"output.dtype=uint16"`` -> ``("output.dtype", "uint16")``; the value is read as TOML
    (``512``, ``true``, ``["a", "b"]``) and taken as a plain string when it is not TOML."""
    key, sep, raw = assignment.partition("=")
    key = key.strip()
    if not sep or not key:
        raise JobError([Problem(key or assignment, "expected KEY=VALUE", COMMAND_LINE)])
    raw = raw.strip()
    try:
        value = tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw
    return key, value


def load_job(
    path: str | os.PathLike[str] | None,
    overrides: Mapping[str, Any] | None = None,
    *,
    cwd: str | os.PathLike[str] | None = None,
) -> Job:
    """Read, merge and validate a job file; ``overrides`` (dotted keys, from the command line)
    win over the file. Raises :class:`JobError` listing every problem."""
    values: dict[str, _Value] = {}
    problems: list[Problem] = []
    job_file = Path(path).resolve() if path is not None else None
    shown = display_path(job_file) if job_file else COMMAND_LINE
    if job_file is not None:
        if job_file.is_dir():
            raise JobError([Problem("job", f"{shown} is a directory, expected a .toml file")])
        _load_file(job_file, values, problems, (job_file,), "job", "")
        if problems and problems[0].key == "job":  # unreadable: nothing else is worth saying
            raise JobError(problems[:1], shown)
    base = Path(cwd).resolve() if cwd is not None else Path.cwd()
    for key, value in (overrides or {}).items():
        if key not in BY_KEY:
            hint = _suggest(key, list(BY_KEY))
            problems.append(Problem(key, f"unknown key{hint}", COMMAND_LINE))
            continue
        values[key] = _Value(value, COMMAND_LINE, base)

    resolved: dict[str, Any] = {}
    for setting in SETTINGS:
        entry = values.get(setting.key)
        if entry is None:
            if setting.default is REQUIRED:
                problems.append(Problem(setting.key, "required key is missing"))
                continue
            resolved[setting.key] = setting.check(setting.default)
            continue
        try:
            value = setting.check(entry.value)
        except InvalidValue as exc:
            problems.append(Problem(setting.key, str(exc), entry.source))
            continue
        if setting.path:
            value = _resolve_paths(value, entry.base)
        resolved[setting.key] = value
    sources = {k: v.source for k, v in values.items()}
    if not problems:
        problems += _cross_checks(resolved, sources)
    if problems:
        raise JobError(problems, shown)
    name = resolved["name"] or (job_file.stem if job_file else "job")
    return Job(
        file=job_file,
        name=name,
        inputs=resolved["input.paths"],
        text_column=resolved["input.text_column"],
        pair_column=resolved["input.pair_column"] or None,
        tokenizer_path=as_path(resolved["tokenizer.path"]),
        add_special_tokens=resolved["encode.add_special_tokens"],
        special_tokens_in_text=resolved["encode.special_tokens_in_text"],
        max_length=resolved["encode.max_length"],
        truncation_strategy=resolved["encode.truncation_strategy"],
        truncation_direction=resolved["encode.truncation_direction"],
        output_dir=as_path(resolved["output.dir"]),
        ids_column=resolved["output.ids_column"],
        count_column=resolved["output.count_column"],
        dtype=resolved["output.dtype"],
        compression=resolved["output.compression"],
        keep_columns=resolved["output.keep_columns"],
        row_group_mb=resolved["output.row_group_mb"],
        storage=StorageOptions(
            endpoint=resolved["storage.endpoint"],
            region=resolved["storage.region"],
            anonymous=resolved["storage.anonymous"],
        ),
        format=resolved["output.format"],
        append_eos=resolved["output.append_eos"],
        pack_length=resolved["output.pack_length"],
        pack_keep_last=resolved["output.pack_keep_last"],
        workers=resolved["run.workers"],
        bad_rows=resolved["run.bad_rows"],
        shard_mb=resolved["run.shard_mb"],
        batch_mb=resolved["run.batch_mb"],
        cache_mb=resolved["run.cache_mb"],
        executor=resolved["run.executor"],
        ray_address=resolved["run.ray_address"],
        stall_timeout=resolved["run.stall_timeout"],
        sources=sources,
    )


def _resolve_paths(value: Any, base: Path) -> Any:
    if isinstance(value, tuple):
        return tuple(_resolve_one(v, base) for v in value)
    return _resolve_one(value, base)


def _resolve_one(value: str, base: Path) -> str:
    if is_uri(value):  # object storage: never relative to the job file
        return value
    expanded = os.path.expanduser(value)
    return os.path.normpath(os.path.join(base, expanded))


def _cross_checks(resolved: dict[str, Any], sources: dict[str, str]) -> list[Problem]:
    problems = []

    def problem(key: str, message: str) -> None:
        problems.append(Problem(key, message, sources.get(key, "")))

    text, pair = resolved["input.text_column"], resolved["input.pair_column"]
    if pair == text:
        problem("input.pair_column", f'must differ from input.text_column (both are "{text}")')
    max_length = resolved["encode.max_length"]
    if not isinstance(max_length, int):
        for key in ("encode.truncation_strategy", "encode.truncation_direction"):
            if key in sources:
                problem(
                    key,
                    f'applies only with a numeric encode.max_length (got "{max_length}"); the '
                    "tokenizer file's truncation keeps its own",
                )
    if resolved["encode.truncation_strategy"] == "only_second" and not pair:
        problem(
            "encode.truncation_strategy",
            '"only_second" truncates the pair, but input.pair_column is not set',
        )
    for key in ("output.dir", "tokenizer.path"):
        scheme = resolved[key].partition("://")[0] if is_uri(resolved[key]) else ""
        if scheme and scheme not in OUTPUT_SCHEMES:
            problem(key, f"must be a local path or an s3:// URI, not {scheme}:// (not supported)")
        elif scheme and not resolved[key].partition("://")[2].strip("/"):
            problem(key, f"names no bucket: {resolved[key]}")
    if is_uri(resolved["output.dir"]) and not boto3_available():
        problem("output.dir", BOTO3_MISSING)
    if resolved["run.executor"] == "ray" and importlib.util.find_spec("ray") is None:
        problem("run.executor", 'Ray is not installed: pip install "batchtok[ray]"')
    if resolved["run.ray_address"] and resolved["run.executor"] != "ray":
        problem("run.ray_address", 'applies only with run.executor = "ray"')
    ids, count = resolved["output.ids_column"], resolved["output.count_column"]
    if ids == count:
        problem("output.count_column", f'must differ from output.ids_column (both are "{ids}")')
    return problems
