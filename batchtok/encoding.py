"""The Encoding: one encoded input, as the library's ``Encoding`` (without offsets)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .truncation import check_stride, truncation_windows

if TYPE_CHECKING:
    from .padding import Padding


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
