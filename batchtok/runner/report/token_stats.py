"""Token statistics of a job's outputs: what the ids look like, not how the run went.

Documents, tokens, bytes per token, how often the model fell back to its unknown token or to
byte tokens, the special-token strings met inside the text, the longest documents and a
histogram of document lengths in tokens. A worker counts them for each shard it encodes; they
are kept per shard (in the part's record and the input's record), so a re-run that finds
shards complete still reports the statistics of the whole output. The report goes into the
run summary (``token_stats``), and a chart of the histogram is written beside it,
``_batchtok_token_stats.svg`` (a few KB of SVG written here, opened by any browser).
"""

from __future__ import annotations

import heapq
import logging
from array import array
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

try:
    import numpy as np
except ImportError:  # a declared dependency, but a Parquet run works without it
    np = None

LONGEST = 10  # documents listed by length
MAX_GROUPS = 1000  # report.group_column's values counted apart; the rest together
OTHER_GROUPS = "(others)"
VECTOR_ROWS = 64  # rows from which add_documents counts with numpy
CHART_NAME = "_batchtok_token_stats.svg"
# The name the chart had when batchtok drew it with matplotlib: a re-run removes such a chart,
# which would otherwise stand beside the new one with older counts.
OLD_CHART_NAME = "_batchtok_token_stats.png"

log = logging.getLogger("batchtok.runner")


def bucket_label(bits: int) -> str:
    """The histogram bucket of lengths whose bit length is ``bits``: "0", "1", "2-3", ..."""
    if bits <= 1:
        return str(bits)
    return f"{1 << (bits - 1)}-{(1 << bits) - 1}"


@dataclass
class TokenStats:
    """Token counts of some documents; ``merge`` is associative and commutative (the longest
    documents are ranked by length, then file and row)."""

    documents: int = 0  # rows written with ids (bad rows with null ids are not documents)
    tokens: int = 0
    text_bytes: int = 0  # UTF-8 bytes of those documents' text (and pair)
    unknown: int = 0  # ids of the model's unknown token
    byte_fallback: int = 0  # ids of byte tokens (<0x00>..<0xFF>) of a byte-fallback model
    special_in_text: Counter[str] = field(default_factory=Counter)
    lengths: Counter[int] = field(default_factory=Counter)  # bit length of a length -> docs
    longest: list[tuple[int, str, int]] = field(default_factory=list)  # (tokens, file, row)
    largest_id: int = -1  # the largest id written (-1: none, or counted before it was kept)
    # report.group_column's value -> [documents, tokens, text bytes] (at most MAX_GROUPS)
    groups: dict[str, list[int]] = field(default_factory=dict)

    def merge(self, other: TokenStats) -> TokenStats:
        self.documents += other.documents
        self.tokens += other.tokens
        self.text_bytes += other.text_bytes
        self.unknown += other.unknown
        self.byte_fallback += other.byte_fallback
        self.special_in_text.update(other.special_in_text)
        self.lengths.update(other.lengths)
        self.longest = _top(self.longest + other.longest)
        self.largest_id = max(self.largest_id, other.largest_id)
        for value, counts in other.groups.items():
            self._group(value, *counts)
        return self

    def _group(self, value: str, documents: int, tokens: int, text_bytes: int) -> None:
        if value not in self.groups and len(self.groups) >= MAX_GROUPS:
            value = OTHER_GROUPS
        found = self.groups.setdefault(value, [0, 0, 0])
        found[0] += documents
        found[1] += tokens
        found[2] += text_bytes

    def add_groups(
        self, values: Sequence[Any], lengths: Sequence[int | None], row_bytes: Sequence[int]
    ) -> None:
        """Count each document (a row with ids) under its group's value (None: "(null)")."""
        for value, n, size in zip(values, lengths, row_bytes):
            if n is not None:
                self._group("(null)" if value is None else str(value), 1, n, size or 0)

    def add_documents(
        self, lengths: Sequence[int | None], text_bytes: int, file: str, first_row: int
    ) -> None:
        """Count rows ``first_row``... of ``file`` whose id counts are ``lengths`` (None: a
        bad row without ids)."""
        self.text_bytes += text_bytes
        if np is None or len(lengths) < VECTOR_ROWS:
            found = [(n, file, first_row + i) for i, n in enumerate(lengths) if n is not None]
            self.documents += len(found)
            self.tokens += sum(n for n, _, _ in found)
            self.lengths.update(n.bit_length() for n, _, _ in found)
            self.longest = _top(self.longest + heapq.nsmallest(LONGEST, found, key=_rank))
            return
        # the same counts a batch at a time (a batch of short rows: a few percent of its
        # encoding in per-row Python)
        if None in lengths:
            rows = np.array([i for i, n in enumerate(lengths) if n is not None], dtype=np.int64)
            counts = np.array([n for n in lengths if n is not None], dtype=np.int64)
        else:
            rows = None
            counts = np.array(lengths, dtype=np.int64)
        self.documents += len(counts)
        self.tokens += int(counts.sum())
        # frexp's exponent is the bit length of an int below 2**53 (and 0 of 0)
        bits, docs = np.unique(np.frexp(counts.astype(np.float64))[1], return_counts=True)
        self.lengths.update(dict(zip(bits.tolist(), docs.tolist())))
        # longest first, ties in row order (a stable sort): :func:`_rank` within one file
        top = np.argsort(-counts, kind="stable")[:LONGEST]
        at = top if rows is None else rows[top]
        found = [(n, file, first_row + i) for n, i in zip(counts[top].tolist(), at.tolist())]
        self.longest = _top(self.longest + found)

    def to_json(self) -> dict[str, Any]:
        return {
            "documents": self.documents,
            "tokens": self.tokens,
            "text_bytes": self.text_bytes,
            "unknown": self.unknown,
            "byte_fallback": self.byte_fallback,
            "special_in_text": dict(self.special_in_text),
            "lengths": {str(k): v for k, v in self.lengths.items()},
            "longest": [list(x) for x in self.longest],
            "largest_id": self.largest_id,
            "groups": {k: list(v) for k, v in self.groups.items()},
        }

    @classmethod
    def from_json(cls, data: Any) -> TokenStats | None:
        """The stats stored by :meth:`to_json`, or None if ``data`` is not such a document."""
        try:
            return cls(
                documents=int(data["documents"]),
                tokens=int(data["tokens"]),
                text_bytes=int(data["text_bytes"]),
                unknown=int(data["unknown"]),
                byte_fallback=int(data["byte_fallback"]),
                special_in_text=Counter(
                    {str(k): int(v) for k, v in data["special_in_text"].items()}
                ),
                lengths=Counter({int(k): int(v) for k, v in data["lengths"].items()}),
                longest=[(int(n), str(f), int(r)) for n, f, r in data["longest"]],
                # (kept since: absent from the statistics of shards written before)
                largest_id=int(data.get("largest_id", -1)),
                groups={str(k): [int(x) for x in v] for k, v in (data.get("groups") or {}).items()},
            )
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def report(self) -> dict[str, Any]:
        """The report the summary carries."""
        tokens = self.tokens
        return {
            "documents": self.documents,
            "tokens": tokens,
            "text_mb": round(self.text_bytes / 1e6, 3),
            "bytes_per_token": round(self.text_bytes / tokens, 3) if tokens else None,
            "tokens_per_document": round(tokens / self.documents, 1) if self.documents else None,
            "unknown_tokens": self.unknown,
            "unknown_rate": round(self.unknown / tokens, 6) if tokens else None,
            "byte_fallback_tokens": self.byte_fallback,
            "byte_fallback_rate": round(self.byte_fallback / tokens, 6) if tokens else None,
            "special_tokens_in_text": dict(sorted(self.special_in_text.items())),
            "longest_documents": [{"tokens": n, "file": f, "row": r} for n, f, r in self.longest],
            "largest_id": self.largest_id if self.largest_id >= 0 else None,
            "groups": {
                value: {
                    "documents": d,
                    "tokens": t,
                    "bytes_per_token": round(b / t, 3) if t else None,
                }
                for value, (d, t, b) in sorted(self.groups.items(), key=lambda x: -x[1][1])
            },
            "length_histogram": {
                bucket_label(bits): self.lengths[bits] for bits in sorted(self.lengths)
            },
        }


def _rank(x: tuple[int, str, int]) -> tuple[int, str, int]:
    """Longest first; ties by file, then row."""
    return -x[0], x[1], x[2]


def _top(items: list[tuple[int, str, int]]) -> list[tuple[int, str, int]]:
    return sorted(set(items), key=_rank)[:LONGEST]


def token_stats_lines(report: Any) -> list[str]:
    """The headline figures of a summary's ``token_stats`` (none if it has none)."""
    if not isinstance(report, dict) or not report.get("documents"):
        return []
    lines = [
        f"outputs hold {report['documents']:,} documents, {report['tokens']:,} tokens, "
        f"{report['bytes_per_token']} bytes/token, {report['tokens_per_document']} "
        "tokens/document"
    ]
    rates = (
        f"unknown {report['unknown_rate']:.4%}, byte fallback {report['byte_fallback_rate']:.4%}"
    )
    special = report.get("special_tokens_in_text") or {}
    if special:
        rates += f"; special-token strings in the text: {sum(special.values()):,}"
    lines.append(rates)
    longest = report.get("longest_documents") or []
    if longest:
        top = longest[0]
        lines.append(f"longest document: {top['tokens']:,} tokens ({top['file']} row {top['row']})")
    if report.get("shards_without_stats"):
        lines.append(
            f"({report['shards_without_stats']} shards written by an older batchtok are not "
            "counted)"
        )
    return lines


class IdCounter:
    """Counts the unknown and byte-fallback ids in a run of ids (numpy's, when it is there)."""

    def __init__(self, unk_id: int | None, byte_ids: Sequence[int]) -> None:
        self.unk_id = unk_id
        self.byte_ids = sorted(byte_ids) if byte_ids else None

    def count(self, ids: array, into: TokenStats) -> None:
        if not len(ids):
            return
        if np is None:
            into.largest_id = max(into.largest_id, max(ids))
        else:
            into.largest_id = max(into.largest_id, int(np.frombuffer(ids, ids.typecode).max()))
        if self.unk_id is None and self.byte_ids is None:
            return
        if np is None:
            if self.unk_id is not None:
                into.unknown += ids.count(self.unk_id)
            if self.byte_ids is not None:
                byte_ids = set(self.byte_ids)
                into.byte_fallback += sum(1 for i in ids if i in byte_ids)
            return
        found = np.frombuffer(ids, dtype=ids.typecode)
        if self.unk_id is not None:
            into.unknown += int(np.count_nonzero(found == self.unk_id))
        if self.byte_ids is not None:
            into.byte_fallback += int(np.count_nonzero(np.isin(found, self.byte_ids)))


def _escaped(text: str) -> str:
    """``text`` as SVG character data (xml.sax's escape, without importing xml and urllib)."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def draw_chart(stats: TokenStats, title: str) -> str:
    """The length histogram as an SVG document: one bar per bucket (its count in a tooltip),
    the buckets' labels below, a count scale on the left and the headline as the title."""
    buckets = sorted(stats.lengths)
    counts = [stats.lengths[b] for b in buckets]
    report = stats.report()
    heading = (
        f"{title}: {stats.documents:,} documents, {stats.tokens:,} tokens, "
        f"{report['bytes_per_token'] or 0:.2f} bytes/token"
    )
    left, top, plot_h, bar_w, gap = 70, 40, 240, 28, 6
    width = left + max(1, len(counts)) * (bar_w + gap) + 20
    height = top + plot_h + 110
    peak = max(counts, default=0) or 1
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" font-family="sans-serif" font-size="11">',
        f'<rect width="{width}" height="{height}" fill="white"/>',
        f'<text x="{width / 2:.0f}" y="20" text-anchor="middle" font-size="13">'
        f"{_escaped(heading)}</text>",
    ]
    base = top + plot_h
    for fraction in (0, 0.25, 0.5, 0.75, 1):
        y = base - fraction * plot_h
        out.append(
            f'<line x1="{left - 4}" y1="{y:.1f}" x2="{width - 20}" y2="{y:.1f}" stroke="#ddd"/>'
        )
        out.append(
            f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{peak * fraction:,.0f}</text>'
        )
    for i, (bucket, count) in enumerate(zip(buckets, counts)):
        x = left + gap / 2 + i * (bar_w + gap)
        h = count / peak * plot_h
        label = bucket_label(bucket)
        out.append(
            f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{bar_w}" height="{h:.1f}" '
            f'fill="#4c72b0"><title>{label} tokens: {count:,} documents</title></rect>'
        )
        cx, cy = x + bar_w / 2, base + 12
        out.append(
            f'<text x="{cx:.1f}" y="{cy:.1f}" text-anchor="end" '
            f'transform="rotate(-45 {cx:.1f} {cy:.1f})">{label}</text>'
        )
    out.append(f'<line x1="{left - 4}" y1="{base}" x2="{width - 20}" y2="{base}" stroke="#333"/>')
    out.append(
        f'<text x="{width / 2:.0f}" y="{height - 10}" text-anchor="middle">'
        "document length in tokens</text>"
    )
    out.append(
        f'<text x="16" y="{top + plot_h / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {top + plot_h / 2:.0f})">documents</text>'
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"
