"""Debian's Chromium, for the tests that render a page: installed with apt-get when it is not
on the machine (as root; ``fetch_all`` does it before the tests), started headless to take a
screenshot of a local page.

The flags are those this machine's closed network needs: without the background-networking
ones Chromium keeps trying to reach Google's hosts.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

PACKAGE = "chromium"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
)


class BrowserUnavailable(RuntimeError):
    """Chromium is not installed and cannot be (not root, or apt-get failed)."""


def chromium() -> str:
    """The Chromium binary, installed from Debian's packages if it is missing."""
    found = shutil.which("chromium")
    if found:
        return found
    if not hasattr(os, "geteuid") or os.geteuid() != 0 or not shutil.which("apt-get"):
        raise BrowserUnavailable(f"Chromium is missing: apt-get install {PACKAGE} (as root)")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    install = ["apt-get", "install", "-y", "--no-install-recommends", PACKAGE]
    proc = subprocess.run(install, capture_output=True, text=True, env=env)
    if proc.returncode != 0:  # the package lists may be missing on a fresh machine
        subprocess.run(["apt-get", "update"], capture_output=True, text=True, env=env)
        proc = subprocess.run(install, capture_output=True, text=True, env=env)
    found = shutil.which("chromium")
    if proc.returncode != 0 or not found:
        raise BrowserUnavailable(f"apt-get install {PACKAGE} failed:\n{proc.stderr[-2000:]}")
    return found


def version() -> str:
    proc = subprocess.run([chromium(), "--version"], capture_output=True, text=True)
    return proc.stdout.strip()


def screenshot(page: Path, out: Path, size: tuple[int, int] = (1400, 1400)) -> Path:
    """Render the local ``page`` headless into the PNG ``out`` (a window of ``size``)."""
    with tempfile.TemporaryDirectory(prefix="btchrome-") as profile:
        command = [
            chromium(),
            *FLAGS,
            f"--user-data-dir={profile}",
            f"--window-size={size[0]},{size[1]}",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ]
        proc = subprocess.run(command, capture_output=True, text=True, timeout=120)
    if not out.is_file():
        raise RuntimeError(f"Chromium drew nothing ({proc.returncode}):\n{proc.stderr[-2000:]}")
    return out


def drawn(page: Path, colors: list[str], work: Path) -> dict[str, tuple[int, int]]:
    """{color: (pixels of it, rows holding it)} in a screenshot of ``page`` (colors as
    ``#rrggbb``): what the page drew in each series' color."""
    from PIL import Image

    pixels = Image.open(screenshot(page, work / "page.png")).convert("RGB")
    width = pixels.size[0]
    wanted = {tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)): c for c in colors}
    counts = dict.fromkeys(colors, 0)
    rows: dict[str, set[int]] = {c: set() for c in colors}
    for i, rgb in enumerate(pixels.get_flattened_data()):
        color = wanted.get(rgb)
        if color is not None:
            counts[color] += 1
            rows[color].add(i // width)
    return {c: (counts[c], len(rows[c])) for c in colors}
