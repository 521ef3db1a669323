"""Every public name of the oracle's inference API has a counterpart in batchtok, or a reason.

The walk reads ``dir()`` of ``tokenizers.Tokenizer`` and ``tokenizers.Encoding`` and of the
component base classes a user reaches through a tokenizer (``tokenizer.normalizer`` and the
others), public names only, and fails on a name that batchtok's matching object neither has
nor lists in :data:`OUT_OF_SCOPE` with its reason. :func:`coverage` counts the names
implemented; ``python tests/test_api_walk.py`` prints it.
"""

from __future__ import annotations

import sys
from pathlib import Path

import tokenizers
from tokenizers import decoders, models, normalizers, pre_tokenizers, processors

TRAINING = "training is out of scope: batchtok loads trained tokenizer.json files"
ASYNC = "async variants are out of scope: batchtok's calls are synchronous (run them in a thread)"
CUSTOM = "components written in Python (custom) are out of scope: batchtok reads tokenizer.json"

# (oracle class, name) -> why batchtok does not have it
OUT_OF_SCOPE: dict[tuple[str, str], str] = {
    ("Tokenizer", "train"): TRAINING,
    ("Tokenizer", "train_from_iterator"): TRAINING,
    ("Model", "get_trainer"): TRAINING,
    ("Tokenizer", "async_encode"): ASYNC,
    ("Tokenizer", "async_encode_batch"): ASYNC,
    ("Tokenizer", "async_encode_batch_fast"): ASYNC,
    ("Tokenizer", "async_decode_batch"): ASYNC,
    ("Normalizer", "custom"): CUSTOM,
    ("PreTokenizer", "custom"): CUSTOM,
    ("Decoder", "custom"): CUSTOM,
    ("Model", "save"): "writes the model's vocab/merges files; Tokenizer.save writes the whole "
    "tokenizer.json instead",
}

# (oracle class, name) -> how batchtok's object of that name differs: names it has, for its own
# engine, with another call; not counted as implemented
OTHER_CALL: dict[tuple[str, str], str] = {
    ("Normalizer", "normalize"): "the library's takes a NormalizedString, batchtok's a str "
    "(normalize_str is the library's str call)",
    ("PreTokenizer", "pre_tokenize"): "the library's takes a PreTokenizedString, batchtok's a "
    "list of str (pre_tokenize_str is the library's str call)",
    ("Model", "tokenize"): "the library's gives Token objects (id, value, offsets), batchtok's "
    "the ids",
    ("PostProcessor", "process"): "batchtok's consumes the Encodings it is given; the library's "
    "processes copies (Tokenizer.post_process copies, as the library's)",
}


def _oracle_classes() -> dict[str, type]:
    return {
        "Tokenizer": tokenizers.Tokenizer,
        "Encoding": tokenizers.Encoding,
        "Normalizer": normalizers.Normalizer,
        "PreTokenizer": pre_tokenizers.PreTokenizer,
        "Decoder": decoders.Decoder,
        "Model": models.Model,
        "PostProcessor": processors.PostProcessor,
    }


def _ours() -> dict[str, object]:
    """batchtok's object matching each oracle class: a loaded tokenizer (whose instance
    attributes, the components among them, count) and its components' base classes."""
    from batchtok.decoders import Decoder
    from batchtok.encoding import Encoding
    from batchtok.models import Model
    from batchtok.normalizers import Normalizer
    from batchtok.pre_tokenizers import PreTokenizer
    from batchtok.processors import PostProcessor
    from tests.support.oracle import pair_for

    tok, _ = pair_for("minilm")
    return {
        "Tokenizer": tok,
        "Encoding": Encoding,
        "Normalizer": Normalizer,
        "PreTokenizer": PreTokenizer,
        "Decoder": Decoder,
        "Model": Model,
        "PostProcessor": PostProcessor,
    }


def public_names() -> list[tuple[str, str]]:
    """(oracle class, name) of every public name the walk covers."""
    return [
        (label, name)
        for label, cls in _oracle_classes().items()
        for name in sorted(dir(cls))
        if not name.startswith("_")
    ]


def missing() -> list[tuple[str, str]]:
    """The names batchtok neither has nor lists as out of scope."""
    ours = _ours()
    return [
        (label, name)
        for label, name in public_names()
        if not hasattr(ours[label], name) and (label, name) not in OUT_OF_SCOPE
    ]


def coverage() -> tuple[int, int]:
    """(names batchtok implements as the library does, names walked)."""
    ours = _ours()
    names = public_names()
    done = [
        (label, name)
        for label, name in names
        if hasattr(ours[label], name) and (label, name) not in OTHER_CALL
    ]
    return len(done), len(names)


def test_every_public_name_is_implemented_or_out_of_scope():
    gaps = missing()
    assert not gaps, f"{len(gaps)} names missing: {gaps}"


def test_the_lists_name_only_what_they_say():
    """OUT_OF_SCOPE: names the oracle has and batchtok lacks; OTHER_CALL: names both have."""
    names = set(public_names())
    ours = _ours()
    for label, name in OUT_OF_SCOPE:
        assert (label, name) in names, f"{label}.{name} is not a name of the oracle"
        assert not hasattr(ours[label], name), f"{label}.{name} is implemented: unlist it"
    for label, name in OTHER_CALL:
        assert (label, name) in names and hasattr(ours[label], name)


def test_coverage():
    implemented, total = coverage()
    print(f"{implemented} of {total} names implemented")
    lacking = len(OUT_OF_SCOPE) + len(OTHER_CALL) + len(missing())
    assert implemented + lacking == total


def test_the_library_page_gives_these_counts():
    """docs/library.md says how many names are covered: the walk's figures."""
    page = (Path(__file__).resolve().parents[1] / "docs" / "library.md").read_text("utf-8")
    implemented, total = coverage()
    said = (
        f"Of the library's {total} public names on `Tokenizer`, `Encoding` and the component "
        f"bases, {implemented} behave\nas the library's, {len(OUT_OF_SCOPE)} are left out as "
        f"above and {len(OTHER_CALL)} are the other calls of the last item."
    )
    assert said in page


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    done, walked = coverage()
    print(f"{done} of {walked} names implemented")
    for (label, name), why in OUT_OF_SCOPE.items():
        print(f"  out of scope: {label}.{name}: {why}")
    for (label, name), why in OTHER_CALL.items():
        print(f"  another call: {label}.{name}: {why}")
