"""Megatron-LM's indexed dataset: a ``.bin`` of raw token ids and its ``.idx``, as
``megatron/core/datasets/indexed_dataset.py`` (core_v0.19.0) writes and reads them.

``PREFIX.idx``, little-endian::

    offset        size   field
    0             9      magic b"MMIDIDX\\x00\\x00"
    9             8      <Q version, 1
    17            1      <B dtype code: 1 uint8, 2 int8, 3 int16, 4 int32, 5 int64,
                         6 float64, 7 float32, 8 uint16
    18            8      <Q S, the sequence count
    26            8      <Q D, the document count + 1
    34            4*S    int32 sequence lengths, in tokens
    34+4S         8*S    int64 sequence pointers: byte offset of each sequence in .bin
    34+12S        8*D    int64 document indices: 0, then the sequence count after each document

``PREFIX.bin`` is the sequences' ids back to back in the dtype. As ``tools/preprocess_data.py``
writes it, each non-empty document is one sequence, and an empty document has no sequence: its
document index repeats the previous one (so sequence *i* is row *i* only when no row is
empty; :func:`read_documents` goes by the document indices and yields empty documents too).
The token dtype is :func:`megatron_dtype` of the vocabulary size, as Megatron chooses it.
``--append-eod`` appends the EOD to a document with ids only, so an empty document stays one of
no sequence (``Encoder.encode``): batchtok's ``output.append_eos`` does the same. A job's files
equal preprocess_data's own for the same texts (``tests/formats/test_peer_fidelity.py``).

Reading it back (numpy)::

    from batchtok.formats import megatron
    for ids in megatron.read_documents("out/train"):  # out/train.bin + out/train.idx
        print(len(ids), ids[:8])

Files appear in this order (see :mod:`batchtok.formats.files`): ``.bin``, then the sidecar
``PREFIX.batchtok.json``, then ``.idx``, the file Megatron opens first: a visible ``.idx``
always has its complete ``.bin`` and sidecar.
"""

from __future__ import annotations

import struct
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate, chain, islice
from typing import Any

from .files import (
    CHUNK,
    LOCAL,
    FileAccess,
    FormatError,
    TokenFileWriter,
    file_size,
    little_endian,
    read_array,
    read_sidecar,
)

MAGIC = b"MMIDIDX\x00\x00"
VERSION = 1
HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, S, D: 34 bytes
# Megatron's dtype codes -> (numpy name, little-endian numpy dtype string, item size).
DTYPES = {
    1: ("uint8", "u1", 1),
    2: ("int8", "i1", 1),
    3: ("int16", "<i2", 2),
    4: ("int32", "<i4", 4),
    5: ("int64", "<i8", 8),
    6: ("float64", "<f8", 8),
    7: ("float32", "<f4", 4),
    8: ("uint16", "<u2", 2),
}
CODES = {name: code for code, (name, _, _) in DTYPES.items()}
# Megatron switches to int32 below 2**16, at 65,500 ids (DType.optimal_dtype).
UINT16_LIMIT = 65500


def megatron_dtype(vocab_size: int) -> str:
    """The token dtype Megatron's preprocess_data.py picks for a vocabulary of
    ``vocab_size`` ids, added tokens included: ``"uint16"`` below 65,500, else ``"int32"``.

    >>> megatron_dtype(65499), megatron_dtype(65500)
    ('uint16', 'int32')
    """
    return "uint16" if vocab_size < UINT16_LIMIT else "int32"


class MegatronWriter(TokenFileWriter):
    """Writes ``PREFIX.bin`` and ``PREFIX.idx`` from documents given one at a time.

    ``dtype`` is ``"uint16"`` or ``"int32"`` (:func:`megatron_dtype`); ``provenance`` goes to
    the sidecar. Use as a context manager: leaving the block normally publishes the files,
    an exception leaves nothing new::

        with MegatronWriter("out/train", "out/.batchtok/tmp", "uint16") as w:
            w.add_document([1, 2, 3, 0])
    """

    format_name = "megatron"
    data_suffix = ".bin"

    def __init__(self, prefix: str, tmp_dir: str, dtype: str, **options: Any) -> None:
        if dtype not in ("uint16", "int32"):
            raise ValueError(f"Megatron writes uint16 or int32 ids, not {dtype!r}")
        super().__init__(prefix, tmp_dir, dtype, **options)

    def index_files(self) -> list[tuple[str, Iterable[bytes]]]:
        return [(".idx", self._index())]

    def _index(self) -> Iterator[bytes]:
        sequences = self.published_documents() - sum(
            chunk.count(0) for chunk in self.document_lengths()
        )
        documents = self.published_documents() + 1
        yield HEADER.pack(MAGIC, VERSION, CODES[self.dtype], sequences, documents)
        for chunk in self.document_lengths():
            yield little_endian(array("i", filter(None, chunk)))
        pointer = 0
        for chunk in self.document_lengths():
            sizes = (n * self.itemsize for n in chunk if n)
            starts = array("q", accumulate(sizes, initial=pointer))
            pointer = starts.pop()
            yield little_endian(starts)
        done = 0
        yield little_endian(array("q", [0]))
        for chunk in self.document_lengths():
            ends = array("q", accumulate(map(bool, chunk), initial=done))
            done = ends[-1]
            yield little_endian(ends[1:])


@dataclass(frozen=True)
class MegatronInfo:
    """What a validated ``.bin``/``.idx`` pair holds."""

    dtype: str  # numpy's name of the token type, e.g. "uint16"
    sequences: int
    documents: int
    tokens: int


def bin_path(prefix: str) -> str:
    return prefix + ".bin"


def idx_path(prefix: str) -> str:
    return prefix + ".idx"


def _header(path: str, files: FileAccess = LOCAL) -> tuple[int, int, int]:
    """(dtype code, S, D) of the ``.idx`` at ``path``, its size checked against them."""
    size = file_size(path, files)
    with files.open(path) as f:
        raw = f.read(HEADER.size)
    if len(raw) < HEADER.size:
        raise FormatError(path, f"truncated: {size} bytes, shorter than the 34-byte header")
    magic, version, code, sequences, documents = HEADER.unpack(raw)
    if magic != MAGIC:
        raise FormatError(path, f"not a Megatron index: magic {magic!r}, expected {MAGIC!r}")
    if version != VERSION:
        raise FormatError(path, f"index version {version}, only version 1 exists")
    if code not in DTYPES:
        raise FormatError(path, f"unknown dtype code {code} (known: 1 to 8)")
    if documents < 1:
        raise FormatError(path, "document count 0: it counts documents + 1, so at least 1")
    want = HEADER.size + 12 * sequences + 8 * documents
    if size < want:
        raise FormatError(
            path,
            f"truncated: {sequences} sequences and {documents - 1} documents need {want} "
            f"bytes, the file has {size}",
        )
    if size > want:
        raise FormatError(
            path,
            f"{size - want} bytes after the document indices (a multimodal index, with "
            "sequence modes, is not supported)",
        )
    return code, sequences, documents


def document_lengths(prefix: str, files: FileAccess = LOCAL) -> tuple[MegatronInfo, Iterator[int]]:
    """The index's info (its ``tokens`` left 0) and each document's token count, the index
    validated while it streams and its token total checked against the .bin when the stream
    ends (:class:`FormatError` where either does not hold). ``files``: where the pair is not
    local files."""
    path = idx_path(prefix)
    code, sequences, documents = _header(path, files)
    itemsize = DTYPES[code][2]
    info = MegatronInfo(DTYPES[code][0], sequences, documents - 1, 0)

    def sequence_lengths(f_len, f_ptr) -> Iterator[array]:
        pointer = 0
        for start in range(0, sequences, CHUNK):
            count = min(CHUNK, sequences - start)
            lengths = read_array(f_len, "i", count, path, "sequence lengths")
            pointers = read_array(f_ptr, "q", count, path, "sequence pointers")
            if lengths and min(lengths) < 0:
                i = next(i for i, n in enumerate(lengths) if n < 0)
                raise FormatError(path, f"sequence {start + i} has a negative length {lengths[i]}")
            starts = array("q", accumulate((n * itemsize for n in lengths), initial=pointer))
            pointer = starts.pop()
            if starts != pointers:
                i = next(i for i, (a, b) in enumerate(zip(starts, pointers)) if a != b)
                raise FormatError(
                    path, f"sequence {start + i} starts at byte {pointers[i]}, not {starts[i]}"
                )
            yield lengths

    def lengths() -> Iterator[int]:
        with files.open(path) as f_len, files.open(path) as f_ptr, files.open(path) as f_doc:
            f_len.seek(HEADER.size)
            f_ptr.seek(HEADER.size + 4 * sequences)
            f_doc.seek(HEADER.size + 12 * sequences)
            seqs = chain.from_iterable(sequence_lengths(f_len, f_ptr))
            previous = None
            tokens = 0
            for start in range(0, documents, CHUNK):
                count = min(CHUNK, documents - start)
                for i, end in enumerate(read_array(f_doc, "q", count, path, "doc indices"), start):
                    if previous is None:
                        if end != 0:
                            raise FormatError(path, f"the first document index is {end}, not 0")
                    elif not previous <= end <= sequences:
                        raise FormatError(
                            path,
                            f"document index {i} is {end}, after {previous} "
                            f"(indices must rise to the sequence count {sequences})",
                        )
                    else:
                        length = sum(islice(seqs, end - previous))
                        tokens += length
                        yield length
                    previous = end
            if previous != sequences:
                raise FormatError(path, f"the last document index is {previous}, not {sequences}")
        data = bin_path(prefix)
        data_size = file_size(data, files)
        if data_size != tokens * itemsize:
            raise FormatError(
                data,
                f"{data_size} bytes, but its index describes {tokens} tokens of "
                f"{itemsize} bytes ({tokens * itemsize} bytes)",
            )

    return info, lengths()


def read_info(prefix: str, files: FileAccess = LOCAL) -> MegatronInfo:
    """Validate ``PREFIX.idx`` against ``PREFIX.bin`` (a streaming pass over the index) and
    say what they hold; :class:`FormatError` naming the file and the problem otherwise."""
    info, lengths = document_lengths(prefix, files)
    return MegatronInfo(info.dtype, info.sequences, info.documents, sum(lengths))


def read_documents(prefix: str) -> Iterator[Any]:
    """Each document's ids as a numpy array of the file's dtype, in order (an empty document
    as an empty array), after validating the pair (:func:`read_info`)."""
    import numpy

    read_info(prefix)
    info, lengths = document_lengths(prefix)
    _, dtype, itemsize = DTYPES[CODES[info.dtype]]
    with open(bin_path(prefix), "rb") as f:
        for length in lengths:
            yield numpy.frombuffer(f.read(length * itemsize), dtype=dtype)


def read_provenance(prefix: str) -> dict[str, Any]:
    """The provenance dict given to the writer (or merge), from ``PREFIX.batchtok.json``."""
    return read_sidecar(prefix)["provenance"]


def merge(
    parts: Sequence[str], prefix: str, tmp_dir: str, dtype: str | None = None, **options: Any
) -> MegatronInfo:
    """Join the pairs ``parts`` (prefixes, in order) into ``PREFIX.bin``/``.idx``, streaming:
    the ``.bin`` bytes are copied, the index rebuilt with shifted pointers, and the result
    published atomically. Every part must have the same dtype (the result's, unless ``dtype``
    says it; an empty ``parts`` needs it). A part's document made of several sequences
    becomes one sequence. ``options`` are the writer's (``provenance``, ``pack_length``,
    ``keep_last``)."""
    infos = [read_info(part) for part in parts]
    dtypes = {info.dtype for info in infos} | ({dtype} if dtype else set())
    if len(dtypes) != 1:
        raise ValueError(f"cannot merge Megatron files of dtypes {sorted(dtypes)}: {parts}")
    with MegatronWriter(prefix, tmp_dir, dtypes.pop(), **options) as writer:
        for part in parts:
            writer.copy_data(bin_path(part))
            writer.add_lengths(document_lengths(part)[1])
    return read_info(prefix)
