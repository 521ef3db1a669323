"""What every trainer format promises: documents read back as written, a merge of shards
equal to writing everything at once (packed or not, wherever the shards were cut), the
provenance sidecar, and nothing half-written ever visible."""

from __future__ import annotations

import os
from array import array

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok.formats.files import CHUNK, FormatError, read_sidecar
from batchtok.formats.packing import pack
from tests.formats.common import (
    EDGE_VOCABS,
    FORMATS,
    cuts,
    documents,
    flat,
    layout,
    split,
    tmp_of,
    workdir,
)
from tests.support.tier import examples

NAMES = sorted(FORMATS)


def _sidecar_hashes_hold(dest: str) -> None:
    """The sidecar holds the xxh3-128 of every file it sizes, as they are on disk."""
    doc = read_sidecar(dest)
    assert set(doc["xxh3_128"]) == set(doc["files"])
    for name, digest in doc["xxh3_128"].items():
        with open(os.path.join(os.path.dirname(dest), name), "rb") as f:
            assert xxhash.xxh3_128_hexdigest(f.read()) == digest, name


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=examples(200), deadline=None)
@given(case=st.sampled_from(EDGE_VOCABS).flatmap(lambda v: st.tuples(st.just(v), documents(v))))
def test_documents_read_back_as_written(name, case):
    fmt = FORMATS[name]
    vocab, docs = case
    with workdir() as d:
        dest = fmt.dest(os.path.join(d, "out"), "a")
        fmt.write(dest, docs, fmt.dtype(vocab), provenance={"vocab": vocab})
        assert fmt.read(dest) == docs
        info = fmt.module.read_info(dest)
        assert (info.dtype, info.documents, info.tokens) == (
            fmt.dtype(vocab),
            len(docs),
            sum(map(len, docs)),
        )
        assert fmt.module.read_provenance(dest) == {"vocab": vocab}
        _sidecar_hashes_hold(dest)
        assert os.listdir(tmp_of(os.path.dirname(dest))) == []


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=examples(150), deadline=None)
@given(
    case=documents(65500).flatmap(lambda docs: st.tuples(st.just(docs), cuts(len(docs)))),
    length=st.one_of(st.none(), st.integers(1, 9)),
    keep_last=st.booleans(),
)
def test_merge_equals_writing_everything_at_once(name, case, length, keep_last):
    """Packing at merge gives the rows of packing the whole file, whatever the shards."""
    fmt = FORMATS[name]
    docs, points = case
    dtype = fmt.dtype(70000)
    options = {"pack_length": length, "keep_last": keep_last, "provenance": {"k": 1}}
    with workdir() as d:
        parts = []
        for i, shard in enumerate(split(docs, points)):
            parts.append(fmt.dest(d, f"part{i}"))
            fmt.write(parts[-1], shard, dtype)
        whole, merged = fmt.dest(d, "whole"), fmt.dest(d, "merged")
        fmt.write(whole, docs, dtype, **options)
        info = fmt.module.merge(parts, merged, tmp_of(d), dtype=dtype, **options)
        assert fmt.bytes(merged) == fmt.bytes(whole)
        _sidecar_hashes_hold(merged)  # hashed while copied, a dropped tail left out
        _sidecar_hashes_hold(whole)
        same = ("documents", "tokens", "dtype", "pack_length", "provenance")
        assert [read_sidecar(merged)[k] for k in same] == [read_sidecar(whole)[k] for k in same]
        want = docs if length is None else [r.tolist() for r in pack(docs, length, keep_last)]
        assert fmt.read(merged) == want
        assert info.documents == len(want)


@pytest.mark.parametrize("name", NAMES)
def test_merge_refuses_mixed_dtypes(tmp_path, name):
    fmt = FORMATS[name]
    a, b = fmt.dest(str(tmp_path), "a"), fmt.dest(str(tmp_path), "b")
    fmt.write(a, [[1]], fmt.dtype(100))
    fmt.write(b, [[1]], fmt.dtype(100_000))
    with pytest.raises(ValueError, match="dtypes"):
        fmt.module.merge([a, b], fmt.dest(str(tmp_path), "c"), tmp_of(str(tmp_path)))


@pytest.mark.parametrize("name", NAMES)
def test_an_id_outside_the_dtype_leaves_nothing(tmp_path, name):
    fmt = FORMATS[name]
    dest = fmt.dest(str(tmp_path), "a")
    with pytest.raises(ValueError, match="does not fit"):
        fmt.write(dest, [[1], [65536]], "uint16")
    assert sorted(os.listdir(tmp_path)) == [".batchtok"]
    assert os.listdir(tmp_of(str(tmp_path))) == []


@pytest.mark.parametrize("name", NAMES)
def test_a_failed_publish_never_pairs_old_and_new_files(tmp_path, monkeypatch, name):
    """The primary file (the one readers open first) goes last and the old one is removed
    first: after a failure at its rename the set reads as missing, not as a mix."""
    fmt = FORMATS[name]
    dest = fmt.dest(str(tmp_path), "a")
    fmt.write(dest, [[1, 2]], "uint16")
    primary = dest + (".idx" if name == "megatron" else "")
    real = os.replace

    def fail_on_primary(src, dst):
        if dst == primary:
            raise OSError("disk gone")
        real(src, dst)

    monkeypatch.setattr(os, "replace", fail_on_primary)
    with pytest.raises(OSError, match="disk gone"):
        fmt.write(dest, [[3, 4, 5]], "uint16")
    monkeypatch.undo()
    assert not os.path.exists(primary)
    with pytest.raises(FormatError, match="missing"):
        fmt.module.read_info(dest)
    assert os.listdir(tmp_of(str(tmp_path))) == []


@pytest.mark.parametrize("name", NAMES)
def test_the_primary_file_is_published_last(tmp_path, monkeypatch, name):
    fmt = FORMATS[name]
    order = []
    real = os.replace
    monkeypatch.setattr(os, "replace", lambda src, dst: (order.append(dst), real(src, dst)))
    dest = fmt.dest(str(tmp_path), "a")
    fmt.write(dest, [[1, 2]], "uint16")
    want = {
        "megatron": ["a.bin", "a.batchtok.json", "a.idx"],
        "datatrove": ["a.ds.index", "a.ds.metadata", "a.ds.batchtok.json", "a.ds"],
    }[name]
    assert [os.path.basename(p) for p in order] == want


@pytest.mark.parametrize("name", NAMES)
def test_a_sidecar_describing_other_files_is_refused(tmp_path, name):
    fmt = FORMATS[name]
    a, b = fmt.dest(str(tmp_path), "a"), fmt.dest(str(tmp_path), "b")
    fmt.write(a, [[1, 2]], "uint16", provenance={"tokenizer_sha256": "x"})
    fmt.write(b, [[1, 2, 3]], "uint16")
    data = fmt.files[0]
    os.replace(b + data, a + data)
    with pytest.raises(FormatError, match="as 4 bytes, but it has 6"):
        fmt.module.read_provenance(a)


LONG = 300  # documents this long are converted through Arrow, shorter ones through array()


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("source", ["i", "q", "H", "I", "<i8", "<u2", "<i4", "<u4", "<i8[::2]"])
def test_every_kind_of_id_sequence_is_written_alike(tmp_path, name, source):
    """Lists, arrays and ndarrays, short or long, give the same bytes; an id out of range is
    refused the same way whichever path converts it."""
    import numpy

    fmt = FORMATS[name]
    docs = [list(range(n)) + [65535] for n in (3, LONG)]

    def kind(doc):
        if source.startswith("<"):
            dtype, _, step = source.partition("[")
            values = numpy.array(doc, dtype=dtype)
            return values.repeat(2)[::2] if step else values  # strided: copied via array()
        return array(source, doc)

    want, got = fmt.dest(str(tmp_path), "lists"), fmt.dest(str(tmp_path), "kinds")
    fmt.write(want, docs, "uint16")
    fmt.write(got, [kind(doc) for doc in docs], "uint16")
    assert fmt.bytes(got) == fmt.bytes(want)
    if source not in ("H", "<u2"):
        for n in (3, LONG):
            with pytest.raises(ValueError, match="does not fit"):
                fmt.write(got, [kind([*range(n), 65536 if source != "i" else -1])], "uint16")


@pytest.mark.parametrize("name", NAMES)
def test_indexes_longer_than_one_chunk(tmp_path, name):
    """Indexes are written and read CHUNK entries at a time: pointers and ends carry over."""
    fmt = FORMATS[name]
    n = CHUNK + 1000
    docs = [[i % 7] * (i % 3) for i in range(n)]  # every third document empty
    dest = fmt.dest(str(tmp_path), "a")
    fmt.write(dest, docs, "uint16")
    assert fmt.read(dest) == docs
    if name == "megatron":
        assert tuple(fmt.bytes(dest)) == layout(docs, 8, "H")
    packed = fmt.dest(str(tmp_path), "packed")
    fmt.module.merge([dest, dest], packed, tmp_of(str(tmp_path)), pack_length=1)
    assert fmt.read(packed) == [[t] for t in flat(docs) * 2]
