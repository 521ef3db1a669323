"""Deterministic adversarial inputs for encode/decode tests.

``adversarial_cases()`` gives ``(label, text)`` pairs (the label names the
category, handy as a pytest id); ``adversarial_strings()`` gives the texts
alone.  Both return the same list, in the same order, on every call and every
machine: the few random pieces come from seeded ``random.Random`` instances.

Every string is valid Unicode that encodes to UTF-8 (no lone surrogates), so
the reference ``tokenizers`` library accepts all of them.  Most strings are
short; about a dozen are long (1,000 to 10,000 characters), and
``adversarial_strings(max_chars=...)`` leaves those out when a test is slow.
"""

from __future__ import annotations

import random
import unicodedata

SPECIAL_TOKENS = (
    "<|endoftext|>",
    "<|im_start|>",
    "<|im_end|>",
    "<|begin_of_text|>",
    "<|end_of_text|>",
    "<s>",
    "</s>",
    "<unk>",
    "<bos>",
    "<eos>",
    "<pad>",
)

#: Every character with the Unicode White_Space property.
WHITE_SPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680"
    "\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000"
)
#: Characters often mistaken for white space (they are not White_Space).
WHITE_SPACE_LOOKALIKES = "\u200b\ufeff\u180e"

ZWJ, ZWNJ, ZWSP, BOM, WJ, SHY = "\u200d", "\u200c", "\u200b", "\ufeff", "\u2060", "\xad"


def _zalgo(text: str, rng: random.Random, most: int) -> str:
    marks = [chr(c) for c in range(0x0300, 0x0370)]
    return "".join(ch + "".join(rng.choices(marks, k=rng.randint(1, most))) for ch in text)


def _combining() -> list[tuple[str, str]]:
    rng = random.Random(1001)
    marks = "".join(chr(0x0300 + i % 0x70) for i in range(50))
    out = [
        ("combining", "Z" + marks),
        ("combining", "Z" + "\u0301" * 50),
        ("combining", "a" + "\u0308" * 200),
        ("combining", "\u0301"),
        ("combining", "\u0301abc"),
        ("combining", " \u0301"),
        ("combining", "hello \u0301world"),
        ("combining", "1\u20e32\u20e3"),
        ("combining", "\u4e2d\u0301\u0302"),
        ("combining", "\U0001f600\u0301"),
        ("combining", "e\u0301 \xe9"),  # NFD and NFC e-acute
        ("combining", "A\u030a \xc5 \u212b"),  # A-ring three ways
        ("combining", "\u1100\u1161\u11a8 \uac01"),  # conjoining jamo vs syllable
        ("combining", "\u0915\u094d\u0937 \u0e01\u0e34\u0e4a"),  # Devanagari, Thai
        ("combining", "\u05e9\u05c1\u05b8\u05dc\u05d5\u05b9\u05dd"),  # pointed Hebrew
        ("combining", "\u0628\u0651\u064e"),  # Arabic shadda + fatha
    ]
    for phrase, most in (("zalgo", 8), ("Hello, World!", 15), ("He comes", 25)):
        out.append(("zalgo", _zalgo(phrase, rng, most)))
    return out


def _invisible() -> list[tuple[str, str]]:
    out = []
    for name, ch in (
        ("zwj", ZWJ),
        ("zwnj", ZWNJ),
        ("zwsp", ZWSP),
        ("bom", BOM),
        ("word-joiner", WJ),
        ("soft-hyphen", SHY),
    ):
        out += [
            (name, ch),
            (name, f"a{ch}b"),
            (name, f"hello{ch}world"),
            (name, f"{ch}hello"),
            (name, f"hello{ch}"),
            (name, ch * 5),
            (name, f"don{ch}'t"),
            (name, f"1{ch}2{ch}3"),
            (name, f"\u0645{ch}\u0631\u062d\u0628\u0627"),
        ]
    out += [
        ("invisible", "a\ufe0fb"),  # variation selector on a letter
        ("invisible", "\u1820\u180b\u1821"),  # Mongolian free variation selector
        ("invisible", "\u0627\u0644\u200c\u0639"),  # ZWNJ inside Persian
        ("invisible", "\u0915\u094d\u200d\u0937"),  # ZWJ inside a Devanagari conjunct
        ("invisible", BOM + BOM + "x"),
        ("invisible", "\u2062\u2063\u2064"),  # invisible times / separator / plus
        ("invisible", "\U000e0001\U000e0041\U000e007f"),  # tag characters
    ]
    return out


def _whitespace() -> list[tuple[str, str]]:
    out = []
    for ch in WHITE_SPACE + WHITE_SPACE_LOOKALIKES:
        label = f"ws-U+{ord(ch):04X}"
        out += [
            (label, ch),
            (label, ch * 3),
            (label, f"a{ch}b"),
            (label, f"{ch}word"),
            (label, f"word{ch} word"),
            (label, f" {ch}\n"),
        ]
    out.append(("ws-all", WHITE_SPACE))
    out.append(("ws-all", "x".join(WHITE_SPACE + WHITE_SPACE_LOOKALIKES)))
    return out


def _newlines() -> list[tuple[str, str]]:
    texts = [
        "\r\n\r\n",
        "\n\n\n",
        "\t\t x",
        "\r\r\n",
        "\n\r",
        "a\r\nb",
        "a\n\n\nb",
        " \n \n ",
        "\n \n",
        "x \n",
        "x\n ",
        "\t\n\t",
        "\n\t\tdef f():\n\t\t\treturn 1\n",
        "    indented\n        more\n",
        "line one\nline two\r\nline three\rline four",
        "end with spaces   ",
        "   start with spaces",
        "  two  spaces  between  ",
        "\n",
        "\n\n",
        " \t \t ",
        "a\x1cb\x1dc\x1ed",  # file / group / record separators
    ]
    return [("newlines", t) for t in texts]


def _long_whitespace() -> list[tuple[str, str]]:
    return [
        ("long-ws", " " * 1000 + "word"),
        ("long-ws", "word" + " " * 1000),
        ("long-ws", " " * 1001),
        ("long-ws", "\n" * 1000 + "word"),
        ("long-ws", "\t" * 500 + "x"),
        ("long-ws", " \n" * 300 + "end"),
        ("long-ws", "\u3000" * 500 + "\u8a9e"),
        ("long-ws", "a" + " " * 257 + "b" + "\n" * 257 + "c"),
    ]


def _long_words() -> list[tuple[str, str]]:
    rng = random.Random(1002)
    ascii_letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
    cjk = [chr(c) for c in range(0x4E00, 0x9FA6)]
    mixed = list(ascii_letters) + cjk[:500] + list("\xe9\xf1\xfc\xdf")
    mixed += [chr(c) for c in range(0x0430, 0x0450)]
    thai = [chr(c) for c in range(0x0E01, 0x0E2F)] + ["\u0e34", "\u0e35", "\u0e48", "\u0e49"]
    return [
        ("long-word", "a" * 10000),
        ("long-word", "".join(rng.choices(ascii_letters, k=10000))),
        ("long-word", "".join(rng.choices("abcdefghijklmnopqrstuvwxyz", k=10000))),
        ("long-word", "\u7684" * 10000),
        ("long-word", "".join(rng.choices(cjk, k=10000))),
        ("long-word", "".join(rng.choices(mixed, k=10000))),
        ("long-word", "".join(rng.choices(thai, k=10000))),
        ("long-word", "ab" * 5000),
        ("long-word", "1" * 10000),
        ("long-word", "\U0001f600" * 2500),
        ("long-word", "hello " + "x" * 10000 + " world"),
    ]


def _digits() -> list[tuple[str, str]]:
    out = []
    cycle = "1234567890" * 4
    for n in range(1, 41):
        out.append((f"digits-{n}", cycle[:n]))
    for n in (1, 2, 3, 4, 5, 7, 10, 16):
        out.append((f"digits-in-text-{n}", f"x{cycle[:n]}y {cycle[:n]} abc{cycle[:n]}"))
    out += [
        ("digit-sep", t)
        for t in (
            "1,000",
            "1,000,000",
            "3.14159",
            "1_000_000",
            "12:34:56",
            "2024-01-01",
            "1\xa0000\xa0000",
            "1\u202f000",
            "1e10",
            "-42",
            "+1",
            "0x1F",
            "1/2",
            "10%",
            "$1,234.56",
            "192.168.0.1",
            "v1.2.3-rc4",
            "1.2.3.4.5.6.7.8.9",
            "1,2,3,4,5,6,7,8,9,10",
            "007",
            "00000000000000000000",
        )
    ]
    scripts = {
        "fullwidth": 0xFF10,
        "arabic-indic": 0x0660,
        "extended-arabic-indic": 0x06F0,
        "devanagari": 0x0966,
        "thai": 0x0E50,
        "math-bold": 0x1D7CE,
        "garay-u16": 0x10D40,
        "sunuwar-u16": 0x11BF0,
        "kirat-rai-u16": 0x16D70,
        "ol-onal-u16": 0x1E5F1,
        "outlined-u16": 0x1CCF0,
        "tolong-siki-u17": 0x11DE0,
    }
    for name, zero in scripts.items():
        digits = "".join(chr(zero + i) for i in range(10))
        out += [
            (f"digits-{name}", digits),
            (f"digits-{name}", digits[1:4]),
            (f"digits-{name}", f"abc{digits[1:5]}def"),
        ]
    out += [
        ("digits-other", t)
        for t in (
            "x\xb2\xb3",
            "\xb9\xb2\xb3\u2074\u2075",
            "H\u2082O",
            "\xbd \u2153 \u215e",
            "\u216b \u2167",
            "\u2460\u2461\u2462",
            "\u2488\u2489",
            "\U0001f100\U0001f101",
            "\u3007\u4e00\u4e8c\u4e09",
            "100\uff05",
            "\u0661\u0662\u066b\u0665",  # Arabic-Indic with Arabic decimal separator
            "1\u0662 3\u06f4",  # mixed digit scripts
        )
    ]
    return out


def _contractions() -> list[tuple[str, str]]:
    texts = []
    for word in ("don't", "I'm", "you're", "we've", "he'll", "she'd", "it's"):
        for apostrophe in ("'", "\u2019"):
            w = word.replace("'", apostrophe)
            texts += [w, w.upper(), w.capitalize(), f"{w} {w.upper()}"]
    texts += [
        "'s",
        "'S",
        "'ll",
        "'LL",
        "'ve",
        "'VE",
        "'re",
        "'RE",
        "'m",
        "'M",
        "'d",
        "'D",
        "'t",
        "'T",
        "\u2019S \u2019LL",
        "JOHN'S CAR'LL",
        "rock 'n' roll",
        "'tis",
        "''",
        "'''",
        "' s",
        "'s's",
        "John's's",
        "O'Neil",
        "y'all'd've",
        "can't've",
        "ain't",
        "'hello'",
        "\u2018quoted\u2019",
        "it 's",
        "it' s",
        "'\u017f",
        "it'\u017f",
        "'\u017f\u017f",
        "'K",
        "'\u212a",
        "IT'\u212a",
        "'\u0130",
        "'\u0131",
        "'\ufb06",
        "'\uff33",
        "\u02bcs",  # modifier letter apostrophe
    ]
    return [("contraction", t) for t in texts]


def _special_tokens() -> list[tuple[str, str]]:
    out = []
    for tok in SPECIAL_TOKENS:
        label = f"special-{tok}"
        out += [
            (label, tok),
            (label, f"{tok}hello"),
            (label, f"hello{tok}world"),
            (label, f"hello {tok} world"),
            (label, f"hello {tok}"),
            (label, tok * 3),
            (label, f"{tok} {tok}"),
            (label, f"\n{tok}\n"),
            (label, f"{tok}\n\nText"),
            (label, f"  {tok}  "),
            (label, tok[:-1]),
            (label, tok[1:]),
            (label, f"<{tok}>"),
            (label, tok.upper()),
            (label, tok.replace("<", "< ", 1)),
        ]
    out += [
        ("special-partial", t)
        for t in (
            "<|endoftext",
            "<|endoftext|",
            "<<|endoftext|>>",
            "<|im_start|><|im_start|>",
            "<|<|endoftext|>|>",
            "<|begin_of_text|<|end_of_text|>>",
            "<|im_start|>user\nHello<|im_end|>\n<|im_start|>assistant\n",
            "<|begin_of_text|><|start_header_id|>system<|end_header_id|>\n\nHi<|eot_id|>",
            "<s>[INST] hello [/INST]</s>",
            "<bos><start_of_turn>user\nhi<end_of_turn>",
            "<|endoftext|><|endoftext|> <|endoftext|>\n<|endoftext|>",
            "<|",
            "|>",
            "<||>",
            "<|endoftext|>".replace("|", "\uff5c"),
            "<\u200b|endoftext|>",
            "<|endoftext|>\u0301",
            "</s></s></s>",
            "<s><s>",
            "<unk><pad><eos><bos>",
            "<<s>>",
            "<s",
            "s>",
            "</s",
        )
    ]
    return out


def _small() -> list[tuple[str, str]]:
    singles = " a\n\t\r'<|>0\xe9\u4e2d\U0001f600\u0301\x00\ufffdZ.,!?-_\\\"`~@#$%^&*()[]{}"
    out = [("empty", "")]
    out += [("single", ch) for ch in singles]
    return out


def _code_points() -> list[tuple[str, str]]:
    points = {
        "max": 0x10FFFF,
        "private-use": 0xE000,
        "private-use-end": 0xF8FF,
        "plane15-pua": 0xF0000,
        "plane16-pua": 0x100000,
        "nonchar-fffe": 0xFFFE,
        "nonchar-ffff": 0xFFFF,
        "nonchar-fdd0": 0xFDD0,
        "nonchar-1fffe": 0x1FFFE,
        "unassigned": 0x0378,
        "replacement": 0xFFFD,
        "object-replacement": 0xFFFC,
        "u15-kawi": 0x11F04,
        "u15-cjk-ext-h": 0x31350,
        "u15.1-cjk-ext-i": 0x2EBF0,
        "u16-todhri": 0x105C0,
        "u16-garay": 0x10D50,
        "u16-legacy-computing": 0x1CC00,
        "u17-tolong-siki": 0x11DE0,
        "u17-beria-erfe": 0x16EA0,
        "u17-tai-yo": 0x1E6C0,
    }
    out = []
    for name, cp in points.items():
        ch = chr(cp)
        out += [(f"cp-{name}", ch), (f"cp-{name}", f"a{ch}b"), (f"cp-{name}", f"{ch} {ch}{ch}")]
    out += [
        ("cp-replacement", "\ufffd" * 5),
        ("cp-replacement", "bad \ufffd\ufffd bytes"),
        ("cp-high", "".join(chr(c) for c in (0x10FFFF, 0xE000, 0xFFFE, 0x105C0, 0x16EA0))),
    ]
    return out


def _mixed_scripts() -> list[tuple[str, str]]:
    texts = [
        "hello\u043c\u0438\u0440",
        "P\u03b1ssword",
        "abc\u4e2d\u6587def",
        "\u30c6\u30b9\u30c8test",
        "\u6771\u4eacTokyo2024",
        "na\xefve caf\xe9",
        "\u0395\u03bb\u03bb\u03b7\u03bd\u03b9\u03ba\u03acabc",
        "\u05e9\u05dc\u05d5\u05ddworld",
        "\u0645\u0631\u062d\u0628\u0627hello",
        "\u0440\u0430\u0443\u0440\u0430l",  # Cyrillic look-alikes of "paypal"
        "\ud55c\uad6d\uc5b4English\u65e5\u672c\u8a9e",
        "\u0e20\u0e32\u0e29\u0e32\u0e44\u0e17\u0e22Thai",
        "\u0939\u093f\u0928\u094d\u0926\u0940Hindi",
        "stra\xdfe STRASSE \u1e9e",
        "\u0130stanbul \u0131s\u0131k",
        "\ufb01le \ufb03x \u2126 \u212b \u01c5",
        "\uff21\uff22\uff23\uff41\uff42\uff43",
        "\u2122 \u2026 \u2014 \u2013",
        "\u0120hello \u010a \u0109",  # byte-level alphabet characters
        "\u2581",
        "\u2581\u2581hello",
        "hello\u2581world",
        "<0x41><0x0A>",
        "##ing",
    ]
    return [("mixed-script", t) for t in texts]


def _bidi() -> list[tuple[str, str]]:
    texts = [
        "\u200f",
        "\u200e",
        "abc\u200fdef",
        "\u202eevil\u202c",
        "\u2066isolate\u2069",
        "\u2067\u05e9\u05dc\u05d5\u05dd\u2069 world",
        "\u05e9\u05dc\u05d5\u05dd\u200e!",
        "\u202a\u202b\u202c\u202d\u202e",
        "\u061c\u0627\u0644\u0639\u0631\u0628\u064a\u0629",
        "price: \u200f100\u200f $",
    ]
    return [("bidi", t) for t in texts]


def _emoji() -> list[tuple[str, str]]:
    from tests.support.corpora import EMOJI_SEQUENCES

    out = [("emoji", seq) for seq in EMOJI_SEQUENCES]
    out += [
        ("emoji", "".join(EMOJI_SEQUENCES)),
        ("emoji", "hello" + EMOJI_SEQUENCES[0] + "world"),
        ("emoji-broken", "\U0001f468\u200d"),
        ("emoji-broken", "\u200d\U0001f469"),
        ("emoji-broken", "\U0001f1ef"),  # lone regional indicator
        ("emoji-broken", "\U0001f1ef\U0001f1f5\U0001f1fa"),  # odd indicator count
        ("emoji-broken", "\U0001f3fd"),  # lone skin-tone modifier
        ("emoji-broken", "\ufe0f"),
        ("emoji-broken", "\u20e3"),
        ("emoji-broken", "\U0001f3f4\U000e0067\U000e0062"),  # unterminated tag flag
        ("emoji-broken", "a\U0001f3fb"),
        ("emoji-text", "I \u2764\ufe0f NY \U0001f5fd!!!"),
        ("emoji-text", "\U0001f600\U0001f600 \U0001f600\n\U0001f600"),
    ]
    return out


def _controls() -> list[tuple[str, str]]:
    controls = [chr(c) for c in (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))]
    out = [("control", f"a{c}b") for c in controls]
    out += [
        ("control", "\x00"),
        ("control", "\x00" * 10),
        ("control", "".join(controls)),
        ("control", "hello\x00world\x00"),
        ("control", "\x1b[31mred\x1b[0m"),
        ("control", "\x08\x08\x07"),
    ]
    return out


def adversarial_cases() -> list[tuple[str, str]]:
    """Every adversarial input as ``(category label, text)``, without duplicates."""
    groups = (
        _small,
        _combining,
        _invisible,
        _whitespace,
        _newlines,
        _long_whitespace,
        _long_words,
        _digits,
        _contractions,
        _special_tokens,
        _code_points,
        _mixed_scripts,
        _bidi,
        _emoji,
        _controls,
    )
    seen: set[str] = set()
    cases = []
    for group in groups:
        for label, text in group():
            if text not in seen:
                seen.add(text)
                cases.append((label, text))
    return cases


def adversarial_strings(max_chars: int | None = None) -> list[str]:
    """The adversarial texts, optionally only those of at most ``max_chars``."""
    return [t for _, t in adversarial_cases() if max_chars is None or len(t) <= max_chars]


def describe(text: str, limit: int = 60) -> str:
    """A readable one-line description of ``text`` for assertion messages."""
    names = []
    for ch in text[:limit]:
        if ch.isprintable() and not ch.isspace() and unicodedata.category(ch)[0] != "M":
            names.append(ch)
        else:
            names.append(f"<U+{ord(ch):04X}>")
    more = f"...(+{len(text) - limit} chars)" if len(text) > limit else ""
    return "".join(names) + more


# Characters and strings the engine's components care about, for hypothesis to mix into
# arbitrary text: white space and its look-alikes, case pairs that change length, combining
# marks, digits and numerics, contractions, the affixes and specials of each model and decoder
# (``##``, ``</w>``, ``▁``, ``<pad>``, byte tokens), scripts and rare planes. One list for every
# component's properties; a module needing more adds to it (``INTERESTING + [...]``).
INTERESTING = [
    " ",
    "\n",
    "a",
    "ab",
    "abc",
    "b",
    "c",
    "hello",
    "the",
    "ing",
    "##",
    "</w>",
    "[UNK]",
    "é",
    "∑",
    "☃",
    "🦀",
    "\x00",
    "日本",
    "12",
    "'s",
    "ka",
    "shi",
    "tion",
    "Ω",
    "\U000e0041",
    "\t",
    "'",
    "7",
    "\u0301",
    "e\u0301",
    "Σ",
    "İ",
    "\xa0",
    "\u3000",
    "\u200b",
    "  ",
    "\r\n",
    "\x85",
    "\u2028",
    "\xad",
    "ΣΣ",
    "σ",
    "ς",
    "ΟΔΟΣ",
    "I\u0307",
    "ı",
    "ß",
    "ẞ",
    "ǅ",
    "ﬁ",
    "①",
    "²",
    "㍿",
    "한",
    "한",
    "ᄀ",
    "ᆨ",
    "\u0323",
    "\u0302",
    "\u0308",
    "aa",
    ".",
    "x",
    "X",
    "HELLO",
    "Hello",
    "he",
    "1",
    "42",
    "٣",
    "ＡＢＣ",
    "K",
    "Ω",
    "<raw>",
    "ΣΟΦΙΑ",
    "▁",
    "camelCase",
    "-",
    "--",
    "aaa",
    "'LL",
    "’",
    "123",
    "4567",
    "😀",
    "É",
    "ss",
    "ﬀ",
    "K",
    "world",
    "_",
    "a.*b",
    "{2}",
    "]",
    "<|sep|>",
    " word",
    "deadBEEF",
    "\u1680",
    "«",
    "€",
    "©",
    "＋",
    "$",
    "~",
    "e",
    "½",
    "Ⅻ",
    "ー",
    "\U000e0001",
    "\ufff0",
    "\U00010fff",
    "🯰",
    "𝟎",
    "𐄇",
    "𑣠",
    "▁▁",
    "...",
    "カタ",
    "ひら",
    "한국",
    "Ελ",
    "Пр",
    "مر",
    "\u2003",
    "<",
    ">",
    "[",
    "<TOK>",
    "[x]",
    "sp",
    " SP",
    "🙂",
    "\u200d",
    "\ufeff",
    "'S",
    "'ll",
    "’s",
    "<|endoftext|>",
    "<|im_start|>",
    "<|begin_of_text|>",
    "<|end",
    "|>",
    "ʕ",
    "\U000105c0",
    "ſ",
    "한국어",
    "👩\u200d👩\u200d👧",
    " world",
    "�",
    "<s>",
    "</s>",
    "<unk>",
    "<bos>",
    "<start_of_turn>",
    "🧬",
    "ก",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "<extra_id_0>",
    "<mask>",
    "<pad>",
    "2024",
    "don't",
    "中文",
    "",
    "##a",
    "####",
    "##x#",
    "a</w>",
    "</w></w>",
    "w>",
    "▁a",
    "a▁",
    "_a",
    "<pad><pad>",
    "a<pad>b",
    "<pa",
    "d>",
    "|",
    "||",
    "a|b",
    " .",
    ",",
    " ,",
    "?",
    " ?",
    "!",
    " !",
    " ' ",
    " 'm",
    "n't",
    " n't",
    " 's",
    "'ve",
    " 've",
    "'re",
    " 're",
    "'m",
    "do",
    "not",
    " do not",
    "do not",
    "<0x41>",
    "<0xE2>",
    "<0x82>",
    "<0xAC>",
    "<0xC3>",
    "Ġ",
    "Ġhello",
    "Ċ",
    "\u200b\u200b",
    "\x7f",
    "\u0345",
    "\u1dc0",
]


# Special-token strings of every family, whole, partial and nested; leading spaces; text outside
# every vocab (byte fallback).
SPECIAL_TEXT = [
    "<|endoftext|>",
    "a<|endoftext|>b",
    "<|im_start|>user\nhi<|im_end|>",
    "<|begin_of_text|>Hello<|end_of_text|>",
    "<|endoftext|><|endoftext|> <|endoftext|>\n",
    "<|endoftext",
    "<|<|endoftext|>|>",
    "<<|im_start|>>",
    "Hello</s>world",
    "</s>Hello",
    "<s>Hello</s>",
    "<s> Hello",
    " <s>  </s> ",
    "a<unk>b",
    "<s><s></s>",
    "<start_of_turn>user\nhi<end_of_turn>",
    "<bos><eos><pad>",
    " Hello world",
    "  Hello",
    "\u2003\u3000 lead",
    "\U000105c0\U00011de0\U0001f9ec \u0e01\u0e32\u0e23 \ua9c0",
    "\x00\x01\x7f tab\tnew\nline\r\n",
    "\u2581 \u2581\u2581x \u2581",
]
