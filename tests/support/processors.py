"""TemplateProcessing and ByteLevel post-processor JSON, and added-token entries, over the
byte-level BPE of ``oracle.byte_level_base`` (for tests/processors/ and tests/decoders/)."""

from __future__ import annotations

from tests.support.oracle import added_token, byte_level_base


def added(content: str, special: bool = True) -> dict:
    return added_token(content, special=special, normalized=not special)


SPECIALS = ["<s>", "</s>", "<cls>", "<sep>", "<bos>", "<eos>"]


def special_ids() -> dict[str, int]:
    """The ids the added specials get (appended after the 2000 model tokens, in order)."""
    size = len(byte_level_base()["model"]["vocab"])
    return {content: size + i for i, content in enumerate(SPECIALS)}


def piece(name: str, type_id: int) -> dict:
    if name in ("A", "B"):
        return {"Sequence": {"id": name, "type_id": type_id}}
    return {"SpecialToken": {"id": name, "type_id": type_id}}


def template(single, pair=None, special_tokens=None) -> dict:
    ids = special_ids()
    if special_tokens is None:
        special_tokens = {
            name: {"id": name, "ids": [ids[name]], "tokens": [name]} for name in SPECIALS
        }
    if pair is None:
        pair = [*single, ("B", 1)]
    return {
        "type": "TemplateProcessing",
        "single": [piece(n, t) for n, t in single],
        "pair": [piece(n, t) for n, t in pair],
        "special_tokens": special_tokens,
    }


BYTE_LEVEL_PP = {
    "type": "ByteLevel",
    "add_prefix_space": False,
    "trim_offsets": True,
    "use_regex": True,
}


def many_before_after() -> dict:
    """A template with several specials before and after A, each with its own type id."""
    return template(
        [("<s>", 0), ("<cls>", 1), ("<bos>", 2), ("A", 3), ("<sep>", 4), ("</s>", 5), ("<eos>", 6)]
    )
