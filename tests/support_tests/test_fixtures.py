"""The wheel and built fixture files: fetched or built once, cached by key, loadable by the
oracle, and between them carrying every component, flag and setting."""

from __future__ import annotations

import json
import pathlib

import pytest
import tokenizers

from tests.support import fixtures, trained

NAMES = fixtures.wheel_and_built_names()


def _walk_types(node: object, found: set[str]) -> None:
    """Collect every component ``type`` (with its behaviour/scheme when it has one)."""
    if isinstance(node, dict):
        kind = node.get("type")
        if isinstance(kind, str):
            found.add(kind)
            if kind == "Punctuation":
                found.add(f"Punctuation:{node['behavior']}")
            if kind == "Digits":
                found.add(f"Digits:{node['individual_digits']}")
            if kind == "Metaspace":
                found.add(f"Metaspace:{node['prepend_scheme']}:{node['split']}")
            if kind == "BertNormalizer":
                found.add(f"BertNormalizer:{node['strip_accents']}:{node['lowercase']}")
        for value in node.values():
            _walk_types(value, found)
    elif isinstance(node, list):
        for value in node:
            _walk_types(value, found)


def _load(name: str) -> dict:
    return json.loads(fixtures.fixture_path(name).read_text(encoding="utf-8"))


@pytest.mark.parametrize("name", NAMES)
def test_fixture_is_cached_outside_the_repo_and_loads_in_the_oracle(name: str) -> None:
    path = fixtures.fixture_path(name)
    assert path.is_file()
    assert fixtures.cache_root() in path.parents
    assert fixtures.REPO_ROOT not in path.parents
    if name in trained.RECIPES:
        assert path.name == f"{name}.{trained.cache_key(name)}.json"
    oracle = tokenizers.Tokenizer.from_file(str(path))
    enc = oracle.encode("Hello, world: the quick brown fox jumps over 13 lazy dogs.")
    assert len(enc.ids) > 0
    assert fixtures.fixture_path(name) == path  # second call: the cached file


def test_minilm_is_the_pinned_bert_wordpiece_file() -> None:
    path = fixtures.fixture_path("minilm")
    assert fixtures.sha256_file(path) == fixtures.WHEELS["minilm"][3]
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["model"]["type"] == "WordPiece"
    assert data["normalizer"]["type"] == "BertNormalizer"
    assert data["pre_tokenizer"]["type"] == "BertPreTokenizer"


def test_fixtures_cover_every_component_flag_and_setting() -> None:
    found: set[str] = set()
    flags: set[tuple[bool, ...]] = set()
    truncations, paddings = set(), set()
    for name in NAMES:
        data = _load(name)
        for part in ("normalizer", "pre_tokenizer", "post_processor", "decoder", "model"):
            _walk_types(data[part], found)
        for tok in data["added_tokens"]:
            keys = ("special", "single_word", "lstrip", "rstrip", "normalized")
            flags.add(tuple(tok[k] for k in keys))
        if data["truncation"]:
            t = data["truncation"]
            truncations |= {t["strategy"], t.get("direction"), f"stride={t['stride'] > 0}"}
        if data["padding"]:
            p = data["padding"]
            paddings |= {
                str(p["strategy"])[:6],
                p.get("direction"),
                str(p.get("pad_to_multiple_of")),
            }
    wanted = {
        *("BertPreTokenizer", "Whitespace", "WhitespaceSplit", "UnicodeScripts"),
        *("CharDelimiterSplit", "FixedLength", "Digits:True", "Digits:False", "Split"),
        *(f"Punctuation:{b}" for b in ("Removed", "Isolated", "Contiguous")),
        *("Punctuation:MergedWithPrevious", "Punctuation:MergedWithNext"),
        *(f"Metaspace:{s}:{x}" for s in ("always", "first", "never") for x in (True, False)),
        *("BertNormalizer:None:True", "BertNormalizer:True:False", "BertNormalizer:False:False"),
        *("StripAccents", "Nmt", "ByteLevel", "NFC", "NFD", "NFKC", "NFKD", "Lowercase"),
        *("Strip", "Replace", "Prepend", "Precompiled"),
        *("WordPiece", "WordLevel", "Unigram", "BPE", "BPEDecoder", "ByteFallback"),
        *("BertProcessing", "TemplateProcessing", "RobertaProcessing"),
    }
    assert wanted <= found, sorted(wanted - found)
    assert flags >= set(trained.ADDED_FLAGS)
    assert {"LongestFirst", "OnlyFirst", "OnlySecond", "Left", "Right"} <= truncations
    assert {"stride=True", "stride=False"} <= truncations
    assert {"BatchL", "{'Fixe", "Left", "Right", "None", "8", "16"} <= paddings


def test_converted_sentencepiece_layouts() -> None:
    t5 = _load("t5-unigram")
    extra = [t for t in t5["added_tokens"] if t["content"].startswith("<extra_id_")]
    assert len(extra) == 100 and all(t["special"] for t in extra)
    assert _load("t5-unigram-bytefallback")["model"]["byte_fallback"] is True
    assert _load("spm-unigram-bytefallback")["model"]["byte_fallback"] is True
    albert = tokenizers.Tokenizer.from_file(str(fixtures.fixture_path("albert-unigram")))
    assert albert.encode("CAFÉ Straße").ids == albert.encode("cafe straße").ids
    xlmr = _load("xlmr-unigram")
    assert [t[0] for t in xlmr["model"]["vocab"][:4]] == ["<s>", "<pad>", "</s>", "<unk>"]
    clip = _load("clip-bpe")
    assert clip["model"]["end_of_word_suffix"] == "</w>"
    assert _load("bpe-prefix")["model"]["continuing_subword_prefix"] == "##"


def test_cache_key_changes_with_every_input() -> None:
    base = {
        "versions": {"tokenizers": "0.23.3"},
        "corpus": "c" * 64,
        "source": "s" * 64,
    }
    key = trained.cache_key("t5-unigram", **base)
    assert key == trained.cache_key("t5-unigram", **base)
    assert key != trained.cache_key("albert-unigram", **base)
    for field, other in (
        ("versions", {"tokenizers": "0.23.4"}),
        ("corpus", "d" * 64),
        ("source", "t" * 64),
    ):
        assert key != trained.cache_key("t5-unigram", **{**base, field: other}), field
    assert set(trained.package_versions()) == set(trained.BUILD_PACKAGES)
    assert trained.package_versions()["tokenizers"] == "0.23.3"  # the oracle pin survived


def _tiny_file(unk: str = "[UNK]") -> str:
    model = tokenizers.models.WordLevel({"[UNK]": 0, "a": 1}, unk_token=unk)
    return tokenizers.Tokenizer(model).to_str()


def test_build_cached_builds_once_and_drops_stale_keys(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BATCHTOK_CACHE", str(tmp_path))
    calls = []

    def build() -> str:
        calls.append(1)
        return _tiny_file()

    first = trained.build_cached("tiny", "key1", build)
    assert first == tmp_path / "fixtures" / "tiny.key1.json"
    assert trained.build_cached("tiny", "key1", build) == first
    assert len(calls) == 1
    second = trained.build_cached("tiny", "key2", build)
    assert len(calls) == 2
    assert second.is_file() and not first.exists()
    assert sorted(p.name for p in (tmp_path / "fixtures").glob("*.json")) == ["tiny.key2.json"]


def test_build_cached_refuses_a_file_the_oracle_cannot_load(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("BATCHTOK_CACHE", str(tmp_path))
    broken = json.loads(_tiny_file())
    broken["model"]["type"] = "NoSuchModel"
    with pytest.raises(trained.FixtureBuildError, match="tiny"):
        trained.build_cached("tiny", "k", lambda: json.dumps(broken))
    assert list(pathlib.Path(tmp_path).rglob("*.json")) == []


def test_unknown_fixture_name_is_refused() -> None:
    with pytest.raises(KeyError, match="no-such"):
        fixtures.fixture_path("no-such")
