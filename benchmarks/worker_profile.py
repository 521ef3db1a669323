"""A runner worker against the engine alone on the same texts, and where the worker's time goes.

Run from the repository root::

    python -m benchmarks.worker_profile                          # 30 MB of dedup, llama3
    python -m benchmarks.worker_profile --tokenizer gemma3 --repeats 5
    python -m benchmarks.worker_profile --profile-only --cprofile 25

The input is bench_runner's (``--corpus``, ``--mb``: the same cached Parquet files, 8 files,
row groups of ~2 MB of text). Timed, each in a fresh process, interleaved, ``--repeats``
rounds (wall seconds, min and median; the machine is shared, so the min is the figure and
the spread says how noisy it was):

* ``engine``: load the tokenizer, read each input row group's text column
  (``to_pylist``), ``Tokenizer.encode_batch_ids_flat`` on it (the call a worker makes: the
  ids as one array); nothing written. A row group is the
  batch the runner encodes here (its pieces are cut at the output row groups, one per input
  row group of at most ``output.row_group_mb``), and the piece cache is sized as the job
  sizes a worker's (``run.cache_mb``): a different size changes the hit rate on distinct
  text. ``engine (default cache)``: the same with the engine's default cache, to show what
  the size costs;
* ``batchtok 1w`` / ``batchtok 2w``: ``batchtok run`` with 1 and 2 workers into an empty
  output directory (hashing, encoding, writing zstd Parquet, records, summary).

Then, untimed against the peers, a **phase profile** of one 1-worker run, in this process
(the worker forked from it, so the timers below are in the worker too): wall and CPU time
of the parent and of the worker, and the worker's time by phase, from timers wrapped around
the runner's functions: hashing the inputs, reading batches, the text column as Python str,
the engine's ``encode_batch_ids_flat``, the rest of encoding (``Encoder.encode_into`` less the
engine: ids into the output buffer), special-token and id counting, the ids and
counts columns, the output table, writing Parquet (zstd), closing/fsyncing/hashing/recording
the file, and what is left of ``encode_shard``. ``--cprofile N`` adds the worker's top
``N`` functions by own time. Last, the piece cache's hit rate with the job's cache and with
the engine's default (benchmarks/piece_cache.py).

Every process loads its tokenizer through a load cache of this benchmark's own
(``$BATCHTOK_CACHE/worker_profile/loaded`` unless ``BATCHTOK_LOAD_CACHE`` is set), so that no
other checkout's entries push its entries out; ``--compare DIR`` runs another checkout, whose
code, and so whose entries, differ.
"""

from __future__ import annotations

import argparse
import cProfile
import functools
import json
import os
import pstats
import resource
import shutil
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

from benchmarks import bench_runner
from benchmarks.bench_runner import CORPORA, MB, batchtok_cmd, build_input, text_bytes, timed

REPO = Path(__file__).resolve().parents[1]


# -- the engine alone (its own process) --------------------------------------------------------


def engine_alone(input_dir: Path, tokenizer: Path, cache_mb: float | None) -> None:
    """Load, read each row group's text, encode it; print phase seconds as JSON."""
    t0 = time.perf_counter()
    import pyarrow.parquet as pq

    from batchtok import Tokenizer

    tok = Tokenizer.from_file(tokenizer)
    if cache_mb is not None:
        tok.set_cache_size(cache_mb)
    loaded = time.perf_counter()
    read = encode = 0.0
    batches = tokens = 0
    for path in sorted(input_dir.glob("*.parquet")):
        pf = pq.ParquetFile(path)
        for i in range(pf.metadata.num_row_groups):
            a = time.process_time()
            texts = pf.read_row_group(i, columns=["text"], use_threads=False)["text"].to_pylist()
            b = time.process_time()
            flat, _ = tok.encode_batch_ids_flat(texts, True)
            encode += time.process_time() - b
            read += b - a
            batches += 1
            tokens += len(flat)
    report = {
        "load_s": loaded - t0,
        "read_s": read,
        "encode_s": encode,
        "batches": batches,
        "tokens": tokens,
        "cpu_s": time.process_time(),
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }
    print(json.dumps(report))


def engine_cmd(input_dir: Path, tokenizer: Path, cache_mb: float | None) -> list[str]:
    cache = "default" if cache_mb is None else f"{cache_mb:g}"
    return [
        sys.executable,
        "-m",
        "benchmarks.worker_profile",
        "--engine-alone",
        str(input_dir),
        str(tokenizer),
        cache,
    ]


# -- the phase profile -------------------------------------------------------------------------

# (module, attribute path, phase): the functions whose time is a phase of the worker
PHASES: tuple[tuple[str, str, str], ...] = (
    ("batchtok.runner.exec.worker", "hash_file", "hash inputs (task)"),
    ("batchtok.runner.exec.worker", "encode_shard", "encode shard (task, all of it)"),
    ("batchtok.runner.exec.worker", "assemble_file", "join parts (task)"),
    ("batchtok.runner.exec.worker", "texts_and_bad_rows", "text column -> str"),
    ("batchtok.runner.exec.encode", "Encoder.encode_into", "encode_into (engine + around it)"),
    ("batchtok.tokenizer", "Tokenizer.encode_batch_ids", "engine encode_batch_ids"),
    ("batchtok.tokenizer", "Tokenizer.encode_batch_ids_flat", "engine encode_batch_ids_flat"),
    ("batchtok.tokenizer", "Tokenizer.encode_ids_into", "engine encode_ids_into (long rows)"),
    ("batchtok.runner.exec.encode", "SpecialCounter.count", "count special tokens"),
    ("batchtok.runner.exec.worker", "IdCounter.count", "count ids"),
    ("batchtok.runner.exec.worker", "TokenStats.add_documents", "token stats of rows"),
    ("batchtok.runner.exec.worker", "list_arrays", "ids + counts columns"),
    ("batchtok.runner.exec.worker", "_text_bytes", "text bytes (x2 a batch)"),
    ("pyarrow", "RecordBatch.from_arrays", "output batch"),
    ("pyarrow", "Table.from_batches", "output table"),
    ("batchtok.runner.outputs.parquet", "AtomicParquet.write", "write Parquet (zstd)"),
    (
        "batchtok.runner.outputs.parquet",
        "AtomicParquet.__exit__",
        "close, fsync, hash, record, rename",
    ),
    ("batchtok.runner.exec.worker", "WorkerContext.beat", "heartbeat to the parent"),
)
GENERATORS: tuple[tuple[str, str, str], ...] = (
    ("batchtok.runner.exec.worker", "read_batches", "read batches (Parquet -> Arrow)"),
)

_TIMES: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])  # phase -> [seconds, calls]


def _timed(fn: Callable, phase: str) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        start = time.process_time()
        try:
            return fn(*args, **kwargs)
        finally:
            entry = _TIMES[phase]
            entry[0] += time.process_time() - start
            entry[1] += 1

    return wrapper


def _timed_generator(fn: Callable, phase: str) -> Callable:
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        it = fn(*args, **kwargs)
        while True:
            start = time.process_time()
            try:
                item = next(it)
            except StopIteration:
                return
            finally:
                entry = _TIMES[phase]
                entry[0] += time.process_time() - start
                entry[1] += 1
            yield item

    return wrapper


def _patch(module_name: str, path: str, wrap: Callable) -> None:
    import importlib

    owner = importlib.import_module(module_name)
    *parents, name = path.split(".")
    for parent in parents:
        owner = getattr(owner, parent)
    setattr(owner, name, wrap(getattr(owner, name)))


def install_timers(cprofile_dir: Path | None) -> None:
    """Wrap the phase functions (in this process: the forked worker inherits them) and make
    each task write its timers (and cProfile stats) under ``cprofile_dir``."""
    import pyarrow as pa

    from batchtok.runner.exec import local as executor
    from batchtok.runner.exec import worker

    for module_name, path, phase in PHASES:
        if module_name == "pyarrow":
            continue
        _patch(module_name, path, lambda fn, phase=phase: _timed(fn, phase))
    for module_name, path, phase in GENERATORS:
        _patch(module_name, path, lambda fn, phase=phase: _timed_generator(fn, phase))
    # the task table holds the task functions themselves
    for kind, fn in list(worker.TASK_FUNCTIONS.items()):
        worker.TASK_FUNCTIONS[kind] = getattr(worker, fn.__name__)
    # pyarrow's classes cannot take attributes: the worker's view of them is wrapped instead
    worker.pa = _TimedPyarrow(pa)
    original = executor.run_task
    parent = os.getpid()

    def run_task(task, report, ctx):
        if os.getpid() == parent:
            raise RuntimeError("the profile expects tasks in forked workers")
        if not _TIMES.get("_forked"):
            _TIMES.clear()  # the parent's calls before the fork (loading, facts)
            _TIMES["_forked"] = [1.0, 0]
        profile = cProfile.Profile() if cprofile_dir is not None else None
        if profile is not None:
            profile.enable()
        try:
            return original(task, report, ctx)
        finally:
            if profile is not None:
                profile.disable()
                profile.dump_stats(cprofile_dir / f"{os.getpid()}-{time.monotonic_ns()}.pstats")
            dump = {k: v for k, v in _TIMES.items()}
            dump["_cpu"] = [time.process_time(), 0]
            (cprofile_dir / f"times-{os.getpid()}.json").write_text(json.dumps(dump))

    executor.run_task = run_task


class _TimedPyarrow:
    """pyarrow as the worker module sees it, with RecordBatch.from_arrays and
    Table.from_batches timed."""

    def __init__(self, pa) -> None:
        self._pa = pa
        self.RecordBatch = _TimedClass(pa.RecordBatch, {"from_arrays": "output batch"})
        self.Table = _TimedClass(pa.Table, {"from_batches": "output table"})

    def __getattr__(self, name):
        return getattr(self._pa, name)


class _TimedClass:
    def __init__(self, cls, methods: dict[str, str]) -> None:
        self._cls = cls
        for name, phase in methods.items():
            setattr(self, name, _timed(getattr(cls, name), phase))

    def __getattr__(self, name):
        return getattr(self._cls, name)


def profile_run(job: Path, out: Path, workers: int, work: Path, top: int) -> dict:
    """One run in this process with the timers installed; the phase table as a dict."""
    from batchtok.runner.job import load_job
    from batchtok.runner.run import run_job

    dump_dir = work / "profile"
    shutil.rmtree(dump_dir, ignore_errors=True)
    dump_dir.mkdir(parents=True)
    shutil.rmtree(out, ignore_errors=True)
    install_timers(dump_dir)
    loaded = load_job(job, {"output.dir": str(out), "run.workers": workers})
    cpu0, wall0 = time.process_time(), time.perf_counter()
    result = run_job(loaded, quiet=True)
    wall = time.perf_counter() - wall0
    parent_cpu = time.process_time() - cpu0
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert result.exit_code == 0, result.summary
    phases: dict[str, list[float]] = defaultdict(lambda: [0.0, 0])
    worker_cpu = 0.0
    for path in dump_dir.glob("times-*.json"):
        for phase, (seconds, calls) in json.loads(path.read_text()).items():
            if phase == "_forked":
                continue
            if phase == "_cpu":
                worker_cpu += seconds
                continue
            phases[phase][0] += seconds
            phases[phase][1] += calls
    report = {
        "wall_s": wall,
        "parent_cpu_s": parent_cpu,
        "children_cpu_s": children.ru_utime + children.ru_stime,
        "worker_cpu_s": worker_cpu,
        "phases": dict(phases),
        "summary": {
            k: result.summary.get(k)
            for k in ("elapsed_seconds", "hash_seconds", "encode_seconds", "startup_seconds")
        },
        "peak_worker_rss_mb": result.summary.get("peak_worker_rss_mb"),
    }
    if top:
        stats_files = sorted(str(p) for p in dump_dir.glob("*.pstats"))
        if stats_files:
            stats = pstats.Stats(*stats_files, stream=sys.stdout)
            print(f"worker: top {top} functions by own time (cProfile, all tasks)")
            stats.sort_stats("tottime").print_stats(top)
    return report


def print_profile(report: dict, size: int) -> None:
    print(
        f"phase profile of one 1-worker run, in-process: wall {report['wall_s']:.2f} s, parent "
        f"CPU {report['parent_cpu_s']:.2f} s, worker CPU {report['worker_cpu_s']:.2f} s, peak "
        f"worker RSS {report['peak_worker_rss_mb']:.0f} MB; summary {report['summary']}"
    )
    order = [p for _, _, p in PHASES] + [p for _, _, p in GENERATORS]
    phases = report["phases"]
    shard = phases.get("encode shard (task, all of it)", [0.0, 0])[0]
    print(f"  {'worker phase (CPU)':<40} {'s':>7} {'calls':>6} {'% shard':>8}")
    for phase in order:
        if phase in phases:
            seconds, calls = phases[phase]
            share = 100 * seconds / shard if shard else 0.0
            print(f"  {phase:<40} {seconds:>7.3f} {calls:>6} {share:>7.1f}%")
    engine = sum(
        phases.get(p, [0.0])[0]
        for p in (
            "engine encode_batch_ids",
            "engine encode_batch_ids_flat",
            "engine encode_ids_into (long rows)",
        )
    )
    if shard:
        print(
            f"  encode shard less the engine: {shard - engine:.3f} s "
            f"({100 * (shard - engine) / shard:.1f}% of the shards); engine "
            f"{size / MB / engine if engine else 0:.2f} MB/s"
        )


def cache_rates(input_dir: Path, tokenizer: Path, cache_mb: float) -> dict:
    """The piece cache's hit rate over the input in order (one worker's), with the job's
    cache and with the engine's default; printed."""
    import pyarrow.parquet as pq

    from batchtok import Tokenizer
    from benchmarks import piece_cache

    texts = [
        t for p in sorted(input_dir.glob("*.parquet")) for t in pq.read_table(p)["text"].to_pylist()
    ]
    out = {}
    for name, mb in ((f"run.cache_mb {cache_mb:g}", cache_mb), ("engine default", None)):
        tok = Tokenizer.from_file(tokenizer)
        if mb is not None:
            tok.set_cache_size(mb)
        figures = piece_cache.cache_figures(tok, texts, piece_cache.snapshot(tok))
        out[name] = figures
        print(
            f"piece cache, {name} ({figures['cache_limit']} pieces a generation): hit rate "
            f"{figures['hit_pct']:.2f}% of {figures['pieces']} pre-tokens, repeat rate (the "
            f"ceiling) {figures['repeat_pct']:.2f}%, {figures['generation_switches']} switches"
        )
    return out


# -- input and timing --------------------------------------------------------------------------


def paragraph_input(mb: float, corpus: str) -> Path:
    """bench_runner's input of ``mb`` MB of ``corpus`` with every document cut into its
    paragraphs, one row each (the same text, ~15x the rows: per-row costs show), built once."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from tests.support.fixtures import cache_root

    source = build_input(mb, corpus)
    target = cache_root() / "worker_profile" / f"{source.name}-paragraphs"
    if (target / "_complete").exists():
        return target
    shutil.rmtree(target, ignore_errors=True)
    target.mkdir(parents=True)
    for path in sorted(source.glob("*.parquet")):
        table = pq.read_table(path)
        rows = [
            (i, kind, part)
            for i, kind, text in zip(*(table[c].to_pylist() for c in ("id", "kind", "text")))
            for part in text.split("\n\n")
            if part
        ]
        out = pa.table(
            {
                "id": pa.array([r[0] for r in rows], pa.int64()),
                "kind": pa.array([r[1] for r in rows], pa.string()),
                "text": pa.array([r[2] for r in rows], pa.string()),
            }
        )
        mean = max(1.0, sum(len(r[2].encode()) for r in rows) / max(1, len(rows)))
        size = max(1, int(bench_runner.ROW_GROUP_MB * MB / mean))
        pq.write_table(out, target / path.name, row_group_size=size, compression="zstd")
    (target / "_complete").write_text("")
    return target


def timed_cpu(cmd: list[str], code: Path | None = None) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the process and its children) of ``cmd``; ``code``: a
    checkout of batchtok to run instead of this one (``--compare``)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    if code is None:
        wall, _ = timed(cmd)
    else:
        env = {**os.environ, "PYTHONPATH": str(code)}
        start = time.perf_counter()
        subprocess.run(cmd, cwd=code, env=env, check=True, capture_output=True)
        wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    return wall, cpu


# -- paired runs -------------------------------------------------------------------------------


def print_times(times: dict[str, list[float]], cpus: dict[str, list[float]], size: int) -> None:
    print(
        f"{'fresh process each':<24} {'wall min':>9} {'median':>7} {'max':>6} {'MB/s':>6} "
        f"{'vs engine':>9} {'CPU min':>8} {'vs engine':>9}"
    )
    base, base_cpu = min(times["engine"]), min(cpus["engine"])
    for name, seconds in times.items():
        best, cpu = min(seconds), min(cpus[name])
        print(
            f"{name:<24} {best:>9.2f} {statistics.median(seconds):>7.2f} {max(seconds):>6.2f} "
            f"{size / MB / best:>6.2f} {best / base:>8.3f}x {cpu:>8.2f} {cpu / base_cpu:>8.3f}x"
        )
    # paired: each round's runs were next to each other
    for a, b in (("batchtok 1w", "engine"), ("batchtok 1w", "batchtok 2w")):
        if a in times and b in times:
            rounds = ", ".join(f"{x / y:.3f}" for x, y in zip(times[a], times[b]))
            print(f"{a} / {b}, wall, each round: {rounds}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=30.0)
    parser.add_argument("--tokenizer", default="llama3")
    parser.add_argument("--corpus", choices=CORPORA, default="dedup")
    parser.add_argument(
        "--paragraphs", action="store_true", help="one row per paragraph (many short rows)"
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None, help="scratch directory")
    parser.add_argument("--profile-only", action="store_true", help="no timed runs")
    parser.add_argument("--no-profile", action="store_true", help="timed runs only")
    parser.add_argument("--no-two", action="store_true", help="leave out the 2-worker runs")
    parser.add_argument("--cprofile", type=int, default=0, metavar="N")
    parser.add_argument("--no-cache-figures", action="store_true")
    parser.add_argument(
        "--cache-mb",
        default="",
        metavar="MB,MB",
        help="also time 1-worker runs with these run.cache_mb",
    )
    parser.add_argument(
        "--compare",
        type=Path,
        default=None,
        metavar="DIR",
        help="also time 1-worker runs of the batchtok checked out in DIR (e.g. an earlier commit "
        "exported with git archive)",
    )
    parser.add_argument("--json", type=Path, default=None, help="also write the results here")
    parser.add_argument("--engine-alone", nargs=3, metavar=("IN", "TOK", "CACHE_MB"))
    args = parser.parse_args(argv)
    if args.engine_alone:
        input_dir, tokenizer, cache = args.engine_alone
        engine_alone(Path(input_dir), Path(tokenizer), None if cache == "default" else float(cache))
        return 0

    from batchtok.runner.job import load_job
    from benchmarks.files import tokenizer_path
    from tests.support.fixtures import cache_root

    # a load cache of this benchmark's own: entries other checkouts add (any change of
    # batchtok's code is one) would prune its entries and make some loads cold at random
    loaded = cache_root() / "worker_profile" / "loaded"
    os.environ.setdefault("BATCHTOK_LOAD_CACHE", str(loaded))
    tokenizer = tokenizer_path(args.tokenizer)
    input_dir = (paragraph_input if args.paragraphs else build_input)(args.mb, args.corpus)
    size = text_bytes(input_dir)
    work = args.work or Path(os.environ.get("TMPDIR", "/tmp")) / "batchtok-worker-profile"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    job = bench_runner.write_job(work, input_dir, tokenizer)
    cache_mb = load_job(job).cache_mb
    print(
        f"input: {size / MB:.1f} MB of {args.corpus} text in {input_dir} ({args.tokenizer}), "
        f"run.cache_mb {cache_mb:g}, {os.cpu_count()} cores"
    )
    result: dict = {"mb": size / MB, "tokenizer": args.tokenizer, "corpus": args.corpus}
    if not args.profile_only:
        runs: dict[str, Callable[[], tuple[float, float]]] = {
            "engine": lambda: timed_cpu(engine_cmd(input_dir, tokenizer, cache_mb)),
            "engine (default cache)": lambda: timed_cpu(engine_cmd(input_dir, tokenizer, None)),
        }
        for workers in (1,) if args.no_two else (1, 2):
            out = work / f"out{workers}"

            def run(out=out, workers=workers) -> tuple[float, float]:
                shutil.rmtree(out, ignore_errors=True)
                return timed_cpu(batchtok_cmd(job, out, workers))

            runs[f"batchtok {workers}w"] = run
            if workers == 1 and args.compare is not None:

                def earlier(out=out) -> tuple[float, float]:
                    shutil.rmtree(out, ignore_errors=True)
                    return timed_cpu(batchtok_cmd(job, out, 1), args.compare)

                runs[f"batchtok 1w ({args.compare.name})"] = earlier
            for mb in filter(None, args.cache_mb.split(",")) if workers == 1 else ():

                def cached(out=out, mb=mb) -> tuple[float, float]:
                    shutil.rmtree(out, ignore_errors=True)
                    return timed_cpu([*batchtok_cmd(job, out, 1), "--set", f"run.cache_mb={mb}"])

                runs[f"batchtok 1w cache_mb={mb}"] = cached
        times: dict[str, list[float]] = {k: [] for k in runs}
        cpus: dict[str, list[float]] = {k: [] for k in runs}
        for r in range(args.repeats):
            for name, run in runs.items():
                bench_runner.log(f"round {r + 1}/{args.repeats}: {name}")
                wall, cpu = run()
                times[name].append(wall)
                cpus[name].append(cpu)
        print_times(times, cpus, size)
        result["times"] = times
        result["cpu"] = cpus
    if not args.no_profile:
        bench_runner.log("phase profile (untimed against the peers)")
        report = profile_run(job, work / "profile-out", 1, work, args.cprofile)
        print_profile(report, size)
        result["profile"] = report
    if not args.no_cache_figures:
        bench_runner.log("piece cache figures (untimed)")
        result["piece_cache"] = cache_rates(input_dir, tokenizer, cache_mb)
    print(json.dumps(result))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
