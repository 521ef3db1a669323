"""Regenerate ``batchtok/_tables/grapheme.py``: where the oracle's grapheme clusters differ from
the ``regex`` module's ``\\X``.

`tokenizers` applies a Precompiled charsmap per extended grapheme cluster (Rust crate
unicode-segmentation), and batchtok segments with ``regex``'s ``\\X``, whose Unicode version
may be newer. The oracle's clusters are read off the oracle itself: a probe charsmap built by
SentencePiece maps every code point ``c`` to ``c + "\\x01"``, so the oracle's output shows
where each cluster of fewer than 6 UTF-8 bytes starts (the only clusters whose extent changes
the output). Every code point is probed in contexts that exercise each rule of UAX #29; a
code point classed differently from ``regex`` is listed with a stand-in char that ``regex``
classes as the oracle does, and batchtok segments text with the stand-ins substituted.

    python -m tools.gen_grapheme_tables   # needs tokenizers==0.23.3 and sentencepiece

``tests/normalizers/test_precompiled.py`` checks the committed table against the installed oracle.
"""

from __future__ import annotations

import functools
import hashlib
import io
import pathlib
import tempfile

import regex

OUT = pathlib.Path(__file__).resolve().parents[1] / "batchtok" / "_tables" / "grapheme.py"

# Each context puts the probed char c next to chars of one grapheme-break class.
CONTEXTS = {
    "a+c": "a{}",
    "c+a": "{}a",
    "c+acute": "{}\u0301",
    "cr+c": "\r{}",
    "c+lf": "{}\n",
    "L+c": "\u1100{}",
    "c+L": "{}\u1100",
    "c+V": "{}\u1161",
    "c+T": "{}\u11a8",
    "cc": "{0}{0}",
    "copy-zwj+c": "\u00a9\u200d{}",
    "c+zwj+copy": "{}\u200d\u00a9",
    "c+visarga": "{}\u0903",
}
STAND_INS = "a\u00a9\u0301\u0903\u0600\u1100\u1161\u11a8\uac00\uac01\U0001f1e6\u200d\r\n\x01"

# The regex properties \X depends on; their membership fingerprints the regex module's tables.
PROPERTIES = [f"GCB={v}" for v in "CR LF Control Extend ZWJ Regional_Indicator Prepend".split()]
PROPERTIES += [f"GCB={v}" for v in "SpacingMark L V T LV LVT".split()]
PROPERTIES += ["Extended_Pictographic", "InCB=Linker", "InCB=Consonant", "InCB=Extend"]


def code_points() -> list[str]:
    return [chr(c) for c in range(1, 0x110000) if not 0xD800 <= c <= 0xDFFF]


def proto_field(buf: bytes, wanted: int) -> bytes | None:
    """The first length-delimited field ``wanted`` of a serialized protobuf message."""

    def varint(i: int) -> tuple[int, int]:
        value = shift = 0
        while True:
            byte = buf[i]
            i += 1
            value |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                return value, i

    i = 0
    while i < len(buf):
        key, i = varint(i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            _, i = varint(i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            size, i = varint(i)
            if number == wanted:
                return buf[i : i + size]
            i += size
        else:
            raise ValueError(f"unsupported wire type {wire}")
    return None


def spm_charsmap(rule_name: str | None = None, rules_tsv: str | None = None) -> bytes:
    """The precompiled_charsmap of a tiny SentencePiece model trained with a normalization
    rule (a built-in name, or a TSV of ``source<TAB>target`` hex code points)."""
    import sentencepiece

    from tests.support.oracle import corpus_lines

    model = io.BytesIO()
    options: dict = {"normalization_rule_name": rule_name} if rule_name else {}
    with tempfile.TemporaryDirectory() as tmp:
        if rules_tsv is not None:
            path = pathlib.Path(tmp) / "rules.tsv"
            path.write_text(rules_tsv)
            options = {"normalization_rule_tsv": str(path)}
        sentencepiece.SentencePieceTrainer.train(
            sentence_iterator=iter(corpus_lines()),
            model_writer=model,
            vocab_size=400,
            hard_vocab_limit=False,
            minloglevel=3,
            **options,
        )
    normalizer_spec = proto_field(model.getvalue(), 3)
    charsmap = proto_field(normalizer_spec or b"", 2)
    return charsmap or b""


@functools.cache
def probe_charsmap() -> bytes:
    """Every code point except NUL and space c -> c + U+0001 (SentencePiece refuses identity
    rules and needs the space)."""
    rules = "".join(f"{ord(c):X}\t{ord(c):X} 1\n" for c in code_points() if c != " ")
    return spm_charsmap(rules_tsv=rules)


def _mark(c: str) -> str:
    return c if c in "\x00 " else c + "\x01"


def regex_probe(text: str, remap: dict[int, str] | None = None) -> str:
    """What the oracle prints for ``text`` under the probe charsmap if its clusters were
    ``regex``'s ``\\X`` on ``text`` with the chars of ``remap`` substituted."""
    seg = text.translate(remap) if remap else text
    out = []
    at = 0
    for piece in regex.findall(r"\X", seg, flags=regex.DOTALL):
        g = text[at : at + len(piece)]
        at += len(piece)
        keyed = g[0] not in "\x00 "
        out.append(_mark(g[0]) if keyed and len(g.encode()) < 6 else "".join(map(_mark, g)))
    return "".join(out)


def signatures(probe, chars: list[str]) -> list[tuple[str, ...]]:
    """Per char, the probe's output in every context (NUL separates the probes)."""
    columns = []
    for template in CONTEXTS.values():
        text = "\x00".join(template.format(c) for c in chars)
        columns.append(probe(text).split("\x00"))
    return list(zip(*columns))


def stand_ins(chars: list[str] | None = None) -> dict[int, str]:
    """Code points the oracle clusters differently from ``regex``, each with a char that
    ``regex`` clusters as the oracle clusters it (in every probed context). Among ``chars``
    (default: every code point; a test may probe a sample)."""
    from tokenizers.normalizers import Precompiled

    oracle = Precompiled(probe_charsmap()).normalize_str
    chars = code_points() if chars is None else chars
    theirs = signatures(oracle, chars)
    ours = signatures(regex_probe, chars)
    out: dict[int, str] = {}
    for c, want, got in zip(chars, theirs, ours):
        if want == got:
            continue
        for s in STAND_INS:
            remap = {ord(c): s}
            if signatures(lambda t, r=remap: regex_probe(t, r), [c])[0] == want:
                out[ord(c)] = s
                break
        else:
            raise AssertionError(f"no stand-in clusters like U+{ord(c):04X} in the oracle")
    return out


def regex_fingerprint() -> str:
    """A hash of the membership of every property ``\\X`` uses, in the installed ``regex``."""
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    digest = hashlib.sha256()
    for name in PROPERTIES:
        members = regex.findall(rf"\p{{{name}}}", text)
        digest.update(name.encode() + b":" + "".join(members).encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


def write() -> None:
    import tokenizers

    table = stand_ins()
    lines = [
        '"""Where the oracle\'s grapheme clusters differ from ``regex``\'s. Generated.',
        "",
        f"Produced by tools/gen_grapheme_tables.py from tokenizers {tokenizers.__version__}",
        f"and regex {regex.__version__}: code point -> a char that regex clusters as the oracle",
        "clusters that code point. REGEX_FINGERPRINT hashes the regex properties these were",
        "checked against.",
        '"""',
        "",
        f"REGEX_VERSION = {regex.__version__!r}",
        f"REGEX_FINGERPRINT = {regex_fingerprint()!r}",
        "",
        "STAND_INS = {",
        *(f"    0x{cp:x}: {s!r}," for cp, s in sorted(table.items())),
        "}",
        "",
    ]
    OUT.write_text("\n".join(lines))


if __name__ == "__main__":
    write()
