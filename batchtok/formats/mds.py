"""MosaicML ``streaming``'s MDS, as llm-foundry's ``convert_dataset_hf --concat_tokens``
writes it through ``streaming``'s ``MDSWriter`` (mosaicml-streaming 0.13.0, llm-foundry
0.22.0): one column ``tokens`` of encoding ``ndarray:DTYPE``, no compression, no hashes.

A dataset is a directory::

    DIR/shard.00000.mds   samples, at most size_limit bytes a shard (2**26 by default)
    DIR/shard.00001.mds   ...
    DIR/index.json        every shard's description; written last

``shard.NNNNN.mds``, little-endian::

    offset        size      field
    0             4         <I n, the shard's sample count
    4             4*(n+1)   <I byte offset of each sample in the shard, then the shard's size
    8+4n          C         the shard's config: JSON (sorted keys) of column_encodings,
                            column_names, column_sizes, compression, format, hashes,
                            size_limit, version
    8+4n+C        ...       the samples

A sample is ``<I`` the column's size, then the ``ndarray`` encoding of a 1-d array of L ids:
one byte ``(1 << 2) | S`` (one axis; its shape stored in 1, 2, 4 or 8 bytes, S = 0..3, the
smallest that holds L), L in that many bytes, then the L ids in DTYPE. ``ndarray`` cannot
hold an empty array, so an empty document is no sample (``MDSWriter`` refuses one;
llm-foundry never writes one). Each document is one sample, or each packed row of
``output.pack_length`` ids, as ``--concat_tokens N`` writes them.

``index.json`` is ``{"shards": [...], "version": 2}`` (``json.dump`` with sorted keys, no
final newline), each shard's entry its config plus ``raw_data`` (``basename``, ``bytes``,
``hashes``: ``{}``), ``samples`` and ``zip_data`` (null).

Shards are cut as ``MDSWriter.write`` cuts them: a sample that would take the shard past
``size_limit`` bytes (its offset counted: 4 bytes a sample) starts the next shard; so a first
sample larger than the limit leaves an empty ``shard.00000.mds`` before it, as
``MDSWriter`` does. ``max_tokens`` (not a ``streaming`` option) cuts a shard before it would
hold more ids than that too.

Reading it back: ``streaming.StreamingDataset(local=DIR, shuffle=False)`` (each sample's
``tokens`` an ndarray), or, without torch, :func:`read_documents`::

    from batchtok.formats import mds
    for ids in mds.read_documents("out/train.mds"):
        print(len(ids), ids[:8])

Files appear in this order (see :mod:`batchtok.formats.files`): the sidecar
``DIR/index.batchtok.json`` first (it names the input, so shards a crash left visible are
known as batchtok's), the shards, then ``index.json``, the file ``streaming`` opens first: a
visible ``index.json`` always has its shards. Shards of an older, longer set that the new one
lacks are removed before it is published.
"""

from __future__ import annotations

import bisect
import json
import os
import struct
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, BinaryIO

from .files import (
    LOCAL,
    SIDECAR,
    TYPECODES,
    FileAccess,
    FlatTokens,
    FormatError,
    TokenFileWriter,
    file_size,
    little_endian,
    read_array,
    read_json,
    read_sidecar,
)

INDEX = "index.json"
COLUMN = "tokens"
#: ``MDSWriter``'s default shard size limit, in bytes
SIZE_LIMIT = 1 << 26
# sample offsets are uint32: no shard (nor limit) reaches 2**32 bytes
_MAX_SHARD = 2**32 - 1
# bytes of a sample's shape by S, the low two bits of its ndarray header byte
SHAPE_BYTES = (1, 2, 4, 8)
_SHAPE_CODES = ("B", "H", "I", "Q")
_BUFFER = 1 << 20


def shard_name(number: int) -> str:
    """``shard.00000.mds``: ``MDSWriter``'s name of shard ``number``."""
    return f"shard.{number:05}.mds"


def sidecar_stem(directory: str) -> str:
    """The name batchtok's sidecar goes by (``DIR/index`` -> ``DIR/index.batchtok.json``)."""
    return _join(directory, INDEX.removesuffix(".json"))


def shard_config(dtype: str, size_limit: int | None) -> dict[str, Any]:
    """What each shard records of how it was written (in its header and index entry)."""
    return {
        "column_encodings": [f"ndarray:{dtype}"],
        "column_names": [COLUMN],
        "column_sizes": [None],
        "compression": None,
        "format": "mds",
        "hashes": [],
        "size_limit": size_limit,
        "version": 2,
    }


def _config_bytes(config: dict[str, Any]) -> bytes:
    return json.dumps(config, sort_keys=True).encode("utf-8")


def shape_code(length: int) -> int:
    """S of a sample of ``length`` ids: the smallest unsigned type that holds its shape."""
    return 0 if length < 1 << 8 else 1 if length < 1 << 16 else 2 if length < 1 << 32 else 3


def sample_size(length: int, itemsize: int) -> int:
    """Bytes of a sample of ``length`` ids: its column size, ndarray header, shape, ids."""
    return 4 + 1 + SHAPE_BYTES[shape_code(length)] + length * itemsize


def sample_header(length: int, itemsize: int) -> bytes:
    """A sample's bytes before its ids."""
    code = shape_code(length)
    payload = 1 + SHAPE_BYTES[code] + length * itemsize
    return struct.pack(f"<IB{_SHAPE_CODES[code]}", payload, (1 << 2) | code, length)


def length_of(payload: int, itemsize: int) -> int | None:
    """L of a sample whose column holds ``payload`` bytes (None if no L gives that size)."""
    for code, shape in enumerate(SHAPE_BYTES):
        length, rest = divmod(payload - 1 - shape, itemsize)
        if not rest and length >= 1 and shape_code(length) == code:
            return length
    return None


def shard_cuts(
    lengths: Iterable[int],
    itemsize: int,
    header: int,
    size_limit: int | None = SIZE_LIMIT,
    max_tokens: int | None = None,
) -> Iterator[array]:
    """The samples of each shard (their lengths, an int32 array), as ``MDSWriter.write`` cuts
    them: a sample that would take the shard past ``size_limit`` bytes (``header``: a shard's
    bytes besides its samples and their offsets) starts the next one, even after an empty
    shard; a sample that would take it past ``max_tokens`` ids starts the next one unless the
    shard is empty."""
    samples = array("i")
    size, tokens = header, 0
    for length in lengths:
        cost = sample_size(length, itemsize) + 4
        over_size = size_limit is not None and size_limit < size + cost
        over_tokens = max_tokens is not None and samples and tokens + length > max_tokens
        if over_size or over_tokens:
            yield samples
            samples, size, tokens = array("i"), header, 0
        samples.append(length)
        size += cost
        tokens += length
    if samples:
        yield samples


class MdsWriter(TokenFileWriter):
    """Writes an MDS directory (``index.json`` and its shards) from documents given one at a
    time. ``dtype`` (``"int32"``, llm-foundry's, or ``"uint16"``/``"uint32"``) names the
    column's encoding ``ndarray:DTYPE``; ``size_limit`` bytes a shard (None: one shard) and
    ``max_tokens`` ids a shard (None: no such limit) cut the shards. Empty documents are no
    samples; ``pack_length`` makes every sample that many ids (the last one shorter unless
    ``keep_last=False``)::

        with MdsWriter("out/train.mds", "out/.batchtok/tmp", "int32") as w:
            w.add_document([1, 2, 3, 0])

    The ids go to one temporary file as they come; closing the writer cuts it into the
    shards, writes ``index.json`` and publishes the set (see the module docstring)."""

    format_name = "mds"

    def __init__(
        self,
        directory: str,
        tmp_dir: str,
        dtype: str,
        size_limit: int | None = SIZE_LIMIT,
        max_tokens: int | None = None,
        **options: Any,
    ) -> None:
        if size_limit is not None and not 0 < size_limit <= _MAX_SHARD:
            raise ValueError(f"size_limit must be between 1 and 2**32 - 1, not {size_limit}")
        if max_tokens is not None and max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, not {max_tokens}")
        super().__init__(os.fspath(directory).rstrip("/"), tmp_dir, dtype, **options)
        self.size_limit = size_limit
        self.max_tokens = max_tokens
        self.config = shard_config(dtype, size_limit)
        self.shards = 0

    def sample_lengths(self) -> Iterator[int]:
        """The published samples' lengths: the non-empty documents, or the packed rows."""
        for chunk in self.document_lengths():
            yield from filter(None, chunk)

    def published_documents(self) -> int:
        if self.pack_length is not None:
            return super().published_documents()
        return self.documents - sum(chunk.count(0) for chunk in self.document_lengths())

    def sidecar(self, sizes: dict[str, int]) -> dict[str, Any]:
        return {**super().sidecar(sizes), "size_limit": self.size_limit, "shards": self.shards}

    def close(self) -> None:
        try:
            data = self._finish_data()
            del self.digests[""]  # the ids file is cut into shards, not published
            config = _config_bytes(self.config)
            staged: list[tuple[str, str]] = []
            entries = []
            cuts = shard_cuts(
                self.sample_lengths(), self.itemsize, 8 + len(config), self.size_limit,
                self.max_tokens,
            )  # fmt: skip
            with open(data, "rb") as src:
                for number, lengths in enumerate(cuts):
                    name = shard_name(number)
                    path = _join(self.dest, name)
                    staged.append((self._stage(self._shard(src, lengths, config), path), path))
                    size = os.path.getsize(staged[-1][0])
                    raw = {"basename": name, "bytes": size, "hashes": {}}
                    entries.append(
                        {**self.config, "raw_data": raw, "samples": len(lengths), "zip_data": None}
                    )
            self.shards = len(entries)
            os.unlink(data)
            self._tmp.remove(data)
            index = json.dumps({"shards": entries, "version": 2}, sort_keys=True)
            primary = _join(self.dest, INDEX)
            staged.append((self._stage([index.encode("utf-8")], primary), primary))
            self._with_companions(staged)
            sizes = {os.path.basename(dest): os.path.getsize(tmp) for tmp, dest in staged}
            text = json.dumps(self.sidecar(sizes), sort_keys=True) + "\n"
            sidecar = sidecar_stem(self.dest) + SIDECAR
            staged.insert(0, (self._stage([text.encode()], sidecar), sidecar))
            self._publish(staged)
        except BaseException:
            self.abort()
            raise

    def _shard(self, src: BinaryIO, lengths: array, config: bytes) -> Iterator[bytes]:
        """A shard's bytes: its header, then each sample, its ids read from ``src``."""
        start = 4 + 4 * (len(lengths) + 1) + len(config)
        sizes = (sample_size(n, self.itemsize) for n in lengths)
        offsets = array("q", accumulate(sizes, initial=start))
        if offsets[-1] > _MAX_SHARD:
            raise ValueError(
                f"a shard of {offsets[-1]} bytes (a sample of {max(lengths)} ids): MDS "
                "offsets are uint32, so no shard may reach 4 GiB"
            )
        yield little_endian(array("I", [len(lengths)])) + little_endian(array("I", offsets))
        yield config
        buffer = bytearray()
        for length in lengths:
            buffer += sample_header(length, self.itemsize)
            ids = src.read(length * self.itemsize)
            if len(ids) != length * self.itemsize:
                raise OSError(f"{src.name}: the ids file ended early")
            buffer += ids
            if len(buffer) >= _BUFFER:
                yield bytes(buffer)
                buffer.clear()
        yield bytes(buffer)


# -- reading -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class MdsInfo:
    """What a validated MDS directory holds."""

    dtype: str  # numpy's name of the ids' type, e.g. "int32"
    documents: int  # samples
    tokens: int
    shards: int


def _join(directory: str, name: str) -> str:
    return f"{directory.rstrip('/')}/{name}"


_FIELDS = ("raw_data", "samples", "zip_data")


def read_index(directory: str, files: FileAccess = LOCAL) -> tuple[str, list[dict[str, Any]]]:
    """(the ids' dtype, each shard's entry) of ``DIR/index.json``, checked to be a dataset of
    one ``tokens`` column of ``ndarray:DTYPE``, uncompressed; :class:`FormatError` naming the
    file and the problem otherwise."""
    path = _join(directory, INDEX)
    doc = read_json(path, files)
    if (
        not isinstance(doc, dict)
        or doc.get("version") != 2
        or not isinstance(doc.get("shards"), list)
    ):
        raise FormatError(path, "not a streaming index of version 2 with a list of shards")
    dtype = ""
    for number, shard in enumerate(doc["shards"]):
        where = f"shard {number}"
        if not isinstance(shard, dict):
            raise FormatError(path, f"{where} is not an object")
        encodings = shard.get("column_encodings")
        if shard.get("format") != "mds" or shard.get("version") != 2:
            raise FormatError(path, f"{where} is not an MDS shard of version 2")
        if shard.get("column_names") != [COLUMN] or not (
            isinstance(encodings, list)
            and len(encodings) == 1
            and str(encodings[0]).removeprefix("ndarray:") in TYPECODES
        ):
            raise FormatError(
                path,
                f"{where} has columns {shard.get('column_names')} {encodings}, not one "
                f"{COLUMN!r} column of ndarray:uint16, int32 or uint32",
            )
        if shard.get("compression") or shard.get("zip_data"):
            raise FormatError(path, f"{where} is compressed ({shard.get('compression')})")
        raw = shard.get("raw_data")
        if not (
            isinstance(raw, dict)
            and isinstance(raw.get("basename"), str)
            and "/" not in raw["basename"]
            and isinstance(raw.get("bytes"), int)
            and isinstance(shard.get("samples"), int)
            and shard["samples"] >= 0
        ):
            raise FormatError(path, f"{where} has no raw_data basename and bytes, or samples")
        shard_dtype = encodings[0].removeprefix("ndarray:")
        if dtype and shard_dtype != dtype:
            raise FormatError(path, f"{where} holds {shard_dtype} ids, shard 0 {dtype}")
        dtype = shard_dtype
    return dtype or "int32", doc["shards"]


def _shard_offsets(directory: str, shard: dict[str, Any], files: FileAccess) -> array:
    """The shard's sample offsets (and its size), its header checked against its entry."""
    path = _join(directory, shard["raw_data"]["basename"])
    size = file_size(path, files)
    if size != shard["raw_data"]["bytes"]:
        raise FormatError(path, f"{size} bytes, but index.json says {shard['raw_data']['bytes']}")
    with files.open(path) as f:
        return _header(path, shard, size, f)


def _header(path: str, shard: dict[str, Any], size: int, f: BinaryIO) -> array:
    count = read_array(f, "I", 1, path, "the sample count")[0]
    if 8 + 4 * count > size:
        raise FormatError(path, f"truncated: {count} samples, {size} bytes")
    if count != shard["samples"]:
        raise FormatError(path, f"{count} samples, but index.json says {shard['samples']}")
    offsets = read_array(f, "I", count + 1, path, "the sample offsets")
    config = {k: v for k, v in shard.items() if k not in _FIELDS}
    want = _config_bytes(config)
    got = f.read(len(want))
    if got != want:
        raise FormatError(path, "its config differs from its entry in index.json")
    if offsets[0] != 8 + 4 * count + len(want):
        raise FormatError(
            path, f"the first sample starts at byte {offsets[0]}, not after the header"
        )
    if offsets[-1] != size:
        raise FormatError(path, f"the samples end at byte {offsets[-1]}, the file at {size}")
    return offsets


def document_lengths(directory: str, files: FileAccess = LOCAL) -> tuple[MdsInfo, Iterator[int]]:
    """The index's info (its ``tokens`` left 0) and each sample's length in ids, each shard's
    header and offsets validated as the stream reaches it (:class:`FormatError` where they do
    not hold). ``files``: where the directory is not local."""
    dtype, shards = read_index(directory, files)
    itemsize = array(TYPECODES[dtype]).itemsize
    info = MdsInfo(dtype, sum(s["samples"] for s in shards), 0, len(shards))

    def lengths() -> Iterator[int]:
        for shard in shards:
            path = _join(directory, shard["raw_data"]["basename"])
            offsets = _shard_offsets(directory, shard, files)
            for i in range(len(offsets) - 1):
                payload = offsets[i + 1] - offsets[i] - 4
                length = length_of(payload, itemsize)
                if length is None:
                    raise FormatError(
                        path, f"sample {i} has {payload + 4} bytes: no {dtype} array has that size"
                    )
                yield length

    return info, lengths()


def read_info(directory: str, files: FileAccess = LOCAL) -> MdsInfo:
    """Validate ``DIR/index.json`` against its shards (their headers and offsets) and say what
    they hold; :class:`FormatError` naming the file and the problem otherwise."""
    info, lengths = document_lengths(directory, files)
    tokens = sum(lengths)
    return MdsInfo(info.dtype, info.documents, tokens, info.shards)


def read_documents(directory: str) -> Iterator[Any]:
    """Each sample's ids as a numpy array of the shard's dtype, in order, every sample's
    header checked (:class:`FormatError` where one does not hold)."""
    import numpy

    dtype, shards = read_index(directory)
    itemsize = array(TYPECODES[dtype]).itemsize
    for shard in shards:
        path = _join(directory, shard["raw_data"]["basename"])
        offsets = _shard_offsets(directory, shard, LOCAL)
        with open(path, "rb") as f:
            f.seek(offsets[0])
            for i in range(len(offsets) - 1):
                sample = f.read(offsets[i + 1] - offsets[i])
                length = length_of(len(sample) - 4, itemsize)
                if length is None or sample[: -length * itemsize] != sample_header(
                    length, itemsize
                ):
                    raise FormatError(path, f"sample {i} is not a 1-d {dtype} array")
                yield numpy.frombuffer(
                    sample, dtype=f"<{dtype[0]}{itemsize}", offset=len(sample) - length * itemsize
                )


def read_provenance(directory: str) -> dict[str, Any]:
    """The provenance dict given to the writer (or merge), from ``DIR/index.batchtok.json``."""
    return read_sidecar(sidecar_stem(directory))["provenance"]


def set_names(directory: str, files: FileAccess = LOCAL) -> list[str]:
    """The names of the files of the set in ``directory`` as its sidecar lists them (else as
    ``index.json`` does, else just the first shard), the sidecar first, ``index.json`` last."""
    sidecar = INDEX.removesuffix(".json") + SIDECAR
    try:
        listed = json.loads(files.read_text(_join(directory, sidecar)))["files"]
        shards = sorted(name for name in listed if name not in (INDEX, sidecar))
    except (OSError, ValueError, KeyError, TypeError):
        try:
            shards = [s["raw_data"]["basename"] for s in read_index(directory, files)[1]]
        except (OSError, ValueError):
            shards = [shard_name(0)]
    return [sidecar, *shards, INDEX]


class MdsTokens:
    """Every sample's ids as one stream, read by token offset (for ``batchtok audit``): local
    or in object storage, each shard opened once and read ahead (:class:`FlatTokens`)."""

    def __init__(self, directory: str, files: FileAccess = LOCAL) -> None:
        self.directory = directory
        self.files = files
        self.dtype, shards = read_index(directory, files)
        itemsize = array(TYPECODES[self.dtype]).itemsize
        self.names = [s["raw_data"]["basename"] for s in shards]
        self.starts = array("q")  # each sample's first token in the stream
        self.shard = array("i")  # each sample's shard
        self.byte = array("q")  # where each sample's ids start in its shard
        total = 0
        for number, shard in enumerate(shards):
            offsets = _shard_offsets(directory, shard, files)
            for i in range(len(offsets) - 1):
                length = length_of(offsets[i + 1] - offsets[i] - 4, itemsize) or 0
                self.starts.append(total)
                self.shard.append(number)
                self.byte.append(offsets[i + 1] - length * itemsize)
                total += length
        self.starts.append(total)
        self.total = total
        self.open: dict[int, FlatTokens] = {}

    def close(self) -> None:
        for f in self.open.values():
            f.close()
        self.open.clear()

    def _file(self, shard: int) -> FlatTokens:
        if shard not in self.open:
            path = _join(self.directory, self.names[shard])
            self.open[shard] = FlatTokens(path, self.dtype, self.files)
        return self.open[shard]

    def read(self, start: int, length: int) -> list[int]:
        """Ids ``[start, start + length)`` of the stream (fewer at its end)."""
        out: list[int] = []
        at, end = max(0, start), min(start + max(0, length), self.total)
        sample = bisect.bisect_right(self.starts, at) - 1
        while at < end:
            upto = min(end, self.starts[sample + 1])
            shard = self._file(self.shard[sample])
            out += shard.read_at(
                self.byte[sample] + (at - self.starts[sample]) * shard.itemsize, upto - at
            )
            at = upto
            sample += 1
        return out

    def where(self, offset: int) -> str:
        sample = bisect.bisect_right(self.starts, offset) - 1
        if not 0 <= sample < len(self.shard):
            return f"token {offset} of {os.path.basename(self.directory)}"
        first = bisect.bisect_left(self.shard, self.shard[sample])
        return f"token {offset} (sample {sample - first} of {self.names[self.shard[sample]]})"


def merge(
    parts: Sequence[str], directory: str, tmp_dir: str, dtype: str | None = None, **options: Any
) -> MdsInfo:
    """Join the MDS directories ``parts`` (in order) into ``directory``: every sample of each
    becomes a document of the result (re-cut by ``pack_length`` if given). Every part must
    hold one dtype (and ``dtype`` if given; an empty ``parts`` needs it). ``options`` are the
    writer's (``provenance``, ``pack_length``, ``keep_last``, ``size_limit``)."""
    infos = [read_info(part) for part in parts]
    dtypes = {info.dtype for info in infos} | ({dtype} if dtype else set())
    if len(dtypes) != 1:
        raise ValueError(f"cannot merge MDS directories of dtypes {sorted(dtypes)}: {parts}")
    with MdsWriter(directory, tmp_dir, dtypes.pop(), **options) as writer:
        for part in parts:
            for ids in read_documents(part):
                writer.add_document(ids)
    return read_info(directory)
