"""Several tokenizers in one pass against one run per tokenizer, on the same inputs.

Run from the repository root::

    python -m benchmarks.bench_several                 # 100 MB, gpt2 + llama3, 2 workers
    python -m benchmarks.bench_several --mb 5          # a smoke test

The input is ``benchmarks.bench_runner``'s Parquet corpus of distinct text (built once,
cached). Each variant is ``batchtok run`` in a fresh process into an empty output directory,
the two kinds alternated ``--repeats`` times (a pair each time, so the machine's drift hits
both): the job with ``tokenizer.paths`` naming both tokenizers, and the two jobs of one
tokenizer each, one after the other. Printed: wall seconds (median), the shards each read
(from the summaries: the one-pass job's later tokenizer reads none), and the ratio.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.bench_runner import build_input, log, text_bytes, timed
from benchmarks.files import tokenizer_path

MB = 1_000_000


def _job(work: Path, name: str, input_dir: Path, workers: int, tokenizers: dict[str, Path]) -> Path:
    if len(tokenizers) == 1:
        line = f'[tokenizer]\npath = "{next(iter(tokenizers.values()))}"\n'
    else:
        line = "[tokenizer.paths]\n" + "".join(f'{n} = "{p}"\n' for n, p in tokenizers.items())
    job = work / f"{name}.toml"
    job.write_text(
        f'[input]\npaths = ["{input_dir}"]\n{line}[output]\ndir = "{work / name}"\n'
        f"keep_columns = []\n[run]\nworkers = {workers}\n",
        encoding="utf-8",
    )
    return job


def _shards_read(out: Path) -> int:
    return json.loads((out / "_batchtok_summary.json").read_text())["shards"]["done"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--tokenizers", default="gpt2,llama3", help="two fixture names")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args(argv)
    names = args.tokenizers.split(",")
    paths = {n: tokenizer_path(n) for n in names}
    input_dir = build_input(args.mb, "distinct")
    mb = text_bytes(input_dir) / MB
    one_pass, apart = [], []
    reads: dict[str, int] = {}
    with tempfile.TemporaryDirectory(prefix="bench-several-") as tmp:
        work = Path(tmp)
        for _ in range(args.repeats):
            shutil.rmtree(work / "together", ignore_errors=True)
            job = _job(work, "together", input_dir, args.workers, paths)
            seconds, _ = timed([sys.executable, "-m", "batchtok", "run", str(job), "--quiet"])
            one_pass.append(seconds)
            reads = {n: _shards_read(work / "together" / n) for n in names}
            total = 0.0
            for n in names:
                shutil.rmtree(work / n, ignore_errors=True)
                job = _job(work, n, input_dir, args.workers, {n: paths[n]})
                seconds, _ = timed([sys.executable, "-m", "batchtok", "run", str(job), "--quiet"])
                total += seconds
                reads[f"{n} alone"] = _shards_read(work / n)
            apart.append(total)
            log(f"one pass {one_pass[-1]:.1f}s, apart {apart[-1]:.1f}s")
    together, separate = statistics.median(one_pass), statistics.median(apart)
    print(f"{mb:.1f} MB of distinct text, {', '.join(names)}, {args.workers} workers")
    print(f"one pass: {together:.1f}s (each run {', '.join(f'{x:.1f}' for x in one_pass)})")
    print(f"one run each: {separate:.1f}s (each pair {', '.join(f'{x:.1f}' for x in apart)})")
    print(f"ratio: {together / separate:.2f}; shards read: {reads}")
    if args.write_results:
        from benchmarks.results import write_section

        table = [
            "| | median s | each repeat | shards read |",
            "|---|---|---|---|",
            f"| one pass, tokenizer.paths = {{{', '.join(names)}}} | {together:.2f} | "
            + ", ".join(f"{x:.2f}" for x in one_pass)
            + " | "
            + ", ".join(f"{n} {reads[n]}" for n in names)
            + " |",
            f"| one run each, one after the other | {separate:.2f} | "
            + ", ".join(f"{x:.2f}" for x in apart)
            + " | "
            + ", ".join(f"{n} {reads[n + ' alone']}" for n in names)
            + " |",
        ]
        command = (
            f"python -m benchmarks.bench_several --mb {args.mb:g} --tokenizers {args.tokenizers} "
            f"--workers {args.workers} --repeats {args.repeats} --write-results"
        )
        notes = [
            f"{mb:.1f} MB of distinct text, {args.workers} workers, the two kinds alternated "
            f"{args.repeats} times, each run a fresh process into an empty directory: "
            f"`{command}`",
            f"one pass over one run each: {together / separate:.2f}× the time",
        ]
        write_section("benchmarks.bench_several", table, notes, None)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
