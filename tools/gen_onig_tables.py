"""Regenerate ``batchtok/_tables/onig.py``: ask the oracle which code points each class matches.

`tokenizers` compiles every user pattern with Oniguruma, whose Unicode tables are not the ones
the `regex` module or Python's `unicodedata` carry. batchtok therefore ships the exact membership
of every class it can translate, read off the oracle itself:

    python -m tools.gen_onig_tables   # needs tokenizers==0.23.3

``tests/test_tables.py`` checks the committed tables against the installed oracle.
"""

from __future__ import annotations

import pathlib
import sys

from tokenizers import Regex
from tokenizers.pre_tokenizers import Split

# Every general category, the major classes, and the escapes \w \d \s \h.
CATEGORIES = (
    "Lu Ll Lt Lm Lo Mn Mc Me Nd Nl No Pc Pd Ps Pe Pi Pf Po "
    "Sm Sc Sk So Zs Zl Zp Cc Cf Cs Co Cn L M N P S Z C"
).split()
ESCAPES = {"w": r"\w", "d": r"\d", "s": r"\s", "h": r"\h"}

OUT = pathlib.Path(__file__).resolve().parents[1] / "batchtok" / "_tables" / "onig.py"


def _all_chars() -> str:
    """Every code point but the surrogates, in order."""
    return "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)


def members(pattern: str, text: str) -> set[int]:
    """Code points the oracle's Oniguruma matches with ``pattern`` (one char per match)."""
    found: set[int] = set()
    for piece, _ in Split(Regex(pattern), "removed", invert=True).pre_tokenize_str(text):
        found.update(map(ord, piece))
    return found


def to_ranges(points: set[int]) -> list[tuple[int, int]]:
    ranges: list[tuple[int, int]] = []
    for cp in sorted(points):
        if ranges and ranges[-1][1] == cp - 1:
            ranges[-1] = (ranges[-1][0], cp)
        else:
            ranges.append((cp, cp))
    return ranges


def encode_ranges(ranges: list[tuple[int, int]]) -> str:
    return " ".join(f"{a:x}" if a == b else f"{a:x}-{b:x}" for a, b in ranges)


def rust_word_chars(text: str) -> set[int]:
    """Rust regex's ``\\w``, as seen through an added token with ``single_word``.

    A single_word token right after a word character is not matched, so the characters for
    which it stops matching are exactly the word characters.
    """
    from tokenizers import AddedToken, Tokenizer
    from tokenizers.models import WordLevel

    tok = Tokenizer(WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    tok.add_tokens([AddedToken("\x00", single_word=True, normalized=False)])
    marker = tok.token_to_id("\x00")
    texts = [c + "\x00" for c in text]
    return {
        ord(c)
        for c, enc in zip(text, tok.encode_batch(texts, add_special_tokens=False))
        if marker not in enc.ids
    }


def table(text: str | None = None) -> dict[str, str]:
    """Each class's code point ranges, over ``text`` (default: every code point; a test may
    probe a sample)."""
    text = _all_chars() if text is None else text
    out = {}
    out["rust_w"] = encode_ranges(to_ranges(rust_word_chars(text)))
    for name in CATEGORIES:
        out[name] = encode_ranges(to_ranges(members(rf"\p{{{name}}}", text)))
    for name, pattern in ESCAPES.items():
        out["\\" + name] = encode_ranges(to_ranges(members(pattern, text)))
    # Oniguruma computes \w inside a bracket class from other tables than a bare \w.
    out["\\w[]"] = encode_ranges(to_ranges(members(r"[\w]", text)))
    return out


NORMALIZERS_OUT = OUT.with_name("unicode.py")


def normalizer_differences(chars: str | None = None) -> dict[str, dict[int, str]]:
    """The oracle's Lowercase of every char it changes, and the single chars on which its
    NFC / NFD / NFKC / NFKD differ from this Python's ``unicodedata``.

    `tokenizers` lowercases with Rust's tables (whole table kept: no dependence on Python's
    Unicode version) and normalizes with an older crate than ``unicodedata`` (a few dozen
    differences, valid for this Python's Unicode version only). Over ``chars`` (default: every
    code point; a test may probe a sample).
    """
    import unicodedata

    from tokenizers import normalizers

    chars = _all_chars() if chars is None else chars
    out: dict[str, dict[int, str]] = {}
    checks = {
        "Lowercase": (normalizers.Lowercase(), lambda c: c),
        **{
            form: (getattr(normalizers, form)(), lambda c, f=form: unicodedata.normalize(f, c))
            for form in ("NFC", "NFD", "NFKC", "NFKD")
        },
    }
    for name, (oracle, ours) in checks.items():
        out[name] = {
            ord(c): oracle.normalize_str(c) for c in chars if oracle.normalize_str(c) != ours(c)
        }
    # Marks whose combining class the oracle's crate does not know (it treats them as
    # starters, so it never reorders them): seen after "x" + U+0301.
    for name, (oracle, ours) in checks.items():
        if name == "Lowercase":
            continue
        for c in chars:
            if unicodedata.combining(c) and ord(c) not in out[name]:
                text = "x\u0301" + c
                if oracle.normalize_str(text) != ours(text):
                    out[name][ord(c)] = c
    return out


def write_normalizer_tables() -> None:
    import unicodedata

    import tokenizers

    lines = [
        '"""Where `tokenizers` normalizes a single char differently from Python. Generated.',
        "",
        f"Produced by tools/gen_onig_tables.py from tokenizers {tokenizers.__version__}",
        f"against Python's unicodedata {unicodedata.unidata_version}: code point -> the",
        "oracle's output for that char alone. Lowercase lists every char the oracle changes;",
        "the NF* forms list only where the oracle differs from unicodedata of that version.",
        '"""',
        "",
        f"UNIDATA_VERSION = {unicodedata.unidata_version!r}",
        "",
        "DIFFERENCES = {",
    ]
    for name, table in normalizer_differences().items():
        lines.append(f"    {name!r}: {{")
        for cp, text in sorted(table.items()):
            lines.append(f"        0x{cp:x}: {text!r},")
        lines.append("    },")
    lines.append("}")
    NORMALIZERS_OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")


def main() -> None:
    import tokenizers

    if "--normalizers-only" not in sys.argv:
        write_onig_tables(tokenizers.__version__)
    write_normalizer_tables()
    print(f"wrote {NORMALIZERS_OUT}", file=sys.stderr)


def write_onig_tables(version: str) -> None:

    lines = [
        '"""Oniguruma class membership as `tokenizers` sees it. Generated: do not edit.',
        "",
        f"Produced by tools/gen_onig_tables.py from tokenizers {version}.",
        'Each value lists code point ranges in hex ("a-b" or "a"), space separated.',
        '"""',
        "",
        "RANGES = {",
    ]
    for name, ranges in table().items():
        lines.append(f"    {name!r}: {ranges!r},")
    lines.append("}")
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)", file=sys.stderr)


if __name__ == "__main__":
    main()
