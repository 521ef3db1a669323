"""datatrove .ds files: equal to files datatrove's TokenizedFile wrote, round trips, merges,
packing, and refusals of broken files."""

from __future__ import annotations

import pathlib
import re
import shutil
import struct

import pytest

from batchtok.formats import datatrove
from batchtok.formats.files import FormatError
from tests.formats.common import EDGE_VOCABS, FORMATS

DATA = pathlib.Path(__file__).parent / "data"
# Documents of the golden files tests/formats/data/dt_*.ds* (see data/README.md).
GOLDEN = {
    "dt_small": ("uint16", [[1, 2, 3, 0], [], [4, 5, 0], [65535, 7, 0]]),
    "dt_big": ("uint32", [[1, 2, 3, 0], [], [70000, 5, 0], [4294967295, 0]]),
}


DT = FORMATS["datatrove"]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_files_equal_those_datatrove_writes(tmp_path, name):
    dtype, docs = GOLDEN[name]
    DT.write(str(tmp_path / f"{name}.ds"), docs, dtype)
    assert DT.bytes(str(tmp_path / f"{name}.ds")) == DT.bytes(str(DATA / f"{name}.ds"))
    assert DT.read(str(DATA / f"{name}.ds")) == docs


def test_layout_of_a_small_file(tmp_path):
    path = str(tmp_path / "a.ds")
    tmp = str(tmp_path / "tmp")
    with datatrove.DatatroveWriter(path, tmp, "uint16", "meta-llama/Llama-3.2-1B") as w:
        for doc in [[1, 2, 3, 0], [], [4, 5, 0]]:
            w.add_document(doc)
    ds, index, meta = DT.bytes(path)
    assert ds == struct.pack("<7H", 1, 2, 3, 0, 4, 5, 0)
    assert index == struct.pack("<3Q", 4, 4, 7)
    assert meta == b"meta-llama/Llama-3.2-1B|2\n7\n7.00 T"


def test_skip_empty_leaves_empty_documents_out_as_datatroves_pipeline_does(tmp_path):
    """TokenizedFile writes an empty document it is given (above); datatrove's readers give it
    none, and ``skip_empty`` writes what that pipeline does, its sidecar saying so."""
    docs = [[], [1, 2, 3, 0], [], [], [4, 5, 0], []]
    tmp = str(tmp_path / "tmp")
    kept, skipped = str(tmp_path / "kept.ds"), str(tmp_path / "skipped.ds")
    for path, skip in ((kept, False), (skipped, True)):
        with datatrove.DatatroveWriter(path, tmp, "uint16", "gpt2", skip_empty=skip) as w:
            for doc in docs:
                w.add_document(doc)
        assert w.published_documents() == (2 if skip else 6)
    ds, index, meta = DT.bytes(skipped)
    assert [ds, meta] == DT.bytes(kept)[::2]  # the same ids and metadata
    assert index == struct.pack("<2Q", 4, 7)
    assert DT.read(skipped) == [[1, 2, 3, 0], [4, 5, 0]]
    assert datatrove.read_info(skipped).documents == 2
    assert (datatrove.empty_entries(kept), datatrove.empty_entries(skipped)) == (4, 0)
    sidecar = datatrove.read_sidecar(skipped)
    assert sidecar["documents"] == 2 and sidecar["empty_documents"] == "left out"
    assert "empty_documents" not in datatrove.read_sidecar(kept)
    # merged, the parts' empty documents are left out too
    merged = str(tmp_path / "merged.ds")
    datatrove.merge([kept, skipped], merged, tmp, skip_empty=True)
    assert DT.read(merged) == [[1, 2, 3, 0], [4, 5, 0]] * 2
    assert datatrove.empty_entries(merged) == 0


def test_dtype_follows_datatrove_above_65536():
    assert [datatrove.datatrove_dtype(v) for v in EDGE_VOCABS] == [
        "uint16",
        "uint16",
        "uint16",
        "uint32",
    ]


@pytest.mark.parametrize(
    "count, text",
    [(0, "0.00 T"), (7, "7.00 T"), (1500, "1.50 kT"), (999_499, "999 kT"), (999_500, "1.00 MT")],
)
def test_token_count_in_si_form(count, text):
    assert datatrove.si_tokens(count) == text


def test_tokenizer_names_the_metadata_cannot_hold_are_refused(tmp_path):
    with pytest.raises(ValueError, match=re.escape("without '|'")):
        datatrove.DatatroveWriter(str(tmp_path / "a.ds"), str(tmp_path), "uint16", "a|b")


def test_without_metadata_the_token_size_must_be_given(tmp_path):
    for suffix in DT.files[:2]:
        shutil.copy(DATA / f"dt_small.ds{suffix}", tmp_path / f"a.ds{suffix}")
    with pytest.raises(FormatError, match="pass token_size"):
        datatrove.read_info(str(tmp_path / "a.ds"))
    assert datatrove.read_info(str(tmp_path / "a.ds"), token_size=2).tokens == 10


CORRUPTIONS = {
    "odd .ds": ("", lambda b: b + b"\x00", "", "not a whole number of 2-byte tokens"),
    "short .ds": ("", lambda b: b[:-2], "", "9 tokens, but its .metadata says 10"),
    "index size": (".index", lambda b: b[:-1], ".index", "not a whole number of 8-byte ends"),
    "index falls": (".index", lambda b: struct.pack("<4Q", 4, 3, 7, 10), ".index", "document 1"),
    "index short": (".index", lambda b: b[:-8], ".index", "last document ends at token 7"),
    "index past end": (
        ".index",
        lambda b: struct.pack("<4Q", 4, 4, 7, 11),
        ".index",
        "3 ends at token 11",
    ),
    "metadata": (".metadata", lambda b: b"gpt2\n10", ".metadata", "TOKENIZER|SIZE"),
    "token size": (".metadata", lambda b: b"gpt2|3\n10\n", ".metadata", "token size 3"),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_broken_files_are_refused_naming_file_and_problem(tmp_path, name):
    suffix, edit, blamed, message = CORRUPTIONS[name]
    path = str(tmp_path / "a.ds")
    for s in DT.files:
        shutil.copy(DATA / f"dt_small.ds{s}", path + s)
    target = pathlib.Path(path + suffix)
    target.write_bytes(edit(target.read_bytes()))
    for call in (datatrove.read_info, lambda p: list(datatrove.read_documents(p))):
        with pytest.raises(FormatError, match=message) as err:
            call(path)
        assert err.value.path == path + blamed
