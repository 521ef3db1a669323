"""Where a BPE model provably merges the two sides of a cut independently (checked at load time).

Files without a pre-tokenizer (Llama-2 style) send a whole text to BPE as one word; when the
proof holds, the tokenizer cuts it here and caches each part on its own.
"""

from __future__ import annotations

import re

import regex

from .bpe import BPE


class BoundarySplitter:
    """Cut a word where BPE provably merges the two sides independently (checked at load time).

    Enabled only when no merge involves a byte-fallback token or the unk token, so every
    symbol spanning a cut would be a vocab token whose text occurs in the word. Two kinds of
    cuts:

    * around *isolated* chars: a char that is a token on its own and occurs in no longer
      token, or (with byte fallback over all 256 bytes) a char that is not in the vocab, can
      never be merged with a neighbour;
    * before each run of ``mark`` (U+2581): a symbol spanning it would be a "crossing" token,
      a non-mark char followed by the mark. Where the vocab has such tokens, a cut is kept
      whole wherever one of them occurs in the word across it.

    Each part then goes through the piece cache on its own.
    """

    @staticmethod
    def for_model(model: BPE) -> BoundarySplitter | None:
        if model.prefix or model.suffix:
            return None
        special = {model.vocab[t] for t in model.byte_token_strings() if t in model.vocab}
        if model.unk_token in model.vocab:
            special.add(model.vocab[model.unk_token])
        if special and any(
            key // model.stride in special or key % model.stride in special for key in model.pairs
        ):
            return None
        return BoundarySplitter(model)

    def __init__(self, model: BPE, mark: str = "\u2581") -> None:
        vocab = model.vocab
        in_longer = set("".join(t for t in vocab if len(t) > 1))
        has_all_bytes = model.byte_fallback and all(t in vocab for t in model.byte_token_strings())
        self.mark = mark if mark in vocab else ""
        if has_all_bytes:
            isolated = "[^" + _char_class(in_longer) + "]"
            joined = "[" + _char_class(in_longer - {mark}) + "]"
        else:
            lone = {t for t in vocab if len(t) == 1} - in_longer - {mark}
            isolated = "[" + _char_class(lone) + "]" if lone else ""
            joined = "[^" + _char_class(lone | {mark}) + "]"
        m = re.escape(self.mark)
        alternatives = [f"{m}*{joined}+", f"{m}+"] if self.mark else [f"{joined}+"]
        if isolated:
            alternatives.append(isolated)
        if not self.mark and not isolated:
            self.active = False
            return
        self.active = True
        self._parts = re.compile("|".join(alternatives))
        crossing_shape = re.compile(f"[^{re.escape(mark)}]{re.escape(mark)}")
        crossing = [t for t in vocab if mark in t and crossing_shape.search(t)]
        longest_first = sorted(crossing, key=len, reverse=True)
        self._crossing = (
            regex.compile("|".join(map(regex.escape, longest_first)))
            if crossing and self.mark
            else None
        )

    def split(self, word: str) -> list[str]:
        pieces = self._parts.findall(word)
        if self._crossing is None or len(pieces) < 2 or not self._crossing.search(word):
            return pieces
        unsafe: set[int] = set()
        for m in self._crossing.finditer(word, overlapped=True):
            unsafe.update(range(m.start() + 1, m.end()))
        out = [pieces[0]]
        at = len(pieces[0])
        for piece in pieces[1:]:
            if at in unsafe:
                out[-1] += piece
            else:
                out.append(piece)
            at += len(piece)
        return out


def _char_class(chars) -> str:
    return "".join(re.escape(c) for c in sorted(chars))
