"""Soak test of the job runner: a large job run to completion through random kills, then
checked row for row against a clean run.

Run from the repository root::

    python -m benchmarks.soak --mb 1024 --shards 1000     # the full soak (hours on 2 cores)
    python -m benchmarks.soak --mb 20 --shards 40          # a smoke test (a few minutes)
    python -m benchmarks.soak --jsonl                      # the same rows as JSON Lines

What it does:

1. builds ``--mb`` MB of text as Parquet in at least ``--shards`` row groups (English pages,
   source code and every multilingual corpus of ``tests.support.corpora``, interleaved; beyond
   the ~47 MB of distinct documents they come again with their paragraphs rotated, so that
   they repeat words but not whole documents), cached under ``$BATCHTOK_CACHE/soak/``;
2. writes a job for it: the bundled GPT-2 tokenizer, 2 workers, ``run.shard_mb`` half a row
   group (so every row group is one shard);
3. **the soak run**: ``batchtok run`` in a fresh process, a worker killed with SIGKILL at
   random moments (every ``--kill-every`` seconds on average) and, once, the parent itself;
   the job is run again after each ending until it exits 0 (after ``--kills`` kills it is let
   finish);
4. **the clean run**: ``batchtok run`` of the same job into another directory, no kills;
5. compares every output file of the two runs row group by row group, every column (ids
   included), and prints peak worker RSS (the summaries' ``peak_worker_rss_mb``), throughput
   (MB of UTF-8 text / s, MB = 10^6 bytes, encode phase and whole run) and the comparison.

The last line printed is a JSON summary (also written to ``--json``). The exit status is 0
when the outputs are equal and every run ended as expected.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from itertools import zip_longest
from pathlib import Path

MB = 1_000_000
REPO = Path(__file__).resolve().parents[1]
GPT2 = REPO / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"
SHARDS_PER_FILE = 100  # row groups per input file, at most
EXIT_OK, EXIT_LOCKED = 0, 4


def log(msg: str) -> None:
    print(f"[soak {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- input ------------------------------------------------------------------------------------


def _rotated(doc: str, cycle: int) -> str:
    """``doc`` with its paragraphs (or lines, or words) rotated by ``cycle``: new text of the
    same kind, which no cache or dedup recognises as seen."""
    for sep in ("\n\n", "\n", " "):
        parts = doc.split(sep)
        if len(parts) > 1:
            k = cycle % len(parts)
            return sep.join(parts[k:] + parts[:k]) + (f"{sep}{cycle}" if k == 0 else "")
    return f"{doc} {cycle}"


def documents():
    """(kind, text) without end, the three corpora interleaved, then rotated."""
    from tests.support import corpora

    multi = [d for docs in corpora.multilingual_docs().values() for d in docs]
    kinds = (("english", corpora.english_docs()), ("code", corpora.code_docs()), ("multi", multi))
    base = [
        pair
        for row in zip_longest(*[[(k, d) for d in docs] for k, docs in kinds])
        for pair in row
        if pair is not None and pair[1]
    ]
    cycle = 0
    while True:
        for kind, doc in base:
            yield kind, (_rotated(doc, cycle) if cycle else doc)
        cycle += 1


def build_input(mb: float, shards: int) -> tuple[Path, float]:
    """The input directory (built once, cached) and its row groups' target size in MB."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.support.fixtures import cache_root

    target = cache_root() / "soak" / f"{mb:g}mb-{shards}s"
    marker = target / "_complete"
    group_bytes = int(mb * MB / shards)
    per_file = max(1, min(SHARDS_PER_FILE, shards // 4))  # several files, several shards each
    if marker.exists():
        return target, group_bytes / MB
    log(f"building {mb:g} MB of Parquet input in >= {shards} row groups in {target}")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    schema = pa.schema([("id", pa.int64()), ("kind", pa.string()), ("text", pa.string())])
    writer = None
    files = groups = row = 0
    rows: list[tuple[str, str]] = []
    size = 0

    def flush() -> None:
        nonlocal writer, files, groups, row, rows, size
        if writer is None or groups % per_file == 0:
            if writer is not None:
                writer.close()
            path = target / f"part-{files:04d}.parquet"
            writer = pq.ParquetWriter(path, schema, compression="zstd")
            files += 1
        table = pa.table(
            {
                "id": pa.array(range(row, row + len(rows)), pa.int64()),
                "kind": pa.array([k for k, _ in rows], pa.string()),
                "text": pa.array([t for _, t in rows], pa.string()),
            },
            schema=schema,
        )
        writer.write_table(table, row_group_size=len(rows))
        groups += 1
        row += len(rows)
        rows, size = [], 0

    total = 0
    for kind, text in documents():
        if total >= mb * MB and groups >= shards:
            break
        rows.append((kind, text))
        size += len(text.encode())
        total += len(text.encode())
        if size >= group_bytes:
            flush()
    if rows:
        flush()
    if writer is not None:
        writer.close()
    marker.write_text(json.dumps({"row_groups": groups, "files": files, "rows": row}))
    log(f"input: {groups} row groups in {files} files, {row} rows")
    return target, group_bytes / MB


def jsonl_input(parquet_dir: Path) -> Path:
    """The Parquet input's rows as JSON Lines, one plain ``.jsonl`` per Parquet file (built
    once, cached beside it): shards are then byte ranges of whole lines."""
    import pyarrow.parquet as pq

    target = parquet_dir.with_name(parquet_dir.name + "-jsonl")
    marker = target / "_complete"
    if marker.exists():
        return target
    log(f"writing the input as JSON Lines in {target}")
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for path in sorted(parquet_dir.glob("*.parquet")):
        with open(target / f"{path.stem}.jsonl", "w", encoding="utf-8") as out:
            for batch in pq.ParquetFile(path).iter_batches(batch_size=4096):
                for row in batch.to_pylist():
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
    marker.write_text("{}")
    return target


def write_job(
    work: Path, input_dir: Path, shard_mb: float, workers: int, jsonl: bool = False
) -> Path:
    job = work / "soak.toml"
    keep = '\nkeep_columns = ["id", "kind", "text"]' if jsonl else ""
    job.write_text(
        f'[input]\npaths = ["{input_dir}"]\n[tokenizer]\npath = "{GPT2}"\n'
        f'[output]\ndir = "{work / "out"}"{keep}\n'
        f"[run]\nworkers = {workers}\nshard_mb = {shard_mb:.6f}\n"
    )
    return job


# -- runs --------------------------------------------------------------------------------------


def run_cmd(job: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "batchtok", "run", str(job), "--output", str(out)]


def children(pid: int) -> list[int]:
    """Pids of the processes whose parent is ``pid`` (the run's workers)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        # the command name (field 2) is in parentheses and may hold spaces
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == pid:
            found.append(int(entry))
    return found


def wait_for_orphans(pids: list[int], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while any(os.path.exists(f"/proc/{p}") for p in pids) and time.monotonic() < deadline:
        time.sleep(0.1)


def soak_run(job: Path, out: Path, kills: int, kill_every: float, rng: random.Random) -> dict:
    """Run the job into ``out`` until it exits 0, killing a worker at random moments and the
    parent once; returns what happened."""
    parent_kill = rng.randint(1, max(1, kills // 2))  # which kill hits the parent
    done_kills = worker_kills = parent_kills = attempts = 0
    codes: list[int] = []
    started = time.monotonic()
    with open(out.parent / f"{out.name}.log", "w") as run_log:
        while True:
            attempts += 1
            proc = subprocess.Popen(run_cmd(job, out), cwd=REPO, stdout=run_log, stderr=run_log)
            while proc.poll() is None:
                if done_kills >= kills:
                    proc.wait()
                    break
                deadline = time.monotonic() + rng.uniform(0.2, 1.8) * kill_every
                while proc.poll() is None and time.monotonic() < deadline:
                    time.sleep(0.05)
                if proc.poll() is not None:
                    break
                workers = children(proc.pid)
                if done_kills + 1 == parent_kill:
                    log(f"kill {done_kills + 1}: the parent, pid {proc.pid}")
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()
                    wait_for_orphans(workers)
                    parent_kills += 1
                    done_kills += 1
                    break
                if not workers:
                    continue  # between phases: nobody to kill yet
                victim = rng.choice(workers)
                try:
                    os.kill(victim, signal.SIGKILL)
                except ProcessLookupError:
                    continue
                done_kills += 1
                worker_kills += 1
                log(f"kill {done_kills}: worker {victim}")
            code = proc.wait()
            codes.append(code)
            log(f"attempt {attempts} ended with exit code {code}")
            if code == EXIT_OK:
                break
            if code == EXIT_LOCKED:  # a killed run's workers still exiting
                time.sleep(1.0)
            if attempts > kills + 10:
                raise SystemExit(f"the soak run did not complete in {attempts} attempts")
    summary = json.loads((out / "_batchtok_summary.json").read_text(encoding="utf-8"))
    return {
        "attempts": attempts,
        "exit_codes": codes,
        "worker_kills": worker_kills,
        "parent_kills": parent_kills,
        "wall_seconds": round(time.monotonic() - started, 1),
        "last_summary": _figures(summary),
    }


def clean_run(job: Path, out: Path) -> dict:
    started = time.monotonic()
    with open(out.parent / f"{out.name}.log", "w") as run_log:
        code = subprocess.run(
            run_cmd(job, out), cwd=REPO, stdout=run_log, stderr=run_log
        ).returncode
    wall = time.monotonic() - started
    if code != EXIT_OK:
        raise SystemExit(f"the clean run failed with exit code {code}; see {out}.log")
    summary = json.loads((out / "_batchtok_summary.json").read_text(encoding="utf-8"))
    figures = _figures(summary)
    figures["wall_seconds"] = round(wall, 1)
    figures["mb_per_second_wall"] = round(summary["text_mb"] / wall, 3) if wall else None
    return figures


def _figures(summary: dict) -> dict:
    return {
        "status": summary["status"],
        "shards": summary["shards"],
        "text_mb": summary["text_mb"],
        "encode_seconds": summary["encode_seconds"],
        "mb_per_second": summary["mb_per_second"],
        "peak_worker_rss_mb": summary["peak_worker_rss_mb"],
        "parent_rss_mb_at_fork": summary.get("parent_rss_mb_at_fork"),
        "retries": len(summary.get("retries", [])),
    }


# -- comparison --------------------------------------------------------------------------------


def compare(a: Path, b: Path) -> dict:
    """Every visible output file of ``a`` and ``b``, row group by row group, every column."""
    import pyarrow.parquet as pq

    def visible(root: Path) -> list[str]:
        return sorted(
            p.relative_to(root).as_posix()
            for p in root.rglob("*.parquet")
            if not any(part.startswith((".", "_")) for part in p.relative_to(root).parts)
        )

    files_a, files_b = visible(a), visible(b)
    rows = differ = 0
    first_difference = None
    for name in sorted(set(files_a) & set(files_b)):
        fa, fb = pq.ParquetFile(a / name), pq.ParquetFile(b / name)
        batches_b = fb.iter_batches(batch_size=4096)
        for batch_a in fa.iter_batches(batch_size=4096):
            batch_b = next(batches_b, None)
            if batch_b is None or not batch_a.equals(batch_b):
                ids_a = batch_a.column("input_ids").to_pylist()
                ids_b = [] if batch_b is None else batch_b.column("input_ids").to_pylist()
                bad = sum(1 for x, y in zip_longest(ids_a, ids_b) if x != y) or len(ids_a)
                differ += bad
                first_difference = first_difference or f"{name} near row {rows}"
            rows += batch_a.num_rows
        if next(batches_b, None) is not None:
            differ += 1
            first_difference = first_difference or f"{name}: more rows in {b}"
    return {
        "files": len(files_a),
        "files_only_in_one": sorted(set(files_a) ^ set(files_b)),
        "rows": rows,
        "rows_differ": differ,
        "first_difference": first_difference,
        "equal": not differ and files_a == files_b and bool(files_a),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=1024.0, help="MB of text (default 1024)")
    parser.add_argument("--shards", type=int, default=1000, help="at least (default 1000)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--kills", type=int, default=30, help="kills in the soak run (30)")
    parser.add_argument("--kill-every", type=float, default=None, help="mean seconds between kills")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--work", type=Path, default=None, help="scratch directory")
    parser.add_argument("--json", type=Path, default=None, help="also write the summary here")
    parser.add_argument(
        "--jsonl", action="store_true", help="the same rows as JSON Lines (byte-range shards)"
    )
    args = parser.parse_args(argv)

    from tests.support.fixtures import cache_root

    rng = random.Random(args.seed)
    input_dir, group_mb = build_input(args.mb, args.shards)
    work = args.work or cache_root() / "soak" / "work"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    if args.jsonl:
        input_dir = jsonl_input(input_dir)
    job = write_job(work, input_dir, group_mb / 2, args.workers, args.jsonl)
    # spread the kills over about the first 60% of an expected run (~0.5 MB/s per worker)
    kill_every = args.kill_every or max(
        2.0, 0.6 * args.mb / (0.5 * args.workers) / max(args.kills, 1)
    )
    log(f"soak run: {args.kills} kills, one every ~{kill_every:.1f}s")
    soak = soak_run(job, work / "soak", args.kills, kill_every, rng)
    log(f"soak run complete after {soak['attempts']} attempts; clean run")
    clean = clean_run(job, work / "clean")
    log("comparing the outputs")
    same = compare(work / "soak", work / "clean")
    report = {
        "input": "jsonl" if args.jsonl else "parquet",
        "mb": args.mb,
        "shards": clean["shards"]["total"],
        "workers": args.workers,
        "soak": soak,
        "clean": clean,
        "comparison": same,
    }
    print(
        f"shards {report['shards']}, text {clean['text_mb']:.1f} MB\n"
        f"soak run:  {soak['attempts']} attempts, {soak['worker_kills']} workers and "
        f"{soak['parent_kills']} parent killed, exit codes {soak['exit_codes']}, "
        f"{soak['wall_seconds']:.0f}s; last attempt's peak worker RSS "
        f"{soak['last_summary']['peak_worker_rss_mb']} MB\n"
        f"clean run: {clean['mb_per_second']} MB/s encoding, {clean['mb_per_second_wall']} MB/s "
        f"wall ({clean['wall_seconds']:.0f}s), peak worker RSS {clean['peak_worker_rss_mb']} MB\n"
        f"outputs:   {same['files']} files, {same['rows']} rows, "
        + ("equal row for row" if same["equal"] else f"DIFFER: {same}")
    )
    line = json.dumps(report)
    print(line)
    if args.json:
        args.json.write_text(line + "\n")
    return 0 if same["equal"] else 1


if __name__ == "__main__":
    sys.exit(main())
