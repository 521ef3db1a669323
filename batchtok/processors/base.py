"""The PostProcessor interface (special tokens around the sequences) and the default merge.

Everything follows the library's own order and data flow (``TokenizerImpl::post_process``):
the encodings of sequence A (and B) are truncated, then the post-processor turns them into a list
of encodings (special tokens added) that is merged into one, then padding is applied. Overflowing
windows travel inside each :class:`Encoding` and are combined exactly as the library's
``Encoding::merge_with`` does, so their order and contents match.

Offsets and word ids are not tracked (batchtok never needs them for ids); the processors'
offset trimming (ByteLevel, Roberta ``trim_offsets``) is therefore a no-op here.
"""

from __future__ import annotations

from ..encoding import Encoding


class PostProcessor:
    """Adds special tokens. ``process_encodings`` mirrors the library's method of that name:
    a list of encodings in (A, or A and B), a list out, merged by :meth:`process`."""

    def added_tokens(self, is_pair: bool) -> int:
        return 0

    def num_special_tokens_to_add(self, is_pair: bool) -> int:
        """The library's name for :meth:`added_tokens`."""
        return self.added_tokens(is_pair)

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
            e.set_type_ids(i)
        return Encoding.merged(self.process_encodings(encodings, add_special_tokens))

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
