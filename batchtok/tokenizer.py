"""The public Tokenizer: load a tokenizer.json, encode and decode exactly as `tokenizers` does.

>>> tok = Tokenizer.from_file("configs/tokenizers/gpt2/tokenizer.json")   # doctest: +SKIP
>>> tok.encode("Hello world").ids                                            # doctest: +SKIP
[15496, 995]
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Sequence
from itertools import chain

import regex

from .added_tokens import AddedVocabulary, read_added_tokens
from .decoders import Decoder, read_decoder
from .errors import TokenizerFileError
from .models import BPE, Model, read_model
from .normalizers import Normalizer, read_normalizer
from .pre_tokenizers import PreTokenizer, Split, read_pre_tokenizer, split_and_map
from .processors import PostProcessor, read_post_processor
from .spec import Spec

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

# Entries of the per-piece cache before it is cleared; at ~150 bytes an entry, about 300 MB.
DEFAULT_CACHE_ENTRIES = 2_000_000


class Encoding:
    """The result of :meth:`Tokenizer.encode`: ids, tokens and the masks `tokenizers` gives."""

    __slots__ = ("ids", "tokens", "type_ids", "special_tokens_mask", "attention_mask")

    def __init__(
        self, ids: list[int], tokens: list[str], type_ids: list[int], special_tokens_mask: list[int]
    ) -> None:
        self.ids = ids
        self.tokens = tokens
        self.type_ids = type_ids
        self.special_tokens_mask = special_tokens_mask
        self.attention_mask = [1] * len(ids)

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        more = "..." if len(self.ids) > 8 else ""
        return f"Encoding(num_tokens={len(self.ids)}, ids={self.ids[:8]}{more})"


class _PieceCache(dict):
    """piece (before the pre-tokenizer's final mapping) -> tuple of model ids."""

    def __init__(self, compute: Callable[[str], tuple[int, ...]], limit: int) -> None:
        super().__init__()
        self.compute = compute
        self.limit = limit

    def __missing__(self, piece: str) -> tuple[int, ...]:
        ids = self.compute(piece)
        if len(self) >= self.limit:
            self.clear()
        self[piece] = ids
        return ids


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
    ) -> None:
        self.model = model
        self.normalizer = normalizer
        self.pre_tokenizer = pre_tokenizer
        self.post_processor = post_processor
        self.decoder = decoder
        self._normalize = normalizer.normalize if normalizer is not None else None
        self.added_vocabulary = AddedVocabulary(
            added_tokens, model.vocab.get, len(model.vocab), self._normalize
        )
        self.encode_special_tokens = False
        splitter, self._piece_map = split_and_map(pre_tokenizer)
        self._split = _compile_splitter(splitter)
        # Byte-level files are split fine by their regex; the others may send a whole text
        # to BPE as one word.
        boundary = (
            _BoundarySplitter.for_model(model)
            if isinstance(model, BPE) and self._piece_map is None
            else None
        )
        if boundary is not None and boundary.active:
            self._split = _with_boundary_split(self._split, boundary)
        self._cache = _PieceCache(self._tokenize_piece, cache_entries)
        self._templates = {
            flag: (post_processor.single(flag) if post_processor else [("A", 0)])
            for flag in (True, False)
        }
        self._affixes = {flag: _affixes(t) for flag, t in self._templates.items()}

    # -- loading ------------------------------------------------------------------------------

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> Tokenizer:
        with open(path, "rb") as f:
            raw = f.read()
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TokenizerFileError(
                "$", raw[exc.start : exc.start + 8], "file is not UTF-8"
            ) from exc
        return cls.from_str(text)

    @classmethod
    def from_str(cls, json_text: str) -> Tokenizer:
        try:
            data = json.loads(json_text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            excerpt = json_text[max(0, exc.pos - 20) : exc.pos + 20]
            raise TokenizerFileError(
                "$", excerpt, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
            ) from exc
        return cls.from_dict(data)

    @classmethod
    def from_dict(cls, data: dict) -> Tokenizer:
        top = Spec(data, "")
        version = top.raw("version", None)
        if version is not None and version != "1.0":
            raise top.fail("version", version, 'unknown tokenizer version (expected "1.0")')
        for key in ("truncation", "padding"):
            if top.raw(key, None) is not None:
                raise top.fail(key, data[key], f"{key} is not supported yet")
        if "added_tokens" in data and data["added_tokens"] is None:
            raise top.fail("added_tokens", None, "expected an array (tokenizers rejects null)")
        added = read_added_tokens(top.array("added_tokens", []), Spec(data, "added_tokens"))
        if "model" not in data:
            raise top.fail("model", None, "Model missing.")

        def component(key: str, reader):
            value = top.raw(key, None)
            return None if value is None else reader(value, key)

        normalizer = component("normalizer", read_normalizer)
        pre_tokenizer = component("pre_tokenizer", read_pre_tokenizer)
        post_processor = component("post_processor", read_post_processor)
        decoder = component("decoder", read_decoder)
        model = read_model(top.raw("model"), "model")
        _check_metaspace_first(pre_tokenizer, normalizer)
        for key in data:
            if key not in TOP_LEVEL_KEYS:
                raise top.fail(
                    key, data[key], "unknown top-level key (tokenizers refuses the file)"
                )
        top.finish()
        return cls(model, added, normalizer, pre_tokenizer, post_processor, decoder)

    # -- encoding -----------------------------------------------------------------------------

    def _tokenize_piece(self, piece: str) -> tuple[int, ...]:
        word = self._piece_map(piece) if self._piece_map is not None else piece
        if not word:
            return ()
        return tuple(self.model.tokenize(word))

    def _fragments(self, text: str) -> list[tuple[str, int | None, bool]]:
        return self.added_vocabulary.split(text, self._normalize, self.encode_special_tokens)

    def _sequence_ids(self, text: str) -> list[int]:
        """Ids of one text before post-processing."""
        cache = self._cache
        split = self._split
        ids: list[int] = []
        for fragment, token_id, at_start in self._fragments(text):
            if token_id is not None:
                ids.append(token_id)
            else:
                ids += chain.from_iterable(map(cache.__getitem__, split(fragment, at_start)))
        return ids

    def encode_ids(self, text: str, add_special_tokens: bool = True) -> list[int]:
        """Only the ids of ``text`` (the fast path the runner uses)."""
        prefix, suffix = self._affixes[add_special_tokens]
        ids = self._sequence_ids(text)
        if prefix is None:
            return self._apply_template_ids(ids, add_special_tokens)
        return prefix + ids + suffix if (prefix or suffix) else ids

    def encode_batch_ids(
        self, texts: Iterable[str], add_special_tokens: bool = True
    ) -> list[list[int]]:
        """Ids for each text; identical texts are encoded once (the returned lists are shared)."""
        done: dict[str, list[int]] = {}
        out = []
        for text in texts:
            ids = done.get(text)
            if ids is None:
                ids = done[text] = self.encode_ids(text, add_special_tokens)
            out.append(ids)
        return out

    def encode(self, text: str, add_special_tokens: bool = True) -> Encoding:
        if not isinstance(text, str):
            raise TypeError(f"encode expects a str, got {type(text).__name__}")
        vocab_r = self.model.vocab_r
        ids: list[int] = []
        tokens: list[str] = []
        for fragment, token_id, at_start in self._fragments(text):
            if token_id is not None:
                ids.append(token_id)
                tokens.append(fragment)
                continue
            for piece in self._split(fragment, at_start):
                piece_ids = self._cache[piece]
                ids += piece_ids
                tokens += [vocab_r[i] for i in piece_ids]
        out_ids: list[int] = []
        out_tokens: list[str] = []
        type_ids: list[int] = []
        special: list[int] = []
        for kind, value in self._templates[add_special_tokens]:
            if kind == "A":
                out_ids += ids
                out_tokens += tokens
                type_ids += [value] * len(ids)  # type: ignore[list-item]
                special += [0] * len(ids)
            else:
                sids, stokens, type_id = value  # type: ignore[misc]
                out_ids += sids
                out_tokens += stokens
                type_ids += [type_id] * len(sids)
                special += [1] * len(sids)
        return Encoding(out_ids, out_tokens, type_ids, special)

    def encode_batch(self, texts: Sequence[str], add_special_tokens: bool = True) -> list[Encoding]:
        return [self.encode(t, add_special_tokens) for t in texts]

    def _apply_template_ids(self, ids: list[int], add_special_tokens: bool) -> list[int]:
        out: list[int] = []
        for kind, value in self._templates[add_special_tokens]:
            out += ids if kind == "A" else value[0]  # type: ignore[index]
        return out

    # -- decoding -----------------------------------------------------------------------------

    def id_to_token(self, token_id: int) -> str | None:
        added = self.added_vocabulary.id_to_string(token_id)
        return added if added is not None else self.model.vocab_r.get(token_id)

    def token_to_id(self, token: str) -> int | None:
        added = self.added_vocabulary.content_to_id.get(token)
        return added if added is not None else self.model.vocab.get(token)

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = False) -> str:
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
        self, sequences: Sequence[Sequence[int]], skip_special_tokens: bool = False
    ) -> list[str]:
        return [self.decode(ids, skip_special_tokens) for ids in sequences]

    def get_vocab(self, with_added_tokens: bool = True) -> dict[str, int]:
        vocab = dict(self.model.vocab)
        if with_added_tokens:
            vocab.update(self.added_vocabulary.content_to_id)
        return vocab

    def get_vocab_size(self, with_added_tokens: bool = True) -> int:
        if not with_added_tokens:
            return len(self.model.vocab)
        return len(self.model.vocab.keys() | self.added_vocabulary.content_to_id.keys())

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
            f"vocab size: {self.get_vocab_size()} ({len(self.model.vocab)} in the model)",
        ]
        return "\n".join(lines)


def _check_metaspace_first(pre: PreTokenizer | None, normalizer: Normalizer | None) -> None:
    """Metaspace "first" asks whether a piece starts at offset 0 of the input; a normalizer
    that may drop leading text moves that offset, which batchtok does not track."""
    from .pre_tokenizers import MetaspacePreTokenizer
    from .pre_tokenizers import Sequence as PreSequence

    first = pre.pretokenizers[0] if isinstance(pre, PreSequence) and pre.pretokenizers else pre
    if (
        isinstance(first, MetaspacePreTokenizer)
        and first.metaspace.prepend_scheme == "first"
        and normalizer is not None
        and not normalizer.keeps_start
    ):
        raise TokenizerFileError(
            "pre_tokenizer",
            "first",
            "Metaspace prepend_scheme 'first' after a normalizer that can remove leading text "
            "(Strip, or Replace with empty content) depends on offsets batchtok does not track",
        )


def _refuse_constant(name: str):
    raise TokenizerFileError("$", name, "not valid JSON (NaN and Infinity are not numbers in JSON)")


def _affixes(template: list) -> tuple[list[int] | None, list[int] | None]:
    """(ids before A, ids after A) when the template holds A once, else (None, None)."""
    positions = [i for i, (kind, _) in enumerate(template) if kind == "A"]
    if len(positions) != 1:
        return None, None
    at = positions[0]
    before = [i for _, v in template[:at] for i in v[0]]
    after = [i for _, v in template[at + 1 :] for i in v[0]]
    return before, after


def _compile_splitter(splitter: PreTokenizer | None) -> Callable[[str, bool], list[str]]:
    """A function (fragment, at_start) -> pieces, skipping stages that cannot change anything."""
    from .pre_tokenizers import Sequence as PreSequence
    from .pre_tokenizers import _SplitOnly

    stages = splitter.pretokenizers if isinstance(splitter, PreSequence) else [splitter]
    stages = [
        s
        for s in stages
        if s is not None
        and not (
            isinstance(s, _SplitOnly)
            and not s.byte_level.add_prefix_space
            and not s.byte_level.use_regex
        )
    ]
    if not stages:
        return lambda text, at_start: [text] if text else []
    if len(stages) == 1 and isinstance(stages[0], Split):
        split_one = stages[0].split_one
        return lambda text, at_start: split_one(text)
    if len(stages) == 1:
        only = stages[0]
        return lambda text, at_start: only.pre_tokenize([text], at_start)
    sequence = PreSequence(stages)
    return lambda text, at_start: sequence.pre_tokenize([text], at_start)


def _with_boundary_split(
    split: Callable[[str, bool], list[str]], splitter: _BoundarySplitter
) -> Callable[[str, bool], list[str]]:
    boundary = splitter.split

    def run(text: str, at_start: bool) -> list[str]:
        out: list[str] = []
        for piece in split(text, at_start):
            out += boundary(piece)
        return out

    return run


class _BoundarySplitter:
    """Cut a word where BPE provably merges the two sides independently (checked at load time).

    Enabled only when no merge involves a byte-fallback token or the unk token, so every
    symbol spanning a cut would be a vocab token whose text occurs in the word. Two kinds of
    cuts:

    * around *isolated* chars: a char that is a token on its own and occurs in no longer
      token, or (with byte fallback over all 256 bytes) a char that is not in the vocab, can
      never be merged with a neighbour;
    * before each run of ``mark`` (U+2581): a symbol spanning it would be a "crossing" token,
      a non-mark char followed by the mark. Where the vocab has such tokens, a cut is kept
      whole wherever one of them occurs in the word across it.

    Each part then goes through the piece cache on its own.
    """

    @staticmethod
    def for_model(model: BPE) -> _BoundarySplitter | None:
        if model.prefix or model.suffix:
            return None
        special = {model.vocab[t] for t in model.byte_token_strings() if t in model.vocab}
        if model.unk_token in model.vocab:
            special.add(model.vocab[model.unk_token])
        if special and any(
            key // model.stride in special or key % model.stride in special for key in model.pairs
        ):
            return None
        return _BoundarySplitter(model)

    def __init__(self, model: BPE, mark: str = "\u2581") -> None:
        vocab = model.vocab
        in_longer = set("".join(t for t in vocab if len(t) > 1))
        has_all_bytes = model.byte_fallback and all(t in vocab for t in model.byte_token_strings())
        self.mark = mark if mark in vocab else ""
        if has_all_bytes:
            isolated = "[^" + _char_class(in_longer) + "]"
            joined = "[" + _char_class(in_longer - {mark}) + "]"
        else:
            lone = {t for t in vocab if len(t) == 1} - in_longer - {mark}
            isolated = "[" + _char_class(lone) + "]" if lone else ""
            joined = "[^" + _char_class(lone | {mark}) + "]"
        m = re.escape(self.mark)
        alternatives = [f"{m}*{joined}+", f"{m}+"] if self.mark else [f"{joined}+"]
        if isolated:
            alternatives.append(isolated)
        if not self.mark and not isolated:
            self.active = False
            return
        self.active = True
        self._parts = re.compile("|".join(alternatives))
        crossing_shape = re.compile(f"[^{re.escape(mark)}]{re.escape(mark)}")
        crossing = [t for t in vocab if mark in t and crossing_shape.search(t)]
        longest_first = sorted(crossing, key=len, reverse=True)
        self._crossing = (
            regex.compile("|".join(map(regex.escape, longest_first)))
            if crossing and self.mark
            else None
        )

    def split(self, word: str) -> list[str]:
        pieces = self._parts.findall(word)
        if self._crossing is None or len(pieces) < 2 or not self._crossing.search(word):
            return pieces
        unsafe: set[int] = set()
        for m in self._crossing.finditer(word, overlapped=True):
            unsafe.update(range(m.start() + 1, m.end()))
        out = [pieces[0]]
        at = len(pieces[0])
        for piece in pieces[1:]:
            if at in unsafe:
                out[-1] += piece
            else:
                out.append(piece)
            at += len(piece)
        return out


def _char_class(chars) -> str:
    return "".join(re.escape(c) for c in sorted(chars))
