"""What offsets cost, and that the ids paths did not pay for them: a paired run of two revisions.

Run from the repository root::

    python -m benchmarks.bench_offsets --base 76f49ab --tokenizers llama3,gemma3 --mb 8

The batchtok package of ``--base`` (a revision before offsets existed) is extracted next to
the working tree's, and both are timed in turn, in fresh processes, on the same documents (a
prefix of the ``dedup`` corpus: text without repeated paragraphs, three kinds interleaved):

* ``encode_batch_ids``, cold (a freshly loaded Tokenizer) and warm (the same one again);
* ``encode_batch`` reading only the ids of each Encoding (warm);
* in the working tree only, ``encode_batch`` reading every Encoding's offsets and word ids:
  what a caller who asks for them pays, against ``encode_batch`` alone;
* ``tokenizers``' ``encode_batch`` on one thread (``RAYON_NUM_THREADS=1``), which always
  computes offsets: the peer a caller who needs offsets would use instead.

Rounds alternate which revision runs first; each figure is the median of the rounds, with the
spread (max/min - 1) of each side beside it as the run's noise.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from benchmarks.dedup import dedup_docs
from benchmarks.files import tokenizer_path

ROOT = Path(__file__).resolve().parent.parent
MB = 1_000_000

# The timing child: loads a tokenizer from the batchtok on its path, times each call once.
CHILD = r"""
import gc, json, sys, time
from batchtok import Tokenizer
path, docs_path, with_offsets = sys.argv[1], sys.argv[2], sys.argv[3] == "1"
docs = json.load(open(docs_path, encoding="utf-8"))
out = {}
def timed(name, fn):
    gc.collect()
    t = time.perf_counter()
    fn()
    out[name] = time.perf_counter() - t
tok = Tokenizer.from_file(path)
timed("ids_cold", lambda: tok.encode_batch_ids(docs))
timed("ids_warm", lambda: tok.encode_batch_ids(docs))
timed("encode_batch", lambda: [e.ids for e in tok.encode_batch(docs)])
if with_offsets:
    def offsets():
        for e in tok.encode_batch(docs):
            e.offsets, e.word_ids
    timed("encode_batch_offsets", offsets)
print(json.dumps(out))
"""

ORACLE = r"""
import gc, json, sys, time
import tokenizers
docs = json.load(open(sys.argv[2], encoding="utf-8"))
tok = tokenizers.Tokenizer.from_file(sys.argv[1])
gc.collect()
t = time.perf_counter()
tok.encode_batch(docs)
print(json.dumps({"encode_batch": time.perf_counter() - t}))
"""


def extract(revision: str, into: Path) -> Path:
    """The batchtok package of ``revision``, extracted under ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", revision, "batchtok"],
        check=True,
        capture_output=True,
    ).stdout
    with tempfile.TemporaryFile() as f:
        f.write(archive)
        f.seek(0)
        with tarfile.open(fileobj=f) as tar:
            tar.extractall(into, filter="data")
    return into


def run_side(package_root: Path, tokenizer: Path, docs_file: Path, side: str) -> dict:
    env = dict(os.environ, PYTHONPATH=str(package_root), RAYON_NUM_THREADS="1")
    code = ORACLE if side == "oracle" else CHILD
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(tokenizer),
            str(docs_file),
            "1" if side == "head" else "0",
        ],
        check=True,
        capture_output=True,
        text=True,
        env=env,
        cwd=package_root,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="76f49ab", help="a revision before offsets")
    parser.add_argument("--tokenizers", default="llama3,gemma3")
    parser.add_argument("--mb", type=float, default=8.0)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--json", help="write the figures here too")
    parser.add_argument("--write-results", action="store_true", help="update RESULTS.md")
    args = parser.parse_args(argv)

    docs: list[str] = []
    size = 0
    for doc in dedup_docs():
        if size >= args.mb * MB:
            break
        docs.append(doc)
        size += len(doc.encode("utf-8"))
    results: dict = {"base": args.base, "mb": size / MB, "docs": len(docs), "tokenizers": {}}
    with tempfile.TemporaryDirectory() as tmp:
        base_root = extract(args.base, Path(tmp) / "base")
        docs_file = Path(tmp) / "docs.json"
        docs_file.write_text(json.dumps(docs), encoding="utf-8")
        for name in args.tokenizers.split(","):
            path = tokenizer_path(name)
            runs: dict[str, list[dict]] = {"base": [], "head": [], "oracle": []}
            for r in range(args.rounds):
                order = ("base", "head", "oracle") if r % 2 == 0 else ("oracle", "head", "base")
                for side in order:
                    root = base_root if side == "base" else ROOT
                    runs[side].append(run_side(root, path, docs_file, side))
            results["tokenizers"][name] = summarize(runs, size)
            report(name, results["tokenizers"][name])
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1), encoding="utf-8")
    if args.write_results:
        write_results(args, results)


def write_results(args: argparse.Namespace, results: dict) -> None:
    from benchmarks.results import write_section

    table = [
        "| tokenizer | call | base MB/s (spread) | head MB/s (spread) | head/base time |",
        "|---|---|---|---|---|",
    ]
    notes = [
        f"{results['mb']:.1f} MB of the dedup corpus ({results['docs']} documents without "
        f"repeated paragraphs), one core, {args.rounds} rounds alternating the order, each "
        f"call in a fresh process; base = {args.base} (before offsets): "
        f"`python -m benchmarks.bench_offsets --base {args.base} --tokenizers "
        f"{args.tokenizers} --mb {args.mb:g} --rounds {args.rounds} --write-results`",
    ]
    for name, f in results["tokenizers"].items():
        for key in ("ids_cold", "ids_warm", "encode_batch"):
            base, head = f[f"base.{key}"], f[f"head.{key}"]
            table.append(
                f"| {name} | {key} | {base['mb_s']:.2f} ({base['spread']:.0%}) | "
                f"{head['mb_s']:.2f} ({head['spread']:.0%}) | {f[f'head/base.{key}']:.3f} |"
            )
        offsets, oracle = f["head.encode_batch_offsets"], f["oracle.encode_batch"]
        notes.append(
            f"{name}: encode_batch reading every offset and word id {offsets['mb_s']:.2f} MB/s "
            f"({f['offsets/encode_batch']:.1f}x encode_batch's time); tokenizers' encode_batch "
            f"on one thread {oracle['mb_s']:.2f} MB/s: batchtok with offsets takes "
            f"{f['offsets/tokenizers']:.1f}x its time"
        )
    write_section("benchmarks.bench_offsets", table, notes, None)


def summarize(runs: dict[str, list[dict]], size: int) -> dict:
    out: dict = {}
    for side, rows in runs.items():
        for key in rows[0]:
            times = [row[key] for row in rows]
            out[f"{side}.{key}"] = {
                "median_s": statistics.median(times),
                "mb_s": size / MB / statistics.median(times),
                "spread": max(times) / min(times) - 1,
            }
    for key in ("ids_cold", "ids_warm", "encode_batch"):
        out[f"head/base.{key}"] = out[f"head.{key}"]["median_s"] / out[f"base.{key}"]["median_s"]
    offsets = out["head.encode_batch_offsets"]["median_s"]
    out["offsets/encode_batch"] = offsets / out["head.encode_batch"]["median_s"]
    out["offsets/tokenizers"] = offsets / out["oracle.encode_batch"]["median_s"]
    return out


def report(name: str, figures: dict) -> None:
    print(f"\n{name}")
    for key in ("ids_cold", "ids_warm", "encode_batch"):
        base, head = figures[f"base.{key}"], figures[f"head.{key}"]
        print(
            f"  {key:13} base {base['mb_s']:6.2f} MB/s (spread {base['spread']:.0%})  "
            f"head {head['mb_s']:6.2f} MB/s (spread {head['spread']:.0%})  "
            f"head/base time {figures[f'head/base.{key}']:.3f}"
        )
    with_offsets = figures["head.encode_batch_offsets"]
    oracle = figures["oracle.encode_batch"]
    print(
        f"  encode_batch + offsets and word ids: {with_offsets['mb_s']:.2f} MB/s "
        f"(spread {with_offsets['spread']:.0%}), {figures['offsets/encode_batch']:.1f}x "
        f"encode_batch's time; tokenizers 1thr encode_batch {oracle['mb_s']:.2f} MB/s "
        f"(spread {oracle['spread']:.0%}): batchtok with offsets takes "
        f"{figures['offsets/tokenizers']:.1f}x its time"
    )


if __name__ == "__main__":
    main()
