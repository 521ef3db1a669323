"""`explain`: each stage of a text's path, held to the oracle's own component calls.

The normalizer's steps to ``normalizer[i].normalize_str``, the pre-tokenizer's steps to
``pre_tokenizer[i].pre_tokenize`` on one ``PreTokenizedString``, each pre-token's tokens to
``model.tokenize``, and the result (ids, tokens, the post-processor's additions, padding,
decode) to ``encode`` and ``decode``; BPE merge orders to the file's own ``merges`` list.
"""

from __future__ import annotations

import json
import pathlib

import click
import pytest
import tokenizers
from click.testing import CliRunner
from hypothesis import given, settings

import batchtok
from batchtok.cli import main
from batchtok.explain import ALL_PIECES, ExplainMismatch, explain
from tests.support.adversarial import INTERESTING
from tests.support.fixtures import fixture_path
from tests.support.oracle import pair_for, pair_from_json, text_strategy, tokenizer_json
from tests.support.tier import examples

GPT2 = pathlib.Path(__file__).resolve().parents[1] / "configs/tokenizers/gpt2/tokenizer.json"

# byte-level (GPT-2, Llama-3: a Sequence[Split, ByteLevel]), SentencePiece-BPE (Llama-2's
# normalizer pair; the Mistral layout's Metaspace "first"), WordPiece (all-MiniLM-L6-v2: BERT
# normalizer, truncation and fixed padding), Unigram (T5; a Sequence[Digits, Metaspace first]
# with normalized added tokens), and a byte-level normalizer with normalized added tokens.
FILES = (
    "gpt2",
    "llama3",
    "llama2",
    "llama2-mistral",
    "minilm",
    "t5-unigram",
    "ks-unigram-metaspace-first-nosplit",
    "ks-bpe-bytelevel-chardelimiter",
)

TEXTS = (
    "Hello world",
    "",
    " ",
    "  \t\n  x  ",
    "naïve café, ÅNGSTRÖM ﬁ ½ 日本語のテキスト 한국어 🙂👍🏽",
    " It's 2024: x**2 == 4\n\tdef f(): return 12345",
)


def _pair(name: str) -> tuple[batchtok.Tokenizer, tokenizers.Tokenizer]:
    return pair_from_json(_json(name)) if name == "gpt2" else pair_for(name)


def _json(name: str) -> str:
    """The tokenizer.json text of a file of FILES."""
    return GPT2.read_text("utf-8") if name == "gpt2" else tokenizer_json(name)


def _texts(name: str) -> list[str]:
    """The shared texts, and texts around each kind of added token the file has."""
    added = json.loads(_json(name))["added_tokens"]
    picks = [t for t in added if t["special"]][:1] + [t for t in added if not t["special"]][:1]
    picks += [t for t in added if t["normalized"]][:1]
    out = list(TEXTS)
    for t in picks:
        c = t["content"]
        out += [c, f"a{c}b {c}  {c.upper()} é{c}\n", f"{c}{c} Hello"]
    return out


def _oracle_stages(component) -> list:
    """The components a Sequence holds, in the oracle (``component[i]``), or the one."""
    sequences = (tokenizers.normalizers.Sequence, tokenizers.pre_tokenizers.Sequence)
    if not isinstance(component, sequences):
        return [component]
    out = []
    while True:  # the pre-tokenizer Sequence has no len()
        try:
            out.append(component[len(out)])
        except IndexError:
            return out


def _stage(doc: dict, name: str, sequence: int | None = None) -> dict:
    (found,) = [s for s in doc["stages"] if s["stage"] == name and s.get("sequence") == sequence]
    return found


def _has_first_scheme(name: str) -> bool:
    return '"prepend_scheme": "first"' in json.dumps(json.loads(_json(name)))


def _check_sequence(doc: dict, ref: tokenizers.Tokenizer, seq: int, first_scheme: bool) -> None:
    text = doc["input"]["text"] if seq == 0 else doc["input"]["pair"]
    raw = _stage(doc, "added_tokens", seq)["fragments"]
    assert "".join(f["text"] for f in raw) == text
    # normalizer: the whole, and each step, as the oracle's components give them
    normalizer = _stage(doc, "normalizer", seq)
    if ref.normalizer is None:
        assert normalizer["component"] is None and normalizer["fragments"] == []
    else:
        steps = _oracle_stages(ref.normalizer)
        for f in normalizer["fragments"]:
            assert f["output"] == ref.normalizer.normalize_str(f["input"])
            assert len(f["steps"]) == len(steps)
            current = f["input"]
            for ours, theirs in zip(f["steps"], steps):
                current = theirs.normalize_str(current)
                assert ours["output"] == current
    # pre-tokenizer: each step on one PreTokenizedString, as a Sequence runs them
    fragments = _stage(doc, "added_tokens_normalized", seq)["fragments"]
    text_fragments = [f for f in fragments if f["kind"] == "text"]
    pre = _stage(doc, "pre_tokenizer", seq)
    assert [f["input"] for f in pre["fragments"]] == [f["text"] for f in text_fragments]
    for i, f in enumerate(pre["fragments"]):
        if ref.pre_tokenizer is None:
            assert f["pieces"] == [f["input"]]
            continue
        if first_scheme and not (i == 0 and fragments[0]["kind"] == "text"):
            continue  # Metaspace "first" asks where the fragment stood in the text
        pts = tokenizers.PreTokenizedString(f["input"])
        stages = _oracle_stages(ref.pre_tokenizer)
        for j, stage in enumerate(stages):
            stage.pre_tokenize(pts)
            pieces = [s for s, _, _ in pts.get_splits()]
            if f["steps"]:
                assert f["steps"][j]["pieces"] == pieces, (j, f)
        assert f["pieces"] == [s for s, _, _ in pts.get_splits()]
    # model: each pre-token's tokens as the oracle's model gives them
    for p in _stage(doc, "model", seq)["pieces"]:
        if p["kind"] == "pre-token":
            expected = [{"id": t.id, "token": t.value} for t in ref.model.tokenize(p["text"])]
            assert p["tokens"] == expected, p


def _check_result(doc: dict, ref: tokenizers.Tokenizer) -> None:
    inp = doc["input"]
    enc = ref.encode(inp["text"], inp["pair"], add_special_tokens=inp["add_special_tokens"])
    assert doc["ids"] == enc.ids
    assert doc["tokens"] == enc.tokens
    assert doc["special_tokens_mask"] == enc.special_tokens_mask
    added = _stage(doc, "post_processor")["added"]
    assert [(a["position"], a["id"], a["token"]) for a in added] == [
        (i, enc.ids[i], enc.tokens[i])
        for i, (seq, att) in enumerate(zip(enc.sequence_ids, enc.attention_mask))
        if seq is None and att
    ]
    assert _stage(doc, "padding")["added"] == enc.attention_mask.count(0)
    assert doc["decoded"] == ref.decode(enc.ids)


@pytest.mark.parametrize("name", FILES)
def test_stages_match_the_oracle_components(name):
    ours, ref = _pair(name)
    first_scheme = _has_first_scheme(name)
    for text in _texts(name):
        doc = explain(ours, text)
        _check_sequence(doc, ref, 0, first_scheme)
        _check_result(doc, ref)


@pytest.mark.parametrize("name", ["llama2", "minilm", "t5-unigram"])
def test_pairs_and_options_match_the_oracle(name):
    ours, ref = _pair(name)
    first_scheme = _has_first_scheme(name)
    special = json.loads(_json(name))["added_tokens"][0]["content"]
    for text, pair in [("Hello world", "é x"), (f"a{special}b", ""), ("", f" {special} ")]:
        for add in (True, False):
            doc = explain(ours, text, pair, add_special_tokens=add)
            _check_sequence(doc, ref, 0, first_scheme)
            _check_sequence(doc, ref, 1, first_scheme)
            _check_result(doc, ref)
    ref.encode_special_tokens = True
    try:
        doc = explain(ours, f"a{special}b", special_text_as_text=True)
        assert doc["ids"] == ref.encode(f"a{special}b").ids
        assert not _stage(doc, "added_tokens", 0)["changed"]
    finally:
        ref.encode_special_tokens = False
    assert not ours.encode_special_tokens  # restored


@pytest.mark.parametrize("name", ["gpt2", "llama2", "minilm", "t5-unigram"])
def test_random_texts_match_the_oracle(name):
    """Arbitrary Unicode mixed with the file's added tokens and the strings components care
    about: every stage still matches the oracle's components."""
    ours, ref = _pair(name)
    first_scheme = _has_first_scheme(name)
    added = [t["content"] for t in json.loads(_json(name))["added_tokens"][:8]]

    @settings(max_examples=examples(200), deadline=None)
    @given(text_strategy(INTERESTING + added))
    def check(text):
        doc = explain(ours, text)
        _check_sequence(doc, ref, 0, first_scheme)
        _check_result(doc, ref)

    check()


def _file_ranks(name: str) -> dict[tuple[str, str], int]:
    merges = json.loads(_json(name))["model"]["merges"]
    pairs = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in merges]
    return {pair: rank for rank, pair in enumerate(pairs)}  # a later duplicate wins


@pytest.mark.parametrize("name", ["gpt2", "llama2"])
def test_bpe_merges_follow_the_file_ranks(name):
    """Each step joins the adjacent pair ranked lowest in the file's merges (the leftmost of
    equals), and the symbols left are the oracle model's tokens."""
    ours, ref = _pair(name)
    ranks = _file_ranks(name)
    text = "Hello wörld, naïve 日本語 tokenization unbelievably 🙂 aaaa"
    doc = explain(ours, text, merges=[ALL_PIECES])
    pieces = [p for p in _stage(doc, "model", 0)["pieces"] if p["kind"] == "pre-token"]
    assert pieces and all("merges" in p for p in pieces)
    for p in pieces:
        symbols = list(p["merges"]["symbols"])
        for step in p["merges"]["steps"]:
            adjacent = [ranks.get(pair) for pair in zip(symbols, symbols[1:])]
            best = min(r for r in adjacent if r is not None)
            assert (step["rank"], step["at"]) == (best, adjacent.index(best))
            assert (step["left"], step["right"]) == tuple(symbols[step["at"] : step["at"] + 2])
            symbols[step["at"] : step["at"] + 2] = [step["merged"]]
        assert all(pair not in ranks for pair in zip(symbols, symbols[1:]))
        assert symbols == [t.value for t in ref.model.tokenize(p["text"])]


@pytest.mark.parametrize(
    "name,text,pieces,shown",
    [
        ("gpt2", "Hello world", (" world", "Ġworld"), "Ġworld"),  # a ByteLevel pre-tokenizer
        ("ks-bpe-bytelevel-chardelimiter", "naïve x", ("naïve", "naÃ¯ve"), "naÃ¯ve"),  # normalizer
    ],
)
def test_merges_of_one_piece_by_its_text_or_its_byte_level_form(name, text, pieces, shown):
    ours, _ = _pair(name)
    for piece in pieces:
        doc = explain(ours, text, merges=[piece])
        with_merges = [p["text"] for p in _stage(doc, "model", 0)["pieces"] if "merges" in p]
        assert with_merges == [shown]


# -- the command ---------------------------------------------------------------------------------


def _run(*args: str, color: bool = False):
    return CliRunner().invoke(main, ["explain", "-t", str(GPT2), *args], color=color)


def test_command_shows_every_stage_and_encodes_ids():
    result = _run("Hello <|endoftext|> world")
    assert result.exit_code == 0, result.output
    ref = tokenizers.Tokenizer.from_file(str(GPT2))
    out = result.output
    assert f"ids     {ref.encode('Hello <|endoftext|> world').ids}" in out
    for heading in (
        "added tokens in the raw text: 3 fragments",
        "normalizer: none",
        "pre-tokenizer ByteLevel",
        "model BPE",
        "post-processor ByteLevel",
        "truncation: none configured",
        "decoded 'Hello  world'",
    ):
        assert heading in out
    assert "special  '<|endoftext|>'  id 50256" in out


def test_colour_on_a_terminal_none_when_piped():
    coloured = _run("Hello <|endoftext|>", color=True)
    assert coloured.exit_code == 0
    assert "\x1b[" in coloured.output
    assert "\x1b[41m" in coloured.output  # the special token's own background
    plain = _run("Hello <|endoftext|>")
    assert "\x1b[" not in plain.output
    assert click.unstyle(coloured.output) == plain.output
    assert "\x1b[" not in _run("Hello", "--no-color", color=True).output


def test_json_parses_with_one_entry_per_stage():
    result = _run("Hi there", "--json", "--pair", "x", "--merges")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.output)
    names = [(s["stage"], s.get("sequence")) for s in doc["stages"]]
    per_sequence = [
        "added_tokens",
        "normalizer",
        "added_tokens_normalized",
        "pre_tokenizer",
        "model",
    ]
    assert names == [(n, 0) for n in per_sequence] + [(n, 1) for n in per_sequence] + [
        ("truncation", None),
        ("post_processor", None),
        ("padding", None),
        ("decoder", None),
    ]
    ref = tokenizers.Tokenizer.from_file(str(GPT2))
    assert doc["ids"] == ref.encode("Hi there", "x").ids
    assert all("merges" in p for p in doc["stages"][4]["pieces"])


def test_bare_merges_after_the_text_and_a_named_piece():
    every = _run("Hello world", "--merges")
    assert every.exit_code == 0, every.output
    assert every.output.count("merges, from") == 2
    one = _run("Hello world", "--merges= world")
    assert one.output.count("merges, from") == 1 and "'Ġ' + 'w' -> 'Ġw'" in one.output


def test_merges_errors_name_the_problem():
    missing = _run("Hello world", "--merges=xyz")
    assert missing.exit_code == 2 and "'Hello', 'Ġworld'" in missing.output
    result = CliRunner().invoke(
        main, ["explain", "-t", str(fixture_path("minilm")), "hi", "--merges"]
    )
    assert result.exit_code == 2 and "WordPiece" in result.output


def test_a_path_that_disagrees_with_encode_is_refused_loudly(monkeypatch):
    real = batchtok.Tokenizer.encode

    def wrong(self, *args, **kwargs):
        encoding = real(self, *args, **kwargs)
        encoding.ids = encoding.ids + [0]
        return encoding

    monkeypatch.setattr(batchtok.Tokenizer, "encode", wrong)
    result = _run("Hello")
    assert result.exit_code == 1
    assert "MISMATCH" in result.output and "disagrees with encode" in result.output
    assert "ids     " not in result.output
    with pytest.raises(ExplainMismatch):
        explain(batchtok.Tokenizer.from_file(GPT2), "Hello")
