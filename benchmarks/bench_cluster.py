"""The Ray executor against the local one, and inputs on S3 against local files, on one job.

Run from the repository root::

    python -m benchmarks.bench_cluster --mb 100 --repeats 3      # the measurement
    python -m benchmarks.bench_cluster --mb 1 --repeats 1        # a smoke test

The job is ``benchmarks.bench_formats``'s: ``benchmarks.bench_runner``'s Parquet corpus of
distinct documents (built once, cached; at most ~66 MB exist, and the output says how much
was used), 2 workers, one ``batchtok run`` per variant and repeat in a fresh process into an
empty output directory:

* ``local``: forked workers, local files (the baseline);
* ``ray, joined``: ``--executor ray`` joining a 2-CPU cluster this script started once,
  outside the timed region (its start time is reported apart: ``cluster start``);
* ``ray, own cluster``: ``--executor ray`` with no address, so the run starts (and stops) its
  own local cluster: the end-to-end time including the start;
* ``local, S3 in``: the same files on the tests' moto S3 server on 127.0.0.1 (started here,
  a thread of this process), ``input.paths = ["s3://bench-in/corpus/"]`` and ``storage.endpoint``;
* ``local, S3 in and out``: the same with ``output.dir = "s3://bench-out/VARIANT-N/"``; run only
  when the job accepts an ``s3://`` output directory, else printed as skipped with the reason.

Variants are interleaved within each repeat, so a change of the machine's load hits them
alike. CPU time is every process's the variant used: the driver and its forked workers (as
waited-for children), the Ray cluster's processes for the joined variant and the driver's
whole tree for the own-cluster one (sampled from ``/proc``: :class:`TreeSampler`), and for S3
the server's thread (this process's own CPU time).
Every output is checked row for row against the local run's ids (a difference: exit 1).

Printed: median wall and CPU seconds, MB/s, and the ratios to ``local`` (Ray's overhead in
percent, target <= 10 %; S3 over local files), of the medians and "paired" (the median of each
repeat over the local run of the same repeat). The last line is a JSON summary (also
``--json PATH``). Ray's files go under a temporary HOME and directory, removed at the end.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.bench_runner import REPO, build_input, log, same_ids, text_bytes, write_job
from benchmarks.files import tokenizer_path
from tests.support.s3 import CREDENTIALS, bucket, moto_server, upload_tree

MB = 1_000_000
TARGET_RAY_OVERHEAD = 0.10
CLK_TCK = os.sysconf("SC_CLK_TCK")
IN_BUCKET, OUT_BUCKET = "bench-in", "bench-out"
CLUSTER = """
import sys
import ray
ray.init(num_cpus=int(sys.argv[2]), include_dashboard=False,
         object_store_memory=128 * 1024 * 1024, _temp_dir=sys.argv[1], logging_level="WARNING")
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()  # until the benchmark closes it (or dies)
ray.shutdown()
"""


# -- CPU time of process trees ------------------------------------------------------------------


def _proc_table() -> dict[int, tuple[int, float]]:
    """pid -> (parent pid, the process's own CPU seconds, children not included)."""
    table = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            found = _own_cpu(int(entry))
            if found is not None:
                table[int(entry)] = found
    return table


def _own_cpu(pid: int) -> tuple[int, float] | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # after the command: state ppid ... utime (field 12 from the state) stime
    return int(fields[1]), (int(fields[11]) + int(fields[12])) / CLK_TCK


def _below(table: dict[int, tuple[int, float]], roots: list[int]) -> set[int]:
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found, todo = set(), list(roots)
    while todo:
        pid = todo.pop()
        if pid in table and pid not in found:
            found.add(pid)
            todo += children.get(pid, [])
    return found


class TreeSampler:
    """CPU seconds used by every process under some roots while it runs, however they end.

    Ray's raylet does not collect its workers' times when they exit, so a process's own time
    is sampled (every ``tick``, the tree re-scanned every second for new processes): a process
    that ends loses at most its last ``tick``, and one started meanwhile counts whole."""

    def __init__(self, roots: list[int], tick: float = 0.2) -> None:
        self.roots = roots
        self.tick = tick
        table = _proc_table()
        self.first = {pid: table[pid][1] for pid in _below(table, roots)}
        self.last = dict(self.first)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, daemon=True)

    def add_root(self, pid: int) -> None:
        self.roots.append(pid)

    def __enter__(self) -> TreeSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample(rescan=True)

    def seconds(self) -> float:
        return sum(self.last[pid] - self.first.get(pid, 0.0) for pid in self.last)

    def _loop(self) -> None:
        scanned = 0.0
        while not self._stop.wait(self.tick):
            rescan = time.monotonic() - scanned >= 1.0
            self._sample(rescan)
            if rescan:
                scanned = time.monotonic()

    def _sample(self, rescan: bool) -> None:
        if rescan:
            table = _proc_table()
            for pid in _below(table, self.roots):
                self.last[pid] = table[pid][1]
            return
        for pid in list(self.last):
            found = _own_cpu(pid)
            if found is not None:
                self.last[pid] = max(self.last[pid], found[1])


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def self_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


# -- the servers --------------------------------------------------------------------------------


@dataclass
class Cluster:
    """A local Ray cluster in a child process (Popen), its address and start time."""

    proc: subprocess.Popen
    address: str
    start_seconds: float
    temp_dir: str

    @classmethod
    @contextlib.contextmanager
    def started(cls, env: dict[str, str], cpus: int) -> Iterator[Cluster]:
        temp_dir = tempfile.mkdtemp(prefix="btbench-")  # short: Ray's socket paths
        began = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-c", CLUSTER, temp_dir, str(cpus)],
            cwd=REPO,
            env=env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            address = proc.stdout.readline().strip()
            if not address:
                raise SystemExit("the Ray cluster did not start")
            cluster = cls(proc, address, time.perf_counter() - began, temp_dir)
            cluster.settle()
            yield cluster
        finally:
            proc.stdin.close()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            shutil.rmtree(temp_dir, ignore_errors=True)

    def settle(self, idle_cores: float = 0.15, timeout: float = 60.0) -> None:
        """Wait until the cluster is idle (its prestarted workers have imported Ray), so that
        its start does not run inside another variant's timing."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with TreeSampler([self.proc.pid]) as sampler:
                time.sleep(1.0)
            if sampler.seconds() < idle_cores:
                return


@contextlib.contextmanager
def s3_server() -> Iterator[str]:
    """The tests' moto S3 server on 127.0.0.1 (a thread of this process); its endpoint."""
    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # a line per request otherwise
    with moto_server() as endpoint:
        yield endpoint


def upload(endpoint: str, local: Path) -> str:
    """Copy the input directory's Parquet files under ``s3://bench-in/corpus/``."""
    bucket(endpoint, OUT_BUCKET)
    upload_tree(bucket(endpoint, IN_BUCKET), local, f"{IN_BUCKET}/corpus")
    return f"s3://{IN_BUCKET}/corpus/"


def download_outputs(endpoint: str, uri: str, dest: Path) -> None:
    """The visible Parquet outputs under ``uri`` (not the state under ``.batchtok``, not the
    summary), copied to ``dest`` for the row-by-row check."""
    import pyarrow.fs as pafs

    fs = pafs.S3FileSystem(endpoint_override=endpoint, region="us-east-1")
    root = uri.removeprefix("s3://").rstrip("/")
    dest.mkdir(parents=True, exist_ok=True)
    for info in fs.get_file_info(pafs.FileSelector(root, recursive=True)):
        rel = info.path[len(root) + 1 :]
        hidden = any(part.startswith((".", "_")) for part in rel.split("/"))
        if info.type == pafs.FileType.File and rel.endswith(".parquet") and not hidden:
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            pafs.copy_files(info.path, str(target), source_filesystem=fs)


def s3_output_refusal(job: Path, endpoint: str) -> str:
    """Why the job refuses an ``s3://`` output.dir ("" when it accepts one)."""
    from batchtok.runner.errors import JobError
    from batchtok.runner.job import load_job

    overrides = {"output.dir": f"s3://{OUT_BUCKET}/probe/", "storage.endpoint": endpoint}
    try:
        load_job(job, overrides)
    except JobError as exc:
        found = [p for p in exc.problems if p.key == "output.dir"]
        if found:
            return f"output.dir: {found[0].message}"
    return ""


# -- the variants -------------------------------------------------------------------------------


@dataclass
class Variant:
    name: str
    args: list[str]  # beyond `batchtok run JOB --workers N --quiet`
    ray: str = ""  # "joined" / "own": the run's Ray cluster
    s3_out: bool = False
    server_cpu: bool = False  # the S3 server (a thread here) works for it
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    check: tuple[int, int] | None = None  # (rows compared, rows differing) on the first repeat


def run_once(
    v: Variant, job: Path, out: str, workers: int, env: dict[str, str], cluster: Cluster | None
) -> tuple[float, float]:
    """One fresh ``batchtok run`` of the variant into ``out``: (wall, CPU seconds)."""
    cmd = [sys.executable, "-m", "batchtok", "run", str(job), "--output", out]
    cmd += ["--workers", str(workers), "--quiet", *v.args]
    run_env = dict(env)
    roots = []
    if v.ray == "joined":
        assert cluster is not None
        run_env["RAY_ADDRESS"] = cluster.address
        roots.append(cluster.proc.pid)
    cpu = children_cpu() + (self_cpu() if v.server_cpu else 0.0)
    with TreeSampler(roots) as sampler:
        start = time.perf_counter()
        proc = subprocess.Popen(
            cmd, cwd=REPO, env=run_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        if v.ray == "own":  # the driver starts the cluster: all of it is below the driver
            sampler.add_root(proc.pid)
        stdout, stderr = proc.communicate()
        wall = time.perf_counter() - start
        if v.ray:  # actors end after their driver: count them to their end
            time.sleep(1.0)
    if proc.returncode != 0:
        sys.stderr.write(stdout + stderr)
        raise SystemExit(f"{v.name}: batchtok run failed ({proc.returncode})")
    if v.ray == "own":  # sampled, driver included (its children's times would count twice)
        return wall, sampler.seconds()
    cpu = children_cpu() + (self_cpu() if v.server_cpu else 0.0) - cpu
    return wall, cpu + sampler.seconds()


def variants(s3_in: str, endpoint: str, refusal: str) -> list[Variant]:
    storage = ["--set", f'storage.endpoint="{endpoint}"', "--set", 'storage.region="us-east-1"']
    found = [
        Variant("local", []),
        Variant("ray, joined", ["--executor", "ray"], ray="joined"),
        Variant("ray, own cluster", ["--executor", "ray"], ray="own"),
        Variant("local, S3 in", ["--input", s3_in, *storage], server_cpu=True),
    ]
    if not refusal:
        found.append(
            Variant(
                "local, S3 in and out",
                ["--input", s3_in, *storage],
                s3_out=True,
                server_cpu=True,
            )
        )
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mb", type=float, default=100.0)
    parser.add_argument("--tokenizer", default="llama3", help="a fixture name (default llama3)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    tokenizer = tokenizer_path(args.tokenizer)
    input_dir = build_input(args.mb, "distinct")
    mb = text_bytes(input_dir) / MB
    if mb < args.mb * 0.99:
        log(f"only {mb:.1f} MB of distinct text exist: using all of it (asked {args.mb:g} MB)")
    os.environ.update(CREDENTIALS)
    home = Path(tempfile.mkdtemp(prefix="bench-cluster-"))
    env = {
        **os.environ,
        "HOME": str(home / "home"),  # Ray writes under ~/.ray: keep it out of the real HOME
        "XDG_CACHE_HOME": os.environ.get("XDG_CACHE_HOME", str(Path.home() / ".cache")),
        "RAY_AUTH_MODE": "disabled",
        "RAY_USAGE_STATS_ENABLED": "0",
        "PYTHONPATH": str(REPO),
    }
    env.pop("RAY_ADDRESS", None)
    env.pop("RAYON_NUM_THREADS", None)
    try:
        job = write_job(home, input_dir, tokenizer)
        with s3_server() as endpoint, Cluster.started(env, args.workers) as cluster:
            log(f"Ray cluster started in {cluster.start_seconds:.1f}s at {cluster.address}")
            s3_in = upload(endpoint, input_dir)
            refusal = s3_output_refusal(job, endpoint)
            if refusal:
                log(f"S3 in and out: skipped, this job refuses an s3:// output.dir ({refusal})")
            found = variants(s3_in, endpoint, refusal)
            # untimed: fills the tokenizer's load cache and the page cache for every variant
            run_once(found[0], job, str(home / "warm-up"), args.workers, env, cluster)
            for r in range(args.repeats):
                for v in found:
                    slug = v.name.replace(" ", "").replace(",", "-")
                    out = f"s3://{OUT_BUCKET}/{slug}-{r}/" if v.s3_out else str(home / slug / "out")
                    shutil.rmtree(home / slug, ignore_errors=True)
                    wall, cpu = run_once(v, job, out, args.workers, env, cluster)
                    v.walls.append(wall)
                    v.cpus.append(cpu)
                    log(f"{v.name} #{r + 1}: {wall:.1f}s wall, {cpu:.1f}s CPU")
                    if r == 0:  # the local run of this repeat is the reference
                        v.check = check_ids(v, out, home / "local" / "out", home, endpoint)
            summary = _report(found, mb, args, cluster.start_seconds, refusal, load_before)
    finally:
        shutil.rmtree(home, ignore_errors=True)
    if args.json:
        args.json.write_text(json.dumps(summary, indent=2))
    print(json.dumps(summary))
    return 0 if all(v.check and not v.check[1] for v in found) else 1


def check_ids(v: Variant, out: str, reference: Path, home: Path, endpoint: str) -> tuple[int, int]:
    """(rows compared, rows differing) between the variant's output and the local run's."""
    if v.s3_out:
        local = home / "s3-outputs"
        shutil.rmtree(local, ignore_errors=True)
        download_outputs(endpoint, out, local)
        out = str(local)
    names = sorted(p.name for p in reference.glob("*.parquet"))
    if sorted(p.name for p in Path(out).glob("*.parquet")) != names:
        log(f"{v.name}: other output files than the local run's")
        return len(names), len(names) or 1
    rows, differ = same_ids(reference, Path(out))
    if differ or not rows:
        log(f"{v.name}: {differ} of {rows} rows have other ids than the local run's")
    return rows, differ if rows else 1


def _report(
    found: list[Variant],
    mb: float,
    args: argparse.Namespace,
    cluster_start: float,
    refusal: str,
    load_before: tuple[float, float, float],
) -> dict:
    base = found[0]
    base_wall, base_cpu = statistics.median(base.walls), statistics.median(base.cpus)
    print(
        f"{mb:.1f} MB of distinct text (asked {args.mb:g} MB), {args.tokenizer}, "
        f"{args.workers} workers, median of {args.repeats}; load average "
        f"{load_before[0]:.2f} before, {os.getloadavg()[0]:.2f} after"
    )
    print(f"Ray cluster start (outside the timed runs): {cluster_start:.1f}s")
    print(
        f"{'variant':24} {'wall s':>7} {'CPU s':>7} {'MB/s':>6} {'wall x':>7} {'CPU x':>6} "
        f"{'ids':>12}"
    )
    results = {}
    for v in found:
        wall, cpu = statistics.median(v.walls), statistics.median(v.cpus)
        rows, differ = v.check or (0, 0)
        results[v.name] = {
            "wall_seconds": wall,
            "cpu_seconds": cpu,
            "walls": v.walls,
            "cpus": v.cpus,
            "mb_per_second": mb / wall,
            "wall_vs_local": wall / base_wall,
            "cpu_vs_local": cpu / base_cpu,
            # each repeat against the local run just before it: steadier under a changing load
            "paired_wall_vs_local": statistics.median(a / b for a, b in zip(v.walls, base.walls)),
            "paired_cpu_vs_local": statistics.median(a / b for a, b in zip(v.cpus, base.cpus)),
            "rows_checked": rows,
            "rows_differ": differ,
        }
        ids = "reference" if v is base else ("equal" if not differ else f"{differ} differ")
        print(
            f"{v.name:24} {wall:7.1f} {cpu:7.1f} {mb / wall:6.2f} {wall / base_wall:7.3f} "
            f"{cpu / base_cpu:6.3f} {ids:>12}"
        )
    if refusal:
        print(f"local, S3 in and out: skipped ({refusal})")
    print(
        "paired (median of each repeat over its local run): "
        + "; ".join(
            f"{name} {r['paired_wall_vs_local']:.3f} wall, {r['paired_cpu_vs_local']:.3f} CPU"
            for name, r in results.items()
            if name != base.name
        )
    )
    joined, own = results["ray, joined"], results["ray, own cluster"]
    overhead = joined["wall_vs_local"] - 1
    verdict = "met" if overhead <= TARGET_RAY_OVERHEAD else "NOT met"
    print(
        f"Ray overhead over local: {overhead:+.1%} wall, {joined['cpu_vs_local'] - 1:+.1%} CPU "
        f"(target <= {TARGET_RAY_OVERHEAD:.0%}: {verdict}); with the cluster's start (own "
        f"cluster): {own['wall_vs_local'] - 1:+.1%} wall, {own['cpu_vs_local'] - 1:+.1%} CPU"
    )
    s3 = results["local, S3 in"]
    print(f"S3 in / local files: {s3['wall_vs_local']:.3f} wall, {s3['cpu_vs_local']:.3f} CPU")
    both = results.get("local, S3 in and out")
    if both:
        print(
            f"S3 in and out / local files: {both['wall_vs_local']:.3f} wall, "
            f"{both['cpu_vs_local']:.3f} CPU"
        )
    return {
        "mb": mb,
        "mb_asked": args.mb,
        "tokenizer": args.tokenizer,
        "workers": args.workers,
        "repeats": args.repeats,
        "load_average": [load_before[0], os.getloadavg()[0]],
        "cluster_start_seconds": cluster_start,
        "ray_overhead": overhead,
        "s3_out_skipped": refusal,
        "results": results,
    }


if __name__ == "__main__":
    raise SystemExit(main())
