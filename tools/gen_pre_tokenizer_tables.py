"""Regenerate ``batchtok/_tables/pre_tokenizer.py``: the char classes of the built-in
pre-tokenizers, read off the oracle one code point at a time.

`tokenizers` decides these classes with Rust's std tables (``char::is_whitespace``,
``char::is_numeric``), the ``unicode_categories`` crate (punctuation), the ``regex`` crate
(``\\w``, ``\\s``) and its own script table (UnicodeScripts); none of them is Python's
``unicodedata``. batchtok therefore ships what the oracle itself does with every code point:

    python -m tools.gen_pre_tokenizer_tables   # needs tokenizers==0.23.3

``tests/test_tables.py`` regenerates the tables and compares them with the module.
"""

from __future__ import annotations

import pathlib
import shutil
import subprocess
import sys

from tokenizers import pre_tokenizers as pt

from tools.gen_onig_tables import _all_chars, encode_ranges, to_ranges

OUT = pathlib.Path(__file__).resolve().parents[1] / "batchtok" / "_tables" / "pre_tokenizer.py"


def _pieces(pre, text: str) -> list[str]:
    return [piece for piece, _ in pre.pre_tokenize_str(text)]


def _spans(pre, text: str, block: int = 4096) -> dict[int, int]:
    """start -> end (char offsets) of each piece the oracle makes of ``text``, cut into blocks
    at char boundaries (char offsets of one long text cost the oracle quadratic time). Callers
    only look at pieces that a block boundary cannot change."""
    out = {}
    for at in range(0, len(text), block):
        out.update({at + s: at + e for _, (s, e) in pre.pre_tokenize_str(text[at : at + block])})
    return out


def _uncovered(pre, chars: str) -> set[int]:
    """The chars of ``chars`` that fall in no piece (removed by the pre-tokenizer)."""
    covered = bytearray(len(chars))
    for s, e in _spans(pre, chars).items():
        covered[s:e] = b"\x01" * (e - s)
    return {ord(c) for c, kept in zip(chars, covered) if not kept}


def _alone_after_a(pre, chars: str) -> tuple[set[int], set[int]]:
    """(chars that are a piece of their own, chars in no piece) in ``"a" + c`` for every c.

    In ``"a"+c1+"a"+c2...`` a char that is not cut from the "a"s around it shares a longer
    piece with them.
    """
    spans = _spans(pre, "".join("a" + c for c in chars))
    alone, covered = set(), bytearray(2 * len(chars))
    for s, e in spans.items():
        covered[s:e] = b"\x01" * (e - s)
    for i, c in enumerate(chars):
        at = 2 * i + 1
        if spans.get(at) == at + 1:
            alone.add(ord(c))
    return alone, {ord(c) for i, c in enumerate(chars) if not covered[2 * i + 1]}


def char_classes(chars: str | None = None) -> dict[str, str]:
    """Code point ranges (hex, as in ``_tables/onig.py``) of each class the pre-tokenizers use.

    WhitespaceSplit removes exactly the whitespace, Punctuation(Removed) exactly the
    punctuation, Whitespace exactly its regex spaces; Whitespace cuts a non-word char from the
    word char "a" around it, and Digits(individual) a numeric one. Over ``chars`` (default:
    every code point; a test may probe a sample).
    """
    chars = _all_chars() if chars is None else chars
    sets = {
        "whitespace": _uncovered(pt.WhitespaceSplit(), chars),
        "punctuation": _uncovered(pt.Punctuation("removed"), chars),
    }
    other, sets["space"] = _alone_after_a(pt.Whitespace(), chars)
    sets["word"] = {ord(c) for c in chars} - other - sets["space"]
    sets["numeric"] = _alone_after_a(pt.Digits(individual_digits=True), chars)[0]
    # BertPreTokenizer must use the WhitespaceSplit and Punctuation classes (the source says
    # so; the module relies on it).
    if _alone_after_a(pt.BertPreTokenizer(), chars) != (sets["punctuation"], sets["whitespace"]):
        raise AssertionError("BertPreTokenizer classes differ from WhitespaceSplit/Punctuation")
    return {name: encode_ranges(to_ranges(points)) for name, points in sets.items()}


def script_classes() -> list[tuple[int, int]]:
    """(first code point, script class) at every change of class over all code points.

    Class 0 is Any (a char that never starts a piece: alone it yields no piece at all). Other
    classes are numbered in order of first appearance; two chars share a class iff the oracle
    keeps them in one piece. Their script names are not observable and not needed.
    """
    scripts = pt.UnicodeScripts()
    chars = _all_chars()
    cls = {ord(c): 0 for c in chars if not scripts.pre_tokenize_str(c)}
    rest = "".join(c for c in chars if ord(c) not in cls)
    # Without Any chars in the text, every piece is a maximal run of one script.
    representatives: list[str] = []
    for run in _pieces(scripts, rest):
        head = run[0]
        k = next(
            (i for i, rep in enumerate(representatives) if len(_pieces(scripts, rep + head)) == 1),
            None,
        )
        if k is None:
            representatives.append(head)
            k = len(representatives) - 1
        for c in run:
            cls[ord(c)] = k + 1
    out: list[tuple[int, int]] = []
    for cp in range(0x110000):
        k = cls.get(cp, 0)  # surrogates: never in a str batchtok encodes
        if not out or out[-1][1] != k:
            out.append((cp, k))
    return out


def main() -> None:
    import tokenizers

    lines = [
        '"""Char classes of the built-in pre-tokenizers as `tokenizers` sees them. Generated.',
        "",
        f"Produced by tools/gen_pre_tokenizer_tables.py from tokenizers {tokenizers.__version__}.",
        'RANGES values list code point ranges in hex ("a-b" or "a"), space separated.',
        'SCRIPTS lists "start:class" (hex) at every change of UnicodeScripts class; class 0 is',
        "Any, the others are anonymous script classes numbered in order of first appearance.",
        '"""',
        "",
        "RANGES = {",
    ]
    for name, ranges in char_classes().items():
        lines.append(f"    {name!r}: (")
        lines += [f"        {chunk!r}" for chunk in _chunks(ranges.split())]
        lines.append("    ),")
    lines += ["}", "", "SCRIPTS = ("]
    items = [f"{cp:x}:{k:x}" for cp, k in script_classes()]
    lines += [f"    {chunk!r}" for chunk in _chunks(items)]
    lines.append(")")
    OUT.write_text("\n".join(lines) + "\n", encoding="utf-8")
    ruff = shutil.which("ruff")
    if ruff:  # only the quotes change; the data is what the test compares
        subprocess.run([ruff, "format", "-q", str(OUT)], check=False)
    print(f"wrote {OUT} ({OUT.stat().st_size} bytes)", file=sys.stderr)


def _chunks(items: list[str], width: int = 84) -> list[str]:
    """Space-joined items in strings short enough for the line length (each ends in a space
    but the last, so the implicit concatenation keeps the separators)."""
    out, line = [], ""
    for item in items:
        if line and len(line) + len(item) + 1 > width:
            out.append(line + " ")
            line = ""
        line = f"{line} {item}" if line else item
    out.append(line)
    return out


if __name__ == "__main__":
    main()
