"""Long texts: ``Tokenizer.encode_ids_into`` streams a long fragment through the pre-tokenizer a
piece at a time (batchtok/pre_tokenizers/splitter.py: compile_streaming_splitter), so a 50 MB
row never holds its millions of pieces at once. Streaming must never change an id.

The threshold is lowered here so that ordinary documents take the streaming path; the chunking
of split behaviours is checked with random spans and chunk sizes down to one.
"""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import batchtok.tokenizer
from batchtok.pre_tokenizers.split import BEHAVIORS, Split, iter_split_spans, split_spans
from batchtok.pre_tokenizers.splitter import compile_streaming_splitter, split_and_map
from tests.support import adversarial, corpora
from tests.support.oracle import ALL_FILES, outcome, pair_for
from tests.support.tier import examples, spread

# empty matches, lookaround, runs and the GPT-2 split among them
PATTERNS = [
    " ",
    "a*",
    "(?=a)",
    "(?<=a)",
    "b|",
    r"\d",
    r"\s+",
    r"'s|'t| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+",
    r"[ab]+(?=\s)",
]


@st.composite
def spans_over(draw) -> tuple[int, list[tuple[int, int]]]:
    """(text length, ordered non-overlapping match spans, empty ones included)."""
    n = draw(st.integers(0, 40))
    cuts = sorted(draw(st.lists(st.integers(0, n), max_size=16)))
    spans = [(a, b) for a, b in zip(cuts[::2], cuts[1::2])]
    return n, spans


@settings(max_examples=examples(2000), deadline=None)
@given(
    case=spans_over(),
    behavior=st.sampled_from(BEHAVIORS),
    invert=st.booleans(),
    chunk=st.integers(1, 6),
)
def test_chunked_behaviours_equal_the_whole_list(case, behavior, invert, chunk):
    n, spans = case
    whole = split_spans(n, spans, behavior, invert)
    assert list(iter_split_spans(n, iter(spans), behavior, invert, chunk)) == whole


@settings(max_examples=examples(600), deadline=None)
@given(
    pattern=st.sampled_from(PATTERNS),
    behavior=st.sampled_from(BEHAVIORS),
    invert=st.booleans(),
    text=st.text(st.sampled_from("ab \n1.\u00e9\u4e2d"), max_size=60),
    size=st.integers(1, 5),
)
def test_split_streams_the_pieces_it_lists(pattern, behavior, invert, text, size):
    split = Split(pattern, True, behavior, invert)
    batches = list(split.iter_pieces(text, size))
    assert [p for batch in batches for p in batch] == split.split_one(text)
    assert all(batches)


STREAMING_FILES = spread(ALL_FILES, 8)


@pytest.mark.parametrize("name", STREAMING_FILES)
def test_streamed_ids_equal_encode_ids(name, monkeypatch):
    """Every real and built file: ids appended by encode_ids_into, with every fragment over
    64 chars streamed, equal encode_ids (which the conformance tests hold to the oracle)."""
    ours, _ = pair_for(name)
    monkeypatch.setattr(batchtok.tokenizer, "STREAM_CHARS", 64)
    texts = adversarial.SPECIAL_TEXT + adversarial.adversarial_strings(max_chars=400)
    for kind in ("english", "code", "multilingual"):
        texts += corpora.sample_docs(kind, 6, 5000)
    for add in (False, True):
        for text in texts:
            out = array("q", [7])
            got = outcome(lambda text=text, add=add, out=out: ours.encode_ids_into(text, out, add))
            want = outcome(lambda text=text, add=add: ours.encode_ids(text, add))
            assert got[0] == want[0], (name, text[:80], got, want)  # an error is an error
            if want[0] == "ok":
                assert out.tolist() == [7] + want[1] and got[1] == len(want[1]), (name, text[:80])
            else:
                assert out.tolist() == [7]  # left as it was


def test_which_pipelines_stream():
    """Byte-level files and BPE without a pre-tokenizer stream; a Metaspace "first" does not
    (it asks where each piece stands in the input)."""
    streams = {}
    for name in ("llama3", "gpt4o", "llama2", "gemma3", "llama2-mistral"):
        ours, _ = pair_for(name)
        streams[name] = ours._stream is not None
    assert streams == {
        "llama3": True,
        "gpt4o": True,
        "llama2": True,
        "gemma3": True,
        "llama2-mistral": False,
    }
    splitter, _ = split_and_map(pair_for("llama3")[0].pre_tokenizer)
    assert compile_streaming_splitter(splitter) is not None


def test_a_failed_append_leaves_the_array_as_it_was():
    ours, _ = pair_for("llama3")
    out = array("b", [1, 2])  # signed char: most of llama3's ids overflow it
    with pytest.raises(OverflowError):
        ours.encode_ids_into("hello world " * 100, out, False)
    assert out.tolist() == [1, 2]


def test_a_streamed_text_holds_its_ids_not_its_pieces(monkeypatch):
    """The Python memory an encode_ids_into call takes for a long text: its id array and a
    batch of pieces, not every piece (~60 bytes each as a str) nor every id as a list slot."""
    import tracemalloc

    ours, _ = pair_for("llama3")
    monkeypatch.setattr(batchtok.tokenizer, "STREAM_CHARS", 10_000)
    english = "\n\n".join(corpora.sample_docs("english", 200, 5000))
    text = (english * (2_000_000 // len(english) + 1))[:2_000_000]
    ours.encode_ids_into(text, array("i"), False)  # the piece cache is warm from here on
    tracemalloc.start()
    try:
        out = array("i")
        ours.encode_ids_into(text, out, False)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    ids_bytes = out.itemsize * len(out)
    assert len(out) > 300_000  # ~5 chars a piece: a list of them would take ~25 MB
    assert peak < 1.5 * ids_bytes + (1 << 20), (peak, ids_bytes)
