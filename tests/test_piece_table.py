"""The piece table (the ids path's cache of pieces as arrays) gives every piece the ids its
string gets, whatever the hashes say, however small its bound, and the engine's ids path
through it equals `tokenizers` on the real files."""

from __future__ import annotations

import numpy as np
import pytest
import tokenizers
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import batchtok.piece_table as piece_table
from batchtok import Tokenizer
from batchtok.models.ragged import flat_rows
from batchtok.piece_table import PieceTable, strings_of
from tests.pre_tokenizers.test_boundary_rules_gpt2 import GPT2
from tests.support import adversarial, corpora
from tests.support.fixtures import fixture_path
from tests.support.tier import examples

# pieces over a few chars (many repeats, many of one length) and any char but U+FFFF
piece = st.one_of(
    st.text(st.sampled_from("ab c\u00e9\u5b57\U0001f600"), min_size=1, max_size=6),
    st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\uffff"), min_size=1),
)
chunks = st.lists(st.lists(piece, max_size=60), min_size=1, max_size=6)


def ids_of(text: str) -> tuple[int, ...]:
    """Some ids of a piece: a function of its whole string, none for some pieces."""
    return tuple(ord(c) % 1000 for c in text[: len(text) % 4])


def arrays(pieces: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The pieces joined (by U+FFFF, as the rules' joined texts are) and their bounds."""
    points = np.frombuffer("\uffff".join(pieces).encode("utf-32-le"), np.uint32)
    lengths = np.array([len(p) for p in pieces], dtype=np.int64)
    starts = np.cumsum(np.append(0, lengths[:-1] + 1)) if pieces else lengths
    return points, starts, starts + lengths


def look_up(table: PieceTable, pieces: list[str]) -> list[tuple[int, ...]] | None:
    asked: list[list[str]] = []

    def compute(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
        asked.append(strings)
        assert len(set(strings)) == len(strings)  # each miss computed once a call
        return flat_rows([ids_of(s) for s in strings])

    found = table.ids(*arrays(pieces), compute)
    if found is None:
        return None
    flat, counts = found
    ends = np.cumsum(counts).tolist()
    flat = flat.tolist()
    return [tuple(flat[e - n : e]) for e, n in zip(ends, counts.tolist())]


@settings(max_examples=examples(2000), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chunks=chunks, limit=st.integers(1, 40))
def test_every_piece_gets_the_ids_of_its_string(chunks: list[list[str]], limit: int) -> None:
    table = PieceTable(limit)
    biggest = 0
    for pieces in chunks:
        assert look_up(table, pieces) == [ids_of(p) for p in pieces]
        biggest = max(biggest, len(set(pieces)))
        assert len(table) <= max(limit, biggest)


@settings(
    max_examples=examples(1000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(chunks=chunks, limit=st.integers(1, 40), bits=st.integers(0, 3))
def test_a_hash_shared_by_two_pieces_is_never_taken_on_its_word(
    chunks: list[list[str]], limit: int, bits: int, monkeypatch_hashes
) -> None:
    """With a hash of a few bits, different pieces share one all the time: the table either
    gives the right ids or declines the chunk (the engine then looks it up by strings)."""
    monkeypatch_hashes(bits)
    table = PieceTable(limit)
    for pieces in chunks:
        found = look_up(table, pieces)
        assert found is None or found == [ids_of(p) for p in pieces]


def test_two_pieces_of_one_hash_are_declined(monkeypatch_hashes) -> None:
    monkeypatch_hashes(0)
    table = PieceTable(100)
    assert look_up(table, ["ab", "ab"]) == [ids_of("ab")] * 2
    assert look_up(table, ["ab", "ba"]) is None  # in one chunk
    assert look_up(table, ["ba"]) is None  # against the table
    assert look_up(table, ["ab"]) == [ids_of("ab")]


@pytest.fixture
def monkeypatch_hashes(monkeypatch):
    real = piece_table.piece_hashes

    def patch(bits: int) -> None:
        def weak(points, starts, ends):
            return real(points, starts, ends) & ((1 << bits) - 1)

        monkeypatch.setattr(piece_table, "piece_hashes", weak)

    return patch


def test_the_pieces_come_back_as_strings() -> None:
    pieces = ["a", "\U0001f600b", " \u5b57", "x" * 300]
    points, starts, ends = arrays(pieces)
    assert strings_of(points, starts, ends - starts) == pieces
    assert strings_of(points, starts[:0], starts[:0]) == []


def test_entries_read_since_the_last_generation_are_kept() -> None:
    table = PieceTable(4)
    computed: list[str] = []

    def compute(strings: list[str]) -> tuple[np.ndarray, np.ndarray]:
        computed.extend(strings)
        return flat_rows([ids_of(s) for s in strings])

    for pieces in (["a", "b", "c"], ["a", "d"], ["a", "e", "f"], ["a"]):
        table.ids(*arrays(pieces), compute)
    # "a", read in every generation, is computed once; the others as they come
    assert sorted(computed) == ["a", "b", "c", "d", "e", "f"]
    assert len(table) <= 4
    # a generation past the bound keeps the entries read in it: "a", not "b" to "d"
    table.ids(*arrays(["g", "h", "b"]), compute)
    assert sorted(computed) == ["a", "b", "b", "c", "d", "e", "f", "g", "h"]


# the boundary rules (byte-level) and the boundary splitter (gemma3, llama2: no pre-tokenizer)
FILES = ["llama3", "gpt4o", "qwen3", "gpt2", "gemma3", "llama2"]


def _path(name: str) -> str:
    return str(GPT2 if name == "gpt2" else fixture_path(name))


def _texts() -> list[str]:
    texts = adversarial.adversarial_strings(max_chars=2000)
    for kind in ("english", "code", "multilingual"):
        texts += corpora.sample_docs(kind, 40, 3000)
    return texts + ["", " ", "a\uffffb", "it's <|endoftext|> 12345"]


@pytest.mark.parametrize("name", FILES)
def test_the_ids_path_equals_the_oracle_through_the_table(name: str, monkeypatch) -> None:
    """Through the table (checked to be read), with a bound small enough that generations
    turn over within the batch, and without it."""
    path = _path(name)
    texts = _texts()
    oracle = tokenizers.Tokenizer.from_file(path)
    want = [e.ids for e in oracle.encode_batch(texts)]
    calls = []
    real = PieceTable.ids
    monkeypatch.setattr(PieceTable, "ids", lambda *a: calls.append(1) or real(*a))
    ours = Tokenizer.from_file(path)
    assert ours._piece_table is not None
    assert ours.encode_batch_ids(texts) == want
    assert calls
    ours.set_cache_size(0.01)  # a few dozen entries a generation
    assert ours._piece_table.limit < 100
    assert ours.encode_batch_ids(texts) == want
    assert ours.encode_batch_ids(texts) == want  # the table warm


def test_a_text_longer_than_a_prefill_goes_through_the_table() -> None:
    """A text of over 2 ** 20 chars is split and looked up with the others, not alone."""
    path = str(fixture_path("llama3"))
    long_text = "".join(corpora.sample_docs("code", 400, 4000))
    long_text = (long_text * (2**20 // max(1, len(long_text)) + 1))[: 2**20 + 4321]
    texts = ["a short one", long_text, "and another"]
    want = [e.ids for e in tokenizers.Tokenizer.from_file(path).encode_batch(texts)]
    ours = Tokenizer.from_file(path)
    assert ours.encode_batch_ids(texts) == want
    assert len(ours._piece_table) > 0


def test_a_pickled_tokenizer_starts_with_an_empty_table() -> None:
    import pickle

    ours = Tokenizer.from_file(fixture_path("llama3"))
    ours.encode_batch_ids(corpora.sample_docs("english", 20, 3000))
    assert len(ours._piece_table) > 0
    again = pickle.loads(pickle.dumps(ours))
    assert len(again._piece_table) == 0
    assert again._piece_table.limit == ours._piece_table.limit


def test_threads_sharing_a_tokenizer_get_the_oracle_ids() -> None:
    """Two threads encode different texts with one tokenizer whose table turns over all the
    time: no call reads entries another call moved."""
    from concurrent.futures import ThreadPoolExecutor

    path = str(fixture_path("llama3"))
    oracle = tokenizers.Tokenizer.from_file(path)
    batches = [corpora.sample_docs(kind, 30, 3000) for kind in ("english", "code", "multilingual")]
    want = [[e.ids for e in oracle.encode_batch(texts)] for texts in batches]
    ours = Tokenizer.from_file(path)
    ours.set_cache_size(0.05)
    with ThreadPoolExecutor(3) as pool:
        for _ in range(3):
            assert list(pool.map(ours.encode_batch_ids, batches)) == want
