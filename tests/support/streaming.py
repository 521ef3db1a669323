"""MosaicML ``streaming`` (the MDS format's own writer and reader) in a virtual environment of
its own, for the MDS tests and ``tools/make_mds_golden.py``.

It cannot join the test extra: mosaicml-streaming 0.13.0 requires ``transformers<5`` (the
extra pins 5.24.0) and ``numpy<2.2``, and its ``torchvision`` requirement fails to import beside
the local CPU build of torch. So the environment, built once in
``$BATCHTOK_CACHE/streaming-0.13.0/`` (about 45 s: the local ``torch==2.13.0+cpu`` wheel,
named with its ``+cpu`` label so that pip can never take PyPI's CUDA build instead), holds
``mosaicml-streaming`` installed without its requirements plus those its MDS writer and
``StreamingDataset`` import; ``torchvision``, ``transformers`` and the cloud clients are left
out. :data:`PRELUDE` imports streaming's modules without running ``streaming/__init__.py``
and ``streaming/base/__init__.py``, which import them (``streaming.vision``,
``streaming.base.dataloader``).

The scripts run in a subprocess of that environment (:func:`run`), reading and printing JSON.
"""

from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import venv
from typing import Any

from tests.support.fixtures import cache_root, file_lock

VERSION = "0.13.0"
# what streaming's MDS writer and StreamingDataset import, as its requirements bound them
REQUIREMENTS = (
    "torch==2.13.0+cpu",
    "numpy>=1.21.5,<2.2.0",
    "xxhash>=3.0.0,<4",
    "Brotli>=1.0.9",
    "python-snappy>=0.6.1,<1",
    "zstd>=1.5.2.5,<2",
    "tqdm>=4.64.0,<5",
    "catalogue>=2,<3",
    "pillow",
)

#: imports streaming's modules, skipping the package __init__s that import torchvision and
#: transformers: ``streaming`` and ``streaming.base`` stand in as bare packages
PRELUDE = """
import importlib.util, os, sys, types
_root = os.path.dirname(importlib.util.find_spec("streaming").origin)
for _name, _path in (("streaming", _root), ("streaming.base", os.path.join(_root, "base"))):
    _package = types.ModuleType(_name)
    _package.__path__ = [_path]
    sys.modules[_name] = _package
"""

READ = """
import json, sys, warnings
from streaming.base.dataset import StreamingDataset
from streaming.base.stream import Stream
from streaming.base.util import clean_stale_shared_memory

warnings.simplefilter("ignore")  # a shard of no samples: numpy's division by zero, harmless
clean_stale_shared_memory()
directories = json.loads(sys.argv[1])
streams = [Stream(local=d) for d in directories]
dataset = StreamingDataset(streams=streams, shuffle=False, batch_size=1)
samples = [dataset[i]["tokens"] for i in range(len(dataset))]
print(json.dumps({
    "dtypes": sorted({str(s.dtype) for s in samples}),
    "iterated": [s["tokens"].tolist() for s in dataset],
    "samples": [s.tolist() for s in samples],
}))
"""


class StreamingUnavailable(RuntimeError):
    """The environment could not be built: the message says what failed."""


def home() -> pathlib.Path:
    return cache_root() / f"streaming-{VERSION}"


def python() -> pathlib.Path:
    """The environment's interpreter, the environment built first if it is not there."""
    root = home()
    interpreter = root / "venv" / "bin" / "python"
    done = root / "done"
    if done.is_file():
        return interpreter
    root.mkdir(parents=True, exist_ok=True)
    with file_lock(root / ".lock"):
        if done.is_file():
            return interpreter
        venv.EnvBuilder(clear=True, with_pip=True).create(root / "venv")
        pip = [str(interpreter), "-m", "pip", "install", "--quiet", "--only-binary=:all:"]
        for command in (
            [*pip, *REQUIREMENTS],
            [*pip, "--no-deps", f"mosaicml-streaming=={VERSION}"],
        ):
            found = subprocess.run(command, capture_output=True, text=True)
            if found.returncode:
                raise StreamingUnavailable(
                    f"`{' '.join(command)}` failed ({found.returncode}): "
                    f"{found.stderr.strip()[-2000:]}"
                )
        done.write_text(f"mosaicml-streaming {VERSION}\n")
    return interpreter


def run(script: str, *args: str) -> str:
    """Run ``script`` (after :data:`PRELUDE`) in the environment; its standard output."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYTHON")}
    found = subprocess.run(
        [str(python()), "-c", PRELUDE + script, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if found.returncode:
        raise AssertionError(f"streaming's script failed ({found.returncode}):\n{found.stderr}")
    return found.stdout


def read_back(*directories: str | os.PathLike[str]) -> dict[str, Any]:
    """What ``StreamingDataset(streams=[Stream(local=d) ...], shuffle=False)`` reads from the
    MDS ``directories``: ``samples`` (each sample's ``tokens``, by index), ``iterated`` (the
    same by iteration) and the ids' ``dtypes``."""
    names = [os.fspath(d) for d in directories]
    return json.loads(run(READ, json.dumps(names)))


if __name__ == "__main__":  # python -m tests.support.streaming: build it, say where
    print(python())
    sys.exit(0)
