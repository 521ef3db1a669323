"""Tokenizer files built at test time by training on the project's corpora.

Three families, all written by the oracle (``tokenizers``) or by transformers' own
converters, never by hand:

* SentencePiece unigram models (``sentencepiece``), converted to tokenizer.json by
  ``transformers.convert_slow_tokenizer``'s ``T5Converter``, ``AlbertConverter``,
  ``XLMRobertaConverter`` and the generic SentencePiece path.  transformers 5 has no
  slow SentencePiece tokenizer classes, so each converter gets a small stand-in
  carrying the attributes it reads.
* Models trained by ``tokenizers``' own trainers: WordLevel, WordPiece, Unigram and
  BPE (CLIP- and GPT-1-shaped through transformers' converters, and one with a
  ``##`` continuing-subword prefix).
* "Kitchen-sink" files: the trained models re-dressed with every remaining
  normalizer and pre-tokenizer, every added-token flag combination, and truncation
  and padding stored in the JSON.

:func:`fixture_path` returns ``$BATCHTOK_CACHE/fixtures/NAME.KEY.json``.  ``KEY``
hashes everything that decides the file's bytes: this module's source, the
versions of the packages that build it, the training text and the name.  A file
is built once under a per-name lock, checked to load in the oracle, and published
atomically; older keys of the same name are deleted.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import io
import itertools
import json
import pathlib
import tempfile
import warnings
from collections.abc import Callable, Iterator
from typing import Any

from tests.support.fixtures import atomic_write_bytes, cache_root, file_lock

#: Packages whose versions decide the built files' bytes.
BUILD_PACKAGES = ("tokenizers", "sentencepiece", "transformers", "protobuf")

#: Documents per corpus kind in the training text (each cut at 2,000 chars): ~3 MB.
CORPUS_SAMPLE = (("english", 600), ("code", 400), ("multilingual", 700))
#: SentencePiece trains on a third of it: its trainer is slower than tokenizers'.
SPM_SAMPLE = (("english", 200), ("code", 120), ("multilingual", 250))

SPM_OPTIONS: dict[str, Any] = {
    "model_type": "unigram",
    "vocab_size": 3000,
    "num_threads": 2,
    "character_coverage": 0.9995,
    "shuffle_input_sentence": False,
    "input_sentence_size": 0,
    "seed_sentencepiece_size": 50000,
    "shrinking_factor": 0.6,
    "num_sub_iterations": 1,
    "max_sentence_length": 8192,
    "minloglevel": 2,
}
SPM_SEED = 20240229

#: SentencePiece layouts of the models the converters expect (special ids, normalization).
SPM_LAYOUTS: dict[str, dict[str, Any]] = {
    "t5": {"pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1},
    "t5-bytefallback": {"pad_id": 0, "eos_id": 1, "unk_id": 2, "bos_id": -1, "byte_fallback": True},
    "albert": {
        "pad_id": 0,
        "unk_id": 1,
        "bos_id": -1,
        "eos_id": -1,
        "control_symbols": "[CLS],[SEP],[MASK]",
        "normalization_rule_name": "nmt_nfkc_cf",
    },
    "xlmr": {"unk_id": 0, "bos_id": 1, "eos_id": 2, "pad_id": -1},
}


class FixtureBuildError(RuntimeError):
    """A trained fixture could not be built, or the oracle refused the result."""


# ---------------------------------------------------------------------------
# Cache keys and the build-once machinery


@functools.cache
def training_docs(sample: tuple[tuple[str, int], ...] = CORPUS_SAMPLE) -> tuple[str, ...]:
    """The training lines (non-blank lines of the sampled documents), in a fixed order."""
    from tests.support import corpora

    docs = [doc for kind, n in sample for doc in corpora.sample_docs(kind, n, seed=3)]
    return tuple(line for doc in docs for line in doc.split("\n") if line.strip())


@functools.cache
def corpus_digest() -> str:
    """sha256 of every training line (the SentencePiece sample is a part of them)."""
    h = hashlib.sha256()
    for sample in (CORPUS_SAMPLE, SPM_SAMPLE):
        for line in training_docs(sample):
            h.update(line.encode())
            h.update(b"\n")
        h.update(b"\0")
    return h.hexdigest()


def package_versions() -> dict[str, str]:
    """Installed versions of :data:`BUILD_PACKAGES`."""
    return {p: importlib.metadata.version(p) for p in BUILD_PACKAGES}


@functools.cache
def source_digest() -> str:
    """sha256 of this module's source: the recipes live here."""
    return hashlib.sha256(pathlib.Path(__file__).read_bytes()).hexdigest()


def cache_key(
    name: str,
    *,
    versions: dict[str, str] | None = None,
    corpus: str | None = None,
    source: str | None = None,
) -> str:
    """The cache key of fixture ``name``; each keyword overrides one input (for tests)."""
    inputs = {
        "name": name,
        "versions": package_versions() if versions is None else versions,
        "corpus": corpus_digest() if corpus is None else corpus,
        "source": source_digest() if source is None else source,
    }
    blob = json.dumps(inputs, sort_keys=True).encode()
    return hashlib.sha256(blob).hexdigest()[:20]


def fixtures_dir() -> pathlib.Path:
    return cache_root() / "fixtures"


def build_cached(name: str, key: str, build: Callable[[], str]) -> pathlib.Path:
    """Path of ``NAME.KEY.json``, calling ``build`` (under a lock) if it is not cached.

    The built text must load in the oracle; other keys of ``name`` are removed.
    """
    target = fixtures_dir() / f"{name}.{key}.json"
    if target.is_file():
        return target
    with file_lock(fixtures_dir() / f".{name}.lock"):
        if target.is_file():  # built by another process while we waited
            return target
        text = build()
        check_loads(name, text)
        atomic_write_bytes(target, text.encode())
        for stale in fixtures_dir().glob(f"{name}.*.json"):
            if stale != target:
                stale.unlink(missing_ok=True)
    return target


def check_loads(name: str, text: str) -> None:
    """Raise :class:`FixtureBuildError` unless the oracle loads ``text``."""
    from tokenizers import Tokenizer

    try:
        Tokenizer.from_str(text)
    except Exception as exc:
        raise FixtureBuildError(f"the oracle refuses the built {name!r}: {exc}") from exc


# ---------------------------------------------------------------------------
# SentencePiece unigram models through transformers' converters


@functools.cache
def spm_model(layout: str) -> bytes:
    """A serialized SentencePiece unigram model trained with ``SPM_LAYOUTS[layout]``."""
    import sentencepiece as spm

    out = io.BytesIO()
    spm.set_random_generator_seed(SPM_SEED)
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(training_docs(SPM_SAMPLE)),
        model_writer=out,
        **SPM_OPTIONS,
        **SPM_LAYOUTS[layout],
    )
    return out.getvalue()


class SlowTokenizerStandIn:
    """What transformers' converters read from a slow tokenizer: attributes, token ids."""

    def __init__(self, **attrs: Any) -> None:
        self.__dict__.update(attrs)
        self.ids: dict[str, int] = {}

    def convert_tokens_to_ids(self, token: str) -> int:
        return self.ids[token]


def _convert(converter_cls: type, layout: str, **attrs: Any) -> Any:
    """Run ``converter_cls`` on the ``layout`` model; return the oracle Tokenizer."""
    with tempfile.TemporaryDirectory(prefix="batchtok-spm-") as tmp:
        vocab_file = pathlib.Path(tmp) / "spiece.model"
        vocab_file.write_bytes(spm_model(layout))
        stand_in = SlowTokenizerStandIn(vocab_file=str(vocab_file), **attrs)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # the byte-fallback notice
            converter = converter_cls(stand_in)
            vocab = converter.vocab(converter.proto)
            stand_in.ids = {piece: i for i, (piece, _) in enumerate(vocab)}
            return converter.converted()


def _special(content: str, **flags: bool) -> Any:
    from tokenizers import AddedToken

    return AddedToken(content, **{"special": True, "normalized": False, **flags})


def build_t5(layout: str = "t5", legacy: bool = True) -> str:
    """T5's layout: ``</s>`` appended, 100 ``<extra_id_N>`` special tokens."""
    from transformers.convert_slow_tokenizer import T5Converter

    class Converter(T5Converter):
        handle_byte_fallback = SPM_LAYOUTS[layout].get("byte_fallback", False)

    tok = _convert(Converter, layout, _extra_ids=100, legacy=legacy)
    tok.add_special_tokens([_special(t) for t in ("<pad>", "</s>", "<unk>")])
    tok.add_special_tokens([_special(f"<extra_id_{i}>") for i in range(99, -1, -1)])
    return tok.to_str()


def build_albert() -> str:
    """ALBERT: lowercases and strips accents; ``[CLS] $A [SEP]`` template."""
    from transformers.convert_slow_tokenizer import AlbertConverter

    tok = _convert(AlbertConverter, "albert", do_lower_case=True, keep_accents=False)
    tok.add_special_tokens([_special(t) for t in ("<pad>", "<unk>", "[CLS]", "[SEP]")])
    tok.add_special_tokens([_special("[MASK]", lstrip=True)])
    return tok.to_str()


def build_xlmr() -> str:
    """XLM-RoBERTa: fairseq's id layout, ``<mask>`` appended, ``<s> $A </s>`` template."""
    from transformers.convert_slow_tokenizer import XLMRobertaConverter

    tok = _convert(XLMRobertaConverter, "xlmr")
    tok.add_special_tokens([_special(t) for t in ("<s>", "<pad>", "</s>", "<unk>")])
    tok.add_special_tokens([_special("<mask>", lstrip=True)])
    return tok.to_str()


def build_spm_generic_bytefallback() -> str:
    """transformers' model-agnostic SentencePiece path (ByteFallback decoder)."""
    from transformers.convert_slow_tokenizer import SentencePieceExtractor, SpmConverter

    with tempfile.TemporaryDirectory(prefix="batchtok-spm-") as tmp:
        vocab_file = pathlib.Path(tmp) / "spiece.model"
        vocab_file.write_bytes(spm_model("t5-bytefallback"))
        proto = SentencePieceExtractor(str(vocab_file)).proto
    vocab = [(p.piece, p.score) for p in proto.pieces]
    tok = SpmConverter.build_tokenizer_from_spm_proto(proto, vocab, legacy=False)
    tok.add_special_tokens([_special(t) for t in ("<pad>", "</s>", "<unk>")])
    return tok.to_str()


# ---------------------------------------------------------------------------
# Models trained by tokenizers' own trainers


def _train(tok: Any, trainer: Any, sample: tuple[tuple[str, int], ...] = CORPUS_SAMPLE) -> Any:
    tok.train_from_iterator(training_docs(sample), trainer=trainer)
    return tok


def _merges(tok: Any) -> list[tuple[str, str]]:
    merges = json.loads(tok.to_str())["model"]["merges"]
    return [tuple(m.split(" ", 1)) if isinstance(m, str) else tuple(m) for m in merges]


def build_wordlevel() -> str:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFD(), normalizers.StripAccents()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    specials = ["[UNK]", "[PAD]", "[CLS]", "[SEP]"]
    trainer = trainers.WordLevelTrainer(
        vocab_size=8000, min_frequency=2, special_tokens=specials, show_progress=False
    )
    _train(tok, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[(t, tok.token_to_id(t)) for t in ("[CLS]", "[SEP]")],
    )
    return tok.to_str()


BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]


def build_wordpiece(lowercase: bool, template: bool) -> str:
    """BERT's pipeline: BertNormalizer, BertPreTokenizer, WordPiece, a BERT post-processor."""
    from tokenizers import (
        Tokenizer,
        decoders,
        models,
        normalizers,
        pre_tokenizers,
        processors,
        trainers,
    )

    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=lowercase)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(
        vocab_size=6000, special_tokens=BERT_SPECIALS, show_progress=False
    )
    _train(tok, trainer)
    cls, sep = (("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]")))
    if template:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS]:0 $A:0 [SEP]:0",
            pair="[CLS]:0 $A:0 [SEP]:0 $B:1 [SEP]:1",
            special_tokens=[cls, sep],
        )
    else:
        tok.post_processor = processors.BertProcessing(sep, cls)
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok.to_str()


def build_unigram() -> str:
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    # Unigram training is the slow one (minutes on the full sample): smaller text and seeds.
    trainer = trainers.UnigramTrainer(
        vocab_size=3000,
        special_tokens=["<unk>", "<s>", "</s>", "<pad>"],
        unk_token="<unk>",
        max_piece_length=12,
        seed_size=50000,
        shrinking_factor=0.6,
        n_sub_iterations=1,
        show_progress=False,
    )
    return _train(tok, trainer, SPM_SAMPLE).to_str()


CLIP_SPECIALS = ["<|startoftext|>", "<|endoftext|>"]


def build_clip() -> str:
    """CLIP's shape, trained with BpeTrainer then written by transformers' CLIPConverter."""
    from tokenizers import Tokenizer, models, trainers
    from tokenizers.pre_tokenizers import ByteLevel
    from transformers.convert_slow_tokenizer import CLIPConverter

    # Train inside the very pipeline the converter writes (its normalizer and pre-tokenizer).
    template = _clip_like(CLIPConverter, {"<|endoftext|>": 0}, [])
    tok = Tokenizer(models.BPE(unk_token="<|endoftext|>", end_of_word_suffix="</w>"))
    tok.normalizer = template.normalizer
    tok.pre_tokenizer = template.pre_tokenizer
    trainer = trainers.BpeTrainer(
        vocab_size=6000,
        special_tokens=CLIP_SPECIALS,
        end_of_word_suffix="</w>",
        initial_alphabet=ByteLevel.alphabet(),
        show_progress=False,
    )
    _train(tok, trainer)
    out = _clip_like(CLIPConverter, tok.get_vocab(), _merges(tok))
    out.add_special_tokens([_special(t, normalized=True) for t in CLIP_SPECIALS])
    return out.to_str()


def _clip_like(converter_cls: type, vocab: dict[str, int], merges: list[tuple[str, str]]) -> Any:
    eos, bos = "<|endoftext|>", "<|startoftext|>"
    stand_in = SlowTokenizerStandIn(
        encoder=vocab,
        bpe_ranks={m: i for i, m in enumerate(merges)},
        unk_token=eos,
        eos_token=eos,
        eos_token_id=vocab.get(eos, 0),
        bos_token=bos,
        bos_token_id=vocab.get(bos, 0),
    )
    return converter_cls(stand_in).converted()


def build_gpt1() -> str:
    """GPT-1's shape: BPE with a ``</w>`` suffix, written by transformers' OpenAIGPTConverter."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers.convert_slow_tokenizer import OpenAIGPTConverter

    tok = Tokenizer(models.BPE(unk_token="<unk>", end_of_word_suffix="</w>"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.BpeTrainer(
        vocab_size=6000, special_tokens=["<unk>"], end_of_word_suffix="</w>", show_progress=False
    )
    _train(tok, trainer)
    stand_in = SlowTokenizerStandIn(
        encoder=tok.get_vocab(),
        bpe_ranks={m: i for i, m in enumerate(_merges(tok))},
        unk_token="<unk>",
    )
    return OpenAIGPTConverter(stand_in).converted().to_str()


def build_bpe_prefix() -> str:
    """BPE whose non-initial subwords carry a ``##`` prefix, decoded by the WordPiece decoder."""
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers

    tok = Tokenizer(models.BPE(unk_token="[UNK]", continuing_subword_prefix="##"))
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.BpeTrainer(
        vocab_size=6000,
        special_tokens=["[UNK]", "[PAD]"],
        continuing_subword_prefix="##",
        show_progress=False,
    )
    return _train(tok, trainer).to_str()


# ---------------------------------------------------------------------------
# Kitchen sinks: trained models with other normalizers, pre-tokenizers, added tokens,
# truncation and padding.

#: (special, single_word, lstrip, rstrip, normalized), all 32 combinations.
ADDED_FLAGS = tuple(itertools.product((False, True), repeat=5))


def flag_tokens(tag: str) -> Iterator[Any]:
    """Two added tokens per flag combination: a bracketed one and a word-like one."""
    from tokenizers import AddedToken

    for i, (special, single_word, lstrip, rstrip, normalized) in enumerate(ADDED_FLAGS):
        flags = {
            "special": special,
            "single_word": single_word,
            "lstrip": lstrip,
            "rstrip": rstrip,
            "normalized": normalized,
        }
        yield AddedToken(f"<{tag}{i:02d}>", **flags)
        yield AddedToken(f"{tag.title()}Tok{i:02d}", **flags)


def _base(name: str) -> Any:
    from tokenizers import Tokenizer

    return Tokenizer.from_file(str(fixture_path(name)))


def _dress(
    base: str,
    normalizer: Any,
    pre_tokenizer: Any,
    decoder: Any = None,
    truncation: dict[str, Any] | None = None,
    padding: dict[str, Any] | None = None,
    tag: str = "ks",
) -> str:
    tok = _base(base)
    tok.normalizer = normalizer
    tok.pre_tokenizer = pre_tokenizer
    if decoder is not None:
        tok.decoder = decoder
    tok.add_tokens(list(flag_tokens(tag)))
    if truncation is not None:
        tok.enable_truncation(**truncation)
    if padding is not None:
        tok.enable_padding(**padding)
    return tok.to_str()


def _precompiled() -> Any:
    """The Precompiled normalizer of the converted T5 file (nmt_nfkc)."""
    from tokenizers import normalizers

    spec = json.loads(fixture_path("t5-unigram").read_text(encoding="utf-8"))["normalizer"]
    charsmap = next(n for n in spec["normalizers"] if n["type"] == "Precompiled")
    return normalizers.Precompiled(_b64(charsmap["precompiled_charsmap"]))


def _b64(text: str) -> bytes:
    import base64

    return base64.b64decode(text)


def _kitchen_sinks() -> dict[str, Callable[[], str]]:
    from tokenizers import Regex, decoders
    from tokenizers import normalizers as n
    from tokenizers import pre_tokenizers as p

    def metaspace(scheme: str, split: bool) -> Callable[[], str]:
        def build() -> str:
            norms = {
                ("always", True): [_precompiled(), n.Strip(), n.Replace(Regex(" {2,}"), " ")],
                ("always", False): [n.NFKC(), n.Lowercase()],
                ("first", True): [n.Nmt(), n.NFC()],
                ("first", False): [n.Replace("``", '"'), n.NFKD(), n.StripAccents()],
                ("never", True): [n.Prepend("\u2581"), n.NFD()],
                ("never", False): [n.Strip(left=True, right=False), _precompiled()],
            }[scheme, split]
            pre = p.Metaspace(prepend_scheme=scheme, split=split)
            if not split:
                pre = p.Sequence([p.Digits(individual_digits=True), pre])
            truncation = (
                {"max_length": 48, "stride": 8, "strategy": "longest_first"}
                if split
                else {"max_length": 40, "strategy": "only_first", "direction": "left"}
            )
            padding = (
                {"length": 48, "direction": "left", "pad_id": 3, "pad_token": "<pad>"}
                if scheme == "always"
                else {"pad_to_multiple_of": 16, "pad_id": 3, "pad_token": "<pad>"}
            )
            return _dress(
                "trained-unigram",
                n.Sequence(norms),
                pre,
                decoders.Metaspace(prepend_scheme=scheme, split=split),
                truncation,
                padding if scheme != "never" else None,
                tag=f"m{scheme[0]}{int(split)}",
            )

        return build

    sinks = {
        f"ks-unigram-metaspace-{scheme}-{'split' if split else 'nosplit'}": metaspace(scheme, split)
        for scheme in ("always", "first", "never")
        for split in (True, False)
    }
    sinks["ks-wordpiece-punct-removed"] = lambda: _dress(
        "trained-wordpiece-template",
        n.BertNormalizer(
            clean_text=False, handle_chinese_chars=False, strip_accents=True, lowercase=False
        ),
        p.Sequence([p.WhitespaceSplit(), p.Punctuation("removed")]),
        truncation={"max_length": 32, "stride": 4, "strategy": "only_second"},
        padding={"pad_id": 0, "pad_token": "[PAD]", "pad_type_id": 1},
    )
    sinks["ks-wordpiece-punct-merged"] = lambda: _dress(
        "trained-wordpiece-bert",
        n.BertNormalizer(clean_text=True, handle_chinese_chars=True, lowercase=True),
        p.Sequence([p.Whitespace(), p.Punctuation("merged_with_previous"), p.Digits()]),
        truncation={"max_length": 64, "strategy": "longest_first", "direction": "left"},
        padding={"direction": "left", "pad_to_multiple_of": 8, "pad_id": 0, "pad_token": "[PAD]"},
    )
    sinks["ks-wordlevel-punct-next"] = lambda: _dress(
        "trained-wordlevel",
        n.Sequence([n.NFD(), n.StripAccents(), n.Lowercase()]),
        p.Sequence([p.WhitespaceSplit(), p.Punctuation("merged_with_next")]),
        truncation={"max_length": 24, "stride": 2, "strategy": "only_first"},
        padding={"length": 24, "pad_id": 1, "pad_token": "[PAD]"},
    )
    sinks["ks-wordlevel-scripts"] = lambda: _dress(
        "trained-wordlevel",
        n.Sequence([n.NFKD(), n.BertNormalizer(strip_accents=False, lowercase=False)]),
        p.Sequence([p.UnicodeScripts(), p.Punctuation("contiguous"), p.WhitespaceSplit()]),
    )
    sinks["ks-bpe-bytelevel-chardelimiter"] = lambda: _dress(
        "clip-bpe",
        n.Sequence([n.Lowercase(), n.ByteLevel()]),
        p.CharDelimiterSplit("\u0120"),
        decoders.ByteLevel(),
        truncation={"max_length": 96, "stride": 16, "direction": "left"},
    )
    sinks["ks-bpe-fixedlength"] = lambda: _dress(
        "bpe-prefix",
        n.Sequence([n.NFC(), n.Replace(Regex(r"\s+"), " "), n.Strip()]),
        p.Sequence([p.Punctuation("isolated"), p.FixedLength(length=5)]),
        padding={"direction": "right", "pad_id": 1, "pad_token": "[PAD]", "length": 128},
    )
    return sinks


# ---------------------------------------------------------------------------
# Registry

RECIPES: dict[str, Callable[[], str]] = {
    "t5-unigram": build_t5,
    "t5-unigram-bytefallback": lambda: build_t5("t5-bytefallback", legacy=False),
    "albert-unigram": build_albert,
    "xlmr-unigram": build_xlmr,
    "spm-unigram-bytefallback": build_spm_generic_bytefallback,
    "trained-wordlevel": build_wordlevel,
    "trained-wordpiece-bert": lambda: build_wordpiece(lowercase=True, template=False),
    "trained-wordpiece-template": lambda: build_wordpiece(lowercase=False, template=True),
    "trained-unigram": build_unigram,
    "clip-bpe": build_clip,
    "gpt1-bpe": build_gpt1,
    "bpe-prefix": build_bpe_prefix,
}
RECIPES.update(_kitchen_sinks())


def fixture_path(name: str) -> pathlib.Path:
    """The cached built tokenizer.json for ``name`` (a key of :data:`RECIPES`)."""
    try:
        build = RECIPES[name]
    except KeyError:
        raise KeyError(f"unknown built fixture {name!r}; known: {', '.join(RECIPES)}") from None
    return build_cached(name, cache_key(name), build)
