"""batchtok's trainer formats hold the bytes the trainers' own pipelines write, on a sample of
empty, one-token, special-token-only and plain documents (``data/peers/``, made by
``tools/make_peer_golden.py`` with datatrove 0.10.1's ``DocumentTokenizer`` and Megatron-LM
core_v0.19.0's ``tools/preprocess_data.py``; ``peers.json`` says how).

Each job runs over the very ``sample.jsonl`` the peers read, with GPT-2's tokenizer. Every
file of the peer's set is compared byte for byte. What legitimately differs, and only that:
the names (the peers name their files after the run: ``sample_00000_unshuffled.ds``,
``sample_text_document.bin``), and batchtok's provenance sidecar (``*.batchtok.json``), a
file the peers do not write. The ``.ds.metadata`` is compared whole: its first line names the
tokenizer as given to datatrove, which the golden run gave as ``tokenizer.json``, the name
batchtok records.

Parquet is held to the rows, not to a peer: its rows stay one to one with the input's, an
empty document an empty list."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from batchtok.formats import datatrove
from tests.support.runner import GPT2, invoke, oracle_ids, summary, write_job, write_parquet

PEERS = Path(__file__).parent / "data" / "peers"
DESCRIPTION = json.loads((PEERS / "peers.json").read_text(encoding="utf-8"))
SAMPLE = DESCRIPTION["sample"]["texts"]

# (output.format, output.append_eos) -> (the peer's run, suffixes of its files)
CASES = {
    ("megatron", False): ("megatron/plain", (".bin", ".idx")),
    ("megatron", True): ("megatron/eod", (".bin", ".idx")),
    ("datatrove", False): ("datatrove/plain", (".ds", ".ds.index", ".ds.metadata")),
    ("datatrove", True): ("datatrove/eos", (".ds", ".ds.index", ".ds.metadata")),
}
# batchtok's own file beside each set, which no peer writes
SIDECARS = {"megatron": "sample.batchtok.json", "datatrove": "sample.ds.batchtok.json"}


def _run(tmp_path: Path, shards: bool = False, **settings: object) -> Path:
    """batchtok over the peers' sample.jsonl (``shards``: the same texts as a Parquet file of
    two rows a row group, one shard each); its output directory."""
    if shards:
        write_parquet(tmp_path / "in" / "sample.parquet", SAMPLE, row_group_size=2)
        settings["run.shard_mb"] = 0.000001
    else:
        (tmp_path / "in").mkdir()
        (tmp_path / "in" / "sample.jsonl").write_bytes((PEERS / "sample.jsonl").read_bytes())
    job = write_job(
        tmp_path / "job.toml",
        {
            "input.paths": [str(tmp_path / "in")],
            "tokenizer.path": str(GPT2),
            "output.dir": str(tmp_path / "out"),
            "run.workers": 1,
            **settings,
        },
    )
    code, output = invoke("run", job)
    assert code == 0, output
    return tmp_path / "out"


def test_the_sample_is_what_the_peers_read() -> None:
    lines = (PEERS / "sample.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line)["text"] for line in lines] == SAMPLE
    assert "" in SAMPLE and "<|endoftext|>" in SAMPLE  # empty and special-only documents
    assert any(len(ids) == 1 for ids in oracle_ids(SAMPLE))  # one-token ones


@pytest.mark.parametrize("shards", [False, True], ids=["the jsonl", "parts"])
@pytest.mark.parametrize(("fmt", "eos"), sorted(CASES), ids=lambda v: str(v).lower())
def test_files_equal_the_peers_own(tmp_path: Path, fmt: str, eos: bool, shards: bool) -> None:
    out = _run(tmp_path, shards, **{"output.format": fmt, "output.append_eos": eos})
    if shards:  # the set is built from several parts, as a large input's is
        assert summary(out)["shards"]["total"] == 4
    golden, suffixes = CASES[fmt, eos]
    for suffix in suffixes:
        want = (PEERS / (golden + suffix)).read_bytes()
        assert (out / ("sample" + suffix)).read_bytes() == want, suffix
    written = sorted(p.name for p in out.iterdir() if not p.name.startswith(("_", ".")))
    assert written == sorted(["sample" + s for s in suffixes] + [SIDECARS[fmt]])


@pytest.mark.parametrize("eos", [False, True])
def test_parquet_keeps_every_row(tmp_path: Path, eos: bool) -> None:
    """The rows of a Parquet output are the input's, one to one: an empty document is an
    empty list there, whatever the token formats leave out."""
    out = _run(tmp_path, **{"output.append_eos": eos})
    rows = pq.read_table(out / "sample.parquet").to_pylist()
    assert [row["text"] for row in rows] == SAMPLE
    want = [ids + [50256] if eos and ids else ids for ids in oracle_ids(SAMPLE)]
    assert [row["input_ids"] for row in rows] == want
    assert [row["input_ids"] for row in rows if row["text"] == ""] == [[], [], []]


@pytest.mark.parametrize("fmt", ["megatron", "datatrove"])
def test_the_audit_matches_each_row_to_its_document(tmp_path: Path, fmt: str) -> None:
    """Where a format leaves empty documents out (datatrove), ``batchtok audit`` still finds
    each sampled row's document."""
    _run(tmp_path, **{"output.format": fmt, "output.append_eos": True})
    code, output = invoke("audit", tmp_path / "job.toml", "--sample", "1000", "--json")
    report = json.loads(output)
    assert code == 0 and report["ok"] and report["problems"] == [], output


def test_a_datatrove_output_of_an_older_batchtok_with_empty_entries_is_written_again(
    tmp_path: Path,
) -> None:
    """batchtok wrote an empty document as an index entry before it matched datatrove's
    pipeline. Such an output, its shards unchanged, is written again (its sidecar lacks the
    record that empty documents were left out, and its index repeats an end); one without an
    empty document is left as it is: its bytes are those written now."""
    out = _run(tmp_path, **{"output.format": "datatrove"})
    write_parquet(tmp_path / "in" / "full.parquet", [t for t in SAMPLE if t], row_group_size=3)
    code, output = invoke("run", tmp_path / "job.toml")
    assert code == 0, output
    for name in ("sample.ds", "full.ds"):  # as the older writer left them
        sidecar = datatrove.read_sidecar(str(out / name))
        del sidecar["empty_documents"]
        docs = list(datatrove.read_documents(str(out / name)))
        if name == "sample.ds":
            docs = [[] if not text else docs.pop(0) for text in SAMPLE]
        tmp = str(tmp_path / "tmp")
        with datatrove.DatatroveWriter(
            str(out / name), tmp, "uint16", "tokenizer.json", provenance=sidecar["provenance"]
        ) as writer:
            for ids in docs:
                writer.add_document(ids)
    assert datatrove.empty_entries(str(out / "sample.ds")) == 3
    # the run's records of what it wrote would show the files changed since: an older
    # batchtok's records are of the files as they are, the sidecars' hashes are enough here
    shutil.rmtree(out / ".batchtok" / "records")
    full = (out / "full.ds.index").stat().st_ino

    code, output = invoke("run", tmp_path / "job.toml")
    assert code == 0, output
    assert "sample.ds holds 3 empty document(s) as index entries" in output, output
    assert summary(out)["shards"] == {"total": 2, "done": 1, "cached": 1, "failed": 0}
    for suffix in (".ds", ".ds.index", ".ds.metadata"):
        assert (out / f"sample{suffix}").read_bytes() == (
            PEERS / f"datatrove/plain{suffix}"
        ).read_bytes()
    assert datatrove.read_sidecar(str(out / "sample.ds"))["empty_documents"] == "left out"
    assert (out / "full.ds.index").stat().st_ino == full  # kept
