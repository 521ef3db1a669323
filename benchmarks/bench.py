"""Throughput of batchtok against `tokenizers` and tiktoken, on one corpus, in one run.

Run from the repository root::

    python -m benchmarks.bench --tokenizers llama3,gpt4o --mb 30 --repeats 3

For each tokenizer the same documents are encoded by

* batchtok ``encode_batch_ids`` from an empty piece cache ("cold": a freshly loaded Tokenizer),
* batchtok again on the same Tokenizer, its cache now filled ("warm"),
* ``tokenizers.Tokenizer.encode_batch`` with ``RAYON_NUM_THREADS=1`` (single-thread oracle),
* tiktoken, with an Encoding built from the same vocabulary and Split regex (byte-level BPE only).

Each timing is repeated and the median is reported; ids are checked against `tokenizers` on the
first repeat. See benchmarks/README.md.
"""

from __future__ import annotations

import os
import sys

# The oracle must run on one thread: rayon reads this when `tokenizers` first builds its pool.
_TOKENIZERS_PREIMPORTED = "tokenizers" in sys.modules
os.environ["RAYON_NUM_THREADS"] = "1"

import argparse  # noqa: E402
import gc  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable, Sequence  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

import tiktoken  # noqa: E402
import tokenizers  # noqa: E402

from batchtok import Tokenizer  # noqa: E402
from batchtok.pre_tokenizers.byte_level import BYTE_LEVEL_PATTERN  # noqa: E402
from benchmarks import dedup, heldout  # noqa: E402
from benchmarks.files import tokenizer_path  # noqa: E402
from tests.support import corpora  # noqa: E402

MB = 1_000_000
MIN_MB = 10
DEFAULT_TOKENIZERS = "llama3,gpt4o"
ENGINES = ("batchtok_cold", "batchtok_warm", "tokenizers", "tiktoken")
LABELS = {
    "batchtok_cold": "batchtok cold",
    "batchtok_warm": "batchtok warm",
    "tokenizers": "tokenizers 1thr",
    "tiktoken": "tiktoken 1thr",
}
EXAMPLES = 2  # mismatching documents shown per comparison


CORPORA = ("english", "code", "multilingual", *heldout.KINDS, *dedup.CORPORA)


def log(msg: str) -> None:
    print(f"[bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


# -- corpus ---------------------------------------------------------------------------------------


def load_corpus(kind: str, min_bytes: int) -> list[str]:
    """Documents of ``kind`` totalling at least ``min_bytes`` (or all there are), in fixed order.
    ``kind`` is one of :data:`CORPORA` (the ``heldout-*`` ones: see benchmarks/heldout.py; the
    ``dedup`` ones, text with no repeated paragraph: benchmarks/dedup.py)."""
    if kind == "english":
        return corpora.english_prose(min_bytes)
    if kind in dedup.CORPORA:
        pools = [dedup.dedup_docs(kind)]  # stored interleaved: a prefix mixes kinds and languages
    elif kind in heldout.KINDS:
        pools = [heldout.heldout_docs(kind)]
    elif kind == "code":
        pools = [corpora.code_docs()]
    elif kind == "multilingual":
        pools = list(corpora.multilingual_docs().values())  # sorted by language
    else:
        raise ValueError(f"unknown corpus {kind!r}")
    # Round-robin over the pools (one for code), never repeating a document: batchtok encodes
    # identical texts of a batch once, which would flatter it.
    docs: list[str] = []
    total = 0
    iters = [iter(p) for p in pools]
    while iters and total < min_bytes:
        for it in list(iters):
            doc = next(it, None)
            if doc is None:
                iters.remove(it)
                continue
            docs.append(doc)
            total += len(doc.encode("utf-8"))
            if total >= min_bytes:
                break
    return docs


# -- tiktoken from a tokenizer.json ---------------------------------------------------------------


def byte_decoder() -> dict[str, int]:
    """The GPT-2 byte-level alphabet inverted: visible char -> byte."""
    visible = [*range(0x21, 0x7F), *range(0xA1, 0xAD), *range(0xAE, 0x100)]
    table = {b: chr(b) for b in visible}
    extra = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(0x100 + extra)
            extra += 1
    return {ch: b for b, ch in table.items()}


def _merge_pairs(model: dict) -> list[tuple[str, str]]:
    out = []
    for m in model.get("merges", []):
        if isinstance(m, str):
            if m.startswith("#version"):
                continue
            a, b = m.split(" ")
            out.append((a, b))
        else:
            out.append((m[0], m[1]))
    return out


@dataclass
class TiktokenPlan:
    """How to build a tiktoken Encoding for one tokenizer.json, or why not."""

    skip: str | None = None
    pattern: str = ""
    rank_mode: str = "id"  # "id": rank = token id; "merge": rank = order of first merge
    notes: list[str] = field(default_factory=list)
    checks: dict[str, Any] = field(default_factory=dict)


def plan_tiktoken(data: dict) -> TiktokenPlan:
    """Decide whether tiktoken can stand in for this tokenizer, and check the rank order."""
    model = data.get("model") or {}
    pre = data.get("pre_tokenizer") or {}
    if model.get("type") != "BPE":
        return TiktokenPlan(skip=f"model is {model.get('type')}, not BPE")
    if (
        model.get("byte_fallback")
        or model.get("continuing_subword_prefix")
        or model.get("end_of_word_suffix")
    ):
        return TiktokenPlan(skip="BPE with byte_fallback / subword prefix / suffix")
    if pre.get("type") == "ByteLevel" and pre.get("use_regex", True):
        # GPT-2's own layout: ByteLevel splits with its built-in regex, tiktoken's gpt2 pat_str
        split = {"type": "Split", "pattern": {"Regex": BYTE_LEVEL_PATTERN}, "behavior": "Isolated"}
        stages = [split, {**pre, "use_regex": False}]
    else:
        stages = pre.get("pretokenizers") if pre.get("type") == "Sequence" else None
    if not stages or len(stages) != 2:
        return TiktokenPlan(skip=f"not byte-level BPE (pre_tokenizer {pre.get('type')})")
    split, byte_level = stages
    if byte_level.get("type") != "ByteLevel" or byte_level.get("use_regex"):
        return TiktokenPlan(skip="second pre-tokenizer is not ByteLevel(use_regex=false)")
    if byte_level.get("add_prefix_space"):
        return TiktokenPlan(skip="ByteLevel add_prefix_space=true has no tiktoken equivalent")
    if split.get("type") != "Split" or "Regex" not in (split.get("pattern") or {}):
        return TiktokenPlan(skip="first pre-tokenizer is not a regex Split")
    # tiktoken keeps the matches and drops the gaps: Removed+invert is exactly that; Isolated is
    # the same when the regex matches every character (these GPT-style regexes do).
    behaviour = (split.get("behavior"), bool(split.get("invert")))
    if behaviour not in (("Isolated", False), ("Removed", True)):
        return TiktokenPlan(skip=f"Split behavior {behaviour} has no tiktoken equivalent")
    plan = TiktokenPlan(pattern=split["pattern"]["Regex"])
    if data.get("normalizer") is not None:
        plan.notes.append(f"normalizer {data['normalizer'].get('type')} is not applied by tiktoken")
    if not model.get("ignore_merges"):
        plan.notes.append(
            "tiktoken looks a whole piece up in the vocab first (= ignore_merges), this file has "
            "ignore_merges=false, so some differences are possible"
        )

    vocab: dict[str, int] = model["vocab"]
    merges = _merge_pairs(model)
    parts_bad = order_bad = 0
    prev = -1
    for a, b in merges:
        new = vocab[a + b]
        if vocab[a] >= new or vocab[b] >= new:
            parts_bad += 1
        if new < prev:
            order_bad += 1
        prev = max(prev, new)
    plan.checks = {
        "merges": len(merges),
        "merged_id_not_above_parts": parts_bad,
        "merge_order_against_id_order": order_bad,
    }
    # tiktoken gives a pair the rank of the token it makes; `tokenizers` the index of the merge.
    # They agree when merge indices grow with the id of the merged token. (A merged token may
    # still have a smaller id than a part: llama3 lists every split of a token, e.g. 'Ġ'+'ĠĠĠ'
    # -> 'ĠĠĠĠ' (ids 220 + 262 -> 257); the pair's priority is still the merged token's id.)
    if order_bad == 0:
        plan.rank_mode = "id"
        if parts_bad:
            plan.notes.append(
                f"{parts_bad} merges make a token with a smaller id than a part (alternative "
                "splits); the merge order still follows the ids, so rank = id"
            )
    else:
        plan.rank_mode = "merge"
        plan.notes.append(
            f"merge order disagrees with id order {order_bad} times: rank = first merge index"
        )
    return plan


def build_tiktoken(
    path: os.PathLike | str, plan: TiktokenPlan, name: str
) -> tuple[tiktoken.Encoding, dict[int, int] | None]:
    """The Encoding, and rank -> token id when ranks are not the ids."""
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    model = data["model"]
    vocab: dict[str, int] = model["vocab"]
    added = {t["content"] for t in data.get("added_tokens", [])}
    decode = byte_decoder()
    token_bytes: dict[str, bytes] = {}
    for token in vocab:
        if token in added:
            continue  # special tokens: the texts hold none and tiktoken gets special_tokens={}
        token_bytes[token] = bytes(decode[ch] for ch in token)
    if plan.rank_mode == "id":
        ranks = {token_bytes[t]: vocab[t] for t in token_bytes}
        rank_to_id = None
    else:
        order: dict[str, int] = {}
        singles = sorted((t for t in token_bytes if len(token_bytes[t]) == 1), key=vocab.get)
        for t in singles:
            order.setdefault(t, len(order))
        for a, b in _merge_pairs(model):
            order.setdefault(a + b, len(order))
        for t in sorted(token_bytes, key=vocab.get):
            order.setdefault(t, len(order))
        ranks = {token_bytes[t]: order[t] for t in token_bytes}
        rank_to_id = {order[t]: vocab[t] for t in token_bytes}
    enc = tiktoken.Encoding(
        name=f"batchtok-bench-{name}",
        pat_str=plan.pattern,
        mergeable_ranks=ranks,
        special_tokens={},
    )
    return enc, rank_to_id


# -- timing and comparison ------------------------------------------------------------------------


@dataclass
class Timing:
    wall: float
    cpu: float


def timed(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, Timing]:
    """fn(*args, **kwargs) and its wall-clock and process CPU time (garbage collected first)."""
    gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    out = fn(*args, **kwargs)
    t1, c1 = time.perf_counter(), time.process_time()
    return out, Timing(t1 - t0, c1 - c0)


def first_difference(a: Sequence[int], b: Sequence[int]) -> int:
    n = min(len(a), len(b))
    for i in range(n):
        if a[i] != b[i]:
            return i
    return n


def compare(
    got: Sequence[Sequence[int]],
    want: Sequence[Sequence[int]],
    docs: Sequence[str],
    hf: tokenizers.Tokenizer,
) -> dict[str, Any]:
    """Documents whose ids differ from the oracle's, with a few located examples."""
    bad = [i for i, (g, w) in enumerate(zip(got, want, strict=True)) if g != w]
    tokens_got = sum(map(len, got))
    tokens_want = sum(map(len, want))
    examples = []
    for i in bad[:EXAMPLES]:
        pos = first_difference(got[i], want[i])
        offsets = hf.encode(docs[i], add_special_tokens=False).offsets
        char = offsets[pos][0] if pos < len(offsets) else len(docs[i])
        examples.append(
            {
                "doc": i,
                "token_index": pos,
                "char_offset": char,
                "before": docs[i][max(0, char - 40) : char],
                "after": docs[i][char : char + 40],
                "got": [hf.id_to_token(t) for t in got[i][pos : pos + 6]],
                "want": [hf.id_to_token(t) for t in want[i][pos : pos + 6]],
            }
        )
    return {
        "docs": len(want),
        "mismatched_docs": len(bad),
        "agreement_pct": 100.0 * (len(want) - len(bad)) / max(1, len(want)),
        "tokens": tokens_got,
        "oracle_tokens": tokens_want,
        "examples": examples,
    }


def describe_mismatches(title: str, result: dict[str, Any]) -> list[str]:
    lines = [
        f"  {title}: {result['mismatched_docs']} of {result['docs']} documents differ "
        f"(agreement {result['agreement_pct']:.3f}%; {result['tokens']} tokens vs "
        f"{result['oracle_tokens']} from tokenizers)"
    ]
    for ex in result["examples"]:
        lines.append(
            f"    doc {ex['doc']}: first difference at token {ex['token_index']}, "
            f"char {ex['char_offset']}: ...{ex['before']!r} <HERE> {ex['after']!r}..."
        )
        lines.append(f"      got  {ex['got']}")
        lines.append(f"      want {ex['want']}")
    return lines


# -- one tokenizer --------------------------------------------------------------------------------


def bench_tokenizer(name: str, docs: list[str], nbytes: int, repeats: int) -> dict[str, Any]:
    path = tokenizer_path(name)
    with open(path, encoding="utf-8") as f:
        plan = plan_tiktoken(json.load(f))
    times: dict[str, list[Timing]] = {e: [] for e in ENGINES}
    loads: dict[str, list[float]] = {"batchtok": [], "tokenizers": [], "tiktoken": []}
    result: dict[str, Any] = {"name": name, "path": str(path), "notes": list(plan.notes)}
    if plan.skip:
        result["notes"].append(f"tiktoken skipped: {plan.skip}")
        del times["tiktoken"], loads["tiktoken"]
    result["tiktoken_rank_checks"] = plan.checks
    result["tiktoken_rank_mode"] = None if plan.skip else plan.rank_mode

    for r in range(repeats):
        log(f"{name}: repeat {r + 1}/{repeats}")
        keep = r == 0
        # batchtok: a fresh Tokenizer has an empty piece cache.
        tok, t = timed(Tokenizer.from_file, path)
        loads["batchtok"].append(t.wall)
        assert len(tok._cache) == 0, "a fresh Tokenizer should start with an empty cache"
        bt_ids, t = timed(tok.encode_batch_ids, docs, add_special_tokens=False)
        times["batchtok_cold"].append(t)
        # the ids path keeps its pieces in the piece table where the file has one, else in
        # the dict cache
        cached = len(tok._cache) + len(tok._piece_table or ())
        log(f"  batchtok cold {t.wall:.2f}s ({cached} cached pieces)")
        result["batchtok_cache_entries"] = cached
        if keep and cached <= len(docs):
            result["notes"].append(
                f"batchtok cached only {cached} pieces for {len(docs)} documents (no "
                "splitting pre-tokenizer?): warm replays whole documents from the cache"
            )
        warm_ids, t = timed(tok.encode_batch_ids, docs, add_special_tokens=False)
        times["batchtok_warm"].append(t)
        log(f"  batchtok warm {t.wall:.2f}s")
        if keep:
            result["batchtok_warm_equals_cold"] = warm_ids == bt_ids
        else:
            bt_ids = None
        del tok, warm_ids

        hf, t = timed(tokenizers.Tokenizer.from_file, str(path))
        loads["tokenizers"].append(t.wall)
        encodings, t = timed(hf.encode_batch, docs, add_special_tokens=False)
        times["tokenizers"].append(t)
        log(f"  tokenizers {t.wall:.2f}s (cpu/wall {t.cpu / t.wall:.2f})")
        hf_ids = [e.ids for e in encodings] if keep else None
        del encodings
        if keep:
            log("  comparing batchtok with tokenizers")
            result["batchtok_vs_tokenizers"] = compare(bt_ids, hf_ids, docs, hf)
            del bt_ids

        if not plan.skip:
            (enc, rank_to_id), t = timed(build_tiktoken, path, plan, name)
            loads["tiktoken"].append(t.wall)
            tt_ids, t = timed(enc.encode_ordinary_batch, docs, num_threads=1)
            times["tiktoken"].append(t)
            log(f"  tiktoken {t.wall:.2f}s")
            if keep:
                if rank_to_id is not None:
                    tt_ids = [[rank_to_id[x] for x in ids] for ids in tt_ids]
                log("  comparing tiktoken with tokenizers")
                result["tiktoken_vs_tokenizers"] = compare(tt_ids, hf_ids, docs, hf)
            del enc, tt_ids
        del hf, hf_ids
        gc.collect()

    med = {e: statistics.median(x.wall for x in ts) for e, ts in times.items()}
    result["seconds_median"] = med
    result["seconds_min"] = {e: min(x.wall for x in ts) for e, ts in times.items()}
    result["seconds_all"] = {e: [round(x.wall, 4) for x in ts] for e, ts in times.items()}
    cpu = {e: statistics.median(x.cpu for x in ts) for e, ts in times.items()}
    result["cpu_seconds_median"] = cpu
    result["cpu_over_wall"] = {
        e: statistics.median(x.cpu / x.wall for x in ts) for e, ts in times.items()
    }
    result["mb_per_s"] = {e: nbytes / MB / s for e, s in med.items()}
    result["load_seconds_median"] = {k: statistics.median(v) for k, v in loads.items()}
    # Wall-clock ratios are the headline; CPU-time ratios are steadier on a shared machine.
    for key, base in (("time_ratios", med), ("cpu_time_ratios", cpu)):
        peers = [p for p in ("tokenizers", "tiktoken") if p in base]
        result[key] = {
            f"{mine}/{peer}": base[mine] / base[peer]
            for peer in peers
            for mine in ("batchtok_cold", "batchtok_warm")
        }
    return result


# -- report ---------------------------------------------------------------------------------------


def table(results: list[dict[str, Any]]) -> list[str]:
    head = (
        f"{'tokenizer':<10} {'engine':<16} {'load s':>7} {'median s':>9} {'min s':>8} {'cpu s':>8} "
        f"{'MB/s':>7} {'cpu/wall':>8} {'x tokenizers':>12} {'x tiktoken':>10}"
    )
    lines = [head, "-" * len(head)]
    for res in results:
        if "error" in res:
            lines.append(f"{res['name']:<10} ERROR: {res['error']}")
            continue
        med = res["seconds_median"]
        for engine in ENGINES:
            if engine not in med:
                lines.append(f"{res['name']:<10} {LABELS[engine]:<16} {'(skipped)':>7}")
                continue
            load_key = "batchtok" if engine.startswith("batchtok") else engine
            load = res["load_seconds_median"][load_key] if engine != "batchtok_warm" else None
            vs_hf = med[engine] / med["tokenizers"]
            vs_tt = med[engine] / med["tiktoken"] if "tiktoken" in med else None
            lines.append(
                f"{res['name']:<10} {LABELS[engine]:<16} "
                f"{(f'{load:.2f}' if load is not None else ''):>7} {med[engine]:>9.2f} "
                f"{res['seconds_min'][engine]:>8.2f} {res['cpu_seconds_median'][engine]:>8.2f} "
                f"{res['mb_per_s'][engine]:>7.2f} "
                f"{res['cpu_over_wall'][engine]:>8.2f} {vs_hf:>12.2f} "
                f"{(f'{vs_tt:.2f}' if vs_tt is not None else '-'):>10}"
            )
    lines.append(
        "x tokenizers / x tiktoken: median time of the row / median time of that peer "
        "(>1 = slower than the peer).\n"
        "cpu s: median process CPU seconds; cpu/wall well below 1 means the machine was busy."
    )
    return lines


def git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return None
    return out.stdout.strip() or None


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks.bench", description=__doc__)
    ap.add_argument("--tokenizers", default=DEFAULT_TOKENIZERS, help="comma-separated names")
    ap.add_argument("--mb", type=float, default=30, help="MB (10^6 UTF-8 bytes) of text")
    ap.add_argument("--repeats", type=int, default=3, help="timings per engine (median shown)")
    ap.add_argument("--corpus", choices=CORPORA, default="english")
    ap.add_argument("--json", dest="json_path", help="also write the JSON summary to this file")
    args = ap.parse_args(argv)
    if args.repeats < 1:
        ap.error("--repeats must be at least 1")
    names = [n.strip() for n in args.tokenizers.split(",") if n.strip()]

    log(f"loading corpus {args.corpus} ({args.mb:g} MB)")
    docs = load_corpus(args.corpus, int(args.mb * MB))
    nbytes = sum(len(d.encode("utf-8")) for d in docs)
    unique = len(set(docs))
    warnings = []
    if nbytes < args.mb * MB:
        warnings.append(f"the {args.corpus} corpus has only {nbytes / MB:.2f} MB; using all of it")
    if nbytes < MIN_MB * MB:
        warnings.append(f"{nbytes / MB:.2f} MB is below the {MIN_MB} MB the benchmark is meant for")
    if _TOKENIZERS_PREIMPORTED:
        warnings.append("tokenizers was imported before RAYON_NUM_THREADS=1 was set")

    print("batchtok benchmark")
    print(
        f"  oracle threads: RAYON_NUM_THREADS={os.environ['RAYON_NUM_THREADS']} set before "
        "importing tokenizers (single-thread oracle); tiktoken num_threads=1"
    )
    print(
        f"  corpus: {args.corpus}, {len(docs)} documents ({unique} distinct), {nbytes} UTF-8 bytes "
        f"= {nbytes / MB:.2f} MB (MB = 10^6 bytes); the same list for every engine"
    )
    print(
        f"  repeats: {args.repeats} (median reported); batchtok cold = freshly loaded Tokenizer "
        "(empty piece cache), warm = same Tokenizer run again"
    )
    print(
        f"  python {platform.python_version()}, tokenizers {tokenizers.__version__}, "
        f"tiktoken {tiktoken.__version__ if hasattr(tiktoken, '__version__') else '?'}, "
        f"{os.cpu_count()} CPUs, batchtok commit {git_commit()}"
    )
    if args.corpus in heldout.KINDS:
        print(f"  {heldout.describe(args.corpus)}")
    if args.corpus in dedup.CORPORA:
        print(f"  {dedup.describe(args.corpus)}")
    for w in warnings:
        print(f"  WARNING: {w}")
    sys.stdout.flush()

    results = []
    for name in names:
        try:
            results.append(bench_tokenizer(name, docs, nbytes, args.repeats))
        except Exception as exc:  # report and go on with the other tokenizers
            log(f"{name}: failed: {type(exc).__name__}: {exc}")
            results.append({"name": name, "error": f"{type(exc).__name__}: {exc}"})

    print()
    for line in table(results):
        print(line)
    print()
    print("Correctness (first repeat; oracle = tokenizers ids, add_special_tokens=False):")
    for res in results:
        if "error" in res:
            continue
        print(f"{res['name']}:")
        bt = res["batchtok_vs_tokenizers"]
        status = "OK" if bt["mismatched_docs"] == 0 else "MISMATCH (batchtok bug)"
        print(f"  batchtok vs tokenizers: MISMATCH count = {bt['mismatched_docs']} -> {status}")
        if bt["mismatched_docs"]:
            print("\n".join(describe_mismatches("batchtok", bt)))
        print(f"  batchtok warm ids == cold ids: {res['batchtok_warm_equals_cold']}")
        if "tiktoken_vs_tokenizers" in res:
            tt = res["tiktoken_vs_tokenizers"]
            print(
                f"  tiktoken (rank = {res['tiktoken_rank_mode']}; checks "
                f"{res['tiktoken_rank_checks']})"
            )
            print("\n".join(describe_mismatches("tiktoken vs tokenizers", tt)))
        for note in res["notes"]:
            print(f"  note: {note}")
        ratios = ", ".join(f"{k} = {v:.2f}x" for k, v in res["time_ratios"].items())
        print(f"  time ratios (median wall): {ratios}")
        ratios = ", ".join(f"{k} = {v:.2f}x" for k, v in res["cpu_time_ratios"].items())
        print(f"  time ratios (median CPU):  {ratios}")

    summary = {
        "corpus": args.corpus,
        "documents": len(docs),
        "distinct_documents": unique,
        "bytes": nbytes,
        "repeats": args.repeats,
        "rayon_num_threads": os.environ["RAYON_NUM_THREADS"],
        "cpus": os.cpu_count(),
        "tokenizers_version": tokenizers.__version__,
        "warnings": warnings,
        "results": {
            res["name"]: (
                {"error": res["error"]}
                if "error" in res
                else {
                    "seconds_median": res["seconds_median"],
                    "seconds_all": res["seconds_all"],
                    "mb_per_s": res["mb_per_s"],
                    "cpu_seconds_median": res["cpu_seconds_median"],
                    "cpu_over_wall": res["cpu_over_wall"],
                    "load_seconds_median": res["load_seconds_median"],
                    "time_ratios": res["time_ratios"],
                    "cpu_time_ratios": res["cpu_time_ratios"],
                    "batchtok_mismatched_docs": res["batchtok_vs_tokenizers"]["mismatched_docs"],
                    "batchtok_warm_equals_cold": res["batchtok_warm_equals_cold"],
                    "tiktoken_agreement_pct": res.get("tiktoken_vs_tokenizers", {}).get(
                        "agreement_pct"
                    ),
                    "tiktoken_rank_mode": res["tiktoken_rank_mode"],
                    "notes": res["notes"],
                }
            )
            for res in results
        },
    }
    line = json.dumps(summary, separators=(",", ":"), ensure_ascii=False)
    if args.json_path:
        with open(args.json_path, "w", encoding="utf-8") as f:
            f.write(line + "\n")
    print()
    print(line)
    failed = any("error" in r or r["batchtok_vs_tokenizers"]["mismatched_docs"] for r in results)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
