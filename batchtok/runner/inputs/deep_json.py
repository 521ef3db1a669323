"""JSON of any depth: :func:`loads` and :func:`dumps` as :mod:`json` gives them, without its
recursion limit.

:func:`json.loads` and :func:`json.dumps` recurse once per level of nesting and raise
:class:`RecursionError` past about a thousand levels, though such a document is valid JSON. The
functions here try :mod:`json` first (fast, and the definition of what is read) and, only when it
runs out of recursion, redo the work with an explicit stack: the same grammar as json's C scanner
(its whitespace, its numbers of ASCII digits, ``NaN``, ``Infinity`` and ``-Infinity``, strict
strings through json's own ``scanstring``, the last of duplicate keys winning), the same values,
and the same text out (json.dumps' separators, ``ensure_ascii=False``).

An integer longer than :func:`int` converts (``sys.get_int_max_str_digits()``, 4300 digits by
default: json.loads raises :class:`ValueError` for it) is valid JSON too: it is read as a
:class:`LongNumber` holding its digits, and written back as them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from json.decoder import JSONDecodeError, scanstring
from json.encoder import encode_basestring
from typing import Any

_WHITESPACE = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_WORDS = (
    ("null", None),
    ("true", True),
    ("false", False),
    ("NaN", float("nan")),
    ("Infinity", float("inf")),
    ("-Infinity", float("-inf")),
)
_END = object()


class LongNumber:
    """A JSON integer with more digits than :func:`int` converts, kept as its text."""

    __slots__ = ("digits",)

    def __init__(self, digits: str) -> None:
        self.digits = digits

    def __eq__(self, other: object) -> bool:
        return isinstance(other, LongNumber) and other.digits == self.digits

    def __hash__(self) -> int:
        return hash(self.digits)

    def __repr__(self) -> str:
        return f"LongNumber({self.digits[:20]}...)"


def _int(digits: str) -> int | LongNumber:
    try:
        return int(digits)
    except ValueError:  # past sys.get_int_max_str_digits(): converting would be quadratic
        return LongNumber(digits)


def loads(text: str) -> Any:
    """``json.loads(text)`` for a document nested to any depth, its long integers as
    :class:`LongNumber`; :class:`json.JSONDecodeError` where json finds a syntax error."""
    try:
        return json.loads(text)
    except RecursionError:
        return _loads_deep(text)
    except JSONDecodeError:
        raise
    except ValueError:  # an integer too long for int()
        try:
            return json.loads(text, parse_int=_int)
        except RecursionError:
            return _loads_deep(text)


def dumps(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` for a value :func:`loads` gave, at any depth
    and with its :class:`LongNumber` digits."""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (RecursionError, TypeError):  # too deep, or a LongNumber in it
        return _dumps_deep(value)


def _skip(text: str, at: int) -> int:
    return _WHITESPACE.match(text, at).end()  # type: ignore[union-attr]


def _key(text: str, at: int) -> tuple[str, int]:
    """An object's key and its colon at ``at``: (the key, where its value starts)."""
    if text[at : at + 1] != '"':
        raise JSONDecodeError("Expecting property name enclosed in double quotes", text, at)
    key, at = scanstring(text, at + 1, True)
    at = _skip(text, at)
    if text[at : at + 1] != ":":
        raise JSONDecodeError("Expecting ':' delimiter", text, at)
    return key, _skip(text, at + 1)


def _scalar(text: str, at: int) -> tuple[Any, int]:
    """The string, number or constant starting at ``at``, and where it ends."""
    if text[at : at + 1] == '"':
        return scanstring(text, at + 1, True)
    for word, value in _WORDS:
        if text.startswith(word, at):
            return value, at + len(word)
    match = _NUMBER.match(text, at)
    if match is None:
        raise JSONDecodeError("Expecting value", text, at)
    whole, fraction, exponent = match.groups()
    if fraction or exponent:
        return float(match.group()), match.end()
    return _int(whole), match.end()


def _loads_deep(text: str) -> Any:
    if text.startswith("\ufeff"):
        raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    open_: list[list[Any] | dict[str, Any]] = []  # the containers being filled, outermost first
    keys: list[str] = []  # for each open object, the key whose value comes next
    at = _skip(text, 0)
    while True:
        value: Any  # the value starting at ``at``
        opener = text[at : at + 1]
        if opener in ("[", "{"):
            at = _skip(text, at + 1)
            if text[at : at + 1] == ("]" if opener == "[" else "}"):
                value, at = ([] if opener == "[" else {}), at + 1
            elif opener == "[":
                open_.append([])
                continue
            else:
                key, at = _key(text, at)
                open_.append({})
                keys.append(key)
                continue
        else:
            value, at = _scalar(text, at)
        while True:  # the value is complete: put it in its container, closing those that end
            if not open_:
                at = _skip(text, at)
                if at != len(text):
                    raise JSONDecodeError("Extra data", text, at)
                return value
            container = open_[-1]
            if isinstance(container, list):
                container.append(value)
            else:
                container[keys[-1]] = value
            at = _skip(text, at)
            char = text[at : at + 1]
            if char == ",":
                at = _skip(text, at + 1)
                if isinstance(container, dict):
                    keys[-1], at = _key(text, at)
                break
            if char != ("]" if isinstance(container, list) else "}"):
                raise JSONDecodeError("Expecting ',' delimiter", text, at)
            value, at = open_.pop(), at + 1
            if isinstance(value, dict):
                keys.pop()


def _scalar_text(value: Any) -> str:
    if isinstance(value, str):
        return encode_basestring(value)
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return int.__repr__(value)
    if isinstance(value, float):
        if value != value:
            return "NaN"
        if value in (float("inf"), float("-inf")):
            return "Infinity" if value > 0 else "-Infinity"
        return float.__repr__(value)
    if isinstance(value, LongNumber):
        return value.digits
    if isinstance(value, list | dict):  # an empty one
        return "[]" if isinstance(value, list) else "{}"
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _dumps_deep(value: Any) -> str:
    parts: list[str] = []
    open_: list[tuple[Iterator[Any], bool]] = []  # each open container's items left; a dict?
    while True:
        if isinstance(value, dict) and value:
            parts.append("{")
            open_.append((iter(value.items()), True))
        elif isinstance(value, list) and value:
            parts.append("[")
            open_.append((iter(value), False))
        else:
            parts.append(_scalar_text(value))
        while open_:  # the next value to write, closing the containers that are done
            items, is_dict = open_[-1]
            item = next(items, _END)
            if item is _END:
                open_.pop()
                parts.append("}" if is_dict else "]")
                continue
            if parts[-1] not in ("[", "{"):
                parts.append(", ")
            if is_dict:
                parts.append(encode_basestring(item[0]) + ": ")
                value = item[1]
            else:
                value = item
            break
        else:
            return "".join(parts)
