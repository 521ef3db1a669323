"""Real text corpora for tests and benchmarks, built from Debian packages.

Every corpus is made by this module from the binary packages of the running
Debian release: ``apt-get download`` fetches them into a temporary directory,
``dpkg-deb -x`` unpacks them, and the text is pulled out with the standard
library (``html.parser`` for HTML and Mallard XML; ``.mo`` catalogues are read
with a small parser of the gettext binary format).  The result is cached as JSON lines under
``$BATCHTOK_CACHE/corpora/`` (``BATCHTOK_CACHE`` defaults to
``~/.cache/batchtok``), next to a manifest that records the package versions
used.  The first call of a kind builds it (tens of seconds); later calls, in
any process, only read the cache.  Set ``BATCHTOK_REBUILD_CORPORA=1`` to force
a rebuild.

Where the text comes from
-------------------------

English (``english_docs``)
    ``debian-handbook``: the en-US HTML pages of *The Debian Administrator's
    Handbook*; ``python3.11-doc``: the Python 3.11 HTML documentation (main
    content area only).  One document per HTML page; paragraphs are separated
    by blank lines, list items and table rows by newlines, and ``<pre>``
    blocks are kept verbatim.

English prose for benchmarks (``english_prose``)
    The documents above, then more English HTML manuals from Debian, in this
    order (see ``EXTRA_ENGLISH``): ``postgresql-doc-15``,
    ``python-django-doc``, ``debian-reference-en``, ``debian-policy``,
    ``developers-reference``, ``sqlite3-doc``, ``git-doc``.

Source code (``code_docs``)
    ``*.py`` files of the Python standard library (``libpython3.11-minimal``
    and ``libpython3.11-stdlib``) and C headers from ``libpython3.11-dev``
    (``/usr/include/python3.11``) and ``linux-libc-dev`` (``/usr/include``).
    One document per file.

Multilingual (``multilingual_docs``), keyed by an English language name
    * The translations of the Debian handbook in ``debian-handbook``:
      arabic (ar-MA), catalan, chinese_simplified (zh-CN),
      chinese_traditional (zh-TW), czech, dutch, french, german, indonesian,
      italian, japanese, norwegian_bokmal, persian (fa-IR), polish,
      portuguese_brazil, russian, spanish, swedish, turkish, vietnamese.
      Partial translations fall back to English paragraph by paragraph, so
      paragraphs still in English are dropped (those whose words nearly all
      occur on the en-US page; code blocks are kept), and languages the
      handbook translates below ~8 % (Danish, Greek, Croatian, Korean,
      Romanian) are not taken from it.
    * ``gnome-user-docs`` (GNOME desktop help, Mallard XML): korean, greek,
      ukrainian.  Paragraphs left in English (compared with the C locale
      page) are dropped the same way.  Its Hebrew and Hindi are almost
      untranslated, hence the next source.
    * gettext ``.mo`` catalogues, for scripts no handbook translation covers:
      hebrew, hindi (Devanagari) and thai, from ``libreoffice-l10n-LANG``
      (LibreOffice user interface, including its extended tips), ``apt``,
      ``dpkg``, ``tasksel-data``, ``debconf-i18n`` and ``iso-codes``.  Only
      translated messages that contain the target script are kept; messages
      are joined with newlines into documents of about 2,000 characters.
    * emoji: no Debian package ships emoji prose, so these documents are real
      English handbook / Python-doc paragraphs into which emoji sequences
      (plain, VS16, skin-tone modifiers, ZWJ sequences, regional-indicator and
      tag-sequence flags, keycaps) are inserted with a seeded RNG.
"""

from __future__ import annotations

import functools
import html.parser
import json
import logging
import multiprocessing
import os
import pathlib
import random
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from typing import Self

from tests.support.fixtures import atomic_write_bytes, cache_root, file_lock

log = logging.getLogger("batchtok.corpora")

#: Bump to invalidate every cached corpus (e.g. after changing extraction).
FORMAT_VERSION = 1

APT_TIMEOUT_SECONDS = 900

HANDBOOK_HTML = "usr/share/doc/debian-handbook/html"
PYDOC_HTML = "usr/share/doc/python3.11/html"

#: handbook directory -> language key (only usefully translated ones).
HANDBOOK_LANGUAGES = {
    "ar-MA": "arabic",
    "ca-ES": "catalan",
    "cs-CZ": "czech",
    "de-DE": "german",
    "es-ES": "spanish",
    "fa-IR": "persian",
    "fr-FR": "french",
    "id-ID": "indonesian",
    "it-IT": "italian",
    "ja-JP": "japanese",
    "nb-NO": "norwegian_bokmal",
    "nl-NL": "dutch",
    "pl-PL": "polish",
    "pt-BR": "portuguese_brazil",
    "ru-RU": "russian",
    "sv-SE": "swedish",
    "tr-TR": "turkish",
    "vi-VN": "vietnamese",
    "zh-CN": "chinese_simplified",
    "zh-TW": "chinese_traditional",
}

#: gnome-user-docs locale -> language key.
GNOME_HELP_LANGUAGES = {"ko": "korean", "el": "greek", "uk": "ukrainian"}

#: gettext locale -> language key, for the .mo-catalogue languages.
MO_LANGUAGES = {"he": "hebrew", "hi": "hindi", "th": "thai"}
MO_PACKAGES = ("apt", "dpkg", "tasksel-data", "debconf-i18n", "iso-codes")

#: Extra English HTML manuals for english_prose(), in order:
#: (package, HTML root inside the package, glob, file names to leave out).
EXTRA_ENGLISH: tuple[tuple[str, str, str, str], ...] = (
    ("postgresql-doc-15", "usr/share/doc/postgresql-doc-15/html", "*.html", ""),
    ("python-django-doc", "usr/share/doc/python-django-doc/html", "**/*.html", ""),
    ("debian-reference-en", "usr/share/debian-reference", "*.en.html", ""),
    ("debian-policy", "usr/share/doc/debian-policy", "**/*.html", r"index\.html"),
    # developers-reference.html repeats every chapter on one page.
    (
        "developers-reference",
        "usr/share/developers-reference",
        "*.html",
        r"developers-reference\.html",
    ),
    ("sqlite3-doc", "usr/share/doc/sqlite3", "**/*.html", ""),
    ("git-doc", "usr/share/doc/git-doc", "**/*.html", ""),
)

#: Unicode ranges that a language's documents must mostly draw from.
SCRIPT_RANGES: dict[str, tuple[tuple[int, int], ...]] = {
    "arabic": ((0x0600, 0x06FF), (0x0750, 0x077F), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)),
    "persian": ((0x0600, 0x06FF), (0xFB50, 0xFDFF), (0xFE70, 0xFEFF)),
    "hebrew": ((0x0590, 0x05FF), (0xFB1D, 0xFB4F)),
    "hindi": ((0x0900, 0x097F), (0xA8E0, 0xA8FF)),
    "thai": ((0x0E00, 0x0E7F),),
    "russian": ((0x0400, 0x04FF),),
    "ukrainian": ((0x0400, 0x04FF),),
    "greek": ((0x0370, 0x03FF), (0x1F00, 0x1FFF)),
    "korean": ((0xAC00, 0xD7AF), (0x1100, 0x11FF), (0x3130, 0x318F)),
    "japanese": ((0x3040, 0x309F), (0x30A0, 0x30FF)),  # kana
    "chinese_simplified": ((0x4E00, 0x9FFF),),
    "chinese_traditional": ((0x4E00, 0x9FFF),),
    # Pictographs, dingbats and symbols, the keycap mark, and emoji tag characters.
    "emoji": ((0x1F000, 0x1FAFF), (0x2100, 0x2BFF), (0x20E3, 0x20E3), (0xE0020, 0xE007F)),
}


@functools.cache
def _script_pattern(language: str) -> re.Pattern[str]:
    ranges = "".join(f"\\U{lo:08x}-\\U{hi:08x}" for lo, hi in SCRIPT_RANGES[language])
    return re.compile(f"[{ranges}]")


def script_chars(text: str, language: str) -> int:
    """Number of characters of ``text`` in the script ranges of ``language``."""
    return len(_script_pattern(language).findall(text))


# ---------------------------------------------------------------------------
# Debian packages


class DebianError(RuntimeError):
    """A Debian package could not be downloaded or unpacked."""


def _run(cmd: Sequence[str], cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    exe = shutil.which(cmd[0])
    if exe is None:
        raise DebianError(
            f"`{cmd[0]}` is not installed; building the corpora needs a Debian "
            "system with apt-get and dpkg-deb"
        )
    try:
        return subprocess.run(
            [exe, *cmd[1:]],
            check=False,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=APT_TIMEOUT_SECONDS,
        )
    except subprocess.TimeoutExpired as exc:
        raise DebianError(f"`{' '.join(cmd)}` timed out") from exc


_apt_updated = False


def _apt_update() -> None:
    global _apt_updated
    if _apt_updated:
        return
    _apt_updated = True
    if hasattr(os, "geteuid") and os.geteuid() != 0:
        raise DebianError(
            "apt-get download failed and the package lists may be missing; "
            "run `apt-get update` as root, then try again"
        )
    log.info("running apt-get update")
    proc = _run(["apt-get", "update"])
    if proc.returncode != 0:
        raise DebianError(f"apt-get update failed:\n{proc.stderr.strip()[-2000:]}")


class DebianPackages:
    """Download and unpack Debian binary packages into a temporary directory."""

    def __init__(self) -> None:
        self._tmp = tempfile.TemporaryDirectory(prefix="batchtok-deb-")
        self.root = pathlib.Path(self._tmp.name)
        self.versions: dict[str, str] = {}
        self._trees: dict[str, pathlib.Path] = {}

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self._tmp.cleanup()

    def _download(self, packages: Sequence[str], dest: pathlib.Path) -> None:
        cmd = ["apt-get", "download", *packages]
        proc = _run(cmd, cwd=str(dest))
        if proc.returncode != 0:
            log.info("apt-get download failed; updating package lists and retrying")
            _apt_update()
            proc = _run(cmd, cwd=str(dest))
        if proc.returncode != 0:
            raise DebianError(
                f"`{' '.join(cmd)}` failed with exit code {proc.returncode}:\n"
                f"{proc.stderr.strip()[-2000:]}"
            )

    def unpack(self, *packages: str) -> dict[str, pathlib.Path]:
        """Return package -> directory holding its unpacked file tree."""
        missing = [p for p in packages if p not in self._trees]
        if missing:
            debs = self.root / "debs"
            debs.mkdir(exist_ok=True)
            log.info("apt-get download %s", " ".join(missing))
            self._download(missing, debs)
            for pkg in missing:
                found = sorted(debs.glob(f"{pkg}_*.deb"))
                if len(found) != 1:
                    raise DebianError(f"expected one .deb for {pkg}, found {found}")
                deb = found[0]
                tree = self.root / "trees" / pkg
                tree.mkdir(parents=True)
                proc = _run(["dpkg-deb", "-x", str(deb), str(tree)])
                if proc.returncode != 0:
                    raise DebianError(f"dpkg-deb -x {deb.name} failed: {proc.stderr}")
                ver = _run(["dpkg-deb", "-f", str(deb), "Version"])
                self.versions[pkg] = ver.stdout.strip()
                deb.unlink()
                self._trees[pkg] = tree
        return {p: self._trees[p] for p in packages}


# ---------------------------------------------------------------------------
# HTML / Mallard to text

_PARA_TAGS = frozenset(
    [
        "address",
        "article",
        "aside",
        "blockquote",
        "caption",
        "center",
        "comment",
        "details",
        "div",
        "dl",
        "example",
        "fieldset",
        "figcaption",
        "figure",
        "footer",
        "form",
        "h1",
        "h2",
        "h3",
        "h4",
        "h5",
        "h6",
        "header",
        "hr",
        "list",
        "listing",
        "main",
        "note",
        "ol",
        "p",
        "page",
        "pre",
        "quote",
        "screen",
        "section",
        "steps",
        "subtitle",
        "summary",
        "synopsis",
        "table",
        "tbody",
        "terms",
        "thead",
        "title",
        "tree",
        "ul",
    ]
)
_LINE_TAGS = frozenset(["br", "dd", "dt", "item", "li", "tr"])
_CELL_TAGS = frozenset(("td", "th"))
_PRE_TAGS = frozenset(("pre", "screen", "xmp", "listing", "plaintext"))
_VOID_TAGS = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
    ]
)
_ALWAYS_SKIP = frozenset(
    [
        "button",
        "comment",
        "head",
        "info",
        "links",
        "math",
        "media",
        "nav",
        "noscript",
        "script",
        "select",
        "style",
        "svg",
        "template",
    ]
)
_SKIP_CLASSES = frozenset(
    [
        "breadcrumbs",
        "clearer",
        "docnav",
        "footer",
        "headerlink",
        "inline-search",
        "language_switcher_placeholder",
        "menu-wrapper",
        "mobile-nav",
        "navfooter",
        "navheader",
        "nosearch",
        "related",
        "sphinxsidebar",
        "sphinxsidebarwrapper",
        "toc-backref",
        "version_switcher_placeholder",
    ]
)
_SKIP_IDS = frozenset(("banner", "title", "sidebar", "navigation", "footer"))
#: Elements holding the main content, for pages read with ``main_only``.
_MAIN_IDS = frozenset(("yui-main",))
_INLINE_WS = re.compile(r"[ \t\n\r\f]+")


@dataclass(frozen=True)
class Block:
    """One paragraph-level piece of a page; ``pre`` marks verbatim code."""

    text: str
    pre: bool


class _Extractor(html.parser.HTMLParser):
    """Turn HTML (or Mallard XML) into paragraph blocks, as a browser shows it."""

    def __init__(self, main_only: bool) -> None:
        super().__init__(convert_charrefs=True)
        self.blocks: list[Block] = []
        self._cur: list[str] = []
        self._pre_depth = 0
        self._block_pre = False
        self._skip: tuple[str, int] | None = None  # (tag, nesting depth)
        self._main_only = main_only
        self._main: tuple[str, int] | None = None
        self._keyseq = 0
        self._keys_in_seq = 0

    # -- output helpers
    def _flush(self) -> None:
        text = "".join(self._cur)
        self._cur = []
        lines = [line.rstrip() for line in text.split("\n")]
        text = "\n".join(lines).strip("\n")
        if not self._block_pre:
            text = text.strip()
        if text.strip():
            self.blocks.append(Block(text, self._block_pre))
        self._block_pre = False

    def _newline(self) -> None:
        if self._cur and not self._cur[-1].endswith("\n"):
            self._cur.append("\n")

    def _emitting(self) -> bool:
        if self._skip is not None:
            return False
        return not self._main_only or self._main is not None

    # -- parser callbacks
    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, void=tag in _VOID_TAGS)

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self._start(tag, attrs, void=True)

    def _start(self, tag: str, attrs: list[tuple[str, str | None]], void: bool) -> None:
        if self._skip is not None:
            if tag == self._skip[0] and not void:
                self._skip = (tag, self._skip[1] + 1)
            return
        a = dict(attrs)
        if not void and (
            tag in _ALWAYS_SKIP
            or set((a.get("class") or "").split()) & _SKIP_CLASSES
            or (a.get("id") or "") in _SKIP_IDS
        ):
            self._skip = (tag, 1)
            return
        if self._main is not None:
            if tag == self._main[0] and not void:
                self._main = (tag, self._main[1] + 1)
        elif self._main_only:
            if not void and (a.get("role") == "main" or a.get("id") in _MAIN_IDS):
                self._main = (tag, 1)
            return
        self._structure(tag, opening=True)

    def handle_endtag(self, tag: str) -> None:
        if self._skip is not None:
            if tag == self._skip[0]:
                depth = self._skip[1] - 1
                self._skip = None if depth == 0 else (tag, depth)
            return
        if self._main is not None and tag == self._main[0]:
            depth = self._main[1] - 1
            if depth == 0:
                self._structure(tag, opening=False)
                self._flush()
                self._main = None
                return
            self._main = (tag, depth)
        if not self._emitting():
            return
        self._structure(tag, opening=False)

    def _structure(self, tag: str, opening: bool) -> None:
        if tag in _PRE_TAGS:
            if self._pre_depth == 0:
                self._flush()
            if opening:
                self._pre_depth += 1
                self._block_pre = True
            else:
                self._pre_depth = max(0, self._pre_depth - 1)
                if self._pre_depth == 0:
                    self._flush()
            return
        if self._pre_depth:
            if tag == "br":
                self._cur.append("\n")
            return
        if tag == "keyseq":
            self._keyseq += 1 if opening else -1
            self._keys_in_seq = 0
        elif tag == "key" and opening and self._keyseq > 0:
            if self._keys_in_seq:
                self._cur.append("+")
            self._keys_in_seq += 1
        if tag in _PARA_TAGS:
            self._flush()
        elif tag in _LINE_TAGS:
            if opening or tag != "br":
                self._newline()
            if tag == "br" and opening:
                self._cur.append("\n")
        elif (
            tag in _CELL_TAGS and opening and self._cur and not self._cur[-1].endswith(("\n", "\t"))
        ):
            self._cur.append("\t")

    def handle_data(self, data: str) -> None:
        if not self._emitting():
            return
        if self._pre_depth:
            if not self._cur and data.startswith("\n"):
                data = data[1:]  # a newline right after <pre> is not content
            self._cur.append(data)
            return
        data = _INLINE_WS.sub(" ", data)
        if not data:
            return
        at_line_start = not self._cur or self._cur[-1].endswith(("\n", "\t", " "))
        if at_line_start:
            data = data.lstrip(" ")
        if data:
            self._cur.append(data)

    def close(self) -> None:
        super().close()
        self._flush()


def html_blocks(markup: str, main_only: bool = False) -> list[Block]:
    """Paragraph blocks of an HTML page (only its ``role="main"`` part if asked)."""
    parser = _Extractor(main_only)
    parser.feed(markup)
    parser.close()
    return parser.blocks


def blocks_text(blocks: Iterable[Block]) -> str:
    return "\n\n".join(b.text for b in blocks)


def _read_text(path: pathlib.Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        return None


def _page_blocks(job: tuple[str, bool]) -> list[tuple[str, bool]]:
    """Worker: blocks of one file, as picklable tuples."""
    path, main_only = job
    text = _read_text(pathlib.Path(path))
    if text is None:
        return []
    return [(b.text, b.pre) for b in html_blocks(text, main_only)]


def _extract_many(paths: Sequence[pathlib.Path], main_only: bool) -> list[list[Block]]:
    jobs = [(str(p), main_only) for p in paths]
    workers = max(1, min(4, os.cpu_count() or 1))
    if workers == 1 or len(jobs) < 8:
        results = [_page_blocks(j) for j in jobs]
    else:
        # forkserver: fetch_all builds the parts in threads, and a fork beside other threads
        # may copy a lock one of them holds
        context = multiprocessing.get_context("forkserver")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            results = list(pool.map(_page_blocks, jobs, chunksize=8))
    return [[Block(t, p) for t, p in r] for r in results]


_INDEX_PAGES = re.compile(r"(genindex.*|search|py-modindex|modindex|searchindex)\.html")


def _html_pages(root: pathlib.Path, pattern: str, exclude: str = "") -> list[pathlib.Path]:
    pages = []
    for path in sorted(root.glob(pattern)):
        rel = path.relative_to(root).parts
        if any(part.startswith(("_", ".")) for part in rel):
            continue
        if _INDEX_PAGES.fullmatch(path.name) or not path.is_file():
            continue
        if exclude and re.fullmatch(exclude, path.name):
            continue
        pages.append(path)
    return pages


# ---------------------------------------------------------------------------
# Cache


def corpora_dir() -> pathlib.Path:
    return cache_root() / "corpora"


def _write_jsonl(path: pathlib.Path, docs: Iterable[str]) -> int:
    data = "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs).encode()
    atomic_write_bytes(path, data)
    return len(data)


def _read_jsonl(path: pathlib.Path) -> list[str]:
    with open(path, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def _manifest_path(part: str) -> pathlib.Path:
    return corpora_dir() / f"{part}.manifest.json"


def _manifest_ok(part: str) -> dict | None:
    path = _manifest_path(part)
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (FileNotFoundError, ValueError):
        return None
    if manifest.get("format") != FORMAT_VERSION:
        return None
    for name, info in manifest.get("files", {}).items():
        f = corpora_dir() / name
        if not f.is_file() or f.stat().st_size != info["file_bytes"]:
            return None
    return manifest


def ensure_built(part: str, rebuild: bool = False) -> dict:
    """Build corpus ``part`` unless a valid cached copy exists; return its manifest.

    ``part`` is one of :data:`PARTS`.  ``rebuild=True`` (or the environment
    variable ``BATCHTOK_REBUILD_CORPORA=1``, once per process) builds it anew.
    """
    if part not in _BUILDERS:
        raise KeyError(f"unknown corpus part {part!r}; known: {PARTS}")
    env_force = os.environ.get("BATCHTOK_REBUILD_CORPORA") == "1"
    force = rebuild or (env_force and part not in _rebuilt)
    if not force:
        manifest = _manifest_ok(part)
        if manifest is not None:
            return manifest
    with file_lock(corpora_dir() / f".{part}.lock"):
        if not force:
            # Another process may have built it while we waited for the lock.
            manifest = _manifest_ok(part)
            if manifest is not None:
                return manifest
        started = time.monotonic()
        log.info("building corpus %r in %s", part, corpora_dir())
        outputs, versions = _BUILDERS[part]()
        files = {}
        for name, docs in sorted(outputs.items()):
            rel = f"{part}/{name}.jsonl"
            file_bytes = _write_jsonl(corpora_dir() / rel, docs)
            files[rel] = {
                "key": name,
                "docs": len(docs),
                "text_bytes": sum(len(d.encode()) for d in docs),
                "file_bytes": file_bytes,
            }
        manifest = {
            "format": FORMAT_VERSION,
            "part": part,
            "packages": dict(sorted(versions.items())),
            "files": files,
            "build_seconds": round(time.monotonic() - started, 1),
        }
        atomic_write_bytes(
            _manifest_path(part),
            json.dumps(manifest, indent=1, ensure_ascii=False).encode(),
        )
        for stale in (corpora_dir() / part).glob("*.jsonl"):
            if f"{part}/{stale.name}" not in files:
                stale.unlink()
        _rebuilt.add(part)
        _load_part.cache_clear()
        log.info("built corpus %r in %.1f s", part, manifest["build_seconds"])
        return manifest


_rebuilt: set[str] = set()


@functools.cache
def _load_part(part: str) -> dict[str, tuple[str, ...]]:
    manifest = ensure_built(part)
    out = {}
    for rel, info in manifest["files"].items():
        out[info["key"]] = tuple(_read_jsonl(corpora_dir() / rel))
    return out


# ---------------------------------------------------------------------------
# Builders

Outputs = tuple[dict[str, list[str]], dict[str, str]]


def _build_english() -> Outputs:
    with DebianPackages() as debs:
        trees = debs.unpack("debian-handbook", "python3.11-doc")
        handbook = trees["debian-handbook"] / HANDBOOK_HTML / "en-US"
        pydoc = trees["python3.11-doc"] / PYDOC_HTML
        docs: list[str] = []
        for blocks in _extract_many(_html_pages(handbook, "*.html"), main_only=False):
            docs.append(blocks_text(blocks))
        for blocks in _extract_many(_html_pages(pydoc, "**/*.html"), main_only=True):
            docs.append(blocks_text(blocks))
        return {"english": [d for d in docs if d]}, debs.versions


def _build_english_extra() -> Outputs:
    docs: list[str] = []
    with DebianPackages() as debs:
        trees = debs.unpack(*(pkg for pkg, _, _, _ in EXTRA_ENGLISH))
        for pkg, root, pattern, exclude in EXTRA_ENGLISH:
            pages = _html_pages(trees[pkg] / root, pattern, exclude)
            if not pages:
                raise DebianError(f"no HTML pages found in {pkg} under /{root}")
            main_only = pkg == "python-django-doc"
            for blocks in _extract_many(pages, main_only=main_only):
                text = blocks_text(blocks)
                if len(text) >= 200:
                    docs.append(text)
        return {"english_extra": docs}, debs.versions


def _read_source(path: pathlib.Path) -> str | None:
    if path.is_symlink() or not path.is_file():
        return None  # links duplicate (or point outside) the package
    text = _read_text(path)
    if text is None or not text.strip():
        return None
    return text


def _build_code() -> Outputs:
    with DebianPackages() as debs:
        trees = debs.unpack(
            "libpython3.11-minimal",
            "libpython3.11-stdlib",
            "libpython3.11-dev",
            "linux-libc-dev",
        )
        files: list[pathlib.Path] = []
        for pkg in ("libpython3.11-minimal", "libpython3.11-stdlib"):
            files += sorted((trees[pkg] / "usr/lib/python3.11").rglob("*.py"))
        files += sorted((trees["libpython3.11-dev"] / "usr/include").rglob("*.h"))
        files += sorted((trees["linux-libc-dev"] / "usr/include").rglob("*.h"))
        docs = [t for t in map(_read_source, files) if t is not None]
        return {"code": docs}, debs.versions


_WORD = re.compile(r"\w+")


def _untranslated_filter(
    pages: Sequence[list[Block]], reference: Sequence[list[Block]]
) -> list[str]:
    """Join each translated page's blocks, dropping paragraphs left in English.

    A prose block counts as untranslated when at least 90 % of its word
    characters belong to words that occur on the English (reference) page:
    that catches paragraphs copied verbatim and those that differ from the
    English only in a translated cross-reference.  Code blocks are kept.
    """
    docs = []
    for blocks, ref in zip(pages, reference, strict=True):
        vocab = {w.casefold() for b in ref for w in _WORD.findall(b.text)}
        kept = []
        for block in blocks:
            if not block.pre:
                words = _WORD.findall(block.text)
                total = sum(map(len, words))
                known = sum(len(w) for w in words if w.casefold() in vocab)
                if total and known >= 0.9 * total:
                    continue
            kept.append(block)
        if any(not b.pre for b in kept):
            docs.append(blocks_text(kept))
    return docs


def _mo_messages(path: pathlib.Path) -> list[str]:
    """Translated strings of a gettext .mo catalogue, in catalogue order.

    Parsed by hand rather than with :mod:`gettext`, which rejects catalogues
    whose Plural-Forms header it cannot read.  Plural variants each count as
    one message; untranslated entries (empty or equal to the msgid) are left
    out.
    """
    data = path.read_bytes()
    if len(data) < 28:
        return []
    magic = int.from_bytes(data[:4], "little")
    if magic == 0x950412DE:
        order = "little"
    elif magic == 0xDE120495:
        order = "big"
    else:
        return []

    def u32(offset: int) -> int:
        return int.from_bytes(data[offset : offset + 4], order)  # type: ignore[arg-type]

    count, originals, translations = u32(8), u32(12), u32(16)
    out = []
    for i in range(count):
        olen, ooff = u32(originals + 8 * i), u32(originals + 8 * i + 4)
        tlen, toff = u32(translations + 8 * i), u32(translations + 8 * i + 4)
        msgid = data[ooff : ooff + olen]
        if not msgid:
            continue  # the header entry
        msgid_text = msgid.split(b"\x04")[-1].split(b"\0")[0]
        for variant in data[toff : toff + tlen].split(b"\0"):
            if not variant or variant == msgid_text:
                continue
            try:
                out.append(variant.decode("utf-8"))
            except UnicodeDecodeError:
                continue
    return out


# Keyboard-accelerator marks in UI strings ("~File", "_File"), when they sit
# right before a non-ASCII letter; removing them gives the text a user reads.
_MNEMONIC = re.compile(r"[~_](?=[^\W\d_a-zA-Z])")


def _chunk_messages(messages: Iterable[str], target: int = 2000) -> list[str]:
    docs, cur, size = [], [], 0
    for msg in messages:
        cur.append(msg)
        size += len(msg) + 1
        if size >= target:
            docs.append("\n".join(cur))
            cur, size = [], 0
    if cur:
        docs.append("\n".join(cur))
    return docs


def _mo_files(tree: pathlib.Path, locale: str) -> list[pathlib.Path]:
    return sorted(
        p
        for p in tree.rglob("*.mo")
        if p.parent.name == "LC_MESSAGES" and p.parent.parent.name == locale
    )


# Emoji sequences, written as code points so the source stays ASCII-readable.
def _emoji_inventory() -> list[str]:
    def s(*cps: int) -> str:
        return "".join(map(chr, cps))

    zwj, vs16, vs15, keycap = 0x200D, 0xFE0F, 0xFE0E, 0x20E3
    tones = range(0x1F3FB, 0x1F400)
    plain = [
        0x1F600, 0x1F602, 0x1F923, 0x1F60D, 0x1F914, 0x1F389, 0x1F680, 0x1F525,
        0x1F40D, 0x1F916, 0x1F972, 0x1F4A9, 0x1F47B, 0x1F308, 0x1F355, 0x2705,
        0x26A1, 0x1FAE0, 0x1FAE8, 0x1FA77, 0x1FABF, 0x1FAE9, 0x1FAC6, 0x1F9EC,
    ]  # fmt: skip
    inv = [s(cp) for cp in plain]
    inv += [s(cp, vs16) for cp in (0x2764, 0x2600, 0x2714, 0x2122, 0x263A, 0x270C)]
    inv += [s(0x263A, vs15), s(0x2764, vs15)]
    inv += [s(base, t) for base in (0x1F44D, 0x1F44B, 0x1F64F, 0x270C) for t in tones]
    inv += [
        s(0x1F468, zwj, 0x1F469, zwj, 0x1F467, zwj, 0x1F466),  # family
        s(0x1F469, 0x1F3FE, zwj, 0x1F4BB),  # woman technologist, skin tone
        s(0x1F9D1, 0x1F3FB, zwj, 0x1F91D, zwj, 0x1F9D1, 0x1F3FF),  # holding hands
        s(0x1F3F3, vs16, zwj, 0x1F308),  # rainbow flag
        s(0x1F3F3, vs16, zwj, 0x26A7, vs16),  # transgender flag
        s(0x1F469, zwj, 0x2764, vs16, zwj, 0x1F48B, zwj, 0x1F468),  # kiss
        s(0x1F636, zwj, 0x1F32B, vs16),  # face in clouds
        s(0x1F426, zwj, 0x1F525),  # phoenix (Unicode 15.1)
        s(0x1F9D1, zwj, 0x1F9D1, zwj, 0x1F9D2),  # family: adult, adult, child
    ]

    def flag(code: str) -> str:
        return "".join(chr(0x1F1E6 + ord(c) - ord("A")) for c in code)

    inv += [flag(c) for c in ("JP", "US", "DE", "BR", "IN", "UA", "EU", "TH", "KR")]
    # Tag-sequence subdivision flags: England, Scotland, Wales.
    for tag in ("gbeng", "gbsct", "gbwls"):
        inv.append(chr(0x1F3F4) + "".join(chr(0xE0000 + ord(c)) for c in tag) + chr(0xE007F))
    inv += [c + s(vs16, keycap) for c in "0123456789#*"]
    inv.append(s(0x1F51F))
    return inv


EMOJI_SEQUENCES: tuple[str, ...] = tuple(_emoji_inventory())


def _emojify(paragraph: str, rng: random.Random) -> str:
    """Insert emoji runs between, before and after words of ``paragraph``."""
    words = paragraph.split(" ")
    out = []
    inserted = False
    for i, word in enumerate(words):
        out.append(word)
        last = i == len(words) - 1
        if rng.random() < 0.12 or (last and (rng.random() < 0.5 or not inserted)):
            inserted = True
            run = "".join(rng.choice(EMOJI_SEQUENCES) for _ in range(rng.choice((1, 1, 2, 3))))
            style = rng.random()
            if style < 0.5:
                out.append(run)  # separated by spaces
            elif style < 0.8:
                out[-1] = word + run  # glued to the end of the word
            else:
                out[-1] = run + word  # glued to its start
    return " ".join(out)


def _emoji_docs(english: Sequence[str], count: int = 600) -> list[str]:
    prose = []
    for doc in english:
        for para in doc.split("\n\n"):
            if "\n" not in para and len(para.split()) >= 12 and para.endswith("."):
                prose.append(para)
    rng = random.Random(20240229)
    picked = rng.sample(prose, min(len(prose), count * 2))
    docs = []
    for i in range(0, len(picked) - 1, 2):
        docs.append("\n\n".join(_emojify(p, rng) for p in picked[i : i + 2]))
    return docs[:count]


def _build_multilingual() -> Outputs:
    out: dict[str, list[str]] = {}
    with DebianPackages() as debs:
        trees = debs.unpack("debian-handbook", "gnome-user-docs")

        base = trees["debian-handbook"] / HANDBOOK_HTML
        en_pages = _html_pages(base / "en-US", "*.html")
        en_blocks = _extract_many(en_pages, main_only=False)
        for lang_dir, key in sorted(HANDBOOK_LANGUAGES.items()):
            pages = [base / lang_dir / p.name for p in en_pages]
            present = [(p, ref) for p, ref in zip(pages, en_blocks, strict=True) if p.is_file()]
            blocks = _extract_many([p for p, _ in present], main_only=False)
            out[key] = _untranslated_filter(blocks, [ref for _, ref in present])

        help_root = trees["gnome-user-docs"] / "usr/share/help"
        c_pages = sorted((help_root / "C" / "gnome-help").glob("*.page"))
        c_blocks = _extract_many(c_pages, main_only=False)
        for locale, key in sorted(GNOME_HELP_LANGUAGES.items()):
            pairs = [
                (help_root / locale / "gnome-help" / p.name, ref)
                for p, ref in zip(c_pages, c_blocks, strict=True)
            ]
            pairs = [(p, ref) for p, ref in pairs if p.is_file()]
            blocks = _extract_many([p for p, _ in pairs], main_only=False)
            out[key] = _untranslated_filter(blocks, [ref for _, ref in pairs])

        for locale, key in sorted(MO_LANGUAGES.items()):
            pkgs = [f"libreoffice-l10n-{locale}", *MO_PACKAGES]
            mo_trees = debs.unpack(*pkgs)
            docs = []
            seen: set[str] = set()
            for pkg in pkgs:
                for mo in _mo_files(mo_trees[pkg], locale):
                    msgs = []
                    for msg in _mo_messages(mo):
                        msg = _MNEMONIC.sub("", msg)
                        if msg not in seen and script_chars(msg, key):
                            seen.add(msg)
                            msgs.append(msg)
                    docs += _chunk_messages(msgs)
            out[key] = docs

    out["emoji"] = _emoji_docs(english_docs())
    for key, docs in out.items():
        if not docs:
            raise DebianError(f"multilingual corpus {key!r} came out empty")
    return out, debs.versions


_BUILDERS: dict[str, Callable[[], Outputs]] = {
    "english": _build_english,
    "english_extra": _build_english_extra,
    "code": _build_code,
    "multilingual": _build_multilingual,
}

PARTS = tuple(_BUILDERS)


# ---------------------------------------------------------------------------
# Public API


def english_docs() -> list[str]:
    """English documentation pages (Debian handbook + Python docs), one per page."""
    return list(_load_part("english")["english"])


def code_docs() -> list[str]:
    """Source files (Python stdlib *.py, CPython and Linux UAPI *.h), one per file."""
    return list(_load_part("code")["code"])


def multilingual_docs(languages: Iterable[str] | None = None) -> dict[str, list[str]]:
    """Documents per language key (see ``SCRIPT_RANGES`` and the module docs)."""
    part = _load_part("multilingual")
    keys = sorted(part) if languages is None else list(languages)
    unknown = [k for k in keys if k not in part]
    if unknown:
        raise KeyError(f"unknown language(s) {unknown}; known: {sorted(part)}")
    return {k: list(part[k]) for k in keys}


def english_prose(min_bytes: int) -> list[str]:
    """At least ``min_bytes`` UTF-8 bytes of English documents, in a fixed order.

    Starts with :func:`english_docs` and continues with more English manuals
    (built on first need).  Raises ``ValueError`` if not that much exists.
    """
    docs: list[str] = []
    total = 0
    sources: Iterator[str] = iter(english_docs())
    extra_loaded = False
    while total < min_bytes:
        doc = next(sources, None)
        if doc is None:
            if extra_loaded:
                raise ValueError(
                    f"only {total} bytes of English prose available, {min_bytes} asked"
                )
            sources = iter(_load_part("english_extra")["english_extra"])
            extra_loaded = True
            continue
        docs.append(doc)
        total += len(doc.encode())
    return docs


def corpus_kinds() -> list[str]:
    """Kinds accepted by :func:`sample_docs`."""
    return ["english", "code", "multilingual", *sorted(_load_part("multilingual"))]


def _truncate(text: str, max_chars: int | None) -> str:
    if max_chars is None or len(text) <= max_chars:
        return text
    cut = text[:max_chars]
    nl = cut.rfind("\n", max_chars // 2)
    return cut[:nl] if nl > 0 else cut


def sample_docs(kind: str, n: int, max_chars: int | None = 2000, seed: int = 0) -> list[str]:
    """A small deterministic sample of ``n`` documents of ``kind``.

    ``kind`` is ``"english"``, ``"code"``, ``"multilingual"`` (round-robin over
    every language) or one language key.  Each document is cut to at most
    ``max_chars`` characters (at a line break in its second half when there is
    one).  The same arguments always give the same strings.
    """
    if kind == "english":
        pools = {"english": _load_part("english")["english"]}
    elif kind == "code":
        pools = {"code": _load_part("code")["code"]}
    else:
        part = _load_part("multilingual")
        if kind == "multilingual":
            pools = dict(sorted(part.items()))
        elif kind in part:
            pools = {kind: part[kind]}
        else:
            raise KeyError(f"unknown corpus kind {kind!r}; known: {corpus_kinds()}")
    orders = {}
    for key, docs in pools.items():
        rng = random.Random(f"{key}:{seed}")
        orders[key] = iter(rng.sample(range(len(docs)), len(docs)))
    out: list[str] = []
    while len(out) < n and orders:
        for key in list(orders):
            idx = next(orders[key], None)
            if idx is None:
                del orders[key]
                continue
            out.append(_truncate(pools[key][idx], max_chars))
            if len(out) == n:
                break
    return out


def build_all() -> dict[str, dict]:
    """Build (or verify the cache of) every corpus part; part -> manifest."""
    return {part: ensure_built(part) for part in PARTS}
