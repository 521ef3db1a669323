"""The load cache: a tokenizer loaded from it is the one its file builds, and an entry that is
damaged, stale or for another file is never used."""

from __future__ import annotations

import json
import os
import pickle
import random
import re
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from batchtok import Tokenizer, load_cache
from batchtok import tokenizer as tokenizer_module
from batchtok.models import bpe as bpe_module
from batchtok.models import bpe_batch, trie_batch
from batchtok.models import unigram as unigram_module
from batchtok.models import wordpiece as wordpiece_module
from batchtok.runner.exec.encode import facts_of
from tests.support import adversarial, corpora
from tests.support.fixtures import fixture_path
from tests.support.models import model_file

FILES = ["llama3", "llama2", "minilm", "t5-unigram", "xlmr-unigram", "spm-unigram-bytefallback"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv(load_cache.ENV, str(tmp_path))
    return tmp_path


def entries(directory) -> list:
    return sorted(p.name for p in directory.glob("*.pickle"))


def texts() -> list[str]:
    docs = corpora.sample_docs("english", 20, 2000) + corpora.sample_docs("code", 10, 2000)
    for lang in ("chinese_simplified", "hindi", "arabic", "thai", "korean"):
        docs += corpora.sample_docs(lang, 4, 1000)
    return docs + adversarial.adversarial_strings(max_chars=2000)


def view(tok: Tokenizer, docs: list[str]) -> list:
    out = []
    for e in tok.encode_batch(docs):
        out.append((e.ids, e.tokens, e.type_ids, e.special_tokens_mask, e.attention_mask))
    out.append([tok.decode(e[0], False) for e in out])
    return out


@pytest.mark.parametrize("name", FILES)
def test_a_cached_tokenizer_is_the_one_its_file_builds(cache, name):
    data = fixture_path(name).read_bytes()
    fresh = Tokenizer.from_str(data.decode())
    Tokenizer.from_buffer(data)  # builds and stores
    assert len(entries(cache)) == 1
    cached = load_cache.fetch(data)
    assert isinstance(cached, Tokenizer)
    assert Tokenizer.from_buffer(data).describe() == fresh.describe()
    docs = texts()
    assert view(cached, docs) == view(fresh, docs)
    assert (cached.truncation, cached.padding) == (fresh.truncation, fresh.padding)
    assert cached.ignored_fields == fresh.ignored_fields


def _damage(path, how: str) -> None:
    path.write_bytes(_damaged(path.read_bytes(), how))


def _damaged(data: bytes, how: str) -> bytes:
    blob = bytearray(data)
    if how == "flipped byte":
        blob[-100] ^= 0xFF
    elif how == "truncated":
        del blob[len(blob) // 2 :]
    elif how == "other magic":
        blob[:5] = b"xxxxx"
    elif how == "garbage":
        blob = bytearray(b"\x00" * 64)
    return bytes(blob)


@pytest.mark.parametrize("how", ["flipped byte", "truncated", "other magic", "garbage"])
def test_a_damaged_entry_is_ignored_and_written_again(cache, how):
    data = fixture_path("llama2").read_bytes()
    Tokenizer.from_buffer(data)
    (path,) = cache.glob("*.pickle")
    good = path.read_bytes()
    _damage(path, how)
    assert load_cache.fetch(data) is None
    tok = Tokenizer.from_buffer(data)
    assert tok.encode_ids("Hello world") == Tokenizer.from_str(data.decode()).encode_ids(
        "Hello world"
    )
    assert path.read_bytes()[: len(load_cache.MAGIC)] == load_cache.MAGIC
    assert path.read_bytes() != bytes(_damaged(good, how))
    assert load_cache.fetch(data) is not None


def test_an_entry_of_another_code_version_or_file_is_not_used(cache, monkeypatch):
    data = fixture_path("llama2").read_bytes()
    Tokenizer.from_buffer(data)
    (path,) = cache.glob("*.pickle")
    other = data + b" "
    (cache / f"{load_cache.key_of(other)}.pickle").write_bytes(path.read_bytes())
    assert load_cache.fetch(other) is None  # its header names another file
    monkeypatch.setattr(load_cache, "code_version", lambda: "another version")
    assert load_cache.fetch(data) is None


def test_off_by_environment_and_small_files_not_cached(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    for off in ("0", "off"):
        monkeypatch.setenv(load_cache.ENV, off)
        assert load_cache.cache_dir() is None
        Tokenizer.from_file(fixture_path("llama2"))
    assert not list(tmp_path.rglob("*.pickle"))
    monkeypatch.delenv(load_cache.ENV)
    assert load_cache.cache_dir() == tmp_path / "batchtok" / "loaded"
    small = fixture_path("trained-wordlevel").read_bytes()
    assert len(small) < load_cache.MIN_BYTES
    Tokenizer.from_buffer(small)
    assert not list(tmp_path.rglob("*.pickle"))


def test_a_copy_that_behaves_differently_is_not_written(cache):
    data = fixture_path("llama2").read_bytes()
    tok = Tokenizer.from_str(data.decode())
    load_cache.store(data, tok, lambda copy: False)
    assert entries(cache) == []
    load_cache.store(data, tok, tok._behaves_as)
    assert entries(cache) == [f"{load_cache.key_of(data)}.pickle"]


def test_the_least_recently_used_entries_go(cache, monkeypatch):
    monkeypatch.setattr(load_cache, "KEEP", 2)
    data = fixture_path("llama2").read_bytes()
    tok = Tokenizer.from_str(data.decode())
    for tail in (b"", b" ", b"  "):
        load_cache.store(data + tail, tok, lambda copy: True)
    assert len(entries(cache)) == 2


def test_a_tokenizer_pickles():
    tok = Tokenizer.from_file(fixture_path("t5-unigram"))
    tok.enable_truncation(8)
    copy = pickle.loads(pickle.dumps(tok))
    docs = texts()[:20]
    assert view(copy, docs) == view(tok, docs)


@pytest.mark.parametrize(
    ("name", "module", "built"),
    [
        ("llama3", bpe_module, bpe_batch.PairTable),
        ("llama2", bpe_module, bpe_batch.PairTable),
        ("t5-unigram", unigram_module, trie_batch.Trie),
        ("minilm", wordpiece_module, trie_batch.Trie),
    ],
)
def test_a_cached_model_keeps_its_batch_tables_as_bytes(cache, name, module, built, monkeypatch):
    """The entry holds the batch tables (BPE's merges, Unigram's and WordPiece's tries), built
    once at store: a cached tokenizer reads them in place (views of the entry's bytes, not
    copies) instead of building them, batches as a fresh one does, and pickles again with them
    as bytes."""
    data = fixture_path(name).read_bytes()
    Tokenizer.from_buffer(data)  # builds, prepares the batch tables, stores
    cached = load_cache.fetch(data)
    field = cached.model._TABLES
    kept = vars(cached.model).get("_batch_bytes")
    assert getattr(cached.model, field) is None and kept
    assert memoryview in {type(x) for x in _leaves(kept)}
    builds = []
    real = built.__init__
    monkeypatch.setattr(built, "__init__", lambda self, *a: builds.append(1) or real(self, *a))
    monkeypatch.setattr(module, "_BATCH_MIN", 1)
    monkeypatch.setattr(tokenizer_module, "PREFILL_MIN", 1)
    docs = texts()
    want = Tokenizer.from_str(data.decode()).encode_batch_ids(docs)
    builds.clear()
    assert cached.encode_batch_ids(docs) == want
    assert not builds, "the cached tokenizer built its tables"
    tables = getattr(cached.model, field)
    arrays = [a for a in _arrays(tables) if a.base is not None]  # the entry's, read in place
    assert arrays and all(a.flags.aligned for a in arrays)  # unaligned, numpy copies as it goes
    again = pickle.loads(pickle.dumps(cached))
    kept = vars(again.model).get("_batch_bytes")
    assert kept and memoryview not in {type(x) for x in _leaves(kept)}
    assert again.encode_batch_ids(docs) == want


def _arrays(tables: object) -> list:
    """The numpy arrays of a model's batch tables (tuples of arrays and table objects)."""
    if isinstance(tables, (tuple, list)):
        return [a for x in tables for a in _arrays(x)]
    if hasattr(tables, "dtype"):
        return [tables]
    return (
        [a for x in vars(tables).values() for a in _arrays(x)]
        if hasattr(tables, "__dict__")
        else []
    )


def _leaves(kept: object) -> list:
    if isinstance(kept, (tuple, list)):
        return [leaf for x in kept for leaf in _leaves(x)]
    if isinstance(kept, dict):
        return [leaf for x in kept.values() for leaf in _leaves(x)]
    return [kept]


def test_an_entry_whose_parts_were_cut_otherwise_is_ignored(cache):
    data = fixture_path("llama3").read_bytes()
    Tokenizer.from_buffer(data)
    (entry,) = cache.glob("*.pickle")
    blob = entry.read_bytes()
    end = blob.index(b"\n", len(load_cache.MAGIC))
    header = json.loads(blob[len(load_cache.MAGIC) : end])
    assert len(header["parts"]) > 1  # the pickle and the tables it keeps aside
    header["parts"][1] += 1
    header["parts"][2] -= 1  # the same total length, other cuts: the checksum covers them
    entry.write_bytes(load_cache.MAGIC + json.dumps(header).encode() + blob[end:])
    assert load_cache.fetch(data) is None


def test_a_cached_byte_level_bpe_has_read_its_wide_char_tokens(cache):
    """The cut between chars of three or four bytes reads the vocab once: at store, not in
    each process on its first CJK word."""
    data = fixture_path("llama3").read_bytes()
    Tokenizer.from_buffer(data)
    cut = load_cache.fetch(data).model._char_cut
    assert cut._inside is not None and cut._at_end


@pytest.mark.parametrize("name", ["llama3", "t5-unigram", "minilm"])
def test_a_cached_entry_loads_without_numpy(cache, name):
    """Reading the tables' bytes back needs no numpy: a process that loads a cached model
    (BPE, Unigram, WordPiece) and encodes one text never imports it."""
    path = fixture_path(name)
    Tokenizer.from_buffer(path.read_bytes())
    code = (
        "import sys, batchtok\n"
        f"tok = batchtok.Tokenizer.from_file({str(path)!r})\n"
        "assert vars(tok.model).get('_batch_bytes') is not None\n"
        "tok.encode_ids('hello world')\n"
        "print('numpy' in sys.modules)\n"
    )
    env = {**os.environ, load_cache.ENV: str(cache)}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "False"


@pytest.mark.parametrize("name", ["llama3", "llama2", "minilm", "xlmr-unigram"])
def test_what_only_some_calls_read_is_unpickled_on_first_use(cache, name):
    """An entry leaves out ``vocab_r`` (the inverse of the vocab: rebuilt when a token string
    is first read) and keeps BPE's merge dict (read only by one-word merges, not by the batch
    tables) as bytes: a cached tokenizer that reads them gives what a fresh one gives."""
    data = fixture_path(name).read_bytes()
    fresh = Tokenizer.from_str(data.decode())
    Tokenizer.from_buffer(data)
    cached = load_cache.fetch(data)
    held = vars(cached.model)
    assert "vocab_r" not in held
    is_bpe = isinstance(cached.model, bpe_module.BPE)
    if is_bpe:
        # the whole vocab too, unless encoding reads it (ignore_merges' whole-word lookup)
        deferred = {"pairs"} if fresh.model.ignore_merges else {"pairs", "vocab"}
        assert not deferred & set(held) and set(held["_deferred"]) == deferred
    docs = texts()
    assert view(cached, docs) == view(fresh, docs)
    assert held["vocab_r"] == fresh.model.vocab_r
    if is_bpe:
        # (the merge dict may stay unread: see the next test)
        assert cached.model.pairs == fresh.model.pairs and not held.get("_deferred")
        assert held["vocab"] == fresh.model.vocab
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        cached.model.nothing  # noqa: B018


@pytest.mark.parametrize("name", ["llama2", "gpt4o"])
def test_ids_and_lookups_leave_a_deferred_vocab_unread(cache, name):
    """A cached BPE that defers its vocab encodes ids (a batch, one text at a time) and full
    Encodings, gives the runner's facts (vocab sizes, the largest id, the unk, byte and
    end-of-text ids) and answers lookups of tokens it lacks from its symbols and the hashes
    kept beside it, without reading the whole vocab; reading tokens or looking up a longer
    token reads it. Each answer is the fresh tokenizer's."""
    data = fixture_path(name).read_bytes()
    fresh = Tokenizer.from_str(data.decode())
    Tokenizer.from_buffer(data)
    cached = load_cache.fetch(data)
    docs = texts()
    assert cached.encode_batch_ids(docs) == fresh.encode_batch_ids(docs)
    assert [cached.encode_ids(d) for d in docs[:20]] == [fresh.encode_ids(d) for d in docs[:20]]
    assert facts_of(cached, "x", "y") == facts_of(fresh, "x", "y")
    for with_added in (False, True):
        assert cached.get_vocab_size(with_added) == fresh.get_vocab_size(with_added)
    assert cached.model.max_id() == fresh.model.max_id()
    vocab = list(fresh.model.vocab)
    absent = [t + "\x00" for t in vocab[::101]] + ["", "\U0010fffe", "\ud800", "<|none|>"]
    absent = [t for t in absent if t not in fresh.model.vocab]
    assert [cached.model.token_id(t) for t in absent] == [None] * len(absent)
    singles = [t for t in vocab if len(t) == 1]
    assert [cached.model.token_id(t) for t in singles] == [fresh.model.vocab[t] for t in singles]
    assert "vocab" not in vars(cached.model)
    # full Encodings read the vocab (its inverse) only when their tokens are read
    encodings, want = cached.encode_batch(docs), fresh.encode_batch(docs)
    masks = ("ids", "type_ids", "attention_mask", "special_tokens_mask")
    assert [[getattr(e, m) for m in masks] for e in encodings] == [
        [getattr(e, m) for m in masks] for e in want
    ]
    assert "vocab" not in vars(cached.model)
    assert [e.tokens for e in encodings] == [e.tokens for e in want]
    longer = vocab[::37]
    assert [cached.token_to_id(t) for t in longer] == [fresh.token_to_id(t) for t in longer]
    assert vars(cached.model)["vocab"] == fresh.model.vocab


@pytest.mark.parametrize("name", ["llama2", "gpt4o"])
def test_long_words_after_a_batch_merge_without_the_merge_dict(cache, name, monkeypatch):
    """Once a batch has read the tables, the words it leaves to one-word merges (longer than
    the batch takes) look their pairs up in the batch's hash table, leaving the merge dict
    unread, up to a number of symbols; past it the dict is read. Each gives the fresh ids."""
    data = fixture_path(name).read_bytes()
    fresh = Tokenizer.from_str(data.decode())
    Tokenizer.from_buffer(data)
    cached = load_cache.fetch(data)
    cached.encode_batch_ids(texts())
    singles = sorted(t for t in fresh.model.vocab if len(t) == 1 and t.isprintable())
    rng = random.Random(name)
    words = [
        "".join(rng.choice(singles[:n]) for _ in range(length))
        for n in (3, 40, len(singles))
        for length in (bpe_batch.MAX_SYMBOLS + 1, 300, 2000)
    ]
    want = [fresh.model.tokenize(w) for w in words]
    assert [list(cached.model.tokenize(w)) for w in words] == want
    assert "pairs" not in vars(cached.model)
    monkeypatch.setattr(bpe_module, "_PROBE_SYMBOLS", 0)
    cached.model._segments.clear()  # (the parts of cut words, merged already)
    assert [list(cached.model.tokenize(w)) for w in words] == want
    assert vars(cached.model)["pairs"] == fresh.model.pairs


def test_a_vocab_r_that_is_no_inverse_is_kept():
    """A Unigram vocab listing a piece twice decodes both ids to it, which the inverse of its
    vocab (the piece at one id) cannot rebuild: a pickle keeps that ``vocab_r`` itself."""
    vocab = [["<unk>", 0.0], ["<pad>", -1.0], ["a", -2.0], ["<pad>", -3.0]]
    model = {"type": "Unigram", "unk_id": 0, "vocab": vocab, "byte_fallback": False}
    tok = Tokenizer.from_str(model_file(model))
    state = tok.model.__getstate__()
    assert state["vocab_r"] == {0: "<unk>", 1: "<pad>", 2: "a", 3: "<pad>"}
    copy = pickle.loads(pickle.dumps(tok))
    assert [copy.id_to_token(i) for i in range(4)] == [tok.id_to_token(i) for i in range(4)]
    assert copy.decode([1, 3, 2], False) == tok.decode([1, 3, 2], False)


# -- regular expressions: rebuilt from their compiled code, not parsed again ----------------

_ATOMS = st.sampled_from(
    [
        "a",
        "b",
        "\u4e00",
        "\u0915",
        ".",
        r"\d",
        r"\w",
        r"\s",
        "[ab]",
        "[^a]",
        r"[\u4e00-\u9fff]",
        "^",
        "$",
    ]
)


@st.composite
def _patterns(draw, depth: int = 3) -> str:
    if depth == 0 or draw(st.booleans()):
        return draw(_ATOMS)
    parts = draw(st.lists(_patterns(depth - 1), min_size=1, max_size=3))
    shape = draw(st.sampled_from(["seq", "alt", "group", "named", "star", "plus", "lazy", "count"]))
    if shape == "seq":
        return "".join(parts)
    if shape == "alt":
        return "|".join(parts)
    body = "".join(parts)
    return {
        "group": f"({body})",
        "named": f"(?P<g{depth}x{len(body)}>{body})",
        "star": f"(?:{body})*",
        "plus": f"(?:{body})+",
        "lazy": f"(?:{body})+?",
        "count": f"(?:{body}){{1,3}}",
    }[shape]


@settings(max_examples=200, deadline=None)
@given(
    _patterns(),
    st.sampled_from([0, re.IGNORECASE, re.DOTALL | re.MULTILINE, re.ASCII]),
    st.lists(st.text(alphabet="ab\u4e00\u0915 1_\n", max_size=12), max_size=6),
)
def test_a_pickled_pattern_is_the_pattern_rebuilt_from_its_code(source, flags, strings):
    try:
        pattern = re.compile(source, flags)
    except re.error:  # a named group twice, a quantifier of nothing: not a pattern
        return
    assert load_cache._compiled_code(pattern) is not None  # the fast way on this Python
    copy = load_cache.loads(load_cache.dumps(pattern))
    assert copy == pattern  # patterns compare their flags, source and compiled code
    assert (copy.groups, copy.groupindex, copy.flags) == (
        pattern.groups,
        pattern.groupindex,
        pattern.flags,
    )
    for s in strings:
        assert [m.span() for m in copy.finditer(s)] == [m.span() for m in pattern.finditer(s)]
        assert copy.split(s) == pattern.split(s)


def test_a_cached_tokenizer_compiles_no_regular_expression(cache, monkeypatch):
    """llama3's added tokens and byte-level tables are patterns of the stdlib's re; loaded
    from the cache, none is parsed and compiled again."""
    data = fixture_path("llama3").read_bytes()
    fresh = Tokenizer.from_buffer(data)  # builds and stores
    compiled: list[str] = []
    real = re._compile

    def counting(pattern, flags):
        compiled.append(pattern)
        return real(pattern, flags)

    monkeypatch.setattr(re, "_compile", counting)
    cached = load_cache.fetch(data)
    assert isinstance(cached, Tokenizer) and not compiled
    assert cached.added_vocabulary.raw_matcher.regex == fresh.added_vocabulary.raw_matcher.regex
    docs = texts()[:40] + ["<|begin_of_text|>hi<|eot_id|>", "a<|reserved_special_token_5|>b"]
    assert view(cached, docs) == view(fresh, docs)


def test_an_entry_holds_the_tokenizers_state_inline_and_a_plain_pickle_still_nests_it(cache):
    """An entry is read in place: the tokenizer's state is in it directly, not as a pickle
    inside the pickle (copied once more when read); a plain pickle, which cannot keep module
    values by reference, nests the load cache's own."""
    data = fixture_path("llama3").read_bytes()
    fresh = Tokenizer.from_buffer(data)
    (entry,) = cache.glob("*.pickle")
    blob = entry.read_bytes()
    assert b"_from_state" in blob and b"_unpickled" not in blob
    plain = pickle.dumps(fresh, protocol=5)
    assert b"_unpickled" in plain
    docs = texts()[:30]
    assert (
        view(pickle.loads(plain), docs) == view(load_cache.fetch(data), docs) == view(fresh, docs)
    )


def test_a_caller_s_sha256_is_the_key_and_a_wrong_one_only_misses(cache, monkeypatch):
    """The runner has the file's sha256 already: the cache does not hash the file again, and
    a sha256 that is not the file's finds no entry (each records the file's xxh3-128 too)."""
    data = fixture_path("llama3").read_bytes()
    other = fixture_path("minilm").read_bytes()
    key = load_cache.key_of(data)
    Tokenizer.from_buffer(data, sha256=key)
    assert entries(cache) == [f"{key}.pickle"]
    hashed: list[int] = []
    real = load_cache.key_of
    monkeypatch.setattr(load_cache, "key_of", lambda b: hashed.append(len(b)) or real(b))
    assert isinstance(load_cache.fetch(data, key), Tokenizer) and not hashed
    assert load_cache.fetch(other, key) is None  # another file under this file's key
    docs = texts()[:20]
    tok = Tokenizer.from_buffer(other, sha256=key)  # built from its own bytes, not the entry
    assert view(tok, docs) == view(Tokenizer.from_str(other.decode()), docs)
