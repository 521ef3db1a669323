"""Make the golden MDS directories of ``tests/formats/data/`` with streaming's own
``MDSWriter`` (mosaicml-streaming 0.13.0), fed as llm-foundry's ``convert_dataset_hf
--concat_tokens`` feeds it: one column ``tokens`` of ``ndarray:int32`` (here also
``ndarray:uint16``), no compression, no hashes.

Not run by the tests (they only read what it made)::

    .venv/bin/python -m tools.make_mds_golden [OUT_DIR]   # default: tests/formats/data

``MDSWriter`` needs torch; the writer runs in the environment of
:mod:`tests.support.streaming` (built on first use: the local CPU build of torch, streaming
without torchvision and transformers, whose package ``__init__`` files it skips).
"""

from __future__ import annotations

import json
import pathlib
import shutil
import sys

from tests.support import streaming

DATA = pathlib.Path(__file__).resolve().parents[1] / "tests" / "formats" / "data"


def concat_tokens(docs: list[list[int]], length: int) -> list[list[int]]:
    """Rows of ``length`` ids from the documents one after another, the short rest dropped
    (what ``--concat_tokens length`` gives, its EOS already in each document)."""
    flat = [i for doc in docs for i in doc]
    return [flat[at : at + length] for at in range(0, len(flat) - length + 1, length)]


# name -> (dtype, size_limit, the samples). Also in tests/formats/test_mds.py.
GOLDEN: dict[str, tuple[str, int | None, list[list[int]]]] = {
    # the documented example: two documents, one shard
    "mds_example": ("int32", 1 << 26, [[1, 2, 3, 0], [4, 5, 0]]),
    # shards of at most 200 bytes: the first sample does not fit beside the 184-byte header,
    # so shard 0 is empty, as MDSWriter leaves it; a 100-id sample alone in its shard
    "mds_small_shards": ("int32", 200, [[1, 2, 3, 0], [4, 5, 0], list(range(100)), [7]]),
    # uint16 ids, one sample with a two-byte shape (300 ids), the largest id
    "mds_uint16": ("uint16", 1 << 26, [[65535, 0], list(range(300)), [1]]),
    # packed rows of 8 ids, llm-foundry's --concat_tokens 8, two to a shard of 300 bytes
    "mds_packed": (
        "int32",
        300,
        concat_tokens([[5, 6, 7, 0], [8, 0], list(range(10, 30)) + [0], [2**31 - 1, 0]], 8),
    ),
}

WRITE = """
import json, sys
import numpy as np
from streaming.base.format.mds.writer import MDSWriter

out, cases = sys.argv[1], json.loads(sys.argv[2])
for name, (dtype, size_limit, samples) in cases.items():
    columns = {"tokens": f"ndarray:{dtype}"}
    with MDSWriter(columns=columns, out=f"{out}/{name}", size_limit=size_limit) as writer:
        for ids in samples:
            writer.write({"tokens": np.asarray(ids, dtype=dtype)})
"""


def main(out: str = str(DATA)) -> None:
    for name in GOLDEN:
        shutil.rmtree(pathlib.Path(out) / name, ignore_errors=True)  # MDSWriter refuses
    streaming.run(WRITE, out, json.dumps(GOLDEN))
    for name in GOLDEN:
        files = sorted(p.name for p in (pathlib.Path(out) / name).iterdir())
        print(name, files)


if __name__ == "__main__":
    main(*sys.argv[1:2])
