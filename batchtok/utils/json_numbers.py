"""JSON numbers as `tokenizers` reads them: serde_json's default (not correctly rounded) f64.

`tokenizers` parses tokenizer.json with serde_json built without its ``float_roundtrip``
feature. For a decimal literal with more than about 15 significant digits, that parser's result
can be one unit in the last place away from the correctly rounded value that Python's ``json``
module gives (about one random 17-digit score in ten). Unigram compares sums of scores, so a
one-ulp difference can flip a tie; batchtok therefore reproduces serde_json's arithmetic.
"""

from __future__ import annotations

import math
import struct

# serde_json's POW10 table: the correctly rounded doubles 1e0 .. 1e308.
_POW10 = [float(f"1e{i}") for i in range(309)]
_U64_MAX = 2**64 - 1
_I32_MAX = 2**31 - 1
# Below this significand and exponent, one IEEE multiply or divide of exact operands is correctly
# rounded, so serde_json and Python agree and the literal's digits need not be re-read.
_EXACT_SIGNIFICAND = 2**53
_EXACT_POW10 = 22


class SerdeFloat(float):
    """A float already read the way serde_json reads it (see :func:`serde_float`)."""


def serde_float(literal: str) -> SerdeFloat:
    """The f64 serde_json (default features) gives for the JSON number ``literal``.

    >>> serde_float("-9.715379068199061") == -9.71537906819906
    True

    Raises ValueError for text that is not a finite JSON number or that serde_json rejects as
    out of range.
    """
    text = literal
    positive = True
    if text.startswith("-"):
        positive = False
        text = text[1:]
    mantissa, e_mark, exp_text = text.replace("E", "e").partition("e")
    int_part, dot, frac_part = mantissa.partition(".")
    if (
        not int_part.isdigit()
        or not int_part.isascii()
        or (len(int_part) > 1 and int_part[0] == "0")
        or (dot and not (frac_part.isdigit() and frac_part.isascii()))
        or (e_mark and not _is_exponent(exp_text))
    ):
        raise ValueError(f"not a JSON number: {literal!r}")
    significand = 0
    exponent = 0
    overflowed = False
    # Integer digits: once the next digit would overflow u64, later ones only scale by ten.
    for ch in int_part:
        if overflowed:
            exponent += 1
            continue
        nxt = significand * 10 + (ord(ch) - 48)
        if nxt > _U64_MAX:
            overflowed = True
            exponent += 1
            continue
        significand = nxt
    # Fraction digits: once they would overflow u64, the remaining ones are ignored.
    for ch in frac_part:
        if overflowed:
            break
        nxt = significand * 10 + (ord(ch) - 48)
        if nxt > _U64_MAX:
            overflowed = True
            break
        significand = nxt
        exponent -= 1
    if e_mark:
        sign = -1 if exp_text.startswith("-") else 1
        digits = exp_text.lstrip("+-")
        exp = int(digits)
        if exp > _I32_MAX or _exp_overflows(digits):
            if significand != 0 and sign > 0:
                raise ValueError(f"number out of range: {literal!r}")
            return SerdeFloat(0.0 if positive else -0.0)
        # i32 saturating arithmetic, as serde_json does.
        exponent = max(-(2**31), min(_I32_MAX, exponent + sign * exp))
    if not dot and not e_mark and not overflowed:
        value = float(significand)  # an integer literal: u64/i64 converted with `as f64`
        return SerdeFloat(value if positive else -value)
    return SerdeFloat(_from_parts(positive, significand, exponent, literal))


def _is_exponent(text: str) -> bool:
    digits = text[1:] if text[:1] in "+-" else text
    return digits.isdigit() and digits.isascii()


def _exp_overflows(digits: str) -> bool:
    """Whether serde_json's i32 accumulation of the exponent digits overflows."""
    exp = 0
    for ch in digits:
        d = ord(ch) - 48
        if exp >= _I32_MAX // 10 and (exp > _I32_MAX // 10 or d > _I32_MAX % 10):
            return True
        exp = exp * 10 + d
    return False


def _from_parts(positive: bool, significand: int, exponent: int, literal: str) -> float:
    f = float(significand)
    while True:
        index = abs(exponent)
        if index < len(_POW10):
            if exponent >= 0:
                f *= _POW10[index]
                if math.isinf(f):
                    raise ValueError(f"number out of range: {literal!r}")
            else:
                f /= _POW10[index]
            break
        if f == 0.0:
            break
        if exponent >= 0:
            raise ValueError(f"number out of range: {literal!r}")
        f /= 1e308
        exponent += 308
    return f if positive else -f


def as_serde_float(value: float | int) -> float:
    """``value`` (a number from Python's ``json``) as serde_json would have read its literal.

    A :class:`SerdeFloat` is returned unchanged. A plain float is re-read from its shortest
    representation, which is the literal that both serde_json and Python's json write, so this
    is exact for machine-written files. Raises ValueError for non-finite values.
    """
    if isinstance(value, SerdeFloat):
        return value
    if isinstance(value, int):
        return float(value)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number: {value!r}")
    return serde_float(repr(value))


def as_serde_f32(value: float | int) -> float:
    """``value`` (a number from Python's ``json``) as a serde ``f32`` field reads it: the f64
    serde_json reads, rounded to the nearest f32 (Rust's ``as f32``: a tiny value becomes 0.0,
    one past the f32 range infinity). Raises ValueError for non-finite input."""
    try:
        wide = as_serde_float(value)
    except OverflowError:  # an integer literal past f64: serde_json reads it as infinite
        return math.copysign(math.inf, value)
    try:
        return struct.unpack("<f", struct.pack("<f", wide))[0]
    except OverflowError:
        return math.copysign(math.inf, wide)
