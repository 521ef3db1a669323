"""The numpy hash table of the batched models (merge pairs, trie edges): a whole array of keys
looked up at once, and one key at a time in Python (``Probe``), both as a dict would."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok.models import hash_table
from tests.support.tier import examples

KEYS = st.integers(0, (1 << 63) - 1)


@settings(max_examples=examples(200), deadline=None)
@given(
    table=st.dictionaries(st.one_of(st.integers(0, 64), KEYS), KEYS, max_size=300),
    others=st.lists(st.one_of(st.integers(0, 200), KEYS), max_size=50),
)
def test_lookups_agree_with_a_dict(table, others):
    """Small keys crowd a few homes (long probe runs, wrapping past the last slot); large ones
    spread: both lookups give each key's value and -1 (or the default) for the others."""
    slot_keys, slot_values = hash_table.build(
        np.array(list(table), np.int64), np.array(list(table.values()), np.int64)
    )
    wanted = list(table) + others
    found = hash_table.lookup(slot_keys, slot_values, np.array(wanted, np.int64))
    assert found.tolist() == [table.get(k, hash_table.EMPTY) for k in wanted]
    probe = hash_table.Probe(slot_keys, slot_values)
    assert [probe.get(k) for k in wanted] == [table.get(k) for k in wanted]
    assert [probe.get(k, -5) for k in others] == [table.get(k, -5) for k in others]
