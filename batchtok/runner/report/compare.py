"""``batchtok compare OUT...``: tokenizers side by side, from their outputs' statistics.

Each OUT is a job's output directory (the same inputs encoded with another tokenizer, in a
bake-off); an OUT holding no summary but directories that do (``OUT/NAME/``, one per
tokenizer) stands for those. Nothing is encoded again: the numbers come from what the runs
recorded (the summary's token statistics, each input's record) and, for the documents whose
lengths differ most, from the outputs' count columns or indexes.

Per tokenizer: tokens, bytes of text a token, tokens a document, the unknown and
byte-fallback rates, overall and per input file; the length histograms side by side; the
documents where the tokenizers differ most in length. As a table (:meth:`Comparison.lines`),
JSON (:meth:`Comparison.to_json`) and one self-contained HTML page with SVG charts
(:meth:`Comparison.html`: no script, no network).
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..outputs.formats import DEFAULT_FORMAT, FORMATS
from ..plan.records import Records
from .summary import SUMMARY_NAME
from .token_stats import TokenStats

STATE_DIR = ".batchtok"
#: the figures compared overall: (the summary's key, its label)
FIGURES = (
    ("documents", "documents"),
    ("tokens", "tokens"),
    ("bytes_per_token", "bytes a token"),
    ("tokens_per_document", "tokens a document"),
    ("unknown_rate", "unknown rate"),
    ("byte_fallback_rate", "byte-fallback rate"),
)
DIFFERENT = 10  # documents listed by how much their lengths differ
#: one color a tokenizer, in order (distinct under common color blindness)
COLORS = ("#1b6ca8", "#e07b00", "#2a9d3f", "#b8329a", "#6c4f00", "#00a3b4", "#c0392b")


class CompareError(ValueError):
    """An OUT that is not an output directory of a finished run; the message says which."""


@dataclass
class Side:
    """One tokenizer's output: its name, where it is, what its run recorded."""

    name: str
    out: Path
    tokenizer: str
    stats: dict[str, Any]  # the summary's token statistics
    per_file: dict[str, TokenStats] = field(default_factory=dict)


def sides_of(outs: list[Path]) -> list[Side]:
    """Each OUT as one side, or as its tokenizer directories (see the module docstring)."""
    found: list[tuple[Path, dict]] = []
    for out in outs:
        summary = out / SUMMARY_NAME
        if summary.is_file():
            found.append((out, _summary(summary)))
            continue
        inner = (
            sorted(p for p in out.iterdir() if (p / SUMMARY_NAME).is_file()) if out.is_dir() else []
        )
        if not inner:
            raise CompareError(f"{out}: no {SUMMARY_NAME} (run the job first)")
        found += [(p, _summary(p / SUMMARY_NAME)) for p in inner]
    if len(found) < 2:
        raise CompareError("name at least two outputs (or a directory of them) to compare")
    names = [_label(out, doc) for out, doc in found]
    if len(set(names)) < len(names):
        names = [out.name for out, _ in found]
    if len(set(names)) < len(names):
        names = [str(out) for out, _ in found]
    sides = []
    for name, (out, doc) in zip(names, found):
        stats = doc.get("token_stats")
        if not isinstance(stats, dict) or not stats.get("tokens"):
            raise CompareError(f"{out}: its summary holds no token statistics")
        side = Side(name, out, str((doc.get("tokenizer") or {}).get("path")), stats)
        side.per_file = _per_file(out)
        sides.append(side)
    return sides


def _summary(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise CompareError(f"{path}: unreadable ({exc})") from None
    if not isinstance(doc, dict):
        raise CompareError(f"{path}: not a run summary")
    return doc


def _label(out: Path, doc: dict[str, Any]) -> str:
    path = Path(str((doc.get("tokenizer") or {}).get("path") or out.name))
    return path.parent.name if path.name == "tokenizer.json" and path.parent.name else path.stem


def _per_file(out: Path) -> dict[str, TokenStats]:
    """Each input's token statistics, from its record (shards of its output merged)."""
    records = Records(out / STATE_DIR)
    found = {}
    for rel in sorted(records.all_rels()):
        record = records.load(rel)
        stored = record.output.token_stats if record.output is not None else None
        if not isinstance(stored, dict):
            continue
        total = TokenStats()
        for value in stored.values():
            part = TokenStats.from_json(value)
            if part is not None:
                total.merge(part)
        if total.documents:
            found[rel] = total
    return found


@dataclass
class Comparison:
    sides: list[Side]
    different: list[dict[str, Any]] = field(default_factory=list)  # documents by spread
    notes: list[str] = field(default_factory=list)

    # -- the figures -------------------------------------------------------------------

    def overall(self) -> dict[str, dict[str, Any]]:
        keys = ("text_mb", *(key for key, _ in FIGURES))
        return {s.name: {k: s.stats.get(k) for k in keys} for s in self.sides}

    def files(self) -> dict[str, dict[str, dict[str, Any]]]:
        """{input: {tokenizer: tokens, bytes a token, tokens a document}} for the inputs
        every side recorded."""
        common = set.intersection(*(set(s.per_file) for s in self.sides)) if self.sides else set()
        out = {}
        for rel in sorted(common):
            out[rel] = {}
            for s in self.sides:
                st = s.per_file[rel]
                out[rel][s.name] = {
                    "tokens": st.tokens,
                    "bytes_per_token": round(st.text_bytes / st.tokens, 3) if st.tokens else None,
                    "tokens_per_document": round(st.tokens / st.documents, 1)
                    if st.documents
                    else None,
                }
        return out

    def groups(self) -> dict[str, dict[str, dict[str, Any]]]:
        """{value of report.group_column: {tokenizer: documents, tokens, bytes a token}} for
        the values every side counted (none without the key)."""
        found = [s.stats.get("groups") or {} for s in self.sides]
        common = [v for v in found[0] if all(v in f for f in found[1:])] if found else []
        return {v: {s.name: f[v] for s, f in zip(self.sides, found)} for v in common}

    def per_what(self) -> list[tuple[str, dict[str, dict[str, dict[str, Any]]], str]]:
        """(title, {input or group: {tokenizer: figures}}, the chart's id) of the tables
        by input and by group that have rows."""
        tables = [
            ("Bytes a token, per input", self.files(), "bytes-per-token"),
            ("Bytes a token, per group (report.group_column)", self.groups(),
             "bytes-per-token-by-group"),
        ]  # fmt: skip
        return [t for t in tables if t[1]]

    def histograms(self) -> tuple[list[str], dict[str, list[int]]]:
        """(the length buckets, in order; each side's documents in them)."""
        buckets: list[str] = []
        for s in self.sides:
            for label in s.stats.get("length_histogram") or {}:
                if label not in buckets:
                    buckets.append(label)
        buckets.sort(key=_bucket_start)
        return buckets, {
            s.name: [(s.stats.get("length_histogram") or {}).get(b, 0) for b in buckets]
            for s in self.sides
        }

    def to_json(self) -> dict[str, Any]:
        buckets, counts = self.histograms()
        return {
            "tokenizers": {
                s.name: {"output": str(s.out), "tokenizer": s.tokenizer} for s in self.sides
            },  # fmt: skip
            "overall": self.overall(),
            "files": self.files(),
            "groups": self.groups(),
            "length_histogram": {"buckets": buckets, "documents": counts},
            "most_different": self.different,
            "notes": self.notes,
        }

    # -- the table ---------------------------------------------------------------------

    def lines(self) -> list[str]:
        names = [s.name for s in self.sides]
        width = max(12, *(len(n) for n in names))
        overall = self.overall()
        out = [f"comparison of {len(names)} tokenizers: " + ", ".join(
            f"{s.name} ({s.out})" for s in self.sides)]  # fmt: skip
        out.append(f"{'':24}" + "".join(f"{n:>{width}}" for n in names))
        for key, label in FIGURES:
            out.append(
                f"{label:24}" + "".join(f"{_shown(overall[n][key]):>{width}}" for n in names)
            )
        for title, table, _ in self.per_what():
            out.append(f"{title[0].lower()}{title[1:]}:")
            for what, by in table.items():
                shown = what if len(what) <= 22 else "..." + what[-19:]
                out.append(
                    f"  {shown:22}"
                    + "".join(f"{_shown(by[n]['bytes_per_token']):>{width}}" for n in names)
                )
        buckets, counts = self.histograms()
        out.append("documents by length in tokens:")
        for i, b in enumerate(buckets):
            out.append(f"  {b:22}" + "".join(f"{counts[n][i]:>{width},}" for n in names))
        if self.different:
            out.append("documents whose lengths differ most:")
            for d in self.different:
                lengths = ", ".join(f"{n} {d['tokens'][n]}" for n in names)
                out.append(f"  {d['file']} row {d['row']}: {lengths} ({d['ratio']:.2f}x)")
        out += [f"note: {note}" for note in self.notes]
        return out

    # -- the page ----------------------------------------------------------------------

    def html(self) -> str:
        names = [s.name for s in self.sides]
        color = {n: COLORS[i % len(COLORS)] for i, n in enumerate(names)}
        overall = self.overall()
        buckets, counts = self.histograms()
        rows = "".join(
            f"<tr><th>{html.escape(label)}</th>"
            + "".join(f"<td>{html.escape(_shown(overall[n][key]))}</td>" for n in names)
            + "</tr>"
            for key, label in FIGURES
        )
        head = "".join(
            f'<th><span class="key" style="background:{color[n]}"></span>{html.escape(n)}</th>'
            for n in names
        )
        charts = "\n".join(
            _grouped_bars(
                title,
                list(table),
                {n: [by[n]["bytes_per_token"] or 0 for by in table.values()] for n in names},
                color,
                ident,
            )
            for title, table, ident in self.per_what()
        )
        different = "".join(
            f"<tr><td>{html.escape(d['file'])}</td><td>{d['row']}</td>"
            + "".join(f"<td>{d['tokens'][n]}</td>" for n in names)
            + f"<td>{d['ratio']:.2f}×</td></tr>"
            for d in self.different
        )
        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        named = "".join(f"<th>{html.escape(n)}</th>" for n in names)
        return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>batchtok: {html.escape(" vs ".join(names))}</title>
<style>
body {{ font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; }}
table {{ border-collapse: collapse; margin: 12px 0 24px; }}
th, td {{ border: 1px solid #ccc; padding: 4px 10px; text-align: right; }}
th:first-child {{ text-align: left; }}
.key {{ display: inline-block; width: 12px; height: 12px; margin-right: 6px; }}
svg {{ display: block; margin: 8px 0 24px; }}
</style></head><body>
<h1>Tokenizers compared</h1>
<table id="overall"><tr><th></th>{head}</tr>{rows}</table>
{_grouped_bars("Documents by length in tokens", buckets, counts, color, "length-histogram")}
{charts}
<h2>Documents whose lengths differ most</h2>
<table id="different"><tr><th>input</th><th>row</th>{named}<th>ratio</th></tr>{different}</table>
<ul>{notes}</ul>
</body></html>
"""


def _grouped_bars(
    title: str, groups: list[str], values: dict[str, list[float]], color: dict[str, str], ident: str
) -> str:
    """An SVG chart: for each group, one bar a side (its value on a linear scale)."""
    names = list(values)
    bar, gap, height, left, top = 14, 18, 220, 60, 30
    width = left + len(groups) * (len(names) * bar + gap) + 20
    most = max((v for vs in values.values() for v in vs), default=0) or 1
    parts = [
        f'<svg id="{ident}" xmlns="http://www.w3.org/2000/svg" width="{width}" '
        f'height="{height + top + 70}" role="img" aria-label="{html.escape(title)}">',
        f'<text x="{left}" y="18" font-size="15" font-weight="600">{html.escape(title)}</text>',
        f'<line x1="{left}" y1="{top + height}" x2="{width - 10}" y2="{top + height}" '
        'stroke="#555"/>',
        f'<text x="{left - 6}" y="{top + 10}" font-size="11" text-anchor="end">'
        f"{_shown(most)}</text>",
    ]
    for g, group in enumerate(groups):
        x0 = left + g * (len(names) * bar + gap)
        for i, name in enumerate(names):
            value = values[name][g]
            h = 0 if not value else max(1.0, height * value / most)
            parts.append(
                f'<rect class="bar" data-tokenizer="{html.escape(name)}" x="{x0 + i * bar}" '
                f'y="{top + height - h:.1f}" width="{bar - 2}" height="{h:.1f}" '
                f'fill="{color[name]}"><title>{html.escape(name)}, {html.escape(group)}: '
                f"{_shown(value)}</title></rect>"
            )
        label = group if len(group) <= 14 else "…" + group[-13:]
        cx = x0 + len(names) * bar / 2
        parts.append(
            f'<text x="{cx}" y="{top + height + 14}" font-size="11" text-anchor="end" '
            f'transform="rotate(-35 {cx} {top + height + 14})">{html.escape(label)}</text>'
        )
    parts.append("</svg>")
    return "\n".join(parts)


def _bucket_start(label: str) -> int:
    return int(label.split("-")[0])


def _shown(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        if value and abs(value) < 0.01:
            return f"{value:.2e}"
        return f"{value:,.3f}".rstrip("0").rstrip(".")
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


def compare(outs: list[Path]) -> Comparison:
    """Compare the tokenizers of the outputs ``outs`` (see the module docstring)."""
    result = Comparison(sides_of(outs))
    result.different, notes = _most_different(result.sides)
    result.notes += notes
    return result


def _most_different(sides: list[Side]) -> tuple[list[dict[str, Any]], list[str]]:
    """The documents whose lengths differ most between the sides (the largest over the
    smallest, documents of at least one id on every side), from the outputs' per-row counts:
    a Parquet output's count column, row by row. Inputs whose outputs do not align row for
    row (packed, a trainer format) are left out, and a note says so."""
    import pyarrow.parquet as pq

    common = set.intersection(*(set(s.per_file) for s in sides)) if sides else set()
    found: list[tuple[float, str, int, dict[str, int]]] = []
    skipped = []
    for rel in sorted(common):
        counts = {}
        for s in sides:
            path = s.out / rel
            try:
                meta = pq.read_schema(path).metadata or {}
                doc = json.loads(meta.get(b"batchtok", b"{}"))
            except (OSError, ValueError):
                counts = {}
                break
            output = doc.get("output") or {}
            output_format = FORMATS.get(output.get("format", DEFAULT_FORMAT))
            if output_format is None or output_format.token_file or output.get("pack_length"):
                counts = {}
                break
            column = output.get("count_column") or "num_tokens"
            try:
                counts[s.name] = pq.read_table(path, columns=[column]).column(0).to_pylist()
            except (OSError, ValueError, KeyError):
                counts = {}
                break
        if not counts or len({len(c) for c in counts.values()}) != 1:
            skipped.append(rel)
            continue
        names = list(counts)
        for row, lengths in enumerate(zip(*counts.values())):
            if any(n is None or n == 0 for n in lengths):
                continue
            ratio = max(lengths) / min(lengths)
            found.append((ratio, rel, row, dict(zip(names, lengths))))
    found.sort(key=lambda x: (-x[0], -max(x[3].values()), x[1], x[2]))
    notes = []
    if skipped:
        notes.append(
            f"{len(skipped)} input(s) (e.g. {skipped[0]}) left out of the documents compared "
            "one by one: their outputs are not Parquet rows, one a document, on every side"
        )
    return [
        {"file": rel, "row": row, "tokens": lengths, "ratio": round(ratio, 3)}
        for ratio, rel, row, lengths in found[:DIFFERENT]
        if not math.isnan(ratio)
    ], notes
