"""The rest of the library's inference API against the oracle (tokenizers 0.23.3):
encode_batch_fast, post_process, num_special_tokens_to_add, to_str / save, add_tokens /
add_special_tokens with AddedToken, get_added_tokens_decoder, the components' own calls
(normalize_str, pre_tokenize_str, decode) and from_pretrained from a local Hub cache.

Tests that change a tokenizer (added tokens, truncation, padding) load their own copies, so
the shared pairs of ``pair_for`` stay as their files describe them.
"""

from __future__ import annotations

import json
import pickle
import random

import pytest
import tokenizers

import batchtok
from batchtok import AddedToken, Tokenizer
from batchtok.pre_tokenizers import read_pre_tokenizer
from tests.support.adversarial import INTERESTING
from tests.support.oracle import corpus_lines, outcome, pair_for, tokenizer_json

FILES = ("llama3", "minilm", "t5-unigram", "trained-wordpiece-bert", "xlmr-unigram", "gpt1-bpe")
# every attribute of an Encoding a caller reads
FIELDS = (
    "ids",
    "tokens",
    "offsets",
    "word_ids",
    "type_ids",
    "sequence_ids",
    "special_tokens_mask",
    "attention_mask",
    "n_sequences",
)


def fresh(name: str) -> tuple[Tokenizer, tokenizers.Tokenizer]:
    """(batchtok, oracle) loaded anew from a fixture file, for a test that changes them."""
    text = tokenizer_json(name)
    return Tokenizer.from_buffer(text.encode("utf-8")), tokenizers.Tokenizer.from_str(text)


def texts(n: int = 40) -> list[str]:
    rng = random.Random(7)
    lines = corpus_lines()
    return lines[:n] + ["", " ", "a", rng.choice(INTERESTING) * 3]


def view(encoding) -> dict:
    """Every attribute of an Encoding, its overflowing windows included, as plain values."""
    out = {field: getattr(encoding, field) for field in FIELDS}
    out = {k: list(v) if isinstance(v, list) else v for k, v in out.items()}
    out["overflowing"] = [view(o) for o in encoding.overflowing]
    return out


def assert_same_encodings(ours: list, theirs: list) -> None:
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        got, want = view(a), view(b)
        for field in want:
            assert got[field] == want[field], f"input {i}: {field} differs"


def same_outcome(got: tuple, want: tuple) -> bool:
    """Equal results, or errors with the same message (batchtok's exception types are its
    own)."""
    if got[0] == want[0] == "error":
        return got[1].partition(": ")[2] == want[1].partition(": ")[2]
    return got == want


def mixed_inputs() -> list:
    lines = texts(12)
    return [lines[0], (lines[1], lines[2]), *lines[3:10], (lines[10], ""), ("", lines[11])]


PRETOKENIZED = [
    ["Hello", "world"],
    (["a", "pair", "of"], ["word", "lists"]),
    ["naïve", " café", "日本語"],
    [],
]

# ---------------------------------------------------------------------------------------------
# encode_batch_fast


@pytest.mark.parametrize("name", FILES)
def test_encode_batch_fast_matches_the_oracle(name):
    ours, ref = pair_for(name)
    for add in (True, False):
        inputs = mixed_inputs()
        got = ours.encode_batch_fast(inputs, add_special_tokens=add)
        assert_same_encodings(got, ref.encode_batch_fast(inputs, add_special_tokens=add))
        # the same ids as encode_batch, whose other columns are tracked
        assert [e.ids for e in got] == [e.ids for e in ours.encode_batch(inputs, False, add)]
        got = ours.encode_batch_fast(PRETOKENIZED, is_pretokenized=True, add_special_tokens=add)
        want = ref.encode_batch_fast(PRETOKENIZED, is_pretokenized=True, add_special_tokens=add)
        assert_same_encodings(got, want)


@pytest.mark.parametrize("name", ["llama3", "minilm", "t5-unigram"])
def test_encode_batch_fast_with_truncation_and_padding(name):
    ours, ref = fresh(name)
    inputs = mixed_inputs()
    for tok in (ours, ref):
        tok.enable_truncation(9, stride=1, strategy="longest_first", direction="left")
        tok.enable_padding(direction="left", pad_id=1, pad_token="<pad>", pad_to_multiple_of=4)
    assert_same_encodings(ours.encode_batch_fast(inputs), ref.encode_batch_fast(inputs))


def test_encode_batch_fast_refuses_what_the_oracle_refuses():
    ours, ref = pair_for("minilm")
    for bad in ([1], [("a", "b", "c")], [("a", 2)]):
        assert outcome(lambda: ours.encode_batch_fast(bad))[0] == "error"  # noqa: B023
        assert outcome(lambda: ref.encode_batch_fast(bad))[0] == "error"  # noqa: B023


# ---------------------------------------------------------------------------------------------
# post_process and num_special_tokens_to_add


@pytest.mark.parametrize("name", FILES)
def test_num_special_tokens_to_add(name):
    ours, ref = pair_for(name)
    for is_pair in (False, True):
        assert ours.num_special_tokens_to_add(is_pair) == ref.num_special_tokens_to_add(is_pair)


@pytest.mark.parametrize("name", ["llama3", "minilm", "t5-unigram", "trained-wordpiece-bert"])
@pytest.mark.parametrize("settings", ["plain", "truncated_padded"])
def test_post_process_matches_the_oracle_and_leaves_its_inputs(name, settings):
    ours, ref = fresh(name)
    if settings == "truncated_padded":
        for tok in (ours, ref):
            tok.enable_truncation(6, stride=1, strategy="only_first")
            tok.enable_padding(length=12, pad_id=0, pad_type_id=1)
    lines = texts(6)
    for first, second in zip(lines, lines[1:]):
        for add in (True, False):
            # raw sequences (as the library's encode gives them before post-processing) and
            # encodings already post-processed
            for raw in (False, True):
                a, pa = (
                    ours.encode(first, add_special_tokens=raw),
                    ref.encode(first, add_special_tokens=raw),
                )
                b, pb = (
                    ours.encode(second, add_special_tokens=raw),
                    ref.encode(second, add_special_tokens=raw),
                )
                before = (view(a), view(b))
                assert view(a) == view(pa)
                for pair in (False, True):
                    got = outcome(
                        lambda: view(ours.post_process(a, b if pair else None, add))  # noqa: B023
                    )
                    want = outcome(
                        lambda: view(ref.post_process(pa, pb if pair else None, add))  # noqa: B023
                    )
                    assert same_outcome(got, want), (first, second, add, raw, pair)
                assert (view(a), view(b)) == before  # the library processes copies


# ---------------------------------------------------------------------------------------------
# AddedToken, add_tokens, add_special_tokens, get_added_tokens_decoder

FLAGS = ("content", "single_word", "lstrip", "rstrip", "normalized", "special")


def flags(token) -> tuple:
    return tuple(getattr(token, f) for f in FLAGS)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"special": True},
        {"special": True, "normalized": True},
        {"normalized": False},
        {"single_word": True, "lstrip": True, "rstrip": True},
        {"special": False, "normalized": False, "rstrip": True},
    ],
)
def test_added_token_reads_as_the_library_s(kwargs):
    ours, theirs = AddedToken("<x>", **kwargs), tokenizers.AddedToken("<x>", **kwargs)
    assert flags(ours) == flags(theirs)
    assert repr(ours) == repr(theirs) and str(ours) == str(theirs)
    assert hash(ours) == hash(AddedToken("<x>"))  # by content, as the library hashes
    assert (ours == AddedToken("<x>", **kwargs)) == (
        theirs == tokenizers.AddedToken("<x>", **kwargs)
    )
    assert (ours == AddedToken("<y>")) == (theirs == tokenizers.AddedToken("<y>"))
    ours.special = theirs.special = not ours.special
    assert flags(ours) == flags(theirs)
    assert flags(pickle.loads(pickle.dumps(ours))) == flags(ours)
    assert flags(AddedToken()) == flags(tokenizers.AddedToken())


def both(token: tuple[str, dict] | str, oracle: bool):
    """A token to add, as each library's own type (or a str)."""
    if isinstance(token, str):
        return token
    content, kwargs = token
    return (tokenizers.AddedToken if oracle else AddedToken)(content, **kwargs)


# Calls of add_tokens / add_special_tokens: new contents, contents of the vocab, repeats,
# flag changes, empty content, flags that look around a match.
ADDITIONS = [
    ("add_tokens", ["zqxj", "hello", "zqxj", ""]),
    ("add_special_tokens", ["<sp1>", ("<sp2>", {"normalized": True}), "zqxj"]),
    ("add_tokens", [("zqxj", {"single_word": True}), ("Wörd", {"lstrip": True, "rstrip": True})]),
    ("add_tokens", [("<sp1>", {"special": True, "normalized": False}), ("Café", {})]),
    ("add_special_tokens", [("  ", {}), ("[ABC]", {"single_word": True, "normalized": False})]),
]
ENCODE = [
    "hello zqxj world zqxjzqxj <sp1><sp2> x",
    "Wörd  Wörd, wörd CAFÉ Café café [ABC] a[ABC]b",
    "multiple  spaces   and <sp1> tabs\tend",
]


def run_additions(tok, oracle: bool) -> list[int]:
    counts = []
    for method, items in ADDITIONS:
        counts.append(getattr(tok, method)([both(t, oracle) for t in items]))
    return counts


@pytest.mark.parametrize("name", ["llama3", "minilm", "t5-unigram", "trained-wordpiece-bert"])
def test_add_tokens_as_the_library_adds_them(name):
    ours, ref = fresh(name)
    assert run_additions(ours, False) == run_additions(ref, True)
    assert ours.get_vocab_size() == ref.get_vocab_size()
    assert ours.get_vocab() == ref.get_vocab()
    got = {i: flags(t) for i, t in ours.get_added_tokens_decoder().items()}
    want = {i: flags(t) for i, t in ref.get_added_tokens_decoder().items()}
    assert got == want and list(got) == list(want)
    lines = ENCODE + texts(20)
    for add in (True, False):
        want_encodings = ref.encode_batch(lines, add_special_tokens=add)
        got_encodings = ours.encode_batch(lines, add_special_tokens=add)
        for a, b in zip(got_encodings, want_encodings):
            assert (a.ids, a.offsets) == (b.ids, b.offsets)
        # (tokens by encode: see test_batch_tokens_of_unknown_text_beside_an_added_token)
        for line, b in zip(lines, want_encodings):
            assert ours.encode(line, add_special_tokens=add).tokens == b.tokens
        assert ours.encode_batch_ids(lines, add) == [e.ids for e in want_encodings]
        assert [ours.encode_ids(t, add) for t in lines] == [e.ids for e in want_encodings]
        for skip in (True, False):
            ids = [e.ids for e in want_encodings]
            assert ours.decode_batch(ids, skip) == ref.decode_batch(ids, skip_special_tokens=skip)
    for content in ("zqxj", "<sp1>", "[ABC]", "Café", "nope-not-there"):
        assert ours.token_to_id(content) == ref.token_to_id(content)
    for i in range(ref.get_vocab_size() - 8, ref.get_vocab_size() + 2):
        assert ours.id_to_token(i) == ref.id_to_token(i)


def test_batch_tokens_of_unknown_text_beside_an_added_token():
    data = json.loads(tokenizer_json("t5-unigram"))
    extra = {"id": 0, "content": "zqxj", "single_word": False, "lstrip": False}
    data["added_tokens"].append({**extra, "rstrip": False, "normalized": True, "special": False})
    text = json.dumps(data)
    ours, ref = loaded_back(text)
    line = "zqxj ŉ"  # (its normalized form holds a char the model does not know)
    assert ours.encode_batch([line])[0].tokens == ref.encode_batch([line])[0].tokens


def test_add_special_tokens_makes_the_caller_s_token_special():
    ours, ref = fresh("minilm")
    mine, theirs = AddedToken("<m>"), tokenizers.AddedToken("<m>")
    assert ours.add_special_tokens([mine]) == ref.add_special_tokens([theirs]) == 1
    assert flags(mine) == flags(theirs) and mine.special
    # a later change of the caller's token leaves the tokenizer's as it is
    mine.special = False
    theirs.special = False
    assert ours.get_added_tokens_decoder()[30522].special
    assert ref.get_added_tokens_decoder()[30522].special
    for bad in ([1], "abc", [None]):
        got = outcome(lambda: ours.add_tokens(bad))  # noqa: B023
        assert got[0] == outcome(lambda: ref.add_tokens(bad))[0] == "error"  # noqa: B023


@pytest.mark.parametrize("name", FILES)
def test_added_tokens_decoder_of_the_files(name):
    ours, ref = pair_for(name)
    got = {i: flags(t) for i, t in ours.get_added_tokens_decoder().items()}
    want = {i: flags(t) for i, t in ref.get_added_tokens_decoder().items()}
    assert got == want and list(got) == list(want)
    assert all(isinstance(t, AddedToken) for t in ours.get_added_tokens_decoder().values())


# ---------------------------------------------------------------------------------------------
# to_str and save


def loaded_back(text: str) -> tuple[Tokenizer, tokenizers.Tokenizer]:
    return Tokenizer.from_str(text), tokenizers.Tokenizer.from_str(text)


@pytest.mark.parametrize("name", ["llama3", "minilm", "t5-unigram", "trained-wordpiece-bert"])
def test_to_str_loads_in_the_library_as_the_same_tokenizer(name, tmp_path):
    ours, ref = fresh(name)
    lines = ENCODE + texts(30)
    for step in ("as loaded", "added tokens", "truncation", "padding"):
        if step == "added tokens":
            run_additions(ours, False)
            run_additions(ref, True)
        elif step == "truncation":
            for tok in (ours, ref):
                tok.enable_truncation(9, stride=3, strategy="longest_first", direction="left")
        elif step == "padding":
            for tok in (ours, ref):
                tok.enable_padding(length=16, pad_id=2, pad_type_id=1, pad_token="<p>")
        for pretty in (False, True):
            text = ours.to_str(pretty)
            # what batchtok writes of its own state is what the library writes of its own
            data, want = json.loads(text), json.loads(ref.to_str(pretty))
            for key in ("version", "added_tokens", "truncation", "padding"):
                assert data[key] == want[key], (step, key)
            again, loaded = loaded_back(text)
            # the library's own file, loaded back: what batchtok's must load as (a content
            # once special stays special in a live tokenizer, not in its file)
            own = tokenizers.Tokenizer.from_str(ref.to_str(pretty))
            want_ids = [e.ids for e in ref.encode_batch(lines)]
            assert [e.ids for e in loaded.encode_batch(lines)] == want_ids, step
            assert [e.ids for e in own.encode_batch(lines)] == want_ids, step
            assert ours.encode_batch_ids(lines) == want_ids, step
            assert again.encode_batch_ids(lines) == want_ids, step
            for skip in (True, False):
                want = own.decode_batch(want_ids, skip_special_tokens=skip)
                assert loaded.decode_batch(want_ids, skip_special_tokens=skip) == want
                assert again.decode_batch(want_ids, skip) == want
        path = tmp_path / f"{step}.json"
        ours.save(str(path))
        assert path.read_text(encoding="utf-8") == ours.to_str(pretty=True)
        saved = tokenizers.Tokenizer.from_file(str(path))
        assert [e.ids for e in saved.encode_batch(lines)] == want_ids
    # the library's own file after the same changes loads in batchtok as the same tokenizer
    theirs = Tokenizer.from_str(ref.to_str())
    assert theirs.encode_batch_ids(lines) == ours.encode_batch_ids(lines)


def test_to_str_after_pickling_and_from_dict():
    ours, ref = pair_for("minilm")
    copy = pickle.loads(pickle.dumps(ours))
    assert json.loads(copy.to_str()) == json.loads(ours.to_str())
    built = Tokenizer.from_dict(json.loads(tokenizer_json("trained-wordpiece-bert")))
    assert tokenizers.Tokenizer.from_str(built.to_str()).encode("Hello there").ids == (
        built.encode("Hello there").ids
    )
    assert json.loads(ours.to_str())["added_tokens"] == json.loads(ref.to_str())["added_tokens"]


def test_a_tokenizer_loaded_without_its_source_refuses_to_write_itself(tmp_path):
    """The runner loads with keep_source=False (a job never writes its tokenizer back): the
    file's bytes are not kept, and to_str/save say why instead of writing something else."""
    data = tokenizer_json("minilm").encode("utf-8")
    lean = Tokenizer.from_buffer(data, keep_source=False)
    assert lean.encode("Hello there").ids == Tokenizer.from_buffer(data).encode("Hello there").ids
    with pytest.raises(NotImplementedError, match="keep_source=False"):
        lean.to_str()
    with pytest.raises(NotImplementedError, match="keep_source=False"):
        lean.save(tmp_path / "tokenizer.json")
    assert not (tmp_path / "tokenizer.json").exists()


# ---------------------------------------------------------------------------------------------
# The components' own calls

COMPONENT_FILES = ("llama3", "llama2", "minilm", "t5-unigram", "xlmr-unigram", "gpt1-bpe")


@pytest.mark.parametrize("name", COMPONENT_FILES)
def test_component_calls_of_the_files(name):
    ours, ref = pair_for(name)
    lines = texts(40) + list(INTERESTING)[:80]
    if ref.normalizer is not None:
        assert [ours.normalizer.normalize_str(t) for t in lines] == [
            ref.normalizer.normalize_str(t) for t in lines
        ]
    if ref.pre_tokenizer is not None:
        for t in lines:
            assert ours.pre_tokenizer.pre_tokenize_str(t) == ref.pre_tokenizer.pre_tokenize_str(t)
    if ref.decoder is not None:
        for e in ref.encode_batch(lines):
            assert ours.decoder.decode(e.tokens) == ref.decoder.decode(e.tokens)
    for e in ref.encode_batch(lines[:10]):
        for i, token in zip(e.ids, e.tokens):
            assert ours.model.token_to_id(token) == ref.model.token_to_id(token)
            assert ours.model.id_to_token(i) == ref.model.id_to_token(i)
    for is_pair in (False, True):
        if ref.post_processor is not None:
            want = ref.post_processor.num_special_tokens_to_add(is_pair)
            assert ours.post_processor.num_special_tokens_to_add(is_pair) == want


GPT2 = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
PRE_TOKENIZERS = [
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": True},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
    {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True, "use_regex": False},
    {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": False, "use_regex": False},
    *(
        {"type": "Metaspace", "replacement": "▁", "prepend_scheme": scheme, "split": split}
        for scheme in ("always", "first", "never")
        for split in (True, False)
    ),
    {"type": "Whitespace"},
    {"type": "WhitespaceSplit"},
    {"type": "BertPreTokenizer"},
    {"type": "Digits", "individual_digits": True},
    {"type": "Digits", "individual_digits": False},
    {"type": "Punctuation", "behavior": "Isolated"},
    {"type": "Punctuation", "behavior": "Contiguous"},
    {"type": "Punctuation", "behavior": "MergedWithPrevious"},
    {"type": "Split", "pattern": {"Regex": GPT2}, "behavior": "Isolated", "invert": False},
    {"type": "Split", "pattern": {"String": " "}, "behavior": "Removed", "invert": False},
    {"type": "Split", "pattern": {"String": "a"}, "behavior": "MergedWithNext", "invert": False},
    {"type": "Split", "pattern": {"Regex": "\\d+"}, "behavior": "Contiguous", "invert": True},
    {"type": "CharDelimiterSplit", "delimiter": "-"},
    {"type": "UnicodeScripts"},
    {"type": "FixedLength", "length": 3},
    {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": GPT2}, "behavior": "Isolated", "invert": False},
            {
                "type": "ByteLevel",
                "add_prefix_space": False,
                "trim_offsets": True,
                "use_regex": False,
            },
        ],
    },
    {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "WhitespaceSplit"},
            {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "first", "split": True},
        ],
    },
    {
        "type": "Sequence",
        "pretokenizers": [
            {"type": "Digits", "individual_digits": True},
            {"type": "Punctuation", "behavior": "Isolated"},
            {
                "type": "ByteLevel",
                "add_prefix_space": True,
                "trim_offsets": True,
                "use_regex": True,
            },
        ],
    },
]


def oracle_pre_tokenizer(config: dict):
    data = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": config,
        "post_processor": None,
        "decoder": None,
        "model": {"type": "WordLevel", "vocab": {"a": 0}, "unk_token": "a"},
    }
    return tokenizers.Tokenizer.from_str(json.dumps(data)).pre_tokenizer


def pre_tokenize_texts() -> list[str]:
    rng = random.Random(11)
    pool = list(INTERESTING) + [" ", "a", "1", "-", "  ", "▁"]
    out = texts(50) + list(INTERESTING)[:150]
    out += ["", " ", "  a  b ", "▁x", "a\u0301 é 日本 🙂👍🏽", "1234-5678 ab,cd!!", "\n\n x\t"]
    out += ["".join(rng.choice(pool) for _ in range(rng.randint(1, 8))) for _ in range(150)]
    return out


@pytest.mark.parametrize("config", PRE_TOKENIZERS, ids=lambda c: json.dumps(c)[:60])
def test_pre_tokenize_str_matches_the_oracle(config):
    ours, ref = read_pre_tokenizer(config, "pre_tokenizer"), oracle_pre_tokenizer(config)
    for text in pre_tokenize_texts():
        assert ours.pre_tokenize_str(text) == ref.pre_tokenize_str(text), text


# ---------------------------------------------------------------------------------------------
# from_pretrained, offline

COMMIT = "0123456789abcdef0123456789abcdef01234567"


def lay_out_cache(root, name: str = "org/model", ref: str = "main") -> None:
    repo = root / ("models--" + name.replace("/", "--"))
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / ref).write_text(COMMIT)
    snapshot = repo / "snapshots" / COMMIT
    snapshot.mkdir(parents=True)
    (snapshot / "tokenizer.json").write_text(tokenizer_json("minilm"), encoding="utf-8")


def assert_minilm(tok: Tokenizer) -> None:
    _, ref = pair_for("minilm")
    lines = texts(10)
    assert tok.encode_batch_ids(lines) == [e.ids for e in ref.encode_batch(lines)]


def test_from_pretrained_reads_the_hub_cache(tmp_path, monkeypatch):
    cache = tmp_path / "hub"
    lay_out_cache(cache)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert_minilm(Tokenizer.from_pretrained("org/model"))
    assert_minilm(Tokenizer.from_pretrained("org/model", revision=COMMIT, token="unused"))
    with pytest.raises(FileNotFoundError, match="does not download") as info:
        Tokenizer.from_pretrained("org/model", revision="v2")
    assert str(cache / "models--org--model" / "refs" / "v2") in str(info.value)
    with pytest.raises(FileNotFoundError, match="does not download"):
        Tokenizer.from_pretrained("org/other")


def test_from_pretrained_hf_home_and_local_directory(tmp_path, monkeypatch):
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    lay_out_cache(tmp_path / "home" / "hub", "solo-model", ref="dev")
    assert_minilm(Tokenizer.from_pretrained("solo-model", revision="dev"))
    monkeypatch.delenv("HF_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    lay_out_cache(tmp_path / "user" / ".cache" / "huggingface" / "hub")
    assert_minilm(Tokenizer.from_pretrained("org/model"))
    directory = tmp_path / "local"
    directory.mkdir()
    (directory / "tokenizer.json").write_text(tokenizer_json("minilm"), encoding="utf-8")
    assert_minilm(Tokenizer.from_pretrained(str(directory)))
    assert_minilm(batchtok.Tokenizer.from_pretrained(str(directory)))


@pytest.mark.parametrize(
    "component", ["model", "normalizer", "pre_tokenizer", "post_processor", "decoder"]
)
def test_replacing_a_component_is_refused_not_ignored(component):
    """The library rebuilds nothing either, but its components are used as they are; batchtok
    compiles them at load, so a replaced one would be silently ignored: refused instead."""
    ours, _ = fresh("minilm")
    before = ours.encode("Hello there").ids
    with pytest.raises(AttributeError, match=f"cannot replace the {component}"):
        setattr(ours, component, None)
    assert ours.encode("Hello there").ids == before


def test_unknown_keywords_are_reported_and_ignored_as_the_library_does(capfd):
    """The binding prints "Ignored unknown kwarg option KEY" and goes on, for AddedToken and
    Encoding.pad: batchtok does the same (standard output compared with the oracle's)."""
    mine = AddedToken("x", lstrip=True, colour="blue")
    ours_out = capfd.readouterr().out
    theirs = tokenizers.AddedToken("x", lstrip=True, colour="blue")
    assert capfd.readouterr().out == ours_out == "Ignored unknown kwarg option colour\n"
    assert flags(mine) == flags(theirs)
    ours, ref = pair_for("minilm")
    a, b = ours.encode("Hello"), ref.encode("Hello")
    a.pad(6, pad_id=5, size=3)
    ours_out = capfd.readouterr().out
    b.pad(6, pad_id=5, size=3)
    assert capfd.readouterr().out == ours_out == "Ignored unknown kwarg option size\n"
    assert (a.ids, a.attention_mask, a.offsets) == (b.ids, b.attention_mask, b.offsets)
