"""The ``dedup`` corpus: >= 100 MB of held-out text in which no paragraph occurs twice.

A benchmark whose text repeats itself measures batchtok's piece cache as much as its engine:
the more pre-tokens equal earlier ones, the fewer merges there are to compute. This corpus has
the shape of a deduplicated web or code corpus instead. It is built like the corpora of
benchmarks/heldout.py (Debian binary packages fetched with ``apt-get download`` through
``tests.support.corpora.DebianPackages``), from packages that ``tests.support.corpora`` never
reads, so that it stays held out; whole documents, in three kinds:

* ``english``: technical prose. The Perl manual (``perl-doc``, one document per ``=head1`` /
  ``=head2`` section, as heldout-english), the English man pages of ``manpages`` and
  ``manpages-dev`` (roff reduced to its text, one document per page), the LibreOffice help
  (``libreoffice-help-en-us``) and the manuals of CMake, GNU Octave and Maxima (``cmake-doc``,
  ``octave-doc``, ``maxima-doc``), one document per HTML page.
* ``code``: one document per source file, at most :data:`CODE_LANGUAGE_BYTES` per language
  (a seeded shuffle of the files, then a prefix): Go (``golang-1.19-src``), Rust
  (``rust-src``: the standard library and the compiler), C++ (``libboost1.81-dev`` headers),
  Perl (``perl-modules-5.36``), Ruby (``libruby3.1``) and Erlang (``erlang-src``); test
  directories are left out.
* ``multilingual``: the translated man pages of the manpages-l10n packages (``manpages-de``,
  ``-fr``, ``-es``, ``-ja``, ``-zh``, ``-ru``, ``-uk``, ``-el`` ... see :data:`MAN_L10N`), the
  LibreOffice help in Korean, Hindi, Khmer and Dzongkha (``libreoffice-help-*``), and the
  gettext catalogues of heldout-multilingual (about 100 locales).

Then paragraphs are deduplicated over the whole corpus: a paragraph is the text between blank
lines (a line of only spaces or tabs counts as blank); documents are taken kind by kind in the
order above (so a translation's paragraphs left in English go, the English ones coming first),
each paragraph kept only if no earlier paragraph equals it with runs of whitespace made one
space; a document left with under :data:`MIN_DOC_CHARS` characters goes. The documents are
stored interleaved by bytes (the kind with the fewest bytes so far next; within a kind, its
sources the same way), so that every prefix mixes the three kinds and many languages.

Cached as JSON lines (``{"kind", "source", "text"}``) under ``$BATCHTOK_CACHE/bench_dedup/``
next to a manifest with the package versions and the dedup figures (paragraphs dropped, the
residual repeat rates of paragraphs and of lines); the first use builds it (~135 MB of
downloads, 3-6 minutes on a shared 2-core machine). The packages of benchmarks/heldout.py are
among its sources (its English, Go and gettext text, deduplicated with the rest), so ``dedup``
is held out from the tests and the tuning, not from the heldout-* corpora.
``python -m benchmarks.dedup`` builds it and prints the manifest.
"""

from __future__ import annotations

import functools
import gzip
import json
import pathlib
import random
import re
import sys
import time
from collections.abc import Iterable, Sequence

from benchmarks import heldout
from tests.support import corpora
from tests.support.fixtures import atomic_write_bytes, cache_root, file_lock

NAME = "dedup"
#: The kinds, in the order paragraphs are deduplicated; ``dedup-KIND`` names one of them.
KINDS = ("english", "code", "multilingual")
CORPORA = (NAME, *(f"{NAME}-{k}" for k in KINDS))
FORMAT = 2
SEED = 20261204
MIN_DOC_CHARS = 200
CODE_LANGUAGE_BYTES = 9_000_000

ENGLISH_MAN = ("manpages", "manpages-dev")
LO_HELP = "usr/share/libreoffice/help"
CMAKE_HTML = "usr/share/doc/cmake-data/html"
#: Texinfo manuals as HTML: package -> root of its pages
TEXINFO_HTML = {"octave-doc": "usr/share/doc/octave", "maxima-doc": "usr/share/doc/maxima-doc/html"}
#: language -> (package, root inside it, file suffixes)
CODE_SOURCES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "go": ("golang-1.19-src", heldout.GO_SRC, (".go",)),
    "rust": ("rust-src", "usr/src/rustc-1.63.0", (".rs",)),
    "c++": ("libboost1.81-dev", "usr/include/boost", (".hpp", ".ipp", ".h")),
    "perl": ("perl-modules-5.36", "usr/share/perl/5.36.0", (".pm", ".pl")),
    "ruby": ("libruby3.1", "usr/lib/ruby/3.1.0", (".rb",)),
    "erlang": ("erlang-src", "usr/lib/erlang/lib", (".erl", ".hrl")),
}
_TEST_DIRS = frozenset(("test", "tests", "testdata", "testsuite", "test_suite", "t"))
#: The translated man pages (manpages-l10n and others).
MAN_L10N = tuple(
    f"manpages-{lang}"
    for lang in (
        "de fr es it ja zh ru pl uk pt-br nl cs el mk vi ro hu fi sv da id nb sr tr"
    ).split()
)
LO_HELP_LANGUAGES = ("ko", "hi", "km", "dz")
#: Scripts counted in the manifest (``regex`` script names).
SCRIPTS = (
    "Latin",
    "Cyrillic",
    "Greek",
    "Han",
    "Hiragana",
    "Katakana",
    "Hangul",
    "Devanagari",
    "Khmer",
    "Tibetan",
    "Arabic",
    "Hebrew",
    "Thai",
    "Georgian",
    "Armenian",
    "Bengali",
    "Tamil",
    "Ethiopic",
)

# -- roff -------------------------------------------------------------------------------------

_ROFF_NAMED = {
    "em": "—", "en": "–", "hy": "-", "bu": "•", "aq": "'", "dq": '"', "lq": "“", "rq": "”",
    "oq": "‘", "cq": "’", "co": "©", "rg": "®", "tm": "™", "mu": "×", "di": "÷", "de": "°",
    "+-": "±", ">=": "≥", "<=": "≤", "!=": "≠", "->": "→", "<-": "←", "ga": "`", "ti": "~",
    "ha": "^", "rs": "\\", "lB": "[", "rB": "]", "lC": "{", "rC": "}", "Fo": "«", "Fc": "»",
    "fo": "‹", "fc": "›", "sc": "§", "ps": "¶", "ss": "ß", "pl": "+", "mi": "-", "eq": "=",
    "ul": "_", "ba": "|", "or": "|", "sl": "/", "dg": "†", "at": "@", "sh": "#", "Do": "$",
}  # fmt: skip
_ROFF_ESCAPE = re.compile(
    r"\\(?:\((..)|\[([^\]]*)\]|[fF](?:\[[^\]]*\]|\(..|.)|[sS][+-]?(?:\d+|\(\d\d|\[[^\]]*\])"
    r"|\*(?:\[[^\]]*\]|\(..|.)|[nk](?:\[[^\]]*\]|\(..|.)|[hvwlLoxXbDNzZ]'[^']*'"
    r"|(e)|(-)|(~)|(\s)|[&c|^,/%:}{0ad)!tuP]|(.))"
)
_FONT_ALTERNATING = frozenset(("BR", "RB", "BI", "IB", "IR", "RI"))
_FONT_SINGLE = frozenset(("B", "I", "SM", "SB", "R", "UR", "MT", "OP"))
_BREAKS = frozenset(("PP", "P", "LP", "sp", "HP", "IP", "TP", "TQ", "SH", "SS", "RS", "RE"))
_ARGS = re.compile(r'"((?:[^"]|"")*)"?|(\S+)')


def _unescape(match: re.Match[str]) -> str:
    two, bracket, e, minus, tilde, space, other = match.groups()
    name = two or bracket
    if name is not None:
        if name.startswith("u") and len(name) > 1:
            try:
                return chr(int(name[1:].split("_")[0], 16))
            except ValueError:
                return ""
        return _ROFF_NAMED.get(name, "")
    if e:
        return "\\"
    if minus:
        return "-"
    if tilde or space:
        return " "
    return other or ""


def _roff_args(text: str) -> list[str]:
    return [m[1].replace('""', '"') if m[1] is not None else m[2] for m in _ARGS.finditer(text)]


def roff_text(source: str) -> str:
    """A man page's roff (man macros) reduced to the text a reader sees: filled text joined
    into one line a paragraph (as roff fills it), paragraphs split at the breaks, headings and
    tagged-paragraph tags on lines of their own, escapes resolved, verbatim (``.nf`` / ``.EX``
    / tables) blocks kept line by line; other requests dropped."""
    paras: list[list[str]] = [[]]  # the lines of each paragraph
    line_open = False  # the last line of the paragraph takes more filled text
    verbatim = False
    skip_def = False
    tag_next = False  # .TP: the next line is the tag, on a line of its own

    def brk() -> None:
        nonlocal line_open
        if paras[-1]:
            paras.append([])
        line_open = False

    def add(text: str, fill: bool) -> None:
        nonlocal line_open, tag_next
        if fill and not tag_next and line_open:
            paras[-1][-1] += " " + text
        else:
            paras[-1].append(text)
        line_open = fill and not tag_next
        tag_next = False

    for line in source.splitlines():
        if skip_def:
            skip_def = not line.startswith("..")
            continue
        if line.startswith((".", "'")):
            body = line[1:].lstrip()
            if body.startswith('\\"') or not body:
                continue
            name, _, rest = body.partition(" ")
            if name in ("de", "de1", "am", "ig"):
                skip_def = True
                continue
            if name in ("nf", "EX", "TS"):
                verbatim = True
                brk()
            elif name in ("fi", "EE", "TE"):
                verbatim = False
                brk()
            args = [_ROFF_ESCAPE.sub(_unescape, a) for a in _roff_args(rest)]
            if name in _BREAKS:
                brk()
                if name in ("SH", "SS") and args:
                    add(" ".join(args), False)
                    brk()
                elif name == "IP" and args and args[0].strip():
                    add(args[0], False)
                elif name in ("TP", "TQ"):
                    tag_next = True
            elif name == "br":
                line_open = False
            elif name in _FONT_ALTERNATING:
                add("".join(args), not verbatim)
            elif name in _FONT_SINGLE and args:
                add(" ".join(args), not verbatim)
            # TH, in, ad, ds, so, ne ... and unknown requests: no text
            continue
        text = _ROFF_ESCAPE.sub(_unescape, line)
        if not text.strip():
            if verbatim:
                add("", False)
            else:
                brk()
            continue
        add(text if verbatim else text.strip(), not verbatim)
    text = "\n\n".join("\n".join(p).strip("\n") for p in paras if "".join(p).strip())
    return re.sub(r"\n{3,}", "\n\n", text)


def _man_pages(root: pathlib.Path) -> dict[str, list[pathlib.Path]]:
    """locale -> its man page files (``usr/share/man/LOCALE/manN/*.gz``), links and ``.so``
    redirections left out; ``""`` for the untranslated pages."""
    out: dict[str, list[pathlib.Path]] = {}
    for page in sorted((root / "usr/share/man").glob("**/man*/*")):
        if page.is_symlink() or not page.is_file():
            continue
        section = page.parent.parent.name
        locale = "" if section == "man" else section
        out.setdefault(locale, []).append(page)
    return out


def _read_man(path: pathlib.Path) -> str | None:
    data = path.read_bytes()
    if path.suffix == ".gz":
        data = gzip.decompress(data)
    try:
        source = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if source.lstrip().startswith(".so "):
        return None
    text = roff_text(source)
    return text if len(text) >= MIN_DOC_CHARS else None


# -- sources ----------------------------------------------------------------------------------


def _html_docs(pages: Sequence[pathlib.Path], cut: str | None = None) -> list[str]:
    """One document per page; ``cut``: drop the markup before this string (page chrome)."""
    docs = []
    for page in pages:
        markup = page.read_text(encoding="utf-8", errors="replace")
        if cut is not None and cut in markup:
            markup = markup[markup.index(cut) :]
        text = corpora.blocks_text(corpora.html_blocks(markup))
        if len(text) >= MIN_DOC_CHARS:
            docs.append(text)
    return docs


def _lo_help(tree: pathlib.Path, lang: str) -> list[str]:
    pages = sorted((tree / LO_HELP / lang / "text").rglob("*.html"))
    if not pages:
        raise corpora.DebianError(f"no LibreOffice help pages under /{LO_HELP}/{lang}/text")
    return _html_docs(pages, cut='<div id="DisplayArea"')


def _code_files(root: pathlib.Path, suffixes: tuple[str, ...]) -> list[pathlib.Path]:
    files = [
        p
        for p in sorted(root.rglob("*"))
        if p.suffix in suffixes and not _TEST_DIRS.intersection(p.relative_to(root).parts[:-1])
    ]
    random.Random(SEED).shuffle(files)
    return files


def _sources(debs: corpora.DebianPackages) -> dict[str, dict[str, list[str]]]:
    """kind -> source -> documents, before deduplication."""
    log("English: perl-doc, man pages, LibreOffice help, CMake, Octave and Maxima manuals")
    english = {"perl-doc": heldout._build_english(debs)}
    trees = debs.unpack(*ENGLISH_MAN, "libreoffice-help-en-us", "cmake-doc")
    english["man"] = [
        doc
        for pkg in ENGLISH_MAN
        for doc in map(_read_man, _man_pages(trees[pkg]).get("", []))
        if doc is not None
    ]
    english["libreoffice-help"] = _lo_help(trees["libreoffice-help-en-us"], "en-US")
    cmake = trees["cmake-doc"] / CMAKE_HTML
    english["cmake-doc"] = _html_docs(
        [p for p in sorted(cmake.rglob("*.html")) if "_sources" not in p.parts]
    )
    trees = debs.unpack(*TEXINFO_HTML)
    for pkg, root in TEXINFO_HTML.items():
        pages = [
            p
            for p in sorted((trees[pkg] / root).rglob("*.html"))
            if p.is_file() and not p.is_symlink()
        ]
        english[pkg] = _html_docs(pages)

    log("code: " + ", ".join(CODE_SOURCES))
    code: dict[str, list[str]] = {}
    trees = debs.unpack(*(pkg for pkg, _, _ in CODE_SOURCES.values()))
    for lang, (pkg, root, suffixes) in CODE_SOURCES.items():
        docs, total = [], 0
        for path in _code_files(trees[pkg] / root, suffixes):
            text = corpora._read_source(path)
            if text is None:
                continue
            docs.append(text)
            total += len(text.encode())
            if total >= CODE_LANGUAGE_BYTES:
                break
        code[lang] = docs

    log("multilingual: translated man pages, LibreOffice help, gettext catalogues")
    multi: dict[str, list[str]] = {}
    trees = debs.unpack(*MAN_L10N)
    for pkg in MAN_L10N:
        for locale, pages in _man_pages(trees[pkg]).items():
            docs = [d for d in map(_read_man, pages) if d is not None]
            if locale and docs:
                multi.setdefault(f"man-{locale}", []).extend(docs)
    pkgs = [f"libreoffice-help-{lang}" for lang in LO_HELP_LANGUAGES]
    trees = debs.unpack(*pkgs)
    for lang, pkg in zip(LO_HELP_LANGUAGES, pkgs):
        multi[f"libreoffice-help-{lang}"] = _lo_help(trees[pkg], lang)
    multi["gettext"] = heldout._build_multilingual(debs)
    return {"english": english, "code": code, "multilingual": multi}


# -- deduplication ----------------------------------------------------------------------------

_BLANK = re.compile(r"\n[ \t]*\n")


def paragraphs(text: str) -> list[str]:
    """The paragraphs of ``text``: the text between blank lines (lines of only spaces and tabs
    count as blank), blank ones left out."""
    return [p for p in _BLANK.split(text) if p.strip()]


def _key(text: str) -> str:
    return " ".join(text.split())


def dedup(
    sources: dict[str, dict[str, list[str]]],
) -> tuple[dict[str, dict[str, list[str]]], dict]:
    """``sources`` with every paragraph that equals an earlier one (whitespace normalised)
    removed, in kind, source and document order; and the figures of what went."""
    seen: set[str] = set()
    stats = {"paragraphs": 0, "dropped_paragraphs": 0, "dropped_bytes": 0, "dropped_docs": 0}
    out: dict[str, dict[str, list[str]]] = {}
    for kind, by_source in sources.items():
        for source, docs in by_source.items():
            kept_docs = []
            for doc in docs:
                kept = []
                for para in paragraphs(doc):
                    stats["paragraphs"] += 1
                    key = _key(para)
                    if key in seen:
                        stats["dropped_paragraphs"] += 1
                        stats["dropped_bytes"] += len(para.encode())
                        continue
                    seen.add(key)
                    kept.append(para.strip("\n"))
                text = "\n\n".join(kept)
                if len(text) < MIN_DOC_CHARS:
                    stats["dropped_docs"] += 1
                    continue
                kept_docs.append(text)
            out.setdefault(kind, {})[source] = kept_docs
    return out, stats


def residual_repeats(docs: Iterable[str]) -> dict:
    """Share of paragraphs (and of non-blank lines) that equal an earlier one, whitespace
    normalised, over ``docs`` in order; the line figure also by bytes."""
    seen_p: set[str] = set()
    seen_l: set[str] = set()
    n_p = rep_p = n_l = rep_l = bytes_l = rep_bytes_l = 0
    for doc in docs:
        for para in paragraphs(doc):
            key = _key(para)
            n_p += 1
            rep_p += key in seen_p
            seen_p.add(key)
        for line in doc.splitlines():
            key = _key(line)
            if not key:
                continue
            size = len(line.encode()) + 1
            n_l += 1
            bytes_l += size
            if key in seen_l:
                rep_l += 1
                rep_bytes_l += size
            else:
                seen_l.add(key)
    return {
        "paragraphs": n_p,
        "paragraph_repeat_pct": 100 * rep_p / max(n_p, 1),
        "lines": n_l,
        "line_repeat_pct": 100 * rep_l / max(n_l, 1),
        "line_repeat_bytes_pct": 100 * rep_bytes_l / max(bytes_l, 1),
    }


def _interleave(pools: dict[str, list], size=lambda d: len(d.encode())) -> list:
    """Items of every pool, the pool with the fewest bytes taken so far next."""
    taken = dict.fromkeys(pools, 0)
    iters = {k: iter(v) for k, v in pools.items()}
    out = []
    while iters:
        key = min(iters, key=taken.__getitem__)
        item = next(iters[key], None)
        if item is None:
            del iters[key]
            continue
        out.append(item)
        taken[key] += size(item)
    return out


def script_chars(docs: Iterable[str]) -> dict[str, int]:
    """Characters of each of :data:`SCRIPTS` in ``docs`` (those present)."""
    import regex

    text = "\n".join(docs)
    counts = {s: len(regex.findall(rf"\p{{Script={s}}}", text)) for s in SCRIPTS}
    return {s: n for s, n in counts.items() if n}


# -- cache ------------------------------------------------------------------------------------


def log(msg: str) -> None:
    print(f"[dedup {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def dedup_dir() -> pathlib.Path:
    return cache_root() / f"bench_{NAME}"


def _build() -> tuple[list[dict], dict]:
    started = time.monotonic()
    with corpora.DebianPackages() as debs:
        raw = _sources(debs)
        versions = dict(sorted(debs.versions.items()))
    log("deduplicating paragraphs")
    kept, stats = dedup(raw)
    rows = _interleave(
        {
            kind: _interleave(
                {
                    s: [{"kind": kind, "source": s, "text": d} for d in docs]
                    for s, docs in by.items()
                },
                size=lambda r: len(r["text"].encode()),
            )
            for kind, by in kept.items()
        },
        size=lambda r: len(r["text"].encode()),
    )
    log("measuring the residual repeats and scripts")
    per_source: dict[str, dict] = {}
    for kind, by in kept.items():
        for source, docs in by.items():
            per_source[f"{kind}/{source}"] = {
                "docs": len(docs),
                "text_bytes": sum(len(d.encode()) for d in docs),
            }
    info = {
        "format": FORMAT,
        "packages": versions,
        "docs": len(rows),
        "text_bytes": sum(len(r["text"].encode()) for r in rows),
        "kinds": {
            k: {
                "docs": sum(len(d) for d in by.values()),
                "text_bytes": sum(len(t.encode()) for d in by.values() for t in d),
            }
            for k, by in kept.items()
        },
        "sources": per_source,
        "dedup": stats,
        "residual": residual_repeats(r["text"] for r in rows),
        "scripts_multilingual": script_chars(
            d for docs in kept["multilingual"].values() for d in docs
        ),
        "multilingual_languages": sorted(kept["multilingual"]),
    }
    info["build_seconds"] = round(time.monotonic() - started, 1)
    return rows, info


def _manifest() -> pathlib.Path:
    return dedup_dir() / f"{NAME}.manifest.json"


@functools.cache
def dedup_rows() -> tuple[dict, ...]:
    """Every document of the corpus as ``{"kind", "source", "text"}``, in stored order (built
    and cached on first use)."""
    path = dedup_dir() / f"{NAME}.jsonl"
    with file_lock(dedup_dir() / f".{NAME}.lock"):
        try:
            info = json.loads(_manifest().read_text(encoding="utf-8"))
            ok = info.get("format") == FORMAT and path.stat().st_size == info["file_bytes"]
        except (FileNotFoundError, ValueError, KeyError):
            ok = False
        if not ok:
            rows, info = _build()
            data = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()
            atomic_write_bytes(path, data)
            info["file_bytes"] = len(data)
            atomic_write_bytes(_manifest(), json.dumps(info, indent=1, ensure_ascii=False).encode())
            log(f"built {info['text_bytes'] / 1e6:.1f} MB in {info['build_seconds']} s")
    with open(path, encoding="utf-8") as fh:
        return tuple(json.loads(line) for line in fh if line.strip())


def dedup_docs(corpus: str = NAME) -> list[str]:
    """The documents of ``dedup`` (all kinds, interleaved) or ``dedup-KIND``, in order."""
    if corpus == NAME:
        return [r["text"] for r in dedup_rows()]
    kind = corpus.removeprefix(f"{NAME}-")
    if corpus not in CORPORA:
        raise KeyError(f"unknown corpus {corpus!r}; known: {', '.join(CORPORA)}")
    return [r["text"] for r in dedup_rows() if r["kind"] == kind]


def manifest() -> dict:
    """The built corpus's manifest (packages, sizes, dedup figures)."""
    dedup_rows()
    return json.loads(_manifest().read_text(encoding="utf-8"))


def describe(corpus: str = NAME) -> str:
    """One output line saying what ``corpus`` is and that it does not repeat."""
    info = manifest()
    res = info["residual"]
    part = info["kinds"].get(corpus.removeprefix(f"{NAME}-"))
    size = (
        f"{part['text_bytes'] / 1e6:.1f} MB, {part['docs']} documents: the {corpus[6:]} of "
        f"{NAME}, {info['text_bytes'] / 1e6:.0f} MB"
        if part is not None
        else f"{info['text_bytes'] / 1e6:.0f} MB, {info['docs']} documents"
    )
    return (
        f"HELD OUT, NO REPEATED PARAGRAPH: {corpus} ({size} from {len(info['packages'])} "
        "Debian packages; "
        f"{info['dedup']['dropped_paragraphs']} repeated paragraphs dropped; residual repeats: "
        f"paragraphs {res['paragraph_repeat_pct']:.3f}%, lines {res['line_repeat_pct']:.1f}%; "
        "see benchmarks/dedup.py)"
    )


if __name__ == "__main__":
    print(json.dumps(manifest(), indent=1, ensure_ascii=False))
