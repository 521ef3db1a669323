"""Post-processors: add the special tokens a template asks for around the encoded sequence.

Only single sequences are handled here; pairs come with the rest of the format.
"""

from __future__ import annotations

from collections.abc import Callable

from .spec import Spec, dispatch, is_u32

# One piece of output: (ids, tokens, type_id, is_special). Sequence A is ("A", type_id).
Piece = tuple[list[int], list[str], int, bool]


class PostProcessor:
    def added_tokens(self, is_pair: bool) -> int:
        return 0

    def single(self, add_special_tokens: bool) -> list[tuple[str, object]]:
        """The single-sequence template: ("A", type_id) or ("special", (ids, tokens, type_id))."""
        return [("A", 0)]

    def describe(self) -> str:
        return type(self).__name__


class ByteLevelProcessor(PostProcessor):
    """Trims offsets only; ids are unchanged."""

    def describe(self) -> str:
        return "ByteLevel"


class TemplateProcessing(PostProcessor):
    def __init__(
        self, single: list, pair: list, special_tokens: dict[str, tuple[list[int], list[str]]]
    ):
        self.single_template, self.pair_template = single, pair
        self.special_tokens = special_tokens

    def added_tokens(self, is_pair: bool) -> int:
        template = self.pair_template if is_pair else self.single_template
        return sum(
            len(self.special_tokens[name][0])
            for kind, name, _ in template
            if kind == "SpecialToken"
        )

    def single(self, add_special_tokens: bool) -> list[tuple[str, object]]:
        out: list[tuple[str, object]] = []
        for kind, name, type_id in self.single_template:
            if kind == "Sequence":
                out.append(("A", type_id))
            elif add_special_tokens:
                ids, tokens = self.special_tokens[name]
                out.append(("special", (ids, tokens, type_id)))
        return out

    def describe(self) -> str:
        parts = []
        for kind, name, type_id in self.single_template:
            parts.append(f"${name}:{type_id}" if kind == "Sequence" else f"{name}:{type_id}")
        return "TemplateProcessing(single=" + " ".join(parts) + ")"


class Sequence(PostProcessor):
    def __init__(self, processors: list[PostProcessor]) -> None:
        self.processors = processors

    def added_tokens(self, is_pair: bool) -> int:
        return sum(p.added_tokens(is_pair) for p in self.processors)

    def single(self, add_special_tokens: bool) -> list[tuple[str, object]]:
        # Each processor wraps everything produced so far as its sequence A, and gives all of
        # it the type id its template assigns to A.
        template: list[tuple[str, object]] = [("A", 0)]
        for p in self.processors:
            if isinstance(p, ByteLevelProcessor):
                continue  # offsets only: ids and type ids pass through
            expanded: list[tuple[str, object]] = []
            for kind, value in p.single(add_special_tokens):
                if kind != "A":
                    expanded.append((kind, value))
                    continue
                for ckind, cvalue in template:
                    if ckind == "A":
                        expanded.append(("A", value))
                    else:
                        ids, tokens, _ = cvalue  # type: ignore[misc]
                        expanded.append((ckind, (ids, tokens, value)))
            template = expanded
        return template

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
    adding = [p for p in processors if not isinstance(p, ByteLevelProcessor)]
    if len(adding) > 1:
        raise spec.fail(
            "processors",
            [p.describe() for p in processors],
            "more than one token-adding processor in a Sequence: the library hands the next "
            "one a list of encodings (and may pick its pair template or panic)",
        )
    return Sequence(processors)


REGISTRY: dict[str, Callable[[Spec], PostProcessor]] = {
    "ByteLevel": _byte_level,
    "TemplateProcessing": _template,
    "Sequence": _sequence,
}


def read_post_processor(data: object, path: str) -> PostProcessor:
    return dispatch(Spec(data, path), REGISTRY, "post-processor")
