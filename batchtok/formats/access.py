"""How a format's reader opens and sizes files (:class:`FileAccess`); kept apart from
:mod:`.files` so that naming it imports nothing heavy (the runner's job file reader does)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import BinaryIO


def _open_local(path: str) -> BinaryIO:
    return open(path, "rb")


@dataclass(frozen=True)
class FileAccess:
    """How a reader opens and sizes a format's files: local files by default; the runner
    passes its own for files in object storage. ``open`` gives a seekable binary file, and
    both raise FileNotFoundError for a file that is not there."""

    open: Callable[[str], BinaryIO] = _open_local
    size: Callable[[str], int] = os.path.getsize

    def read_text(self, path: str) -> str:
        with self.open(path) as f:
            return f.read().decode("utf-8")


LOCAL = FileAccess()
