"""Random documents, working directories and a common face of each format for the tests."""

from __future__ import annotations

import contextlib
import os
import pathlib
import struct
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from itertools import accumulate
from types import ModuleType

from hypothesis import strategies as st

from batchtok.formats import datatrove, megatron

# Vocabulary sizes at the formats' dtype edges (Megatron: 65,500; datatrove: 65,536).
EDGE_VOCABS = (65499, 65500, 65536, 65537)


def documents(vocab_size: int, max_docs: int = 12, max_len: int = 40):
    """Lists of documents of ids below ``vocab_size``, empty documents included, the
    vocabulary's first and last ids favoured."""
    ids = st.one_of(st.sampled_from([0, 1, vocab_size - 1]), st.integers(0, vocab_size - 1))
    return st.lists(st.lists(ids, max_size=max_len), max_size=max_docs)


def cuts(n: int):
    """Sorted cut points splitting ``n`` documents into consecutive shards (some empty)."""
    return st.lists(st.integers(0, n), max_size=4).map(sorted)


def split(docs: list, points: list[int]) -> list[list]:
    bounds = [0, *points, len(docs)]
    return [docs[a:b] for a, b in zip(bounds, bounds[1:])]


def flat(docs) -> list[int]:
    return [t for doc in docs for t in doc]


def layout(docs: list[list[int]], code: int, fmt: str) -> tuple[bytes, bytes]:
    """(.bin, .idx) from the documented layout, as preprocess_data.py fills the builder:
    one sequence per non-empty document, none for an empty one."""
    lengths = [len(d) for d in docs if d]
    size = struct.calcsize("<" + fmt)
    pointers = [size * n for n in accumulate(lengths, initial=0)][:-1]
    doc_index = [0]
    for d in docs:
        doc_index.append(doc_index[-1] + (1 if d else 0))
    idx = b"MMIDIDX\x00\x00" + struct.pack("<QBQQ", 1, code, len(lengths), len(doc_index))
    idx += struct.pack(f"<{len(lengths)}i", *lengths)
    idx += struct.pack(f"<{len(pointers)}q", *pointers)
    idx += struct.pack(f"<{len(doc_index)}q", *doc_index)
    data = b"".join(struct.pack(f"<{len(d)}{fmt}", *d) for d in docs)
    return data, idx


@contextlib.contextmanager
def workdir() -> Iterator[str]:
    """A fresh directory (hypothesis examples cannot share pytest's tmp_path)."""
    with tempfile.TemporaryDirectory(prefix="batchtok-formats-") as d:
        yield d


def tmp_of(directory: str) -> str:
    return os.path.join(directory, ".batchtok", "tmp")


@dataclass(frozen=True)
class Format:
    """One trainer format as the shared tests drive it."""

    module: ModuleType
    writer: type
    dtype: Callable[[int], str]  # of a vocabulary size
    suffix: str  # the name's ending: "" for Megatron's prefix, ".ds" for datatrove
    files: tuple[str, ...]  # the data files' suffixes
    writer_args: tuple = ()  # after (dest, tmp_dir, dtype)

    def dest(self, directory: str, name: str) -> str:
        return os.path.join(directory, name + self.suffix)

    def write(self, dest: str, docs, dtype: str, **options) -> None:
        tmp = tmp_of(os.path.dirname(dest))
        with self.writer(dest, tmp, dtype, *self.writer_args, **options) as w:
            for doc in docs:
                w.add_document(doc)

    def read(self, dest: str) -> list[list[int]]:
        return [a.tolist() for a in self.module.read_documents(dest)]

    def bytes(self, dest: str) -> list[bytes]:
        return [pathlib.Path(dest + suffix).read_bytes() for suffix in self.files]


FORMATS = {
    "megatron": Format(
        megatron, megatron.MegatronWriter, megatron.megatron_dtype, "", (".bin", ".idx")
    ),
    "datatrove": Format(
        datatrove,
        datatrove.DatatroveWriter,
        datatrove.datatrove_dtype,
        ".ds",
        ("", ".index", ".metadata"),
        ("gpt2",),
    ),
}
