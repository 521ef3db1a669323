"""The Model interface: one pre-tokenized piece ("word") -> token ids; and the vocab reader."""

from __future__ import annotations

import pickle
from collections.abc import Callable, Sequence
from typing import TypeVar

from .. import load_cache
from ..errors import NotReproducibleError
from ..utils.spec import U32_MAX, Spec, is_u32

T = TypeVar("T")


class Model:
    vocab: dict[str, int]
    vocab_r: dict[int, str]
    # Whether each token string tokenizers reports is ``vocab_r[id]``; when False (Unigram's
    # unknown text) the strings come from :meth:`token_strings`.
    tokens_are_vocab_strings = True

    def tokenize(self, word: str) -> list[int]:
        raise NotImplementedError

    def token_offsets(
        self, word: str, ids: Sequence[int] | None = None, start: int = 0
    ) -> list[tuple[int, int, int]]:
        """(id, start, end) of each token of :meth:`tokenize`, start and end being UTF-8 byte
        offsets in ``word`` as the library's model reports them. ``ids``: the ids an encode
        gave, the word's from ``start`` on, which a model may read instead of tokenizing the
        word again (checking them)."""
        raise NotImplementedError(f"{type(self).__name__} reports no offsets")

    #: Whether :meth:`tokenize_many` is faster than a :meth:`tokenize` per word.
    tokenizes_many = False
    #: The attribute holding :meth:`tokenize_many`'s tables once built (None until then), which
    #: a pickle keeps as bytes under ``_batch_bytes``; None: the model has no such tables.
    _TABLES: str | None = None

    def tokenize_many(self, words: list[str]) -> list[list[int]]:
        """``[self.tokenize(w) for w in words]``, which a model may compute together."""
        return [self.tokenize(w) for w in words]

    def _each_together(
        self,
        words: list[str],
        fits: Callable[[str], bool] | None,
        together: Callable[[list[str]], list[list[T] | None]],
        one: Callable[[str], list[T]] | None = None,
    ) -> list[list[T]]:
        """``one`` (by default :meth:`tokenize`) of each word: the words ``fits`` accepts (all
        when None) go to ``together`` as one batch; a word it gives None for, and one ``fits``
        refuses, go through ``one``."""
        if fits is None:
            found = together(words)
        else:
            found = [None] * len(words)
            where = [i for i, w in enumerate(words) if fits(w)]
            if where:
                for i, ids in zip(where, together([words[i] for i in where])):
                    found[i] = ids
        each = self.tokenize if one is None else one
        return [each(w) if ids is None else ids for w, ids in zip(words, found)]  # type: ignore[misc]

    def tokenize_many_with_strings(
        self, words: list[str]
    ) -> tuple[list[list[int]], dict[str, list[str]]]:
        """:meth:`tokenize_many`, and :meth:`token_strings` of some words (word -> strings)
        that the model read on the way: none here."""
        return self.tokenize_many(words), {}

    def prepare_batches(self) -> None:
        """Build now the tables :meth:`tokenize_many` would build on its first batch (the
        load cache keeps them)."""
        if self._TABLES is not None:
            self._batch_tables()

    def _batch_tables(self):  # noqa: ANN202 - the model's own kind of tables
        """:meth:`tokenize_many`'s tables: built already, read back from the bytes a pickle
        kept (:meth:`_tables_from_bytes`), or built now (:meth:`_build_tables`)."""
        name = self._TABLES
        assert name is not None
        tables = self.__dict__.get(name)
        if tables is None:
            kept = self.__dict__.pop("_batch_bytes", None)
            tables = self._build_tables() if kept is None else self._tables_from_bytes(kept)
            setattr(self, name, tables)
        return tables

    def _build_tables(self):  # noqa: ANN202
        raise NotImplementedError

    def _tables_to_bytes(self, tables) -> object:  # noqa: ANN001
        """``tables`` as bytes (in tuples or dicts) that load without numpy."""
        raise NotImplementedError

    def _tables_from_bytes(self, kept):  # noqa: ANN001, ANN202
        raise NotImplementedError

    #: Attributes a pickle keeps as a pickle of their own, read on first use: a process that
    #: never reads one (a runner worker whose words all go through the batch tables) does not
    #: pay for unpickling it.
    _DEFERRED: tuple[str, ...] = ()

    def _deferred_names(self) -> tuple[str, ...]:
        """The attributes this model's pickle defers (:data:`_DEFERRED` unless a model decides
        per instance)."""
        return self._DEFERRED

    def __getstate__(self) -> dict:
        """A pickle keeps the batch tables as bytes, so that loading it needs no numpy and
        the first batch of a process (each runner worker's) does not build them again; it
        leaves out ``vocab_r`` when that is the inverse of ``vocab`` (rebuilt on first use,
        sharing its strings) and keeps the :data:`_DEFERRED` attributes as bytes."""
        state = dict(self.__dict__)
        name = self._TABLES
        if name is not None and state.get(name) is not None:
            state["_batch_bytes"] = self._tables_to_bytes(state[name])
            state[name] = None
        if "_batch_bytes" in state:  # (or still the bytes an entry gave, read in place)
            state["_batch_bytes"] = _aside(state["_batch_bytes"])
        vocab_r = state.get("vocab_r")
        if vocab_r is not None and len(vocab_r) == len(self.vocab) and vocab_r == _inverse(self):
            del state["vocab_r"]
        deferred = {k: _aside(v) for k, v in state.pop("_deferred", {}).items()}
        for deferred_name in self._deferred_names():
            if deferred_name in state:
                deferred[deferred_name] = _aside(pickle.dumps(state.pop(deferred_name), protocol=5))
        if deferred:
            state["_deferred"] = deferred
        return state

    def __getattr__(self, name: str) -> object:
        """An attribute a pickle left out (see :meth:`__getstate__`), rebuilt or read now;
        called only when ``name`` is not set."""
        found = self.__dict__
        kept = found.get("_deferred")
        if kept is not None and name in kept:
            value = pickle.loads(kept[name])
        elif name == "vocab_r" and ("vocab" in found or (kept is not None and "vocab" in kept)):
            value = _inverse(self)
        else:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        found[name] = value  # set before the bytes go, for a thread reading it meanwhile
        if kept is not None:
            kept.pop(name, None)
        return value

    def token_id(self, token: str) -> int | None:
        """The id of vocab entry ``token``, or None."""
        return self.vocab.get(token)

    def token_to_id(self, token: str) -> int | None:
        """The library's name for :meth:`token_id`."""
        return self.token_id(token)

    def id_to_token(self, token_id: int) -> str | None:
        """The vocab entry of ``token_id``, or None."""
        return self.vocab_r.get(token_id)

    def max_id(self) -> int:
        """The largest id of the vocab (0 for an empty one)."""
        return max(self.vocab.values(), default=0)

    def token_strings(self, word: str) -> list[str]:
        """The token strings tokenizers reports for ``word``, one per id of :meth:`tokenize`."""
        vocab_r = self.vocab_r
        return [vocab_r[i] for i in self.tokenize(word)]

    def token_strings_many(self, words: list[str]) -> list[list[str]]:
        """:meth:`token_strings` of each word, which a model may compute together."""
        return [self.token_strings(w) for w in words]

    @property
    def vocab_size(self) -> int:
        """What tokenizers' ``Model::get_vocab_size`` counts: the entries of the vocabulary as
        the file lists them (Unigram's list may hold a piece twice)."""
        return len(self.vocab)

    def describe(self) -> str:
        return type(self).__name__


def _aside(kept: object) -> object:
    """``kept`` (a model's tables as bytes in tuples, lists and dicts) with its bytes marked
    for the load cache to keep beside the pickle (:func:`batchtok.load_cache.aside`); the
    views of an entry it was read from become bytes again."""
    if isinstance(kept, memoryview):
        kept = kept.tobytes()
    if isinstance(kept, bytes):
        return load_cache.aside(kept)
    if isinstance(kept, (tuple, list)):
        return type(kept)(_aside(x) for x in kept)
    if isinstance(kept, dict):
        return {k: _aside(v) for k, v in kept.items()}
    return kept


def _inverse(model: Model) -> dict[int, str]:
    """id -> token of ``model.vocab``."""
    vocab = model.vocab
    return dict(zip(vocab.values(), vocab))


def read_vocab(spec: Spec, key: str = "vocab") -> tuple[dict[str, int], dict[int, str]]:
    """The token -> id map at ``key`` and its inverse, refused where tokenizers refuses it. An
    id used twice is kept (the later token in ``vocab_r``) for :func:`refuse_shared_ids`."""
    vocab = spec.raw(key)
    if not isinstance(vocab, dict):
        raise spec.fail(key, vocab, "expected an object mapping token -> id")
    # The common case checked a whole column at a time (a Python loop costs ~0.1 s on 128k
    # entries); anything odd goes through the loop below for its exact error.
    ids = vocab.values()
    if not (set(map(type, ids)) <= {int} and (not ids or (min(ids) >= 0 and max(ids) <= U32_MAX))):
        for token, token_id in vocab.items():
            if not is_u32(token_id):
                raise spec.fail(
                    key, {token: token_id}, "token id must be an unsigned 32-bit integer"
                )
    return vocab, dict(zip(ids, vocab.keys()))


def refuse_shared_ids(
    spec: Spec, vocab: dict[str, int], vocab_r: dict[int, str], key: str = "vocab"
) -> None:
    """Refuse a vocab (from :func:`read_vocab`) that gives one id to two tokens: tokenizers
    reads it, but which token the id decodes to is its hash order's choice. Called once every
    check of tokenizers' own has passed, so that the refusal is only ever of a model it reads
    (:class:`NotReproducibleError`)."""
    if len(vocab_r) == len(vocab):
        return
    first: dict[int, str] = {}
    for token, token_id in vocab.items():
        other = first.setdefault(token_id, token)
        if other != token:
            raise NotReproducibleError(
                spec.at(key),
                {other: token_id, token: token_id},
                "vocab id used twice; which token wins is unspecified in tokenizers",
            )
