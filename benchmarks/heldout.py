"""Held-out corpora: real text the engine was never tuned or tested on.

The tests, the trained fixtures and the earlier benchmarks all draw their text from
``tests.support.corpora`` (Debian handbook and Python docs, more English HTML manuals, the
Python standard library and C headers, the handbook's translations and three gettext
languages). The benchmark keeps three corpora out of all of that, built the same way (Debian
binary packages fetched with ``apt-get download`` through ``corpora.DebianPackages``) from
packages that module never reads:

* ``heldout-english``: the Perl manual (``perl-doc``: ``pod/*.pod``), plain English
  documentation prose with indented code examples; POD commands and formatting codes are
  reduced to their text, and every file is split into one document per ``=head1`` /
  ``=head2`` section. ``perltoc`` (a table of contents) and ``perluniprops`` (property
  tables) are left out.
* ``heldout-code``: the Go standard library and toolchain (``golang-1.19-src``: ``*.go``
  outside ``testdata``), a language the code corpus does not hold; one document per file,
  in a seeded shuffle so that a prefix covers many packages.
* ``heldout-multilingual``: the translated messages of gettext catalogues from packages the
  corpora do not use (coreutils, bash, GLib, GnuPG, the C library, tar, findutils, grep), in
  every locale they ship (about 100, many scripts the multilingual corpus lacks); messages
  of one locale are joined into documents of ~2,000 characters, and documents are taken
  round-robin over the locales.

Each corpus is cached as JSON lines under ``$BATCHTOK_CACHE/bench_heldout/`` next to a
manifest with the package versions; the first use builds it (a minute or so, ~30 MB of
downloads).
"""

from __future__ import annotations

import functools
import json
import pathlib
import random
import re
from itertools import zip_longest

from tests.support import corpora
from tests.support.fixtures import atomic_write_bytes, cache_root, file_lock

KINDS = ("heldout-english", "heldout-code", "heldout-multilingual")
FORMAT = 1
PERL_POD = "usr/share/perl/5.36.0/pod"
POD_SKIP = frozenset(("perltoc.pod", "perluniprops.pod"))
GO_SRC = "usr/share/go-1.19/src"
MO_SOURCES = (
    "coreutils",
    "bash",
    "libglib2.0-data",
    "gnupg-l10n",
    "libc-l10n",
    "tar",
    "findutils",
    "grep",
)
SEED = 20251201

_POD_HEADING = re.compile(r"=(head[1-4]|item)\s*(.*)")
_POD_CODE = re.compile(r"[A-Z]<(?:<+\s+(.*?)\s+>+|([^<>]*))>")


def _pod_text(pod: str) -> list[str]:
    """POD reduced to its text, one document per =head1 / =head2 section."""
    docs: list[list[str]] = [[]]
    for line in pod.splitlines():
        if line.startswith("="):
            m = _POD_HEADING.match(line)
            if m is None:
                continue  # =pod, =cut, =over, =back, =begin, =encoding ...
            if m.group(1) in ("head1", "head2") and any(s.strip() for s in docs[-1]):
                docs.append([])
            line = m.group(2)
        if not line.startswith((" ", "\t")):
            for _ in range(3):  # nested codes, e.g. B<C<x>>
                line = _POD_CODE.sub(lambda m: m.group(1) or m.group(2) or "", line)
        docs[-1].append(line)
    out = []
    for lines in docs:
        text = re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip("\n")
        if len(text) >= 200:
            out.append(text)
    return out


def _build_english(debs: corpora.DebianPackages) -> list[str]:
    root = debs.unpack("perl-doc")["perl-doc"] / PERL_POD
    docs = []
    for path in sorted(root.glob("*.pod")):
        if path.name not in POD_SKIP:
            docs += _pod_text(path.read_text(encoding="utf-8", errors="replace"))
    return docs


def _build_code(debs: corpora.DebianPackages) -> list[str]:
    root = debs.unpack("golang-1.19-src")["golang-1.19-src"] / GO_SRC
    files = [p for p in sorted(root.rglob("*.go")) if "testdata" not in p.parts]
    docs = [t for t in map(corpora._read_source, files) if t is not None]
    random.Random(SEED).shuffle(docs)
    return docs


def _build_multilingual(debs: corpora.DebianPackages) -> list[str]:
    trees = debs.unpack(*MO_SOURCES)
    per_locale: dict[str, list[str]] = {}
    for pkg in MO_SOURCES:
        for mo in sorted(trees[pkg].rglob("*.mo")):
            if mo.parent.name != "LC_MESSAGES":
                continue
            locale = mo.parent.parent.name
            if locale.startswith("en"):
                continue  # en@quot, en_GB ...: English again
            msgs = [corpora._MNEMONIC.sub("", m) for m in corpora._mo_messages(mo)]
            per_locale.setdefault(locale, []).extend(msgs)
    columns = []
    for locale in sorted(per_locale):
        unique = list(dict.fromkeys(per_locale[locale]))
        columns.append(corpora._chunk_messages(unique))
    return [doc for row in zip_longest(*columns) for doc in row if doc is not None]


_BUILDERS = {
    "heldout-english": _build_english,
    "heldout-code": _build_code,
    "heldout-multilingual": _build_multilingual,
}


def heldout_dir() -> pathlib.Path:
    return cache_root() / "bench_heldout"


@functools.cache
def heldout_docs(kind: str) -> tuple[str, ...]:
    """The documents of one held-out corpus, built and cached on first use."""
    if kind not in _BUILDERS:
        raise KeyError(f"unknown held-out corpus {kind!r}; known: {KINDS}")
    path = heldout_dir() / f"{kind}.jsonl"
    manifest = heldout_dir() / f"{kind}.manifest.json"
    with file_lock(heldout_dir() / f".{kind}.lock"):
        try:
            info = json.loads(manifest.read_text(encoding="utf-8"))
            ok = info.get("format") == FORMAT and path.stat().st_size == info["file_bytes"]
        except (FileNotFoundError, ValueError, KeyError):
            ok = False
        if not ok:
            with corpora.DebianPackages() as debs:
                docs = _BUILDERS[kind](debs)
                versions = debs.versions
            file_bytes = corpora._write_jsonl(path, docs)
            info = {
                "format": FORMAT,
                "kind": kind,
                "packages": versions,
                "docs": len(docs),
                "text_bytes": sum(len(d.encode()) for d in docs),
                "file_bytes": file_bytes,
            }
            atomic_write_bytes(manifest, json.dumps(info, indent=1).encode())
    return tuple(corpora._read_jsonl(path))


def heldout_packages(kind: str) -> dict[str, str]:
    """Debian package -> version of a built held-out corpus."""
    heldout_docs(kind)
    info = json.loads((heldout_dir() / f"{kind}.manifest.json").read_text(encoding="utf-8"))
    return info["packages"]


def describe(kind: str) -> str:
    """One output line saying that ``kind`` is held out, and where it comes from."""
    pkgs = ", ".join(f"{p} {v}" for p, v in heldout_packages(kind).items())
    return f"HELD OUT (never used by tests or tuning): {kind} from {pkgs}"
