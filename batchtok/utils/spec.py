"""Reading tokenizer.json objects with a JSON path, so every refusal can say where it is.

A :class:`Spec` wraps one JSON object. Components read their fields through it; when a component
is built, :meth:`Spec.finish` deals with the keys nobody read as `tokenizers` does: serde ignores
unknown keys inside components (none of its structs denies them), so batchtok ignores them too
and records their paths (:func:`collect_ignored`), which the tokenizer logs once and ``batchtok
inspect`` lists. Only where the oracle refuses (the top level, a template piece's wrapper) does
``finish(strict=True)`` refuse.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import NotReproducibleError, TokenizerFileError

T = TypeVar("T")
_MISSING: Any = object()
U32_MAX = 2**32 - 1
USIZE_MAX = 2**64 - 1
# The JSON paths of the fields ignored while one file is read (see collect_ignored).
_IGNORED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "batchtok_ignored_fields", default=None
)


def record_ignored(paths: list[str]) -> None:
    """Add ``paths`` to the fields ignored so far (those of a reading that was kept)."""
    collected = _IGNORED.get()
    if collected is not None:
        collected += paths


@contextlib.contextmanager
def collect_ignored() -> Iterator[list[str]]:
    """Collect, into the list yielded, the JSON path of every field ignored while reading."""
    paths: list[str] = []
    token = _IGNORED.set(paths)
    try:
        yield paths
    finally:
        _IGNORED.reset(token)


class Spec:
    def __init__(self, data: Any, path: str, ignored: tuple[str, ...] = ()) -> None:
        if not isinstance(data, dict):
            raise TokenizerFileError(path, data, "expected a JSON object")
        self.data = data
        self.path = path
        self._read: set[str] = set(ignored)

    def at(self, key: str | int) -> str:
        if isinstance(key, int):
            return f"{self.path}[{key}]"
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: str) -> bool:
        return key in self.data

    def raw(self, key: str, default: Any = _MISSING) -> Any:
        self._read.add(key)
        if key not in self.data:
            if default is _MISSING:
                raise TokenizerFileError(self.at(key), None, "required field is missing")
            return default
        return self.data[key]

    def string(self, key: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
        return self._typed(key, default, nullable, lambda v: isinstance(v, str), "a string")

    def boolean(self, key: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
        return self._typed(key, default, nullable, lambda v: isinstance(v, bool), "true or false")

    def uint(self, key: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
        return self._typed(key, default, nullable, is_u32, "an unsigned integer")

    def number(self, key: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
        def ok(v: Any) -> bool:
            return isinstance(v, (int, float)) and not isinstance(v, bool)

        return self._typed(key, default, nullable, ok, "a number")

    def array(self, key: str, default: Any = _MISSING) -> Any:
        return self._typed(key, default, False, lambda v: isinstance(v, list), "an array")

    def obj(self, key: str, ignored: tuple[str, ...] = ()) -> Spec:
        return Spec(self.raw(key), self.at(key), ignored)

    def choice(self, key: str, choices: tuple[str, ...], default: Any = _MISSING) -> str:
        value = self.string(key, default)
        if value not in choices:
            raise TokenizerFileError(self.at(key), value, f"expected one of {', '.join(choices)}")
        return value

    def fail(self, key: str | int | None, value: Any, reason: str) -> TokenizerFileError:
        return TokenizerFileError(self.path if key is None else self.at(key), value, reason)

    def finish(self, strict: bool = False) -> None:
        """Deal with the keys nobody read: refused when ``strict``, else ignored and recorded."""
        unknown = sorted(k for k in self.data if k not in self._read)
        if unknown and strict:
            raise TokenizerFileError(
                self.at(unknown[0]), self.data[unknown[0]], "unknown field (tokenizers refuses it)"
            )
        record_ignored([self.at(key) for key in unknown])

    def _typed(
        self, key: str, default: Any, nullable: bool, ok: Callable[[Any], bool], what: str
    ) -> Any:
        value = self.raw(key, default)
        if value is default and default is not _MISSING:
            return value
        if value is None and nullable:
            return None
        if not ok(value):
            raise TokenizerFileError(self.at(key), value, f"expected {what}")
        return value


def is_u32(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= U32_MAX


def dispatch(
    spec: Spec,
    registry: dict[str, Callable[[Spec], T]],
    what: str,
    untagged: Untagged = None,
) -> T:
    """Build the component ``spec`` describes, as tokenizers finds it, and deal with the
    fields nobody read (:meth:`Spec.finish`).

    Without ``untagged``, by its ``type`` alone. With it, as tokenizers' wrappers do: a
    ``type`` among ``untagged.tags`` picks its reader; any other (or none) falls back to
    serde's untagged reading, trying ``untagged.order`` in turn and keeping the first whose
    fields read, a variant that checks its ``type`` only when the type names it (see
    :class:`UntaggedOrder` for the ways a variant checks it).
    """
    kind = type_name(spec.raw("type", None))
    if untagged is not None and not (isinstance(kind, str) and kind in untagged.tags):
        return _first_that_reads(spec, registry, what, untagged, kind)
    if kind is None:
        raise spec.fail("type", None, f"{what} without a 'type'")
    builder = registry.get(kind) if isinstance(kind, str) else None
    if builder is None:
        raise spec.fail("type", kind, f"unknown or unsupported {what} type")
    component = builder(spec)
    spec.finish()
    return component


# How one variant of an untagged reading treats the ``type`` key: reads whatever it holds (a
# struct derived with a plain ``serde(tag)``), requires its own name (one from tokenizers'
# ``impl_serde_type!``, whose type is a required one-variant enum), or refuses only a present
# type that is not its own name (the models' hand-written visitors).
ANY_TYPE, OWN_TYPE, OWN_TYPE_IF_ANY = "", "!", "?"


@dataclass(frozen=True)
class UntaggedOrder:
    """How a tokenizers wrapper reads a component whose type is not one of its tags."""

    tags: frozenset[str]  # the types its tagged reading knows
    order: tuple[tuple[str, str], ...]  # (registry name, how it checks the type), in turn
    # serde also reads a struct that does not check its type from a JSON array of its field
    # values, in declaration order, all of them: those fields, by registry name
    positional: dict[str, tuple[str, ...]]

    @classmethod
    def of(cls, tags: str, order: str, positional: str = "") -> UntaggedOrder:
        """From space-separated names; in ``order``, a name ending in "!" requires its own
        type, one ending in "?" refuses only another type; ``positional``: "Name:field,field
        Name:field ..."."""
        fields = {}
        for entry in positional.split():
            name, _, names = entry.partition(":")
            fields[name] = tuple(names.split(","))
        checks = (OWN_TYPE, OWN_TYPE_IF_ANY)
        return cls(
            frozenset(tags.split()),
            tuple(
                (name[:-1], name[-1]) if name.endswith(checks) else (name, ANY_TYPE)
                for name in order.split()
            ),
            fields,
        )


def type_name(value: object) -> object:
    """A ``type`` value as serde reads a unit enum variant: a name, also when written as the
    one-entry object ``{"Name": null}`` (the externally tagged spelling of a unit variant,
    which tokenizers accepts wherever it reads a type)."""
    if isinstance(value, dict) and len(value) == 1:
        ((name, inner),) = value.items()
        if inner is None:
            return name
    return value


def read_component(
    data: object,
    path: str,
    registry: dict[str, Callable[[Spec], T]],
    what: str,
    untagged: UntaggedOrder,
) -> T:
    """:func:`dispatch` of ``data``, also when it is an array of a struct's field values."""
    if not isinstance(data, list):
        return dispatch(Spec(data, path), registry, what, untagged)
    for name, check in untagged.order:
        fields = untagged.positional.get(name)
        if check != ANY_TYPE or fields is None or len(fields) != len(data):
            continue
        outcome = _attempt(registry[name], Spec(dict(zip(fields, data)), path))
        if not isinstance(outcome, TokenizerFileError):
            return outcome
    if not untagged.positional:
        raise TokenizerFileError(path, data, "expected a JSON object")
    raise TokenizerFileError(
        path, data, f"expected a JSON object (or the field values of a {what}, in order)"
    )


Untagged = UntaggedOrder | None


def _attempt(builder: Callable[[Spec], T], spec: Spec) -> T | TokenizerFileError:
    """One try of an untagged reading: the component, or why its fields did not read. The
    fields it ignored are recorded only when it is the one kept. A
    :class:`NotReproducibleError` is raised, not returned: tokenizers keeps that variant."""
    with collect_ignored() as ignored:
        try:
            component = builder(spec)
            spec.finish()
        except NotReproducibleError:
            raise
        except TokenizerFileError as exc:
            return exc
    record_ignored(ignored)
    return component


def _first_that_reads(
    spec: Spec, registry: dict[str, Callable[[Spec], T]], what: str, untagged: UntaggedOrder, kind
) -> T:
    has_type = spec.has("type")
    failures: dict[str, TokenizerFileError] = {}
    for name, check in untagged.order:
        if (check == OWN_TYPE or (check == OWN_TYPE_IF_ANY and has_type)) and kind != name:
            continue
        outcome = _attempt(registry[name], Spec(spec.data, spec.path, ignored=("type",)))
        if not isinstance(outcome, TokenizerFileError):
            return outcome
        failures[name] = outcome
    if isinstance(kind, str) and kind in failures:
        raise failures[kind]
    if isinstance(kind, str) and kind in registry:
        raise failures.get(kind) or spec.fail("type", kind, f"unknown or unsupported {what} type")
    if not failures:
        raise spec.fail(
            "type",
            kind,
            f"unknown {what} type (tokenizers then reads by the fields, and each {what} "
            "refuses a 'type' that is not its own name)",
        )
    tried = "; ".join(f"as {name}: {exc.path}: {exc.reason}" for name, exc in failures.items())
    if not has_type:
        raise spec.fail(
            None,
            spec.data,
            f"{what} without a 'type', whose fields read as none "
            f"of the {what}s tokenizers tries in turn ({tried})",
        )
    raise spec.fail(
        "type",
        kind,
        f"unknown or unsupported {what} type, and the fields match none of "
        f"{', '.join(failures)} (tokenizers reads by the fields when the type is not one it "
        f"knows; {tried})",
    )


def read_usize(spec: Spec, key: str, default: Any = _MISSING, *, nullable: bool = False) -> Any:
    """An unsigned integer field that tokenizers reads as a 64-bit ``usize``."""
    args = () if default is _MISSING else (default,)
    value = spec.raw(key, *args)
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= USIZE_MAX:
        raise spec.fail(key, value, "expected an unsigned integer")
    return value


def read_components(spec: Spec, key: str, read: Callable[[object, str], T]) -> list[T]:
    """The components listed in the array ``key`` (a Sequence's), each read by ``read`` with
    its JSON path (``normalizer.normalizers[2]``)."""
    return [read(x, spec.at(key) + f"[{i}]") for i, x in enumerate(spec.array(key))]
