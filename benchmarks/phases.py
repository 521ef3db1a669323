"""Where a cold batch's time goes: the phases of ``Tokenizer.encode_batch_ids``, beside its peers.

Run from the repository root::

    python -m benchmarks.phases                                   # llama3, qwen3, gpt4o, gemma3
    python -m benchmarks.phases --files llama3 --corpora dedup-multilingual --mb 30
    python -m benchmarks.phases --batchtok /path/to/other/checkout  # that checkout's engine

For each file and corpus (by default the three kinds of the corpus with no repeated paragraph,
benchmarks/dedup.py, 4 MB each), one thread, CPU seconds, the fastest of ``--repeats`` rounds,
each on a fresh Tokenizer (an empty piece cache; the process's tables warmed by one small batch
first, as a worker's are after its first):

* ``added``: finding the added tokens in each text (the added vocabulary's split);
* ``split``: the pre-tokenizer's pieces (its boundary rules, its regex, or the boundary
  splitter);
* ``map``: the pre-tokenizer's final mapping of the pieces the cache lacks (ByteLevel's bytes);
* ``merges``: the model's tokenization of those pieces (``Model.tokenize_many``, or
  ``tokenize_many_flat`` where the model has it);
* ``rest``: everything else: the cache's look-ups, the misses found, the ids assembled.

Beside them: ``tiktoken`` (``encode_ordinary_batch``, one thread) for byte-level files, the
pattern alone (``regex.findall`` of the file's pre-tokenizer pattern over each text, the ceiling
of any engine built on that regex), and `tokenizers`' ``encode_batch_fast`` (CPU seconds of all
its threads). ``pieces`` counts the pre-tokens, ``misses`` the distinct pieces the cache lacked
(tokenized once each), so ``hit`` = 1 - misses / pieces, the piece cache's hit rate of this run.
Each phase is timed by wrapping the engine's own method on the instance (a few microseconds a
call, some hundred calls a batch). ``--write-results`` replaces this benchmark's section of
benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import gc
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

DEFAULT_FILES = ("llama3", "qwen3", "gpt4o", "gemma3")
DEFAULT_CORPORA = ("dedup-english", "dedup-code", "dedup-multilingual")
PHASES = ("added", "split", "map", "merges", "rest")


class _Clock:
    """CPU seconds spent in wrapped calls, by phase (a call inside another counts in both)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.misses = 0

    def wrap(self, phase: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        def timed(*args: Any, **kwargs: Any) -> Any:
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[phase] += time.process_time() - start

        return timed


def _instrumented(tok: Any, clock: _Clock) -> None:
    """Wrap ``tok``'s phases (on the instance and its model; the byte map is a module
    function, wrapped by :func:`_phases`)."""
    tok._fragments = clock.wrap("added", tok._fragments)
    split_many = tok._split_many
    if hasattr(split_many, "bounds"):  # the rules' split: as arrays (the ids path) or strings
        split_many.bounds = clock.wrap("split", split_many.bounds)
        split_many.split_prepared = clock.wrap("split", split_many.split_prepared)
    elif split_many is not None:
        tok._split_many = clock.wrap("split", split_many)
    tok._split = clock.wrap("split", tok._split)
    # the lists' batch call and the arrays' (the piece table's misses; a checkout without it
    # has only the first), each counting the words it merges
    for name in ("tokenize_many", "tokenize_many_flat"):
        model_many = getattr(tok.model, name, None)
        if model_many is None:
            continue

        def counted(words: list[str], model_many: Callable[..., Any] = model_many) -> Any:
            clock.misses += len(words)
            return model_many(words)

        setattr(tok.model, name, clock.wrap("merges", counted))


def _phases(tokenizer_cls: Any, path: str, docs: list[str]) -> tuple[dict[str, float], int]:
    """(CPU seconds of each phase and the total, misses) of one cold ``encode_batch_ids``."""
    import batchtok.tokenizer as engine

    clock = _Clock()
    tok = tokenizer_cls.from_file(path)
    _instrumented(tok, clock)
    original = engine.byte_level_map_many
    engine.byte_level_map_many = clock.wrap("map", original)
    gc.collect()
    try:
        start = time.process_time()
        tok.encode_batch_ids(docs)
        total = time.process_time() - start
    finally:
        engine.byte_level_map_many = original
    seconds = dict(clock.seconds)
    # the map runs inside the look-ups' phase, the merges too: what is left is the rest
    seconds["rest"] = total - sum(seconds[p] for p in PHASES if p != "rest")
    seconds["total"] = total
    return seconds, clock.misses


def _cpu(fn: Callable[[], Any]) -> float:
    gc.collect()
    start = time.process_time()
    fn()
    return time.process_time() - start


def _pattern(path: str) -> Any:
    """The compiled regex of the file's first pre-tokenizer pattern (Split or ByteLevel's), or
    None."""
    import json

    import regex

    from batchtok.utils.onig import OnigPattern

    data = json.loads(open(path, encoding="utf-8").read())
    stack = [data.get("pre_tokenizer")]
    while stack:
        node = stack.pop(0)
        if not isinstance(node, dict):
            continue
        if node.get("type") == "Split" and "Regex" in (node.get("pattern") or {}):
            return regex.compile(OnigPattern(node["pattern"]["Regex"]).native_source)
        if node.get("type") == "ByteLevel" and node.get("use_regex", True):
            from batchtok.pre_tokenizers.byte_level import BYTE_LEVEL_PATTERN

            return regex.compile(OnigPattern(BYTE_LEVEL_PATTERN).native_source)
        stack += node.get("pretokenizers") or []
    return None


def run_cell(name: str, corpus: str, mb: float, repeats: int, tokenizer_cls: Any) -> dict:
    import tokenizers

    from benchmarks import bench
    from benchmarks.files import tokenizer_path
    from benchmarks.table import tiktoken_for

    path = str(tokenizer_path(name))
    docs = bench.load_corpus(corpus, int(mb * 1e6))
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    enc = tiktoken_for(name, {})[0]
    pattern = _pattern(path)
    hf = tokenizers.Tokenizer.from_file(path)
    tokenizer_cls.from_file(path).encode_batch_ids(["warm the tables: it's 1234 " * 200])
    runs, peers = [], {"tiktoken": [], "pattern": [], "tokenizers": []}
    pieces = None
    for _ in range(repeats):
        runs.append(_phases(tokenizer_cls, path, docs))
        if enc is not None:
            peers["tiktoken"].append(_cpu(lambda: enc.encode_ordinary_batch(docs, num_threads=1)))
        if pattern is not None:
            peers["pattern"].append(_cpu(lambda: [pattern.findall(d) for d in docs]))
        peers["tokenizers"].append(_cpu(lambda: hf.encode_batch_fast(docs)))
    best, misses = min(runs, key=lambda run: run[0]["total"])
    if pattern is not None:
        pieces = sum(len(pattern.findall(d)) for d in docs)
    return {
        "file": name,
        "corpus": corpus,
        "mb": nbytes / 1e6,
        "seconds": best,
        "spread": max(r[0]["total"] for r in runs) / best["total"],
        "misses": misses,
        "pieces": pieces,
        "peers": {k: min(v) for k, v in peers.items() if v},
    }


def _versus(peers: dict[str, float], key: str, total: float) -> str:
    """A peer's seconds and its ratio to batchtok's (above 1: batchtok is faster)."""
    return f"{peers[key]:.3f} ({peers[key] / total:.2f}×)" if key in peers else "-"


def rows(cells: Sequence[dict]) -> list[str]:
    head = (
        "| file | text | batchtok s (MB/s) | added | split | map | merges | rest "
        "| hit % (misses / pieces) | pattern alone s | tiktoken s (× batchtok) "
        "| tokenizers CPU s (× batchtok) |"
    )
    out = [head, "|" + "---|" * 12]
    for c in cells:
        s, total = c["seconds"], c["seconds"]["total"]
        share = [f"{s[p]:.3f} ({100 * s[p] / total:.0f}%)" for p in PHASES]
        peers = c["peers"]

        hit = (
            f"{100 * (1 - c['misses'] / c['pieces']):.1f} ({c['misses']} / {c['pieces']})"
            if c["pieces"]
            else f"- ({c['misses']} misses)"
        )
        pattern = f"{peers['pattern']:.3f}" if "pattern" in peers else "-"
        out.append(
            f"| {c['file']} | {c['mb']:.1f} MB {c['corpus']} | {total:.3f} "
            f"({c['mb'] / total:.1f}) | "
            + " | ".join(share)
            + f" | {hit} | {pattern} | {_versus(peers, 'tiktoken', total)} "
            f"| {_versus(peers, 'tokenizers', total)} |"
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--files", default=",".join(DEFAULT_FILES))
    parser.add_argument("--corpora", default=",".join(DEFAULT_CORPORA))
    parser.add_argument("--mb", type=float, default=4.0)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batchtok", help="import batchtok from this checkout instead")
    parser.add_argument("--write-results", action="store_true")
    args = parser.parse_args(argv)
    if args.batchtok:
        sys.path.insert(0, args.batchtok)
    from batchtok import Tokenizer

    cells = []
    for name in args.files.split(","):
        for corpus in args.corpora.split(","):
            cell = run_cell(name, corpus, args.mb, args.repeats, Tokenizer)
            cells.append(cell)
            print(rows([cell])[-1], flush=True)
    table = rows(cells)
    print("\n".join(table))
    noisiest = max(c["spread"] for c in cells)
    print(f"noise: the slowest round of a cell was at most {noisiest:.2f}× its fastest")
    if args.write_results:
        from benchmarks import results
        from benchmarks.table import machine_speed

        notes = [
            "One thread, CPU seconds, the fastest of "
            f"{args.repeats} rounds, each on a fresh Tokenizer (empty piece cache); the slowest "
            f"round of a cell was at most {noisiest:.2f}× its fastest; `python -m "
            f"benchmarks.phases --files {args.files} --corpora {args.corpora} --mb {args.mb:g} "
            f"--repeats {args.repeats} --write-results`",
            "added / split / map / merges / rest: see benchmarks/phases.py; hit %: 1 - distinct "
            "misses / pre-tokens of this run",
        ]
        print(results.write_section("benchmarks.phases", table, notes, machine_speed()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
