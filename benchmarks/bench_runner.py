"""End-to-end benchmark of the job runner: Parquet in, Parquet out, against `tokenizers`.

Run from the repository root::

    python -m benchmarks.bench_runner                        # 100 MB, llama3, 3 repeats
    python -m benchmarks.bench_runner --mb 5 --repeats 1     # a smoke test

What is timed, each in a fresh process (interpreter start, imports and tokenizer load
included, as a cron job would pay them), median of ``--repeats``:

* ``batchtok 1w`` / ``batchtok 2w``: ``batchtok run`` with 1 and 2 workers into an empty
  output directory;
* ``re-run``: ``batchtok run`` again on the 2-worker output with nothing changed;
* ``tokenizers``: the same pipeline written with `tokenizers` and pyarrow: read each file's
  text in batches, ``Tokenizer.encode_batch`` (all its threads), build the same
  ``input_ids`` list<int32> and ``num_tokens`` columns, keep every input column, write zstd
  Parquet.
* ``tiktoken``: that pipeline with a tiktoken Encoding built from the same file
  (``encode_ordinary_batch`` on every core, the special tokens the file's post-processor adds
  prepended), where tiktoken can be exact (byte-level BPE whose merge ranks are the ids, such
  as llama3); its ids are checked too. It is the figure to beat next.

Printed: medians, MB/s (UTF-8 bytes of text / median wall seconds, MB = 10^6 bytes), the
ratios against their targets (batchtok 2w vs tokenizers >= 1.5, 2w vs 1w >= 1.7, first run vs
re-run >= 50), and the peak RSS of a batchtok worker (from the run summary) and of the
`tokenizers` process. The first repeat checks that both pipelines wrote identical ids for
every row. The last line is a JSON summary.

``--memory 100,1000`` measures memory instead: one 2-worker run per input size (the same
8-file layout, so files grow with the input), printing each run's peak worker RSS, the
parent's RSS when it forked the workers (the tokenizer's tables, shared copy-on-write), and
the ratio of the largest peak to the smallest (target <= 1.10: flat).

The input is built once from ``tests.support.corpora`` (English prose, source code and every
multilingual corpus, interleaved) and cached under ``$BATCHTOK_CACHE/bench_runner/``. There
are about 70 MB of distinct documents; beyond that, documents come again with their
paragraphs rotated (text that repeats words but not whole documents, which would be
deduplicated).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time
from itertools import zip_longest
from pathlib import Path

MB = 1_000_000
REPO = Path(__file__).resolve().parents[1]
FILES = 8  # input files (12.5 MB of text each at 100 MB): several shards for 2 workers
ROW_GROUP_MB = 2.0  # text per input row group
TARGETS = {"vs_tokenizers": 1.5, "two_vs_one": 1.7, "rerun": 50.0}
FLAT = 1.10  # largest peak worker RSS over the smallest input's (our goal for "flat")


def log(msg: str) -> None:
    print(f"[bench_runner {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- input ------------------------------------------------------------------------------------


def _documents(min_bytes: int) -> list[tuple[str, str]]:
    from tests.support import corpora

    english = corpora.english_prose(min(min_bytes // 3, 30 * MB))
    code = corpora.code_docs()
    multi = [d for docs in corpora.multilingual_docs().values() for d in docs]
    kinds = (("english", english), ("code", code), ("multilingual", multi))
    base = [
        (kind, doc)
        for row in zip_longest(*[[(k, d) for d in docs] for k, docs in kinds])
        for kind, doc in filter(None, row)
    ]
    out: list[tuple[str, str]] = []
    total, cycle = 0, 0
    while total < min_bytes:
        for kind, doc in base:
            if cycle:
                paragraphs = doc.split("\n\n")
                k = cycle % len(paragraphs)
                doc = "\n\n".join(paragraphs[k:] + paragraphs[:k])
            out.append((kind, doc))
            total += len(doc.encode())
            if total >= min_bytes:
                break
        cycle += 1
    return out


def build_input(mb: float) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.support.fixtures import cache_root

    target = cache_root() / "bench_runner" / f"{mb:g}mb"
    marker = target / "_complete"
    if marker.exists():
        return target
    log(f"building {mb:g} MB of Parquet input in {target}")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    docs = _documents(int(mb * MB))
    files: list[list[tuple[str, str]]] = [[]]
    size = 0
    for doc in docs:
        if size >= mb * MB / FILES:
            files.append([])
            size = 0
        files[-1].append(doc)
        size += len(doc[1].encode())
    row = 0
    for i, rows in enumerate(files):
        mean = sum(len(t.encode()) for _, t in rows) / len(rows)
        table = pa.table(
            {
                "id": pa.array(range(row, row + len(rows)), pa.int64()),
                "kind": pa.array([k for k, _ in rows], pa.string()),
                "text": pa.array([t for _, t in rows], pa.string()),
            }
        )
        row += len(rows)
        pq.write_table(
            table,
            target / f"part-{i:03d}.parquet",
            row_group_size=max(1, int(ROW_GROUP_MB * MB / mean)),
            compression="zstd",
        )
    marker.write_text(json.dumps({"documents": len(docs), "files": len(files)}))
    return target


def text_bytes(input_dir: Path) -> int:
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    return sum(
        pc.sum(pc.binary_length(pq.read_table(p, columns=["text"])["text"])).as_py()
        for p in sorted(input_dir.glob("*.parquet"))
    )


# -- the reference pipeline (runs in its own process) ----------------------------------------


def _pipeline(input_dir: Path, output_dir: Path, encode) -> None:
    """Read each file's row groups, add ``input_ids`` / ``num_tokens`` from ``encode(texts)``,
    write zstd Parquet; print this process's peak RSS as JSON."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    output_dir.mkdir(parents=True, exist_ok=True)
    for path in sorted(input_dir.glob("*.parquet")):
        pf = pq.ParquetFile(path)
        writer = None
        for i in range(pf.metadata.num_row_groups):
            table = pf.read_row_group(i)
            ids = encode(table["text"].to_pylist())
            table = table.append_column("input_ids", pa.array(ids, pa.list_(pa.int32())))
            table = table.append_column("num_tokens", pa.array(map(len, ids), pa.int32()))
            if writer is None:
                writer = pq.ParquetWriter(output_dir / path.name, table.schema, compression="zstd")
            writer.write_table(table)
        if writer is not None:
            writer.close()
    print(json.dumps({"peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))


def reference_pipeline(input_dir: Path, output_dir: Path, tokenizer: Path) -> None:
    import tokenizers

    tok = tokenizers.Tokenizer.from_file(str(tokenizer))
    _pipeline(
        input_dir,
        output_dir,
        lambda texts: [e.ids for e in tok.encode_batch(texts, add_special_tokens=True)],
    )


def tiktoken_pipeline(input_dir: Path, output_dir: Path, tokenizer: Path) -> None:
    """The same pipeline with tiktoken (``encode_ordinary_batch`` on every core), where an
    Encoding built from the file is exact (byte-level BPE whose merge ranks are the ids)."""
    import tokenizers

    from benchmarks.bench import build_tiktoken, plan_tiktoken

    plan = plan_tiktoken(json.loads(tokenizer.read_text(encoding="utf-8")))
    if plan.skip or plan.rank_mode != "id":
        print(json.dumps({"skip": plan.skip or "merge ranks are not the ids"}))
        return
    enc, _ = build_tiktoken(tokenizer, plan, "runner")
    # the special tokens the file's post-processor adds around a text (llama3: BOS)
    empty = tokenizers.Tokenizer.from_file(str(tokenizer)).encode("").ids
    threads = os.cpu_count() or 1
    _pipeline(
        input_dir,
        output_dir,
        lambda texts: [empty + x for x in enc.encode_ordinary_batch(texts, num_threads=threads)],
    )


# -- timing ------------------------------------------------------------------------------------


def timed(cmd: list[str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout + proc.stderr)
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}")
    return elapsed, proc.stdout


def peer_pipeline(flag: str, input_dir: Path, out: Path, tokenizer: Path) -> tuple[float, dict]:
    """Time one peer pipeline (``--reference-pipeline`` / ``--tiktoken-pipeline``) in a fresh
    process writing into an empty ``out``; returns (seconds, its JSON report)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "benchmarks.bench_runner", flag, str(input_dir), str(out)]
    elapsed, stdout = timed([*cmd, str(tokenizer)])
    return elapsed, json.loads(stdout.strip().splitlines()[-1])


def write_job(work: Path, input_dir: Path, tokenizer: Path) -> Path:
    job = work / "bench.toml"
    job.write_text(
        f'[input]\npaths = ["{input_dir}"]\n[tokenizer]\npath = "{tokenizer}"\n'
        f'[output]\ndir = "{work / "out"}"\n'
    )
    return job


def batchtok_cmd(job: Path, out: Path, workers: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "batchtok.runner.cli",
        "run",
        str(job),
        "--output",
        str(out),
        "--workers",
        str(workers),
        "--quiet",
    ]


def same_ids(a: Path, b: Path) -> tuple[int, int]:
    """(rows compared, rows that differ) between two output directories."""
    import pyarrow.parquet as pq

    rows = differ = 0
    for path in sorted(a.glob("*.parquet")):
        x = pq.read_table(path, columns=["input_ids"])["input_ids"]
        y = pq.read_table(b / path.name, columns=["input_ids"])["input_ids"]
        rows += len(x)
        differ += 0 if x.equals(y) else sum(1 for u, v in zip(x, y) if u != v)
    return rows, differ


def memory(sizes: list[float], tokenizer_name: str, work: Path) -> dict:
    """Peak worker RSS of one 2-worker run per input size."""
    from tests.support.fixtures import tokenizer_path

    tokenizer = tokenizer_path(tokenizer_name)
    rows = []
    for mb in sizes:
        input_dir = build_input(mb)
        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        job = write_job(work, input_dir, tokenizer)
        log(f"{mb:g} MB: batchtok, 2 workers")
        elapsed, _ = timed(batchtok_cmd(job, work / "out", 2))
        report = json.loads((work / "out" / "_batchtok_summary.json").read_text())
        rows.append(
            {
                "mb": report["text_mb"],
                "seconds": elapsed,
                "peak_worker_rss_mb": report["peak_worker_rss_mb"],
                "parent_rss_mb_at_fork": report.get("parent_rss_mb_at_fork"),
                "files": len(list(input_dir.glob("*.parquet"))),
                "shards": report["shards"]["done"],
            }
        )
    head = ("input MB", "files", "shards", "s", "peak worker MB", "at fork MB")
    print(" ".join(f"{h:>{w}}" for h, w in zip(head, (9, 6, 7, 7, 15, 11))))
    for r in rows:
        print(
            f"{r['mb']:>9.1f} {r['files']:>6} {r['shards']:>7} {r['seconds']:>7.1f} "
            f"{r['peak_worker_rss_mb']:>15.0f} {r['parent_rss_mb_at_fork'] or 0:>11.0f}"
        )
    peaks = [r["peak_worker_rss_mb"] for r in rows]
    ratio = max(peaks) / min(peaks)
    verdict = "meets" if ratio <= FLAT else "misses"
    print(f"largest / smallest peak worker RSS: {ratio:.3f}  (target <= {FLAT}: {verdict})")
    return {"tokenizer": tokenizer_name, "runs": rows, "peak_ratio": ratio, "target": FLAT}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0, help="MB of text (default 100)")
    parser.add_argument("--tokenizer", default="llama3", help="fixture name (default llama3)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="scratch directory")
    parser.add_argument("--json", type=Path, default=None, help="also write the summary here")
    parser.add_argument("--reference-pipeline", nargs=3, metavar=("IN", "OUT", "TOK"))
    parser.add_argument("--tiktoken-pipeline", nargs=3, metavar=("IN", "OUT", "TOK"))
    parser.add_argument(
        "--memory", default=None, metavar="MB,MB,...", help="measure peak memory per input size"
    )
    args = parser.parse_args(argv)
    if args.reference_pipeline:
        reference_pipeline(*map(Path, args.reference_pipeline))
        return 0
    if args.tiktoken_pipeline:
        tiktoken_pipeline(*map(Path, args.tiktoken_pipeline))
        return 0
    if args.memory:
        work = args.work or Path(os.environ.get("TMPDIR", "/tmp")) / "batchtok-bench-memory"
        sizes = [float(x) for x in args.memory.split(",")]
        result = memory(sizes, args.tokenizer, work)
        print(json.dumps(result))
        if args.json:
            args.json.write_text(json.dumps(result, indent=2))
        return 0

    from tests.support.fixtures import tokenizer_path

    if args.mb < 100:
        log(f"{args.mb:g} MB is below the 100 MB the targets are stated for: a smoke test")
    tokenizer = tokenizer_path(args.tokenizer)
    input_dir = build_input(args.mb)
    size = text_bytes(input_dir)
    work = args.work or Path(os.environ.get("TMPDIR", "/tmp")) / "batchtok-bench-runner"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    job = write_job(work, input_dir, tokenizer)
    times: dict[str, list[float]] = {k: [] for k in ("b1", "b2", "rerun", "tokenizers", "tiktoken")}
    peaks: dict[str, float] = {}
    mismatches = None
    tiktoken_skip = None
    tiktoken_mismatches = None
    for r in range(args.repeats):
        for workers, key in ((1, "b1"), (2, "b2")):
            out = work / f"out{workers}"
            shutil.rmtree(out, ignore_errors=True)
            log(f"repeat {r + 1}: batchtok, {workers} worker(s)")
            elapsed, _ = timed(batchtok_cmd(job, out, workers))
            times[key].append(elapsed)
            report = json.loads((out / "_batchtok_summary.json").read_text())
            peaks[key] = max(peaks.get(key, 0.0), report["peak_worker_rss_mb"])
        log(f"repeat {r + 1}: re-run with nothing changed")
        elapsed, _ = timed(batchtok_cmd(job, work / "out2", 2))
        times["rerun"].append(elapsed)
        report = json.loads((work / "out2" / "_batchtok_summary.json").read_text())
        assert report["shards"]["done"] == 0, "the re-run did work"
        log(f"repeat {r + 1}: tokenizers pipeline")
        ref_out = work / "ref"
        elapsed, report = peer_pipeline("--reference-pipeline", input_dir, ref_out, tokenizer)
        times["tokenizers"].append(elapsed)
        peaks["tokenizers"] = report["peak_rss_mb"]
        if mismatches is None:
            mismatches = same_ids(work / "out2", ref_out)
        if tiktoken_skip is None:
            log(f"repeat {r + 1}: tiktoken pipeline")
            tt_out = work / "tiktoken"
            elapsed, report = peer_pipeline("--tiktoken-pipeline", input_dir, tt_out, tokenizer)
            if "skip" in report:
                tiktoken_skip = report["skip"]
                log(f"tiktoken pipeline skipped: {tiktoken_skip}")
            else:
                times["tiktoken"].append(elapsed)
                peaks["tiktoken"] = report["peak_rss_mb"]
                if tiktoken_mismatches is None:
                    tiktoken_mismatches = same_ids(work / "out2", tt_out)
    if not times["tiktoken"]:
        del times["tiktoken"]
    med = {k: statistics.median(v) for k, v in times.items()}
    ratios = {
        "vs_tokenizers": med["tokenizers"] / med["b2"],
        "two_vs_one": med["b1"] / med["b2"],
        "rerun": med["b2"] / med["rerun"],
    }
    if "tiktoken" in med:
        ratios["vs_tiktoken"] = med["tiktoken"] / med["b2"]
    labels = {
        "b1": "batchtok 1 worker",
        "b2": "batchtok 2 workers",
        "rerun": "re-run, nothing changed",
        "tokenizers": "tokenizers pipeline",
        "tiktoken": "tiktoken pipeline",
    }
    print(f"input: {size / MB:.1f} MB of text in {input_dir} ({args.tokenizer}), ", end="")
    print(f"{args.repeats} repeat(s), {os.cpu_count()} cores")
    print(f"{'pipeline':<26} {'median s':>9} {'min s':>8} {'MB/s':>7}")
    for key, label in labels.items():
        if key not in med:
            continue
        rate = size / MB / med[key]
        print(f"{label:<26} {med[key]:>9.2f} {min(times[key]):>8.2f} {rate:>7.2f}")
    names = {
        "vs_tokenizers": "batchtok 2w vs tokenizers",
        "two_vs_one": "batchtok 2w vs 1w",
        "rerun": "first run vs re-run",
    }
    for key, name in names.items():
        verdict = "meets" if ratios[key] >= TARGETS[key] else "misses"
        print(f"{name:<26} {ratios[key]:>8.2f}x  (target >= {TARGETS[key]}x: {verdict})")
    if "vs_tiktoken" in ratios:
        print(f"{'batchtok 2w vs tiktoken':<26} {ratios['vs_tiktoken']:>8.2f}x  (the next goal)")
    elif tiktoken_skip:
        print(f"tiktoken pipeline skipped: {tiktoken_skip}")
    print(
        f"peak RSS: batchtok worker {peaks['b2']:.0f} MB (1 worker: {peaks['b1']:.0f} MB), "
        f"tokenizers process {peaks['tokenizers']:.0f} MB"
    )
    rows, differ = mismatches or (0, 0)
    print(f"ids checked against the tokenizers pipeline: {rows} rows, {differ} differ")
    if tiktoken_mismatches is not None:
        t_rows, t_differ = tiktoken_mismatches
        print(f"ids checked against the tiktoken pipeline: {t_rows} rows, {t_differ} differ")
    result = {
        "mb": size / MB,
        "tokenizer": args.tokenizer,
        "repeats": args.repeats,
        "median_seconds": med,
        "ratios": ratios,
        "targets": TARGETS,
        "peak_rss_mb": peaks,
        "rows_checked": rows,
        "rows_differ": differ,
        "tiktoken_rows_differ": tiktoken_mismatches[1] if tiktoken_mismatches else None,
        "tiktoken_skipped": tiktoken_skip,
    }
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())
