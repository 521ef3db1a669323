"""``batchtok.verify(OUTPUT, TOKENIZER)``: the one-line check training code makes before it
trusts ids, that an output was made by exactly this tokenizer file (and, if named, these
options).

An output carries its contract: a Parquet output in its ``batchtok`` key-value metadata, a
trainer format's file set in its sidecar (``P.batchtok.json``, ``N.ds.batchtok.json``,
``N.mds/index.batchtok.json``). It records the tokenizer file's sha256, the encode and output
options as applied, the vocabulary's size and largest id, the dtype of the ids and the EOS
appended. :func:`verify` reads it, hashes the tokenizer file, compares, and raises
:class:`VerificationError` saying every difference; it returns the contract when all agree.

Options are named as the job keys' last part: ``add_special_tokens``,
``special_tokens_in_text``, ``max_length``, ``append_eos``, ``pack_length``, ``format``,
``dtype``...; a name the output does not record is a ``TypeError`` listing those it does.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from .io.stores import as_path
from .outputs.formats import FORMATS


class VerificationError(ValueError):
    """An output that was not made by the tokenizer file (or the options) it was checked
    against, or that carries no batchtok contract; the message says why."""


def _primary(output: str | os.PathLike[str]) -> tuple[str, str]:
    """(the format, the output's primary file) of an output named by any of its files (or a
    Megatron prefix, an MDS directory, a sidecar)."""
    from batchtok.formats.files import SIDECAR

    path = os.fspath(output).rstrip("/").removesuffix(SIDECAR)
    for name, output_format in FORMATS.items():
        primary = output_format.primary_of(path)
        if primary is not None:
            return name, primary
    raise VerificationError(f"{path}: not an output batchtok writes (no format knows its name)")


def contract(output: str | os.PathLike[str]) -> dict[str, Any]:
    """The ``batchtok`` metadata document of an output (its Parquet metadata or sidecar)."""
    import pyarrow as pa

    name, primary = _primary(output)
    try:
        doc, _ = FORMATS[name].provenance(as_path(primary))
    except FileNotFoundError:
        raise VerificationError(f"{primary}: no such output") from None
    except (OSError, ValueError, pa.ArrowException) as exc:
        raise VerificationError(
            f"{primary}: its batchtok metadata cannot be read ({exc})"
        ) from None
    if not isinstance(doc, dict) or doc.get("engine") != "batchtok":
        raise VerificationError(f"{primary}: carries no batchtok metadata")
    return doc


def verify(
    output: str | os.PathLike[str], tokenizer: str | os.PathLike[str] | bytes, **options: Any
) -> dict[str, Any]:
    """Raise :class:`VerificationError` unless ``output`` was made by exactly the tokenizer
    file ``tokenizer`` (a path, or its bytes) and, for each option named, that value; returns
    the output's contract (see the module docstring)."""
    doc = contract(output)
    data = tokenizer if isinstance(tokenizer, bytes) else as_path(tokenizer).read_bytes()
    sha256 = hashlib.sha256(data).hexdigest()
    made_by = doc.get("tokenizer") or {}
    differ = []
    if made_by.get("sha256") != sha256:
        shown = "its bytes" if isinstance(tokenizer, bytes) else os.fspath(tokenizer)
        differ.append(
            f"it was made by {made_by.get('name')!s} (sha256 {str(made_by.get('sha256'))[:16]}"
            f"...), not by {shown} (sha256 {sha256[:16]}...)"
        )
    recorded = {**(doc.get("output") or {}), **(doc.get("encode") or {})}
    unknown = sorted(set(options) - set(recorded))
    if unknown:
        raise TypeError(
            f"{', '.join(unknown)}: not an option the output records (it records "
            f"{', '.join(sorted(recorded))})"
        )
    for key, want in sorted(options.items()):
        if recorded[key] != want:
            differ.append(f"{key} is {json.dumps(recorded[key])}, not {json.dumps(want)}")
    if differ:
        raise VerificationError(f"{os.fspath(output)}: " + "; ".join(differ))
    return doc
