"""Packing: every token once and in order, rows of exactly N, the last row kept or dropped,
EOS on non-empty documents, and the same rows however the documents are fed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok.formats.packing import Packer, pack, with_eos
from tests.formats.common import cuts, documents, flat, split
from tests.support.tier import examples

EOS = 99


@settings(max_examples=examples(300), deadline=None)
@given(documents(100), st.integers(1, 12), st.booleans(), st.booleans())
def test_every_token_once_in_order_in_rows_of_n(docs, length, keep_last, eos):
    rows = [r.tolist() for r in pack(docs, length, keep_last, EOS if eos else None)]
    stream = flat([doc + [EOS] if eos and doc else doc for doc in docs])
    kept = stream if keep_last else stream[: len(stream) - len(stream) % length]
    assert flat(rows) == kept
    assert all(len(row) == length for row in rows[:-1])
    if rows:
        assert 1 <= len(rows[-1]) <= length
        assert keep_last or len(rows[-1]) == length
    assert len(rows) == (-(-len(kept) // length))


@settings(max_examples=examples(300), deadline=None)
@given(
    documents(100).flatmap(lambda docs: st.tuples(st.just(docs), cuts(len(docs)))),
    st.integers(1, 12),
    st.booleans(),
)
def test_rows_do_not_depend_on_how_the_documents_are_fed(case, length, keep_last):
    """One packer carried across shards in order, or the documents regrouped at other
    boundaries, gives the rows of packing them all at once."""
    docs, points = case
    whole = [r.tolist() for r in pack(docs, length, keep_last)]
    packer = Packer(length, keep_last)
    rows = []
    for shard in split(docs, points):
        for doc in shard:
            rows += packer.add(doc)
    rows += packer.finish()
    assert [r.tolist() for r in rows] == whole
    regrouped = [flat(shard) for shard in split(docs, points)]  # other document boundaries
    assert [r.tolist() for r in pack(regrouped, length, keep_last)] == whole


def test_eos_goes_on_non_empty_documents_only():
    assert with_eos([], EOS).tolist() == []
    assert with_eos([1, 2], EOS).tolist() == [1, 2, EOS]


def test_a_long_document_fills_many_rows():
    packer = Packer(3, keep_last=False)
    assert [r.tolist() for r in packer.add(range(10))] == [[0, 1, 2], [3, 4, 5], [6, 7, 8]]
    assert packer.finish() == []
    assert packer.tokens == 10


@settings(max_examples=examples(300), deadline=None)
@given(documents(100), st.integers(1, 12), st.booleans(), st.booleans())
def test_each_rows_pieces_give_back_its_documents(docs, length, keep_last, eos):
    """A row's pieces tile it (their lengths, its seq_lens, sum to its length, each starting
    where the last ended), name the documents it holds in order, and read back each document's
    ids (with its EOS) whole, from its first piece to its last."""
    packer = Packer(length, keep_last, EOS if eos else None)
    rows = []
    for doc in docs:
        rows += packer.add_pieces(doc)
    rows += packer.finish_pieces()
    assert [r.tolist() for r, _ in rows] == [
        r.tolist() for r in pack(docs, length, keep_last, EOS if eos else None)
    ]
    found: dict[int, list[int]] = {}
    last = (-1, 0)
    for row, pieces in rows:
        assert sum(p.length for p in pieces) == len(row)
        assert [p.offset for p in pieces] == [
            sum(q.length for q in pieces[:i]) for i in range(len(pieces))
        ]
        for p in pieces:
            assert p.length >= 1
            assert (p.document, p.start) > last  # in order, never twice
            last = (p.document, p.start)
            got = found.setdefault(p.document, [])
            assert p.start == len(got)  # a document's pieces follow one another
            got += row[p.offset : p.offset + p.length].tolist()
    want = {i: (doc + [EOS] if eos and doc else doc) for i, doc in enumerate(docs)}
    for number, ids in found.items():
        assert ids == want[number][: len(ids)]
        if keep_last:
            assert ids == want[number]
    assert keep_last is False or set(found) == {i for i, ids in want.items() if ids}
