"""Tokenizer files around one model (WordPiece, WordLevel, Unigram) and comparisons of what the
model alone produces, for the model tests in tests/models/."""

from __future__ import annotations

from hypothesis import strategies as st

from tests.support.oracle import compare_decode, outcome, with_changes

# Text split into words and punctuation runs (a BERT-like split the Split pre-tokenizer can do).
# Spelled with \p classes: batchtok's `[^\w\s]` differs from onig's on U+00B2/B3/B9/BC-BE.
WORDS_SPLIT = {
    "type": "Split",
    "pattern": {"Regex": r"[\p{L}\p{M}\p{N}_]+|[^\p{L}\p{M}\p{N}_\s]+"},
    "behavior": "Removed",
    "invert": True,
}
METASPACE = {
    "type": "Metaspace",
    "replacement": "\u2581",
    "prepend_scheme": "always",
    "split": True,
}
WIDE = st.characters(codec="utf-8")


EMPTY_FILE = {
    key: None for key in ("truncation", "padding", "normalizer", "post_processor", "decoder")
}


def word_level_base(tokens: list[str]) -> dict:
    """A tokenizer.json dict of a WordLevel model over ``tokens`` ("[UNK]" first, id 0) and
    nothing else, to hang one component on."""
    vocab = {token: i for i, token in enumerate(["[UNK]", *tokens])}
    model = {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"}
    return {
        **EMPTY_FILE,
        "version": "1.0",
        "added_tokens": [],
        "pre_tokenizer": None,
        "model": model,
    }


def model_file(model: dict, pre_tokenizer: dict | None = None, decoder=None) -> str:
    """The tokenizer.json text of ``model`` with an optional pre-tokenizer and decoder, and
    nothing else."""
    return with_changes(
        EMPTY_FILE, added_tokens=[], model=model, pre_tokenizer=pre_tokenizer, decoder=decoder
    )


def assert_same_tokens(pair, texts) -> None:
    """The model's token strings equal the oracle's (for a file without a pre-tokenizer or
    added tokens the model sees the whole text as one word)."""
    ours, ref = pair
    for text in texts:
        want = outcome(lambda text=text: ref.encode(text, add_special_tokens=False).tokens)
        got = outcome(lambda text=text: ours.model.token_strings(text) if text else [])
        assert got[0] == want[0], (text, got, want)
        if got[0] == "ok":
            assert got[1] == want[1], (text, got, want)


def assert_ids_and_decode(pair, texts) -> None:
    """Ids (errors must match errors) and decode of the oracle's ids, text by text."""
    ours, ref = pair
    for text in texts:
        want = outcome(lambda text=text: ref.encode(text, add_special_tokens=False).ids)
        got = outcome(lambda text=text: ours.encode_ids(text, False))
        assert got[0] == want[0], (text, got, want)
        if want[0] == "ok":
            assert got[1] == want[1], (text, got, want)
            assert not compare_decode(pair, want[1])


SHORT = ["", "a", "ab", "abc", "aaaa", "abab", "x", "xyz", "axb", "<unk>", "<unk>x", "é", "🦀é"]
