"""What every trainer format shares: the error, the streaming token-file writer, the atomic
publication of a file set, and the provenance sidecar.

A writer streams each document's ids into one data file under the caller's ``tmp_dir`` (which
must be on the destination's file system, so that a rename is atomic) and keeps one int32
length per document, 4 bytes a document, never the tokens. Closing it writes the index files
from those lengths, fsyncs every file, and publishes the set in the format's order:

1. the format's *primary* file (the one its readers open first: Megatron's ``.idx``,
   datatrove's ``.ds``, MDS's ``index.json``) is removed if an older one is there, so an old
   index never pairs with a new data file;
2. the files of the older set that the new one lacks (``previous``; MDS's extra shards) are
   removed, then the other files are renamed into place one by one, the directory fsynced
   after each;
3. the primary file is renamed into place last.

So a visible primary file always has every other file of its set, complete and of the same
write; a crash between steps leaves the set without its primary file (treated as absent, and
written again by the next run) plus at most temporary files in ``tmp_dir``. The provenance
sidecar ``<name>.batchtok.json`` is one of the non-primary files: whenever the primary file is
visible, the sidecar beside it describes it (it records every file's size, which
:func:`read_sidecar` checks, and every file's xxh3-128, hashed while it was written: the runner
compares it under ``--verify`` and whenever a file's stat changed since it was written).

Readers validate everything they rely on and raise :class:`FormatError` naming the file and
what is wrong with it.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import tempfile
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from itertools import repeat
from typing import Any, BinaryIO

import pyarrow as pa
import xxhash

from .access import LOCAL, FileAccess

# Array typecodes of the token dtypes a writer may be asked for (the runner's names).
TYPECODES = {"uint16": "H", "int32": "i", "uint32": "I"}
# Per-document lengths are kept and written this many documents at a time.
CHUNK = 1 << 16
_COPY_BUFFER = 1 << 20
_MAX_LENGTH = 2**31 - 1


class FormatError(ValueError):
    """A trainer-format file that is missing, truncated or inconsistent; the message names the
    file and what is wrong."""

    def __init__(self, path: str | os.PathLike[str], problem: str) -> None:
        self.path = os.fspath(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


def fsync_dir(path: str | os.PathLike[str]) -> None:
    """Make a rename in ``path`` durable (best effort: some file systems refuse)."""
    with contextlib.suppress(OSError):
        fd = os.open(path or ".", os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def token_bytes(ids: Any, typecode: str) -> memoryview:
    """The bytes of ``ids`` (a sequence of ints: list, array or 1-d ndarray) as little-endian
    values of ``typecode``; ValueError if an id does not fit it."""
    source = _arrow_type(ids) if _LITTLE and len(ids) >= _ARROW_MIN else None
    try:
        if source is not None and source != _ARROW_TYPES[typecode]:
            # Through Arrow an id costs ~1 ns, through array() ~70 ns (an int object each).
            values = pa.Array.from_buffers(source, len(ids), [None, pa.py_buffer(ids)])
            cast = values.cast(_ARROW_TYPES[typecode])
            return memoryview(cast.buffers()[1].slice(0, len(ids) * cast.type.bit_width // 8))
        if isinstance(ids, array) and ids.typecode == typecode:
            out = ids
        else:
            out = array(typecode, ids)
    except (OverflowError, pa.ArrowInvalid) as exc:
        raise ValueError(f"an id does not fit the token type {typecode!r}: {exc}") from exc
    if not _LITTLE:
        out = array(typecode, out)
        out.byteswap()
    return memoryview(out).cast("B")


_LITTLE = sys.byteorder == "little"
_ARROW_MIN = 256  # shorter documents: pyarrow's per-call cost exceeds array()'s
# Arrow's integer types by (kind, bytes), numpy's typestr letters: pyarrow needs numpy to read a
# dtype string, and batchtok runs without numpy.
_ARROW_INTS = {
    ("i", 1): pa.int8(),
    ("u", 1): pa.uint8(),
    ("i", 2): pa.int16(),
    ("u", 2): pa.uint16(),
    ("i", 4): pa.int32(),
    ("u", 4): pa.uint32(),
    ("i", 8): pa.int64(),
    ("u", 8): pa.uint64(),
}
_ARROW_TYPES = {
    code: _ARROW_INTS["u" if code.isupper() else "i", array(code).itemsize] for code in "bBhHiIlLqQ"
}


def _arrow_type(ids: Any) -> pa.DataType | None:
    """The Arrow integer type of an array or C-contiguous ndarray's buffer, else None."""
    if isinstance(ids, array):
        return _ARROW_TYPES.get(ids.typecode)
    interface = getattr(ids, "__array_interface__", None)
    if not interface or interface.get("strides") is not None or len(interface["shape"]) != 1:
        return None
    kind, size = interface["typestr"][1], int(interface["typestr"][2:])
    if kind not in "iu" or interface["typestr"][0] == ">":
        return None
    return _ARROW_INTS.get((kind, size))


def packed_lengths(tokens: int, pack_length: int) -> Iterator[array]:
    """The row lengths (int32 arrays, a chunk at a time) of ``tokens`` tokens cut into rows of
    ``pack_length``, the last one shorter if they do not divide evenly."""
    full, tail = divmod(tokens, pack_length)
    for start in range(0, full, CHUNK):
        yield array("i", repeat(pack_length, min(CHUNK, full - start)))
    if tail:
        yield array("i", [tail])


def chunks(values: array) -> Iterator[array]:
    for start in range(0, len(values), CHUNK):
        yield values[start : start + CHUNK]


def little_endian(values: array) -> bytes:
    if sys.byteorder == "big":
        values = array(values.typecode, values)
        values.byteswap()
    return values.tobytes()


def read_array(f: BinaryIO, typecode: str, count: int, path: str, what: str) -> array:
    """``count`` little-endian values of ``typecode`` from ``f``; FormatError if short."""
    out = array(typecode)
    data = f.read(count * out.itemsize)
    if len(data) != count * out.itemsize:
        raise FormatError(path, f"truncated: {what} ends early")
    out.frombytes(data)
    if sys.byteorder == "big":
        out.byteswap()
    return out


def file_size(path: str, files: FileAccess = LOCAL) -> int:
    try:
        return files.size(path)
    except FileNotFoundError:
        raise FormatError(path, "missing") from None


class TokenFileWriter:
    """Streams documents into a format's data file and publishes the format's file set.

    Subclasses set ``data_suffix`` (and ``data_is_primary`` when the data file is the one
    readers open first) and implement :meth:`index_files` (the other files' suffixes and
    contents, the primary one last). ``pack_length`` makes the published rows
    exactly that many tokens each (see :mod:`batchtok.formats.packing`); then only the token
    count is kept, not one length per document. ``publisher`` puts the staged files in place
    (default :func:`publish`, renames; object storage gives its own, in the same order).
    """

    format_name = ""
    data_suffix = ""
    data_is_primary = False

    def __init__(
        self,
        dest: str,
        tmp_dir: str,
        dtype: str,
        provenance: dict[str, Any] | None = None,
        pack_length: int | None = None,
        keep_last: bool = True,
        publisher: Callable[[Sequence[tuple[str, str]]], None] | None = None,
        previous: Iterable[str] = (),
    ) -> None:
        if dtype not in TYPECODES:
            raise ValueError(f"token dtype {dtype!r} is not one of {sorted(TYPECODES)}")
        if pack_length is not None and pack_length < 1:
            raise ValueError(f"pack_length must be at least 1, not {pack_length}")
        self.dest = os.fspath(dest)
        self.tmp_dir = os.fspath(tmp_dir)
        self.dtype = dtype
        self.typecode = TYPECODES[dtype]
        self.itemsize = array(self.typecode).itemsize
        self.provenance = dict(provenance or {})
        self.pack_length = pack_length
        self.keep_last = keep_last
        self.publisher = publisher or publish
        # the files of an older set at this destination: those the new set lacks are removed
        # when it is published (a format whose set varies: MDS's shards)
        self.previous = [os.fspath(p) for p in previous]
        self.lengths = array("i")  # per document; unused when packing
        self.tokens = 0
        self.documents = 0
        self._tmp: list[str] = []
        self._data: BinaryIO | None = None
        # A dropped short tail (keep_last=False) is fewer than pack_length tokens: hold that
        # many bytes back from the data file's hash until the end says what is kept.
        hold = pack_length * self.itemsize if pack_length and not keep_last else 0
        self._data_hash = _HeldBackHash(hold)
        # name -> xxh3-128 of every file of the set, the sidecar's included, once closed
        self.digests: dict[str, str] = {}
        # files made beside the writer's own (a provenance file): (tmp, dest, xxh3-128)
        self._companions: list[tuple[str, str, str]] = []

    # -- the caller's side ----------------------------------------------------------------

    def __enter__(self) -> TokenFileWriter:
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()

    def add_document(self, ids: Any) -> None:
        """Append one document (a list, array or ndarray of ids; may be empty)."""
        data = token_bytes(ids, self.typecode)
        self._write_data(data)
        self._count(data.nbytes // self.itemsize)

    def add_lengths(self, lengths: Iterable[int]) -> None:
        """Record documents whose tokens :meth:`copy_data` already wrote."""
        for length in lengths:
            self._count(length)

    def add_companion(self, tmp: str, dest: str, digest: str) -> None:
        """Publish the finished temporary file ``tmp`` (in ``tmp_dir``; of content hash
        ``digest``) as ``dest`` with the set, before its primary file, listed in its sidecar
        (a provenance file); it is removed if the set is not published."""
        self._tmp.append(tmp)
        self._companions.append((tmp, dest, digest))

    def _with_companions(self, staged: list[tuple[str, str]]) -> None:
        """Put the companion files in ``staged`` before its last (primary) file."""
        for _, dest, digest in self._companions:
            self.digests[os.path.basename(dest)] = digest
        staged[-1:-1] = [(tmp, dest) for tmp, dest, _ in self._companions]

    def copy_data(self, path: str) -> None:
        """Append the raw token bytes of the data file ``path`` (a part being merged)."""
        with open(path, "rb") as src:
            while chunk := src.read(_COPY_BUFFER):
                self._write_data(chunk)

    def close(self) -> None:
        """Write the index files and publish the set; on any failure nothing new is visible
        and the temporary files are gone."""
        try:
            self._finish_data()
            data_name = os.path.basename(self.dest + self.data_suffix)
            self.digests = {data_name: self.digests.pop("")}
            staged = [(self._tmp[0], self.dest + self.data_suffix)]
            for suffix, pieces in self.index_files():
                staged.append((self._stage(pieces, self.dest + suffix), self.dest + suffix))
            if self.data_is_primary:
                staged.append(staged.pop(0))
            self._with_companions(staged)
            sizes = {os.path.basename(dest): os.path.getsize(tmp) for tmp, dest in staged}
            text = json.dumps(self.sidecar(sizes), sort_keys=True) + "\n"
            sidecar = self._stage([text.encode()], self.dest + SIDECAR)
            staged.insert(-1, (sidecar, self.dest + SIDECAR))
            self._publish(staged)
        except BaseException:
            self.abort()
            raise

    def abort(self) -> None:
        if self._data is not None:
            self._data.close()
        for tmp in self._tmp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    # -- for subclasses --------------------------------------------------------------------

    def _finish_data(self) -> str:
        """Close the data file (a dropped short tail cut off first) and return its temporary
        path; its xxh3-128 goes to ``digests[""]``."""
        data = self._data_file()
        dropped = 0
        if self.pack_length is not None and not self.keep_last:
            kept = self.tokens - self.tokens % self.pack_length
            dropped = (self.tokens - kept) * self.itemsize
            data.truncate(kept * self.itemsize)
            self.tokens = kept
        data.flush()
        os.fsync(data.fileno())
        data.close()
        self.digests = {"": self._data_hash.hexdigest(dropped)}
        return self._tmp[0]

    def _publish(self, staged: list[tuple[str, str]]) -> None:
        """Publish ``staged`` (the primary file last), first removing each file of the older
        set (:attr:`previous`) that the new one does not have: an entry ``("", dest)``."""
        keep = {dest for _, dest in staged}
        self.publisher([("", p) for p in self.previous if p not in keep] + staged)

    def index_files(self) -> list[tuple[str, Iterable[bytes]]]:
        raise NotImplementedError

    def document_lengths(self) -> Iterator[array]:
        """The published documents' (or packed rows') lengths, a chunk at a time."""
        if self.pack_length is not None:
            return packed_lengths(self.tokens, self.pack_length)  # a dropped tail is gone
        return chunks(self.lengths)

    def published_documents(self) -> int:
        if self.pack_length is None:
            return self.documents
        return -(-self.tokens // self.pack_length)

    def sidecar(self, sizes: dict[str, int]) -> dict[str, Any]:
        return {
            "format": self.format_name,
            "dtype": self.dtype,
            "documents": self.published_documents(),
            "tokens": self.tokens,
            "pack_length": self.pack_length,
            "files": sizes,
            "xxh3_128": dict(self.digests),  # of each file but the sidecar itself
            "provenance": self.provenance,
        }

    # -- internals -------------------------------------------------------------------------

    def _count(self, length: int) -> None:
        if length > _MAX_LENGTH:
            raise ValueError(f"a document of {length} tokens is longer than int32 allows")
        self.tokens += length
        self.documents += 1
        if self.pack_length is None:
            self.lengths.append(length)

    def _new_tmp(self, suffix: str) -> BinaryIO:
        os.makedirs(self.tmp_dir, exist_ok=True)
        base = os.path.basename(self.dest)
        fd, path = tempfile.mkstemp(prefix=f"{base}.", suffix=f"{suffix}.tmp", dir=self.tmp_dir)
        os.fchmod(fd, 0o666 & ~_umask())  # mkstemp's 0600 would hide outputs from other users
        self._tmp.append(path)
        return os.fdopen(fd, "w+b")

    def _data_file(self) -> BinaryIO:
        if self._data is None:
            self._data = self._new_tmp(self.data_suffix)
        return self._data

    def _write_data(self, data: bytes | memoryview) -> None:
        self._data_file().write(data)
        self._data_hash.update(data)

    def _stage(self, pieces: Iterable[bytes], name: str) -> str:
        """Write a file of the set (``name`` its published name, for its digest), fsynced."""
        digest = xxhash.xxh3_128()
        with self._new_tmp("") as f:
            for piece in pieces:
                f.write(piece)
                digest.update(piece)
            f.flush()
            os.fsync(f.fileno())
        self.digests[os.path.basename(name)] = digest.hexdigest()
        return self._tmp[-1]


class _HeldBackHash:
    """xxh3-128 of a stream of bytes of which the last few may be cut off at the end: the
    last ``hold`` bytes are hashed only once :meth:`hexdigest` says how many to drop."""

    def __init__(self, hold: int) -> None:
        self.hold = hold
        self.digest = xxhash.xxh3_128()
        self.held = bytearray()

    def update(self, data: bytes | memoryview) -> None:
        if not self.hold:
            self.digest.update(data)
            return
        self.held += data
        if len(self.held) > 2 * self.hold:  # amortized: shift the buffer now and then
            cut = len(self.held) - self.hold
            self.digest.update(memoryview(self.held)[:cut])
            del self.held[:cut]

    def hexdigest(self, dropped: int = 0) -> str:
        """The digest of everything but the last ``dropped`` bytes (at most ``hold``)."""
        assert dropped <= len(self.held)
        self.digest.update(memoryview(self.held)[: len(self.held) - dropped])
        self.held = bytearray()
        return self.digest.hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


SIDECAR = ".batchtok.json"


def publish(staged: Sequence[tuple[str, str]]) -> None:
    """Rename fsynced temporary files into place, the last (primary) one last, after removing
    any older primary file; an entry without a temporary file (``("", dest)``) removes
    ``dest`` if it is there. The directory is fsynced after each step."""
    primary = staged[-1][1]
    directory = os.path.dirname(primary)
    os.makedirs(directory or ".", exist_ok=True)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(primary)
        fsync_dir(directory)
    for tmp, dest in staged:
        if not tmp:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(dest)
        else:
            os.replace(tmp, dest)
        fsync_dir(directory)


def read_json(path: str, files: FileAccess = LOCAL) -> Any:
    """The JSON document at ``path``; :class:`FormatError` if it is missing or not JSON."""
    try:
        return json.loads(files.read_text(path))
    except FileNotFoundError:
        raise FormatError(path, "missing") from None
    except ValueError as exc:
        raise FormatError(path, f"not JSON: {exc}") from None


def read_sidecar(dest: str, files: FileAccess = LOCAL) -> dict[str, Any]:
    """The whole sidecar document of the file set named ``dest`` (Megatron's prefix, or the
    ``.ds`` path); FormatError if it is missing, not JSON, or describes files of other sizes
    than those present (the set was replaced by something else). ``files`` reads them where
    they are not local files."""
    path = dest + SIDECAR
    doc = read_json(path, files)
    if not isinstance(doc, dict) or not isinstance(doc.get("files"), dict):
        raise FormatError(path, "not a batchtok sidecar (no 'files' object)")
    directory = os.path.dirname(dest) if files is LOCAL else dest.rpartition("/")[0]
    for name, size in doc["files"].items():
        where = os.path.join(directory, name)
        actual = file_size(where, files)
        if actual != size:
            raise FormatError(path, f"describes {name} as {size} bytes, but it has {actual}")
    return doc


#: bytes of a data file read at a time, at least, by :class:`FlatTokens`
READ_AHEAD = 1 << 16


class FlatTokens:
    """A data file of ids back to back (Megatron's ``.bin``, datatrove's ``.ds``), local or in
    object storage (``files``): its ids by offset, for ``batchtok audit``. Open until
    :meth:`close` (an object is opened once, not once a read); reads come in offset order, so
    each one reads ahead :data:`READ_AHEAD` bytes (one request to object storage serves the
    documents sampled close together)."""

    def __init__(self, path: str, dtype: str, files: FileAccess = LOCAL) -> None:
        self.path = path
        self.typecode = TYPECODES[dtype]
        self.itemsize = array(self.typecode).itemsize
        self.total = files.size(path) // self.itemsize
        self.file = files.open(path)
        self.buffer, self.buffer_at = b"", 0  # bytes read ahead, from byte buffer_at

    def close(self) -> None:
        self.file.close()

    def _bytes(self, first: int, size: int) -> bytes:
        """Bytes ``[first, first + size)`` of the file (fewer at its end)."""
        at = first - self.buffer_at
        if not (0 <= at and first + size <= self.buffer_at + len(self.buffer)):
            self.file.seek(first)
            self.buffer, self.buffer_at, at = self.file.read(max(size, READ_AHEAD)), first, 0
        return self.buffer[at : at + size]

    def read_at(self, byte: int, count: int) -> list[int]:
        """``count`` ids from byte ``byte`` of the file (fewer at its end)."""
        raw = self._bytes(byte, max(0, count) * self.itemsize)
        values = array(self.typecode)
        values.frombytes(raw[: len(raw) - len(raw) % self.itemsize])
        if sys.byteorder != "little":
            values.byteswap()
        return values.tolist()

    def read(self, start: int, length: int) -> list[int]:
        """Ids ``[start, start + length)`` of the file."""
        return self.read_at(start * self.itemsize, length)

    def where(self, offset: int) -> str:
        return f"token {offset} of {os.path.basename(self.path)}"
