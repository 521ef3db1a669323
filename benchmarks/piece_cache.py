"""The piece cache's hit rate of a benchmark run, measured from the benchmark side.

batchtok keeps the ids of every pre-token ("piece") it has merged in ``Tokenizer._cache``
(``_PieceCache`` in batchtok/tokenizer.py: two generations of ``limit`` entries; when the
current one is full it becomes the old one, and a piece found in the old one is carried over).
A hit costs a dict lookup, a miss a BPE merge (or a Unigram lattice): on text that repeats,
most pre-tokens hit. The engine keeps no counter, so the figures here come from outside the
timed section:

* ``pieces``: the pre-tokens of the cell's text, split by that Tokenizer's own splitter
  (``_fragments`` then ``_split``: the keys the cache is looked up with);
* ``repeat``: the share of pre-tokens equal to an earlier one in the same text. It is the
  **ceiling** of the hit rate: an unbounded cold cache hits exactly those;
* ``hit``: the hit rate of the cache as the engine runs it, replayed on those pieces: the
  batch path's chunks of ``PREFILL_CHARS`` (the pieces a chunk lacks merged together, then
  looked up in order) or the one-text-at-a-time path, with the engine's ``limit`` and its
  generation switch. After the real (timed) cold run the replay's final entry counts (current
  and old generation) are compared with the engine's own cache: ``exact`` says they are equal,
  i.e. the replay did what the engine did. They differ in one known case, Gemma 3's file once
  the cache switches generations (by a few entries in thousands: the order in which the
  boundary splitter's composed runs enter the cache); the hit rate is then an estimate, shown
  with ``~``. ``exact`` is None where nothing was checked (bench_runner).

Where the ids path has its piece table (a file whose pattern is cut by boundary rules), the
table counts its own look-ups and misses, and ``hit`` is that count (of the run itself, or of
an untimed run of a copy of the tokenizer); ``exact`` then says whether every piece went
through the table (the others, left to the regex or in a chunk too short for arrays, went by
strings).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from batchtok import tokenizer as engine


def pre_tokens(tok: Any, text: str) -> Iterator[str | int]:
    """The cache keys one text is looked up with: its pieces in order, an added token as its
    id (as the batch path's plans hold it)."""
    for fragment, token_id, at_start in tok._fragments(text):
        if token_id is not None:
            yield token_id
        else:
            yield from tok._split(fragment, at_start)


def _chunks(tok: Any, texts: Sequence[str]) -> Iterator[tuple[bool, list]]:
    """(batched, the pieces of a chunk in order), as encode_batch_ids meets them: chunks of
    ``PREFILL_CHARS``, then each longer text alone."""
    batched = bool(getattr(tok, "_batches", False))
    limit = getattr(engine, "PREFILL_CHARS", 1 << 20)
    if not batched:
        for text in texts:
            yield False, list(pre_tokens(tok, text))
        return
    chunk: list = []
    chars = 0
    for text in texts:
        if len(text) > limit:
            continue  # encoded one at a time, after every chunk
        chunk += pre_tokens(tok, text)
        chars += len(text)
        if chars >= limit:
            yield True, chunk
            chunk, chars = [], 0
    if chunk:
        yield True, chunk
    for text in texts:
        if len(text) > limit:
            yield False, list(pre_tokens(tok, text))


class _Replay:
    """The two generations of ``_PieceCache``, counting merges instead of computing them."""

    def __init__(self, limit: int, start: tuple[set, set], tok: Any = None) -> None:
        self.limit = max(1, limit)
        # the boundary splitter's runs of isolated chars, composed without merges (gemma3...)
        boundary = getattr(tok, "_boundary", None)
        self.boundary = boundary if getattr(tok, "_compose", None) is not None else None
        self.cur, self.old = set(start[0]), set(start[1])
        self.misses = 0
        self.switches = 0

    def put(self, piece: Any) -> None:
        if len(self.cur) >= self.limit:
            self.old = self.cur
            self.cur = set()
            self.switches += 1
        self.cur.add(piece)

    def put_many(self, pieces: list) -> None:
        self.misses += len(pieces)
        if len(self.cur) + len(pieces) > self.limit:
            for piece in pieces:
                self.put(piece)
        else:
            self.cur.update(pieces)

    def lookup(self, piece: Any) -> None:
        if piece in self.cur:
            return
        if piece not in self.old and type(piece) is not int:
            self.misses += 1
        self.put(piece)

    def chunk(self, pieces: list) -> None:
        # (the set as the engine builds it, added tokens left out: the same order of iteration)
        wanted = set(p for p in pieces if type(p) is not int)
        todo = [p for p in wanted if p not in self.cur]
        todo = [p for p in todo if p not in self.old]
        if self.boundary is not None and todo and self.boundary.worth_composing(todo):
            runs, _, todo = self.boundary.compose_many(todo)
            self.put_many(runs)
        if len(todo) < getattr(engine, "PREFILL_MIN", 256):
            todo = []  # too few to merge together: each is merged on its lookup
        self.put_many(todo)
        for piece in pieces:
            self.lookup(piece)


def snapshot(tok: Any) -> tuple[set, set]:
    """The keys ``tok``'s piece cache holds (current, old generation): taken after the load
    and before the timed run (a load may leave entries, e.g. of its probe text)."""
    cache = tok._cache
    return set(cache), set(getattr(cache, "old", ()))


def cache_figures(
    tok: Any, texts: Iterable[str], start: tuple[set, set] = (set(), set()), after_run: Any = None
) -> dict[str, Any]:
    """Hit-rate figures (see the module docstring) of encode_batch_ids of ``texts`` by a
    Tokenizer loaded like ``tok`` whose cache held ``start`` (:func:`snapshot`) before;
    ``tok``'s own cache is left alone. ``after_run``: the Tokenizer that ran the texts,
    whose cache the replay is checked against."""
    texts = list(texts)
    limit = getattr(getattr(tok, "_cache", None), "limit", engine.DEFAULT_CACHE_ENTRIES)
    replay = _Replay(limit, start, tok)
    total = 0
    seen: set = set()
    for batched, pieces in _chunks(tok, texts):
        total += len(pieces)
        seen.update(pieces)
        if batched:
            replay.chunk(pieces)
        else:
            for piece in pieces:
                replay.lookup(piece)
    distinct = sum(1 for p in seen if type(p) is not int)
    out: dict[str, Any] = {
        "pieces": total,
        "distinct_pieces": distinct,
        "repeat_pct": 100 * (1 - distinct / total) if total else 0.0,
        "cache_limit": limit,
        "generation_switches": replay.switches,
    }
    exact = None
    if after_run is not None:
        cache = after_run._cache
        engine_sizes = (len(cache), len(getattr(cache, "old", ())))
        exact = engine_sizes == (len(replay.cur), len(replay.old))
        out["engine_entries"] = engine_sizes
        out["replay_entries"] = (len(replay.cur), len(replay.old))
    out["exact"] = exact
    out["hit_pct"] = 100 * (1 - replay.misses / total) if total else 0.0
    table = _table_after(tok, texts, after_run)
    if table is not None and table.looked_up:
        # the ids path's piece table counts its own hits: the figure is the engine's, over
        # the pieces it looked up (the others went by strings: then an estimate, '~')
        out["hit_pct"] = 100 * (1 - table.computed / table.looked_up)
        out["cache_limit"] = table.limit
        out["table_pieces"] = table.looked_up
        out["exact"] = table.looked_up == total
    return out


def _table_after(tok: Any, texts: list[str], after_run: Any) -> Any:
    """The piece table of ``after_run``, else of a copy of ``tok`` (an empty cache of its
    bound) that encoded ``texts``, untimed; None for a file without one."""
    import pickle

    if getattr(tok, "_piece_table", None) is None:
        return None
    if after_run is None:
        after_run = pickle.loads(pickle.dumps(tok))
        after_run.encode_batch_ids(texts)
    return after_run._piece_table


def fmt_rate(figures: dict[str, Any] | None) -> str:
    """``hit% / repeat%`` of one cell; ``~hit%`` where the replay's final state differed from
    the engine's (an estimate then)."""
    if not figures:
        return "-"
    approx = "~" if figures.get("exact") is False else ""
    return f"{approx}{figures['hit_pct']:.1f}/{figures['repeat_pct']:.1f}"
