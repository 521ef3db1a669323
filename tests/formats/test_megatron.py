"""Megatron bin/idx: the documented layout byte for byte, files made by Megatron's own
builder, round trips, merges, packing, atomic publication and refusals of broken files."""

from __future__ import annotations

import pathlib
import shutil
import struct

import pytest

from batchtok.formats import megatron
from batchtok.formats.files import FormatError
from tests.formats.common import EDGE_VOCABS, FORMATS, layout

DATA = pathlib.Path(__file__).parent / "data"
# Documents of the golden files tests/formats/data/mg_*.{bin,idx} (see data/README.md).
GOLDEN = {
    "mg_example": ("uint16", [[1, 2, 3, 0], [4, 5, 0]]),
    "mg_empty_docs": ("uint16", [[], [1, 2, 3, 0], [], [], [65499, 0], []]),
    "mg_int32": ("int32", [[70000, 1, 0], [], [2**31 - 1, 0]]),
}


MG = FORMATS["megatron"]


def test_the_documented_example_is_14_and_82_bytes(tmp_path):
    docs = [[1, 2, 3, 0], [4, 5, 0]]
    MG.write(str(tmp_path / "a"), docs, "uint16")
    data, idx = MG.bytes(str(tmp_path / "a"))
    assert (len(data), len(idx)) == (14, 82)
    assert (data, idx) == layout(docs, 8, "H")


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_files_equal_those_megatron_builds(tmp_path, name):
    dtype, docs = GOLDEN[name]
    MG.write(str(tmp_path / name), docs, dtype)
    assert MG.bytes(str(tmp_path / name)) == MG.bytes(str(DATA / name))
    assert tuple(MG.bytes(str(DATA / name))) == layout(
        docs, megatron.CODES[dtype], "H" if dtype == "uint16" else "i"
    )
    assert MG.read(str(DATA / name)) == docs


def test_dtype_follows_megatron_at_65500():
    assert [megatron.megatron_dtype(v) for v in EDGE_VOCABS] == [
        "uint16",
        "int32",
        "int32",
        "int32",
    ]


def corrupt(prefix: str, suffix: str, edit) -> None:
    path = pathlib.Path(prefix + suffix)
    path.write_bytes(edit(bytearray(path.read_bytes())))


def _set(offset: int, value: bytes):
    def edit(b: bytearray) -> bytes:
        b[offset : offset + len(value)] = value
        return bytes(b)

    return edit


CORRUPTIONS = {
    "magic": (".idx", _set(0, b"XXIDIDX"), "not a Megatron index"),
    "version": (".idx", _set(9, struct.pack("<Q", 2)), "version 2"),
    "dtype": (".idx", _set(17, b"\x09"), "unknown dtype code 9"),
    "short header": (".idx", lambda b: bytes(b[:20]), "shorter than the 34-byte header"),
    "truncated index": (".idx", lambda b: bytes(b[:-8]), "truncated"),
    "trailing bytes": (".idx", lambda b: bytes(b) + b"\x00\x00", "2 bytes after"),
    "length": (".idx", _set(34, struct.pack("<i", 5)), "starts at byte"),
    "pointer": (".idx", _set(34 + 8 + 8, struct.pack("<q", 6)), "sequence 1 starts at byte 6"),
    "first doc index": (".idx", _set(58, struct.pack("<q", 1)), "first document index is 1"),
    "last doc index": (".idx", _set(74, struct.pack("<q", 1)), "the last document index is 1"),
    "truncated bin": (".bin", lambda b: bytes(b[:-2]), "12 bytes, but its index describes 7"),
    "longer bin": (".bin", lambda b: bytes(b) + b"\x00\x00", "16 bytes"),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_broken_files_are_refused_naming_file_and_problem(tmp_path, name):
    suffix, edit, message = CORRUPTIONS[name]
    prefix = str(tmp_path / "a")
    shutil.copy(DATA / "mg_example.bin", prefix + ".bin")
    shutil.copy(DATA / "mg_example.idx", prefix + ".idx")
    corrupt(prefix, suffix, edit)
    for call in (megatron.read_info, lambda p: list(megatron.read_documents(p))):
        with pytest.raises(FormatError, match=message) as err:
            call(prefix)
        assert err.value.path.endswith(".idx" if suffix == ".idx" else ".bin")


def test_missing_bin_is_refused(tmp_path):
    shutil.copy(DATA / "mg_example.idx", tmp_path / "a.idx")
    with pytest.raises(FormatError, match=r"a\.bin: missing"):
        megatron.read_info(str(tmp_path / "a"))
