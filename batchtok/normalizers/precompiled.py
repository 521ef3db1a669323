"""The ``Precompiled`` normalizer: SentencePiece's ``precompiled_charsmap``, applied as
`tokenizers` applies it.

The charsmap is ``u32 LE trie_size`` + a Darts-clone double-array trie of ``trie_size // 4``
little-endian u32 units + a blob of NUL-terminated UTF-8 replacements. The trie maps UTF-8 keys
to blob offsets. batchtok walks the whole trie once at load time and keeps a plain
``key -> replacement`` dict, so encoding never touches the double array.

`tokenizers` normalizes per extended grapheme cluster ``g``: when ``g`` is shorter than 6 UTF-8
bytes and some key is a prefix of ``g``, the *shortest* such key's replacement stands for the
whole of ``g`` (chars after that key are dropped); otherwise each char is replaced by its own
entry, if any. A single char is its own grapheme almost everywhere, so batchtok translates text
char by char and segments graphemes only inside the short runs of chars that may join (see
:data:`_JOINS`).
"""

from __future__ import annotations

import base64
import binascii
import functools
import re
import struct
from collections.abc import Iterator

import regex

from .._tables.grapheme import REGEX_FINGERPRINT, REGEX_VERSION, STAND_INS
from ..alignment import Aligned
from ..utils.spec import Spec
from ..utils.translate import BEYOND_BMP, SparseTranslate, ranges
from .base import Normalizer, leading_through

# Grapheme segmentation of `regex` (checked against the oracle's unicode-segmentation crate on
# every code point by tests/normalizers/test_precompiled.py).
_GRAPHEME = regex.compile(r"\X", regex.DOTALL)
# ... with one rule read otherwise: regex applies GB9c (no break between an Indic linker, a
# virama, and the consonant after it) even where no consonant comes before the linker ("a्ড়",
# or a linker at the start); UAX #29 and the oracle break there (_cluster_lengths).
_LINKER = regex.compile(r"\p{InCB=Linker}")
_AFTER_LINK = regex.compile(r"(?<=[\p{InCB=Extend}\p{InCB=Linker}])\p{InCB=Consonant}")
_CONJUNCT = regex.compile(
    r"\p{InCB=Consonant}[\p{InCB=Extend}\p{InCB=Linker}]*\p{InCB=Linker}"
    r"[\p{InCB=Extend}\p{InCB=Linker}]*\Z"
)


def _cluster_lengths(seg: str) -> list[int]:
    """The lengths of the oracle's grapheme clusters of ``seg``: regex's, each cut again
    before a consonant that regex joined to a linker without a consonant before it (no other
    rule joins a consonant to an InCB=Extend or Linker char before it)."""
    clusters = _GRAPHEME.findall(seg)
    if _LINKER.search(seg) is None:
        return [len(g) for g in clusters]
    lengths = []
    for cluster in clusters:
        start = 0
        for found in _AFTER_LINK.finditer(cluster, 1):
            at = found.start()
            if _CONJUNCT.search(cluster, start, at) is None:
                lengths.append(at - start)
                start = at
        lengths.append(len(cluster) - start)
    return lengths


# Chars x that can be joined to the next char in one grapheme (UAX #29 rules GB3, GB6-GB8,
# GB9b, GB9c, GB11, GB12/13 look at x) and chars y that can be joined to the previous one (GB9,
# GB9a look at y). Two neighbours with neither x in _LEFT nor y in _RIGHT always have a
# boundary between them. _JOINS matches runs of chars each of which is in _LEFT or followed by
# a char in _RIGHT, plus the char after: every multi-char grapheme lies inside one such run,
# and every run starts and ends on a boundary.
_LEFT = (
    r"\r\p{GCB=L}\p{GCB=V}\p{GCB=T}\p{GCB=LV}\p{GCB=LVT}\p{GCB=Prepend}"
    r"\p{GCB=Regional_Indicator}\p{GCB=ZWJ}\p{InCB=Linker}\p{InCB=Extend}"
)
_RIGHT = r"\p{GCB=Extend}\p{GCB=ZWJ}\p{GCB=SpacingMark}"
_MAY_JOIN = regex.compile(rf"[{_LEFT}{_RIGHT}]")
_JOINS = regex.compile(rf"((?:[{_LEFT}]|.(?=[{_RIGHT}]))+.)", regex.DOTALL)


_STAND_IN_CHARS = re.compile("[" + "".join(map(chr, STAND_INS)) + "]")


@functools.lru_cache(maxsize=1)
def _bmp_joining() -> tuple[frozenset[str], frozenset[str]]:
    """The BMP chars of :data:`_LEFT` and of :data:`_RIGHT`, read in one pass of `regex` over
    the BMP (its property classes are slow to test one by one)."""
    bmp = "".join(map(chr, range(0xD800))) + "".join(map(chr, range(0xE000, 0x10000)))
    members = _MAY_JOIN.findall(bmp)
    left = regex.compile(f"[{_LEFT}]")
    right = regex.compile(f"[{_RIGHT}]")
    return (
        frozenset(c for c in members if left.match(c)),
        frozenset(c for c in members if right.match(c)),
    )


@functools.lru_cache(maxsize=1)
def _may_join_bmp() -> re.Pattern[str]:
    """:data:`_MAY_JOIN`'s BMP members as one `re` class (a table lookup per char, ~10x
    faster than the property classes of `regex`), plus every char beyond the BMP, which
    :func:`_may_join` checks with the exact class."""
    left, right = _bmp_joining()
    return re.compile(f"[{ranges(left | right)}{BEYOND_BMP[1:-1]}]")


@functools.lru_cache(maxsize=1)
def _joining() -> tuple[frozenset[str], frozenset[str]]:
    """The BMP chars of :data:`_LEFT` and of :data:`_RIGHT`, each with the stand-ins."""
    stand_ins = {chr(c) for c in STAND_INS}
    left, right = _bmp_joining()
    return left | stand_ins, right | stand_ins


def _stretch(text: str, at: int) -> tuple[int, int]:
    """The chars around ``text[at]`` linked to their neighbours by a pair that may join (the
    first in :data:`_LEFT` or the second in :data:`_RIGHT`; beyond the BMP, always): a grapheme
    holding ``text[at]`` lies inside, and no rule of UAX #29 reads across either end (each
    rule that looks further back, as GB9c, GB11 and GB12/13 do, reads only pairs that may
    join), so its clusters are the ones the whole text has."""
    left, right = _joining()

    def joins(at: int) -> bool:  # whether text[at - 1] and text[at] may be one grapheme's
        return text[at - 1] in left or text[at] in right or max(text[at - 1 : at + 1]) > "\uffff"

    start, end, size = at, at + 1, len(text)
    while start and joins(start):
        start -= 1
    while end < size and joins(end):
        end += 1
    return start, end


def _may_join(text: str) -> bool:
    """Whether ``text`` holds a char of :data:`_MAY_JOIN`."""
    find = _may_join_bmp().search
    found = find(text)
    while found is not None:
        char = found.group()
        if char <= "\uffff" or _MAY_JOIN.match(char):
            return True
        found = find(text, found.end())
    return False


def check_regex_tables() -> None:
    """Raise :class:`CharsmapError` unless the installed ``regex`` has the grapheme properties
    the stand-in table was checked against (hashing them costs about a second, once)."""
    global _regex_checked
    if _regex_checked or regex.__version__ == REGEX_VERSION:
        return
    from hashlib import sha256

    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    digest = sha256()
    for name in _PROPERTIES:
        members = regex.findall(rf"\p{{{name}}}", text)
        digest.update(name.encode() + b":" + "".join(members).encode("utf-8", "surrogatepass"))
    if digest.hexdigest() != REGEX_FINGERPRINT:
        raise CharsmapError(
            f"grapheme clusters were verified with regex {REGEX_VERSION}; the installed regex "
            f"{regex.__version__} has other Unicode tables"
        )
    _regex_checked = True


_regex_checked = False
# Must list the same properties, in the same order, as tools/gen_grapheme_tables.py.
_PROPERTIES = [f"GCB={v}" for v in "CR LF Control Extend ZWJ Regional_Indicator Prepend".split()]
_PROPERTIES += [f"GCB={v}" for v in "SpacingMark L V T LV LVT".split()]
_PROPERTIES += ["Extended_Pictographic", "InCB=Linker", "InCB=Consonant", "InCB=Extend"]


class CharsmapError(ValueError):
    """The charsmap cannot be read, or `tokenizers` would panic on it."""


def _units(data: bytes) -> tuple[tuple[int, ...], bytes]:
    if len(data) < 4:
        raise CharsmapError("shorter than its 4-byte trie size")
    (trie_size,) = struct.unpack_from("<I", data)
    count = trie_size // 4
    if 4 + 4 * count > len(data):
        raise CharsmapError(f"trie of {trie_size} bytes but only {len(data) - 4} follow")
    if count == 0:
        raise CharsmapError("empty trie: tokenizers panics on the first lookup")
    return struct.unpack_from(f"<{count}I", data, 4), data[4 + 4 * count :]


def _offset(unit: int) -> int:
    return (unit >> 10) << ((unit & 0x200) >> 6)


def _char_length(lead: int) -> int:
    """UTF-8 length of a char from its first byte; 0 where no char of valid text starts."""
    if lead < 0x80:
        return 1
    if 0xC2 <= lead < 0xE0:
        return 2
    if 0xE0 <= lead < 0xF0:
        return 3
    if 0xF0 <= lead < 0xF5:
        return 4
    return 0


class Charsmap:
    """A ``precompiled_charsmap`` read as the library reads it.

    Reproduces the library's walk: from the root, byte ``c`` leads from a node at ``pos`` to
    ``pos ^ offset(unit[pos]) ^ c`` when that unit's label is ``c``; a node whose unit has the
    leaf bit ends a key, whose value (a blob offset) sits at the node's base. Loading raises
    :class:`CharsmapError` where the library refuses the bytes or where a walk could read
    outside the array or the strings (the library panics there).
    """

    def __init__(self, data: bytes) -> None:
        units, blob = _units(data)
        try:
            blob.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CharsmapError("the replacement strings are not UTF-8") from exc
        self._units, self._blob = units, blob
        self._strings: dict[int, str] = {}
        size = len(units)
        # Every unit labelled with a byte may be a node reached by some walk: its children and
        # its value must lie inside the array, and its value on a char of the strings.
        children: dict[int, list[tuple[int, int]]] = {}
        for pos, unit in enumerate(units):
            label = unit & 0x800000FF
            if 0 < label < 256:
                base = pos ^ _offset(unit)
                if base | 0xFF >= size:
                    raise CharsmapError(f"the children of trie unit {pos} lie outside the array")
                if (unit >> 8) & 1:
                    self.string(units[base] & 0x7FFFFFFF)
                children.setdefault(pos ^ label, []).append((label, pos))
        self._root = _offset(units[0])
        if self._root | 0xFF >= size:
            raise CharsmapError("the children of the trie root lie outside the array")
        self.chars, self.starts, self.seconds = self._single_chars(children)

    def string(self, offset: int) -> str:
        """The NUL-terminated replacement at ``offset`` of the strings blob."""
        found = self._strings.get(offset)
        if found is None:
            blob = self._blob
            if offset > len(blob) or (offset < len(blob) and 0x80 <= blob[offset] < 0xC0):
                raise CharsmapError(f"a trie value ({offset}) points inside a char or past the end")
            end = blob.find(b"\0", offset)
            found = blob[offset : len(blob) if end < 0 else end].decode("utf-8")
            self._strings[offset] = found
        return found

    def _single_chars(
        self, children: dict[int, list[tuple[int, int]]]
    ) -> tuple[dict[int, str], frozenset[str], frozenset[str]]:
        """Every char a key may start with: that char's replacement, if its node ends a key;
        whether longer keys start with it; and the chars such longer keys go on with."""
        chars: dict[int, str] = {}
        starts: set[str] = set()
        seconds: set[str] = set()
        for char, base, value in self._chars_from(self._root, children):
            if value is not None:
                chars[ord(char)] = value
            if children.get(base):
                starts.add(char)
                seconds.update(c for c, _, _ in self._chars_from(base, children))
        return chars, frozenset(starts), frozenset(seconds)

    def _chars_from(
        self, node: int, children: dict[int, list[tuple[int, int]]]
    ) -> Iterator[tuple[str, int, str | None]]:
        """Each whole char of valid UTF-8 a walk from ``node`` reads: (char, the node it
        leads to, the replacement when that node ends a key)."""
        units = self._units
        stack = [(node, b"", 0)]
        while stack:
            base, key, length = stack.pop()
            for label, pos in children.get(base, ()):
                if not key:
                    length = _char_length(label)
                    if not length:
                        continue
                elif not 0x80 <= label < 0xC0:
                    continue
                unit = units[pos]
                child_key = key + bytes((label,))
                child_base = pos ^ _offset(unit)
                is_key = (unit >> 8) & 1
                if len(child_key) < length:
                    if is_key:
                        # a key ending inside a char would replace part of a char; SentencePiece
                        # never builds one
                        raise CharsmapError(f"trie key {child_key!r} ends inside a char")
                    stack.append((child_base, child_key, length))
                    continue
                try:
                    char = child_key.decode("utf-8")
                except UnicodeDecodeError:
                    continue  # a surrogate or overlong form: no text walks here
                value = self.string(units[child_base] & 0x7FFFFFFF) if is_key else None
                yield char, child_base, value

    def transform(self, chunk: str) -> str | None:
        """The replacement of the shortest key that is a prefix of ``chunk``, if any."""
        units = self._units
        pos = self._root
        for byte in chunk.encode("utf-8"):
            if byte == 0:
                break
            pos ^= byte
            unit = units[pos]
            if unit & 0x800000FF != byte:
                return None
            pos ^= _offset(unit)
            if (unit >> 8) & 1:
                return self.string(units[pos] & 0x7FFFFFFF)
        return None


def _grapheme_keys(charsmap: Charsmap) -> re.Pattern[str]:
    """Where a grapheme of several chars may start on a key, which is where applying the map
    per grapheme differs from applying it per char: at a char that is a key (the library then
    replaces the whole grapheme) and joins the next char (it may join by the classes of the
    two: itself in :data:`_LEFT`, or the next in :data:`_RIGHT`); or at the first two chars
    of a longer key. Chars whose class the oracle and `regex` disagree on (stand-ins) count as
    joining both ways; beyond the BMP, every next char counts as joining."""
    singles = {chr(c) for c in charsmap.chars}
    stand_ins = {chr(c) for c in STAND_INS}
    joins_next = {c for c in singles if c in stand_ins or regex.match(f"[{_LEFT}]", c)}
    firsts, seconds = charsmap.starts, charsmap.seconds
    if not singles and not seconds:
        return re.compile("(?!)")
    # One class first, so that the search skips in C to the rare chars that may matter (a
    # key's char, or a char that goes on a longer key); the lookarounds then check the rest.
    # The class holds the BMP ones and every char beyond the BMP (one range: `re` scans a
    # class's ranges beyond the BMP one by one), so each check tests the char's own class.
    checks = []
    if joins_next:
        checks.append(f"(?<=[{ranges(joins_next)}])")
    if singles:
        joins_previous = ranges(_joining()[1])
        checks.append(f"(?<=[{ranges(singles)}])(?=[{joins_previous}]|{BEYOND_BMP})")
    if seconds:
        checks.append(f"(?<=[{ranges(firsts)}][{ranges(seconds)}])")
    lead = ranges(c for c in singles | seconds if c <= "\uffff")
    if any(c > "\uffff" for c in singles | seconds):
        lead += "\U00010000-\U0010ffff"
    return re.compile(f"[{lead}](?:{'|'.join(checks)})", re.DOTALL)


class PrecompiledMap:
    """A parsed charsmap, applied as `tokenizers`' ``Precompiled`` normalizer applies it."""

    def __init__(self, charsmap: Charsmap) -> None:
        self.charsmap = charsmap
        self._chars = charsmap.chars
        self._starts = charsmap.starts | {chr(c) for c in charsmap.chars}
        # Most text holds few of the chars the map changes: only those are replaced.
        self._per_char = SparseTranslate(charsmap.chars)
        self._grapheme_keys = _grapheme_keys(charsmap)

    def normalize(self, text: str) -> str:
        """``text`` with the charsmap applied grapheme by grapheme, as the library does."""
        if text.isascii():
            if "\r\n" not in text:
                return self._per_char(text)
        elif not _may_join(text):
            return self._per_char(text)
        keys = self._grapheme_keys
        found = keys.search(text)
        if found is None:
            return self._per_char(text)
        # Only the stretch of joining chars around each such place needs graphemes: it starts
        # and ends on boundaries no rule looks across (see _stretch), the rest goes char by char.
        out = []
        done = 0  # text[:done] is in out
        while found is not None:
            start, end = _stretch(text, found.start())
            start = max(start, done)
            out.append(self._per_char(text[done:start]))
            out.append(self._by_graphemes(text[start:end]))
            done = end
            found = keys.search(text, end)
        out.append(self._per_char(text[done:]))
        return "".join(out)

    def _by_graphemes(self, text: str) -> str:
        """:meth:`normalize` of ``text``, grapheme by grapheme wherever a cluster may hold
        several chars."""
        # Clusters are found on ``seg`` (the oracle's classes, as chars regex knows) and cut
        # out of ``text`` by length. Only a cluster of several chars whose first char starts
        # a key is replaced as a whole; every other stretch is replaced char by char, in one
        # call per stretch.
        seg = text if _STAND_IN_CHARS.search(text) is None else text.translate(STAND_INS)
        starts = self._starts
        out = []
        at = plain = 0  # ``text[plain:at]`` waits to be replaced char by char
        for i, part in enumerate(_JOINS.split(seg)):
            original = text[at : at + len(part)]
            at += len(part)
            if i % 2 == 0 or starts.isdisjoint(original[:-1]):
                continue
            lengths = _cluster_lengths(part)
            if len(lengths) == len(part):
                continue
            out.append(self._per_char(text[plain : at - len(part)]))
            plain = at
            start = 0
            for length in lengths:
                grapheme = original[start : start + length]
                start += length
                if length > 1 and grapheme[0] in starts and len(grapheme.encode("utf-8")) < 6:
                    found = self.charsmap.transform(grapheme)
                    if found is not None:
                        out.append(found)
                        continue
                out.append(self._per_char(grapheme))
        out.append(self._per_char(text[plain:]))
        return "".join(out)

    def changes(self, text: str) -> Iterator[int]:
        """The ``transform`` change of each char of ``normalize(text)``, as the library computes
        them (lazily, grapheme by grapheme).

        A replacement's chars replace the old ones (0); extra new chars are inserted (1), and
        missing ones are removed by the char before, which may be the previous grapheme's last
        char. A replacement emptying the first grapheme records nothing, so the chars after it
        take its alignment.
        """
        chars = self._chars
        pending: list[int] = []  # the last entry may still be lowered by the next grapheme
        for grapheme in self._graphemes(text):
            found = None
            if len(grapheme) == 1:
                found = chars.get(ord(grapheme))
            elif grapheme[0] in self._starts and len(grapheme.encode("utf-8")) < 6:
                found = self.charsmap.transform(grapheme)
            if found is not None:
                _replace_changes(pending, len(grapheme), len(found))
            else:
                for ch in grapheme:
                    new = chars.get(ord(ch))
                    if new is None:
                        pending.append(0)
                    else:
                        _replace_changes(pending, 1, len(new))
            if len(pending) > 1:
                yield from pending[:-1]
                del pending[:-1]
        yield from pending

    @staticmethod
    def _graphemes(text: str) -> Iterator[str]:
        """The grapheme clusters of ``text``, segmented in growing windows so that reading the
        first few costs little on a long text. A boundary depends only on the chars up to the
        one after it, and segmenting again from a boundary finds the same clusters, so every
        cluster but a window's last one is final."""
        start, size, n = 0, 64, len(text)
        while start < n:
            window = text[start : start + size]
            if _STAND_IN_CHARS.search(window) is not None:
                window = window.translate(STAND_INS)
            lengths = _cluster_lengths(window)
            if start + size < n:
                lengths.pop()  # it may go on past the window
            for length in lengths:
                yield text[start : start + length]
                start += length
            size *= 4


def _replace_changes(pending: list[int], old: int, new: int) -> None:
    """The library's ``replace`` of ``old`` chars by ``new`` ones, as changes."""
    pending.extend([0] * new)
    if new > old:
        pending[len(pending) - (new - old) :] = [1] * (new - old)
    elif new < old and pending:
        pending[-1] -= old - new


def decode_charsmap(text: str) -> bytes:
    """The bytes of a ``precompiled_charsmap`` field (standard base64 with padding)."""
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise CharsmapError(f"not standard base64: {exc}") from exc


class Precompiled(Normalizer):
    """SentencePiece's precompiled charsmap, per grapheme cluster (see :class:`PrecompiledMap`)."""

    def __init__(self, charsmap: Charsmap) -> None:
        self.map = PrecompiledMap(charsmap)

    def normalize(self, text: str) -> str:
        return self.map.normalize(text)

    def leading_at_origin(self, text: str, count: int) -> int:
        return leading_through(self.map.changes(text), count)

    def align(self, s: Aligned) -> Aligned:
        out = self.normalize(s.text)
        if out == s.text:
            return s  # the library transforms only a modified text: the same alignments
        return s.transform(zip(out, self.map.changes(s.text)))

    @classmethod
    def from_spec(cls, spec: Spec) -> Precompiled:
        text = spec.string("precompiled_charsmap")
        try:
            check_regex_tables()
            return cls(Charsmap(decode_charsmap(text)))
        except CharsmapError as exc:
            # tokenizers panics on every one of these
            raise spec.fail("precompiled_charsmap", text[:40], f"unusable charsmap: {exc}") from exc
