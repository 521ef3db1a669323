"""Post-processors against the oracle (tokenizers 0.23.3): TemplateProcessing (several special
pieces before and after A, multi-id entries, type ids, A used twice), ByteLevel and Sequence
post-processors, on a byte-level BPE trained at test time by the oracle's trainer. Pairs,
truncation and padding are in test_pairs_truncation_padding.py.
"""

from __future__ import annotations

import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, TokenizerFileError
from tests.support.adversarial import INTERESTING
from tests.support.models import word_level_base
from tests.support.oracle import (
    assert_agree,
    byte_level_base,
    compare_decode,
    compare_text,
    pair_from_json,
    text_strategy,
    with_changes,
)
from tests.support.processors import (
    BYTE_LEVEL_PP,
    SPECIALS,
    added,
    many_before_after,
    special_ids,
    template,
)
from tests.support.tier import examples

# ---------------------------------------------------------------------------------------------
# Post-processors


def pp_config(post_processor) -> str:
    return with_changes(
        byte_level_base(),
        added_tokens=[added(c) for c in SPECIALS],
        post_processor=post_processor,
    )


def _multi_id_specials() -> dict:
    ids = special_ids()
    vocab = byte_level_base()["model"]["vocab"]
    return {
        "<s>": {"id": "<s>", "ids": [ids["<s>"]], "tokens": ["<s>"]},
        "</s>": {"id": "</s>", "ids": [ids["</s>"]], "tokens": ["</s>"]},
        # several ids: real model ids, an added special, an id nobody knows
        "[MULTI]": {
            "id": "[MULTI]",
            "ids": [vocab["hello"], ids["<sep>"], 99_999, vocab["Ġthe"]],
            "tokens": ["hello", "<sep>", "<ghost>", "Ġthe"],
        },
        # the key, its "id" and its token strings need not agree
        "[ODD]": {"id": "something-else", "ids": [ids["<eos>"]], "tokens": ["not-eos"]},
        "[EMPTY]": {"id": "[EMPTY]", "ids": [], "tokens": []},
    }


TEMPLATES = {
    "bert_like": template([("<cls>", 0), ("A", 0), ("<sep>", 0)]),
    "many_before_after": many_before_after(),
    "only_before": template([("<bos>", 0), ("<bos>", 1), ("A", 0)]),
    "only_after": template([("A", 1), ("<eos>", 2)]),
    "only_a_with_type_id": template([("A", 7)]),
    "a_twice": template([("<s>", 0), ("A", 0), ("<sep>", 1), ("A", 1), ("</s>", 1)]),
    "a_three_times_adjacent": template([("A", 0), ("A", 1), ("A", 2)]),
    "multi_id_specials": template(
        [("[MULTI]", 1), ("<s>", 0), ("A", 2), ("[ODD]", 3), ("[EMPTY]", 4), ("[MULTI]", 5)],
        special_tokens=_multi_id_specials(),
    ),
    "type_id_large": template([("<s>", 4_000_000_000), ("A", 4_294_967_295)]),
    "empty_single": template([]),
}

POST_PROCESSORS = dict(TEMPLATES)
POST_PROCESSORS.update(
    {
        "byte_level": BYTE_LEVEL_PP,
        "sequence_byte_level_template": {
            "type": "Sequence",
            "processors": [BYTE_LEVEL_PP, TEMPLATES["many_before_after"]],
        },
        "sequence_template_byte_level": {
            "type": "Sequence",
            "processors": [TEMPLATES["a_twice"], BYTE_LEVEL_PP],
        },
        "sequence_byte_level_only": {"type": "Sequence", "processors": [BYTE_LEVEL_PP]},
        "sequence_empty": {"type": "Sequence", "processors": []},
    }
)

PP_TEXTS = [
    "",
    " ",
    "a",
    "Hello world",
    "hello <s> world </s>",
    "<cls><sep>",
    "<s>",
    " <eos> x <bos>",
    "it's 12 o'clock\n",
    "café 日本 🙂",
]


@pytest.mark.parametrize("name", sorted(POST_PROCESSORS))
def test_post_processor(name):
    pair = pair_from_json(pp_config(POST_PROCESSORS[name]))
    assert_agree(pair, PP_TEXTS)


@pytest.mark.parametrize("name", sorted(TEMPLATES))
def test_template_with_added_vocab_decode(name):
    """Decode of the oracle's ids with special pieces, skipping specials or not."""
    ours, ref = pair_from_json(pp_config(TEMPLATES[name]))
    for text in PP_TEXTS:
        ids = ref.encode(text).ids
        problems = compare_decode((ours, ref), ids)
        assert not problems, problems


SEQUENCES_OF_TEMPLATES = {
    "bert_then_multi": [TEMPLATES["bert_like"], TEMPLATES["multi_id_specials"]],
    "only_a_then_bert": [TEMPLATES["only_a_with_type_id"], TEMPLATES["bert_like"]],
    "bert_then_only_a": [TEMPLATES["bert_like"], TEMPLATES["only_a_with_type_id"]],
    "byte_level_between": [TEMPLATES["only_after"], BYTE_LEVEL_PP, TEMPLATES["only_before"]],
    # two encodings reach the second template, which then applies its *pair* template
    "second_uses_pair_template": [
        template([("<s>", 0), ("A", 0)]),
        template([("A", 0)], pair=[("B", 1), ("<sep>", 1), ("A", 0)]),
    ],
}


@pytest.mark.parametrize("name", sorted(SEQUENCES_OF_TEMPLATES))
def test_sequence_of_templates(name):
    """Inside a Sequence, a template's output reaches the next template as separate encodings
    (one per piece): two of them select its *pair* template, more than two make tokenizers
    panic ("not yet implemented"); with add_special_tokens=False, or after a template that only
    holds A, there is one. batchtok must either refuse such a file or reproduce the outcome,
    errors included."""
    tj = pp_config({"type": "Sequence", "processors": SEQUENCES_OF_TEMPLATES[name]})
    try:
        pair = pair_from_json(tj)
    except TokenizerFileError:
        tokenizers.Tokenizer.from_str(tj)
        return
    assert_agree(pair, PP_TEXTS)


def test_template_referencing_a_missing_special_is_refused():
    """tokenizers loads it and panics at encode time; batchtok refuses the file (documented)."""
    broken = template([("<s>", 0), ("A", 0), ("[NOPE]", 0)])
    tj = pp_config(broken)
    ref = tokenizers.Tokenizer.from_str(tj)
    with pytest.raises(BaseException):  # noqa: B017 (pyo3 PanicException)
        ref.encode("x")
    with pytest.raises(TokenizerFileError):
        Tokenizer.from_str(tj)


def test_single_template_using_b_is_refused():
    broken = template([("A", 0), ("B", 1)])
    tj = pp_config(broken)
    ref = tokenizers.Tokenizer.from_str(tj)
    with pytest.raises(BaseException):  # noqa: B017 (pyo3 PanicException)
        ref.encode("x")
    with pytest.raises(TokenizerFileError):
        Tokenizer.from_str(tj)


def _everything(encoding) -> tuple:
    return (
        encoding.ids,
        encoding.tokens,
        encoding.type_ids,
        encoding.special_tokens_mask,
        encoding.attention_mask,
        encoding.sequence_ids,
        [(o.ids, o.tokens, o.type_ids) for o in encoding.overflowing],
    )


@pytest.mark.parametrize(
    ("ids", "tokens"), [([], ["[CLS]"]), ([1, 1], ["[CLS]"]), ([1], []), ([1, 2, 3], ["x", "y"])]
)
def test_a_special_token_with_more_or_fewer_tokens_than_ids_lays_out_each_list(ids, tokens):
    """tokenizers' derived reader of a special token does not compare the lengths of its ids
    and tokens (only its constructor does); each list goes into the encoding as it is, so the
    tokens are off from the ids after it, through padding, truncation and its windows alike."""
    base = word_level_base(["[CLS]", "[SEP]", "a", "b"])
    specials = {"[CLS]": {"id": "[CLS]", "ids": ids, "tokens": tokens}}
    single = [("[CLS]", 0), ("A", 0), ("[CLS]", 1)]
    pair = [("[CLS]", 0), ("A", 0), ("B", 1), ("[CLS]", 1)]
    pp = template(single, pair, special_tokens=specials)
    text = with_changes(base, pre_tokenizer={"type": "WhitespaceSplit"}, post_processor=pp)
    ours, ref = pair_from_json(text)
    for padding, truncation in [(None, None), ({"length": 9}, {"max_length": 5})]:
        for tok in (ours, ref):
            tok.enable_padding(**padding) if padding else tok.no_padding()
            tok.enable_truncation(**truncation) if truncation else tok.no_truncation()
        for args in [("a b a b a",), ("a b a b", "b a b")]:
            for add in (True, False):
                want = _everything(ref.encode(*args, add_special_tokens=add))
                assert _everything(ours.encode(*args, add_special_tokens=add)) == want, args


# ---------------------------------------------------------------------------------------------
# Hypothesis

PP_INTERESTING = INTERESTING + SPECIALS


@settings(max_examples=examples(300), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(sorted(POST_PROCESSORS)), text=text_strategy(PP_INTERESTING))
def test_property_post_processors(name, text):
    problems = compare_text(pair_from_json(pp_config(POST_PROCESSORS[name])), text)
    assert not problems, "\n".join(problems)
