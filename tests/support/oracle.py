"""Shared scaffolding of the component oracle tests (test_added_tokens.py, test_models.py,
test_normalizers.py, test_pre_tokenizers.py, test_processors_decoders.py).

A byte-level BPE trained at test time by the oracle's own trainer on a small varied corpus,
helpers that edit its tokenizer.json, and the comparison of batchtok with ``tokenizers``
(0.23.3) on one text: encode (ids, tokens, type ids, special masks, with and without special
tokens), the ids fast paths, and decode of the oracle's ids (skipping special tokens or not).
Errors must match errors.
"""

from __future__ import annotations

import functools
import json
import random

import tokenizers
from hypothesis import strategies as st

from batchtok import Tokenizer

__all__ = [
    "CORPUS",
    "SYLLABLES",
    "added_token",
    "assert_agree",
    "byte_level_base",
    "compare_decode",
    "compare_text",
    "corpus_lines",
    "load_pair",
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


def _outcome(fn):
    """("ok", result) or ("error", description). The oracle's Rust panics surface as
    pyo3_runtime.PanicException, which derives from BaseException, not Exception."""
    try:
        return "ok", fn()
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as exc:  # noqa: BLE001
        return "error", f"{type(exc).__name__}: {str(exc)[:200]}"


@functools.cache
def load_pair(tokenizer_json: str) -> tuple[Tokenizer, tokenizers.Tokenizer]:
    return Tokenizer.from_str(tokenizer_json), tokenizers.Tokenizer.from_str(tokenizer_json)


def _short(value, limit: int = 300) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def compare_decode(pair, ids) -> list[str]:
    """Differences in decode(ids, skip_special_tokens) for both values of the flag."""
    ours, ref = pair
    problems = []
    for skip in (False, True):
        want = _outcome(lambda skip=skip: ref.decode(list(ids), skip_special_tokens=skip))
        got = _outcome(lambda skip=skip: ours.decode(list(ids), skip))
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
    ids, special mask) with and without special tokens, the ids fast paths, and decode of the
    oracle's ids with and without skipping special tokens. Errors must match errors."""
    ours, ref = pair
    problems = []
    decode_ids = None
    for add in (True, False):
        want = _outcome(lambda add=add: ref.encode(text, add_special_tokens=add))
        got = _outcome(lambda add=add: ours.encode(text, add))
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
            for field in ("type_ids", "special_tokens_mask"):
                if list(getattr(g, field)) != list(getattr(w, field)):
                    problems.append(
                        f"{where}: {field} batchtok {_short(getattr(g, field))} "
                        f"oracle {_short(getattr(w, field))}"
                    )
        fast = _outcome(lambda add=add: ours.encode_ids(text, add))
        batch = _outcome(lambda add=add: ours.encode_batch_ids([text, "", text], add))
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
