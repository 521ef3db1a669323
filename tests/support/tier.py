"""The two test tiers: the default one (every component, every fixture file, sampled corpora,
short hypothesis runs; CI's) and ``--full`` (whole corpora, long hypothesis runs).

``bash tests/run_all.sh --full`` sets ``BATCHTOK_TEST_TIER=full``; anything else is the default
tier. Tests never branch on the tier themselves: they ask this module how many examples or
documents to take, so both tiers run the same assertions on more or less data.
"""

from __future__ import annotations

import os
import random
from collections.abc import Sequence
from typing import TypeVar

from hypothesis import HealthCheck, settings

T = TypeVar("T")

FULL = os.environ.get("BATCHTOK_TEST_TIER") == "full"

# The default tier runs this share of each hypothesis test's examples (at least MIN_EXAMPLES).
EXAMPLE_SHARE = 0.1
MIN_EXAMPLES = 20


def examples(full: int, fast: int | None = None) -> int:
    """Hypothesis ``max_examples`` for a property that runs ``full`` examples in the full tier;
    in the default tier ``fast`` (a property repeated over many files), else its share."""
    if FULL:
        return full
    if fast is not None:
        return min(full, fast)
    return min(full, max(MIN_EXAMPLES, round(full * EXAMPLE_SHARE)))


def long_examples(full: int) -> settings:
    """Hypothesis settings for a property over generated files: :func:`examples` of ``full``,
    no deadline (the machine's load varies), and no health check for slow or large draws."""
    return settings(
        max_examples=examples(full),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )


def docs(corpus: Sequence[str], budget_chars: int, key: str = "") -> list[str]:
    """The whole ``corpus`` in the full tier; in the default tier a deterministic random sample of
    its documents, in corpus order, holding about ``budget_chars`` characters.

    Sampled documents are kept whole (their starts, ends and long runs are what break
    tokenizers), except that one document larger than the budget is cut to it at a line break.
    """
    if FULL:
        return list(corpus)
    order = list(range(len(corpus)))
    random.Random(f"tier:{key}:{len(corpus)}").shuffle(order)
    chosen: list[int] = []
    total = 0
    for i in order:
        if total >= budget_chars:
            break
        chosen.append(i)
        total += len(corpus[i])
    out = []
    for i in sorted(chosen):
        doc = corpus[i]
        if len(doc) > budget_chars:
            cut = doc.rfind("\n", budget_chars // 2, budget_chars)
            doc = doc[: cut if cut > 0 else budget_chars]
        out.append(doc)
    return out


def count(full: int, fast: int) -> int:
    """A count of cases (documents, strings, repeats): ``full`` or ``fast`` by tier."""
    return full if FULL else min(full, fast)


def spread(items: Sequence[T], fast: int) -> list[T]:
    """Every item in the full tier; in the default tier ``fast`` of them, evenly spaced and
    always the same (the first and the last included), so that a table or grid is still
    crossed from end to end."""
    items = list(items)
    n = count(len(items), fast)
    if n >= len(items):
        return items
    if n <= 1:
        return items[:n]
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)]
