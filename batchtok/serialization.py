"""Reading a tokenizer.json's text as serde_json, and so `tokenizers`, reads it.

Python's ``json`` accepts what serde_json refuses: NaN and Infinity, lone surrogate escapes,
nesting past serde_json's recursion limit. Each is refused here, naming where it is.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection

from .errors import TokenizerFileError

# serde_json (and so tokenizers) refuses JSON nested deeper than this: its recursion limit of 128
# is spent one level per array or object, the top-level object included.
MAX_NESTING = 127
_TOO_DEEP = f"nested deeper than {MAX_NESTING} arrays and objects (tokenizers refuses it)"


def refuse_deep_nesting(data: object, top_level_keys: Collection[str]) -> None:
    """Refuse ``data`` where tokenizers' parser would. A model's vocab and merges are skipped:
    their readers take only flat entries, so nothing deep passes there either."""
    if type(data) is not dict:
        return  # refused as not an object by the reader
    # an unknown top-level key is refused for itself
    stack: list[tuple[object, int, str]] = [
        (value, 2, key)
        for key, value in data.items()
        if key in top_level_keys and type(value) in (dict, list)
    ]
    while stack:
        node, depth, path = stack.pop()
        if depth > MAX_NESTING:
            raise TokenizerFileError(path, None, _TOO_DEEP)
        items = node.items() if isinstance(node, dict) else enumerate(node)  # type: ignore
        for key, value in items:
            if type(value) in (dict, list) and not (path == "model" and key in ("vocab", "merges")):
                where = f"{path}[{key}]" if isinstance(key, int) else f"{path}.{key}"
                stack.append((value, depth + 1, where))


# json accepts a lone surrogate escape such as "\ud800"; serde_json, and so tokenizers, refuse it.
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def _refuse_lone_surrogates(value: object, path: str) -> None:
    """A pair of surrogate escapes decodes to one char; any surrogate left is a lone one."""
    if isinstance(value, str):
        if any("\ud800" <= c <= "\udfff" for c in value):
            raise TokenizerFileError(path or "$", value, "not valid JSON: lone surrogate escape")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            _refuse_lone_surrogates(item, f"{path}[{i}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            where = f"{path}.{key}" if path else key
            _refuse_lone_surrogates(key, where)
            _refuse_lone_surrogates(item, where)


def _refuse_constant(name: str):
    raise TokenizerFileError("$", name, "not valid JSON (NaN and Infinity are not numbers in JSON)")


def parse_json(text: str) -> object:
    """The JSON value of ``text``, refused where serde_json refuses it (deep nesting past the
    limit is checked on the value, by :func:`refuse_deep_nesting`)."""
    try:
        data = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        excerpt = text[max(0, exc.pos - 20) : exc.pos + 20]
        raise TokenizerFileError(
            "$", excerpt, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except RecursionError as exc:  # ~1000 levels: far past what tokenizers accepts
        raise TokenizerFileError("$", None, _TOO_DEEP) from exc
    if _SURROGATE_ESCAPE.search(text):
        _refuse_lone_surrogates(data, "")
    return data
