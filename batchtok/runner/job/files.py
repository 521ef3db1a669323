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
import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batchtok.formats.provenance import COLUMNS as PROVENANCE_COLUMNS

from ..errors import InvalidValue, JobError, Problem, reason
from ..io.arrow_fs import StorageOptions, is_uri
from ..io.names import escaped
from ..io.stores import STORES, OutPath, as_path, scheme_of
from ..outputs.formats import FORMATS
from .settings import BY_KEY, COMMAND_LINE, REQUIRED, SECTIONS, SETTINGS, TOP_LEVEL, shown_value
from .spec import Job

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
            problems.append(
                Problem(top, f"expected a table [{top}] (got {shown_value(value)})", source)
            )
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
            Problem(
                "include", f"expected a list of file paths (got {shown_value(includes)})", shown
            )
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


def display_path(path: str | os.PathLike[str] | OutPath) -> str:
    """The path as the user likely typed it: relative to the working directory if below it;
    an object in storage as its URI (``s3://bucket/key``); a name that is not UTF-8
    :func:`escaped`."""
    if scheme_of(path):
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
    return _job(job_file, resolved, sources)


def _job(job_file: Path | None, resolved: dict[str, Any], sources: dict[str, str]) -> Job:
    """The typed job of the validated values: each setting fills its attribute
    (:attr:`Setting.attribute`), ``storage.*`` the job's StorageOptions."""
    storage = StorageOptions(
        **{s.attribute: resolved[s.key] for s in SETTINGS if s.key.startswith("storage.")}
    )
    several = resolved["tokenizer.paths"]
    tokenizer = resolved["tokenizer.path"] or next(iter(several.values()), "")
    locations = (*resolved["input.paths"], tokenizer, *several.values(), resolved["output.dir"])
    if any(map(is_uri, locations)):  # what the keys leave empty, from the AWS environment
        # (reading a profile imports botocore: 0.15 s)
        storage = storage.with_environment({scheme_of(where) for where in locations})
    values = {s.attribute: resolved[s.key] for s in SETTINGS if not s.key.startswith("storage.")}
    values.update(
        name=resolved["name"] or (job_file.stem if job_file else "job"),
        pair_column=resolved["input.pair_column"] or None,
        # an object's path carries the options its requests go with
        tokenizer_path=as_path(tokenizer, storage),
        output_dir=as_path(resolved["output.dir"], storage),
    )
    return Job(file=job_file, storage=storage, sources=sources, **values)


def _resolve_paths(value: Any, base: Path) -> Any:
    if isinstance(value, dict):
        return {k: _resolve_one(v, base) for k, v in value.items()}
    if isinstance(value, tuple):
        return tuple(_resolve_one(v, base) for v in value)
    return _resolve_one(value, base)


def _resolve_one(value: str, base: Path) -> str:
    if not value or is_uri(value):  # ("": none)  # object storage: never relative to the job file
        return value
    expanded = os.path.expanduser(value)
    return os.path.normpath(os.path.join(base, expanded))


def _layout_checks(resolved: dict[str, Any], sources: dict[str, str], problem: Any) -> None:
    """The keys that cut outputs into files and shuffle them, with the others."""
    most, pack = resolved["output.max_tokens_per_file"], resolved["output.pack_length"]
    if most is not None and pack is not None and pack > most:
        problem(
            "output.max_tokens_per_file",
            f"is {most}, fewer than one packed row (output.pack_length = {pack}): a file holds "
            "whole rows",
        )
    seed = resolved["output.shuffle_seed"]
    if "output.shuffle_window" in sources and seed is None:
        problem("output.shuffle_window", "applies only with output.shuffle_seed set")
    cut = resolved["output.layout"] == "stream" or most is not None or seed is not None
    keep = resolved["output.keep_columns"]
    if cut and "output.keep_columns" in sources and keep:
        why = (
            'output.layout = "stream"'
            if resolved["output.layout"] == "stream"
            else "output.max_tokens_per_file"
            if most is not None
            else "output.shuffle_seed"
        )
        problem(
            "output.keep_columns",
            f"applies to an output whose rows are its input's, not with {why}: its files hold "
            "ids (output.provenance names each document's input row)",
        )
    if resolved["output.layout"] == "stream":
        name = resolved["name"]
        if name and ("/" in name or name.startswith(".")):
            problem(
                "name",
                f'names the files of output.layout = "stream" ({name}-00000...): it must not '
                'hold "/" or start with "."',
            )


def _cross_checks(resolved: dict[str, Any], sources: dict[str, str]) -> list[Problem]:
    problems = []

    def problem(key: str, message: str) -> None:
        problems.append(Problem(key, message, sources.get(key, "")))

    several = resolved["tokenizer.paths"]
    if not resolved["tokenizer.path"] and not several:
        problem("tokenizer.path", "required key is missing (or tokenizer.paths, for several)")
    elif resolved["tokenizer.path"] and several:
        if sources.get("tokenizer.paths") == COMMAND_LINE != sources.get("tokenizer.path"):
            resolved["tokenizer.path"] = ""  # the command line's several replace the file's one
        else:
            problem("tokenizer.paths", "names several tokenizers, and tokenizer.path one: set one")
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
        scheme = scheme_of(resolved[key])
        if scheme not in STORES:
            known = ", ".join(f"{s}://" for s in STORES if s)
            problem(
                key,
                f"must be a local path or a URI of a store batchtok writes ({known}), not "
                f"{scheme}:// (not supported)",
            )
        elif scheme and not resolved[key].partition("://")[2].strip("/"):
            problem(key, f"names no bucket: {resolved[key]}")
    missing = STORES.get(scheme_of(resolved["output.dir"]))
    if missing is not None and (why := missing.unavailable()):
        problem("output.dir", why)
    if resolved["run.executor"] == "ray" and importlib.util.find_spec("ray") is None:
        problem("run.executor", 'Ray is not installed: pip install "batchtok[ray]"')
    if resolved["run.ray_address"] and resolved["run.executor"] != "ray":
        problem("run.ray_address", 'applies only with run.executor = "ray"')
    ids, count = resolved["output.ids_column"], resolved["output.count_column"]
    if ids == count:
        problem("output.count_column", f'must differ from output.ids_column (both are "{ids}")')
    if resolved["output.position_ids"]:
        if resolved["output.pack_length"] is None:
            problem("output.position_ids", "applies only with output.pack_length set")
        elif FORMATS[name := resolved["output.format"]].token_file:
            problem("output.position_ids", f'applies to packed Parquet, not output.format "{name}"')
    packed, name = resolved["output.pack_length"] is not None, resolved["output.format"]
    if resolved["output.provenance"] and not packed and not FORMATS[name].token_file:
        problem(
            "output.provenance",
            "applies to packed rows or a trainer format, whose rows are not the input's: set "
            f'output.pack_length, or an output.format other than "{name}" (plain Parquet rows '
            "are the input's rows in order; output.keep_columns keeps its id column)",
        )
    identity = resolved["input.id_column"]
    if identity and not resolved["output.provenance"]:
        problem("input.id_column", "applies only with output.provenance = true")
    elif identity in (*PROVENANCE_COLUMNS, ids, count):
        problem(
            "input.id_column",
            f'"{identity}" is a column of the provenance file or of the output; rename the '
            "input's column",
        )
    _layout_checks(resolved, sources, problem)
    if resolved["output.pack_length"] is not None:
        for name in ("seq_lens", "position_ids"):
            for key in ("output.ids_column", "output.count_column"):
                if resolved[key] == name:
                    problem(key, f'"{name}" is a column of packed rows (output.pack_length)')
    return problems
