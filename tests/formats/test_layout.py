"""The cut and shuffle rules of :mod:`batchtok.formats.layout`, proved on any lengths: files
partition the documents in order, hold at most the limit (a longer document alone), and are
greedy (the next document would not have fitted); packed files hold whole rows; a shuffle is a
permutation that keeps each window's documents in the window's places, and depends only on
the seed, the salt and the window."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok.formats import layout

LENGTHS = st.lists(st.integers(0, 50), max_size=200).map(lambda x: np.array(x, dtype=np.int64))
LIMITS = st.integers(1, 120)


@settings(max_examples=300, deadline=None)
@given(LENGTHS, LIMITS)
def test_document_cuts_partition_in_order_within_the_limit_greedily(lengths, limit) -> None:
    starts = layout.cut_documents(lengths, limit)
    assert starts[0] == 0 and starts[-1] == len(lengths)
    if len(lengths) == 0:
        assert list(starts) == [0, 0]  # one empty file
    else:
        assert all(a < b for a, b in zip(starts[:-1], starts[1:]))
    for a, b in zip(starts[:-1], starts[1:]):
        held = int(lengths[a:b].sum())
        assert held <= limit or b - a == 1  # a longer document is alone
        if b < len(lengths):  # greedy: the next document would not have fitted
            assert held + int(lengths[b]) > limit


@settings(max_examples=200, deadline=None)
@given(LENGTHS)
def test_without_a_limit_there_is_one_file(lengths) -> None:
    assert list(layout.cut_documents(lengths, None)) == [0, len(lengths)]


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 5000), st.integers(1, 64), st.integers(1, 400), st.booleans())
def test_packed_cuts_hold_whole_rows_and_every_kept_id(total, pack, limit, keep_last) -> None:
    limit = max(limit, pack)
    spans = layout.cut_packed(total, pack, limit, keep_last)
    kept = total if keep_last else total - total % pack
    assert spans[0][0] == 0 and spans[-1][1] == kept
    for (a, b), (c, _) in zip(spans, spans[1:]):
        assert b == c and (b - a) % pack == 0  # whole rows, but perhaps the last file's last
    assert all(b - a <= limit for a, b in spans)
    assert all(b - a == (limit // pack) * pack for a, b in spans[:-1])


@settings(max_examples=300, deadline=None)
@given(LENGTHS, st.integers(0, 2**32), st.integers(1, 300), st.integers(0, 2**63 - 1))
def test_a_shuffle_permutes_within_windows_and_depends_only_on_its_inputs(
    lengths, seed, window, salt
) -> None:
    order, starts = layout.shuffle_order(lengths, seed, window, salt)
    assert sorted(order.tolist()) == list(range(len(lengths)))
    assert list(starts) == list(layout.windows(lengths, window))
    for a, b in zip(starts[:-1], starts[1:]):
        assert sorted(order[a:b].tolist()) == list(range(a, b))  # a window stays in place
        held = int(lengths[a:b].sum())
        assert held <= window or b - a == 1
    again, _ = layout.shuffle_order(lengths.copy(), seed, window, salt)
    assert again.tolist() == order.tolist()


def test_the_permutation_is_pinned() -> None:
    """The same seed gives the same order in every numpy (PCG64's raw stream is stable):
    a changed one would reorder every shuffled output, so it is pinned here."""
    assert layout.permutation(8, 7, 0, 0).tolist() == [6, 3, 4, 0, 2, 7, 5, 1]
    assert layout.permutation(8, 7, 0, 1).tolist() != layout.permutation(8, 7, 0, 0).tolist()


def test_no_seed_keeps_the_plans_order() -> None:
    lengths = np.array([3, 1, 2], dtype=np.int64)
    order, starts = layout.shuffle_order(lengths, None, 2, 0)
    assert order.tolist() == [0, 1, 2] and starts.tolist() == [0, 3]
