"""Write configs/samples/sample.parquet (and .jsonl.gz), the bundled inputs of the example jobs.

    python configs/samples/make_sample.py

Deterministic: the rows are the lines and the whole of sample.txt, then a few hundred rows
built from the fragments below with a seeded RNG: English, French, German, Spanish, Russian,
Greek, Arabic, Hebrew, Hindi, Thai, Chinese, Japanese, Korean, code in several languages,
numbers, emoji sequences, whitespace runs, special-token strings inside text, empty and
repeated texts. Every fragment was written for this file (no third-party text). No null text:
the example job runs clean (exit code 0); tests build their own files with nulls.

Columns: ``id`` (int64), ``kind`` (string), ``text`` (string); 4 row groups, zstd. The same
rows go to sample.jsonl.gz, one JSON object a line, for jobs/example-jsonl.toml.
"""

from __future__ import annotations

import gzip
import json
import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

HERE = Path(__file__).resolve().parent
ROWS_PER_GROUP = 128
SEED = 20241129

FRAGMENTS: dict[str, list[str]] = {
    "english": [
        "The quick brown fox jumps over the lazy dog.",
        "Tokenizers split text into pieces that a model can count.",
        "It's a long way to the top if you wanna rock 'n' roll, they'll say.",
        "Batch jobs run at night; the morning report lists what changed.",
        "A shard is a range of row groups: small enough that a crash costs minutes.",
        "Re-running a job with nothing changed should take a fraction of a second.",
        'She said: "don\'t panic" -- and nobody did.',
        "Mr. O'Neil's 3rd edition (2nd printing) costs $12.50, not £9.99.",
    ],
    "french": [
        "Les tokenizers découpent le texte en morceaux ; ça marche très bien.",
        "Où est la bibliothèque ? À côté de l'hôpital, près du château.",
        "L'été dernier, nous avons mangé des crêpes à Saint-Malo.",
    ],
    "german": [
        "Die Straße ist naß, weil es gestern geregnet hat.",
        "Größere Dateien werden in mehrere Teile zerlegt.",
        "Übermorgen früh fährt der Zug um 6:45 Uhr ab.",
    ],
    "spanish": [
        "¿Dónde está la estación? ¡Está muy lejos!",
        "El niño comió una manzana y después durmió la siesta.",
    ],
    "russian": [
        "Съешь же ещё этих мягких французских булок, да выпей чаю.",
        "Токенизатор разбивает текст на части.",
    ],
    "greek": ["Η γρήγορη καφέ αλεπού πηδά πάνω από τον τεμπέλη σκύλο."],
    "arabic": ["النص العربي يكتب من اليمين إلى اليسار، والأرقام ١٢٣ كذلك."],
    "hebrew": ["שלום עולם, זהו טקסט לדוגמה בעברית."],
    "hindi": ["यह हिंदी में एक छोटा सा उदाहरण वाक्य है।"],
    "thai": ["ภาษาไทยไม่มีการเว้นวรรคระหว่างคำ"],
    "chinese": ["分词器把文本切成小块。", "今天天气很好，我们去公园散步吧。"],
    "japanese": ["日本語のテキストも扱えます。", "東京タワーは高さ333メートルです。"],
    "korean": ["한국어 문장도 잘 처리됩니다.", "오늘은 날씨가 좋네요."],
    "code": [
        "def add(a, b):\n    return a + b\n",
        "for (int i = 0; i < n; ++i) {\n\tsum += xs[i];\n}\n",
        "SELECT id, COUNT(*) AS n FROM docs WHERE lang = 'fr' GROUP BY id;",
        'fn main() {\n    println!("{}", 1 << 20);\n}\n',
        "const f = async (x) => { await sleep(10); return x?.y ?? 0; };",
        '<div class="row"><span>&amp; &lt;tag&gt;</span></div>',
        "if [ -z \"$HOME\" ]; then echo 'no home' >&2; exit 1; fi",
        "    \n\t\t  indented\r\n  lines  \n",
    ],
    "numbers": ["1234567890", "3.14159 2.71828 1e-9 0xDEADBEEF", "2024-11-29T20:09:00Z"],
    "emoji": [
        "Emoji 👩‍👩‍👧‍👦 🇫🇷 🏳️‍🌈 👍🏽 and keycap 1️⃣",
        "Z̴̡̨̙̖̪̹͖͉̳̓͐̋̔̍̾̔̚͜͝͝ combining marks é ñ",
    ],
    "special": [
        "A document end marker <|endoftext|> inside text.",
        "<|endoftext|>",
        "two markers<|endoftext|><|endoftext|>back to back",
    ],
}


def rows() -> list[tuple[str, str]]:
    sample = (HERE / "sample.txt").read_text(encoding="utf-8")
    out = [("sample", line) for line in sample.splitlines() if line]
    out.append(("sample", sample))
    rng = random.Random(SEED)
    kinds = sorted(FRAGMENTS)
    for _ in range(440):
        kind = rng.choice(kinds)
        n = rng.choice((1, 1, 2, 3, 5))
        pieces = [rng.choice(FRAGMENTS[kind]) for _ in range(n)]
        if rng.random() < 0.2:  # mixed-language and mixed-kind documents
            other = rng.choice(kinds)
            pieces.insert(rng.randrange(len(pieces) + 1), rng.choice(FRAGMENTS[other]))
            kind = "mixed"
        sep = rng.choice((" ", "\n", "\n\n", "  "))
        out.append((kind, sep.join(pieces)))
    out += [("edge", ""), ("edge", " "), ("edge", "\n"), ("edge", "a")]
    out += [out[3], out[10], out[3]]  # repeated texts (encoded once per shard)
    return out


def main() -> None:
    data = rows()
    table = pa.table(
        {
            "id": pa.array(range(len(data)), pa.int64()),
            "kind": pa.array([k for k, _ in data], pa.string()),
            "text": pa.array([t for _, t in data], pa.string()),
        }
    )
    target = HERE / "sample.parquet"
    pq.write_table(table, target, row_group_size=ROWS_PER_GROUP, compression="zstd")
    print(f"{target}: {table.num_rows} rows, {target.stat().st_size} bytes")
    # The same rows as JSON Lines, gzip-compressed (mtime 0: the bytes never change), for
    # jobs/example-jsonl.toml.
    lines = "".join(
        json.dumps({"id": i, "kind": k, "text": t}, ensure_ascii=False) + "\n"
        for i, (k, t) in enumerate(data)
    )
    target = HERE / "sample.jsonl.gz"
    target.write_bytes(gzip.compress(lines.encode("utf-8"), mtime=0))
    print(f"{target}: {len(data)} lines, {target.stat().st_size} bytes")


if __name__ == "__main__":
    main()
