"""Pattern fields of tokenizer.json (``{"String": s}`` or ``{"Regex": r}``), read and compiled
with the JSON path in every refusal; shared by Replace (normalizer and decoder) and Split."""

from __future__ import annotations

from collections.abc import Callable

from .onig import PatternError
from .spec import Spec


def read_pattern(spec: Spec, key: str = "pattern") -> tuple[str, bool]:
    """A ``{"String": s}`` or ``{"Regex": r}`` pattern object: (text, is_regex)."""
    obj = spec.obj(key)
    kinds = [k for k in ("String", "Regex") if obj.has(k)]
    if len(kinds) != 1 or len(obj.data) != 1:
        raise spec.fail(key, obj.data, 'expected {"String": ...} or {"Regex": ...}')
    text = obj.string(kinds[0])
    return text, kinds[0] == "Regex"


def compile_checked(spec: Spec, key: str, build: Callable[[], object]):
    try:
        return build()
    except PatternError as exc:
        raise spec.fail(key, spec.data.get(key), f"pattern not supported: {exc}") from exc
