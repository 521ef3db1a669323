"""Added tokens: their ids, and splitting a text around them (the first stage of encode).

The rules follow `tokenizers` (TOKENIZER_JSON.md §1.2-1.3): ids come from the library's own
assignment, never from the file's ``id`` field; tokens with ``normalized: false`` are found in the
raw text, then the normalizer runs on each remaining fragment alone, then tokens with
``normalized: true`` are found in the normalized fragments. Matching is leftmost-longest and
non-overlapping; a match that breaks ``single_word`` is dropped without retrying a shorter one.
"""

from __future__ import annotations

import contextlib
import functools
import re
from collections.abc import Callable, Iterable, Iterator

from ._tables.onig import RANGES
from .errors import EncodeError, TokenizerFileError
from .normalizers.base import Normalizer
from .normalizers.sequence import Sequence
from .normalizers.strip import WHITE_SPACE
from .utils.spec import Spec

# Rust's regex `\s` (White_Space), used for lstrip / rstrip.
WHITESPACE = frozenset(WHITE_SPACE)


@functools.lru_cache(maxsize=1)
def _rust_word_chars() -> frozenset[int]:
    """Rust regex's Unicode ``\\w``, which decides ``single_word``."""
    out = set()
    for item in RANGES["rust_w"].split():
        a, _, b = item.partition("-")
        out.update(range(int(a, 16), int(b or a, 16) + 1))
    return frozenset(out)


def is_word_char(ch: str) -> bool:
    return ord(ch) in _rust_word_chars()


# An added token's fields, in the order a tokenizer.json lists them
TOKEN_FIELDS = ("content", "single_word", "lstrip", "rstrip", "normalized", "special")


def ignore_unknown_options(options: dict) -> None:
    """What the library's binding does with a keyword it does not know (AddedToken,
    Encoding.pad): it says so on standard output and goes on."""
    for key in options:
        print(f"Ignored unknown kwarg option {key}")


class AddedToken:
    """A token added to a tokenizer, as ``tokenizers.AddedToken``: ``content`` and its flags.

    The flags are keywords, as the library takes them; ``normalized`` left unset is ``not
    special`` (so False for a token given to ``add_special_tokens``). ``content`` and
    ``special`` can be set, the other flags only read. Equal tokens have equal content and
    flags; the hash is the content's, as in the library.
    """

    __slots__ = ("content", "special", "_single_word", "_lstrip", "_rstrip", "_normalized")

    def __init__(
        self,
        content: str | None = None,
        *,
        single_word: bool = False,
        lstrip: bool = False,
        rstrip: bool = False,
        normalized: bool | None = None,
        special: bool = False,
        **unknown: object,
    ) -> None:
        ignore_unknown_options(unknown)
        self.content = "" if content is None else content
        self.special = bool(special)
        self._single_word = bool(single_word)
        self._lstrip = bool(lstrip)
        self._rstrip = bool(rstrip)
        self._normalized = None if normalized is None else bool(normalized)

    @property
    def single_word(self) -> bool:
        return self._single_word

    @property
    def lstrip(self) -> bool:
        return self._lstrip

    @property
    def rstrip(self) -> bool:
        return self._rstrip

    @property
    def normalized(self) -> bool:
        return not self.special if self._normalized is None else self._normalized

    def _key(self) -> tuple:
        return tuple(getattr(self, name) for name in TOKEN_FIELDS)

    def frozen(self) -> AddedToken:
        """A copy with every flag set, which a later change of this one leaves as it is."""
        return AddedToken(**self.as_dict())

    def as_dict(self) -> dict:
        """The token's fields as a tokenizer.json entry lists them (without the id)."""
        return dict(zip(TOKEN_FIELDS, self._key()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AddedToken):
            return NotImplemented
        return self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self.content)

    # the library answers False to every ordering, rather than refusing to order
    def __lt__(self, other: object) -> bool:
        return False

    __le__ = __gt__ = __ge__ = __lt__

    def __str__(self) -> str:
        return self.content

    def __repr__(self) -> str:
        return (
            f'AddedToken("{self.content}", rstrip={self.rstrip}, lstrip={self.lstrip}, '
            f"single_word={self.single_word}, normalized={self.normalized}, "
            f"special={self.special})"
        )

    def __getstate__(self) -> dict:
        return self.as_dict()

    def __setstate__(self, state: dict) -> None:
        self.__init__(state.get("content"), **{k: v for k, v in state.items() if k != "content"})


Fragment = tuple[str, "int | None"]  # (text, added-token id or None)


class AddedVocabulary:
    """The added tokens of one tokenizer, with their ids as `tokenizers` assigns them."""

    def __init__(
        self,
        entries: list[AddedToken],
        model_token_to_id: Callable[[str], int | None],
        model_vocab_size: int,
        normalizer: Normalizer | None,
    ) -> None:
        self.content_to_id: dict[str, int] = {}
        self.tokens_by_id: dict[int, AddedToken] = {}
        self.special_contents: set[str] = set()
        self.normalized_content: dict[int, str] = {}
        # a normalized added token the normalizer maps to "" (e.g. "\x1f" under clean_text)
        self.emptied: AddedToken | None = None
        # the contents the model's vocab lacks (what get_vocab_size counts beyond the model's)
        self.beyond_model: set[str] = set()
        self.add(entries, model_token_to_id, model_vocab_size, normalizer)

    def add(
        self,
        entries: Iterable[AddedToken],
        model_token_to_id: Callable[[str], int | None],
        model_vocab_size: int,
        normalizer: Normalizer | None,
    ) -> int:
        """Add ``entries`` as the library's ``AddedVocabulary::add_tokens`` does (loading a file
        adds all its entries in one call) and return how many it counts as added: every entry
        but the empty ones and those equal to the token already held for their content. New
        ids follow the model's vocab, or the largest added id when that is beyond it."""
        with self._unchanged_on_error():
            top = max(self.tokens_by_id, default=None)
            if top is None:
                next_id = model_vocab_size
            elif top >= model_vocab_size or model_vocab_size == 0:
                next_id = top + 1
            else:
                next_id = model_vocab_size
            counted = 0
            for given in entries:
                token = given.frozen()
                if not token.content:
                    continue
                known = self.content_to_id.get(token.content)
                if known is not None and self.tokens_by_id.get(known) == token:
                    continue
                counted += 1
                new_id = known if known is not None else model_token_to_id(token.content)
                if new_id is None:
                    new_id = next_id
                    next_id += 1
                    self.beyond_model.add(token.content)
                if token.normalized and normalizer is not None:
                    normed = normalizer.normalize(token.content)
                    if normed != token.content:
                        self.normalized_content[new_id] = normed
                self.content_to_id[token.content] = new_id
                if token.special:
                    self.special_contents.add(token.content)
                self.tokens_by_id[new_id] = token
            self._refresh()
            return counted

    @contextlib.contextmanager
    def _unchanged_on_error(self) -> Iterator[None]:
        """Puts back what the block changed when it raises (a refused token changes nothing);
        in place, since the matchers hold these collections."""
        held = (
            self.content_to_id,
            self.tokens_by_id,
            self.special_contents,
            self.normalized_content,
            self.beyond_model,
        )
        saved = [x.copy() for x in held]
        emptied = self.emptied
        try:
            yield
        except BaseException:
            for now, before in zip(held, saved):
                now.clear()
                now.update(before)
            self.emptied = emptied
            raise

    def _refresh(self) -> None:
        """The matchers of the tokens held (the library's ``refresh_added_tokens``)."""
        raw: dict[str, int] = {}
        normalized: dict[str, int] = {}
        self.emptied = None
        for token_id, token in self.tokens_by_id.items():
            if token.normalized:
                pattern = self.normalized_content.get(token_id, token.content)
                if pattern:  # an emptied token matches everywhere: see _every_char
                    _add_pattern(normalized, pattern, token_id)
                else:
                    # tokenizers' matcher then finds it, empty, between every two bytes of
                    # the normalized text: see split
                    self.emptied = token
            else:
                _add_pattern(raw, token.content, token_id)
        if self.emptied is not None and normalized:
            raise TokenizerFileError(
                "added_tokens",
                self.emptied.content,
                "a normalized added token the normalizer empties, beside other normalized "
                "added tokens: tokenizers' matcher then loops without end on some texts",
            )
        self.raw_matcher = _Matcher(raw, self.tokens_by_id, self.special_contents)
        self.normalized_matcher = _Matcher(normalized, self.tokens_by_id, self.special_contents)

    def id_to_string(self, token_id: int) -> str | None:
        """What decode shows for an added id (the normalized form, as tokenizers 0.23 does)."""
        token = self.tokens_by_id.get(token_id)
        if token is None:
            return None
        return self.normalized_content.get(token_id, token.content)

    def split(
        self, text: str, normalizer: Normalizer | None, encode_special_tokens: bool
    ) -> list[tuple[str, int | None, int | LeadingCount]]:
        """Split ``text`` into (fragment, added id or None, at_start) with fragments normalized.

        ``at_start`` counts the leading chars of the fragment that `tokenizers` aligns to
        offset 0 of ``text`` (0 for most fragments; a :class:`LeadingCount`, computed only if
        asked, where the normalizer decides).
        """
        # a fragment after the first is normalized alone, and stays one piece when no
        # normalized token can be found in it
        whole = self.normalized_matcher.regex is None and not self._splits_every_char(
            encode_special_tokens
        )
        raw = self.raw_matcher
        if whole and raw.regex is not None and raw.keeps_every_match(encode_special_tokens):
            parts = raw.regex.split(text)
            if len(parts) > 1:
                return self._split_parts(parts, normalizer, encode_special_tokens)
        out: list[tuple[str, int | None, int | LeadingCount]] = []
        for piece, token_id, start in raw.split(text, encode_special_tokens):
            if token_id is not None:
                out.append((piece, token_id, 0))
                continue
            origin = None
            if normalizer is None:
                normed = piece
            elif start != 0:
                normed = normalizer.normalize(piece)
                if whole:
                    if normed:
                        out.append((normed, None, 0))
                    continue
            elif isinstance(normalizer, Sequence):
                # keep the stages' texts: the exact alignment would otherwise normalize again
                texts = normalizer.stage_texts(piece)
                normed = texts[-1]
                origin = _FirstFragment(piece, normalizer, texts)
            else:
                normed = normalizer.normalize(piece)
                origin = _FirstFragment(piece, normalizer)
            subs = self.normalized_matcher.split(normed, encode_special_tokens)
            if self._splits_every_char(encode_special_tokens):
                subs = _every_char(subs)
            for sub, sub_id, offset in subs:
                if origin is not None:
                    at_start: int | LeadingCount = LeadingCount(origin, offset)
                else:
                    # the first char alone stands at offset 0 of an unchanged fragment
                    at_start = 1 if start == 0 and offset == 0 else 0
                out.append((sub, sub_id, at_start))
        return out

    def _split_parts(
        self, parts: list[str], normalizer: Normalizer | None, encode_special_tokens: bool
    ) -> list[tuple[str, int | None, int | LeadingCount]]:
        """:meth:`split` from the raw matcher's ``re.split`` parts (gap, match, ..., gap) when
        every match is kept and each later gap is one normalized fragment. The first gap, at
        offset 0, holds no match either and goes through :meth:`split` for its alignment."""
        head = parts[0]
        out = self.split(head, normalizer, encode_special_tokens) if head else []
        normalize = str if normalizer is None else normalizer.normalize
        patterns = self.raw_matcher.patterns
        for i in range(1, len(parts), 2):
            match = parts[i]
            out.append((match, patterns[match], 0))
            gap = parts[i + 1]
            if gap:
                normed = normalize(gap)
                if normed:
                    out.append((normed, None, 0))
        return out

    def every_char(
        self, subs: list[tuple[str, int | None, int]], encode_special_tokens: bool
    ) -> Iterable[tuple[str, int | None, int]]:
        """``subs``, the normalized matcher's split of a fragment, as the library leaves it
        (each char a fragment of its own where an added token normalizes to "")."""
        return _every_char(subs) if self._splits_every_char(encode_special_tokens) else subs

    def _splits_every_char(self, encode_special_tokens: bool) -> bool:
        emptied = self.emptied
        return emptied is not None and not (
            encode_special_tokens and emptied.content in self.special_contents
        )


def _every_char(
    subs: Iterable[tuple[str, int | None, int]],
) -> Iterator[tuple[str, int | None, int]]:
    """What tokenizers does with an added token normalized to "": its matcher finds it between
    every two bytes of the text the other added tokens leave, so each char is a fragment of
    its own; inside a multi-byte char that split is not a char boundary and tokenizers panics
    ("AddedVocabulary bad split"), which batchtok reports as an EncodeError."""
    for sub, sub_id, offset in subs:
        if sub_id is not None:
            yield sub, sub_id, offset
            continue
        if not sub.isascii():
            raise EncodeError(
                "a normalized added token is empty after normalization, and tokenizers panics "
                "on a text with a non-ASCII char around it ('AddedVocabulary bad split')"
            )
        for i, char in enumerate(sub):
            yield char, None, offset + i


class _FirstFragment:
    """The fragment at offset 0 of a text, and (once asked) how many leading chars of its
    normalized form `tokenizers` aligns to offset 0."""

    __slots__ = ("normalizer", "raw", "texts", "count")

    def __init__(self, raw: str, normalizer: Normalizer, texts: list[str] | None = None) -> None:
        self.raw, self.normalizer, self.texts = raw, normalizer, texts
        self.count: int | None = None

    def leading(self) -> int:
        if self.count is None:
            if self.texts is not None:
                self.count = self.normalizer.leading_from_stages(self.texts, 1)
                self.texts = None
            else:
                self.count = self.normalizer.leading_at_origin(self.raw, 1)
        return self.count


class LeadingCount:
    """How many leading chars of a normalized sub-fragment stem from offset 0 of the text, as
    an int (``operator.index``) computed on first use: only Metaspace's prepend_scheme "first"
    asks, so other files never pay for the exact alignment."""

    __slots__ = ("_origin", "_offset")

    def __init__(self, origin: _FirstFragment, offset: int) -> None:
        self._origin, self._offset = origin, offset

    def __index__(self) -> int:
        # Chars aligned to offset 0 form a prefix of the normalized fragment.
        return max(0, self._origin.leading() - self._offset)

    def __bool__(self) -> bool:
        return self.__index__() > 0

    def __repr__(self) -> str:
        return f"LeadingCount({self.__index__()})"


def trie_pattern(strings: Iterable[str]) -> str:
    """A regex matching the longest of ``strings`` at the leftmost position.

    The strings are laid out as a trie: at each node the continuations come before the end of
    a shorter string, so backtracking finds the longest match first, and no two branches start
    with the same char, so each position costs one step per char instead of one per string.
    """
    trie: dict = {}
    for text in strings:
        node = trie
        for ch in text:
            node = node.setdefault(ch, {})
        node[""] = True

    def render(node: dict) -> str:
        branches = [re.escape(ch) + render(child) for ch, child in node.items() if ch]
        if "" in node:
            if not branches:
                return ""
            branches.append("")
        if len(branches) == 1:
            return branches[0]
        return "(?:" + "|".join(branches) + ")"

    return render(trie)


def _add_pattern(patterns: dict[str, int], pattern: str, token_id: int) -> None:
    other = patterns.setdefault(pattern, token_id)
    if other != token_id:
        raise TokenizerFileError(
            "added_tokens",
            pattern,
            f"added tokens {other} and {token_id} match the same text; tokenizers picks one of "
            "them at random (hash order) for every match",
        )


class _Matcher:
    """Leftmost-longest matching of a fixed set of strings, with the added-token flags."""

    def __init__(
        self, patterns: dict[str, int], tokens_by_id: dict[int, AddedToken], specials: set[str]
    ) -> None:
        self.patterns = patterns
        self.tokens_by_id = tokens_by_id
        # Content once added as special stays special for encode_special_tokens, even if a
        # later entry with the same content is not (the library never removes it).
        self.specials = specials
        if not patterns:
            self.regex = None
        else:
            try:
                pattern = trie_pattern(patterns)
            except RecursionError:
                # Pathologically deep tries: an alternation ordered longest first is also
                # leftmost-longest for literals, only slower.
                pattern = "|".join(map(re.escape, sorted(patterns, key=len, reverse=True)))
            # one group around the whole pattern, for re.split to keep the matches
            self.regex = re.compile(f"({pattern})")
        tokens = [tokens_by_id[token_id] for token_id in patterns.values()]
        # No token here needs the text around its match: every match is kept as found.
        self.plain = not any(t.single_word or t.lstrip or t.rstrip for t in tokens)
        self.has_special = any(t.content in specials for t in tokens)

    def split(self, text: str, encode_special_tokens: bool) -> list[tuple[str, int | None, int]]:
        """(piece, id or None, start offset) in order; empty pieces are dropped."""
        if self.regex is None or not text:
            return [(text, None, 0)] if text else []
        if self.keeps_every_match(encode_special_tokens):
            return self._split_plain(text)
        return list(self._split_checked(text, encode_special_tokens))

    def keeps_every_match(self, encode_special_tokens: bool) -> bool:
        """Whether every match stands as found (no flag looks around it, no special token is
        left as text)."""
        return self.plain and not (encode_special_tokens and self.has_special)

    def _split_plain(self, text: str) -> list[tuple[str, int | None, int]]:
        """:meth:`split` when every match stands as found: ``re.split`` gives the gaps and
        the matches in turn (gap, match, gap, ..., gap), the same matches as ``finditer``."""
        parts = self.regex.split(text)  # type: ignore[union-attr]
        if len(parts) == 1:
            return [(text, None, 0)]
        patterns = self.patterns
        out: list[tuple[str, int | None, int]] = []
        at = 0
        is_match = False
        for part in parts:
            if is_match:
                out.append((part, patterns[part], at))
            elif part:
                out.append((part, None, at))
            at += len(part)
            is_match = not is_match
        return out

    def _split_checked(
        self, text: str, encode_special_tokens: bool
    ) -> Iterator[tuple[str, int | None, int]]:
        """:meth:`split` with each match's flags applied (single_word, lstrip, rstrip, and
        special tokens left as text under ``encode_special_tokens``)."""
        start_offset = 0
        n = len(text)
        for m in self.regex.finditer(text):
            start, stop = m.span()
            token_id = self.patterns[m.group()]
            token = self.tokens_by_id[token_id]
            if encode_special_tokens and token.content in self.specials:
                continue
            if token.single_word:
                if (start > 0 and is_word_char(text[start - 1])) or (
                    stop < n and is_word_char(text[stop])
                ):
                    continue
            if token.lstrip:
                new_start = start
                while new_start > 0 and text[new_start - 1] in WHITESPACE:
                    new_start -= 1
                start = max(new_start, start_offset)
            if token.rstrip:
                while stop < n and text[stop] in WHITESPACE:
                    stop += 1
            if start_offset < start:
                yield text[start_offset:start], None, start_offset
            yield text[start:stop], token_id, start
            start_offset = stop
        if start_offset < n:
            yield text[start_offset:], None, start_offset

    def contains_any(self, text: str) -> bool:
        return self.regex is not None and self.regex.search(text) is not None


def read_added_tokens(entries: list, spec: Spec) -> list[AddedToken]:
    """Parse the ``added_tokens`` array; every entry needs all seven fields."""
    out = []
    for i, raw in enumerate(entries):
        item = Spec(raw, spec.at(i))
        item.uint("id")  # read and validated, but ids are reassigned as the library does
        token = AddedToken(
            content=item.string("content"),
            single_word=item.boolean("single_word"),
            lstrip=item.boolean("lstrip"),
            rstrip=item.boolean("rstrip"),
            normalized=item.boolean("normalized"),
            special=item.boolean("special"),
        )
        item.finish()
        out.append(token)
    return out
