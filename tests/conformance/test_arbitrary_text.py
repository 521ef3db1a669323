"""Hypothesis: arbitrary Unicode strings give the oracle's ids and decoded text."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.adversarial import INTERESTING
from tests.support.oracle import ALL_FILES, outcome, pair_for
from tests.support.tier import examples

text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(INTERESTING)), max_size=12).map(
    "".join
)


def _check(name: str, s: str) -> None:
    ours, ref = pair_for(name)
    decodable = []
    for add in (True, False):
        # A file may refuse a text (a kitchen sink truncating only_second refuses every single
        # sequence that needs cutting): batchtok must refuse exactly where the oracle does.
        want, theirs = outcome(lambda add=add: ref.encode(s, add_special_tokens=add).ids)
        got, mine = outcome(lambda add=add: ours.encode_ids(s, add))
        assert got == want, (name, s, add, mine, theirs)
        if want == "ok":
            assert mine == theirs, (name, s, add)
            decodable.append(theirs)
    for ids in decodable:
        for skip in (True, False):
            assert ours.decode(ids, skip) == ref.decode(ids, skip_special_tokens=skip)


def _property(name: str):
    @settings(
        max_examples=examples(2000, fast=100),  # one such property per fixture file
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow],
        database=None,
    )
    @given(text)
    def test(s):
        _check(name, s)

    test.__name__ = f"test_arbitrary_text_{name.replace('-', '_')}"
    return test


for _name in ALL_FILES:
    globals()[f"test_arbitrary_text_{_name.replace('-', '_')}"] = _property(_name)
