"""Every fixture file beyond the npm BPE ones against the oracle: WordPiece, WordLevel, Unigram
(with Precompiled), classic BPE with suffix / prefix, and the kitchen-sink files that carry
every remaining normalizer, pre-tokenizer, added-token flag, truncation and padding in their
JSON.

Each file is checked over every corpus kind (English, code, each language, adversarial
strings), single and pair inputs, with the full Encoding compared (ids, tokens, type ids,
attention mask, special-tokens mask, overflowing pieces) and decode both ways. The corpora are
sampled (a few hundred KB per kind and file) to keep 25 files inside CI's time; the seven
byte-level and SentencePiece-BPE files run over the whole corpora in test_bpe_files.py.
"""

from __future__ import annotations

import pytest

from tests.support import adversarial, corpora, tier
from tests.support.oracle import (
    WHEEL_AND_BUILT_FILES,
    assert_conforms,
    outcome,
    pair_for,
    tokenizer_json,
)

# Documents per corpus kind (per language for multilingual), each cut to this many chars.
DOCS, LANGUAGE_DOCS, CHARS = tier.count(40, 8), tier.count(4, 1), 3000
# A truncated pair overflows into every window of one side times every window of the other:
# 40 pairs of 3000-char texts make ~100k encodings on each side (GBs). The default tier pairs
# texts cut to this many chars, which still overflow into several windows each.
PAIR_CHARS = tier.count(CHARS, 300)


def _pairs(docs: list[str], truncated: bool) -> list[tuple[str, str]]:
    n = PAIR_CHARS if truncated else CHARS
    return [(a[:n], b[:n]) for a, b in zip(docs, reversed(docs))]


def _docs(kind: str) -> list[str]:
    if kind == "adversarial":
        return adversarial.adversarial_strings()
    if kind == "multilingual":
        return [d for lang in sorted(corpora.multilingual_docs()) for d in _lang(lang)]
    return corpora.sample_docs(kind, DOCS, CHARS)


def _lang(lang: str) -> list[str]:
    return corpora.sample_docs(lang, LANGUAGE_DOCS, CHARS)


def _same_encoding(a, b, where: str) -> None:
    assert a.ids == b.ids, f"ids differ for {where}"
    assert a.tokens == b.tokens, f"tokens differ for {where}"
    assert a.type_ids == b.type_ids, f"type ids differ for {where}"
    assert a.attention_mask == b.attention_mask, f"attention mask differs for {where}"
    assert a.special_tokens_mask == b.special_tokens_mask, f"special mask differs for {where}"
    assert len(a.overflowing) == len(b.overflowing), f"overflowing count differs for {where}"
    for i, (x, y) in enumerate(zip(a.overflowing, b.overflowing)):
        _same_encoding(x, y, f"{where}, overflowing[{i}]")


def _same_batch(ours, ref, inputs: list, add: bool) -> None:
    # Both libraries must fail on the same inputs (an oracle panic included).
    want, theirs = outcome(lambda: ref.encode_batch(inputs, add_special_tokens=add))
    got, mine = outcome(lambda: ours.encode_batch(inputs, add_special_tokens=add))
    if want == "error":
        assert got == "error", f"the oracle fails ({theirs}), batchtok does not"
        return
    assert got == "ok", f"batchtok fails ({mine}), the oracle does not"
    for i, (a, b) in enumerate(zip(mine, theirs)):
        _same_encoding(a, b, f"input {i}: {str(inputs[i])[:80]!r}")
    ids = [e.ids for e in theirs]
    assert (
        ours.encode_batch_ids(
            [x if isinstance(x, str) else x[0] for x in inputs],
            add,
            None if isinstance(inputs[0], str) else [x[1] for x in inputs],
        )
        == ids
    ), "encode_batch_ids differs from encode_batch"


@pytest.fixture(scope="module", params=WHEEL_AND_BUILT_FILES)
def file_pair(request):
    """(name, batchtok tokenizer, oracle tokenizer) for each wheel or built fixture file."""
    return (request.param, *pair_for(request.param))


@pytest.mark.parametrize("kind", ["english", "code", "multilingual", "adversarial"])
def test_ids_and_decode(file_pair, kind):
    _, ours, ref = file_pair
    docs = _docs(kind)
    if ours.padding is None and ours.truncation is None:
        assert_conforms(ours, ref, docs)
        return
    # Padding and truncation shape the batch: compare whole batches, then decode.
    for start in range(0, len(docs), 50):
        for add in (True, False):
            _same_batch(ours, ref, docs[start : start + 50], add)


@pytest.mark.parametrize("kind", ["english", "code", "multilingual"])
def test_full_encodings_single_and_pair(file_pair, kind):
    _, ours, ref = file_pair
    docs = _docs(kind)[:40]
    pairs = _pairs(docs, ours.truncation is not None)
    for add in (True, False):
        _same_batch(ours, ref, docs, add)
        _same_batch(ours, ref, pairs, add)


def test_truncation_and_padding_through_the_api(file_pair):
    """The file's own settings replaced through the API, on both sides alike."""
    ours, ref = _fresh(file_pair[0])  # the session's cached pair stays as the file says
    docs = _docs("english")[:12] + _docs("multilingual")[::40]
    pairs = _pairs(docs, truncated=True)
    for strategy, direction, stride in [
        ("longest_first", "right", 0),
        ("only_first", "left", 3),
        ("longest_first", "left", 5),
    ]:
        for t in (ours, ref):
            t.enable_truncation(40, stride=stride, strategy=strategy, direction=direction)
            t.enable_padding(direction="left", pad_id=0, pad_to_multiple_of=8)
        for add in (True, False):
            _same_batch(ours, ref, docs, add)
            _same_batch(ours, ref, pairs, add)
    for t in (ours, ref):
        t.no_truncation()
        t.no_padding()
    _same_batch(ours, ref, pairs, True)


def _fresh(name: str):
    import tokenizers

    import batchtok

    text = tokenizer_json(name)
    return batchtok.Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)
