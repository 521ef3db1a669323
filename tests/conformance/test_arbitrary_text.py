"""Hypothesis: arbitrary Unicode strings give the oracle's ids and decoded text."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support.adversarial import INTERESTING
from tests.support.oracle import ALL_FILES, pair_for
from tests.support.tier import examples

text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(INTERESTING)), max_size=12).map(
    "".join
)


def _check(name: str, s: str) -> None:
    ours, ref = pair_for(name)
    for add in (True, False):
        expected = ref.encode(s, add_special_tokens=add).ids
        assert ours.encode_ids(s, add) == expected, (name, s, add)
    for skip in (True, False):
        assert ours.decode(expected, skip) == ref.decode(expected, skip_special_tokens=skip)


def _property(name: str):
    @settings(
        max_examples=examples(2000),
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
