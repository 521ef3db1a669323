"""Truncation: which tokens of sequence A (and B) are kept, and the overflowing windows.

The library's order and arithmetic (``TokenizerImpl::post_process``, ``truncate_encodings``),
including where it errors or wraps an unsigned subtraction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import EncodeError
from .utils.spec import Spec, read_usize

if TYPE_CHECKING:
    from .encoding import Encoding


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


def file_spelling(names: dict[str, str], value: str) -> str:
    """The tokenizer.json spelling of a setting (``names``: file spelling -> Python spelling,
    as :data:`STRATEGIES` and :data:`DIRECTIONS`)."""
    return next(k for k, v in names.items() if v == value)


def truncation_json(params: Truncation | None) -> dict | None:
    """Truncation settings as the library writes them in a tokenizer.json (what
    :func:`read_truncation` reads back)."""
    if params is None:
        return None
    return {
        "direction": file_spelling(DIRECTIONS, params.direction),
        "max_length": params.max_length,
        "strategy": file_spelling(STRATEGIES, params.strategy),
        "stride": params.stride,
    }


def read_truncation(data: object, path: str) -> Truncation:
    spec = Spec(data, path)
    direction = DIRECTIONS[spec.choice("direction", tuple(DIRECTIONS), "Right")]
    max_length = read_usize(spec, "max_length")
    strategy = STRATEGIES[spec.choice("strategy", tuple(STRATEGIES))]
    stride = read_usize(spec, "stride")
    spec.finish()
    return Truncation(max_length, stride, strategy, direction)
