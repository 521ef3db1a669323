"""The typed job: :class:`Job`, every setting validated and resolved, as the run reads it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import Problem
from ..io.arrow_fs import StorageOptions
from ..io.stores import OutPath
from ..outputs.formats import DEFAULT_FORMAT, FORMATS
from .settings import SETTINGS, STALL_TIMEOUT

# -- the job -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Job:
    """A validated job. Paths are absolute; ``sources`` says where each key was set."""

    file: Path | None
    name: str
    inputs: tuple[str, ...]
    text_column: str
    pair_column: str | None
    tokenizer_path: OutPath  # a local file or an s3:// object
    add_special_tokens: bool
    special_tokens_in_text: str
    max_length: int | str  # a count, or "tokenizer" / "none"
    truncation_strategy: str
    truncation_direction: str
    output_dir: OutPath  # a local directory or an s3:// prefix
    ids_column: str
    count_column: str
    dtype: str
    compression: str
    keep_columns: tuple[str, ...] | None
    row_group_mb: float
    workers: int
    bad_rows: str
    shard_mb: float
    batch_mb: float
    cache_mb: float
    storage: StorageOptions = StorageOptions()
    format: str = DEFAULT_FORMAT
    append_eos: bool | str = False
    pack_length: int | None = None
    pack_keep_last: bool = True
    position_ids: bool = False
    provenance: bool = False
    id_column: str = ""
    layout: str = "mirror"
    max_tokens_per_file: int | None = None
    shuffle_seed: int | None = None
    shuffle_window: int | None = 1_000_000_000
    check_sample_mb: float = 2.0
    group_column: str = ""
    tokenizers: Mapping[str, str] = field(default_factory=dict)  # tokenizer.paths
    check_seed: int = 0
    executor: str = "local"
    ray_address: str = ""
    stall_timeout: float = STALL_TIMEOUT
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, repr=False)

    def problem(self, key: str, message: str) -> Problem:
        return Problem(key, message, self.sources.get(key, ""))

    def encode_options(self) -> dict[str, Any]:
        """The encode settings as the job gives them (the cache key holds the options they
        resolve to with the tokenizer: see :func:`batchtok.runner.exec.encode.applied_options`)."""
        return {
            "add_special_tokens": self.add_special_tokens,
            "special_tokens_in_text": self.special_tokens_in_text,
            "max_length": self.max_length,
            "truncation_strategy": self.truncation_strategy,
            "truncation_direction": self.truncation_direction,
        }

    def output_format(self) -> dict[str, Any]:
        """The options that decide the output file's bytes besides the ids (the settings
        declared ``output=True``): in every cache key and output's metadata."""
        doc = {s.attribute: getattr(self, s.attribute) for s in SETTINGS if s.output}
        for s in SETTINGS:
            if s.key_when_set and getattr(self, s.attribute) != s.default:
                doc[s.attribute] = getattr(self, s.attribute)
        if self.pack_length is not None and not FORMATS[self.format].token_file:
            doc["packed_columns"] = list(self.packed_columns())  # (added with seq_lens)
        return doc

    def packed_columns(self) -> tuple[str, ...]:
        """The columns packed Parquet rows carry besides the ids and the count."""
        return ("seq_lens", "position_ids") if self.position_ids else ("seq_lens",)

    def for_tokenizer(self, name: str) -> Job:
        """The job of one of ``tokenizer.paths``' tokenizers: its file, its outputs in
        ``output.dir/NAME``."""
        from dataclasses import replace

        from ..io.stores import as_path

        return replace(
            self,
            tokenizer_path=as_path(self.tokenizers[name], self.storage),
            output_dir=self.output_dir / name,
            tokenizers={},
            sources={**self.sources, "tokenizer.path": self.sources.get("tokenizer.paths", "")},
        )

    @property
    def derived_output(self) -> bool:
        """The output is built from parts when a file is complete (a trainer format, or packed
        rows), not row groups copied in place."""
        return FORMATS[self.format].token_file or self.pack_length is not None or self.units

    @property
    def units(self) -> bool:
        """The outputs are cut from streams of documents (:mod:`batchtok.runner.plan.units`):
        the whole job's, or each input's cut into numbered files or shuffled."""
        return (
            self.layout == "stream"
            or self.max_tokens_per_file is not None
            or self.shuffle_seed is not None
        )

    def layout_options(self) -> dict[str, Any]:
        """The options that decide how a stream of documents becomes files (in each file's
        provenance and key, not in the shards')."""
        return {
            "layout": self.layout,
            "max_tokens_per_file": self.max_tokens_per_file,
            "shuffle_seed": self.shuffle_seed,
            "shuffle_window": self.shuffle_window if self.shuffle_seed is not None else None,
        }

    def describe(self) -> dict[str, Any]:
        """Every setting, as JSON-friendly values (for the run summary)."""
        return {
            "name": self.name,
            "file": str(self.file) if self.file else None,
            "inputs": list(self.inputs),
            "text_column": self.text_column,
            "pair_column": self.pair_column,
            "tokenizer": str(self.tokenizer_path),
            "encode": self.encode_options(),
            "output": {
                "dir": str(self.output_dir),
                **self.output_format(),
                "keep_columns": "all" if self.keep_columns is None else list(self.keep_columns),
            },
            "run": {
                "workers": self.workers or "auto",
                "executor": self.executor,
                "shard_mb": self.shard_mb,
                "batch_mb": self.batch_mb,
                "cache_mb": self.cache_mb,
                "stall_timeout": self.stall_timeout,
            },
        }
