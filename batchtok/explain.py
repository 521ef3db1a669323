"""One text's path through a tokenizer, stage by stage, as `tokenizers` defines the stages.

The engine fuses and rewrites stages for speed (Metaspace built from a normalizer pair, BPE
files cut at proven boundaries, ByteLevel's mapping cached apart). :func:`explain` walks the
stages as the library lists them instead, with batchtok's own components:

1. the added tokens found in the raw text (those with ``normalized: false``);
2. the normalizer on each remaining fragment, each normalizer of a Sequence in turn
   (``normalizer[i].normalize_str`` in `tokenizers`);
3. the added tokens found in the normalized fragments (``normalized: true``);
4. the pre-tokenizer on each text fragment, each pre-tokenizer of a Sequence in turn;
5. the model's tokens for each pre-token (and, for BPE on request, the merges in order);
6. truncation, the post-processor's additions, padding;
7. the decoded text.

The result is a JSON-ready document (:func:`explain`); :func:`render` turns it into lines for
a terminal. The final ids are checked against :meth:`Tokenizer.encode`: if the walk ever
disagrees with encode, :class:`ExplainMismatch` is raised instead of showing a wrong path.

>>> doc = explain(tok, "Hello world")                  # doctest: +SKIP
>>> doc["ids"] == tok.encode("Hello world").ids        # doctest: +SKIP
True
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import click

from .encoding import Encoding
from .errors import EncodeError
from .models import BPE
from .normalizers import ByteLevel as ByteLevelNormalizer
from .normalizers import Normalizer
from .pre_tokenizers import ByteLevel, Sequence
from .tokenizer import Tokenizer
from .utils.byte_level import byte_level_map

ALL_PIECES = "*"  # merges=ALL_PIECES: the merges of every pre-token


class ExplainMismatch(EncodeError):
    """The stage-by-stage walk disagrees with :meth:`Tokenizer.encode` (a batchtok bug)."""


class MergesRequestError(ValueError):
    """Merges asked of a file that has none (not BPE), or of a piece the text does not have."""


def explain(
    tok: Tokenizer,
    text: str,
    pair: str | None = None,
    *,
    add_special_tokens: bool = True,
    special_text_as_text: bool = False,
    merges: Iterable[str] = (),
) -> dict:
    """The stages of ``tok.encode(text, pair, add_special_tokens=...)`` as a JSON-ready dict:
    ``input``, ``stages`` (one entry per stage, each with its ``stage`` name and, for the
    per-sequence stages, ``sequence`` 0 or 1), and the result: ``ids``, ``tokens``,
    ``special_tokens_mask``, ``decoded`` (special tokens skipped, as `tokenizers` decodes by
    default).

    ``special_text_as_text``: ``encode_special_tokens`` for this call. ``merges``: pieces
    whose BPE merges to list (a pre-token as shown, or for byte-level files its text before
    the byte mapping), or :data:`ALL_PIECES`. Raises :class:`ExplainMismatch` when the walk's
    ids are not encode's.
    """
    wanted = _merge_matcher(tok, merges)
    saved = tok.encode_special_tokens
    tok.encode_special_tokens = special_text_as_text
    try:
        stages: list[dict] = []
        encodings = []
        for index, sequence in enumerate([text] if pair is None else [text, pair]):
            seq_stages, ids, tokens = _sequence_stages(tok, sequence, index, wanted)
            stages += seq_stages
            encodings.append(Encoding.of_sequence(ids, tokens, index))
        if wanted.pieces and not wanted.found:
            raise MergesRequestError(
                f"no pre-token of the text is {' or '.join(map(repr, wanted.pieces))}; "
                f"the pre-tokens are {_pre_token_list(stages)}"
            )
        encoding = _post_process(tok, encodings, add_special_tokens, stages)
        expected = tok.encode(text, pair, add_special_tokens=add_special_tokens)
    finally:
        tok.encode_special_tokens = saved
    _check("ids", encoding.ids, expected.ids)
    _check("tokens", encoding.tokens, expected.tokens)
    decoded = tok.decode(encoding.ids)
    stages.append(
        {
            "stage": "decoder",
            "component": _describe(tok.decoder),
            "text": decoded,
        }
    )
    return {
        "input": {
            "text": text,
            "pair": pair,
            "add_special_tokens": add_special_tokens,
            "special_text_as_text": special_text_as_text,
        },
        "stages": stages,
        "ids": encoding.ids,
        "tokens": encoding.tokens,
        "special_tokens_mask": encoding.special_tokens_mask,
        # per token: a special token (added by the post-processor or padding, or a special
        # added token found in the text), which the terminal view marks
        "special": [
            bool(mask) or _is_special(tok, i)
            for i, mask in zip(encoding.ids, encoding.special_tokens_mask)
        ],
        "decoded": decoded,
    }


# -- the stages of one sequence ------------------------------------------------------------------


def _sequence_stages(
    tok: Tokenizer, text: str, index: int, wanted: _MergeMatcher
) -> tuple[list[dict], list[int], list[str]]:
    """The stages of one input sequence, and its ids and tokens before post-processing."""
    added = tok.added_vocabulary
    normalizer = tok.normalizer
    special = tok.encode_special_tokens
    raw = list(added.raw_matcher.split(text, special))
    # the fragments encode uses (normalized, split again, with where each starts)
    final = added.split(text, normalizer, special)
    raw_fragments, normalized, fragments = [], [], []
    at = 0
    for piece, token_id, _ in raw:
        if token_id is not None:
            raw_fragments.append(_fragment(tok, piece, token_id))
            fragments.append(_fragment(tok, piece, token_id) | {"normalized": False})
            _check("added-token split", final[at][:2] if at < len(final) else (), (piece, token_id))
            at += 1
            continue
        raw_fragments.append(_fragment(tok, piece, None))
        steps = []
        if normalizer is not None:
            current = piece
            for step in normalizer.steps():
                current = step.normalize(current)
                steps.append({"component": step.describe(), "output": current})
            output = normalizer.normalize(piece)
            _check("normalizer steps", current, output)
            normalized.append({"input": piece, "steps": steps, "output": output})
        else:
            output = piece
        # the fragments of the normalized text cover it in order
        covered = ""
        while len(covered) < len(output) and at < len(final):
            sub, sub_id, _ = final[at]
            covered += sub
            fragments.append(_fragment(tok, sub, sub_id) | {"normalized": normalizer is not None})
            at += 1
        _check("added-token split of the normalized text", covered, output)
    _check("added-token split (fragment count)", at, len(final))
    stages = [
        {
            "stage": "added_tokens",
            "sequence": index,
            "matched_in": "raw text",
            "changed": any(f["kind"] != "text" for f in raw_fragments),
            "fragments": raw_fragments,
        },
        {
            "stage": "normalizer",
            "sequence": index,
            "component": _normalizer_name(normalizer),
            "changed": any(n["input"] != n["output"] for n in normalized),
            "fragments": normalized,
        },
        {
            "stage": "added_tokens_normalized",
            "sequence": index,
            "matched_in": "normalized text",
            "changed": sum(f["kind"] != "text" for f in fragments)
            > sum(f["kind"] != "text" for f in raw_fragments),
            "fragments": fragments,
        },
    ]
    pre_tokenized, pieces = [], []
    for (sub, sub_id, at_start), fragment in zip(final, fragments):
        if sub_id is not None:
            pieces.append(fragment)
            continue
        entry = _pre_tokenize(tok, sub, at_start)
        pre_tokenized.append(entry)
        pieces += ({"text": p, "kind": "pre-token", "id": None} for p in entry["pieces"])
    stages.append(
        {
            "stage": "pre_tokenizer",
            "sequence": index,
            "component": _describe(tok.pre_tokenizer),
            "changed": any(e["pieces"] != [e["input"]] for e in pre_tokenized),
            "fragments": pre_tokenized,
        }
    )
    model_pieces, ids, tokens = [], [], []
    for piece in pieces:
        entry = _model_tokens(tok, piece, wanted)
        model_pieces.append(entry)
        ids += (t["id"] for t in entry["tokens"])
        tokens += (t["token"] for t in entry["tokens"])
    stages.append(
        {
            "stage": "model",
            "sequence": index,
            "component": tok.model.describe(),
            "pieces": model_pieces,
        }
    )
    return stages, ids, tokens


def _normalizer_name(normalizer: Normalizer | None) -> str | None:
    """The normalizer as the file spells it (a fused Sequence shown as its steps)."""
    if normalizer is None:
        return None
    steps = normalizer.steps()
    if steps == [normalizer]:
        return normalizer.describe()
    return "Sequence[" + ", ".join(step.describe() for step in steps) + "]"


def _is_special(tok: Tokenizer, token_id: int) -> bool:
    token = tok.added_vocabulary.tokens_by_id.get(token_id)
    return token is not None and token.special


def _fragment(tok: Tokenizer, text: str, token_id: int | None) -> dict:
    if token_id is None:
        return {"text": text, "kind": "text", "id": None}
    token = tok.added_vocabulary.tokens_by_id[token_id]
    return {"text": text, "kind": "special" if token.special else "added", "id": token_id}


def _pre_tokenize(tok: Tokenizer, fragment: str, at_start: object) -> dict:
    """One text fragment through the pre-tokenizer, each of a Sequence's in turn."""
    pre = tok.pre_tokenizer
    steps = []
    if pre is None:
        pieces = [fragment]
    elif isinstance(pre, Sequence):
        pieces = [fragment]
        for stage, stage_pieces in zip(pre.pretokenizers, pre.stage_pieces([fragment], at_start)):
            steps.append({"component": stage.describe(), "pieces": stage_pieces})
            pieces = stage_pieces
    else:
        pieces = pre.pre_tokenize([fragment], at_start)  # type: ignore[arg-type]
    return {"input": fragment, "steps": steps, "pieces": pieces}


def _model_tokens(tok: Tokenizer, piece: dict, wanted: _MergeMatcher) -> dict:
    """The model's tokens for one pre-token (an added token's fragment is its own token)."""
    text = piece["text"]
    if piece["kind"] != "pre-token":
        return {"text": text, "kind": piece["kind"], "tokens": [{"id": piece["id"], "token": text}]}
    model = tok.model
    ids = model.tokenize(text)
    strings = model.token_strings(text)
    entry = {
        "text": text,
        "kind": "pre-token",
        "tokens": [{"id": i, "token": s} for i, s in zip(ids, strings)],
    }
    if isinstance(model, BPE) and wanted(text):
        symbols, steps = model.merge_steps(text)
        current = list(symbols)
        for step in steps:
            current[step.at : step.at + 2] = [step.merged]
        _check(f"BPE merges of {text!r}", [model.vocab[s] for s in current], ids)
        entry["merges"] = {"symbols": symbols, "steps": [step._asdict() for step in steps]}
    return entry


# -- after the sequences: truncation, post-processor, padding -----------------------------------


def _post_process(
    tok: Tokenizer, encodings: list[Encoding], add_special_tokens: bool, stages: list[dict]
) -> Encoding:
    """The tokenizer's own steps after the model (truncation, post-processor, padding, in the
    order it runs them), each step's result described in ``stages``."""
    a, b = encodings[0], encodings[1] if len(encodings) > 1 else None
    lengths = [[len(e) for e in encodings]]  # before the step being observed

    def observe(step: str, results: tuple) -> None:
        if step == "truncation":
            after = [len(e) for e in results if e is not None]
            stages.append(
                {
                    "stage": "truncation",
                    "settings": tok.truncation,
                    "changed": after != lengths[0],
                    "lengths_before": lengths[0],
                    "lengths_after": after,
                }
            )
        elif step == "post_processor":
            (encoding,) = results
            tokens = encoding.tokens
            added = [
                {"position": i, "id": encoding.ids[i], "token": tokens[i]}
                for i, seq in enumerate(encoding.sequence_ids)
                if seq is None
            ]
            stages.append(
                {
                    "stage": "post_processor",
                    "component": _describe(tok.post_processor),
                    "add_special_tokens": add_special_tokens,
                    "changed": bool(added),
                    "added": added,
                }
            )
        else:
            n = lengths[-1][0]  # the post-processor's length
            (encoding,) = results
            stages.append(
                {
                    "stage": "padding",
                    "settings": tok.padding,
                    "changed": len(encoding) != n,
                    "added": len(encoding) - n,
                }
            )
        if step != "padding":
            lengths.append([len(e) for e in results if e is not None])

    return tok._post_process(a, b, add_special_tokens, observe)


def _check(what: str, ours: object, expected: object) -> None:
    if ours != expected:
        raise ExplainMismatch(
            f"the stage-by-stage path disagrees with encode ({what}): the stages give "
            f"{_short(ours)}, encode gives {_short(expected)}. This is a batchtok bug; "
            "please report it with the tokenizer file and the text."
        )


def _short(value: object, limit: int = 600) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _describe(component: object) -> str | None:
    return None if component is None else component.describe()  # type: ignore[attr-defined]


def _pre_token_list(stages: list[dict]) -> str:
    pieces = [
        p["text"]
        for s in stages
        if s["stage"] == "model"
        for p in s["pieces"]
        if p["kind"] == "pre-token"
    ]
    return ", ".join(map(repr, pieces)) or "(none)"


class _MergeMatcher:
    """Which pre-tokens get their merges listed: all, or those equal to a requested piece
    (as shown, or byte-mapped when the pre-tokenizer maps bytes)."""

    def __init__(self, pieces: list[str], byte_level: bool) -> None:
        self.all = ALL_PIECES in pieces
        self.pieces = [] if self.all else pieces
        self.forms = set(self.pieces)
        if byte_level:
            self.forms.update(map(byte_level_map, self.pieces))
        self.found = False

    def __call__(self, pre_token: str) -> bool:
        hit = self.all or pre_token in self.forms
        self.found = self.found or hit
        return hit


def _merge_matcher(tok: Tokenizer, merges: Iterable[str]) -> _MergeMatcher:
    pieces = list(merges)
    if pieces and not isinstance(tok.model, BPE):
        raise MergesRequestError(
            f"merges are a BPE notion; this file's model is {type(tok.model).__name__}"
        )
    # the bytes are mapped by a ByteLevel pre-tokenizer, or by a ByteLevel normalizer
    pre = tok.pre_tokenizer
    stages = pre.pretokenizers if isinstance(pre, Sequence) else [pre]
    normalizers = tok.normalizer.steps() if tok.normalizer is not None else []
    byte_level = any(isinstance(s, ByteLevel) for s in stages) or any(
        isinstance(n, ByteLevelNormalizer) for n in normalizers
    )
    return _MergeMatcher(pieces, byte_level)


# -- rendering ----------------------------------------------------------------------------------

# Backgrounds alternating from token to token; special tokens stand out on their own.
_TOKEN_BACKGROUNDS = ("blue", "magenta")
_SPECIAL = {"bg": "red", "fg": "bright_white", "bold": True}
_WIDTH = 100  # component descriptions are cut to this in text (the JSON has them whole)


def render(doc: dict) -> list[str]:
    """The lines of a terminal explanation of :func:`explain`'s ``doc``, with click styles
    (``click.echo`` drops them when the output is not a terminal)."""
    out: list[str] = []
    inp = doc["input"]
    out.append(_bold("text") + " " + repr(inp["text"]))
    if inp["pair"] is not None:
        out.append(_bold("pair") + " " + repr(inp["pair"]))
    for stage in doc["stages"]:
        if stage["stage"] == "added_tokens" and inp["pair"] is not None:
            out.append(_bold(f"-- sequence {'AB'[stage['sequence']]} --"))
        if stage["stage"] == "decoder":
            out.append(_bold("ids") + "     " + repr(doc["ids"]))
            out.append(_bold("tokens") + "  " + _tokens(doc["tokens"], doc["special"]))
        out += _RENDERERS[stage["stage"]](stage)
    return out


def _render_added(stage: dict) -> list[str]:
    where = stage["matched_in"]
    head = _bold(f"added tokens in the {where}")
    if not stage["changed"]:
        return [head + _dim(": none matched")]
    lines = [head + f": {len(stage['fragments'])} fragments"]
    for f in stage["fragments"]:
        line = f"    {f['kind']:<8} {_piece(f['text'], f['kind'] == 'special')}"
        if f["id"] is not None:
            line += f"  id {f['id']}"
        elif f.get("normalized"):
            line += _dim("  (normalized)")
        lines.append(line)
    return lines


def _render_normalizer(stage: dict) -> list[str]:
    return _component_lines("normalizer", stage, "none", _normalized_lines)


def _normalized_lines(fragment: dict) -> list[str]:
    if len(fragment["steps"]) <= 1:
        return [f"    {fragment['input']!r} -> {fragment['output']!r}"]
    lines = [f"    {fragment['input']!r}"]
    previous = fragment["input"]
    for step in fragment["steps"]:
        result = _dim("unchanged") if step["output"] == previous else repr(step["output"])
        lines.append(f"      {_cut(step['component'], 40):<40} -> {result}")
        previous = step["output"]
    return lines


def _render_pre_tokenizer(stage: dict) -> list[str]:
    none = "none (each fragment is one pre-token)"
    return _component_lines("pre-tokenizer", stage, none, _pre_tokenized_lines)


def _pre_tokenized_lines(fragment: dict) -> list[str]:
    if not fragment["steps"]:
        return [f"    {fragment['input']!r} -> {_pieces(fragment['pieces'])}"]
    return [f"    {fragment['input']!r}"] + [
        f"      {_cut(step['component'], 40):<40} -> {_pieces(step['pieces'])}"
        for step in fragment["steps"]
    ]


def _component_lines(
    label: str, stage: dict, if_none: str, fragment_lines: Callable[[dict], list[str]]
) -> list[str]:
    """A stage run by one component on each fragment: one line if there is no component or
    it changed nothing, else a heading and each fragment's lines."""
    if stage["component"] is None:
        return [_bold(label) + _dim(f": {if_none}")]
    head = _bold(label) + " " + _cut(stage["component"])
    if not stage["changed"]:
        return [head + _dim(": changed nothing")]
    return [head] + [line for f in stage["fragments"] for line in fragment_lines(f)]


def _render_model(stage: dict) -> list[str]:
    lines = [_bold("model") + " " + _cut(stage["component"])]
    width = max((len(repr(p["text"])) for p in stage["pieces"]), default=0)
    n = 0  # tokens so far: backgrounds alternate across the whole sequence
    for p in stage["pieces"]:
        pad = " " * (width - len(repr(p["text"])))
        if p["kind"] != "pre-token":
            shown = _piece(p["text"], p["kind"] == "special")
            lines.append(f"    {shown}{pad}  {p['kind']} token {p['tokens'][0]['id']}")
            continue
        shown = " ".join(
            _token(t["token"], n + i) + f" {t['id']}" for i, t in enumerate(p["tokens"])
        )
        n += len(p["tokens"])
        lines.append(f"    {p['text']!r}{pad}  -> {shown or _dim('(no token)')}")
        if "merges" in p:
            lines += _merge_lines(p["merges"])
    if not stage["pieces"]:
        lines[0] += _dim(": no pre-tokens")
    return lines


def _merge_lines(merges: dict) -> list[str]:
    symbols = list(merges["symbols"])
    lines = [f"        merges, from {' '.join(map(repr, symbols))}:"]
    if not merges["steps"]:
        lines.append(_dim("          none apply"))
    for step in merges["steps"]:
        symbols[step["at"] : step["at"] + 2] = [step["merged"]]
        lines.append(
            f"          rank {step['rank']:>7}  {step['left']!r} + {step['right']!r}"
            f" -> {step['merged']!r}   " + _dim(" ".join(map(repr, symbols)))
        )
    return lines


def _render_truncation(stage: dict) -> list[str]:
    settings = stage["settings"] or {}
    return _settings_lines(
        "truncation",
        f" (max_length {settings.get('max_length')}, {settings.get('strategy')})",
        stage,
        "cut nothing",
        lambda: f"lengths {stage['lengths_before']} -> {stage['lengths_after']}",
    )


def _render_post_processor(stage: dict) -> list[str]:
    head = _bold("post-processor") + " " + _cut(stage["component"] or "none (default)")
    if not stage["changed"]:
        why = "" if stage["add_special_tokens"] else " (special tokens off)"
        return [head + _dim(f": added nothing{why}")]
    lines = [head + ": added"]
    for a in stage["added"]:
        lines.append(f"    at {a['position']:<4} {_piece(a['token'], True)} {a['id']}")
    return lines


def _render_padding(stage: dict) -> list[str]:
    settings = stage["settings"] or {}
    return _settings_lines(
        "padding",
        "",
        stage,
        "added nothing",
        lambda: (
            f"{stage['added']} x {settings['pad_token']!r} (id {settings['pad_id']}) "
            f"on the {settings['direction']}"
        ),
    )


def _settings_lines(
    label: str, detail: str, stage: dict, nothing: str, change: Callable[[], str]
) -> list[str]:
    """One line for a stage the file's settings drive (truncation, padding): ``detail`` shows
    the settings, ``change`` (called only if the stage changed something) what it did."""
    if stage["settings"] is None:
        return [_bold(label) + _dim(": none configured")]
    head = _bold(label) + detail
    if not stage["changed"]:
        return [head + _dim(f": {nothing}")]
    return [head + f": {change()}"]


def _render_decoder(stage: dict) -> list[str]:
    return [
        _bold("decoded")
        + f" {stage['text']!r}"
        + _dim(f"  ({stage['component'] or 'no decoder'}, special tokens skipped)")
    ]


_RENDERERS: dict[str, Callable[[dict], list[str]]] = {
    "added_tokens": _render_added,
    "normalizer": _render_normalizer,
    "added_tokens_normalized": _render_added,
    "pre_tokenizer": _render_pre_tokenizer,
    "model": _render_model,
    "truncation": _render_truncation,
    "post_processor": _render_post_processor,
    "padding": _render_padding,
    "decoder": _render_decoder,
}


def _bold(text: str) -> str:
    return click.style(text, bold=True)


def _dim(text: str) -> str:
    return click.style(text, dim=True)


def _cut(text: str, width: int = _WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _token(token: str, i: int) -> str:
    return click.style(repr(token), bg=_TOKEN_BACKGROUNDS[i % 2], fg="bright_white")


def _piece(text: str, special: bool) -> str:
    return click.style(repr(text), **_SPECIAL) if special else repr(text)


def _pieces(pieces: list[str]) -> str:
    return " ".join(_token(p, i) for i, p in enumerate(pieces)) or _dim("(nothing)")


def _tokens(tokens: list[str], special: list[bool]) -> str:
    return " ".join(
        _piece(t, True) if is_special else _token(t, i)
        for i, (t, is_special) in enumerate(zip(tokens, special))
    )
