"""Make the golden files of this folder with Megatron's and datatrove's own writers.

Not run by the tests (they only read the files it made). Run it in a throw-away venv that
has ``datatrove==0.10.1`` and ``tokenizers`` (datatrove imports it) but not batchtok's
venv, with a Megatron-LM checkout at tag ``core_v0.19.0``::

    python3 -m venv /tmp/dtvenv && /tmp/dtvenv/bin/pip install datatrove==0.10.1 tokenizers
    /tmp/dtvenv/bin/python tests/formats/data/make_golden.py MEGATRON_CHECKOUT OUT_DIR

Megatron's ``indexed_dataset.py`` imports torch and some of megatron.core at module level but
uses none of them to write or read local files, so the script loads it beside small stand-ins
for those modules (torch's ``Dataset`` base class, a no-op logger, ``open`` for local paths).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile

import numpy

# The documents of each golden file (also in test_megatron.py and test_datatrove.py).
MEGATRON = {
    "mg_example": ("uint16", [[1, 2, 3, 0], [4, 5, 0]]),
    "mg_empty_docs": ("uint16", [[], [1, 2, 3, 0], [], [], [65499, 0], []]),
    "mg_int32": ("int32", [[70000, 1, 0], [], [2**31 - 1, 0]]),
}
DATATROVE = {
    "dt_small": (2, [[1, 2, 3, 0], [], [4, 5, 0], [65535, 7, 0]]),
    "dt_big": (4, [[1, 2, 3, 0], [], [70000, 5, 0], [4294967295, 0]]),
}
STUBS = {
    "torch/__init__.py": "from . import utils\nTensor = object\n",
    "torch/utils/__init__.py": "from . import data\n",
    "torch/utils/data/__init__.py": "class Dataset:\n    pass\n",
    "megatron/__init__.py": "",
    "megatron/core/__init__.py": "",
    "megatron/core/datasets/__init__.py": "",
    "megatron/core/utils.py": "def log_single_rank(*args, **kwargs):\n    pass\n",
    "megatron/core/msc_utils.py": (
        "class MultiStorageClientFeature:\n    is_enabled = staticmethod(lambda: False)\n"
        "class maybe_msc:\n    open = staticmethod(open)\n"
    ),
    "megatron/core/datasets/object_storage_utils.py": (
        "S3Config = ObjectStorageConfig = object\n"
        "is_object_storage_path = lambda path: False\n"
        "cache_index_file = dataset_exists = get_index_cache_path = None\n"
        "get_object_storage_access = parse_s3_path = None\n"
    ),
}


def megatron_module(checkout: str, stubs: str):
    for name, text in STUBS.items():
        os.makedirs(os.path.dirname(os.path.join(stubs, name)), exist_ok=True)
        with open(os.path.join(stubs, name), "w") as f:
            f.write(text)
    module = "megatron/core/datasets/indexed_dataset.py"
    shutil.copy(os.path.join(checkout, module), os.path.join(stubs, module))
    sys.path.insert(0, stubs)
    from megatron.core.datasets import indexed_dataset

    return indexed_dataset


def main(checkout: str, out: str) -> None:
    from datatrove.pipeline.tokens.tokenizer import TokenizedFile

    with tempfile.TemporaryDirectory() as stubs:
        m = megatron_module(checkout, stubs)
        for name, (dtype, docs) in MEGATRON.items():
            builder = m.IndexedDatasetBuilder(
                os.path.join(out, name + ".bin"), getattr(numpy, dtype)
            )
            for doc in docs:  # as tools/preprocess_data.py: one sentence per non-empty document
                builder.add_document(doc, [len(doc)] if doc else [])
            builder.finalize(os.path.join(out, name + ".idx"))
    for name, (size, docs) in DATATROVE.items():
        f = TokenizedFile(out, name + ".ds", tokenizer_name_or_path="gpt2", token_size=size,
                          save_final_metadata=True)  # fmt: skip
        for doc in docs:
            f.write(doc, None)
        f.close()


if __name__ == "__main__":
    main(*sys.argv[1:3])
