"""datatrove's tokenized files, as its ``DocumentTokenizer`` (``TokenizedFile``, datatrove
0.10) writes them and nanotron's Nanosets read them.

============== ========================================================================
file           content
============== ========================================================================
``NAME.ds``          the documents' ids back to back, ``<H`` (2 bytes) or ``<I`` (4 bytes)
``NAME.ds.index``    ``<Q`` per document: the cumulative token count at its end
``NAME.ds.metadata`` text, three lines without a final newline: ``TOKENIZER|TOKEN_SIZE``,
                     the token count, the count in SI form (``1.23 kT``)
============== ========================================================================

The token size is :func:`datatrove_dtype` of the vocabulary size (added tokens included, as
``Tokenizer.get_vocab_size()`` counts): 4 bytes when it exceeds 65,536. ``NAME.ds.loss`` (one
byte per token, a loss mask) is written by datatrove only with ``save_loss_metadata``, for
documents carrying ``no_loss_ranges``; batchtok has no such ranges, so it writes none and
readers need none.

Empty documents: ``TokenizedFile`` writes one it is given as an index entry equal to the
previous one, and so does :class:`DatatroveWriter` by default. datatrove's pipeline gives it
none for an empty text: its readers skip a document whose text is empty or missing
(``BaseReader.get_document_from_dict``, datatrove 0.10.1), so ``DocumentTokenizer`` writes no
entry for it (and its ``DatatroveFileDataset`` loses a position reset at a repeated end).
``skip_empty=True``, what ``batchtok run`` writes, leaves every empty document out; its
sidecar says so (``"empty_documents": "left out"``).

Reading it back (numpy)::

    from batchtok.formats import datatrove
    for ids in datatrove.read_documents("out/train.ds"):
        print(len(ids), ids[:8])

Files appear in this order (see :mod:`batchtok.formats.files`): ``.ds.index``,
``.ds.metadata``, the sidecar ``NAME.ds.batchtok.json``, then ``.ds``, the file datatrove's
readers look for (``*.ds``): a visible ``.ds`` always has its index and metadata.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from .files import (
    CHUNK,
    LOCAL,
    SIDECAR,
    FileAccess,
    FormatError,
    TokenFileWriter,
    file_size,
    little_endian,
    read_array,
    read_sidecar,
)

TOKEN_SIZES = {"uint16": 2, "uint32": 4}
DTYPES = {2: ("uint16", "<u2"), 4: ("uint32", "<u4")}


def datatrove_dtype(vocab_size: int) -> str:
    """The token type datatrove picks for a vocabulary of ``vocab_size`` ids (added tokens
    included): ``"uint32"`` when it exceeds 65,536 (uint16's 65,535 + 1), else ``"uint16"``.

    >>> datatrove_dtype(65536), datatrove_dtype(65537)
    ('uint16', 'uint32')
    """
    return "uint32" if vocab_size > 65536 else "uint16"


def si_tokens(count: int) -> str:
    """``count`` to three significant digits with an SI prefix and the unit T, as datatrove
    writes it through ``humanize.metric(count, unit="T")`` (humanize 4.17)."""
    exponent = math.floor(math.log10(count)) if count else 0
    bucket = exponent // 3 * 3
    scaled = count / 10**bucket
    digits = max(0, 2 - exponent % 3)
    if round(scaled, digits) >= 10 ** (exponent % 3 + 1):  # 999.6 rounds up to the next prefix
        exponent += 1
        scaled /= 10 ** (exponent // 3 * 3 - bucket)
        digits = max(0, 2 - exponent % 3)
    prefix = "kMGTPEZYRQ"[exponent // 3 - 1] if exponent >= 3 else ""
    return f"{scaled:.{digits}f} {prefix}T"


class DatatroveWriter(TokenFileWriter):
    """Writes ``NAME.ds`` (the ``path`` given), ``.ds.index`` and ``.ds.metadata`` from
    documents given one at a time. ``tokenizer`` is the name the metadata records (datatrove
    writes its ``tokenizer_name_or_path``); ``dtype`` is :func:`datatrove_dtype`'s.

        with DatatroveWriter("out/train.ds", "out/.batchtok/tmp", "uint16", "gpt2") as w:
            w.add_document([1, 2, 3, 0])
    """

    format_name = "datatrove"
    data_is_primary = True

    def __init__(
        self,
        path: str,
        tmp_dir: str,
        dtype: str,
        tokenizer: str,
        skip_empty: bool = False,
        **options: Any,
    ):
        if dtype not in TOKEN_SIZES:
            raise ValueError(f"datatrove writes uint16 or uint32 ids, not {dtype!r}")
        if not tokenizer or any(c in tokenizer for c in "|\n\r"):
            raise ValueError(f"a tokenizer name without '|' or line breaks, not {tokenizer!r}")
        super().__init__(path, tmp_dir, dtype, **options)
        self.tokenizer = tokenizer
        self.skip_empty = skip_empty

    def index_files(self) -> list[tuple[str, Iterable[bytes]]]:
        size = TOKEN_SIZES[self.dtype]
        meta = f"{self.tokenizer}|{size}\n{self.tokens}\n{si_tokens(self.tokens)}"
        return [(".index", self._ends()), (".metadata", [meta.encode()])]

    def _lengths(self) -> Iterator[array]:
        """The published documents' lengths, a chunk at a time (without the empty ones when
        they are skipped)."""
        for chunk in self.document_lengths():
            yield array("i", filter(None, chunk)) if self.skip_empty else chunk

    def _ends(self) -> Iterator[bytes]:
        done = 0
        for chunk in self._lengths():
            ends = array("q", accumulate(chunk, initial=done))
            done = ends[-1]
            yield little_endian(ends[1:])

    def published_documents(self) -> int:
        if self.pack_length is not None or not self.skip_empty:
            return super().published_documents()
        return sum(map(len, self._lengths()))

    def sidecar(self, sizes: dict[str, int]) -> dict[str, Any]:
        doc = super().sidecar(sizes)
        if self.skip_empty:
            doc[EMPTY_DOCUMENTS] = LEFT_OUT
        return doc


# The sidecar's record that empty documents were left out (older sidecars have none).
EMPTY_DOCUMENTS, LEFT_OUT = "empty_documents", "left out"


@dataclass(frozen=True)
class DatatroveInfo:
    """What a validated ``.ds`` file set holds."""

    dtype: str  # "uint16" or "uint32"
    documents: int
    tokens: int
    tokenizer: str  # from the metadata; "" without one


def _metadata(path: str, files: FileAccess = LOCAL) -> tuple[str, int | None, int | None]:
    """(tokenizer, token size, token count) from ``path.metadata``; Nones if it is absent."""
    meta = path + ".metadata"
    try:
        lines = files.read_text(meta).splitlines()
    except FileNotFoundError:
        return "", None, None
    try:
        tokenizer, size = lines[0].rsplit("|", 1)
        return tokenizer, int(size), int(lines[1])
    except (IndexError, ValueError):
        raise FormatError(meta, "not 'TOKENIZER|SIZE' then a token count") from None


def document_lengths(
    path: str, token_size: int | None = None, files: FileAccess = LOCAL
) -> tuple[DatatroveInfo, Iterator[int]]:
    """The file set's info (sizes checked) and each document's token count, the index
    validated while it streams (:class:`FormatError` where it does not hold). ``files``:
    where the set is not local files."""
    tokenizer, meta_size, meta_tokens = _metadata(path, files)
    size = token_size or meta_size
    if size is None:
        raise FormatError(path, "no .metadata file to give the token size: pass token_size")
    if size not in DTYPES:
        raise FormatError(path + ".metadata", f"token size {size}, expected 2 or 4")
    data_size = file_size(path, files)
    if data_size % size:
        raise FormatError(path, f"{data_size} bytes, not a whole number of {size}-byte tokens")
    tokens = data_size // size
    if meta_tokens is not None and meta_tokens != tokens:
        raise FormatError(path, f"{tokens} tokens, but its .metadata says {meta_tokens}")
    index = path + ".index"
    index_size = file_size(index, files)
    if index_size % 8:
        raise FormatError(index, f"{index_size} bytes, not a whole number of 8-byte ends")
    documents = index_size // 8
    info = DatatroveInfo(DTYPES[size][0], documents, tokens, tokenizer)

    def lengths() -> Iterator[int]:
        done = 0
        with files.open(index) as f:
            for start in range(0, documents, CHUNK):
                ends = read_array(f, "Q", min(CHUNK, documents - start), index, "ends")
                for i, end in enumerate(ends, start):
                    if not done <= end <= tokens:
                        raise FormatError(
                            index,
                            f"document {i} ends at token {end}, after {done} "
                            f"(ends must rise to the .ds's {tokens} tokens)",
                        )
                    yield end - done
                    done = end
        if done != tokens:
            raise FormatError(index, f"the last document ends at token {done}, not {tokens}")

    return info, lengths()


def read_info(path: str, token_size: int | None = None, files: FileAccess = LOCAL) -> DatatroveInfo:
    """Validate ``path`` (a ``.ds``), its ``.index`` and ``.metadata`` (the token size comes
    from it unless given) and say what they hold; :class:`FormatError` naming the file and
    the problem otherwise."""
    info, lengths = document_lengths(path, token_size, files)
    for _ in lengths:
        pass
    return info


def empty_entries(path: str, files: FileAccess = LOCAL) -> int:
    """How many empty documents the set at ``path`` holds as index entries: 0 when its sidecar
    says they were left out (:class:`DatatroveWriter`'s ``skip_empty``), else counted in its
    index, read whole (a set batchtok wrote before it left them out)."""
    sidecar = json.loads(files.read_text(path + SIDECAR))
    if isinstance(sidecar, dict) and sidecar.get(EMPTY_DOCUMENTS) == LEFT_OUT:
        return 0
    return sum(1 for length in document_lengths(path, files=files)[1] if not length)


def read_documents(path: str, token_size: int | None = None) -> Iterator[Any]:
    """Each document's ids as a numpy array, in order, after validating (:func:`read_info`)."""
    import numpy

    read_info(path, token_size)
    info, lengths = document_lengths(path, token_size)
    size = TOKEN_SIZES[info.dtype]
    dtype = DTYPES[size][1]
    with open(path, "rb") as f:
        for length in lengths:
            yield numpy.frombuffer(f.read(length * size), dtype=dtype)


def read_provenance(path: str) -> dict[str, Any]:
    """The provenance dict given to the writer (or merge), from ``NAME.ds.batchtok.json``."""
    return read_sidecar(path)["provenance"]


def merge(
    parts: Sequence[str],
    path: str,
    tmp_dir: str,
    tokenizer: str | None = None,
    dtype: str | None = None,
    **options: Any,
) -> DatatroveInfo:
    """Join the ``.ds`` files ``parts`` (in order) into ``path``, streaming: the token bytes
    are copied, the index rebuilt with shifted ends, and the set published atomically. Every
    part must have the same token size (and ``dtype`` if given; an empty ``parts`` needs it);
    ``tokenizer`` defaults to the first part's. ``options`` are the writer's."""
    infos = [read_info(part) for part in parts]
    dtypes = {info.dtype for info in infos} | ({dtype} if dtype else set())
    if len(dtypes) != 1:
        raise ValueError(f"cannot merge datatrove files of dtypes {sorted(dtypes)}: {parts}")
    name = tokenizer or (infos[0].tokenizer if infos else "")
    with DatatroveWriter(path, tmp_dir, dtypes.pop(), name, **options) as writer:
        for part in parts:
            writer.copy_data(part)
            writer.add_lengths(document_lengths(part, None)[1])
    return read_info(path)
