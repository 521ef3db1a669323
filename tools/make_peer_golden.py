"""Make ``tests/formats/data/peers/``: the token files that datatrove's and Megatron-LM's own
pipelines write for one small sample, to hold batchtok's trainer formats to.

The sample (``sample.jsonl``, written here from :data:`SAMPLE`) has empty documents (first,
in the middle, last), a one-token document, a document that is only the special token
``<|endoftext|>``, a plain sentence, a text holding ``<|endoftext|>`` between words, and one
of a single space. The tokenizer is GPT-2's, ``configs/tokenizers/gpt2/tokenizer.json``.

* **datatrove** (``datatrove==0.10.1``): its own pipeline, ``JsonlReader`` then
  ``DocumentTokenizer`` (which writes through ``TokenizedFile``), run by
  ``LocalPipelineExecutor`` with one task; ``shuffle_documents=False`` (batchtok keeps the
  input's order), with ``eos_token=None`` and with ``eos_token="<|endoftext|>"``. It is run in
  a folder holding the tokenizer as ``tokenizer.json`` and given that relative name, so the
  ``.ds.metadata`` names the tokenizer as batchtok's does (the file's name).
* **Megatron-LM** (tag ``core_v0.19.0``): ``tools/preprocess_data.py`` itself, in a
  subprocess, ``--tokenizer-type HuggingFaceTokenizer`` over a folder of the tokenizer and a
  ``tokenizer_config.json`` naming ``<|endoftext|>`` as its EOS (as GPT-2's hub folder does;
  preprocess_data takes ``--append-eod``'s id from it), ``--workers 1``, without and with
  ``--append-eod``.

The files are renamed (``datatrove/plain.ds``, ``megatron/eod.bin``...) and ``peers.json``
says what made each one: the peer, its version, the options, the file's original name.

Not run by the tests (they compare batchtok's output with what it made). Run it with a Python
that has the peers, from the repository root. Megatron-LM needs torch (this machine's
``pip install torch==2.13.0`` takes a local CPU build, for Python 3.11), ``triton`` (imported
by ``megatron.core`` at import time) and ``transformers``; it is not installed, it runs from
a checkout::

    python3.11 -m venv /tmp/peers
    /tmp/peers/bin/pip install torch==2.13.0 triton transformers datatrove==0.10.1 orjson
    # a Megatron-LM checkout at core_v0.19.0 in MEGATRON
    /tmp/peers/bin/python tools/make_peer_golden.py MEGATRON [OUT_DIR]

Megatron's training code (which preprocess_data imports for its tokenizer arguments) imports
``typing.override``, new in Python 3.12: under 3.11 the subprocess gets a ``sitecustomize``
that sets it to ``typing_extensions.override``, the same decorator.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TOKENIZER = ROOT / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"
DEFAULT_OUT = ROOT / "tests" / "formats" / "data" / "peers"
EOS = "<|endoftext|>"

#: The sample's texts, in order (also read by tests/formats/test_peer_fidelity.py, from the
#: sample.jsonl written here).
SAMPLE = [
    "",  # empty, first
    "Hello",  # one token
    EOS,  # only the special token
    "The quick brown fox jumps over the lazy dog.",
    "",  # empty, in the middle
    f"before{EOS}after",  # the EOS string inside a text
    " ",  # one space: not empty
    "",  # empty, last
]

MEGATRON_TAG = "core_v0.19.0"
# GPT-2's tokenizer_config.json on the hub names these; AutoTokenizer reads the EOS from it
TOKENIZER_CONFIG = {
    "tokenizer_class": "GPT2Tokenizer",
    "bos_token": EOS,
    "eos_token": EOS,
    "unk_token": EOS,
    "model_max_length": 1024,
}
SHIM = """import typing
if not hasattr(typing, "override"):
    import typing_extensions
    typing.override = typing_extensions.override
"""


def write_sample(path: Path) -> None:
    with open(path, "w", encoding="utf-8") as f:
        for text in SAMPLE:
            f.write(json.dumps({"text": text}) + "\n")


def run_datatrove(sample: Path, out: Path, work: Path) -> dict:
    from datatrove.executor import LocalPipelineExecutor
    from datatrove.pipeline.readers import JsonlReader
    from datatrove.pipeline.tokens import DocumentTokenizer

    made = {}
    for name, eos in (("plain", None), ("eos", EOS)):
        folder = work / f"datatrove-{name}"
        folder.mkdir()
        shutil.copyfile(TOKENIZER, folder / "tokenizer.json")
        cwd = os.getcwd()
        os.chdir(folder)  # the tokenizer's relative name is what the .metadata records
        try:
            LocalPipelineExecutor(
                pipeline=[
                    JsonlReader(str(sample.parent), glob_pattern=sample.name),
                    DocumentTokenizer(
                        output_folder=str(folder / "out"),
                        tokenizer_name_or_path="tokenizer.json",
                        eos_token=eos,
                        shuffle_documents=False,
                        save_filename="sample",
                    ),
                ],
                tasks=1,
                workers=1,
                logging_dir=str(folder / "logs"),
            ).run()
        finally:
            os.chdir(cwd)
        written = sorted(p.name for p in (folder / "out").iterdir())
        files = {}
        for original in written:
            suffix = original[len("sample_00000_unshuffled") :]  # .ds, .ds.index, .ds.metadata
            target = out / "datatrove" / f"{name}{suffix}"
            shutil.copyfile(folder / "out" / original, target)
            files[target.relative_to(out).as_posix()] = original
        made[name] = {
            "files": files,
            "options": {
                "pipeline": "JsonlReader(sample.jsonl) -> DocumentTokenizer",
                "tokenizer_name_or_path": "tokenizer.json",
                "eos_token": eos,
                "shuffle_documents": False,
                "save_filename": "sample",
                "executor": "LocalPipelineExecutor(tasks=1, workers=1)",
            },
        }
    return made


def run_megatron(checkout: Path, sample: Path, out: Path, work: Path) -> dict:
    tokenizer = work / "gpt2"
    tokenizer.mkdir()
    shutil.copyfile(TOKENIZER, tokenizer / "tokenizer.json")
    (tokenizer / "tokenizer_config.json").write_text(json.dumps(TOKENIZER_CONFIG, indent=1))
    env = dict(os.environ)
    if sys.version_info < (3, 12):
        shim = work / "shim"
        shim.mkdir()
        (shim / "sitecustomize.py").write_text(SHIM)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(shim), env.get("PYTHONPATH")]))
    made = {}
    for name, extra in (("plain", []), ("eod", ["--append-eod"])):
        prefix = work / f"megatron-{name}" / "sample"
        prefix.parent.mkdir()
        args = [
            "--input", str(sample),
            "--output-prefix", str(prefix),
            "--tokenizer-type", "HuggingFaceTokenizer",
            "--tokenizer-model", str(tokenizer),
            "--workers", "1",
            *extra,
        ]  # fmt: skip
        subprocess.run(
            [sys.executable, "tools/preprocess_data.py", *args],
            cwd=checkout,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
        files = {}
        for suffix in (".bin", ".idx"):
            original = f"sample_text_document{suffix}"
            target = out / "megatron" / f"{name}{suffix}"
            shutil.copyfile(prefix.parent / original, target)
            files[target.relative_to(out).as_posix()] = original
        made[name] = {
            "files": files,
            "options": {
                "command": "python tools/preprocess_data.py "
                + " ".join(a if not a.startswith("/") else Path(a).name for a in args),
                "tokenizer_config.json": TOKENIZER_CONFIG,
            },
        }
    return made


def megatron_commit(checkout: Path) -> str:
    try:
        done = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=checkout, capture_output=True, text=True, check=True
        )
        return done.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""  # an export without its history


def main(checkout: str, out_dir: str | None = None) -> None:
    out = Path(out_dir) if out_dir else DEFAULT_OUT
    shutil.rmtree(out, ignore_errors=True)
    (out / "datatrove").mkdir(parents=True)
    (out / "megatron").mkdir()
    sample = out / "sample.jsonl"
    write_sample(sample)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        datatrove_runs = run_datatrove(sample, out, work)
        megatron_runs = run_megatron(Path(checkout), sample, out, work)
    description = {
        "sample": {"file": "sample.jsonl", "texts": SAMPLE},
        "tokenizer": "configs/tokenizers/gpt2/tokenizer.json",
        "made_by": "tools/make_peer_golden.py",
        "python": sys.version.split()[0],
        "peers": {
            "datatrove": {
                "version": metadata.version("datatrove"),
                "tokenizers": metadata.version("tokenizers"),
                "runs": datatrove_runs,
            },
            "megatron": {
                "version": MEGATRON_TAG,
                "commit": megatron_commit(Path(checkout)),
                "script": "tools/preprocess_data.py",
                "transformers": metadata.version("transformers"),
                "torch": metadata.version("torch"),
                "runs": megatron_runs,
            },
        },
    }
    text = json.dumps(description, indent=1, ensure_ascii=False) + "\n"
    (out / "peers.json").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    main(*sys.argv[1:3])
