"""Every output format once: :data:`FORMATS`, by the name ``output.format`` takes.

A format says where an input's output goes and which files make it, how its provenance is
read back (the shard keys it holds, the content hashes recorded when it was written, whether it
is batchtok's output of that input), how a written output is read back whole (what
``--verify`` and a changed stat check), and, for a token file, how its documents are found and
how it is written. The runner asks the format; it never compares format names. Adding a format
is one class here (its writer and reader in :mod:`batchtok.formats`) and one line in
:data:`FORMATS`.

Two kinds exist:

* **rows** (``token_file = False``): Parquet, the input's rows with an ids and a count column
  (:mod:`.parquet`); its provenance is the file's own ``batchtok`` metadata;
* **token files** (``token_file = True``): a trainer's data file of every document's ids one
  after another, an index of their lengths and a provenance sidecar (:mod:`batchtok.formats`),
  always built from the file's parts once all of them are written. MDS is one too: its
  samples are spread over shards whose number varies, so its set is listed as its sidecar
  names it (:meth:`OutputFormat.files` given the primary file's location).

Importing this module imports no pyarrow: the job file's check of ``output.format`` reads it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, ClassVar

if TYPE_CHECKING:
    from batchtok.formats.files import TokenFileWriter

    from ..io.stores import OutPath


class NotBatchtoks(Exception):
    """An output's own provenance does not show it is batchtok's: the message says why."""


class OutputFormat:
    """What the runner needs of one output format (see the module docstring)."""

    name: ClassVar[str]
    token_file: ClassVar[bool]
    #: the name of the file holding the output's provenance, given its primary file
    sidecar_suffix: ClassVar[str] = ""

    def primary(self, output_dir: str | os.PathLike[str], rel: str) -> str:
        """Where input ``rel``'s output goes: its primary file (the one readers open first,
        published last)."""
        raise NotImplementedError

    def primary_of(self, path: str) -> str | None:
        """The primary file of the output of this format that ``path`` names (any file of its
        set, or its name: a Megatron prefix, an MDS directory); None if not one of its."""
        raise NotImplementedError

    def files(self, primary: str | OutPath) -> list[str]:
        """Every file of the output whose primary file is ``primary``, the primary file last
        (a set whose files vary, MDS's shards, is listed as its sidecar names it, read where
        ``primary`` is)."""
        return [str(primary)]

    def writer_name(self, primary: str) -> str:
        """The name the format's writer and sidecar go by (Megatron's prefix)."""
        return primary

    def docs_file(self, primary: str | OutPath) -> str:
        """Where the output's provenance file goes (``output.provenance``): ``NAME.docs.parquet``
        beside it (see :mod:`batchtok.formats.provenance`)."""
        from batchtok.formats.provenance import SUFFIX

        return self.writer_name(str(primary)) + SUFFIX

    def token_dtype(self, vocab_size: int) -> str:
        """The id dtype the format's trainers read for ``vocab_size`` ids ("": the job's
        ``output.dtype``)."""
        return ""

    #: whether an empty document is one (of no ids) in the output; else it is left out
    keeps_empty_documents: ClassVar[bool] = True

    def provenance(self, primary: str | OutPath) -> tuple[dict[str, Any], dict[str, str]]:
        """(the output's ``batchtok`` provenance document, the content hash of each of its
        files as written, by file name); raises OSError or ValueError if it is unreadable."""
        raise NotImplementedError

    def own_provenance(self, primary: OutPath) -> dict[str, Any]:
        """The provenance document of the output at ``primary`` when it reads as batchtok's
        output of this format; raises :class:`NotBatchtoks` saying why not."""
        raise NotImplementedError

    def read_back(self, primary: str | OutPath) -> str | None:
        """Why the output does not read back whole (None if it does)."""
        raise NotImplementedError

    def outdated(self, primary: str | OutPath) -> str | None:
        """Why an output this format wrote from the same shards is not what it writes now (an
        older batchtok wrote it otherwise), None if it is: it is then written again."""
        return None

    # -- token files only ----------------------------------------------------------------------

    def data_file(self, primary: str) -> str:
        """The file holding every document's ids one after another (MDS: its first shard)."""
        raise NotImplementedError

    def token_stream(self, primary: str | OutPath, dtype: str) -> Any:
        """Every document's ids as one stream, read by token offset where the output is
        (``.total``, ``.read(start, length)``, ``.where(offset)``, ``.close()``)."""
        from batchtok.formats.files import FlatTokens

        data = self.data_file(str(primary))
        return FlatTokens(data, dtype, _files(primary))

    def document_lengths(self, primary: str | OutPath) -> tuple[Any, Iterator[int]]:
        """(the index's facts: ``.documents``, ``.dtype``; each document's length in ids, in
        order), read where the output is."""
        raise NotImplementedError

    def writer(
        self, primary: str, tmp_dir: str, dtype: str, provenance: dict | None, **options: Any
    ) -> TokenFileWriter:
        """A streaming writer of the output's file set (see :mod:`batchtok.formats.files`);
        ``options``: the writer's (``pack_length``, ``keep_last``, ``publisher``,
        ``previous``: the files of the set there now)."""
        raise NotImplementedError


def _without_parquet_suffix(output_dir: str | os.PathLike[str], rel: str) -> str:
    # inputs are picked by extension in any case (``A.PARQUET``), so it is dropped in any case
    base = os.path.join(output_dir, rel)
    return base[: -len(".parquet")] if base[-len(".parquet") :].lower() == ".parquet" else base


class _Parquet(OutputFormat):
    name = "parquet"
    token_file = False

    def primary(self, output_dir: str | os.PathLike[str], rel: str) -> str:
        return os.path.join(output_dir, rel)

    def docs_file(self, primary: str | OutPath) -> str:
        from batchtok.formats.provenance import SUFFIX

        return _without_parquet_suffix("", str(primary)) + SUFFIX

    def primary_of(self, path: str) -> str | None:
        return path if path.lower().endswith(".parquet") else None

    def provenance(self, primary: str | OutPath) -> tuple[dict[str, Any], dict[str, str]]:
        from .parquet import read_metadata

        return read_metadata(primary)[0], {}

    def own_provenance(self, primary: OutPath) -> dict[str, Any]:
        import pyarrow as pa

        from .parquet import read_metadata

        try:
            return read_metadata(primary)[0]
        except (OSError, pa.ArrowException) as exc:
            raise NotBatchtoks(f"not a Parquet file batchtok can read: {exc}") from None
        except ValueError:
            raise NotBatchtoks("a Parquet file without batchtok metadata") from None

    def read_back(self, primary: str | OutPath) -> str | None:
        from .parquet import full_read_ok

        return full_read_ok(primary)


class _TokenFiles(OutputFormat):
    """A trainer's file set with a provenance sidecar (:mod:`batchtok.formats.files`)."""

    token_file = True

    @property
    def sidecar_suffix(self) -> str:  # type: ignore[override]
        from batchtok.formats.files import SIDECAR

        return SIDECAR

    def provenance(self, primary: str | OutPath) -> tuple[dict[str, Any], dict[str, str]]:
        from batchtok.formats.files import read_sidecar

        sidecar = read_sidecar(self.writer_name(str(primary)), _files(primary))
        return sidecar.get("provenance") or {}, sidecar.get("xxh3_128") or {}

    def own_provenance(self, primary: OutPath) -> dict[str, Any]:
        from ..io.stores import as_path, options_of

        sidecar = as_path(self.writer_name(str(primary)) + self.sidecar_suffix, options_of(primary))
        unlisted = "no record of this job lists it, and"
        try:
            doc = json.loads(sidecar.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise NotBatchtoks(f"{unlisted} there is no sidecar {sidecar.name}") from None
        except (OSError, ValueError) as exc:
            raise NotBatchtoks(
                f"{unlisted} its sidecar {sidecar.name} is unreadable ({exc})"
            ) from None
        provenance = doc.get("provenance") if isinstance(doc, dict) else None
        if not isinstance(provenance, dict) or doc.get("format") != self.name:
            raise NotBatchtoks(f"its sidecar {sidecar.name} is not batchtok's record of it")
        return provenance

    def read_back(self, primary: str | OutPath) -> str | None:
        try:
            self.read_index(primary)
        except (OSError, ValueError) as exc:
            return str(exc)
        return None

    def read_index(self, primary: str | OutPath) -> Any:
        """The set's index read and checked against its data file, where it is (raises
        OSError or :class:`~batchtok.formats.files.FormatError`)."""
        raise NotImplementedError


class _Megatron(_TokenFiles):
    name = "megatron"

    def primary(self, output_dir: str | os.PathLike[str], rel: str) -> str:
        return _without_parquet_suffix(output_dir, rel) + ".idx"

    def files(self, primary: str | OutPath) -> list[str]:
        primary = str(primary)
        prefix = self.writer_name(primary)
        return [prefix + ".bin", prefix + self.sidecar_suffix, primary]

    def writer_name(self, primary: str) -> str:
        return primary.removesuffix(".idx")

    def primary_of(self, path: str) -> str | None:
        for suffix in (".idx", ".bin"):
            if path.endswith(suffix):
                return path.removesuffix(suffix) + ".idx"
        return path + ".idx" if os.path.isfile(path + ".idx") else None

    def token_dtype(self, vocab_size: int) -> str:
        from batchtok.formats.megatron import megatron_dtype

        return megatron_dtype(vocab_size)

    def data_file(self, primary: str) -> str:
        return self.writer_name(primary) + ".bin"

    def document_lengths(self, primary: str | OutPath) -> tuple[Any, Iterator[int]]:
        from batchtok.formats import megatron

        return megatron.document_lengths(self.writer_name(str(primary)), _files(primary))

    def read_index(self, primary: str | OutPath) -> Any:
        from batchtok.formats import megatron

        return megatron.read_info(self.writer_name(str(primary)), _files(primary))

    def writer(
        self, primary: str, tmp_dir: str, dtype: str, provenance: dict | None, **options: Any
    ) -> TokenFileWriter:
        from batchtok.formats.megatron import MegatronWriter

        return MegatronWriter(
            self.writer_name(primary), tmp_dir, dtype, provenance=provenance, **options
        )


class _Datatrove(_TokenFiles):
    name = "datatrove"
    keeps_empty_documents = False  # as datatrove's pipeline, whose readers skip empty texts

    def primary(self, output_dir: str | os.PathLike[str], rel: str) -> str:
        return _without_parquet_suffix(output_dir, rel) + ".ds"

    def files(self, primary: str | OutPath) -> list[str]:
        primary = str(primary)
        return [primary + ".index", primary + ".metadata", primary + self.sidecar_suffix, primary]

    def docs_file(self, primary: str | OutPath) -> str:
        from batchtok.formats.provenance import SUFFIX

        return str(primary).removesuffix(".ds") + SUFFIX

    def primary_of(self, path: str) -> str | None:
        for suffix in (".ds.index", ".ds.metadata", ".ds"):
            if path.endswith(suffix):
                return path.removesuffix(suffix) + ".ds"
        return None

    def token_dtype(self, vocab_size: int) -> str:
        from batchtok.formats.datatrove import datatrove_dtype

        return datatrove_dtype(vocab_size)

    def data_file(self, primary: str) -> str:
        return primary

    def document_lengths(self, primary: str | OutPath) -> tuple[Any, Iterator[int]]:
        from batchtok.formats import datatrove

        return datatrove.document_lengths(str(primary), files=_files(primary))

    def read_index(self, primary: str | OutPath) -> Any:
        from batchtok.formats import datatrove

        return datatrove.read_info(str(primary), files=_files(primary))

    def writer(
        self, primary: str, tmp_dir: str, dtype: str, provenance: dict | None, **options: Any
    ) -> TokenFileWriter:
        from batchtok.formats.datatrove import DatatroveWriter

        # the metadata names the tokenizer as datatrove's own writer does
        name = str((provenance or {}).get("tokenizer", {}).get("name") or "tokenizer")
        return DatatroveWriter(
            primary, tmp_dir, dtype, name, skip_empty=True, provenance=provenance, **options
        )

    def outdated(self, primary: str | OutPath) -> str | None:
        from batchtok.formats import datatrove

        try:
            empty = datatrove.empty_entries(str(primary), _files(primary))
        except (OSError, ValueError):
            return None  # unreadable: the checks of its content say why
        if not empty:
            return None
        return (
            f"holds {empty} empty document(s) as index entries, written before batchtok left "
            "them out as datatrove's pipeline does"
        )


class _Mds(_TokenFiles):
    """MosaicML streaming's MDS: a directory ``NAME.mds/`` of ``index.json`` (the primary
    file) and its shards, batchtok's sidecar ``index.batchtok.json`` beside them."""

    name = "mds"
    keeps_empty_documents = False  # an ndarray sample cannot be empty

    def primary(self, output_dir: str | os.PathLike[str], rel: str) -> str:
        from batchtok.formats.mds import INDEX

        return os.path.join(_without_parquet_suffix(output_dir, rel) + ".mds", INDEX)

    def _directory(self, primary: str | OutPath) -> str:
        return str(primary).rpartition("/")[0]

    def primary_of(self, path: str) -> str | None:
        from batchtok.formats.mds import INDEX

        if path.endswith("/" + INDEX):
            return path
        if path.endswith(".mds") or os.path.isfile(os.path.join(path, INDEX)):
            return f"{path}/{INDEX}"
        return None

    def files(self, primary: str | OutPath) -> list[str]:
        from batchtok.formats.mds import set_names

        directory = self._directory(primary)
        return [f"{directory}/{name}" for name in set_names(directory, _files(primary))]

    def docs_file(self, primary: str | OutPath) -> str:
        from batchtok.formats.provenance import SUFFIX

        return f"{self._directory(primary)}/{SUFFIX.lstrip('.')}"

    def writer_name(self, primary: str) -> str:
        from batchtok.formats.mds import sidecar_stem

        return sidecar_stem(self._directory(primary))

    def data_file(self, primary: str) -> str:
        from batchtok.formats.mds import shard_name

        return f"{self._directory(primary)}/{shard_name(0)}"

    def token_stream(self, primary: str | OutPath, dtype: str) -> Any:
        from batchtok.formats.mds import MdsTokens

        return MdsTokens(self._directory(primary), _files(primary))

    def document_lengths(self, primary: str | OutPath) -> tuple[Any, Iterator[int]]:
        from batchtok.formats import mds

        return mds.document_lengths(self._directory(primary), _files(primary))

    def read_index(self, primary: str | OutPath) -> Any:
        from batchtok.formats import mds

        return mds.read_info(self._directory(primary), _files(primary))

    def writer(
        self, primary: str, tmp_dir: str, dtype: str, provenance: dict | None, **options: Any
    ) -> TokenFileWriter:
        from batchtok.formats import mds

        # shards of streaming's default size; a limit by tokens would go as max_tokens
        options.setdefault("size_limit", mds.SIZE_LIMIT)
        return mds.MdsWriter(
            self._directory(primary), tmp_dir, dtype, provenance=provenance, **options
        )


def _files(primary: Any) -> Any:
    """How the format readers reach the files beside ``primary`` (an object's with its
    options)."""
    from ..io.stores import files_for, options_of

    return files_for(options_of(primary))


#: Every output format, by its ``output.format`` name; the first is the default.
FORMATS: dict[str, OutputFormat] = {
    f.name: f for f in (_Parquet(), _Megatron(), _Datatrove(), _Mds())
}
DEFAULT_FORMAT = next(iter(FORMATS))
