"""deep_json: the explicit-stack parser and writer say what json.loads and json.dumps say, on
any text, and keep going where json runs out of recursion."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from batchtok.runner.inputs import deep_json
from tests.support.tier import long_examples

_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=12,
)
# characters that matter to a JSON parser, and a few that do not
_NOISE = st.sampled_from(list('[]{}",: \t\r\n\x0c0123456789.eE+-\\/untrlfasNIy\u0661\ufeff\ud800x'))


@st.composite
def json_like(draw: st.DrawFn) -> str:
    """A JSON text, often broken: a character inserted, deleted or replaced, or noise."""
    if draw(st.integers(0, 5)) == 0:
        return "".join(draw(st.lists(_NOISE, max_size=12)))
    text = json.dumps(
        draw(_JSON), ensure_ascii=draw(st.booleans()), indent=draw(st.none() | st.just(1))
    )
    for _ in range(draw(st.integers(0, 2))):
        at = draw(st.integers(0, len(text)))
        edit = draw(st.sampled_from(["insert", "delete", "replace"]))
        noise = draw(_NOISE)
        if edit == "insert":
            text = text[:at] + noise + text[at:]
        elif edit == "delete":
            text = text[:at] + text[at + 1 :]
        else:
            text = text[:at] + noise + text[at + 1 :]
    return text


def _outcome(parse, text: str) -> tuple[str, str]:
    try:
        value = parse(text)
    except ValueError as exc:
        return "error", type(exc).__name__
    return "value", json.dumps(value)


@long_examples(2000)
@given(json_like())
def test_the_deep_parser_accepts_what_json_accepts_and_gives_its_values(text: str) -> None:
    assert _outcome(deep_json._loads_deep, text) == _outcome(json.loads, text)


@long_examples(500)
@given(_JSON)
def test_the_deep_writer_writes_what_json_dumps_writes(value) -> None:
    assert deep_json._dumps_deep(value) == json.dumps(value, ensure_ascii=False)


@pytest.mark.parametrize("depth", [1, 5000, 200_000])
def test_documents_of_any_depth_are_read_and_written_back(depth: int) -> None:
    arrays = "[" * depth + '1, "x"' + "]" * depth
    objects = '{"k":' * depth + "null" + "}" * depth
    assert deep_json.dumps(deep_json.loads(arrays)) == "[" * depth + '1, "x"' + "]" * depth
    assert deep_json.dumps(deep_json.loads(objects)) == '{"k": ' * depth + "null" + "}" * depth
    for broken in (arrays[:-1], arrays + "]", objects.replace(":", "", 1), arrays + " x"):
        with pytest.raises(json.JSONDecodeError):
            deep_json.loads(broken)


def test_an_integer_longer_than_int_converts_is_read_and_written_as_its_digits() -> None:
    digits = "-" + "9" * 5000
    for text in (f'{{"a": {digits}, "b": [1, 2.5]}}', "[" * 3000 + digits + "]" * 3000):
        with pytest.raises((ValueError, RecursionError)):  # json's limits
            json.loads(text)
        value = deep_json.loads(text)
        assert deep_json.dumps(value) == text
    assert deep_json.loads(digits) == deep_json.LongNumber(digits)
