"""Decoders: the list of token strings -> a list of strings, concatenated by decode."""

from __future__ import annotations

import re
from collections.abc import Callable

from .errors import DecodeError
from .metaspace import Metaspace
from .normalizers import compile_checked, read_pattern
from .pre_tokenizers import CHAR_TO_BYTE, read_metaspace
from .utils.onig import OnigPattern, escape_literal
from .utils.spec import Spec, dispatch

# What Rust's u8::from_str_radix(_, 16) accepts in the two chars after "<0x": a leading "+" too.
_BYTE_HEX = re.compile(r"\+?[0-9a-fA-F]+")


class Decoder:
    def decode_chain(self, tokens: list[str]) -> list[str]:
        raise NotImplementedError

    def describe(self) -> str:
        return type(self).__name__


class ByteLevel(Decoder):
    """GPT-2 chars back to bytes; a token with any char outside the table keeps its UTF-8."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = bytearray()
        table = CHAR_TO_BYTE
        for token in tokens:
            try:
                out += bytes([table[c] for c in token])
            except KeyError:
                out += token.encode("utf-8")
        return [out.decode("utf-8", "replace")]


class Replace(Decoder):
    def __init__(self, pattern: str, is_regex: bool, content: str) -> None:
        self.content = content
        self.literal = None if is_regex or not pattern else pattern
        self.onig = OnigPattern(pattern if is_regex else escape_literal(pattern))

    def decode_chain(self, tokens: list[str]) -> list[str]:
        if self.literal is not None:
            return [t.replace(self.literal, self.content) for t in tokens]
        return [self.onig.sub(self.content, t) for t in tokens]


class ByteFallback(Decoder):
    """Runs of ``<0xHH>`` tokens become their bytes; an invalid run becomes U+FFFD per byte."""

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out: list[str] = []
        run = bytearray()
        for token in tokens:
            byte = _fallback_byte(token)
            if byte is not None:
                run.append(byte)
                continue
            if run:
                out.append(_bytes_or_replacement(run))
                run = bytearray()
            out.append(token)
        if run:
            out.append(_bytes_or_replacement(run))
        return out


def _fallback_byte(token: str) -> int | None:
    """The byte of a ``<0xHH>`` token, read as the library reads it (6 UTF-8 bytes)."""
    if not (token.startswith("<0x") and token.endswith(">")):
        return None
    raw = token.encode("utf-8")
    if len(raw) != 6:
        return None
    digits = raw[3:5].decode("utf-8", "replace")
    if not _BYTE_HEX.fullmatch(digits):
        return None
    return int(digits, 16)


def _bytes_or_replacement(run: bytearray) -> str:
    try:
        return run.decode("utf-8")
    except UnicodeDecodeError:
        return "\ufffd" * len(run)


class Fuse(Decoder):
    def decode_chain(self, tokens: list[str]) -> list[str]:
        return ["".join(tokens)]


class Strip(Decoder):
    def __init__(self, content: str, start: int, stop: int) -> None:
        self.content, self.start, self.stop = content, start, stop

    def decode_chain(self, tokens: list[str]) -> list[str]:
        out = []
        for token in tokens:
            left = 0
            while left < self.start and left < len(token) and token[left] == self.content:
                left += 1
            right = len(token)
            for i in range(self.stop):
                index = len(token) - i - 1
                if index < 0:
                    raise DecodeError("Strip decoder: stop runs past the token (tokenizers panics)")
                if token[index] != self.content:
                    break
                right = index
            if right < left:
                raise DecodeError("Strip decoder: start and stop cuts cross (tokenizers panics)")
            out.append(token[left:right])
        return out


# WordPiece's cleanup, in the library's order (the order matters: " ' " before " 's").
_CLEANUP = (
    (" .", "."),
    (" ?", "?"),
    (" !", "!"),
    (" ,", ","),
    (" ' ", "'"),
    (" n't", "n't"),
    (" 'm", "'m"),
    (" do not", " don't"),
    (" 's", "'s"),
    (" 've", "'ve"),
    (" 're", "'re"),
)


def cleanup(text: str) -> str:
    """``text`` with the spaces before punctuation and English contractions removed.

    >>> cleanup("it 's a test , is n't it ?")
    "it's a test, isn't it?"
    """
    if " " not in text:  # every pattern starts with a space; nothing can match
        return text
    for old, new in _CLEANUP:
        text = text.replace(old, new)
    return text


class WordPiece(Decoder):
    """Continuation tokens lose ``prefix``, the others get a space before them; the first token
    is left as it is, even when it starts with ``prefix``.

    >>> "".join(WordPiece("##", True).decode_chain(["##un", "aff", "##able", "."]))
    '##un affable.'
    """

    def __init__(self, prefix: str, cleanup: bool) -> None:
        self.prefix, self.cleanup = prefix, cleanup

    def decode_chain(self, tokens: list[str]) -> list[str]:
        prefix, cut = self.prefix, len(self.prefix)
        out = []
        for i, token in enumerate(tokens):
            if i:
                token = token[cut:] if token.startswith(prefix) else " " + token
            out.append(cleanup(token) if self.cleanup else token)
        return out


class BPEDecoder(Decoder):
    """Every ``suffix`` becomes a space, except in the last token, where it is removed.

    >>> "".join(BPEDecoder("</w>").decode_chain(["hel", "lo</w>", "world</w>"]))
    'hello world'
    """

    def __init__(self, suffix: str) -> None:
        self.suffix = suffix

    def decode_chain(self, tokens: list[str]) -> list[str]:
        suffix = self.suffix
        out = [t.replace(suffix, " ") for t in tokens[:-1]]
        if tokens:
            out.append(tokens[-1].replace(suffix, ""))
        return out


class CTC(Decoder):
    """Speech-model output: repeated tokens collapse to one, ``pad_token`` disappears, and with
    ``cleanup`` the WordPiece cleanup runs, then ``word_delimiter_token`` becomes a space; tokens
    left empty are dropped.

    >>> "".join(CTC("<pad>", "|", True).decode_chain("<pad> h e e l l <pad> l o | | w".split()))
    'hello w'
    """

    def __init__(self, pad_token: str, word_delimiter_token: str, cleanup: bool) -> None:
        self.pad_token = pad_token
        self.word_delimiter_token = word_delimiter_token
        self.cleanup = cleanup

    def decode_chain(self, tokens: list[str]) -> list[str]:
        pad, delimiter = self.pad_token, self.word_delimiter_token
        out = []
        previous = None
        for token in tokens:
            if token == previous:
                continue
            previous = token
            token = token.replace(pad, "")
            if self.cleanup:
                token = cleanup(token).replace(delimiter, " ")
            if token:
                out.append(token)
        return out


class Sequence(Decoder):
    def __init__(self, decoders: list[Decoder]) -> None:
        self.decoders = decoders

    def decode_chain(self, tokens: list[str]) -> list[str]:
        for d in self.decoders:
            tokens = d.decode_chain(tokens)
        return tokens

    def describe(self) -> str:
        return "Sequence[" + ", ".join(d.describe() for d in self.decoders) + "]"


def _byte_level(spec: Spec) -> ByteLevel:
    spec.boolean("add_prefix_space")
    spec.boolean("trim_offsets")
    spec.boolean("use_regex", True)
    return ByteLevel()


def _replace(spec: Spec) -> Replace:
    pattern, is_regex = read_pattern(spec)
    content = spec.string("content")
    return compile_checked(spec, "pattern", lambda: Replace(pattern, is_regex, content))


def _strip(spec: Spec) -> Strip:
    content = spec.string("content")
    if len(content) != 1:
        raise spec.fail("content", content, "expected exactly one character")
    return Strip(content, spec.uint("start"), spec.uint("stop"))


class MetaspaceDecoder(Decoder):
    """Replacement chars back to spaces (see :meth:`Metaspace.decode_chain`)."""

    def __init__(self, metaspace: Metaspace) -> None:
        self.metaspace = metaspace

    def decode_chain(self, tokens: list[str]) -> list[str]:
        return self.metaspace.decode_chain(tokens)

    def describe(self) -> str:
        return self.metaspace.describe()


REGISTRY: dict[str, Callable[[Spec], Decoder]] = {
    "BPEDecoder": lambda s: BPEDecoder(s.string("suffix")),
    "WordPiece": lambda s: WordPiece(s.string("prefix"), s.boolean("cleanup")),
    "CTC": lambda s: CTC(
        s.string("pad_token"), s.string("word_delimiter_token"), s.boolean("cleanup")
    ),
    "Metaspace": lambda s: MetaspaceDecoder(read_metaspace(s)),
    "ByteLevel": _byte_level,
    "Replace": _replace,
    "ByteFallback": lambda s: ByteFallback(),
    "Fuse": lambda s: Fuse(),
    "Strip": _strip,
    "Sequence": lambda s: Sequence(
        [read_decoder(x, s.at("decoders") + f"[{i}]") for i, x in enumerate(s.array("decoders"))]
    ),
}


def read_decoder(data: object, path: str) -> Decoder:
    return dispatch(Spec(data, path), REGISTRY, "decoder")
