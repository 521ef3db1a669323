"""What an output format or a JSON Lines input costs, against the Parquet-to-Parquet job.

Run from the repository root::

    python -m benchmarks.bench_formats                 # 100 MB, llama3, 2 workers, 1 repeat
    python -m benchmarks.bench_formats --mb 5          # a smoke test

The input is ``benchmarks.bench_runner``'s Parquet corpus (built once, cached); the same rows
are written once as JSON Lines, plain and gzip'd, beside it. Each variant is one ``batchtok
run`` in a fresh process into an empty output directory:

* parquet -> parquet (the baseline), -> megatron, -> datatrove, -> MDS (each with
  ``append_eos``), -> packed Parquet (2048 ids a row, its ``seq_lens``; and with
  ``position_ids``), -> packed MDS;
* with a provenance file (packed Parquet, Megatron); the job as one stream cut into files of
  10M ids (Megatron), shuffled in one window, and packed, shuffled and traced;
* jsonl -> parquet, jsonl.gz -> parquet.

Printed: wall seconds (median of ``--repeats``), MB/s of text, the time over the baseline's
(above 1: slower than Parquet to Parquet) and the output's size on disk. The last line is a
JSON summary (also ``--json PATH``).
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_runner import build_input, log, text_bytes, timed
from benchmarks.files import tokenizer_path

MB = 1_000_000
# the job as one stream cut into files of 10M ids (rows of many inputs keep no input column)
STREAM = {"output.layout": "stream", "output.max_tokens_per_file": 10_000_000,
          "output.keep_columns": []}  # fmt: skip
SHUFFLED = {"output.shuffle_seed": 1}  # one window: every document of the job
VARIANTS: dict[str, tuple[str, dict[str, object]]] = {
    "parquet -> parquet": ("parquet", {}),
    "parquet -> megatron": ("parquet", {"output.format": "megatron", "output.append_eos": True}),
    "parquet -> datatrove": ("parquet", {"output.format": "datatrove", "output.append_eos": True}),
    "parquet -> packed parquet": (
        "parquet",
        {"output.append_eos": True, "output.pack_length": 2048},
    ),
    "parquet -> packed parquet + position_ids": (
        "parquet",
        {"output.append_eos": True, "output.pack_length": 2048, "output.position_ids": True},
    ),
    "parquet -> mds": ("parquet", {"output.format": "mds", "output.append_eos": True}),
    "parquet -> packed mds": (
        "parquet",
        {"output.format": "mds", "output.append_eos": True, "output.pack_length": 2048},
    ),
    "parquet -> packed parquet + provenance": (
        "parquet",
        {"output.append_eos": True, "output.pack_length": 2048, "output.provenance": True},
    ),
    "parquet -> megatron + provenance": (
        "parquet",
        {"output.format": "megatron", "output.append_eos": True, "output.provenance": True},
    ),
    "parquet -> megatron, stream, files of 10M ids": (
        "parquet",
        {"output.format": "megatron", "output.append_eos": True, **STREAM},
    ),
    "parquet -> megatron, stream, shuffled": (
        "parquet",
        {"output.format": "megatron", "output.append_eos": True, **STREAM, **SHUFFLED},
    ),
    "parquet -> packed parquet, stream, shuffled, provenance": (
        "parquet",
        {
            "output.append_eos": True,
            "output.pack_length": 2048,
            "output.provenance": True,
            **STREAM,
            **SHUFFLED,
        },
    ),
    "jsonl -> parquet": ("jsonl", {}),
    "jsonl.gz -> parquet": ("jsonl.gz", {}),
}


def jsonl_inputs(parquet_dir: Path, work: Path) -> dict[str, Path]:
    """The Parquet input's rows as JSON Lines, plain and gzip'd (one file per Parquet file)."""
    import pyarrow.parquet as pq

    dirs = {"jsonl": work / "in-jsonl", "jsonl.gz": work / "in-jsonl-gz"}
    for d in dirs.values():
        d.mkdir(parents=True, exist_ok=True)
    for path in sorted(parquet_dir.glob("*.parquet")):
        table = pq.read_table(path)
        lines = "".join(
            json.dumps(row, ensure_ascii=False) + "\n" for row in table.to_pylist()
        ).encode()
        (dirs["jsonl"] / f"{path.stem}.jsonl").write_bytes(lines)
        (dirs["jsonl.gz"] / f"{path.stem}.jsonl.gz").write_bytes(gzip.compress(lines, 6))
    return dirs


def run_variant(input_dir: Path, out: Path, tokenizer: Path, workers: int, sets: dict) -> float:
    shutil.rmtree(out, ignore_errors=True)
    job = out.parent / f"{out.name}.toml"
    keep = '["id", "kind", "text"]'
    job.write_text(
        f'[input]\npaths = ["{input_dir}"]\n[tokenizer]\npath = "{tokenizer}"\n'
        f'[output]\ndir = "{out}"\nkeep_columns = {keep}\n[run]\nworkers = {workers}\n'
    )
    cmd = [sys.executable, "-m", "batchtok", "run", str(job), "--quiet"]
    for key, value in sets.items():
        cmd += ["--set", f"{key}={json.dumps(value)}"]
    seconds, _ = timed(cmd)
    return seconds


def disk_mb(path: Path) -> float:
    return (
        sum(p.stat().st_size for p in path.rglob("*") if p.is_file() and ".batchtok" not in p.parts)
        / MB
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--tokenizer", default="llama3", help="a fixture name (default llama3)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument(
        "--write-results",
        action="store_true",
        help="replace this benchmark's section of benchmarks/RESULTS.md with the figures",
    )
    args = parser.parse_args(argv)
    tokenizer = tokenizer_path(args.tokenizer)
    parquet_dir = build_input(args.mb, "distinct")
    mb = text_bytes(parquet_dir) / MB
    with tempfile.TemporaryDirectory(prefix="bench-formats-") as tmp:
        work = Path(tmp)
        inputs = {"parquet": parquet_dir, **jsonl_inputs(parquet_dir, work)}
        results = {}
        for name, (kind, sets) in VARIANTS.items():
            out = work / name.replace(" ", "").replace(">", "").replace(".", "")
            times = [
                run_variant(inputs[kind], out, tokenizer, args.workers, sets)
                for _ in range(args.repeats)
            ]
            results[name] = {"seconds": statistics.median(times), "output_mb": disk_mb(out)}
            log(f"{name}: {results[name]['seconds']:.1f}s")
    base = results["parquet -> parquet"]["seconds"]
    print(
        f"{mb:.1f} MB of text, {args.tokenizer}, {args.workers} workers, median of {args.repeats}"
    )
    print(f"{'variant':42} {'seconds':>8} {'MB/s':>6} {'x base':>7} {'output MB':>10}")
    table = [
        "| variant | median s | MB/s | × the baseline's time | output MB |",
        "|---|---|---|---|---|",
    ]
    for name, r in results.items():
        r["mb_per_second"] = mb / r["seconds"]
        r["over_baseline"] = r["seconds"] / base
        print(
            f"{name:42} {r['seconds']:8.1f} {r['mb_per_second']:6.2f} "
            f"{r['over_baseline']:7.2f} {r['output_mb']:10.1f}"
        )
        table.append(
            f"| {name} | {r['seconds']:.2f} | {r['mb_per_second']:.2f} | "
            f"{r['over_baseline']:.2f} | {r['output_mb']:.1f} |"
        )
    if args.write_results:
        from benchmarks.results import write_section

        command = (
            f"python -m benchmarks.bench_formats --mb {args.mb:g} --tokenizer {args.tokenizer} "
            f"--workers {args.workers} --repeats {args.repeats} --write-results"
        )
        notes = [
            f"{mb:.1f} MB of distinct text, {args.tokenizer}, {args.workers} workers, median of "
            f"{args.repeats}, each run a fresh process into an empty directory: `{command}`",
            "the baseline is parquet -> parquet; the token formats and MDS append EOS; packed "
            "rows hold 2048 ids (packed Parquet: with seq_lens)",
        ]
        write_section("benchmarks.bench_formats", table, notes, None)
    summary = {"mb": mb, "tokenizer": args.tokenizer, "workers": args.workers, "results": results}
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
