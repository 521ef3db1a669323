"""The post-processing step of `tokenizers`: truncation, post-processors, padding, on Encodings.

Everything here follows the library's own order and data flow (``TokenizerImpl::post_process``):
the encodings of sequence A (and B) are truncated, then the post-processor turns them into a list
of encodings (special tokens added) that is merged into one, then padding is applied. Overflowing
windows travel inside each :class:`Encoding` and are combined exactly as the library's
``Encoding::merge_with`` does, so their order and contents match.

Offsets and word ids are not tracked (batchtok never needs them for ids); the processors'
offset trimming (ByteLevel, Roberta ``trim_offsets``) is therefore a no-op here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from .errors import EncodeError
from .utils.spec import Spec, dispatch, is_u32

USIZE_MAX = 2**64 - 1


class Encoding:
    """One encoded input: ids, tokens, type ids, masks and the overflowing windows.

    ``overflowing`` holds the parts cut by truncation, each an Encoding with special tokens
    added and padded like the main one. Offsets and word ids are not tracked by batchtok.

    >>> enc = tok.encode("Hello world", "And a pair")      # doctest: +SKIP
    >>> enc.ids, enc.type_ids, enc.sequence_ids             # doctest: +SKIP
    """

    __slots__ = (
        "ids",
        "tokens",
        "type_ids",
        "special_tokens_mask",
        "attention_mask",
        "overflowing",
        "_ranges",
    )

    def __init__(
        self,
        ids: list[int],
        tokens: list[str],
        type_ids: list[int],
        special_tokens_mask: list[int],
        attention_mask: list[int] | None = None,
        overflowing: list[Encoding] | None = None,
        ranges: dict[int, tuple[int, int]] | None = None,
    ) -> None:
        self.ids = ids
        self.tokens = tokens
        self.type_ids = type_ids
        self.special_tokens_mask = special_tokens_mask
        self.attention_mask = [1] * len(ids) if attention_mask is None else attention_mask
        self.overflowing: list[Encoding] = [] if overflowing is None else overflowing
        # sequence id -> (start, end) of its tokens, as the library's `sequence_ranges`
        self._ranges: dict[int, tuple[int, int]] = {} if ranges is None else ranges

    @classmethod
    def of_sequence(cls, ids: list[int], tokens: list[str], type_id: int) -> Encoding:
        """A sequence's tokens before post-processing: no special mask, one type id."""
        n = len(ids)
        return cls(ids, tokens, [type_id] * n, [0] * n)

    @classmethod
    def of_specials(cls, ids: list[int], tokens: list[str], type_id: int) -> Encoding:
        n = len(ids)
        return cls(list(ids), list(tokens), [type_id] * n, [1] * n)

    def __len__(self) -> int:
        return len(self.ids)

    def __repr__(self) -> str:
        more = "..." if len(self.ids) > 8 else ""
        return (
            f"Encoding(num_tokens={len(self.ids)}, ids={self.ids[:8]}{more}, "
            f"overflowing={len(self.overflowing)})"
        )

    @property
    def n_sequences(self) -> int:
        """How many input sequences this encoding holds (1 or 2 after post-processing)."""
        return len(self._ranges) or 1

    @property
    def sequence_ids(self) -> list[int | None]:
        """Per token, the index of the input sequence it comes from; None for special tokens."""
        out: list[int | None] = [None] * len(self.ids)
        for seq_id in range(self.n_sequences):
            start, end = self._ranges.get(seq_id, (0, len(self.ids)))
            out[start:end] = [seq_id] * (end - start)
        return out

    def set_sequence_id(self, sequence_id: int) -> None:
        self._ranges[sequence_id] = (0, len(self.ids))

    def copy(self) -> Encoding:
        """A deep copy (lists and overflowing encodings are not shared)."""
        return Encoding(
            self.ids[:],
            self.tokens[:],
            self.type_ids[:],
            self.special_tokens_mask[:],
            self.attention_mask[:],
            [o.copy() for o in self.overflowing],
            dict(self._ranges),
        )

    @classmethod
    def merge(cls, encodings: list[Encoding]) -> Encoding:
        merged = cls([], [], [], [])
        for e in encodings:
            merged.merge_with(e)
        return merged

    def merge_with(self, pair: Encoding) -> None:
        """Append ``pair``; the overflowing windows become the library's cross product: each of
        ours + pair, then each of ours + each of pair's, then self + each of pair's."""
        overflowing = []
        for mine in self.overflowing:
            combined = mine.copy()
            combined.merge_with(pair.copy())
            overflowing.append(combined)
            for theirs in pair.overflowing:
                combined = mine.copy()
                combined.merge_with(theirs.copy())
                overflowing.append(combined)
        for theirs in pair.overflowing:
            combined = self.copy()
            combined.merge_with(theirs.copy())
            overflowing.append(combined)
        shift = len(self.ids)
        for seq_id, (start, end) in pair._ranges.items():
            self._ranges[seq_id] = (start + shift, end + shift)
        self.ids += pair.ids
        self.type_ids += pair.type_ids
        self.tokens += pair.tokens
        self.special_tokens_mask += pair.special_tokens_mask
        self.attention_mask += pair.attention_mask
        self.overflowing = overflowing

    def _slice(self, start: int, stop: int) -> Encoding:
        return Encoding(
            self.ids[start:stop],
            self.tokens[start:stop],
            self.type_ids[start:stop],
            self.special_tokens_mask[start:stop],
            self.attention_mask[start:stop],
        )

    def truncate(self, max_len: int, stride: int, direction: str) -> None:
        """Keep one window of ``max_len`` tokens; the others (overlapping by ``stride``) go to
        ``overflowing``, in the library's order."""
        n = len(self.ids)
        if max_len >= n:
            return
        if max_len == 0:
            whole = self._slice(0, n)
            whole.overflowing, whole._ranges = self.overflowing, self._ranges
            self._become(Encoding([], [], [], [], []))
            self.overflowing = [whole]
            return
        check_stride(stride, max_len)
        windows = truncation_windows(n, max_len, stride, direction)
        kept = self._slice(*windows[0])
        kept.overflowing = [self._slice(*w) for w in windows[1:]]
        self._become(kept)

    def _become(self, other: Encoding) -> None:
        for name in self.__slots__:
            setattr(self, name, getattr(other, name))

    def pad(self, target: int, padding: Padding) -> None:
        """Pad this encoding and its overflowing windows up to ``target`` tokens (never cut)."""
        for o in self.overflowing:
            o.pad(target, padding)
        k = target - len(self.ids)
        if k <= 0:
            return
        if padding.direction == "left":
            self.ids = [padding.pad_id] * k + self.ids
            self.type_ids = [padding.pad_type_id] * k + self.type_ids
            self.tokens = [padding.pad_token] * k + self.tokens
            self.attention_mask = [0] * k + self.attention_mask
            self.special_tokens_mask = [1] * k + self.special_tokens_mask
            self._ranges = {i: (s + k, e + k) for i, (s, e) in self._ranges.items()}
        else:
            self.ids += [padding.pad_id] * k
            self.type_ids += [padding.pad_type_id] * k
            self.tokens += [padding.pad_token] * k
            self.attention_mask += [0] * k
            self.special_tokens_mask += [1] * k


# ---------------------------------------------------------------------------------------------
# Truncation


@dataclass(frozen=True)
class Truncation:
    """Truncation parameters, with the Python binding's spellings."""

    max_length: int
    stride: int = 0
    strategy: str = "longest_first"  # longest_first | only_first | only_second
    direction: str = "right"  # right | left

    def as_dict(self) -> dict:
        return {
            "max_length": self.max_length,
            "stride": self.stride,
            "strategy": self.strategy,
            "direction": self.direction,
        }


STRATEGIES = {
    "LongestFirst": "longest_first",
    "OnlyFirst": "only_first",
    "OnlySecond": "only_second",
}
STRATEGY_NAMES = tuple(STRATEGIES.values())
DIRECTIONS = {"Right": "right", "Left": "left"}


def check_stride(stride: int, max_len: int) -> None:
    if stride >= max_len:
        # tokenizers panics on this assertion
        raise EncodeError(
            f"`stride` must be strictly less than `max_len={max_len}` (note that `max_len` may be "
            "shorter than the max length of the original model, as it subtracts the number of "
            "special characters"
        )


def truncation_windows(n: int, max_len: int, stride: int, direction: str) -> list[tuple[int, int]]:
    """The (start, stop) windows of a sequence of ``n`` tokens; the first one is kept."""
    step = max_len - stride
    windows = []
    if direction == "right":
        for start in range(0, n, step):
            stop = min(start + max_len, n)
            windows.append((start, stop))
            if stop == n:
                break
    else:
        for last in range(n - 1, -1, -step):
            stop = last + 1
            start = max(0, stop - max_len)
            windows.append((start, stop))
            if start == 0:
                break
    return windows


def truncated_lengths(
    len_a: int, len_b: int | None, params: Truncation, max_length: int
) -> tuple[int, int | None] | None:
    """The lengths A and B are cut to (``max_length`` already reduced by the special tokens),
    or None when nothing is cut. Raises :class:`EncodeError` where the library errors."""
    if max_length == 0:
        return 0, (None if len_b is None else 0)
    total = len_a + (len_b or 0)
    if total <= max_length:
        return None
    to_remove = total - max_length
    if params.strategy == "longest_first":
        if len_b is None:
            return max_length, None
        n1, n2 = len_a, len_b
        swap = n1 > n2
        if swap:
            n1, n2 = n2, n1
        n2 = n1 if n1 > max_length else max(n1, max_length - n1)
        if n1 + n2 > max_length:
            n1 = max_length // 2
            n2 = n1 + max_length % 2
        return (n2, n1) if swap else (n1, n2)
    if params.strategy == "only_second" and len_b is None:
        raise EncodeError("Truncation error: Second sequence not provided")
    target = len_a if params.strategy == "only_first" else len_b
    assert target is not None
    if target <= to_remove:
        raise EncodeError(
            "Truncation error: Sequence to truncate too short to respect the provided max_length"
        )
    if params.strategy == "only_first":
        return len_a - to_remove, len_b
    return len_a, target - to_remove


def effective_max_length(params: Truncation, n_added: int, add_special_tokens: bool) -> int | None:
    """``max_length`` less the special tokens, or None where the library's unsigned
    subtraction wraps (fewer than ``n_added``): then it does not truncate at all."""
    if not (add_special_tokens and n_added > 0):
        return params.max_length
    if params.max_length < n_added:
        return None
    return params.max_length - n_added


def truncate_encodings(
    a: Encoding, b: Encoding | None, params: Truncation, max_length: int
) -> None:
    lengths = truncated_lengths(len(a), None if b is None else len(b), params, max_length)
    if lengths is None:
        return
    a.truncate(lengths[0], params.stride, params.direction)
    if b is not None:
        b.truncate(lengths[1], params.stride, params.direction)  # type: ignore[arg-type]


def truncate_ids(
    a: list[int], b: list[int] | None, params: Truncation, max_length: int
) -> tuple[list[int], list[int] | None]:
    """The kept windows only (what ``encode(...).ids`` holds), without building overflowing."""
    lengths = truncated_lengths(len(a), None if b is None else len(b), params, max_length)
    if lengths is None:
        return a, b
    return _kept(a, lengths[0], params), (None if b is None else _kept(b, lengths[1], params))


def _kept(ids: list[int], n: int | None, params: Truncation) -> list[int]:
    assert n is not None
    if n >= len(ids):
        return ids
    if n:
        check_stride(params.stride, n)
    return ids[:n] if params.direction == "right" else ids[len(ids) - n :]


def read_truncation(data: object, path: str) -> Truncation:
    spec = Spec(data, path)
    direction = DIRECTIONS[spec.choice("direction", tuple(DIRECTIONS), "Right")]
    max_length = _usize(spec, "max_length")
    strategy = STRATEGIES[spec.choice("strategy", tuple(STRATEGIES))]
    stride = _usize(spec, "stride")
    spec.finish()
    return Truncation(max_length, stride, strategy, direction)


def _usize(spec: Spec, key: str) -> int:
    value = spec.raw(key)
    if not (isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= USIZE_MAX):
        raise spec.fail(key, value, "expected an unsigned integer")
    return value


# ---------------------------------------------------------------------------------------------
# Padding


@dataclass(frozen=True)
class Padding:
    """Padding parameters, with the Python binding's spellings (``length`` None: the batch's
    longest encoding)."""

    direction: str = "right"
    pad_id: int = 0
    pad_type_id: int = 0
    pad_token: str = "[PAD]"
    length: int | None = None
    pad_to_multiple_of: int | None = None

    def as_dict(self) -> dict:
        return {
            "length": self.length,
            "pad_to_multiple_of": self.pad_to_multiple_of,
            "pad_id": self.pad_id,
            "pad_token": self.pad_token,
            "pad_type_id": self.pad_type_id,
            "direction": self.direction,
        }

    def target(self, lengths: list[int]) -> int:
        """The length every encoding of a batch with these lengths is padded to."""
        n = self.length if self.length is not None else max(lengths)
        multiple = self.pad_to_multiple_of
        if multiple and n % multiple:
            n += multiple - n % multiple
        return n

    def pad_encodings(self, encodings: list[Encoding]) -> None:
        if encodings:
            target = self.target([len(e) for e in encodings])
            for e in encodings:
                e.pad(target, self)

    def pad_ids(self, id_lists: list[list[int]]) -> list[list[int]]:
        if not id_lists:
            return id_lists
        target = self.target([len(ids) for ids in id_lists])
        pad_id = self.pad_id
        if self.direction == "left":
            return [[pad_id] * (target - len(ids)) + ids for ids in id_lists]
        return [ids + [pad_id] * (target - len(ids)) for ids in id_lists]


def read_padding(data: object, path: str) -> Padding:
    spec = Spec(data, path)
    strategy = spec.raw("strategy")
    length = None
    if isinstance(strategy, dict) and list(strategy) == ["Fixed"]:
        length = _usize(Spec(strategy, spec.at("strategy")), "Fixed")
    elif strategy != "BatchLongest":
        raise spec.fail("strategy", strategy, 'expected "BatchLongest" or {"Fixed": length}')
    direction = DIRECTIONS[spec.choice("direction", tuple(DIRECTIONS))]
    multiple = spec.raw("pad_to_multiple_of", None)
    if multiple is not None:
        multiple = _usize(spec, "pad_to_multiple_of")
    pad_id = spec.uint("pad_id")
    pad_type_id = spec.uint("pad_type_id")
    pad_token = spec.string("pad_token")
    spec.finish()
    return Padding(direction, pad_id, pad_type_id, pad_token, length, multiple)


# ---------------------------------------------------------------------------------------------
# Post-processors


class PostProcessor:
    """Adds special tokens. ``process_encodings`` mirrors the library's method of that name:
    a list of encodings in (A, or A and B), a list out, merged by :meth:`process`."""

    def added_tokens(self, is_pair: bool) -> int:
        return 0

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        return encodings

    def process(
        self, encoding: Encoding, pair: Encoding | None, add_special_tokens: bool
    ) -> Encoding:
        """The post-processed merge of A (and B); both are consumed."""
        encodings = [encoding] if pair is None else [encoding, pair]
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
            for o in e.overflowing:
                o.set_sequence_id(i)
            e.type_ids = [i] * len(e.ids)
        return Encoding.merge(self.process_encodings(encodings, add_special_tokens))

    def describe(self) -> str:
        return type(self).__name__


def default_process(encoding: Encoding, pair: Encoding | None) -> Encoding:
    """What the library does without a post-processor: A, or A then B, no special tokens."""
    if pair is None:
        return encoding
    merged = Encoding([], [], [], [])
    for i, e in enumerate((encoding, pair)):
        e.set_sequence_id(i)
        merged.merge_with(e)
    return merged


class ByteLevelProcessor(PostProcessor):
    """Trims offsets only (not tracked); numbers the encodings as sequences 0, 1, ..."""

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        for i, e in enumerate(encodings):
            e.set_sequence_id(i)
        return encodings

    def describe(self) -> str:
        return "ByteLevel"


class BertProcessing(PostProcessor):
    """``[CLS] A [SEP]`` and ``B [SEP]``; B keeps type id 1."""

    def __init__(self, sep: tuple[str, int], cls: tuple[str, int]) -> None:
        self.sep, self.cls = sep, cls

    def added_tokens(self, is_pair: bool) -> int:
        return 3 if is_pair else 2

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        if not add_special_tokens:
            return encodings
        out = []
        for i, e in enumerate(encodings):
            wrapped = self._wrap(e, i)
            wrapped.overflowing = [self._wrap(o, i) for o in e.overflowing]
            out.append(wrapped)
        return out

    def _wrap(self, e: Encoding, i: int) -> Encoding:
        (sep_token, sep_id), (cls_token, cls_id) = self.sep, self.cls
        n = len(e.ids)
        if i == 0:
            return Encoding(
                [cls_id, *e.ids, sep_id],
                [cls_token, *e.tokens, sep_token],
                [0, *e.type_ids, 0],
                [1, *([0] * n), 1],
                ranges={0: (1, n + 1)},
            )
        return Encoding(
            [*e.ids, sep_id],
            [*e.tokens, sep_token],
            [*e.type_ids, 1],
            [*([0] * n), 1],
            ranges={1: (0, n)},
        )

    def describe(self) -> str:
        return f"BertProcessing(cls={self.cls}, sep={self.sep})"


class RobertaProcessing(BertProcessing):
    """``<s> A </s>`` and ``</s> B </s>``, every type id 0 (with or without special tokens)."""

    def added_tokens(self, is_pair: bool) -> int:
        return 4 if is_pair else 2

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        # trim_offsets only moves offsets, which are not tracked
        for e in encodings:
            e.type_ids = [0] * len(e.ids)
        return super().process_encodings(encodings, add_special_tokens)

    def _wrap(self, e: Encoding, i: int) -> Encoding:
        (sep_token, sep_id), (cls_token, cls_id) = self.sep, self.cls
        n = len(e.ids)
        first_id, first_token = (cls_id, cls_token) if i == 0 else (sep_id, sep_token)
        return Encoding(
            [first_id, *e.ids, sep_id],
            [first_token, *e.tokens, sep_token],
            [0] * (n + 2),
            [1, *([0] * n), 1],
            ranges={min(i, 1): (1, n + 1)},
        )

    def describe(self) -> str:
        return f"RobertaProcessing(cls={self.cls}, sep={self.sep})"


class TemplateProcessing(PostProcessor):
    def __init__(
        self, single: list, pair: list, special_tokens: dict[str, tuple[list[int], list[str]]]
    ):
        self.single_template, self.pair_template = single, pair
        self.special_tokens = special_tokens
        self._added = {
            is_pair: sum(
                len(special_tokens[name][0]) for kind, name, _ in t if kind == "SpecialToken"
            )
            for is_pair, t in ((False, single), (True, pair))
        }

    def added_tokens(self, is_pair: bool) -> int:
        return self._added[is_pair]

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        if len(encodings) > 2:
            # tokenizers panics (`todo!()`) when a Sequence hands a template more than two
            raise EncodeError("TemplateProcessing got more than two encodings (tokenizers panics)")
        template = self.pair_template if len(encodings) == 2 else self.single_template
        out = []
        for kind, name, type_id in template:
            if kind == "Sequence":
                i = 0 if name == "A" else 1
                e = encodings[i]
                # only the top-level type ids change, not the overflowing windows'
                e.type_ids = [type_id] * len(e.ids)
                e.set_sequence_id(i)
                out.append(e.copy())
            elif add_special_tokens:
                ids, tokens = self.special_tokens[name]
                out.append(Encoding.of_specials(ids, tokens, type_id))
        return out

    def describe(self) -> str:
        def show(template: list) -> str:
            return " ".join(
                f"${name}:{t}" if kind == "Sequence" else f"{name}:{t}"
                for kind, name, t in template
            )

        return (
            f"TemplateProcessing(single={show(self.single_template)}, "
            f"pair={show(self.pair_template)})"
        )


class Sequence(PostProcessor):
    def __init__(self, processors: list[PostProcessor]) -> None:
        self.processors = processors

    def added_tokens(self, is_pair: bool) -> int:
        return sum(p.added_tokens(is_pair) for p in self.processors)

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        # each processor sees the list the previous one returned: after a template that is
        # one encoding per template piece, so the next template may pick its pair template
        for p in self.processors:
            encodings = p.process_encodings(encodings, add_special_tokens)
        return encodings

    def describe(self) -> str:
        return "Sequence[" + ", ".join(p.describe() for p in self.processors) + "]"


def _template_pieces(spec: Spec, key: str, special_tokens: dict) -> list:
    out = []
    for i, raw in enumerate(spec.array(key)):
        where = f"{spec.at(key)}[{i}]"
        item = Spec(raw, where)
        if len(raw) != 1:
            raise item.fail(None, raw, 'expected {"Sequence": ...} or {"SpecialToken": ...}')
        kind = next(iter(raw))
        if kind not in ("Sequence", "SpecialToken"):
            raise item.fail(kind, raw, "unknown template piece")
        body = item.obj(kind)
        name = body.string("id")
        type_id = body.uint("type_id")
        body.finish()
        item.finish()
        if kind == "Sequence" and name not in ("A", "B"):
            raise body.fail("id", name, "a template sequence must be A or B")
        if kind == "SpecialToken" and name not in special_tokens:
            raise body.fail(
                "id", name, "special token missing from special_tokens (tokenizers panics)"
            )
        out.append((kind, name, type_id))
    return out


def _template(spec: Spec) -> TemplateProcessing:
    specials_spec = spec.obj("special_tokens")
    special_tokens: dict[str, tuple[list[int], list[str]]] = {}
    for key in list(specials_spec.data):
        entry = specials_spec.obj(key)
        entry.string("id")
        ids = entry.array("ids")
        tokens = entry.array("tokens")
        if not all(is_u32(i) for i in ids) or not all(isinstance(t, str) for t in tokens):
            raise entry.fail(None, entry.data, "ids must be unsigned integers and tokens strings")
        if len(ids) != len(tokens):
            raise entry.fail(None, entry.data, "ids and tokens must have the same length")
        entry.finish()
        special_tokens[key] = (list(ids), list(tokens))
    specials_spec.finish()
    single = _template_pieces(spec, "single", special_tokens)
    pair = _template_pieces(spec, "pair", special_tokens)
    if any(kind == "Sequence" and name == "B" for kind, name, _ in single):
        raise spec.fail(
            "single", spec.data["single"], "the single template uses B (tokenizers panics)"
        )
    return TemplateProcessing(single, pair, special_tokens)


def _special(spec: Spec, key: str) -> tuple[str, int]:
    value = spec.raw(key)
    if not (
        isinstance(value, list)
        and len(value) == 2
        and isinstance(value[0], str)
        and is_u32(value[1])
    ):
        raise spec.fail(key, value, 'expected ["token", id]')
    return value[0], value[1]


def _bert(spec: Spec) -> BertProcessing:
    return BertProcessing(_special(spec, "sep"), _special(spec, "cls"))


def _roberta(spec: Spec) -> BertProcessing:
    if not (spec.has("trim_offsets") and spec.has("add_prefix_space")):
        # the library reads post-processors untagged: without these two fields the object
        # is not a Roberta one and loads as BertProcessing
        return _bert(spec)
    spec.boolean("trim_offsets")
    spec.boolean("add_prefix_space")
    return RobertaProcessing(_special(spec, "sep"), _special(spec, "cls"))


def _byte_level(spec: Spec) -> ByteLevelProcessor:
    spec.boolean("add_prefix_space")
    spec.boolean("trim_offsets")
    spec.boolean("use_regex", True)
    return ByteLevelProcessor()


def _sequence(spec: Spec) -> Sequence:
    processors = [
        read_post_processor(x, spec.at("processors") + f"[{i}]")
        for i, x in enumerate(spec.array("processors"))
    ]
    return Sequence(processors)


REGISTRY: dict[str, Callable[[Spec], PostProcessor]] = {
    "BertProcessing": _bert,
    "RobertaProcessing": _roberta,
    "ByteLevel": _byte_level,
    "TemplateProcessing": _template,
    "Sequence": _sequence,
}


def read_post_processor(data: object, path: str) -> PostProcessor:
    return dispatch(Spec(data, path), REGISTRY, "post-processor")
