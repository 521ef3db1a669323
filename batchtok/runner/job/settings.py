"""Every job key once: its default, the check of its value and its help (:data:`SETTINGS`,
which drives validation, ``batchtok run --help`` and docs/job-keys.md)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidValue
from ..outputs.formats import DEFAULT_FORMAT, FORMATS

# ``batchtok audit``'s defaults: rows sampled and the sample's seed
AUDIT_SAMPLE = 1000
AUDIT_SEED = 0

REQUIRED = object()
COMMAND_LINE = "command line"


# -- value checks: each returns the normalized value or raises InvalidValue -------------------


def shown_value(value: Any) -> str:
    text = repr(value) if not isinstance(value, bool) else str(value).lower()
    return text if len(text) <= 80 else text[:77] + "..."


def _string(value: Any) -> str:
    if not isinstance(value, str) or not value:
        raise InvalidValue(f"expected a non-empty string (got {shown_value(value)})")
    return value


def _boolean(value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidValue(f"expected true or false (got {shown_value(value)})")
    return value


def _choice(*allowed: str) -> Callable[[Any], str]:
    def check(value: Any) -> str:
        if value not in allowed:
            listed = ", ".join(f'"{a}"' for a in allowed)
            raise InvalidValue(f"expected one of {listed} (got {shown_value(value)})")
        return value

    return check


def _positive_number(value: Any) -> float:
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InvalidValue(f"expected a number > 0 (got {shown_value(value)})")
    return float(value)


def _string_list(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        raise InvalidValue(f'expected a list of strings, e.g. ["{value}"] (got a string)')
    if not isinstance(value, list) or not value:
        raise InvalidValue(f"expected a non-empty list of strings (got {shown_value(value)})")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item:
            raise InvalidValue(f"item [{i}]: expected a non-empty string (got {shown_value(item)})")
    return tuple(value)


def _optional_string(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidValue(f"expected a string (got {shown_value(value)})")
    return value


def _workers(value: Any) -> int:
    if value == "auto":
        return 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidValue(f'expected "auto" or an integer >= 1 (got {shown_value(value)})')
    return value


def _keep_columns(value: Any) -> tuple[str, ...] | None:
    if value == "all":
        return None
    if isinstance(value, list) and not value:
        return ()
    if not isinstance(value, list):
        raise InvalidValue(f'expected "all" or a list of column names (got {shown_value(value)})')
    names = _string_list(value)
    if len(set(names)) != len(names):
        raise InvalidValue(f"column names must be unique (got {shown_value(value)})")
    return names


def _column_name(value: Any) -> str:
    return _string(value)


def _optional_column(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidValue(f'expected a column name, or "" for none (got {shown_value(value)})')
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
            f"turns truncation off) (got {shown_value(value)})"
        )
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    hint = ' ("none" turns truncation off)' if value == 0 else ""
    raise InvalidValue(
        f'expected "tokenizer", "none" or an integer >= 1 (got {shown_value(value)}){hint}'
    )


def _append_eos(value: Any) -> bool | str:
    if isinstance(value, bool) or (isinstance(value, str) and value):
        return value
    raise InvalidValue(f"expected true, false or a token's name (got {shown_value(value)})")


def _pack_length(value: Any) -> int | None:
    if value == "none":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= MAX_LENGTH_LIMIT:
        return value
    raise InvalidValue(
        f'expected "none" or an integer from 1 to {MAX_LENGTH_LIMIT} (got {shown_value(value)})'
    )


def _optional_count(minimum: int) -> Callable[[Any], int | None]:
    def check(value: Any) -> int | None:
        if value == "none":
            return None
        if isinstance(value, int) and not isinstance(value, bool) and value >= minimum:
            return value
        raise InvalidValue(f'expected "none" or an integer >= {minimum} (got {shown_value(value)})')

    return check


def _path_or_none(value: Any) -> str:
    return value if value == "" else _string(value)


def _named_paths(value: Any) -> dict[str, str]:
    if not isinstance(value, dict):
        raise InvalidValue(
            f'expected a table of names and tokenizer files, e.g. {{gpt2 = "gpt2/tokenizer.json"}} '
            f"(got {shown_value(value)})"
        )
    for name, path in value.items():
        if not name or "/" in name or name.startswith((".", "_")):
            raise InvalidValue(
                f'the name {name!r} names a directory of output.dir: it must not hold "/" or '
                'start with "." or "_"'
            )
        if not isinstance(path, str) or not path:
            raise InvalidValue(
                f"{name}: expected a tokenizer file's path (got {shown_value(path)})"
            )
    return dict(value)


def _seed(value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise InvalidValue(f"expected an integer >= 0 (got {shown_value(value)})")


def _window(value: Any) -> int | None:
    if value == "all":
        return None
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    raise InvalidValue(f'expected "all" or an integer >= 1 (got {shown_value(value)})')


def _name(value: Any) -> str:
    if not isinstance(value, str):
        raise InvalidValue(f"expected a string (got {shown_value(value)})")
    return value


@dataclass(frozen=True)
class Setting:
    """A job key, declared once: validation, ``--help``, docs/job-keys.md and the typed
    :class:`~batchtok.runner.job.spec.Job` all read it."""

    key: str
    default: Any
    check: Callable[[Any], Any]
    help: str
    path: bool = False  # resolved against the directory of the file that sets it
    #: the attribute of the Job (or of its StorageOptions, for ``storage.*``) the value fills;
    #: "": the key's last part
    field: str = ""
    #: the value decides the bytes of the outputs: it is in every shard's cache key and in
    #: each output's metadata (``Job.output_format()``)
    output: bool = False
    #: like ``output``, but only when set to other than its default: a key added after
    #: outputs were cached, so that a job leaving it alone keeps its cache keys
    key_when_set: bool = False

    @property
    def attribute(self) -> str:
        return self.field or self.key.rpartition(".")[2]

    @property
    def shown_default(self) -> str:
        if self.default is REQUIRED:
            return "required"
        if isinstance(self.default, str):
            return f'"{self.default}"'
        return shown_value(self.default)


SETTINGS: tuple[Setting, ...] = (
    Setting("name", "", _name, "Job name for logs and the summary (default: the file's name)."),
    Setting(
        "input.paths",
        REQUIRED,
        _string_list,
        "Inputs: files, directories (every *.parquet, *.jsonl, *.ndjson, *.arrow, *.arrows and "
        "*.feather below, in any case, JSON Lines maybe .gz/.zst; a datasets save_to_disk "
        "directory gives the files its state.json lists; hidden and _-prefixed entries skipped; "
        "links followed once) or globs (** for any depth). A .json file is read when named or "
        "globbed as *.json.",
        path=True,
        field="inputs",
    ),
    Setting("input.text_column", "text", _column_name, "The string column to tokenize."),
    Setting(
        "input.pair_column",
        "",
        _optional_column,
        "A second string column: each row is encoded as the pair (text, pair), as tokenizers "
        'encodes (sequence, pair) inputs; "": single texts.',
    ),
    Setting(
        "input.id_column",
        "",
        _optional_column,
        "With output.provenance: an input column (a document's id, its URL) copied into each "
        'entry of the provenance file, under its own name; "": none.',
        key_when_set=True,
    ),
    Setting(
        "tokenizer.path",
        "",
        _path_or_none,
        "A tokenizer.json file (required, unless tokenizer.paths names several).",
        path=True,
        field="tokenizer_path",
    ),
    Setting(
        "tokenizer.paths",
        {},
        _named_paths,
        'Several tokenizers in one pass, by name ([tokenizer.paths] llama3 = "..."): each '
        "shard is read once and encoded by each; each tokenizer's outputs go to "
        "output.dir/NAME, with their own cache, records and summary, and a comparison "
        "report beside them.",
        path=True,
        field="tokenizers",
    ),
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
    Setting("output.dir", REQUIRED, _string, "Output directory.", path=True, field="output_dir"),
    Setting(
        "output.ids_column", "input_ids", _column_name, "Name of the token-id column.", output=True
    ),
    Setting(
        "output.count_column",
        "num_tokens",
        _column_name,
        "Name of the token-count column.",
        output=True,
    ),
    Setting(
        "output.dtype",
        "int32",
        _choice("int32", "uint16", "uint32"),
        "Type of the ids (a list of it; MDS's ndarray column, int32 as llm-foundry's); uint16 "
        "and uint32 only where every id fits.",
        output=True,
    ),
    Setting(
        "output.compression",
        "zstd",
        _choice("zstd", "snappy", "gzip", "brotli", "lz4", "none"),
        "Parquet compression of the output.",
        output=True,
    ),
    Setting(
        "output.format",
        DEFAULT_FORMAT,
        _choice(*FORMATS),
        'What each input file becomes: "parquet" (its rows with an ids column), "megatron" '
        '(Megatron-LM\'s .bin/.idx indexed dataset), "datatrove" (a .ds token file with '
        '.ds.index and .ds.metadata, as nanotron reads) or "mds" (a NAME.mds/ directory of '
        "MosaicML streaming shards and index.json, as llm-foundry writes).",
        output=True,
    ),
    Setting(
        "output.append_eos",
        False,
        _append_eos,
        "Append an end-of-text token to every non-empty document, as Megatron's --append-eod: "
        "true (the file's own: <|endoftext|>, <|end_of_text|>, </s> or <eos>) or its name.",
        output=True,
    ),
    Setting(
        "output.pack_length",
        "none",
        _pack_length,
        "Pack each file's documents (with their EOS) into rows of exactly this many ids, in "
        'order; "none" keeps one row per document. Packed Parquet holds the ids and count '
        "columns and seq_lens (the lengths of the document pieces in the row, in order).",
        output=True,
    ),
    Setting(
        "output.position_ids",
        False,
        _boolean,
        "With output.pack_length and Parquet: a position_ids column too, counting from 0 at "
        "the start of each document piece of the row.",
        key_when_set=True,
    ),
    Setting(
        "output.pack_keep_last",
        True,
        _boolean,
        "With output.pack_length: keep each file's last, shorter row (false drops it).",
        output=True,
    ),
    Setting(
        "output.layout",
        "mirror",
        _choice("mirror", "stream"),
        '"mirror": each input file has its own output, named as it is; "stream": the whole '
        "job is one stream of documents, in the plan's order (inputs sorted by name), written "
        "to NAME-00000, NAME-00001... in output.dir (NAME: the job's name).",
    ),
    Setting(
        "output.max_tokens_per_file",
        "none",
        _optional_count(1),
        "Cut each output into numbered files of at most this many ids (a document, or packed "
        "row, whole; a longer document is a file alone): NAME-00000.parquet, NAME-00000.bin "
        'and .idx... "none": one file per output.',
    ),
    Setting(
        "output.shuffle_seed",
        "none",
        _optional_count(0),
        "Shuffle the documents before packing and cutting, the same for a seed whatever the "
        "workers or executor: within each input's output (mirror), or across the job in "
        'windows of output.shuffle_window ids (stream). "none": the plan\'s order.',
    ),
    Setting(
        "output.shuffle_window",
        1_000_000_000,
        _window,
        "With output.shuffle_seed: documents are shuffled within windows of consecutive "
        'documents holding at most this many ids; "all": one window. Assembling a file reads '
        "the parts of the windows it draws from.",
    ),
    Setting(
        "output.provenance",
        False,
        _boolean,
        "With packed rows or a trainer format: write NAME.docs.parquet beside each output, one "
        "row per document (per document piece of a packed row) naming the input and row it came "
        "from: source, row, line (JSON Lines), tokens, start (in its document), output_row and "
        "offset (where it is in the output), and input.id_column's value.",
        key_when_set=True,
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
        output=True,
    ),
    Setting(
        "storage.endpoint",
        "",
        _name,
        "The object store's endpoint for every object location of the job: for s3://, an "
        'S3-compatible server ("http://127.0.0.1:9000"); for gs://, the API endpoint; for az://, '
        'the account URL. "": the cloud\'s standard environment (AWS_ENDPOINT_URL_S3, '
        "AWS_ENDPOINT_URL or the profile's endpoint_url; STORAGE_EMULATOR_HOST; "
        "AZURE_STORAGE_CONNECTION_STRING or AZURE_STORAGE_ACCOUNT_NAME), else the cloud's own. "
        "Credentials come from that environment only.",
    ),
    Setting(
        "storage.region",
        "",
        _name,
        'For s3:// inputs and outputs: the region; "": AWS_REGION or AWS_DEFAULT_REGION if set, '
        "else the SDK's default.",
    ),
    Setting(
        "storage.anonymous",
        False,
        _boolean,
        "For object locations: unsigned requests (public buckets or containers, or a server "
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
        output=True,
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
        "report.group_column",
        "",
        _optional_column,
        "An input column (a language, a source) whose values the token statistics are also "
        "counted by: documents, tokens and bytes a token per value, in the summary and the "
        'comparison of several tokenizers; "": none. Setting it encodes once more (the '
        "statistics are cached with the shards).",
        key_when_set=True,
    ),
    Setting(
        "check.sample_mb",
        2.0,
        _positive_number,
        "batchtok check: text sampled (MB), rows drawn over every input and shard.",
        field="check_sample_mb",
    ),
    Setting(
        "check.seed",
        0,
        _seed,
        "batchtok check: the sample's seed (the same seed, the same rows).",
        field="check_seed",
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
