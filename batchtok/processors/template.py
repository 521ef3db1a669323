"""TemplateProcessing: special tokens and sequences laid out by a template."""

from __future__ import annotations

from ..encoding import Encoding
from ..errors import EncodeError
from ..utils.spec import Spec, is_u32
from .base import PostProcessor


class TemplateProcessing(PostProcessor):
    def __init__(
        self, single: list, pair: list, special_tokens: dict[str, tuple[list[int], list[str]]]
    ):
        self.single_template, self.pair_template = single, pair
        self.special_tokens = special_tokens
        self._added = {
            is_pair: sum(
                len(special_tokens[name][0]) for kind, name, _ in t if kind == "SpecialToken"
            )
            for is_pair, t in ((False, single), (True, pair))
        }
        # the encodings are consumed: a sequence is copied only where the template uses it
        # again after (with its own type id)
        self._copied = {is_pair: _used_again(t) for is_pair, t in ((False, single), (True, pair))}

    def added_tokens(self, is_pair: bool) -> int:
        return self._added[is_pair]

    def process_encodings(
        self, encodings: list[Encoding], add_special_tokens: bool
    ) -> list[Encoding]:
        if len(encodings) > 2:
            # tokenizers panics (`todo!()`) when a Sequence hands a template more than two
            raise EncodeError("TemplateProcessing got more than two encodings (tokenizers panics)")
        template = self.pair_template if len(encodings) == 2 else self.single_template
        copied = self._copied[len(encodings) == 2]
        out = []
        for at, (kind, name, type_id) in enumerate(template):
            if kind == "Sequence":
                i = 0 if name == "A" else 1
                e = encodings[i]
                # only the top-level type ids change, not the overflowing windows'
                e.set_type_ids(type_id)
                e.set_sequence_id(i)
                out.append(e.copy() if at in copied else e)
            elif add_special_tokens:
                ids, tokens = self.special_tokens[name]
                out.append(Encoding.of_specials(ids, tokens, type_id))
        return out

    def describe(self) -> str:
        def show(template: list) -> str:
            return " ".join(
                f"${name}:{t}" if kind == "Sequence" else f"{name}:{t}"
                for kind, name, t in template
            )

        return (
            f"TemplateProcessing(single={show(self.single_template)}, "
            f"pair={show(self.pair_template)})"
        )

    @classmethod
    def from_spec(cls, spec: Spec) -> TemplateProcessing:
        specials_spec = spec.obj("special_tokens")
        special_tokens: dict[str, tuple[list[int], list[str]]] = {}
        for key in list(specials_spec.data):
            entry = specials_spec.obj(key)
            entry.string("id")
            ids = entry.array("ids")
            tokens = entry.array("tokens")
            if not all(is_u32(i) for i in ids) or not all(isinstance(t, str) for t in tokens):
                raise entry.fail(
                    None, entry.data, "ids must be unsigned integers and tokens strings"
                )
            # ids and tokens may differ in length: tokenizers' derived reader does not check
            # (only SpecialToken::new does), and lays out each list as it is
            entry.finish()
            special_tokens[key] = (list(ids), list(tokens))
        specials_spec.finish()
        single = _template_pieces(spec, "single", special_tokens)
        pair = _template_pieces(spec, "pair", special_tokens)
        if any(kind == "Sequence" and name == "B" for kind, name, _ in single):
            raise spec.fail(
                "single", spec.data["single"], "the single template uses B (tokenizers panics)"
            )
        return cls(single, pair, special_tokens)


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
        item.finish(strict=True)  # the oracle matches the wrapper's shape exactly
        if kind == "Sequence" and name not in ("A", "B"):
            raise body.fail("id", name, "a template sequence must be A or B")
        if kind == "SpecialToken" and name not in special_tokens:
            raise body.fail(
                "id", name, "special token missing from special_tokens (tokenizers panics)"
            )
        out.append((kind, name, type_id))
    return out


def _used_again(template: list) -> frozenset[int]:
    """The positions of the template's sequences that it places again later."""
    return frozenset(
        at
        for at, (kind, name, _) in enumerate(template)
        if kind == "Sequence"
        and any(k == "Sequence" and n == name for k, n, _ in template[at + 1 :])
    )
