"""The pre-tokenizer as the tokenizer runs it: splitting separated from the final mapping.

A pre-tokenizer may end with a per-piece *mapping* that does not split (ByteLevel's byte -> char
table). :func:`split_and_map` separates that mapping out, so the tokenizer can cache model output
keyed by the unmapped piece and skip the mapping entirely on a cache hit;
:func:`compile_splitter` turns the splitting part into one function.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from ..metaspace import AtStart
from ..utils.bounds import BatchSplit
from ..utils.byte_level import byte_level_map
from . import boundary_rules, boundary_rules_o200k
from .base import PreTokenizer
from .boundary_rules import JoinedRules
from .boundary_rules_gpt2 import BYTE_LEVEL_RULES
from .byte_level import ByteLevel, ByteLevelSplit
from .sequence import Sequence, uses_start
from .split import Split


def split_and_map(
    pre: PreTokenizer | None,
) -> tuple[PreTokenizer | None, Callable[[str], str] | None]:
    """(splitting part, trailing per-piece mapping) equivalent to ``pre``."""
    if isinstance(pre, ByteLevel):
        return ByteLevelSplit(pre), byte_level_map
    if (
        isinstance(pre, Sequence)
        and pre.pretokenizers
        and isinstance(pre.pretokenizers[-1], ByteLevel)
    ):
        *head, last = pre.pretokenizers
        return Sequence([*head, ByteLevelSplit(last)]), byte_level_map
    return pre, None


def without_idle_split(
    splitter: PreTokenizer | None, absent: frozenset[str]
) -> PreTokenizer | None:
    """``splitter`` without its first stage when that stage is a Split on a literal holding
    a char of ``absent`` (chars the normalized text never holds: the normalizer removes them,
    as Gemma's Replace of " " by "▁" does before its Split on " "). Such a Split never
    matches, and a Split that matches nothing keeps its piece whole (but for Removed with
    invert, which removes it: that stage stays)."""
    stages = _stages(splitter)
    first = stages[0] if stages else None
    if not (
        isinstance(first, Split)
        and first._literal is not None
        and not first._removes_unmatched
        and not absent.isdisjoint(first._literal)
    ):
        return splitter
    rest = stages[1:]
    return Sequence(rest) if rest else None


def splits_nothing(splitter: PreTokenizer | None) -> bool:
    """Whether :func:`compile_splitter` of ``splitter`` keeps every fragment whole."""
    return not _active_stages(splitter)


def _stages(splitter: PreTokenizer | None) -> list[PreTokenizer | None]:
    return splitter.pretokenizers if isinstance(splitter, Sequence) else [splitter]


def _active_stages(splitter: PreTokenizer | None) -> list[PreTokenizer]:
    """The stages of ``splitter`` that can change something."""
    return [
        s
        for s in _stages(splitter)
        if s is not None
        and not (
            isinstance(s, ByteLevelSplit)
            and not s.byte_level.add_prefix_space
            and not s.byte_level.use_regex
        )
    ]


def compile_splitter(splitter: PreTokenizer | None) -> Callable[[str, AtStart], list[str]]:
    """A function (fragment, at_start) -> pieces, skipping stages that cannot change anything."""
    stages = _active_stages(splitter)
    if not stages:
        return lambda text, at_start: [text] if text else []
    if len(stages) == 1 and isinstance(stages[0], Split):
        split_one = stages[0].split_one
        return lambda text, at_start: split_one(text)
    if len(stages) == 1:
        only = stages[0]
        return lambda text, at_start: only.pre_tokenize([text], at_start)
    sequence = Sequence(stages)
    return lambda text, at_start: sequence.pre_tokenize([text], at_start)


def compile_batch_splitter(splitter: PreTokenizer | None) -> BatchSplit | None:
    """The split of many fragments at once, when ``splitter`` is one Split keeping its matches
    (all of the text) whose pattern :mod:`.boundary_rules` or :mod:`.boundary_rules_o200k`
    evaluates without the regex, or a ByteLevel's split with its regex
    (:mod:`.boundary_rules_gpt2`); else None."""
    stages = _active_stages(splitter)
    if len(stages) == 1 and isinstance(stages[0], ByteLevelSplit):
        byte_level = stages[0].byte_level
        if byte_level.splitter is None:
            return None
        return _rules_split(
            BYTE_LEVEL_RULES, byte_level.splitter.split_one, byte_level.add_prefix_space
        )
    if len(stages) != 1 or not isinstance(stages[0], Split):
        return None
    split = stages[0]
    if not split.is_regex or not split._matches_only:
        return None
    rules = boundary_rules.rules_for(split.onig) or boundary_rules_o200k.rules_for(split.onig)
    if rules is None:
        return None
    return _rules_split(rules, split.split_one, False)


def _rules_split(
    rules: JoinedRules, fallback: Callable[[str], list[str]], prefix_space: bool
) -> BatchSplit:
    return BatchSplit(
        lambda texts: rules.split_many(texts, fallback), rules.bounds, fallback, prefix_space
    )


def compile_streaming_splitter(
    splitter: PreTokenizer | None,
) -> Callable[[str, AtStart], Iterator[list[str]]] | None:
    """:func:`compile_splitter` yielding the pieces in batches, for a fragment too long to hold
    all its pieces at once; None when the first stage cannot stream.

    Every stage splits each piece on its own, as `tokenizers` does; only a Metaspace "first"
    asks where a piece stands in the input, so a pipeline holding one never streams here. The
    first stage streams when it is a pattern (Split, or ByteLevel's regex): its matches are
    found a batch at a time, and each batch goes through the later stages as it comes.
    """
    stages = _active_stages(splitter)
    if not stages:
        return lambda text, at_start: iter([[text]] if text else [])
    if any(map(uses_start, stages)):
        return None
    first, rest = stages[0], stages[1:]
    if isinstance(first, Split):
        head: Callable[[str], Iterator[list[str]]] = first.iter_pieces
    elif isinstance(first, ByteLevelSplit) and first.byte_level.splitter is not None:
        head = first.byte_level.iter_split
    else:
        return None
    if not rest:
        return lambda text, at_start: head(text)
    tail = rest[0] if len(rest) == 1 else Sequence(rest)
    return lambda text, at_start: map(tail.pre_tokenize, head(text))
