"""MDS (MosaicML streaming): the files of streaming's own MDSWriter byte for byte, index.json
included; streaming's own StreamingDataset reading batchtok's directories back; shard cuts,
packing, merges, atomic publication (the sidecar first, index.json last, an older set's extra
shards removed) and refusals of broken directories."""

from __future__ import annotations

import json
import os
import pathlib
import shutil
import struct

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok.formats import mds
from batchtok.formats.files import FormatError, read_sidecar
from batchtok.formats.packing import pack
from tests.formats.common import tmp_of, workdir
from tests.support import streaming
from tests.support.tier import examples

DATA = pathlib.Path(__file__).parent / "data"
# The golden directories tests/formats/data/mds_*/ (see tools/make_mds_golden.py, which made
# them with streaming's MDSWriter): (dtype, size_limit, documents, pack_length).
PACKED_DOCS = [[5, 6, 7, 0], [8, 0], list(range(10, 30)) + [0], [2**31 - 1, 0]]
GOLDEN = {
    "mds_example": ("int32", 1 << 26, [[1, 2, 3, 0], [4, 5, 0]], None),
    "mds_small_shards": ("int32", 200, [[1, 2, 3, 0], [4, 5, 0], list(range(100)), [7]], None),
    "mds_uint16": ("uint16", 1 << 26, [[65535, 0], list(range(300)), [1]], None),
    "mds_packed": ("int32", 300, PACKED_DOCS, 8),
}


def write(directory, docs, dtype="int32", **options) -> None:
    tmp = tmp_of(os.path.dirname(os.fspath(directory)))
    with mds.MdsWriter(os.fspath(directory), tmp, dtype, **options) as writer:
        for doc in docs:
            writer.add_document(doc)


def read(directory) -> list[list[int]]:
    return [a.tolist() for a in mds.read_documents(os.fspath(directory))]


def mds_files(directory: pathlib.Path) -> dict[str, bytes]:
    """Every file of the directory but batchtok's sidecar, by name."""
    return {p.name: p.read_bytes() for p in directory.iterdir() if "batchtok" not in p.name}


def golden_samples(name: str) -> list[list[int]]:
    _, _, docs, length = GOLDEN[name]
    if length is None:
        return docs
    return [row.tolist() for row in pack(docs, length, keep_last=False)]


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_directories_equal_those_mdswriter_writes(tmp_path, name):
    dtype, size_limit, docs, length = GOLDEN[name]
    out = tmp_path / name
    write(out, docs, dtype, size_limit=size_limit, pack_length=length, keep_last=False)
    assert mds_files(out) == mds_files(DATA / name)  # every shard and index.json, byte for byte
    assert read(DATA / name) == golden_samples(name)
    assert read(out) == golden_samples(name)


def test_the_golden_index_is_streamings_schema():
    index = json.loads((DATA / "mds_small_shards" / "index.json").read_text())
    assert sorted(index) == ["shards", "version"] and index["version"] == 2
    first = index["shards"][0]
    assert first == {
        "column_encodings": ["ndarray:int32"],
        "column_names": ["tokens"],
        "column_sizes": [None],
        "compression": None,
        "format": "mds",
        "hashes": [],
        "raw_data": {"basename": "shard.00000.mds", "bytes": 184, "hashes": {}},
        "samples": 0,  # MDSWriter's empty first shard: the first sample did not fit
        "size_limit": 200,
        "version": 2,
        "zip_data": None,
    }
    assert [s["samples"] for s in index["shards"]] == [0, 1, 1, 1, 1]


def test_the_documented_sample_layout():
    header = mds.sample_header(3, 4)  # column size 1 + 1 + 12, ndim 1 with a uint8 shape, 3
    assert header == struct.pack("<IBB", 14, 4, 3)
    assert mds.sample_header(300, 2) == struct.pack("<IBH", 603, 5, 300)
    assert mds.sample_header(70000, 4) == struct.pack("<IBI", 280005, 6, 70000)
    for length in (1, 255, 256, 65535, 65536, 70000):
        for itemsize in (2, 4):
            payload = mds.sample_size(length, itemsize) - 4
            assert mds.length_of(payload, itemsize) == length


def test_shards_are_cut_by_size_and_by_tokens():
    header = 8 + 100
    # each 1-id int32 sample costs 4 + 1 + 1 + 4 bytes, and its 4-byte offset: 14 bytes
    assert [list(c) for c in mds.shard_cuts([1] * 5, 4, header, 108 + 28)] == [[1, 1]] * 2 + [[1]]
    assert [list(c) for c in mds.shard_cuts([3, 3, 2, 6, 1], 4, header, None, 5)] == [
        [3],
        [3, 2],
        [6],
        [1],
    ]
    # a first sample over the limit leaves an empty shard before it, as MDSWriter does
    assert [list(c) for c in mds.shard_cuts([50, 1], 4, header, 150)] == [[], [50], [1]]
    assert list(mds.shard_cuts([], 4, header)) == []


def test_a_job_sized_limit_cuts_shards_of_at_most_that_many_ids(tmp_path):
    docs = [[i] * n for i, n in enumerate([3, 3, 2, 6, 1], start=1)]
    write(tmp_path / "a.mds", docs, max_tokens=5)
    index = json.loads((tmp_path / "a.mds" / "index.json").read_text())
    assert [s["samples"] for s in index["shards"]] == [1, 2, 1, 1]
    assert read(tmp_path / "a.mds") == docs


def test_empty_documents_are_no_samples(tmp_path):
    write(tmp_path / "a.mds", [[], [1, 0], [], [2]])
    assert read(tmp_path / "a.mds") == [[1, 0], [2]]
    info = mds.read_info(str(tmp_path / "a.mds"))
    assert (info.documents, info.tokens, info.shards) == (2, 3, 1)
    assert read_sidecar(mds.sidecar_stem(str(tmp_path / "a.mds")))["documents"] == 2
    write(tmp_path / "b.mds", [[], []])
    assert (tmp_path / "b.mds" / "index.json").read_text() == '{"shards": [], "version": 2}'
    assert sorted(os.listdir(tmp_path / "b.mds")) == ["index.batchtok.json", "index.json"]
    assert mds.read_info(str(tmp_path / "b.mds")) == mds.MdsInfo("int32", 0, 0, 0)


def test_the_sidecar_records_every_file_and_the_provenance(tmp_path):
    out = tmp_path / "a.mds"
    write(out, [[1, 2], [3]] * 20, "uint16", size_limit=300, provenance={"k": 1})
    doc = read_sidecar(mds.sidecar_stem(str(out)))
    assert doc["format"] == "mds" and doc["provenance"] == {"k": 1}
    assert set(doc["files"]) == set(doc["xxh3_128"]) == set(mds_files(out))
    for name, digest in doc["xxh3_128"].items():
        assert xxhash.xxh3_128_hexdigest((out / name).read_bytes()) == digest
    assert (doc["documents"], doc["tokens"], doc["shards"]) == (40, 60, len(doc["files"]) - 1)
    assert mds.read_provenance(str(out)) == {"k": 1}
    assert mds.set_names(str(out)) == [
        "index.batchtok.json",
        *sorted(n for n in doc["files"] if n != "index.json"),
        "index.json",
    ]


def test_the_sidecar_goes_first_and_index_json_last(tmp_path, monkeypatch):
    order = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (order.append(dst), real(src, dst)))
    write(tmp_path / "a.mds", [[1, 2, 3]] * 30, size_limit=300)
    names = [os.path.basename(p) for p in order]
    assert names[0] == "index.batchtok.json" and names[-1] == "index.json"
    assert names[1:-1] == [mds.shard_name(i) for i in range(len(names) - 2)]
    assert len(names) > 4
    assert os.listdir(tmp_of(str(tmp_path))) == []


def test_a_rewrite_with_fewer_shards_removes_the_older_sets_extra_ones(tmp_path):
    out = tmp_path / "a.mds"
    write(out, [[1, 2, 3]] * 30, size_limit=300)
    before = sorted(os.listdir(out))
    previous = [str(out / name) for name in mds.set_names(str(out))]
    write(out, [[4, 5]], size_limit=300, previous=previous)
    assert sorted(os.listdir(out)) == ["index.batchtok.json", "index.json", "shard.00000.mds"]
    assert len(before) > 4
    assert read(out) == [[4, 5]]


def test_a_failed_publish_leaves_no_index(tmp_path, monkeypatch):
    out = tmp_path / "a.mds"
    write(out, [[1, 2]])
    real = os.replace

    def fail_on_index(src, dst):
        if dst.endswith("index.json"):
            raise OSError("disk gone")
        real(src, dst)

    monkeypatch.setattr(os, "replace", fail_on_index)
    with pytest.raises(OSError, match="disk gone"):
        write(out, [[3, 4, 5]])
    monkeypatch.undo()
    assert not (out / "index.json").exists()
    with pytest.raises(FormatError, match="index.json: missing"):
        mds.read_info(str(out))
    assert os.listdir(tmp_of(str(tmp_path))) == []


def test_an_id_outside_the_dtype_leaves_nothing(tmp_path):
    with pytest.raises(ValueError, match="does not fit"):
        write(tmp_path / "a.mds", [[1], [65536]], "uint16")
    assert sorted(os.listdir(tmp_path)) == [".batchtok"]
    assert os.listdir(tmp_of(str(tmp_path))) == []


def test_a_shard_past_4_gib_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(mds, "_MAX_SHARD", 300)  # uint32 offsets: a shard stays below 4 GiB
    with pytest.raises(ValueError, match="no shard may reach 4 GiB"):
        write(tmp_path / "a.mds", [list(range(100))], size_limit=None)
    assert sorted(os.listdir(tmp_path)) == [".batchtok"]


@settings(max_examples=examples(60), deadline=None)
@given(
    docs=st.lists(st.lists(st.integers(0, 2**31 - 1), max_size=30), max_size=20),
    size_limit=st.one_of(st.none(), st.integers(150, 600)),
    length=st.one_of(st.none(), st.integers(1, 9)),
    keep_last=st.booleans(),
)
def test_samples_read_back_as_written_and_merges_equal_one_write(
    docs, size_limit, length, keep_last
):
    want = (
        [d for d in docs if d]
        if length is None
        else [r.tolist() for r in pack(docs, length, keep_last)]
    )
    options = {"size_limit": size_limit, "pack_length": length, "keep_last": keep_last}
    with workdir() as d:
        whole = pathlib.Path(d, "whole.mds")
        write(whole, docs, **options)
        assert read(whole) == want
        info = mds.read_info(str(whole))
        assert (info.documents, info.tokens) == (len(want), sum(map(len, want)))
        tokens = mds.MdsTokens(str(whole))
        flat = [i for row in want for i in row]
        try:
            assert tokens.total == len(flat)
            for start in range(0, len(flat) + 2, 7):
                assert tokens.read(start, 11) == flat[start : start + 11]
        finally:
            tokens.close()
        parts = [pathlib.Path(d, "p0.mds"), pathlib.Path(d, "p1.mds")]
        write(parts[0], docs[: len(docs) // 2])
        write(parts[1], docs[len(docs) // 2 :])
        merged = pathlib.Path(d, "merged.mds")
        mds.merge([str(p) for p in parts], str(merged), tmp_of(d), dtype="int32", **options)
        assert mds_files(merged) == mds_files(whole)


def _set(shard: str, offset: int, value: bytes):
    def edit(directory: pathlib.Path) -> None:
        data = bytearray((directory / shard).read_bytes())
        data[offset : offset + len(value)] = value
        (directory / shard).write_bytes(bytes(data))

    return edit


def _index(change):
    def edit(directory: pathlib.Path) -> None:
        index = json.loads((directory / "index.json").read_text())
        change(index)
        (directory / "index.json").write_text(json.dumps(index))

    return edit


def _shorten(directory: pathlib.Path) -> None:
    data = (directory / "shard.00001.mds").read_bytes()
    (directory / "shard.00001.mds").write_bytes(data[:-2])


CORRUPTIONS = {
    "count": (_set("shard.00001.mds", 0, struct.pack("<I", 2)), "shard.00001.mds", "2 samples"),
    "offset": (
        _set("shard.00001.mds", 4, struct.pack("<I", 180)),
        "shard.00001.mds",
        "first sample starts at byte 180",
    ),
    "end": (
        _set("shard.00001.mds", 8, struct.pack("<I", 300)),
        "shard.00001.mds",
        "end at byte 300",
    ),
    "config": (_set("shard.00001.mds", 14, b"X"), "shard.00001.mds", "its config differs"),
    "size": (_shorten, "shard.00001.mds", "bytes, but index.json says"),
    # mds_packed's shard 0 holds two samples of 38 bytes: the first one made a byte shorter
    "sample": (_set("shard.00000.mds", 8, struct.pack("<I", 229)), "shard.00000.mds", "sample 0"),
    "missing shard": (
        lambda d: (d / "shard.00002.mds").unlink(),
        "shard.00002.mds",
        "missing",
    ),
    "not json": (lambda d: (d / "index.json").write_text("{"), "index.json", "not JSON"),
    "version": (_index(lambda i: i.update(version=1)), "index.json", "version 2"),
    "compressed": (
        _index(lambda i: i["shards"][1].update(compression="zstd")),
        "index.json",
        "compressed",
    ),
    "column": (
        _index(lambda i: i["shards"][1].update(column_encodings=["bytes"])),
        "index.json",
        "not one 'tokens' column",
    ),
}


@pytest.mark.parametrize("name", sorted(CORRUPTIONS))
def test_broken_directories_are_refused_naming_file_and_problem(tmp_path, name):
    edit, culprit, message = CORRUPTIONS[name]
    out = tmp_path / "a.mds"
    shutil.copytree(DATA / ("mds_packed" if name == "sample" else "mds_small_shards"), out)
    edit(out)
    for call in (mds.read_info, lambda p: list(mds.read_documents(p))):
        with pytest.raises(FormatError, match=message) as err:
            call(str(out))
        assert err.value.path.endswith(culprit), err.value


# -- streaming's own reader ------------------------------------------------------------------


def test_streaming_reads_batchtoks_directories_back(tmp_path):
    """StreamingDataset over batchtok's directories, by index and by iteration, several as
    streams: uint16, int32 and uint32 ids, shapes of 1, 2 and 4 bytes, small shards with an
    empty one, empty documents left out, packed rows."""
    cases = {
        "a.mds": ("uint16", 200, [[65535, 0], [], list(range(300)), [1]], None),
        "b.mds": ("int32", 1 << 26, [[2**31 - 1, 0], list(range(70_000)), [], [3]], None),
        "c.mds": ("uint32", 300, [[2**32 - 1], [4, 5, 6]] * 5, None),
        "d.mds": ("int32", 400, PACKED_DOCS * 3, 8),
    }
    want = []
    for name, (dtype, size_limit, docs, length) in cases.items():
        write(tmp_path / name, docs, dtype, size_limit=size_limit, pack_length=length)
        got = streaming.read_back(tmp_path / name)
        assert got["samples"] == got["iterated"] == read(tmp_path / name)
        assert got["dtypes"] == [dtype]
        want += read(tmp_path / name)
    assert sum(len(read(tmp_path / name)) for name in cases) == len(want) > 20
    assert streaming.read_back(*(tmp_path / name for name in cases))["samples"] == want
