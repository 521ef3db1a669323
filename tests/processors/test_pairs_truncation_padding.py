"""Pairs, truncation, padding and the full Encoding against the oracle (tokenizers 0.23.3).

Every post-processor (none, BertProcessing, RobertaProcessing, TemplateProcessing, Sequence,
ByteLevel) × single/pair × add_special_tokens, under every truncation strategy × direction ×
stride × max_length and padding variants, set through the API and read from tokenizer.json.
Encodings are compared whole: ids, tokens, type ids, attention and special-token masks, sequence
ids, and the overflowing encodings recursively. Errors must match errors. The ids fast paths
must equal ``[e.ids for e in encode_batch(...)]``.
"""

from __future__ import annotations

import functools
import itertools

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import EncodeError, Tokenizer, TokenizerFileError
from tests.support import tier
from tests.support.adversarial import adversarial_strings
from tests.support.caches import per_module_cache
from tests.support.oracle import byte_level_base, outcome, pair_for, with_changes
from tests.support.tier import examples

# ---------------------------------------------------------------------------------------------
# Synthetic tokenizers: the oracle-trained byte-level BPE with each post-processor

SPECIALS = ["<s>", "</s>", "[CLS]", "[SEP]"]


def _specials() -> dict[str, int]:
    size = len(byte_level_base()["model"]["vocab"])
    return {content: size + i for i, content in enumerate(SPECIALS)}


def _added() -> list[dict]:
    return [
        {
            "id": i,
            "content": c,
            "single_word": False,
            "lstrip": False,
            "rstrip": False,
            "normalized": False,
            "special": True,
        }
        for c, i in _specials().items()
    ]


def _piece(name: str, type_id: int) -> dict:
    kind = "Sequence" if name in ("A", "B") else "SpecialToken"
    return {kind: {"id": name, "type_id": type_id}}


def _template(single, pair) -> dict:
    ids = _specials()
    return {
        "type": "TemplateProcessing",
        "single": [_piece(*p) for p in single],
        "pair": [_piece(*p) for p in pair],
        "special_tokens": {n: {"id": n, "ids": [ids[n]], "tokens": [n]} for n in SPECIALS},
    }


def _bert(kind: str = "BertProcessing", **extra) -> dict:
    ids = _specials()
    return {"type": kind, "sep": ["[SEP]", ids["[SEP]"]], "cls": ["[CLS]", ids["[CLS]"]], **extra}


BYTE_LEVEL = {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True}
BERT_TEMPLATE = _template(
    [("[CLS]", 0), ("A", 0), ("[SEP]", 0)],
    [("[CLS]", 0), ("A", 0), ("[SEP]", 0), ("B", 1), ("[SEP]", 1)],
)
PROCESSORS = {
    "none": None,
    "bert": _bert(),
    "roberta": _bert("RobertaProcessing", trim_offsets=True, add_prefix_space=False),
    # without its two offset fields the library reads a Roberta object as BertProcessing
    "roberta_as_bert": _bert("RobertaProcessing"),
    "byte_level": BYTE_LEVEL,
    "template_bert": BERT_TEMPLATE,
    "template_odd": _template(
        [("<s>", 3), ("A", 2), ("A", 5), ("</s>", 1)],
        [("B", 4), ("<s>", 0), ("A", 7), ("B", 2)],
    ),
    "template_only_a": _template([("A", 1)], [("A", 0), ("</s>", 2)]),
    "sequence_byte_level_template": {"type": "Sequence", "processors": [BYTE_LEVEL, BERT_TEMPLATE]},
    "sequence_template_byte_level": {"type": "Sequence", "processors": [BERT_TEMPLATE, BYTE_LEVEL]},
    # the second template receives one encoding per piece of the first: two -> its pair
    # template, three or more -> tokenizers panics (batchtok raises)
    "sequence_two_templates": {
        "type": "Sequence",
        "processors": [
            _template([("<s>", 0), ("A", 0)], [("A", 0), ("B", 1)]),
            _template([("A", 0)], [("B", 1), ("[SEP]", 1), ("A", 0)]),
        ],
    },
    "sequence_bert_roberta": {
        "type": "Sequence",
        "processors": [
            _bert(),
            _bert("RobertaProcessing", trim_offsets=False, add_prefix_space=True),
        ],
    },
}


def synthetic_json(processor: str, **top) -> str:
    return with_changes(
        byte_level_base(), added_tokens=_added(), post_processor=PROCESSORS[processor], **top
    )


@per_module_cache
def _loaded(tokenizer_json: str) -> Tokenizer:
    return Tokenizer.from_str(tokenizer_json)


def fresh_pair(tokenizer_json: str) -> tuple[Tokenizer, tokenizers.Tokenizer]:
    """A batchtok tokenizer sharing the cached one's engine but with its own settings (so
    enable_* cannot leak between tests), and a fresh oracle tokenizer."""
    base = _loaded(tokenizer_json)
    ours = Tokenizer.__new__(Tokenizer)
    ours.__dict__.update(base.__dict__)
    return ours, tokenizers.Tokenizer.from_str(tokenizer_json)


# ---------------------------------------------------------------------------------------------
# Comparison of whole encodings


def encoding_view(e, depth: int = 0) -> dict:
    """Everything batchtok tracks of an Encoding, overflowing included, as plain data."""
    return {
        "ids": list(e.ids),
        "tokens": list(e.tokens),
        "type_ids": list(e.type_ids),
        "attention_mask": list(e.attention_mask),
        "special_tokens_mask": list(e.special_tokens_mask),
        "sequence_ids": list(e.sequence_ids),
        "n_sequences": e.n_sequences,
        "len": len(e),
        "overflowing": [encoding_view(o, depth + 1) for o in e.overflowing],
    }


def outcome_of(fn):
    kind, value = outcome(fn)
    if kind == "error":
        return "error"
    if isinstance(value, list):
        return [encoding_view(e) for e in value]
    return encoding_view(value)


def compare_encode(ours, ref, seq, pair=None, add=True, pretok=False) -> str | None:
    want = outcome_of(lambda: ref.encode(seq, pair, is_pretokenized=pretok, add_special_tokens=add))
    got = outcome_of(lambda: ours.encode(seq, pair, is_pretokenized=pretok, add_special_tokens=add))
    if got != want:
        return f"encode({seq!r}, {pair!r}, add={add}, pretok={pretok}):\n ours {got}\n want {want}"
    if want != "error" and not pretok:
        fast = outcome(lambda: ours.encode_ids(seq, add, pair))
        if fast != ("ok", want["ids"]):
            return f"encode_ids({seq!r}, {pair!r}, add={add}) = {fast}, want {want['ids']}"
    return None


def compare_batch(ours, ref, inputs, add=True) -> str | None:
    want = outcome_of(lambda: ref.encode_batch(inputs, add_special_tokens=add))
    got = outcome_of(lambda: ours.encode_batch(inputs, add_special_tokens=add))
    if got != want:
        return f"encode_batch({inputs!r}, add={add}):\n ours {got}\n want {want}"
    if want == "error":
        return None
    texts = [x if isinstance(x, str) else x[0] for x in inputs]
    pairs = [None if isinstance(x, str) else x[1] for x in inputs]
    ids = outcome(
        lambda: ours.encode_batch_ids(texts, add, None if all(p is None for p in pairs) else pairs)
    )
    if ids != ("ok", [e["ids"] for e in want]):
        return f"encode_batch_ids({inputs!r}, add={add}) = {ids}"
    return None


def _fail_if(problems: list) -> None:
    problems = [p for p in problems if p]
    assert not problems, f"{len(problems)} differences; first ones:\n" + "\n".join(problems[:5])


SHORT = ["", "a", "Hello world", "hello <s> world", "[CLS]x[SEP]"]
LONG = [
    "The quick brown fox jumps over the lazy dog; it's 7:45 pm and we'll leave at 8.",
    "Café naïve résumé 日本語のテキスト 🙂😀 <s> tabs\tand\nnewlines",
]
TEXTS = SHORT + LONG
PAIRS = [(a, b) for a in ("", "Hello world", LONG[0]) for b in ("", "x", LONG[1])]


# ---------------------------------------------------------------------------------------------
# Post-processors, single and pair, no truncation


@pytest.mark.parametrize("processor", sorted(PROCESSORS))
def test_processor_single_and_pair(processor):
    ours, ref = fresh_pair(synthetic_json(processor))
    problems = []
    for add in (True, False):
        problems += [compare_encode(ours, ref, t, None, add) for t in TEXTS]
        problems += [compare_encode(ours, ref, a, b, add) for a, b in PAIRS]
        problems.append(compare_batch(ours, ref, [*TEXTS, *PAIRS], add))
        problems.append(compare_encode(ours, ref, ["Hello", " world", "<s>"], None, add, True))
        problems.append(compare_encode(ours, ref, ["a", "b c"], ["", "d"], add, True))
    _fail_if(problems)


# ---------------------------------------------------------------------------------------------
# Truncation: strategy x direction x stride x max_length, set through the API

STRATEGIES = ("longest_first", "only_first", "only_second")
DIRECTIONS = ("right", "left")
# (direction, stride, max_length): all 30 in the full tier, 11 spread over the grid (each value
# of each axis among them) in the default tier.
TRUNCATION_GRID = tier.spread(list(itertools.product(DIRECTIONS, (0, 1, 3), (0, 1, 3, 4, 7))), 11)


@pytest.mark.parametrize(
    "processor", ["none", "bert", "roberta", "template_odd", "sequence_two_templates"]
)
@pytest.mark.parametrize("strategy", STRATEGIES)
def test_truncation_grid(processor, strategy):
    ours, ref = fresh_pair(synthetic_json(processor))
    problems = []
    inputs = [(LONG[0], None), ("Hello world", None), *PAIRS[4:]]
    if processor == "template_odd":
        # B twice in its pair template: the overflowing cross product of two long texts has
        # tens of thousands of encodings
        inputs.remove((LONG[0], LONG[1]))
    for direction, stride, max_length in TRUNCATION_GRID:
        kwargs = dict(stride=stride, strategy=strategy, direction=direction)
        set_ours = outcome(functools.partial(ours.enable_truncation, max_length, **kwargs))
        set_ref = outcome(functools.partial(ref.enable_truncation, max_length, **kwargs))
        if set_ours[0] != set_ref[0]:
            problems.append(f"enable_truncation({max_length}, {kwargs}): {set_ours} {set_ref}")
            continue
        if set_ref[0] == "error":
            continue
        assert ours.truncation == ref.truncation
        for (a, b), add in itertools.product(inputs, (True, False)):
            problems.append(compare_encode(ours, ref, a, b, add))
        problems.append(compare_batch(ours, ref, [LONG[1], PAIRS[5], "x"]))
    _fail_if(problems)


def test_truncation_from_json_skips_the_api_stride_check():
    """In the file, a stride >= max_length loads; encode then fails where the library panics."""
    trunc = {"direction": "Left", "max_length": 4, "strategy": "LongestFirst", "stride": 3}
    tj = synthetic_json("bert", truncation=trunc)
    ours, ref = fresh_pair(tj)
    assert ours.truncation == ref.truncation
    _fail_if([compare_encode(ours, ref, t, b) for t in TEXTS for b in (None, "y z")])


@pytest.mark.parametrize("strategy", ["LongestFirst", "OnlyFirst", "OnlySecond"])
@pytest.mark.parametrize("direction", ["Left", "Right", None])
def test_truncation_read_from_json(strategy, direction):
    trunc = {"max_length": 6, "strategy": strategy, "stride": 2}
    if direction is not None:
        trunc["direction"] = direction
    ours, ref = fresh_pair(synthetic_json("template_bert", truncation=trunc))
    assert ours.truncation == ref.truncation
    problems = [compare_encode(ours, ref, a, b, add) for a, b in PAIRS for add in (True, False)]
    problems += [compare_encode(ours, ref, t) for t in TEXTS]
    _fail_if(problems)


def test_overflowing_covers_the_whole_text():
    """0.23.3 tokenizes the whole text before truncating (the v0.23.1 source's early exit,
    ``tokenize_with_limit``, is not in the wheel): the overflowing windows reach the end."""
    ours, ref = fresh_pair(synthetic_json("none"))
    text = " ".join(["hello"] * 12)
    whole = ref.encode(text).ids
    for tok in (ours, ref):
        tok.enable_truncation(3)
    windows = [ref.encode(text).ids] + [o.ids for o in ref.encode(text).overflowing]
    assert sum(windows, []) == whole
    _fail_if([compare_encode(ours, ref, text)])


# ---------------------------------------------------------------------------------------------
# Padding


# (direction, length, pad_to_multiple_of): all 24 in the full tier, 10 spread over the grid
# (each value of each axis among them) in the default tier.
PADDING_GRID = tier.spread(list(itertools.product(DIRECTIONS, (None, 4, 40), (None, 0, 5, 8))), 10)


@pytest.mark.parametrize("processor", ["none", "bert", "template_odd"])
def test_padding_variants(processor):
    ours, ref = fresh_pair(synthetic_json(processor))
    problems = []
    batch = ["", "a", LONG[0], ("Hello world", "x"), ("a b", LONG[1][:30])]
    for direction, length, multiple in PADDING_GRID:
        kwargs = dict(
            direction=direction,
            pad_id=7,
            pad_type_id=3,
            pad_token="<pad>",
            length=length,
            pad_to_multiple_of=multiple,
        )
        ours.enable_padding(**kwargs)
        ref.enable_padding(**kwargs)
        assert ours.padding == ref.padding
        for max_length in (None, 6):
            for tok in (ours, ref):
                if max_length is None:
                    tok.no_truncation()
                else:
                    tok.enable_truncation(max_length, stride=2, direction=direction)
            for add in (True, False):
                problems.append(compare_batch(ours, ref, batch, add))
                problems += [compare_encode(ours, ref, t, None, add) for t in SHORT[:3]]
                problems.append(compare_encode(ours, ref, "Hello world", LONG[1][:20], add))
    ours.no_padding()
    ref.no_padding()
    assert ours.padding is None is ref.padding
    _fail_if(problems)


@pytest.mark.parametrize(
    "padding",
    [
        {"strategy": "BatchLongest", "direction": "Right", "pad_id": 0, "pad_type_id": 0},
        {"strategy": {"Fixed": 12}, "direction": "Left", "pad_id": 5, "pad_type_id": 1},
        {"strategy": {"Fixed": 5}, "direction": "Right", "pad_id": 1, "pad_type_id": 0},
    ],
)
@pytest.mark.parametrize("multiple", ["omitted", None, 4])
def test_padding_read_from_json(padding, multiple):
    padding = {**padding, "pad_token": "[PAD]"}
    if multiple != "omitted":
        padding["pad_to_multiple_of"] = multiple
    trunc = {"max_length": 9, "strategy": "LongestFirst", "stride": 1, "direction": "Right"}
    ours, ref = fresh_pair(synthetic_json("bert", padding=padding, truncation=trunc))
    assert ours.padding == ref.padding
    _fail_if([compare_batch(ours, ref, [*TEXTS, *PAIRS], add) for add in (True, False)])


# ---------------------------------------------------------------------------------------------
# Real files, truncation and padding through the API


@pytest.mark.parametrize("name", ["llama3", "gpt4o", "llama2", "gemma3"])
def test_real_files(name):
    ours, ref = pair_for(name)
    docs = [d[:400] for d in adversarial_strings(400)[:40]] + [
        "The quick brown fox jumps over the lazy dog. " * 30,
        "",
    ]
    problems = []
    settings_list = [
        (dict(max_length=64), None),
        (dict(max_length=16, stride=4, direction="left"), dict(pad_to_multiple_of=8)),
        (dict(max_length=20, strategy="only_second"), dict(length=24, direction="left")),
    ]
    try:
        for trunc, pad in settings_list:
            for tok in (ours, ref):
                tok.enable_truncation(**trunc)
                tok.no_padding() if pad is None else tok.enable_padding(**pad)
            pairs = list(zip(docs[:20], reversed(docs[20:])))
            problems.append(compare_batch(ours, ref, docs))
            problems.append(compare_batch(ours, ref, pairs, add=True))
            problems.append(compare_batch(ours, ref, pairs, add=False))
            problems += [compare_encode(ours, ref, a, b) for a, b in pairs[:5]]
    finally:
        for tok in (ours, ref):
            tok.no_truncation()
            tok.no_padding()
    _fail_if(problems)


# ---------------------------------------------------------------------------------------------
# Hypothesis

PIECES = ["<s>", "</s>", "[CLS]", " ", "hello", "world", "é", "日本", "\n", "  "]
text = st.lists(st.one_of(st.text(max_size=6), st.sampled_from(PIECES)), max_size=10).map("".join)


@settings(max_examples=examples(150), deadline=None, suppress_health_check=list(HealthCheck))
@given(
    processor=st.sampled_from(["none", "bert", "roberta", "template_odd", "template_bert"]),
    seq=text,
    pair=st.none() | text,
    max_length=st.integers(0, 12),
    stride=st.integers(0, 4),
    strategy=st.sampled_from(STRATEGIES),
    direction=st.sampled_from(DIRECTIONS),
    add=st.booleans(),
    pad=st.sampled_from([None, dict(), dict(length=10, direction="left", pad_to_multiple_of=3)]),
)
def test_hypothesis_full_encoding(
    processor, seq, pair, max_length, stride, strategy, direction, add, pad
):
    ours, ref = fresh_pair(synthetic_json(processor))
    kwargs = dict(stride=stride, strategy=strategy, direction=direction)
    set_ours = outcome(functools.partial(ours.enable_truncation, max_length, **kwargs))
    set_ref = outcome(functools.partial(ref.enable_truncation, max_length, **kwargs))
    assert set_ours[0] == set_ref[0]
    if pad is not None:
        ours.enable_padding(**pad)
        ref.enable_padding(**pad)
    _fail_if([compare_encode(ours, ref, seq, pair, add)])


# ---------------------------------------------------------------------------------------------
# Refusals and API errors


@pytest.mark.parametrize(
    "key, value, path",
    [
        ("truncation", {"max_length": 4, "strategy": "longest_first", "stride": 0}, "strategy"),
        ("truncation", {"max_length": 4, "strategy": "OnlyFirst"}, "stride"),
        ("truncation", {"max_length": -1, "strategy": "OnlyFirst", "stride": 0}, "max_length"),
        (
            "truncation",
            {"max_length": 4, "strategy": "OnlyFirst", "stride": 0, "direction": "Up"},
            "direction",
        ),
        ("truncation", [4], ""),
        (
            "padding",
            {
                "strategy": "Longest",
                "direction": "Right",
                "pad_id": 0,
                "pad_type_id": 0,
                "pad_token": "[PAD]",
            },
            "strategy",
        ),
        (
            "padding",
            {
                "strategy": {"Fixed": "8"},
                "direction": "Right",
                "pad_id": 0,
                "pad_type_id": 0,
                "pad_token": "[PAD]",
            },
            "strategy.Fixed",
        ),
        (
            "padding",
            {"strategy": "BatchLongest", "direction": "Right", "pad_id": 0, "pad_type_id": 0},
            "pad_token",
        ),
        (
            "padding",
            {
                "strategy": "BatchLongest",
                "direction": "Right",
                "pad_id": -3,
                "pad_type_id": 0,
                "pad_token": "[PAD]",
            },
            "pad_id",
        ),
    ],
)
def test_bad_truncation_or_padding_is_refused(key, value, path):
    tj = synthetic_json("none", **{key: value})
    with pytest.raises(Exception):  # noqa: B017 - the oracle refuses it too
        tokenizers.Tokenizer.from_str(tj)
    with pytest.raises(TokenizerFileError) as info:
        Tokenizer.from_str(tj)
    assert info.value.path == (f"{key}.{path}" if path else key)


@pytest.mark.parametrize("setting", [{"length": 2**62}, {"pad_to_multiple_of": 2**63}])
def test_padding_beyond_memory_is_an_encode_error(setting):
    """tokenizers aborts the process allocating it; batchtok raises EncodeError at once."""
    ours = Tokenizer.from_str(synthetic_json("bert"))
    ours.enable_padding(**setting)
    for call in (
        lambda: ours.encode("a b"),
        lambda: ours.encode_batch(["a", "b c"]),
        lambda: ours.encode_batch_ids(["a", "b c"]),
    ):
        with pytest.raises(EncodeError, match="more memory than this machine has"):
            call()


def test_api_errors_match():
    ours, ref = fresh_pair(synthetic_json("bert"))
    calls = [
        lambda t: t.enable_truncation(4, strategy="shortest"),
        lambda t: t.enable_truncation(4, direction="up"),
        lambda t: t.enable_truncation(4, stride=3),
        lambda t: t.enable_padding(direction="up"),
        lambda t: t.encode(["not", "a", "str"]),
        lambda t: t.encode("x", is_pretokenized=True),
        lambda t: t.encode_batch([("a", "b", "c")]),
    ]
    for call in calls:
        assert outcome(functools.partial(call, ours))[0] == "error", call
        assert outcome(functools.partial(call, ref))[0] == "error", call
    # below the special tokens' count the stride check is skipped, as is truncation itself
    ours.enable_truncation(1, stride=5)
    ref.enable_truncation(1, stride=5)
    _fail_if([compare_encode(ours, ref, LONG[0], b) for b in (None, LONG[1])])
