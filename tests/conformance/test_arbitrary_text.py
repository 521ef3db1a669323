"""Hypothesis: arbitrary Unicode strings give the oracle's ids and decoded text."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import ALL_FILES, load_pair
from tests.support.tier import examples

INTERESTING = [
    " ",
    "  ",
    "\n",
    "\r\n",
    "\t",
    "\u00a0",
    "\u3000",
    "\u200b",
    "\u200d",
    "\ufeff",
    "'s",
    "'S",
    "'ll",
    "\u2019s",
    "<|endoftext|>",
    "<|im_start|>",
    "<|begin_of_text|>",
    "<|end",
    "|>",
    "<",
    "123",
    "4567",
    "\u0301",
    "\u0663",
    "é",
    "\u0295",
    "\U000105c0",
    "ſ",
    "日本",
    "한국어",
    "🙂",
    "👩\u200d👩\u200d👧",
    "Σ",
    "İ",
    "a",
    "Hello",
    " world",
    "\x00",
    "\ufffd",
    "<s>",
    "</s>",
    "<unk>",
    "\u2581",
    "<bos>",
    "<start_of_turn>",
    "\U0001f9ec",
    "\u0e01",
    # WordPiece, BERT and T5 / XLM-R specials, suffixes, digits, punctuation, CJK
    "[CLS]",
    "[SEP]",
    "[UNK]",
    "[MASK]",
    "##",
    "</w>",
    "<extra_id_0>",
    "<mask>",
    "<pad>",
    "2024",
    "...",
    "don't",
    "中文",
    "ﬁ",
    "Ⅻ",
]

text = st.lists(st.one_of(st.text(max_size=12), st.sampled_from(INTERESTING)), max_size=12).map(
    "".join
)


def _check(name: str, s: str) -> None:
    ours, ref = load_pair(name)
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
