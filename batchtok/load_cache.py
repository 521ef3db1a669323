"""A cache of loaded tokenizers on disk, so a tokenizer.json is parsed and its tables built once.

Parsing a large tokenizer.json and building its merge table takes longer in Python than
``tokenizers`` takes to load it (Gemma 3: 33 MB of JSON, 514k merges). ``Tokenizer.from_file``
and ``from_buffer`` therefore keep the loaded tokenizer, pickled, under
``$XDG_CACHE_HOME/batchtok/loaded/`` (``~/.cache/batchtok/loaded/``), one entry per file content:

* the key is the sha256 of the file's bytes; an entry also records a digest of the batchtok
  source, the Python and ``regex`` versions, so any change of code rebuilds it;
* an entry is written to a temporary file, fsynced and renamed: a reader never sees half of
  one; it is read only after its header, length and checksum (xxh3-128 of the parts' sizes
  and bytes: it finds damage, not forgery, which the cache directory's owner alone could
  write; the key, which another file's bytes could try to collide with, is a sha256) check
  out, and an entry that fails any check (or does not unpickle, or is not a Tokenizer) is
  ignored and written again;
* an entry is read in place: the tokenizer's state is pickled inline (not as a pickle inside
  the pickle), the large tables the components mark (:func:`aside`) follow the pickle and are
  read as views of the entry's bytes, and a regular expression keeps its compiled code
  (rebuilding it from its source is pure Python, 80 ms for Gemma 3's added tokens);
* before an entry is written, the unpickled copy must encode and decode a probe text exactly
  as the freshly built tokenizer does;
* files under ``MIN_BYTES`` load fast enough and are not cached; ``KEEP`` entries are kept,
  the least recently used go first;
* ``BATCHTOK_LOAD_CACHE=0`` turns it off; ``BATCHTOK_LOAD_CACHE=/some/dir`` moves it.

Results never depend on the cache: a cached tokenizer is the one the file builds.
"""

from __future__ import annotations

import contextvars
import functools
import hashlib
import importlib
import io
import json
import logging
import mmap
import os
import pickle
import re
import sys
import tempfile
import types
from array import array
from collections.abc import Callable
from pathlib import Path
from typing import Any

import regex
import xxhash

log = logging.getLogger("batchtok")

ENV = "BATCHTOK_LOAD_CACHE"
MAGIC = b"batchtok loaded tokenizer v2\n"
MIN_BYTES = 256 * 1024
KEEP = 16
PROTOCOL = 5
_OFF = ("0", "off", "false", "no")
# Bytes this long that a component marks (aside()) are kept beside an entry's pickle, each
# at a multiple of ALIGN bytes from the entry's start
ASIDE_BYTES = 1 << 16
ALIGN = 64
_ASIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("batchtok_aside", default=False)
# Module-level values kept by reference: a component may compare them by identity.
_PLAIN = (int, float, str, bytes, bool, type(None), types.ModuleType, type)


def cache_dir() -> Path | None:
    """Where entries go, or None when the cache is off."""
    setting = os.environ.get(ENV, "")
    if setting.lower() in _OFF:
        return None
    if setting and setting.lower() not in ("1", "on", "true", "yes"):
        return Path(setting)
    base = os.environ.get("XDG_CACHE_HOME")
    if not base:
        home = os.path.expanduser("~")
        if home == "~":
            return None  # no home directory: nowhere the user expects files
        base = os.path.join(home, ".cache")
    return Path(base) / "batchtok" / "loaded"


@functools.cache
def code_version() -> str:
    """A digest of everything a pickled tokenizer depends on: batchtok's source files, the
    Python and ``regex`` versions."""
    root = Path(__file__).resolve().parent
    digest = hashlib.sha256(f"{sys.version}|regex {regex.__version__}".encode())
    for path in sorted(root.rglob("*.py")):
        digest.update(str(path.relative_to(root)).encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def key_of(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def fetch(data: bytes, sha256: str | None = None) -> Any | None:
    """The tokenizer cached for the file bytes ``data``, or None. ``sha256``: their hex
    sha256 (the key) when the caller has it; the entry also records the file's xxh3-128,
    checked against ``data``, so a wrong one only misses."""
    directory = cache_dir()
    if directory is None or len(data) < MIN_BYTES:
        return None
    key = sha256 or key_of(data)
    path = directory / f"{key}.pickle"
    try:
        blob = _read(path)
    except OSError:
        return None
    try:
        obj = _decode(blob, key, data)
    except Exception as exc:  # a damaged entry of any kind is rebuilt, never trusted
        log.info("load cache: ignoring %s (%s)", path, exc)
        return None
    try:
        os.utime(path)  # most recently used
    except OSError:
        pass
    return obj


def would_store(data: bytes) -> bool:
    """Whether :func:`store` keeps a tokenizer loaded from the file bytes ``data`` (the cache
    is on and the file large enough to be worth it)."""
    return len(data) >= MIN_BYTES and cache_dir() is not None


def store(data: bytes, tok: Any, same: Callable[[Any], bool], sha256: str | None = None) -> None:
    """Keep ``tok`` for the file bytes ``data`` (whose sha256 the caller may have:
    ``sha256``); ``same(copy)`` must confirm that the unpickled copy behaves as ``tok``.
    Failures are logged, never raised."""
    directory = cache_dir()
    if directory is None or len(data) < MIN_BYTES:
        return
    key = sha256 or key_of(data)
    try:
        buffers: list[pickle.PickleBuffer] = []
        payload = dumps(tok, buffers)  # see Tokenizer.__reduce_in_cache__
        if not same(loads(payload, buffers=buffers)):
            log.warning(
                "load cache: an unpickled tokenizer differs from the loaded one; not cached"
            )
            return
        sizes = [len(payload)] + [memoryview(b).nbytes for b in buffers]
        starts = _starts(sizes)
        parts = [payload]
        for i, b in enumerate(buffers, 1):  # each after the padding up to its start
            parts += [bytes(starts[i] - starts[i - 1] - sizes[i - 1]), memoryview(b).cast("B")]
        payload = b"".join(parts)
        header = {
            "code": code_version(),
            "file": key,
            "file_xxh3": xxhash.xxh3_128_hexdigest(data),
            "bytes": len(payload),
            "parts": sizes,  # the pickle, then each buffer it keeps aside
            "xxh3": _checksum(sizes, payload),
        }
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{key}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                line = MAGIC + json.dumps(header).encode()
                line += b" " * (-(len(line) + 1) % ALIGN)  # the payload starts aligned too
                f.write(line + b"\n" + payload)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, directory / f"{key}.pickle")
        except BaseException:
            os.unlink(tmp)
            raise
        _prune(directory)
    except Exception as exc:
        log.info("load cache: not cached (%s: %s)", type(exc).__name__, exc)


def _read(path: Path) -> mmap.mmap:
    """The entry's bytes, mapped (private: what a component writes into a table stays its
    own): reading 56 MB (Gemma 3) into a buffer took 40 ms, mapping them takes none, and the
    tables read in place stay the page cache's pages, shared with forked workers. The
    mapping starts on a page, so the tables are aligned for numpy (an unaligned array takes
    numpy's slow copying loops). An entry is never written in place (see :func:`store`):
    its mapping does not change under a reader."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise OSError(f"{path} is empty")
        return mmap.mmap(f.fileno(), size, access=mmap.ACCESS_COPY)


def _decode(blob: bytes | bytearray | mmap.mmap, key: str, data: bytes) -> Any:
    if blob[: len(MAGIC)] != MAGIC:
        raise ValueError("not an entry of this format")
    end = blob.find(b"\n", len(MAGIC))
    if end < 0:
        raise ValueError("not an entry of this format (no header line)")
    header = json.loads(blob[len(MAGIC) : end])
    payload = memoryview(blob)[end + 1 :]  # not a copy of 20-40 MB
    if header["code"] != code_version():
        raise ValueError("written by another batchtok version")
    if header["file"] != key or header["file_xxh3"] != xxhash.xxh3_128_hexdigest(data):
        raise ValueError("for another file")
    sizes = header["parts"]
    if header["bytes"] != len(payload) or header["xxh3"] != _checksum(sizes, payload):
        raise ValueError("damaged (length or checksum differ)")
    starts = _starts(sizes)
    if starts[-1] + sizes[-1] != len(payload):
        raise ValueError("damaged (its parts do not add up)")
    views = [payload[start : start + size] for start, size in zip(starts[1:], sizes[1:])]
    return loads(payload[: sizes[0]], views)  # the buffers read in place


def _starts(sizes: list[int]) -> list[int]:
    """Where each part of an entry's payload starts: the pickle at 0, each buffer after it at
    the next multiple of ALIGN (the payload itself starts at one)."""
    starts, at = [], 0
    for size in sizes:
        starts.append(at)
        at += size
        at += -at % ALIGN
    return starts


def _checksum(sizes: list[int], payload: bytes | memoryview) -> str:
    """xxh3-128 of an entry's parts' sizes and its bytes: a damaged size is found too."""
    digest = xxhash.xxh3_128(json.dumps(sizes).encode())
    digest.update(payload)
    return digest.hexdigest()


def _prune(directory: Path) -> None:
    entries = sorted(directory.glob("*.pickle"), key=lambda p: p.stat().st_mtime, reverse=True)
    for old in entries[KEEP:]:
        old.unlink(missing_ok=True)


def _module_values() -> dict[int, tuple[str, str]]:
    """id -> (module, name) of every non-plain module-level value of batchtok's modules."""
    out: dict[int, tuple[str, str]] = {}
    for module_name, module in list(sys.modules.items()):
        if module is None or not (module_name == "batchtok" or module_name.startswith("batchtok.")):
            continue
        for name, value in vars(module).items():
            if not isinstance(value, _PLAIN) and not callable(value):
                out.setdefault(id(value), (module_name, name))
    return out


def aside(data: bytes) -> bytes | pickle.PickleBuffer:
    """``data`` (a component's table as bytes, which it reads with ``numpy.frombuffer``) as
    an entry keeps it: beside the pickle, read in place (a memoryview then, not a copy);
    anywhere else, the bytes themselves."""
    if _ASIDE.get() and len(data) >= ASIDE_BYTES:
        return pickle.PickleBuffer(data)
    return data


def dumps(obj: Any, buffers: list[pickle.PickleBuffer] | None = None) -> bytes:
    """A pickle of ``obj`` that keeps batchtok's module-level values by reference (a component
    may compare one by identity, as Unigram does its prefix-only table entry); with
    ``buffers``, what the components mark with :func:`aside` goes there instead."""
    if buffers is not None:
        token = _ASIDE.set(True)
        try:
            return _dumps(obj, buffers.append)
        finally:
            _ASIDE.reset(token)
    return _dumps(obj, None)


def _dumps(obj: Any, buffer_callback: Callable[[pickle.PickleBuffer], None] | None) -> bytes:
    refs = _module_values()

    class Pickler(pickle.Pickler):
        def persistent_id(self, value: Any) -> tuple[str, str] | None:
            return refs.get(id(value))

        def reducer_override(self, value: Any) -> Any:
            in_cache = getattr(type(value), "__reduce_in_cache__", None)
            if in_cache is not None:  # an object that nests a pickle of its own otherwise
                return in_cache(value)
            if type(value) is re.Pattern:
                compiled = _compiled_code(value)
                if compiled is not None:
                    return _pattern, compiled
            return NotImplemented

    buffer = io.BytesIO()
    Pickler(buffer, protocol=PROTOCOL, buffer_callback=buffer_callback).dump(obj)
    return buffer.getvalue()


def _compiled_code(pattern: re.Pattern) -> tuple | None:
    """What ``_sre.compile`` builds ``pattern`` from (its source, flags, compiled code as
    bytes, groups), so that loading it skips the parser and compiler of :mod:`re`, pure Python
    and slow on a large pattern (Gemma 3's 6,415 added tokens: 80 ms of a 0.3 s load). None
    unless rebuilding it from those gives a pattern equal to ``pattern`` (patterns compare
    their code), as on every CPython this was tried on; an entry is read only by the Python
    version that wrote it (see :func:`code_version`)."""
    try:
        import _sre
        from re import _compiler, _parser

        parsed = _parser.parse(pattern.pattern, pattern.flags)
        code = array("I", _compiler._code(parsed, pattern.flags))
        groupindex = dict(parsed.state.groupdict)
        indexgroup: list[str | None] = [None] * parsed.state.groups
        for name, index in groupindex.items():
            indexgroup[index] = name
        args = (
            pattern.pattern,
            pattern.flags | parsed.state.flags,
            code.tobytes(),
            parsed.state.groups - 1,
            groupindex,
            tuple(indexgroup),
        )
        if code.itemsize == _sre.CODESIZE and _rebuilt(*args) == pattern:
            return args
    except Exception:  # noqa: BLE001 - another Python's internals: pickled by its source
        pass
    return None


def _pattern(*args: Any) -> re.Pattern:
    """A pattern rebuilt from its compiled code (``args`` as :func:`_compiled_code` gives)."""
    try:
        return _rebuilt(*args)
    except Exception:  # noqa: BLE001 - never expected: the same Python wrote it
        return re.compile(args[0], args[1])


def _rebuilt(
    source: str | bytes,
    flags: int,
    code: bytes,
    groups: int,
    groupindex: dict[str, int],
    indexgroup: tuple[str | None, ...],
) -> re.Pattern:
    import _sre

    return _sre.compile(source, flags, array("I", code).tolist(), groups, groupindex, indexgroup)


def loads(payload: Any, buffers: Any = None) -> Any:
    """The object :func:`dumps` pickled into ``payload`` (bytes or a view), with the
    ``buffers`` it kept aside."""

    class Unpickler(pickle.Unpickler):
        def persistent_load(self, ref: tuple[str, str]) -> Any:
            module, name = ref
            return getattr(importlib.import_module(module), name)

    return Unpickler(io.BytesIO(payload), buffers=buffers).load()
