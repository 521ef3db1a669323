"""Regenerate ``batchtok/_tables/bert.py``: the char classes of BertNormalizer and StripAccents,
read off the oracle one code point at a time.

`tokenizers` takes these classes from old Rust Unicode tables (unicode_categories 0.1 for
BertNormalizer, unicode-normalization-alignments for StripAccents), not from this Python's
``unicodedata``:

    python -m tools.gen_bert_tables   # needs tokenizers==0.23.3

``tests/test_tables.py`` checks the committed tables against the installed oracle.
"""

from __future__ import annotations

import pathlib
import textwrap

from tools.gen_onig_tables import _all_chars, encode_ranges, to_ranges

OUT = pathlib.Path(__file__).resolve().parents[1] / "batchtok" / "_tables" / "bert.py"


def classes(chars: str | None = None) -> dict[str, str]:
    """Ranges (hex, space separated) of: chars clean_text deletes, chars it turns into a space,
    non-spacing marks strip_accents deletes (on chars NFD keeps), and StripAccents' marks. Over
    ``chars`` (default: every code point; a test may probe a sample)."""
    from tokenizers.normalizers import NFD, BertNormalizer, StripAccents

    clean = BertNormalizer(True, False, False, False).normalize_str
    strip = BertNormalizer(False, False, True, False).normalize_str
    nfd = NFD().normalize_str
    marks = StripAccents().normalize_str
    deleted, spaces, nonspacing, combining = set(), set(), set(), set()
    for c in _all_chars() if chars is None else chars:
        cleaned = clean(c)
        if cleaned == "":
            deleted.add(ord(c))
        elif cleaned == " " and c != " ":
            spaces.add(ord(c))
        if nfd(c) == c and strip(c) == "":
            nonspacing.add(ord(c))
        if marks(c) == "":
            combining.add(ord(c))
    return {
        name: encode_ranges(to_ranges(points))
        for name, points in (
            ("CLEAN_DELETES", deleted),
            ("CLEAN_SPACES", spaces),
            ("NONSPACING_MARKS", nonspacing),
            ("COMBINING_MARKS", combining),
        )
    }


def write() -> None:
    import tokenizers

    lines = [
        '"""Char classes of BertNormalizer and StripAccents as the oracle has them. Generated.',
        "",
        f"Produced by tools/gen_bert_tables.py from tokenizers {tokenizers.__version__}:",
        "hex code point ranges, space separated.",
        '"""',
        "",
    ]
    for name, ranges in classes().items():
        # wrapped so that the module stays within the line length
        lines.append(f"{name} = (")
        lines += [f"    {chunk + ' '!r}" for chunk in textwrap.wrap(ranges, 90)]
        lines.append(")")
    OUT.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    write()
