"""The public Tokenizer: load a tokenizer.json, encode and decode exactly as `tokenizers` does.

>>> tok = Tokenizer.from_file("configs/tokenizers/gpt2/tokenizer.json")   # doctest: +SKIP
>>> tok.encode("Hello world").ids                                            # doctest: +SKIP
[15496, 995]
"""

from __future__ import annotations

import json
import logging
import os
from array import array
from collections.abc import Callable, Iterable, Sequence
from functools import partial, reduce
from itertools import accumulate, chain, filterfalse, repeat
from operator import iadd
from typing import TYPE_CHECKING, TypeVar

from . import alignment, hub, load_cache
from .added_vocabulary import AddedToken, AddedVocabulary, read_added_tokens
from .decoders import Decoder, read_decoder
from .encoding import Encoding, vocab_tokens
from .errors import EncodeError, TokenizerFileError
from .models import BPE, Model, read_model
from .models.bpe_boundary import BoundarySplitter
from .models.ragged import flat_rows
from .normalizers import Normalizer, read_normalizer
from .padding import Padding, padding_json, read_padding
from .piece_table import ENTRY_BYTES as TABLE_ENTRY_BYTES
from .piece_table import PieceTable
from .pre_tokenizers import PreTokenizer, read_pre_tokenizer
from .pre_tokenizers.splitter import (
    compile_batch_splitter,
    compile_splitter,
    compile_streaming_splitter,
    split_and_map,
    splits_nothing,
    without_idle_split,
)
from .processors import PostProcessor, default_process, read_post_processor
from .serialization import parse_json, refuse_deep_nesting
from .truncation import (
    STRATEGY_NAMES,
    Truncation,
    effective_max_length,
    read_truncation,
    truncate_encodings,
    truncate_ids,
    truncation_json,
)
from .utils.bounds import BatchSplit, PieceBounds
from .utils.byte_level import byte_level_map, byte_level_map_many
from .utils.gc_pause import gc_paused
from .utils.spec import USIZE_MAX, Spec, collect_ignored

if TYPE_CHECKING:
    import numpy as np

TOP_LEVEL_KEYS = (
    "version",
    "truncation",
    "padding",
    "added_tokens",
    "normalizer",
    "pre_tokenizer",
    "post_processor",
    "decoder",
    "model",
)

# Stand-ins for sequences A and B when probing a post-processor (real ids are never negative).
_A, _B = -1, -2

# Entries of one generation of the per-piece cache (two are kept). Measured on llama3 over
# mixed text: ~450 bytes of memory an entry (key, ids tuple, int objects, dict slot).
log = logging.getLogger("batchtok")
DEFAULT_CACHE_ENTRIES = 500_000
# A fragment longer than this (in chars) is split and encoded a batch of pieces at a time by
# encode_ids_into: its pieces as Python strings take ~12x the text's memory. Shorter ones are
# split whole, which is twice as fast (one findall, no match objects).
STREAM_CHARS = 1 << 22
CACHE_ENTRY_BYTES = 450
# encode_batch_ids splits this many chars of texts (or fewer) before tokenizing the pieces the
# cache lacks together (Model.tokenize_many), when there are this many such pieces or more.
PREFILL_CHARS = 1 << 20
PREFILL_MIN = 256
# The piece table looks up about this many chars of fragments at once (their arrays stay in
# the CPU's caches); fewer than TABLE_MIN_CHARS go by strings (numpy's calls cost more there).
TABLE_CHUNK_CHARS = 1 << 16
TABLE_MIN_CHARS = 4096
# Pieces whose token strings are kept when they hold Unigram's unknown text (cleared when full).
TEXT_TOKEN_ENTRIES = 100_000
# What a load-cache entry must encode and decode as the file does (with the vocab and the
# added tokens): every script, spaces, digits, code.
PROBE_TEXT = (
    "Hello world! It's 2024-01-01, naïve café. 日本語のテキスト 한국어 русский العربية "
    "हिन्दी ไทย 🙂👍🏽\n\t  def f(x):\n    return x**2  # 123456789 ▁▁a"
)
# Tokenizer attributes a pickle leaves out: closures and caches (see __reduce__).
_BUILT_ON_UNPICKLING = (
    "_piece_map",
    "_split",
    "_stream",
    "_split_many",
    "_compose",
    "_cache",
    "_piece_table",
    "_text_tokens",
)
# Where the tokenizer.json a tokenizer was loaded from is kept (its text, bytes or dict; None:
# built in code), for to_str and save. A load-cache entry leaves it out: from_buffer has the
# bytes.
_SOURCE = "_source"


# The components a tokenizer is built from (attributes that read as the library's).
COMPONENTS = ("model", "normalizer", "pre_tokenizer", "post_processor", "decoder")


class _PieceCache(dict):
    """piece (before the pre-tokenizer's final mapping) -> tuple of model ids, bounded.

    Two generations: when the current one reaches ``limit`` entries it becomes the old one and
    a new one starts; a miss looks in the old generation before computing. Frequent pieces
    are carried over on their next use, so memory stays under two generations without
    losing the hot entries the way clearing everything would.
    """

    def __init__(self, compute: Callable[[str], tuple[int, ...]], limit: int) -> None:
        super().__init__()
        self.compute = compute
        self.limit = max(1, limit)
        self.old: dict[str, tuple[int, ...]] = {}

    def __missing__(self, piece: str | int) -> tuple[int, ...]:
        ids = self.old.get(piece)
        if ids is None:
            # an int stands for an added token's id in the batch path's flat plans
            ids = (piece,) if type(piece) is int else self.compute(piece)
        self.put(piece, ids)
        return ids

    def put(self, piece: str, ids: tuple[int, ...]) -> None:
        """Keep ``piece``'s ids, computed elsewhere, as a miss would."""
        if len(self) >= self.limit:
            self.old = dict(self)
            super().clear()
        self[piece] = ids

    def put_many(self, pieces: list[str], ids: list[tuple[int, ...]]) -> None:
        """:meth:`put` of each piece, in one update when they fit in this generation."""
        if len(self) + len(pieces) > self.limit:
            for piece, found in zip(pieces, ids):
                self.put(piece, found)
        else:
            self.update(zip(pieces, ids))

    def clear(self) -> None:
        super().clear()
        self.old = {}


class _UnknownTexts:
    """The exceptions (see vocab_tokens) of a batch's texts whose ids hold the model's
    ``_text_token_id``, computed for all of them when the tokens of one of their Encodings are
    first read. Until then it keeps each text's plan and odd added tokens (its pieces' ids are
    looked up again then, from the piece cache), and the token strings the model's batch read
    (word -> strings)."""

    __slots__ = ("read", "_state")

    def __init__(self, tokenizer: Tokenizer) -> None:
        self.read: dict[str, list[str]] = {}
        # (the tokenizer, the texts' (plan, odd)) until the first read, then the exceptions of
        # each text: one attribute, so that threads reading tokens together see one or the other
        self._state: tuple[Tokenizer, list] | list[list[tuple[int, str]]] = (tokenizer, [])

    def add(self, plan: list, odd: list) -> Callable[[], list]:
        """The exceptions of one more text, as a function that computes them when called."""
        state = self._state
        assert type(state) is tuple
        state[1].append((plan, odd))
        return partial(self.exceptions, len(state[1]) - 1)

    def exceptions(self, k: int) -> list[tuple[int, str]]:
        state = self._state
        if type(state) is tuple:
            tokenizer, texts = state
            state = self._state = tokenizer._unknown_text_exceptions(texts, self.read)
            self.read = {}  # the plans and these strings are dropped: the Encodings need neither
        return state[k]


class Tokenizer:
    """A loaded tokenizer.json. Mirrors the `tokenizers` Python API for encode and decode."""

    def __init__(
        self,
        model: Model,
        added_tokens: list,
        normalizer: Normalizer | None = None,
        pre_tokenizer: PreTokenizer | None = None,
        post_processor: PostProcessor | None = None,
        decoder: Decoder | None = None,
        *,
        cache_entries: int = DEFAULT_CACHE_ENTRIES,
        truncation: Truncation | None = None,
        padding: Padding | None = None,
    ) -> None:
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.post_processor = post_processor
        self.decoder = decoder
        self.added_vocabulary = AddedVocabulary(
            added_tokens, model.vocab.get, model.vocab_size, normalizer
        )
        # the model's vocab string of each added token's id (None: the id is not the model's),
        # which an Encoding's token string of the token is unless the text matched differs
        vocab_r = model.vocab_r
        self._added_strings = {i: vocab_r.get(i) for i in self.added_vocabulary.tokens_by_id}
        self.encode_special_tokens = False
        self._source: str | bytes | dict | None = None
        # JSON paths of the fields the file holds that tokenizers ignores (set by from_dict)
        self.ignored_fields: tuple[str, ...] = ()
        # Byte-level files are split fine by their regex; the others may send a whole text
        # to BPE as one word.
        self._boundary = (
            BoundarySplitter.for_model(model)
            if isinstance(model, BPE) and split_and_map(pre_tokenizer)[1] is None
            else None
        )
        self._build_splitters(cache_entries)
        # The one id whose token string may not be its vocab string: Unigram reports unknown
        # text as written, not as the unk piece.
        self._text_token_id = (
            None if model.tokens_are_vocab_strings else getattr(model, "unk_id", None)
        )
        # Whether a batch's pieces go through _batch_sequences: the model tokenizes many words
        # faster together
        self._batches = model.tokenizes_many
        self._truncation: Truncation | None = truncation
        self._padding: Padding | None = padding
        self._configure()
        # where the sequences go in a post-processed encoding, for the ids-only fast paths
        self._layouts = {
            (is_pair, add): self._probe_layout(is_pair, add)
            for is_pair in (False, True)
            for add in (True, False)
        }
        self._affixes = {add: _affixes(self._layouts[False, add]) for add in (True, False)}

    def __setattr__(self, name: str, value: object) -> None:
        # The library lets a component be replaced on a live tokenizer; batchtok compiles its
        # components into split functions, caches and layouts when it loads, so a replaced one
        # would be silently ignored: refused instead.
        if name in COMPONENTS and "_layouts" in self.__dict__:
            raise AttributeError(
                f"batchtok cannot replace the {name} of a loaded tokenizer: edit the "
                f"tokenizer.json's {name!r} (tokenizer.to_str() gives it) and load it again"
            )
        super().__setattr__(name, value)

    def _build_splitters(self, cache_entries: int, table_entries: int | None = None) -> None:
        """The pre-tokenizer's split functions (closures) and empty caches (the piece
        table's bound: ``table_entries``, else ``cache_entries``)."""
        splitter, self._piece_map = split_and_map(self.pre_tokenizer)
        normalizer = self.normalizer
        splitter = without_idle_split(
            splitter, normalizer.absent_chars() if normalizer is not None else frozenset()
        )
        self._split = compile_splitter(splitter)
        self._stream = compile_streaming_splitter(splitter)
        boundary = self._boundary
        # the split of many fragments at once (the boundary splitter's own, when it sees whole
        # fragments, or the pattern's boundary rules), else None
        self._split_many = None
        if boundary is None or not boundary.active:
            self._split_many = compile_batch_splitter(splitter)
        else:
            whole = splits_nothing(splitter)
            self._split = boundary.after(None if whole else self._split)
            if whole:
                self._split_many = BatchSplit(boundary.split_many, boundary.bounds, boundary.split)
            if self._stream is not None:
                self._stream = boundary.after_stream(self._stream, STREAM_CHARS)
        # the ids of a part the boundary splitter proved needs no merges, else None
        self._compose = boundary.compose if boundary is not None and boundary.active else None
        self._cache = _PieceCache(self._tokenize_piece, cache_entries)
        # the ids path's piece cache as arrays, where the split gives its pieces as bounds
        self._piece_table = (
            PieceTable(table_entries or cache_entries)
            if hasattr(self._split_many, "bounds")
            else None
        )
        # piece -> its (position, token string) exceptions, for pieces holding _text_token_id
        self._text_tokens: dict[str, tuple[tuple[int, str], ...]] = {}

    def __reduce__(self) -> tuple:
        """Pickled as everything loaded from the file and the settings (module-level values
        by reference, see load_cache.dumps); the split functions are built again and the
        piece cache starts empty, with its bound."""
        return _unpickled, (load_cache.dumps(self._state(keep_source=True)),)

    def __reduce_in_cache__(self) -> tuple:
        """:meth:`__reduce__` for the load cache's own pickler, which keeps module-level values
        by reference itself: the state inline, not a pickle inside the pickle (which reading
        an entry would copy: 24 MB for llama3, 40 MB for Gemma 3)."""
        return _from_state, (self._state(),)

    def _state(self, keep_source: bool = False) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in _BUILT_ON_UNPICKLING}
        if not keep_source:
            state.pop(_SOURCE, None)
        state["_cache_entries"] = self._cache.limit
        state["_table_entries"] = None if self._piece_table is None else self._piece_table.limit
        return state

    # -- loading ------------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Tokenizer:
        with open(path, "rb") as f:
            return cls.from_buffer(f.read())

    @classmethod
    def from_pretrained(
        cls, identifier: str, revision: str = "main", token: str | None = None
    ) -> Tokenizer:
        """The tokenizer.json of a model already on this machine: ``identifier`` is its
        directory, or a Hub repository id in the local Hugging Face cache (see
        :mod:`batchtok.hub`) at ``revision`` (a branch, tag or commit hash). Nothing is
        downloaded, so ``token`` (the library's Hub credential) is accepted and unused."""
        return cls.from_file(hub.find_tokenizer_file(identifier, revision))

    @classmethod
    def from_buffer(
        cls, buffer: bytes, *, sha256: str | None = None, keep_source: bool = True
    ) -> Tokenizer:
        """A tokenizer from the bytes of a tokenizer.json (``tokenizers`` has the same call).
        Large files are loaded from the load cache when it holds them (see load_cache);
        ``sha256``, the buffer's hex sha256 if the caller has computed it, is the cache's key
        (a wrong one only misses the cache). ``keep_source=False``: the bytes are not kept for
        :meth:`to_str` and :meth:`save` (which then refuse), saving their size in memory."""
        data = bytes(buffer)
        source = data if keep_source else None
        cached = load_cache.fetch(data, sha256)
        if isinstance(cached, Tokenizer):
            cached._log_ignored()
            cached._source = source
            return cached
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TokenizerFileError(
                "$", data[exc.start : exc.start + 8], "file is not UTF-8"
            ) from exc
        tok = cls.from_str(text)
        tok._source = source  # (the bytes: a str of non-ASCII text takes up to four times more)
        if load_cache.would_store(data):
            tok.model.prepare_batches()  # kept with it, built once instead of per process
            load_cache.store(data, tok, tok._behaves_as, sha256)
        return tok

    @classmethod
    def from_str(cls, json_text: str) -> Tokenizer:
        tok = cls.from_dict(parse_json(json_text))
        tok._source = json_text  # (the text, not the parsed dict: a fraction of the memory)
        return tok

    @classmethod
    def from_dict(cls, data: dict) -> Tokenizer:
        with collect_ignored() as ignored:
            tok = cls._from_dict(data)
        tok.ignored_fields = tuple(ignored)
        tok._source = data
        tok._log_ignored()
        return tok

    def _log_ignored(self) -> None:
        ignored = self.ignored_fields
        if ignored:
            log.info(
                "tokenizer.json: %d field(s) ignored, as tokenizers ignores them: %s",
                len(ignored),
                ", ".join(ignored[:8]) + (", ..." if len(ignored) > 8 else ""),
            )

    def _behaves_as(self, other: Tokenizer) -> bool:
        """Whether ``other`` encodes and decodes a probe text (every script, the added tokens,
        a sample of the vocab) as this tokenizer does: the load cache's check of a copy."""
        vocab = list(self.model.vocab)
        probe = [
            PROBE_TEXT,
            " ".join(vocab[:: max(1, len(vocab) // 2000)]),
            " ".join(self.added_vocabulary.content_to_id),
        ]

        def outcome(tok: Tokenizer) -> object:
            try:
                ids = [tok.encode_ids(text) for text in probe]
                return ids, [tok.decode(x, False) for x in ids], tok.describe()
            except Exception as exc:  # the same error on both sides is the same behaviour
                return repr(exc)

        return outcome(self) == outcome(other)

    @classmethod
    def _from_dict(cls, data: dict) -> Tokenizer:
        top = Spec(data, "")
        version = top.raw("version", "1.0")  # may be missing, not null (tokenizers refuses)
        if version != "1.0":
            raise top.fail("version", version, 'unknown tokenizer version (expected "1.0")')
        if "added_tokens" in data and data["added_tokens"] is None:
            raise top.fail("added_tokens", None, "expected an array (tokenizers rejects null)")
        added = read_added_tokens(top.array("added_tokens", []), Spec(data, "added_tokens"))
        if "model" not in data:
            raise top.fail("model", None, "Model missing.")
        refuse_deep_nesting(data, TOP_LEVEL_KEYS)

        def component(key: str, reader):
            value = top.raw(key, None)
            return None if value is None else reader(value, key)

        normalizer = component("normalizer", read_normalizer)
        pre_tokenizer = component("pre_tokenizer", read_pre_tokenizer)
        post_processor = component("post_processor", read_post_processor)
        decoder = component("decoder", read_decoder)
        truncation = component("truncation", read_truncation)
        padding = component("padding", read_padding)
        model = read_model(top.raw("model"), "model")
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                raise top.fail(
                    key, data[key], "unknown top-level key (tokenizers refuses the file)"
                )
        top.finish(strict=True)
        return cls(
            model,
            added,
            normalizer,
            pre_tokenizer,
            post_processor,
            decoder,
            truncation=truncation,
            padding=padding,
        )

    # -- encoding -----------------------------------------------------------------------------

    def _tokenize_piece(self, piece: str) -> tuple[int, ...]:
        word = self._piece_map(piece) if self._piece_map is not None else piece
        if not word:
            return ()
        if self._compose is not None:
            ids = self._compose(word)
            if ids is not None:
                return ids
        return tuple(self.model.tokenize(word))

    def _fragments(self, text: str) -> list[tuple[str, int | None, bool]]:
        return self.added_vocabulary.split(text, self.normalizer, self.encode_special_tokens)

    def _sequence_ids(self, text: str) -> list[int]:
        """Ids of one text before post-processing."""
        ids: list[int] = []
        self._extend_ids(text, ids, None)
        return ids

    def _extend_ids(self, text: str, ids: list[int], exceptions: list | None) -> None:
        """Append the ids of one text (before post-processing) to ``ids``. With
        ``exceptions``, append to it (position, token) for each token whose string is not
        ``model.vocab_r[id]`` (see vocab_tokens)."""
        cache = self._cache
        split = self._split
        for fragment, token_id, at_start in self._fragments(text):
            if token_id is not None:
                # an added token's string is the text it matched (lstrip/rstrip included)
                if exceptions is not None and self._added_strings[token_id] != fragment:
                    exceptions.append((len(ids), fragment))
                ids.append(token_id)
                continue
            if exceptions is None or self._text_token_id is None:
                ids += chain.from_iterable(map(cache.__getitem__, split(fragment, at_start)))
                continue
            pieces = list(split(fragment, at_start))
            piece_ids = list(map(cache.__getitem__, pieces))
            start = len(ids)
            ids += chain.from_iterable(piece_ids)
            try:
                ids.index(self._text_token_id, start)
            except ValueError:
                continue
            self._text_token_strings(pieces, piece_ids, start, exceptions)

    def _batch_sequences(
        self, texts: list, exceptions: bool, arrays: bool = False
    ) -> list[tuple[list, list | Callable[[], list]] | None]:
        """(ids before post-processing (with ``arrays``, a list or a numpy int32 array where the
        piece table gave them), exceptions as :meth:`_extend_ids` records them, or a
        function computing them when the tokens are read, for a text whose ids hold
        ``_text_token_id`` (see _UnknownTexts); empty unless ``exceptions``) of each text, a
        chunk of texts at a time: their pieces split,
        the pieces the cache lacks tokenized together (``model.tokenize_many``: the ids a miss
        would compute one by one), then looked up. None for a text
        left to the one-at-a-time path (not a str, too long, or an error of a component,
        which that path raises in the order of the texts)."""
        split = self._split
        split_many = self._split_many
        added_strings = self._added_strings
        out: list[tuple[list, list | Callable[[], list]] | None] = []
        # (index in out, the text's plan: its pieces in order with each added token as its id,
        # an int, which no piece is; (index in the plan, text) of the added tokens whose
        # string is not their vocab string, when exceptions are wanted). With split_many, the
        # plan holds whole fragments until the chunk is split (_split_plans).
        chunk: list[tuple[int, list, list]] = []
        wanted: set[str] = set()
        chars = 0
        # the texts whose token strings wait for a read of their tokens
        pending = _UnknownTexts(self) if exceptions and self._text_token_id is not None else None
        # a longer text goes alone (see encode_ids_into), unless the piece table takes it,
        # which holds no string per piece
        longest = (
            STREAM_CHARS if self._piece_table is not None and not exceptions else PREFILL_CHARS
        )
        for text in texts:
            out.append(None)
            if type(text) is not str or len(text) > longest:
                continue
            plan: list = []
            odd: list = []
            try:
                for fragment, token_id, at_start in self._fragments(text):
                    if token_id is None:
                        if split_many is not None:
                            plan.append(fragment)
                            continue
                        pieces = split(fragment, at_start)
                        if type(pieces) is not list:
                            pieces = list(pieces)
                        wanted.update(pieces)
                        plan += pieces
                        continue
                    # an added token's string is the text it matched (lstrip/rstrip included)
                    if exceptions and added_strings[token_id] != fragment:
                        odd.append((len(plan), fragment))
                    plan.append(token_id)
            except Exception:  # noqa: BLE001 - the one-at-a-time path raises it in order
                continue
            chunk.append((len(out) - 1, plan, odd))
            chars += len(text)
            if chars >= PREFILL_CHARS:
                self._flush(chunk, wanted, out, pending, exceptions, arrays)
                chunk, wanted, chars = [], set(), 0
        self._flush(chunk, wanted, out, pending, exceptions, arrays)
        return out

    def _flush(
        self,
        chunk: list[tuple[int, list, list]],
        wanted: set[str],
        out: list[tuple[list, list | Callable[[], list]] | None],
        pending: _UnknownTexts | None,
        exceptions: bool,
        arrays: bool = False,
    ) -> None:
        """The ids of a chunk of :meth:`_batch_sequences`' plans into ``out``: by the piece
        table when the pieces come as arrays and only ids are wanted, else by strings."""
        if self._split_many is None:
            self._assemble(chunk, wanted, out, pending)
        elif self._piece_table is not None and not exceptions:
            self._assemble_from_table(chunk, out, arrays)
        else:
            self._assemble(chunk, self._split_plans(chunk), out, pending)

    def _assemble_from_table(
        self,
        chunk: list[tuple[int, list, list]],
        out: list[tuple[list, list | Callable[[], list]] | None],
        arrays: bool,
    ) -> None:
        """:meth:`_assemble` of plans holding whole fragments (see :meth:`_split_plans`),
        their ids found by :meth:`_fragment_ids` (``arrays``: see there); no exceptions are
        wanted."""
        found = self._fragment_ids(
            [item for _, plan, _ in chunk for item in plan if type(item) is str], arrays
        )
        each = iter(found)
        for at, plan, _ in chunk:
            if len(plan) == 1 and type(plan[0]) is str:  # a text without added tokens
                out[at] = (next(each), [])
                continue
            if arrays:  # (numpy reads a list of ids as an array)
                parts = [next(each) if type(item) is str else (item,) for item in plan]
                out[at] = (_joined(parts), [])
                continue
            ids: list[int] = []
            for item in plan:
                if type(item) is str:
                    ids += next(each)
                else:
                    ids.append(item)
            out[at] = (ids, [])

    def _fragment_ids(self, fragments: list[str], arrays: bool) -> list[list[int] | np.ndarray]:
        """The ids of each fragment (no added token in it), a list (with ``arrays``, where the
        table found them, a numpy int32 view of its flat ids instead): the pieces' bounds found
        by the
        batch split about ``TABLE_CHUNK_CHARS`` at a time (their arrays stay in the CPU's
        caches), then looked up in the piece table all together (its misses tokenized
        together); what the rules leave to the regex, or the table to strings, by strings."""
        split = self._split_many
        texts = split.prepared(fragments)
        out: list[list[int] | None] = [None] * len(texts)
        parts = []  # (first text, bounds) of each chunk the rules split
        start = chars = 0
        for end, text in enumerate(texts, 1):
            chars += len(text)
            if chars >= TABLE_CHUNK_CHARS or end == len(texts):
                bounds = split.bounds(texts[start:end]) if chars >= TABLE_MIN_CHARS else None
                if bounds is not None:
                    parts.append((start, bounds))
                start, chars = end, 0
        if parts:
            self._table_ids(parts, out, arrays)
        left = [t for t, ids in enumerate(out) if ids is None]
        if left:
            pieces = split.split_prepared([texts[t] for t in left])
            for t, ids in zip(left, self._ids_by_strings(pieces)):
                out[t] = ids
        return out

    def _table_ids(self, parts: list[tuple[int, PieceBounds]], out: list, arrays: bool) -> None:
        """The ids of the texts of ``parts`` ((index in ``out`` of the first text, the bounds
        of its chunk's pieces)) from the piece table, into ``out``; the texts the rules
        leave to the regex are left None, and all are when the table cannot take them."""
        import numpy as np

        offsets = np.cumsum([0] + [len(b.points) for _, b in parts]).tolist()
        points = np.concatenate([b.points for _, b in parts])
        starts, ends, counts = [], [], []
        for (_, b), offset in zip(parts, offsets):
            n = np.diff(b.first)
            keep = slice(None)
            if b.redo:  # the texts the rules leave to the regex: their pieces are not these
                keep = np.ones(len(b.starts), dtype=bool)
                for t in b.redo:
                    keep[b.first[t] : b.first[t + 1]] = False
                n[b.redo] = 0
            starts.append(b.starts[keep] + offset)
            ends.append(b.ends[keep] + offset)
            counts.append(n)
        found = self._piece_table.ids(
            points, np.concatenate(starts), np.concatenate(ends), self._tokenize_misses_flat
        )
        if found is None:  # two pieces of one hash: all by strings
            return
        flat, id_counts = found
        id_ends = np.append(0, np.cumsum(id_counts))
        cuts = id_ends[np.append(0, np.cumsum(np.concatenate(counts)))].tolist()
        ids = flat if arrays else flat.tolist()  # (a view of flat per text, or a list)
        at = 0
        for first, b in parts:
            redo = set(b.redo)
            for t in range(len(b.first) - 1):
                if t not in redo:
                    out[first + t] = ids[cuts[at] : cuts[at + 1]]
                at += 1

    def _ids_by_strings(self, pieces: list[list[str]]) -> list[list[int]]:
        """The ids of each list of pieces, from the piece cache (its misses tokenized
        together)."""
        cache = self._cache
        todo = list(filterfalse(cache.__contains__, set(chain.from_iterable(pieces))))
        if cache.old:
            todo = list(filterfalse(cache.old.__contains__, todo))
        if len(todo) >= PREFILL_MIN:
            found = self._tokenize_many(todo, None)
            if found is not None:
                cache.put_many(todo, found)
        lookup = cache.__getitem__
        return [reduce(iadd, map(lookup, plan), []) for plan in pieces]

    def _tokenize_misses_flat(self, pieces: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`_tokenize_misses` as arrays (the ids one piece after another, how many each
        piece has): by the model's ``tokenize_many_flat`` where it has one (no list or tuple
        per piece) and composing runs would not pay, else from the lists."""
        flat_call = getattr(self.model, "tokenize_many_flat", None)
        if (
            flat_call is not None
            and len(pieces) >= PREFILL_MIN
            and (self._compose is None or not self._boundary.worth_composing(pieces))
        ):
            try:
                words = self._mapped(pieces)
                if all(words):  # (an empty word's ids are none, whatever the model says)
                    return flat_call(words)
            except Exception:  # noqa: BLE001 - the lists below raise it in order
                pass
        return flat_rows(self._tokenize_misses(pieces))

    def _tokenize_misses(self, pieces: list[str]) -> list[tuple[int, ...]]:
        """The ids of pieces no cache holds, tokenized together when there are enough of
        them (else, or when the model's batch call raises, one by one, which raises in
        order); runs of isolated chars composed without merges (the boundary splitter's)."""
        composed: dict[str, tuple[int, ...]] = {}
        todo = pieces
        if self._compose is not None and pieces and self._boundary.worth_composing(pieces):
            runs, ids, todo = self._boundary.compose_many(pieces)
            composed = dict(zip(runs, ids))
        found = self._tokenize_many(todo, None) if len(todo) >= PREFILL_MIN else None
        if found is None:
            found = list(map(self._tokenize_piece, todo))
        if not composed:
            return found
        composed.update(zip(todo, found))
        return list(map(composed.__getitem__, pieces))

    def _mapped(self, pieces: list[str]) -> list[str]:
        """The words the model reads for ``pieces``: the pre-tokenizer's final map of each
        (ByteLevel's for all at once), or the pieces themselves."""
        piece_map = self._piece_map
        if piece_map is None:
            return pieces
        if piece_map is byte_level_map:
            return byte_level_map_many(pieces)
        return list(map(piece_map, pieces))

    def _tokenize_many(
        self, pieces: list[str], pending: _UnknownTexts | None
    ) -> list[tuple[int, ...]] | None:
        """The ids of ``pieces`` by the model's batch call (the strings it read of unknown
        text kept in ``pending``); None when it raised: each piece's own call raises it."""
        try:
            words = self._mapped(pieces)
        except UnicodeError:  # the map of that piece raises it (in the one-by-one path)
            return None
        try:
            if pending is not None:
                # the strings of the unknown text the model reads on the way, kept for
                # when the tokens are read
                found, read = self.model.tokenize_many_with_strings(words)
                pending.read.update(read)
            else:
                found = self.model.tokenize_many(words)
        except Exception:  # noqa: BLE001 - the misses below raise it in order
            return None
        return [tuple(ids) if w else () for w, ids in zip(words, found)]

    def _split_plans(self, chunk: list[tuple[int, list, list]]) -> set[str]:
        """Replace each fragment in the plans of ``chunk`` by its pieces, all the chunk's
        fragments split at once (``_split_many``); the set of the pieces."""
        fragments = [item for _, plan, _ in chunk for item in plan if type(item) is str]
        split = self._split_many(fragments)
        each = iter(split)
        for k, (at, plan, odd) in enumerate(chunk):
            if len(plan) == 1 and type(plan[0]) is str:  # a text without added tokens
                chunk[k] = (at, next(each), odd)
                continue
            pieces: list = []
            moved = {}  # an added token's index in the plan -> in the pieces
            for i, item in enumerate(plan):
                if type(item) is str:
                    pieces += next(each)
                else:
                    moved[i] = len(pieces)
                    pieces.append(item)
            chunk[k] = (at, pieces, [(moved[i], string) for i, string in odd])
        return set(chain.from_iterable(split))

    def _assemble(
        self,
        chunk: list[tuple[int, list, list]],
        wanted: set[str],
        out: list[tuple[list, list | Callable[[], list]] | None],
        pending: _UnknownTexts | None,
    ) -> None:
        cache = self._cache
        old = cache.old
        todo = list(filterfalse(cache.__contains__, wanted))
        if old:
            todo = list(filterfalse(old.__contains__, todo))
        if self._compose is not None and todo and self._boundary.worth_composing(todo):
            # runs of isolated chars need no merges (the boundary splitter's parts)
            runs, composed, todo = self._boundary.compose_many(todo)
            cache.put_many(runs, composed)
        if len(todo) >= PREFILL_MIN:
            found = self._tokenize_many(todo, pending)
            if found is not None:
                cache.put_many(todo, found)
        lookup = cache.__getitem__
        text_token_id = self._text_token_id
        for at, plan, odd in chunk:
            # each piece's ids extend the list in one C call (not an item at a time)
            ids = reduce(iadd, map(lookup, plan), [])
            if pending is not None and text_token_id in ids:
                out[at] = (ids, pending.add(plan, odd))
            elif odd:  # (the pieces' ids again, for the added tokens' positions)
                out[at] = (ids, self._plan_strings(plan, list(map(lookup, plan)), odd, None))
            else:
                out[at] = (ids, [])

    def _plan_strings(
        self,
        plan: list,
        piece_ids: list,
        odd: list,
        known: dict[str, tuple[tuple[int, str], ...]] | None,
    ) -> list[tuple[int, str]]:
        """The exceptions of a text's plan (see :meth:`_batch_sequences`) in order: its odd
        added tokens, and the token strings of the pieces holding ``_text_token_id`` (those
        pieces' exceptions in ``known``; None: the plan has none)."""
        starts = [0, *accumulate(map(len, piece_ids))]
        found = [(starts[k], fragment) for k, fragment in odd]
        if known is None:
            return found
        text_token_id = self._text_token_id
        for k in [k for k, ids in enumerate(piece_ids) if text_token_id in ids]:
            piece = plan[k]
            if type(piece) is int:  # an added token (whose id is the unknown one)
                continue
            pos = starts[k]
            found += [(pos + j, string) for j, string in known[piece]]
        if odd:
            found.sort()  # the two kinds, in order of position
        return found

    def _unknown_text_exceptions(
        self, texts: list[tuple[list, list]], read: dict[str, list[str]]
    ) -> list[list[tuple[int, str]]]:
        """The exceptions of each (plan, odd) of ``texts`` (:meth:`_plan_strings`): the token
        strings of their pieces holding ``_text_token_id`` taken from ``_text_tokens``, from
        the model's strings ``read`` by its batch (word -> strings), or read together now."""
        text_token_id, kept = self._text_token_id, self._text_tokens
        lookup = self._cache.__getitem__
        plans = [(plan, list(map(lookup, plan)), odd) for plan, odd in texts]
        known: dict[str, tuple[tuple[int, str], ...]] = {}
        todo: dict[str, Sequence[int]] = {}
        for plan, piece_ids, _ in plans:
            for piece, ids in zip(plan, piece_ids):
                if text_token_id in ids and type(piece) is str and piece not in known:
                    found = kept.get(piece)
                    if found is None:
                        todo[piece] = ids
                    else:
                        known[piece] = found
        piece_map = self._piece_map
        words = {piece: piece_map(piece) if piece_map is not None else piece for piece in todo}
        unread = [word for word in words.values() if word not in read]
        if unread:
            try:
                strings = self.model.token_strings_many(unread)
            except Exception:  # noqa: BLE001 - each piece's own read below raises it
                pass
            else:
                read = {**read, **dict(zip(unread, strings))}
        for piece, ids in todo.items():
            known[piece] = self._keep_text_tokens(
                piece, self._piece_text_tokens(piece, ids, read.get(words[piece]))
            )
        return [self._plan_strings(plan, piece_ids, odd, known) for plan, piece_ids, odd in plans]

    def _text_token_strings(
        self, pieces: list[str], piece_ids: list[tuple[int, ...]], pos: int, exceptions: list
    ) -> None:
        """The exceptions of pieces whose ids start at ``pos``, some holding
        ``_text_token_id``: the model's own token strings where they are not the vocab's."""
        text_token_id = self._text_token_id
        for piece, ids in zip(pieces, piece_ids):
            if text_token_id in ids:
                exceptions += [
                    (pos + j, string) for j, string in self._known_text_tokens(piece, ids)
                ]
            pos += len(ids)

    def _known_text_tokens(self, piece: str, ids: Sequence[int]) -> tuple[tuple[int, str], ...]:
        """:meth:`_piece_text_tokens` of ``piece``, kept in ``_text_tokens``."""
        found = self._text_tokens.get(piece)
        if found is None:
            found = self._keep_text_tokens(piece, self._piece_text_tokens(piece, ids))
        return found

    def _keep_text_tokens(
        self, piece: str, found: tuple[tuple[int, str], ...]
    ) -> tuple[tuple[int, str], ...]:
        """Keep ``piece``'s exceptions in ``_text_tokens`` (cleared when full)."""
        strings = self._text_tokens
        if len(strings) >= TEXT_TOKEN_ENTRIES:
            strings.clear()
        strings[piece] = found
        return found

    def _piece_text_tokens(
        self, piece: str, ids: Sequence[int], texts: Sequence[str] | None = None
    ) -> tuple[tuple[int, str], ...]:
        """(position, token string) of each token of ``piece`` (its ``ids``) whose string is
        not its vocab string; ``texts``: the model's token strings, when already read."""
        if texts is None:
            word = self._piece_map(piece) if self._piece_map is not None else piece
            texts = self.model.token_strings(word)
        vocab_r = self.model.vocab_r
        return tuple((j, text) for j, text in enumerate(texts) if text != vocab_r[ids[j]])

    def _sequence_ids_into(self, text: str, out: array) -> None:
        """:meth:`_sequence_ids` appended to ``out``; a long fragment is split and encoded a
        batch of pieces at a time when the pre-tokenizer can stream (compile_streaming_splitter)."""
        lookup = self._cache.__getitem__
        for fragment, token_id, at_start in self._fragments(text):
            if token_id is not None:
                out.append(token_id)
                continue
            if len(fragment) > STREAM_CHARS and self._stream is not None:
                for pieces in self._stream(fragment, at_start):
                    out.fromlist(list(chain.from_iterable(map(lookup, pieces))))
            else:
                out.fromlist(
                    list(chain.from_iterable(map(lookup, self._split(fragment, at_start))))
                )

    def _input_ids(self, sequence: str | Sequence[str], is_pretokenized: bool) -> list[int]:
        if not is_pretokenized:
            return self._sequence_ids(_text(sequence))
        ids: list[int] = []
        for word in _words(sequence):
            self._extend_ids(word, ids, None)
        return ids

    def _sequence_encoding(
        self, sequence: str | Sequence[str], type_id: int, is_pretokenized: bool
    ) -> Encoding:
        """One input sequence encoded (each word on its own when pre-tokenized, as the library
        does), before truncation and post-processing. Its tokens are built when read."""
        ids: list[int] = []
        exceptions: list = []
        texts = _words(sequence) if is_pretokenized else _text(sequence)
        for text in texts if is_pretokenized else (texts,):
            self._extend_ids(text, ids, exceptions)
        return self._encoding_of(ids, exceptions, type_id, texts, is_pretokenized)

    def _encoding_of(
        self,
        ids: list[int],
        exceptions: list | Callable[[], list],
        type_id: int,
        source: str | list[str],
        is_pretokenized: bool = False,
    ) -> Encoding:
        """The Encoding of one sequence's ids and their string exceptions (see vocab_tokens);
        its offsets and word ids are computed from ``source`` (the text, or the words) when
        read."""
        # the tokens are looked up from a copy nobody mutates
        kept = ids[:]
        tokens = vocab_tokens(kept, self.model, exceptions)

        def aligned() -> tuple[list, list]:
            return alignment.sequence(self, source, is_pretokenized, kept)

        return Encoding.of_sequence(ids, tokens, type_id, aligned)

    # -- post-processing: truncation, special tokens, padding ----------------------------------

    def _n_added(self, is_pair: bool) -> int:
        return self.post_processor.added_tokens(is_pair) if self.post_processor else 0

    def _truncate_max_length(self, is_pair: bool, add_special_tokens: bool) -> int | None:
        """The length truncation cuts the sequences to, or None for no truncation."""
        if self._truncation is None:
            return None
        return effective_max_length(self._truncation, self._n_added(is_pair), add_special_tokens)

    def _lay_out(
        self,
        a: S,
        b: S | None,
        add_special_tokens: bool,
        truncate: Callable[[S, S | None, Truncation, int], tuple[S, S | None]],
        process: Callable[[S, S | None, bool], T],
        pad: Callable[[Padding, T], T] | None = None,
        observe: Callable[[str, tuple], None] | None = None,
    ) -> T:
        """The one order of the steps after the model, as `tokenizers` runs them: truncation
        (to the length the post-processor leaves), the post-processor, padding (``pad``: None
        where the caller pads a batch itself). ``truncate``, ``process`` and ``pad`` do the
        steps on Encodings or on bare ids; ``observe(step, results)`` sees each step's."""
        max_length = self._truncate_max_length(b is not None, add_special_tokens)
        if max_length is not None:
            a, b = truncate(a, b, self._truncation, max_length)  # type: ignore[arg-type]
        if observe is not None:
            observe("truncation", (a, b))
        out = process(a, b, add_special_tokens)
        if observe is not None:
            observe("post_processor", (out,))
        if pad is not None and self._padding is not None:
            out = pad(self._padding, out)
        if observe is not None:
            observe("padding", (out,))
        return out

    def _post_process(
        self,
        a: Encoding,
        b: Encoding | None,
        add_special_tokens: bool,
        observe: Callable[[str, tuple], None] | None = None,
    ) -> Encoding:
        """The Encoding of sequences ``a`` and ``b`` truncated, post-processed and padded
        (:meth:`_lay_out`; ``observe`` as there)."""
        return self._lay_out(
            a, b, add_special_tokens, _truncate_encodings, self._process, _pad_encoding, observe
        )

    def _process(self, a: Encoding, b: Encoding | None, add_special_tokens: bool) -> Encoding:
        if self.post_processor is None:
            return default_process(a, b)
        return self.post_processor.process(a, b, add_special_tokens)

    def _probe_layout(self, is_pair: bool, add_special_tokens: bool) -> list[int] | EncodeError:
        """The post-processed ids with sequence A as the id ``_A`` (B as ``_B``): every
        post-processor places the sequences as opaque blocks, whatever their length."""
        a = Encoding.of_sequence([_A], [""], 0)
        b = Encoding.of_sequence([_B], [""], 1) if is_pair else None
        if self.post_processor is None:
            return default_process(a, b).ids
        try:
            return self.post_processor.process(a, b, add_special_tokens).ids
        except EncodeError as exc:
            return exc

    def _configure(self) -> None:
        self._plain = self._truncation is None and self._padding is None

    # -- encoding -----------------------------------------------------------------------------

    def _ids(
        self,
        sequence: str | Sequence[str],
        pair: str | Sequence[str] | None,
        add_special_tokens: bool,
        is_pretokenized: bool = False,
    ) -> list[int]:
        """``encode(...).ids`` before padding, without building an Encoding."""
        a = self._input_ids(sequence, is_pretokenized)
        b = None if pair is None else self._input_ids(pair, is_pretokenized)
        return self._laid_out(a, b, add_special_tokens)

    def _laid_out(self, a: list[int], b: list[int] | None, add_special_tokens: bool) -> list[int]:
        """The ids of sequences ``a`` and ``b`` (before post-processing) truncated and laid out
        as the post-processor places them, before padding."""
        return self._lay_out(a, b, add_special_tokens, truncate_ids, self._placed)

    def _placed(self, a: list[int], b: list[int] | None, add_special_tokens: bool) -> list[int]:
        """The ids of ``a`` and ``b`` where the post-processor places them (its layout, probed
        once per file: :meth:`_probe_layout`)."""
        layout = self._layouts[b is not None, add_special_tokens]
        if isinstance(layout, EncodeError):
            raise EncodeError(str(layout))
        out: list[int] = []
        for x in layout:
            if x == _A:
                out += a
            elif x == _B:
                out += b  # type: ignore[arg-type]
            else:
                out.append(x)
        return out

    def encode_ids(
        self, text: str, add_special_tokens: bool = True, pair: str | None = None
    ) -> list[int]:
        """Only the ids of ``text`` (and ``pair``): ``encode(text, pair).ids``, truncation and
        padding included. The fast path the runner uses."""
        if pair is None and self._plain:
            prefix, suffix = self._affixes[add_special_tokens]
            if prefix is not None:
                ids = self._sequence_ids(_text(text))
                return prefix + ids + suffix if (prefix or suffix) else ids
        ids = self._ids(text, pair, add_special_tokens)
        return ids if self._padding is None else self._padding.pad_ids([ids])[0]

    def encode_ids_into(self, text: str, out: array, add_special_tokens: bool = True) -> int:
        """Append ``encode_ids(text, add_special_tokens)`` to ``out`` (an ``array.array`` of a
        type the ids fit); returns how many were appended.

        Without truncation or padding the ids go straight into ``out`` and a long text is split
        a piece at a time, so memory stays about ``out``'s size plus the text's whatever the
        text's length (for pre-tokenizers led by a pattern, ByteLevel's included, and for BPE
        files without one). If it raises, ``out`` is left as it was.
        """
        start = len(out)
        try:
            prefix, suffix = self._affixes[add_special_tokens] if self._plain else (None, None)
            if prefix is None:
                out.extend(self.encode_ids(text, add_special_tokens))
            else:
                out.extend(prefix)
                self._sequence_ids_into(_text(text), out)
                out.extend(suffix)
        except BaseException:
            del out[start:]
            raise
        return len(out) - start

    @gc_paused
    def encode_batch_ids(
        self,
        texts: Iterable[str],
        add_special_tokens: bool = True,
        pairs: Iterable[str | None] | None = None,
    ) -> list[list[int]]:
        """``[e.ids for e in encode_batch(...)]`` (batch padding included), for each text and
        its pair (``pairs``: one str or None per text). The returned lists may be shared between
        identical inputs (encoded once, or split again and read from the piece cache)."""
        keys: Iterable = texts if pairs is None else _zip_strict(texts, pairs)
        done: dict = {}
        out = []
        if pairs is None and self._batches:
            texts = list(keys)
            prefix, suffix = self._affixes[add_special_tokens] if self._plain else (None, None)
            for text, found in zip(texts, self._batch_sequences(texts, False)):
                if found is None:
                    out.append(self._ids(text, None, add_special_tokens))
                elif prefix is None:
                    out.append(self._laid_out(found[0], None, add_special_tokens))
                else:
                    out.append(prefix + found[0] + suffix if prefix or suffix else found[0])
            return out if self._padding is None else self._padding.pad_ids(out)
        for key in keys:
            ids = done.get(key)
            if ids is None:
                if pairs is None:
                    ids = self.encode_ids(key, add_special_tokens)
                else:
                    ids = self._ids(key[0], key[1], add_special_tokens)
                done[key] = ids
            out.append(ids)
        if self._padding is not None:
            out = self._padding.pad_ids(out)
        return out

    @gc_paused
    def encode_batch_ids_flat(
        self, texts: Iterable[str], add_special_tokens: bool = True
    ) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`encode_batch_ids` of ``texts`` as two numpy arrays: (the ids of every text, one
        text after another, int32; where each text's ids start, and the end, int64, one more
        than the texts). The same ids, without a Python int or list per id where the piece
        table found them: what a caller writing ids to a file or an Arrow column wants."""
        texts = list(texts)
        prefix, suffix = self._affixes[add_special_tokens] if self._plain else (None, None)
        if not self._batches or prefix is None:
            return _flat(self.encode_batch_ids(texts, add_special_tokens))
        rows = []
        for text, found in zip(texts, self._batch_sequences(texts, False, True)):
            rows.append(self._ids(text, None, add_special_tokens) if found is None else found[0])
        return _flat(rows, prefix, suffix)

    def encode(
        self,
        sequence: str | Sequence[str],
        pair: str | Sequence[str] | None = None,
        is_pretokenized: bool = False,
        add_special_tokens: bool = True,
    ) -> Encoding:
        """The full :class:`Encoding` of ``sequence`` (and ``pair``), as ``tokenizers`` returns it:
        truncated, post-processed and padded as configured. ``is_pretokenized``: the sequences
        are lists of words, each encoded on its own."""
        if isinstance(pair, bool):
            # the former signature encode(text, add_special_tokens), still used positionally
            pair, add_special_tokens = None, pair
        a = self._sequence_encoding(sequence, 0, is_pretokenized)
        b = None if pair is None else self._sequence_encoding(pair, 1, is_pretokenized)
        return self._post_process(a, b, add_special_tokens)

    @gc_paused
    def encode_batch(
        self, inputs: Sequence, is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> list[Encoding]:
        """One Encoding per input (a sequence, or a (sequence, pair) tuple), padded together."""
        if not is_pretokenized and self._batches:
            inputs = list(inputs)
            found = self._batch_sequences(inputs, True)
        else:
            found = repeat(None)
        encodings = []
        for item, sequence in zip(inputs, found):
            if sequence is None:
                encodings.append(
                    self.encode(
                        *_batch_input(item, is_pretokenized), is_pretokenized, add_special_tokens
                    )
                )
                continue
            encoding = self._encoding_of(*sequence, 0, _text(item))
            encodings.append(self._post_process(encoding, None, add_special_tokens))
        if self._padding is not None:
            self._padding.pad_encodings(encodings)
        return encodings

    @gc_paused
    def encode_batch_fast(
        self, inputs: Sequence, is_pretokenized: bool = False, add_special_tokens: bool = True
    ) -> list[Encoding]:
        """:meth:`encode_batch` as the library's fast variant returns it: the same ids, type
        ids, masks and sequence ids, but no offsets ((0, 0)), no word ids (None) and an empty
        token string for every token of the input (added tokens found in it included); the
        special tokens the post-processor adds and the padding keep theirs. Without a
        post-processor, a pair's type ids are 0, as there."""
        inputs = list(inputs)
        if not is_pretokenized and self._batches:
            found = self._batch_sequences(inputs, False)
        else:
            found = [None] * len(inputs)
        encodings = []
        for item, sequence in zip(inputs, found):
            if sequence is None:
                a, b = _batch_input(item, is_pretokenized)
                first = _untracked(self._input_ids(a, is_pretokenized))
                pair = None if b is None else _untracked(self._input_ids(b, is_pretokenized))
            else:
                first, pair = _untracked(list(sequence[0])), None
            encodings.append(self._post_process(first, pair, add_special_tokens))
        if self._padding is not None:
            self._padding.pad_encodings(encodings)
        return encodings

    def post_process(
        self, encoding: Encoding, pair: Encoding | None = None, add_special_tokens: bool = True
    ) -> Encoding:
        """The library's last steps on given Encodings: truncation, the post-processor, then
        padding (of this one encoding). The inputs are left as they are (copies are
        processed)."""
        return self._post_process(
            encoding.copy(), None if pair is None else pair.copy(), add_special_tokens
        )

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        """How many tokens the post-processor adds to one sequence, or to a pair."""
        return self._n_added(is_pair)

    def set_cache_size(self, megabytes: float) -> None:
        """Bound the per-piece caches to about ``megabytes`` of memory (the dict's two
        generations of entries, ~450 bytes each; half of it where the ids path has the piece
        table, which takes the other half). Results never depend on it; speed on varied text
        does."""
        if self._piece_table is None:
            self._cache.limit = max(1, int(megabytes * 1e6 / (2 * CACHE_ENTRY_BYTES)))
            return
        # the ids path reads the table, the other paths the dict: half each
        self._cache.limit = max(1, int(megabytes * 1e6 / (4 * CACHE_ENTRY_BYTES)))
        self._piece_table.limit = max(1, int(megabytes * 1e6 / (2 * TABLE_ENTRY_BYTES)))

    # -- truncation and padding settings (the Python binding's names and defaults) ------------

    def enable_truncation(
        self,
        max_length: int,
        stride: int = 0,
        strategy: str = "longest_first",
        direction: str = "right",
    ) -> None:
        """Truncate every encoding to ``max_length`` tokens, special tokens included.

        Raises ValueError, as `tokenizers` does, for an unknown strategy or direction, or a
        ``stride`` above ``max_length`` less the special tokens of a single sequence."""
        for name, value in (("max_length", max_length), ("stride", stride)):
            _check_usize(name, value)
        if strategy not in STRATEGY_NAMES:
            raise ValueError(
                f"Unknown `strategy`: `{strategy}`. Use one of `longest_first`, `only_first`, "
                "or `only_second`"
            )
        if direction not in ("left", "right"):
            raise ValueError(f"Unknown `direction`: `{direction}`. Use one of `left` or `right`.")
        n_added = self._n_added(False)
        # the library subtracts unsigned: below the special tokens the check never fires
        if max_length >= n_added and max_length - n_added < stride:
            effective = max_length - n_added
            raise ValueError(
                f"tokenizer stride set to {stride}, which is greater than or equal to its "
                f"effective max length of {effective} (= {max_length} original max length - "
                f"{n_added} added special tokens), "
            )
        self._truncation = Truncation(max_length, stride, strategy, direction)
        self._configure()

    def no_truncation(self) -> None:
        self._truncation = None
        self._configure()

    @property
    def truncation(self) -> dict | None:
        """The truncation settings as the Python binding shows them, or None."""
        return None if self._truncation is None else self._truncation.as_dict()

    def enable_padding(
        self,
        direction: str = "right",
        pad_id: int = 0,
        pad_type_id: int = 0,
        pad_token: str = "[PAD]",
        length: int | None = None,
        pad_to_multiple_of: int | None = None,
    ) -> None:
        """Pad encodings to ``length`` (None: the longest of the batch), rounded up to a multiple
        of ``pad_to_multiple_of``, with ``pad_id`` on the ``direction`` side."""
        if direction not in ("left", "right"):
            raise ValueError(f"Unknown `direction`: `{direction}`. Use one of `left` or `right`")
        for name, value in (("pad_id", pad_id), ("pad_type_id", pad_type_id)):
            _check_usize(name, value, 2**32 - 1)
        for name, value in (("length", length), ("pad_to_multiple_of", pad_to_multiple_of)):
            if value is not None:
                _check_usize(name, value)
        if not isinstance(pad_token, str):
            raise TypeError(f"pad_token must be a str, got {type(pad_token).__name__}")
        self._padding = Padding(
            direction, pad_id, pad_type_id, pad_token, length, pad_to_multiple_of
        )
        self._configure()

    def no_padding(self) -> None:
        self._padding = None
        self._configure()

    @property
    def padding(self) -> dict | None:
        """The padding settings as the Python binding shows them, or None."""
        return None if self._padding is None else self._padding.as_dict()

    # -- decoding -----------------------------------------------------------------------------

    def id_to_token(self, token_id: int) -> str | None:
        added = self.added_vocabulary.id_to_string(token_id)
        return added if added is not None else self.model.vocab_r.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        added = self.added_vocabulary.content_to_id.get(token)
        return added if added is not None else self.model.token_id(token)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        """The text of ``ids`` through the decoder; special tokens are skipped by default, as
        the `tokenizers` binding does."""
        specials = self.added_vocabulary.special_contents
        tokens = []
        for token_id in ids:
            token = self.id_to_token(token_id)
            if token is None:
                continue  # ids unknown to both vocabularies are dropped, as in tokenizers
            if skip_special_tokens and token in specials:
                continue
            tokens.append(token)
        if self.decoder is None:
            return " ".join(tokens)
        return "".join(self.decoder.decode_chain(tokens))

    def decode_batch(
        self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = True
    ) -> list[str]:
        return [self.decode(ids, skip_special_tokens) for ids in sequences]

    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        vocab = dict(self.model.vocab)
        if with_added_tokens:
            vocab.update(self.added_vocabulary.content_to_id)
        return vocab

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        base = self.model.vocab_size
        if not with_added_tokens:
            return base
        return base + len(self.added_vocabulary.beyond_model)

    # -- added tokens -------------------------------------------------------------------------

    def add_tokens(self, tokens: Sequence[str | AddedToken]) -> int:
        """Add tokens to the vocabulary (a str is a non-special, normalized token); returns
        how many the library counts as added. Later encodes and decodes find them."""
        return self._add_tokens([_added_token(t, False) for t in _token_list(tokens)])

    def add_special_tokens(self, tokens: Sequence[str | AddedToken]) -> int:
        """:meth:`add_tokens` of special tokens: a str is special and not normalized; an
        AddedToken is made special, the caller's object included, as the library does."""
        return self._add_tokens([_added_token(t, True) for t in _token_list(tokens)])

    def _add_tokens(self, tokens: list[AddedToken]) -> int:
        model = self.model
        count = self.added_vocabulary.add(
            tokens, model.vocab.get, model.vocab_size, self.normalizer
        )
        vocab_r = model.vocab_r
        self._added_strings = {i: vocab_r.get(i) for i in self.added_vocabulary.tokens_by_id}
        return count

    def get_added_tokens_decoder(self) -> dict[int, AddedToken]:
        """id -> AddedToken (a copy) of every added token, by increasing id."""
        tokens = self.added_vocabulary.tokens_by_id
        return {i: tokens[i].frozen() for i in sorted(tokens)}

    # -- serialization ------------------------------------------------------------------------

    def to_str(self, pretty: bool = False) -> str:
        """This tokenizer as tokenizer.json text: the file it was loaded from, with its added
        tokens, truncation and padding as they are now (so a file that ``tokenizers`` loads
        into the same tokenizer)."""
        return _json_text(self._as_dict(), pretty)

    def save(self, path: str | os.PathLike, pretty: bool = True) -> None:
        """Write :meth:`to_str` to ``path``, whole or not at all (a temporary file beside it,
        then renamed over it)."""
        text = self.to_str(pretty)
        path = os.fspath(path)
        temporary = f"{path}.batchtok-{os.getpid()}.tmp"
        try:
            with open(temporary, "w", encoding="utf-8") as f:
                f.write(text)
            os.replace(temporary, path)
        except BaseException:
            if os.path.exists(temporary):
                os.unlink(temporary)
            raise

    def _as_dict(self) -> dict:
        source = self._source
        if source is None:
            raise NotImplementedError(
                "this Tokenizer keeps no tokenizer.json (built in code, or loaded with "
                "keep_source=False): batchtok writes a tokenizer only as the file it was "
                "loaded from"
            )
        if isinstance(source, bytes):
            source = source.decode("utf-8")
        data = parse_json(source) if isinstance(source, str) else source
        out: dict = {key: data.get(key) for key in TOP_LEVEL_KEYS}
        out["version"] = "1.0"
        out["truncation"] = truncation_json(self._truncation)
        out["padding"] = padding_json(self._padding)
        tokens = self.added_vocabulary.tokens_by_id
        out["added_tokens"] = [{"id": i, **tokens[i].as_dict()} for i in sorted(tokens)]
        return out

    def describe(self) -> str:
        """The component tree, one block a line."""
        added = self.added_vocabulary
        lines = [
            f"added_tokens: {len(added.tokens_by_id)} ({len(added.special_contents)} special)",
            f"normalizer: {self.normalizer.describe() if self.normalizer else None}",
            f"pre_tokenizer: {self.pre_tokenizer.describe() if self.pre_tokenizer else None}",
            f"model: {self.model.describe()}",
            f"post_processor: {self.post_processor.describe() if self.post_processor else None}",
            f"decoder: {self.decoder.describe() if self.decoder else None}",
            f"vocab size: {self.get_vocab_size()} ({self.model.vocab_size} in the model)",
        ]
        if self.ignored_fields:
            lines.append("ignored fields (tokenizers ignores them too):")
            lines += [f"  {path}" for path in self.ignored_fields]
        return "\n".join(lines)


def _unpickled(payload: bytes) -> Tokenizer:
    return _from_state(load_cache.loads(payload))


def _from_state(state: dict) -> Tokenizer:
    tok = Tokenizer.__new__(Tokenizer)
    cache_entries = state.pop("_cache_entries")
    table_entries = state.pop("_table_entries", None)
    tok.__dict__.setdefault(_SOURCE, None)
    tok.__dict__.update(state)
    tok._build_splitters(cache_entries, table_entries)
    return tok


def _joined(parts: list) -> np.ndarray:
    """``parts`` (numpy arrays, lists and tuples of ids) one after another, int32."""
    import numpy as np

    if not parts:
        return np.empty(0, np.int32)
    # (an empty list is a float array to numpy: "unsafe" casts it; ids fit int32)
    return np.concatenate(parts, dtype=np.int32, casting="unsafe")


def _flat(
    rows: list, prefix: list[int] | None = None, suffix: list[int] | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(``rows`` (lists or numpy arrays of ids), each between ``prefix`` and ``suffix``, one
    after another as int32; the offsets of the rows in it, and its end, int64)."""
    import numpy as np

    lengths = np.fromiter(map(len, rows), np.int64, len(rows))
    if prefix or suffix:
        lengths += len(prefix or ()) + len(suffix or ())
        rows = [part for ids in rows for part in (prefix or (), ids, suffix or ())]
    offsets = np.zeros(len(lengths) + 1, np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return _joined(rows), offsets


def _affixes(layout: list[int] | EncodeError) -> tuple[list[int] | None, list[int] | None]:
    """(ids before A, ids after A) when the layout holds A once, else (None, None)."""
    if isinstance(layout, EncodeError) or layout.count(_A) != 1:
        return None, None
    at = layout.index(_A)
    return layout[:at], layout[at + 1 :]


S = TypeVar("S")  # what truncation cuts: an Encoding, or bare ids
T = TypeVar("T")  # what the post-processor gives: an Encoding, or bare ids


def _truncate_encodings(
    a: Encoding, b: Encoding | None, params: Truncation, max_length: int
) -> tuple[Encoding, Encoding | None]:
    truncate_encodings(a, b, params, max_length)  # in place
    return a, b


def _pad_encoding(padding: Padding, encoding: Encoding) -> Encoding:
    padding.pad_encodings([encoding])  # in place
    return encoding


def _text(sequence: object) -> str:
    if not isinstance(sequence, str):
        raise TypeError(f"expected a str sequence, got {type(sequence).__name__}")
    return sequence


def _words(sequence: object) -> list[str]:
    if not isinstance(sequence, (list, tuple)) or not all(isinstance(w, str) for w in sequence):
        raise TypeError("a pre-tokenized sequence must be a list or tuple of str")
    return list(sequence)


def _batch_input(item: object, is_pretokenized: bool) -> tuple[object, object]:
    """(sequence, pair or None) of one encode_batch input, read as the Python binding does."""
    if is_pretokenized:
        if isinstance(item, (list, tuple)) and all(isinstance(w, str) for w in item):
            return item, None
        kinds = (list, tuple)
    else:
        if isinstance(item, str):
            return item, None
        kinds = (str,)
    if (
        isinstance(item, (list, tuple))
        and len(item) == 2
        and all(isinstance(x, kinds) for x in item)
    ):
        return item[0], item[1]
    raise TypeError(
        "each input must be a sequence or a (sequence, pair) tuple"
        + (" of lists of str" if is_pretokenized else " of str")
    )


def _zip_strict(texts: Iterable[str], pairs: Iterable[str | None]) -> list[tuple]:
    texts, pairs = list(texts), list(pairs)
    if len(texts) != len(pairs):
        raise ValueError(f"{len(texts)} texts but {len(pairs)} pairs")
    return list(zip(texts, pairs))


def _check_usize(name: str, value: object, limit: int = USIZE_MAX) -> None:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if not 0 <= value <= limit:
        raise OverflowError(f"{name}={value} is not an unsigned integer the library accepts")


def _untracked(ids: list[int]) -> Encoding:
    """One sequence's Encoding before post-processing, as the library's fast batch builds it:
    every token string empty, no offsets, no word ids, and type id 0 (a pair's too: only a
    post-processor sets type ids there)."""
    return Encoding.of_sequence(ids, [""] * len(ids), 0)


def _token_list(tokens: object) -> list:
    if not isinstance(tokens, list):
        raise TypeError(f"argument 'tokens': expected a list, got {type(tokens).__name__}")
    return tokens


def _added_token(item: object, special: bool) -> AddedToken:
    """An item of add_tokens (``special`` False) or add_special_tokens, as the library takes it."""
    if isinstance(item, str):
        return AddedToken(item, special=special)
    if isinstance(item, AddedToken):
        if special:
            item.special = True  # (the library sets it on the caller's token too)
        return item
    raise TypeError("Input must be a List[Union[str, AddedToken]]")


def _json_text(data: dict, pretty: bool) -> str:
    """``data`` as serde_json writes it: compact, or indented by two spaces."""
    if pretty:
        return json.dumps(data, ensure_ascii=False, indent=2)
    return json.dumps(data, ensure_ascii=False, separators=(",", ":"))
