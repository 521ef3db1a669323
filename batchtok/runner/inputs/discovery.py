"""Which files a job's ``input.paths`` name, and where each one's output goes.

**Which names are inputs.** A directory, an object-store prefix, or a glob whose last part does
not spell out an extension (``data/*``, ``**``) gives, below it, the files whose name ends,
in any case, in ``.parquet``, ``.jsonl`` or ``.ndjson`` (the last two plain, ``.gz`` or
``.zst``), or ``.arrow``, ``.arrows`` or ``.feather`` (Arrow IPC). Case does not matter because
tools that write data sets differ on it
(``PART-0.PARQUET``): a file silently left out is lost data, while a file taken in is still
checked when it is read. ``.json`` is not picked there: data directories hold ``.json``
metadata (``dataset_info.json``, ``state.json``, ``MANIFEST.json``, another job's
``*.batchtok.json`` sidecars) that would be read as lines of bad rows. A ``.json`` file is an
input when a path names it, or a glob names the extension (``*.json``, ``*.json.gz``); a glob
naming any extension (``*.pq``) takes each of its matches. A batchtok sidecar is never an
input, and those metadata names come from a glob only when it spells the name out.

**Hugging Face ``datasets`` directories.** A directory found in a walk (a directory input, or
below one; an object-store prefix likewise) whose ``state.json`` is a ``datasets`` state
(``Dataset.save_to_disk``'s, with its ``_data_files`` list) gives exactly the files that list
names, in its order, and nothing else of that directory (a warning counts the Arrow files left
out). Inputs are otherwise ordered by name; a directory's listed files keep their list's
order, before the rest of that directory. A glob takes the files it matches as files.

**Symbolic links.** A walk (a directory input, a glob) follows a link to a directory once: each
directory is entered by its real path at most once, the real tree before any link, so a link
loop ends the walk and a file reachable both directly and through a link is found by its
direct path and mirrored there in the output. A link to a directory or a file outside the tree
is followed and named by the link. Two paths to one file (by real path) are one input, the
first ``input.paths`` entry naming it giving its output name.

Names are the file system's bytes (a name that is not UTF-8 is carried as Python's
surrogate-escaped ``str``), so an output's name mirrors its input's exactly.
"""

from __future__ import annotations

import fnmatch
import glob
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path

from batchtok.formats.files import SIDECAR

from ..errors import JobError, Problem
from ..io.arrow_fs import is_uri, list_files, open_input
from ..io.names import escaped
from ..io.stores import store_of
from ..job import Job
from . import arrow_ipc, jsonl
from .arrow_ipc import STATE_FILE, dataset_files, is_arrow
from .jsonl import PLAIN_SUFFIXES, jsonl_compression

MAX_LISTED = 20  # problems listed per key before "... and N more"
METADATA_NAMES = frozenset({"dataset_info.json", "state.json", "manifest.json"})


def capped(problems: list[Problem]) -> list[Problem]:
    """The first :data:`MAX_LISTED` problems, then one saying how many more there are."""
    if len(problems) <= MAX_LISTED:
        return problems
    more = Problem("...", f"and {len(problems) - MAX_LISTED} more problems")
    return [*problems[:MAX_LISTED], more]


def _plain_suffix(name: str) -> str:
    """``.jsonl``, ``.json`` or ``.ndjson`` for a JSON Lines name (compressed or not), ``""``
    for any other."""
    lower = name.lower()
    codec = jsonl_compression(lower)
    if codec is False:
        return ""
    if codec is not None:
        lower = lower.rsplit(".", 1)[0]
    return next(s for s in PLAIN_SUFFIXES if lower.endswith(s))


def is_sidecar(name: str) -> bool:
    """A trainer-format output's sidecar (another job's, maybe): never an input."""
    return name.lower().endswith(SIDECAR)


def picked_by_extension(name: str) -> bool:
    """Whether a file found in a directory, a prefix or a glob not naming an extension is an
    input: ``*.parquet``, JSON Lines by ``.jsonl``/``.ndjson`` (any case, maybe ``.gz`` or
    ``.zst``), Arrow by ``.arrow``/``.arrows``/``.feather``; never ``.json`` (see the module's
    docstring)."""
    if name.lower().endswith(".parquet") or is_arrow(name):
        return True
    return _plain_suffix(name) in (".jsonl", ".ndjson")


def output_name(rel: str) -> str:
    """The output's name for an input's: a JSON Lines or Arrow input's gets ``.parquet``
    (``a/b.jsonl.gz``, ``a/b.arrow`` -> ``a/b.parquet``), a Parquet input's is its own."""
    return arrow_ipc.output_name(rel) if is_arrow(rel) else jsonl.output_name(rel)


Match = tuple[str, str, bool]  # (path or URI, name relative to its walk's top, through a link)


def taken_as_datasets(
    job: Job,
    files: list[Match],
    read: Callable[[str], bytes],
    problems: list[Problem],
    warnings: list[str],
) -> tuple[list[Match], dict[str, str]]:
    """Of every file a walk found (``files``), the inputs: in a directory whose ``state.json``
    is a ``datasets`` state, the files it lists; elsewhere those :func:`picked_by_extension`.
    And, by name, where each listed file sorts (its directory, then its place in the list).
    ``read``: a file's bytes."""
    states: dict[str, str] = {}  # directory (relative) -> its state.json
    for path, rel, _link in files:
        folder, _, name = rel.rpartition("/")
        if name == STATE_FILE:
            states[folder] = path
    listed: dict[str, list[str]] = {}
    for folder, path in states.items():
        try:
            names = dataset_files(read(path))
        except OSError:
            continue  # unreadable: not taken as a datasets directory, its files by extension
        except ValueError as exc:
            problems.append(job.problem("input.paths", f"{escaped(path)}: {exc}"))
            continue
        if names is not None:
            listed[folder] = names
    members = {f"{d}/{n}" if d else n for d, names in listed.items() for n in names}
    kept = [
        m
        for m in files
        if m[1] not in members
        and m[1].rpartition("/")[0] not in listed
        and picked_by_extension(m[1].rpartition("/")[2])
    ]
    by_rel = {m[1]: m for m in files}
    order: dict[str, str] = {}
    for folder, names in listed.items():
        base = states[folder][: -len(STATE_FILE)]
        for k, name in enumerate(names):
            rel = f"{folder}/{name}" if folder else name
            if rel not in by_rel:
                problems.append(
                    job.problem(
                        "input.paths",
                        f"{escaped(states[folder])} lists {escaped(name)}, which is not there",
                    )
                )
                continue
            kept.append(by_rel[rel])
            # before the rest of its directory (no name holds a NUL), in the list's order
            order[rel] = f"{folder}/\0{k:012d}" if folder else f"\0{k:012d}"
        left = [
            m[1]
            for m in files
            if m[1].rpartition("/")[0] == folder
            and m[1] not in members
            and is_arrow(m[1].rpartition("/")[2])
        ]
        if left:
            warnings.append(
                f"{escaped(base)} is a datasets directory: its {len(left)} Arrow files its "
                f"{STATE_FILE} does not list are left out (e.g. {escaped(left[0])})"
            )
    return kept, order


def _names_extension(pattern: str) -> bool:
    """Whether a glob's last part ends in a literal extension (``*.json``, ``x.*.pq``), so
    that it chose its files' type itself."""
    last = Path(pattern).name
    tail = last[max(last.rfind(c) for c in "*?]") + 1 :]
    return "." in tail


def _metadata(name: str) -> bool:
    return name.lower() in METADATA_NAMES or is_sidecar(name)


def _hidden(name: str) -> bool:
    return name.startswith((".", "_"))


def _glob_base(pattern: str) -> str:
    """The directory part of a glob before its first wildcard."""
    base: list[str] = []
    for part in Path(pattern).parts:
        if glob.has_magic(part):
            break
        base.append(part)
    return str(Path(*base)) if base else os.sep


def _glob_parts(pattern: str) -> tuple[str, ...]:
    """The parts of a glob after :func:`_glob_base`."""
    parts = Path(pattern).parts
    return parts[len(Path(_glob_base(pattern)).parts) :]


def _matches(parts: tuple[str, ...], pat: tuple[str, ...]) -> bool:
    """Whether a relative path matches glob parts, ``**`` standing for any number of
    directories (as :func:`glob.glob` with ``recursive=True``, case-sensitive)."""
    if not pat:
        return not parts
    if pat[0] == "**":
        return any(_matches(parts[k:], pat[1:]) for k in range(len(parts) + 1))
    return bool(parts) and fnmatch.fnmatchcase(parts[0], pat[0]) and _matches(parts[1:], pat[1:])


def _may_hold_match(parts: tuple[str, ...], pat: tuple[str, ...]) -> bool:
    """Whether a directory at relative path ``parts`` may hold a match of glob parts."""
    for k, name in enumerate(parts):
        if k >= len(pat) - 1:
            return pat[k:] == ("**",) if k < len(pat) else False
        if pat[k] == "**":
            return True
        if not fnmatch.fnmatchcase(name, pat[k]):
            return False
    return True


def _dir_id(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def walk(
    top: str,
    enter: Callable[[tuple[str, ...]], bool] = lambda _parts: True,
    skip: tuple[str, ...] = (),
) -> Iterator[tuple[str, tuple[str, ...], bool]]:
    """(path, its parts relative to ``top``, whether a link led there) of every file below
    ``top``, hidden names (``.``, ``_``) left out.

    Each directory is entered once by its identity (device and inode), the real tree first:
    links to directories are followed only after every directory reachable without one, so
    a loop ends and a file is reached by its direct path where it has one. ``enter`` says
    whether a directory (by its relative parts) is worth entering; ``skip``: directories
    never entered (the output directory)."""
    seen = {i for i in map(_dir_id, (top, *skip)) if i is not None}
    pending: list[tuple[str, tuple[str, ...], bool]] = [(top, (), False)]
    links: list[tuple[str, tuple[str, ...]]] = []
    while pending or links:
        if not pending:  # the shallowest link first, then by name: the same on every run
            links.sort(key=lambda link: (len(link[1]), link[1]))
            path, parts = links.pop(0)
            ident = _dir_id(path)
            if ident is None or ident in seen:
                continue
            seen.add(ident)
            pending.append((path, parts, True))
        directory, parts, via_link = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue  # unreadable or gone: its files are not found, as glob.glob does
        for entry in entries:
            if _hidden(entry.name):
                continue
            sub = (*parts, entry.name)
            try:
                is_dir = entry.is_dir()
                is_link = entry.is_symlink()
            except OSError:
                continue
            if is_dir:
                if not enter(sub):
                    continue
                if is_link:
                    links.append((entry.path, sub))
                    continue
                ident = _dir_id(entry.path)
                if ident is not None and ident not in seen:
                    seen.add(ident)
                    pending.append((entry.path, sub, via_link))
            elif is_link or entry.is_file():  # a broken link too: reading it says so
                yield entry.path, sub, True if is_link else via_link


def _below(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _inside(path: str, directory: str) -> bool:
    return _below(os.path.realpath(path), os.path.realpath(directory))


def _glob_matches(pattern: str, out_dir: str) -> tuple[list[Match], str]:
    """(path, output-relative name, reached through a link) of a local glob's files, and the
    warning if there are none."""
    base, pat = _glob_base(pattern), _glob_parts(pattern)
    named = _names_extension(pattern)
    literal = not glob.has_magic(pat[-1])  # the file's name spelled out (in/*/state.json)
    found = [
        (path, "/".join(parts), link)
        for path, parts, link in walk(base, lambda p: _may_hold_match(p, pat), (out_dir,))
        if _matches(parts, pat)
        and not is_sidecar(parts[-1])
        and (picked_by_extension(parts[-1]) or (named and (literal or not _metadata(parts[-1]))))
    ]
    return found, "" if found else f"{escaped(pattern)} matches no input file"


def _read_local(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


NO_INPUT = "no *.parquet, JSON Lines or Arrow (*.arrow, *.arrows, *.feather)"


def _entry(
    job: Job, i: int, pattern: str, problems: list[Problem], warnings: list[str]
) -> tuple[list[Match], bool, dict[str, str]] | None:
    """The files one ``input.paths`` entry gives, whether it names one file (taken whatever
    its extension), and where the files of ``datasets`` directories sort (see
    :func:`taken_as_datasets`); None with the problem appended."""
    key = f"input.paths[{i}]"
    out_dir = str(job.output_dir)
    if is_uri(pattern):
        try:
            listed = list_files(pattern, job.storage)
        except Exception as exc:  # OSError; an fsspec file system's own (a network failure)
            problems.append(job.problem("input.paths", f"cannot list {pattern}: {exc}"))
            return None
        if listed is None:
            problems.append(job.problem("input.paths", f"no such object or prefix: {pattern}"))
            return None
        objects, named = listed
        if named:
            return [(u, r, False) for u, r in objects], True, {}

        def read(uri: str) -> bytes:
            f = open_input(uri, job.storage)
            try:
                return f.read()
            finally:
                f.close()

        files = [(u, r, False) for u, r in objects]
        matches, order = taken_as_datasets(job, files, read, problems, warnings)
        if not matches:
            warnings.append(f"{key}: {pattern} holds {NO_INPUT} object")
        return matches, False, order
    magic = glob.has_magic(pattern)
    root = _glob_base(pattern) if magic else pattern
    try:
        found = os.stat(root)
    except OSError:
        found = None
    if found is not None and stat.S_ISDIR(found.st_mode) and _inside(root, out_dir):
        problems.append(
            job.problem(
                "output.dir",
                f"{escaped(out_dir)} holds the input directory {escaped(root)}; outputs would "
                "mix with (or overwrite) inputs: choose an output directory outside it",
            )
        )
        return None
    if magic:
        matches, warning = _glob_matches(pattern, out_dir)
        if warning:
            warnings.append(f"{key}: {warning}")
        return matches, False, {}
    if found is not None and stat.S_ISDIR(found.st_mode):
        files = [(p, "/".join(parts), link) for p, parts, link in walk(pattern, skip=(out_dir,))]
        matches, order = taken_as_datasets(job, files, _read_local, problems, warnings)
        if not matches:
            warnings.append(f"{key}: directory {escaped(pattern)} holds {NO_INPUT} file")
        return matches, False, order
    if found is None or not stat.S_ISREG(found.st_mode):
        problems.append(
            job.problem("input.paths", f"no such file or directory: {escaped(pattern)}")
        )
        return None
    if is_sidecar(pattern):
        problems.append(
            job.problem(
                "input.paths",
                f"{escaped(pattern)} is a batchtok sidecar (another job's output), not an "
                "input: name its data file or directory instead",
            )
        )
        return None
    if _inside(pattern, out_dir):
        problems.append(
            job.problem("input.paths", f"{escaped(pattern)} is inside output.dir ({out_dir})")
        )
        return None
    return [(pattern, os.path.basename(pattern), False)], True, {}


def expand_inputs(job: Job) -> tuple[list[tuple[str, str]], list[str]]:
    """(absolute path or URI, output-relative name) of every input file, sorted by name (a
    ``datasets`` directory's files in its list's order), and warnings; :class:`JobError`
    naming ``input.paths`` if one names nothing usable.

    What is picked is the module docstring's rule. Globs' matches are named relative to the
    glob's directory part, a directory's files relative to it, a named file by its file name.
    Files inside the output directory are never inputs, so an output directory inside an input
    tree is safe."""
    problems: list[Problem] = []
    warnings: list[str] = []
    found: dict[str, tuple[str, int]] = {}  # output name -> (path, index of the pattern)
    sort_keys: dict[str, str] = {}  # output name -> where it sorts, if not by itself
    seen: set[str] = set()  # real paths (URIs) taken
    out_real = os.path.realpath(str(job.output_dir))
    to_objects = not store_of(job.output_dir).renames
    for i, pattern in enumerate(job.inputs):
        entry = _entry(job, i, pattern, problems, warnings)
        if entry is None:
            continue
        matches, named, order = entry
        # A file reached by its direct path wins over the same file through a link.
        for path, rel, _link in sorted(matches, key=lambda m: (m[2], m[1])):
            uri = is_uri(path)
            real = path if uri else os.path.realpath(path)
            if real in seen or (not named and any(map(_hidden, rel.split("/")))):
                continue
            if not uri and _below(real, out_real):
                continue  # an output (a named file there was refused by _entry)
            seen.add(real)
            sort_key = order.get(rel)
            rel = output_name(rel)
            if to_objects and escaped(rel) != rel:
                problems.append(
                    job.problem(
                        "input.paths",
                        f"the name of {escaped(path)} is not UTF-8, which object-storage keys "
                        "must be: rename it, or write to a local output.dir",
                    )
                )
                continue
            if rel in found:
                other, j = found[rel]
                problems.append(
                    job.problem(
                        "input.paths",
                        f"{escaped(path)} (from [{i}]) and {escaped(other)} (from [{j}]) would "
                        f"both be written to {escaped(rel)} in output.dir; give them distinct "
                        "names or one directory",
                    )
                )
                continue
            found[rel] = (path if uri else os.path.abspath(path), i)
            if sort_key is not None:
                sort_keys[rel] = sort_key
    if not problems and not found:
        problems.append(job.problem("input.paths", "no input file found"))
    if problems:
        raise JobError(capped(problems), str(job.file or ""))
    pairs = [(p, rel) for rel, (p, _) in found.items()]
    return sorted(pairs, key=lambda x: sort_keys.get(x[1], x[1])), warnings
