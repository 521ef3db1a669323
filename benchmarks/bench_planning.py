"""Planning at scale: a job of 100,000 shards on this machine, and hashing per core.

Run from the repository root::

    python -m benchmarks.bench_planning                       # 10,000 and 100,000 shards
    python -m benchmarks.bench_planning --scales 200 --hash-mb 2   # a smoke test

A shard is a run of whole row groups of one file holding about ``run.shard_mb`` of text
(batchtok/runner/plan.py), so a job of N shards is built cheaply as Parquet files of small row
groups (``--rows-per-group`` rows of ~150 bytes of English each, every row distinct) with
``run.shard_mb`` half a row group's text: one row group per shard, ``--shards-per-file`` shards
a file (default 10: 100,000 shards are 10,000 files, the file count of 10 TB in ~1 GB files).
The fixture (tens of MB per 10,000 shards, and as much output) lives in a temporary directory
removed at the end. Tokenizer: the bundled GPT-2 (encoding is not what is measured).

Measured at each scale, each in a fresh process, wall and CPU seconds:

* ``plan --no-hash``: ``batchtok plan JOB --no-hash`` (footers read, shards cut, a line per
  shard printed): planning without hashing;
* ``plan``: ``batchtok plan JOB``, which hashes every row group in its own process (one core);
* ``run``: ``batchtok run`` with 2 local workers into an empty output directory (hashing in
  the workers; the summary's hash and encode phases are given apart), and the driver's peak RSS;
* ``driver`` (before the run, so as a first run finds the job): in one process, the run's
  planning phase step by step: ``prepare`` (footers, tokenizer facts, shards), the records
  (none yet), the row groups hashed here (the run hashes in its workers; not planning), the
  shard keys and completion state (``resolve``), then a task for every shard (what the driver
  queues when all are to do), with the RSS and the tracemalloc size after each step (the
  tracemalloc pass is a second process: it slows the first); per shard = the growth / shards,
  and between two scales (the fixed costs cancel out);
* ``re-run``: ``batchtok run`` again with nothing to do, and ``plan`` with nothing to hash;
* the size on disk of the completion records (``OUT/.batchtok/records``), per shard.

Hashing throughput: ``hash_row_groups`` (what a hash task runs) over ``benchmarks.bench_runner``'s
Parquet corpus of distinct documents (2 MB row groups), in this process: MB of text per CPU
second, so that hashing 10 TB on 1,000 cores can be extrapolated (printed).

The last line is a JSON summary (also ``--json PATH``).
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks import bench_runner
from benchmarks.bench_runner import REPO, build_input, log
from benchmarks.files import tokenizer_path

MB = 1_000_000
ROW_BYTES = 150
TEN_TB = 10e12
CORES = 1000


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def peak_rss_mb() -> float:
    """This process's peak RSS since it started (VmHWM: ru_maxrss keeps the parent's peak
    across fork and exec, so a small child of a large parent reports the parent's)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def cpu_seconds(who: int = resource.RUSAGE_SELF) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


# -- the fixture --------------------------------------------------------------------------------


def build_fixture(root: Path, shards: int, per_file: int, rows_per_group: int) -> float:
    """``shards`` row groups of distinct English rows in files of ``per_file``; returns the
    ``run.shard_mb`` that makes each row group a shard (half its text, from the footer)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.support import corpora

    base = "".join(corpora.english_prose(2 * MB))
    base = " ".join(base.split())  # one long line: any slice is a plausible row
    root.mkdir(parents=True)
    files = -(-shards // per_file)
    row = 0
    for i in range(files):
        groups = min(per_file, shards - i * per_file)
        n = groups * rows_per_group
        texts = []
        for k in range(row, row + n):
            at = (k * 7919 * ROW_BYTES) % (len(base) - ROW_BYTES)
            texts.append(f"row {k}: {base[at : at + ROW_BYTES]}")
        table = pa.table({"id": pa.array(range(row, row + n), pa.int64()), "text": texts})
        name = root / f"{i // 1000:03d}" / f"part-{i:05d}.parquet"
        name.parent.mkdir(exist_ok=True)
        pq.write_table(table, name, row_group_size=rows_per_group, compression="zstd")
        row += n
    meta = pq.read_metadata(next(root.rglob("*.parquet")))
    text_bytes = meta.row_group(0).column(1).total_uncompressed_size
    return text_bytes / 2 / MB


def write_job(work: Path, inputs: Path, shard_mb: float) -> Path:
    """bench_runner's job (output in ``work/out``), with 2 workers and ``run.shard_mb``."""
    job = bench_runner.write_job(work, inputs, tokenizer_path("gpt2"))
    with job.open("a") as f:
        f.write(f"[run]\nworkers = 2\nshard_mb = {shard_mb!r}\n")
    return job


def disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


# -- timed commands -----------------------------------------------------------------------------


def timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall, CPU seconds of the process and its children, stdout) of a fresh process."""
    before = cpu_seconds(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode not in (0, 3):
        sys.stderr.write(proc.stdout[-2000:] + proc.stderr[-4000:])
        raise SystemExit(f"command failed ({proc.returncode}): {' '.join(cmd)}")
    return wall, cpu_seconds(resource.RUSAGE_CHILDREN) - before, proc.stdout


def batchtok(*args: str) -> list[str]:
    return [sys.executable, "-m", "batchtok", *args]


def me(*args: str) -> list[str]:
    return [sys.executable, "-m", "benchmarks.bench_planning", *args]


def driver_run(job_path: str) -> None:
    """``batchtok run`` in this process; print its exit code, peak RSS and phase times."""
    from batchtok.runner.job import load_job
    from batchtok.runner.run import run_job

    result = run_job(load_job(job_path), quiet=True)
    s = result.summary
    keys = ("elapsed_seconds", "hash_seconds", "encode_seconds", "parent_rss_mb_at_fork")
    found = {k: s.get(k) for k in keys}
    found.update(exit_code=result.exit_code, peak_rss_mb=peak_rss_mb(), shards=s.get("shards"))
    print(json.dumps(found))


def driver_memory(job_path: str, trace: bool) -> None:
    """The run's planning phase step by step in this process; print each step's wall time,
    RSS and (``trace``) tracemalloc size, and the shard count."""
    import tracemalloc

    from batchtok.runner.job import load_job
    from batchtok.runner.plan.keys import hash_row_groups
    from batchtok.runner.plan.prepare import prepare, state_dir
    from batchtok.runner.plan.records import Records, memo_hashes
    from batchtok.runner.plan.states import hash_spec, listed_parts, resolve, text_columns
    from batchtok.runner.plan.tasks import shard_tasks

    job = load_job(job_path)
    import pyarrow.parquet  # noqa: F401 - imported before the baseline, as a run has it

    steps = {}
    if trace:
        tracemalloc.start()

    def step(name: str, began: float) -> None:
        steps[name] = {
            "seconds": time.perf_counter() - began,
            "rss_mb": rss_mb(),
            "traced_mb": tracemalloc.get_traced_memory()[0] / 2**20 if trace else None,
        }

    step("baseline", time.perf_counter())
    began = time.perf_counter()
    prep = prepare(job, remember=False)
    step("prepare", began)
    began = time.perf_counter()
    sdir = state_dir(job)
    records = Records(sdir)
    found = {}
    for f in prep.files:
        record = records.load(f.rel)
        found[f.rel] = (record, memo_hashes(record, f.stat_key(), hash_spec(job, f)))
    unhashed = [f for f in prep.files if found[f.rel][1] is None]
    step("records", began)
    began = time.perf_counter()
    # A first run hashes in its workers; here, apart from planning, once (the traced pass
    # loads what the first pass hashed: hashing under tracemalloc is slow).
    saved = Path(job_path).with_suffix(".hashes.pickle")
    if trace and saved.exists():
        hashed = pickle.loads(saved.read_bytes())
    else:
        hashed = {
            f.rel: hash_row_groups(f.path, text_columns(job), f.keep_leaves) for f in unhashed
        }
        saved.write_bytes(pickle.dumps(hashed))
    for f in unhashed:
        found[f.rel] = ({}, hashed[f.rel])
    del hashed
    step("hash", began)
    began = time.perf_counter()
    parts = listed_parts(sdir / "parts")  # as the run does: listed once
    for f in prep.files:
        record, hashes = found[f.rel]
        fingerprint = prep.fingerprint(f)
        resolve(prep.states[f.rel], hashes, fingerprint, sdir / "parts", record, False, parts)
    step("resolve", began)
    began = time.perf_counter()
    tasks = [  # as the run makes them: a file's tasks together (they share its output's part)
        task
        for st in prep.states.values()
        if st.resolved
        for task in shard_tasks(prep, st, range(len(st.shards)), sdir / "parts", sdir / "tmp")
    ]
    step("tasks", began)
    shards = sum(len(st.shards) for st in prep.states.values())
    report = {"steps": steps, "shards": shards, "tasks": len(tasks), "unhashed": len(unhashed)}
    print(json.dumps(report))


def last_json(stdout: str) -> dict:
    return json.loads(stdout.strip().splitlines()[-1])


# -- one scale ----------------------------------------------------------------------------------


def measure_scale(shards: int, args: argparse.Namespace, out: dict, save) -> dict:
    """Every figure of one scale into ``out`` (filled as they come: ``--json`` is rewritten
    after each, so a run stopped early keeps what it measured)."""
    work = Path(tempfile.mkdtemp(prefix=f"bench-plan-{shards}-"))
    try:
        began = time.perf_counter()
        shard_mb = build_fixture(work / "in", shards, args.shards_per_file, args.rows_per_group)
        job = write_job(work, work / "in", shard_mb)
        files = len(list((work / "in").rglob("*.parquet")))
        log(f"{shards} shards in {files} files built in {time.perf_counter() - began:.0f}s")
        save()
        out.update(shards=shards, files=files, input_mb=disk_bytes(work / "in") / MB)
        wall, cpu, stdout = timed(batchtok("plan", str(job), "--no-hash"))
        found = stdout.strip().splitlines()[-1]
        out["plan_no_hash"] = {"wall": wall, "cpu": cpu, "says": found}
        log(f"plan --no-hash: {wall:.1f}s ({found})")
        save()
        wall, cpu, _ = timed(batchtok("plan", str(job)))
        out["plan_hashing"] = {"wall": wall, "cpu": cpu}
        log(f"plan (hashing in its process): {wall:.1f}s")
        save()
        for trace in (False, True):  # before the run: the state of a first run's driver
            flags = ["--driver-memory", str(job)] + (["--trace"] if trace else [])
            wall, cpu, stdout = timed(me(*flags))
            out["driver_traced" if trace else "driver"] = {"wall": wall, **last_json(stdout)}
        log(f"driver: {out['driver']['steps']}")
        save()
        if shards > args.run_up_to:
            return out
        wall, cpu, stdout = timed(me("--driver-run", str(job)))
        out["run"] = {"wall": wall, "cpu": cpu, **last_json(stdout)}
        log(f"run: {wall:.1f}s, {out['run']}")
        save()
        if out["run"]["shards"]["done"] != shards:
            raise SystemExit(f"the run did {out['run']['shards']} shards, expected {shards}")
        wall, cpu, stdout = timed(me("--driver-run", str(job)))
        out["rerun"] = {"wall": wall, "cpu": cpu, **last_json(stdout)}
        log(f"re-run: {wall:.1f}s")
        save()
        wall, cpu, _ = timed(batchtok("plan", str(job)))
        out["plan_after_run"] = {"wall": wall, "cpu": cpu}
        sdir = work / "out" / ".batchtok"
        out["records_bytes"] = disk_bytes(sdir / "records")
        out["records_files"] = len(list((sdir / "records").rglob("*.json")))
        out["output_mb"] = disk_bytes(work / "out") / MB
        return out
    finally:
        shutil.rmtree(work, ignore_errors=True)


def tiny_driver(args: argparse.Namespace) -> dict:
    """The driver's peak RSS on a one-shard job: what every run holds whatever its size."""
    work = Path(tempfile.mkdtemp(prefix="bench-plan-tiny-"))
    try:
        shard_mb = build_fixture(work / "in", 1, 1, args.rows_per_group)
        _, _, stdout = timed(me("--driver-run", str(write_job(work, work / "in", shard_mb))))
        return last_json(stdout)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def hashing(mb: float) -> dict:
    """MB of text per CPU second (and per wall second) of hash_row_groups on real text."""
    from batchtok.runner.plan.keys import hash_row_groups
    from benchmarks.bench_runner import text_bytes

    input_dir = build_input(mb, "distinct")
    text = text_bytes(input_dir) / MB
    paths = sorted(str(p) for p in input_dir.glob("*.parquet"))
    rounds = []
    for _ in range(3):
        cpu, start = cpu_seconds(), time.perf_counter()
        for path in paths:
            hash_row_groups(path, ("text",), (0, 1))  # the id and kind columns are kept
        rounds.append((time.perf_counter() - start, cpu_seconds() - cpu))
    wall = statistics.median(r[0] for r in rounds)
    cpu = statistics.median(r[1] for r in rounds)
    return {
        "mb": text,
        "wall": wall,
        "cpu": cpu,
        "mb_per_cpu_s": text / cpu,
        "mb_per_s": text / wall,
    }


# -- report -------------------------------------------------------------------------------------


def _cell(found: dict | None, key: str = "wall", width: int = 8) -> str:
    return f"{found[key]:{width}.1f}" if found else f"{'-':>{width}}"


def _traced_total(s: dict) -> float:
    traced = s["driver_traced"]["steps"]
    return traced["tasks"]["traced_mb"] - traced["baseline"]["traced_mb"]


def report(scales: list[dict], tiny: dict, hashed: dict, load: tuple[float, float]) -> None:
    print(f"load average {load[0]:.2f} before, {load[1]:.2f} after; 2 local workers; gpt2")
    print(
        f"hashing (hash_row_groups, {hashed['mb']:.1f} MB of real text, 2 MB row groups, one "
        f"process): {hashed['mb_per_cpu_s']:.0f} MB per CPU second ({hashed['mb_per_s']:.0f} "
        "MB/s wall)"
    )
    rate = hashed["mb_per_cpu_s"] * MB
    print(
        f"  10 TB: {TEN_TB / rate / CORES / 60:.1f} min on {CORES} cores (the run's hash "
        f"phase, if storage delivers {CORES * hashed['mb_per_cpu_s'] / 1000:.0f} GB/s), "
        f"{TEN_TB / rate / 3600:.1f} h in `batchtok plan` (it hashes in one process)"
    )
    base_rss = tiny["peak_rss_mb"]
    print(f"driver peak RSS of a one-shard run: {base_rss:.0f} MB")
    print("wall seconds, CPU seconds below; plan 2: plan after the run (nothing to hash)")
    print(
        f"{'shards':>8} {'files':>6} {'plan -n':>8} {'plan':>8} {'run':>8} {'hash':>8} "
        f"{'encode':>8} {'re-run':>8} {'plan 2':>8} {'peak MB':>8} {'rec B/sh':>8}"
    )
    for s in scales:
        n, run = s["shards"], s.get("run")
        rec = f"{s['records_bytes'] / n:8.0f}" if run else f"{'-':>8}"
        print(
            f"{n:8,} {s['files']:6,} {_cell(s['plan_no_hash'])} {_cell(s['plan_hashing'])} "
            f"{_cell(run)} {_cell(run, 'hash_seconds')} {_cell(run, 'encode_seconds')} "
            f"{_cell(s.get('rerun'))} {_cell(s.get('plan_after_run'))} "
            f"{_cell(run, 'peak_rss_mb')} {rec}"
        )
        print(
            f"{'':15} {_cell(s['plan_no_hash'], 'cpu')} {_cell(s['plan_hashing'], 'cpu')} "
            f"{_cell(run, 'cpu')} {'':17} {_cell(s.get('rerun'), 'cpu')} "
            f"{_cell(s.get('plan_after_run'), 'cpu')}"
        )
        if run:
            s["records_bytes_per_shard"] = s["records_bytes"] / n
            s["driver_peak_kb_per_shard"] = (run["peak_rss_mb"] - base_rss) * 1024 / n
            s["run_ms_per_shard"] = run["wall"] * 1000 / n
            s["rerun_ms_per_shard"] = s["rerun"]["wall"] * 1000 / n
            print(
                f"{'':15} per shard: run {s['run_ms_per_shard']:.1f} ms (2 workers), re-run "
                f"{s['rerun_ms_per_shard']:.2f} ms, driver peak RSS "
                f"{s['driver_peak_kb_per_shard']:.2f} KB over the one-shard run's"
            )
    print("the run's planning phase in one process, step by step (seconds; growth a shard):")
    for s in scales:
        steps, traced = s["driver"]["steps"], s["driver_traced"]["steps"]
        n = s["shards"]
        parts, previous = [], "baseline"
        for name in ("prepare", "records", "hash", "resolve", "tasks"):
            rss = (steps[name]["rss_mb"] - steps[previous]["rss_mb"]) * 1024 / n
            mem = (traced[name]["traced_mb"] - traced[previous]["traced_mb"]) * 1024 / n
            parts.append(f"{name} {steps[name]['seconds']:.1f}s {rss:.2f}/{mem:.2f} KB")
            previous = name
        s["driver_traced_kb_per_shard"] = (
            (traced["tasks"]["traced_mb"] - traced["baseline"]["traced_mb"]) * 1024 / n
        )
        s["driver_rss_kb_per_shard"] = (
            (steps["tasks"]["rss_mb"] - steps["baseline"]["rss_mb"]) * 1024 / n
        )
        s["planning_seconds"] = sum(
            steps[k]["seconds"] for k in ("prepare", "records", "resolve", "tasks")
        )
        print(f"  {n:,} shards (RSS/tracemalloc): {'; '.join(parts)}")
        if s is not scales[0]:  # the fixed costs cancel out between two scales
            before = scales[scales.index(s) - 1]
            span = n - before["shards"]
            s["marginal_traced_kb_per_shard"] = (
                (_traced_total(s) - _traced_total(before)) * 1024 / span
            )
            s["marginal_planning_ms_per_shard"] = (
                (s["planning_seconds"] - before["planning_seconds"]) * 1000 / span
            )
        print(
            f"  {'':{len(f'{n:,}')}} all but hashing: {s['planning_seconds']:.1f}s; "
            f"{s['driver_rss_kb_per_shard']:.2f} KB RSS, {s['driver_traced_kb_per_shard']:.2f} "
            "KB traced a shard"
        )
        if "marginal_traced_kb_per_shard" in s:
            print(
                f"  {'':{len(f'{n:,}')}} from the scale before: "
                f"{s['marginal_traced_kb_per_shard']:.2f} KB traced and "
                f"{s['marginal_planning_ms_per_shard']:.3f} ms of planning a shard more"
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scales", default="10000,100000", help="shard counts, comma-separated")
    parser.add_argument("--shards-per-file", type=int, default=10)
    parser.add_argument("--rows-per-group", type=int, default=2)
    parser.add_argument("--hash-mb", type=float, default=100.0)
    parser.add_argument(
        "--run-up-to",
        type=int,
        default=100_000,
        help="run (and re-run) the job only at scales up to this many shards; planning and "
        "the driver's memory are measured at every scale",
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("--driver-run", metavar="JOB", help=argparse.SUPPRESS)
    parser.add_argument("--driver-memory", metavar="JOB", help=argparse.SUPPRESS)
    parser.add_argument("--trace", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.driver_run:
        driver_run(args.driver_run)
        return 0
    if args.driver_memory:
        driver_memory(args.driver_memory, args.trace)
        return 0
    load = os.getloadavg()[0]
    hashed = hashing(args.hash_mb)
    log(f"hashing: {hashed}")
    tiny = tiny_driver(args)
    scales: list[dict] = []
    summary = {"hashing": hashed, "one_shard_driver": tiny, "scales": scales}

    def save() -> None:
        if args.json:
            args.json.write_text(json.dumps(summary, indent=2))

    for n in args.scales.split(","):
        scales.append({})
        measure_scale(int(n), args, scales[-1], save)
    report(scales, tiny, hashed, (load, os.getloadavg()[0]))
    save()
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
