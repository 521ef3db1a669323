"""Finding a model's tokenizer.json on this machine, for ``Tokenizer.from_pretrained``.

batchtok never downloads: ``identifier`` is a local model directory, or a Hugging Face Hub
repository id already in the local cache that ``huggingface_hub`` keeps::

    $HF_HUB_CACHE (else $HF_HOME/hub, else ~/.cache/huggingface/hub)
        models--{org}--{name}/refs/{revision}            (holds a commit hash)
        models--{org}--{name}/snapshots/{commit}/tokenizer.json

A revision that is itself a commit hash names its snapshot directly.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

FILENAME = "tokenizer.json"
_COMMIT = re.compile(r"[0-9a-f]{40}")


def hub_cache() -> Path:
    """The Hugging Face Hub cache directory, as ``huggingface_hub`` chooses it."""
    cache = os.environ.get("HF_HUB_CACHE")
    if cache:
        return Path(cache).expanduser()
    home = os.environ.get("HF_HOME")
    if home:
        return Path(home).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def find_tokenizer_file(identifier: str, revision: str = "main") -> Path:
    """The local tokenizer.json of ``identifier`` at ``revision``; FileNotFoundError naming
    every place looked at when there is none."""
    looked: list[Path] = []
    directory = Path(identifier).expanduser()
    if directory.is_dir():
        candidate = directory / FILENAME
        if candidate.is_file():
            return candidate
        looked.append(candidate)
    repo = hub_cache() / ("models--" + identifier.replace("/", "--"))
    commit: str | None = None
    ref = repo / "refs" / revision
    if ref.is_file():
        commit = ref.read_text(encoding="utf-8").strip()
    else:
        looked.append(ref)
        if _COMMIT.fullmatch(revision):
            commit = revision
    if commit is not None:
        candidate = repo / "snapshots" / commit / FILENAME
        if candidate.is_file():
            return candidate
        looked.append(candidate)
    raise FileNotFoundError(
        f"no {FILENAME} for {identifier!r} at revision {revision!r} on this machine; looked "
        f"at: {', '.join(map(str, looked))}. batchtok does not download: fetch the model "
        "first (e.g. `huggingface-cli download` or huggingface_hub.snapshot_download), or "
        "pass its local directory"
    )
