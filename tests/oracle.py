"""Comparing batchtok with the oracle, with failure messages that locate the first difference."""

from __future__ import annotations

from collections.abc import Sequence

import tokenizers

import batchtok


def _first_diff(a: Sequence, b: Sequence) -> int:
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def _report(kind: str, doc: str, ours, theirs) -> str:
    at = _first_diff(ours, theirs)
    return (
        f"{kind} differ at position {at} for document {doc[:80]!r} (len {len(doc)}):\n"
        f"  batchtok: {ours[max(0, at - 3) : at + 5]!r}\n"
        f"  oracle:   {theirs[max(0, at - 3) : at + 5]!r}"
    )


def assert_same_ids(
    ours: batchtok.Tokenizer,
    ref: tokenizers.Tokenizer,
    docs: Sequence[str],
    *,
    add_special_tokens: bool,
) -> list[list[int]]:
    """Ids of every document equal; returns the oracle's ids."""
    theirs = [e.ids for e in ref.encode_batch(list(docs), add_special_tokens=add_special_tokens)]
    mine = ours.encode_batch_ids(docs, add_special_tokens=add_special_tokens)
    bad = [i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b]
    assert not bad, f"{len(bad)} of {len(docs)} documents differ; first: " + _report(
        "ids", docs[bad[0]], mine[bad[0]], theirs[bad[0]]
    )
    return theirs


def assert_same_decode(
    ours: batchtok.Tokenizer, ref: tokenizers.Tokenizer, id_lists: Sequence[Sequence[int]]
) -> None:
    for skip in (False, True):
        theirs = ref.decode_batch([list(x) for x in id_lists], skip_special_tokens=skip)
        mine = ours.decode_batch(id_lists, skip_special_tokens=skip)
        bad = [i for i, (a, b) in enumerate(zip(mine, theirs)) if a != b]
        assert not bad, f"decode(skip_special_tokens={skip}): {len(bad)} differ; first: " + _report(
            "decoded text", theirs[bad[0]], mine[bad[0]], theirs[bad[0]]
        )


def assert_conforms(
    ours: batchtok.Tokenizer, ref: tokenizers.Tokenizer, docs: Sequence[str]
) -> None:
    """Ids with and without special tokens, and decode both ways, all equal to the oracle."""
    for add in (True, False):
        theirs = assert_same_ids(ours, ref, docs, add_special_tokens=add)
        if add:
            assert_same_decode(ours, ref, theirs)


def assert_same_encoding(ours: batchtok.Tokenizer, ref: tokenizers.Tokenizer, text: str) -> None:
    """The full encode object (ids, tokens, type ids, special mask) for one text, both ways."""
    for add in (True, False):
        a = ours.encode(text, add_special_tokens=add)
        b = ref.encode(text, add_special_tokens=add)
        assert a.ids == b.ids, _report("ids", text, a.ids, b.ids)
        assert a.tokens == b.tokens, _report("tokens", text, a.tokens, b.tokens)
        assert a.type_ids == b.type_ids
        assert a.special_tokens_mask == b.special_tokens_mask
        assert a.attention_mask == b.attention_mask
