"""Resuming across versions: a job that batchtok at commit e34da0f started and was killed in
(``kill -9`` of the run and its worker) is finished by this code without encoding again any
shard that run finished, into outputs byte for byte those of an uninterrupted run.

The killed state is committed: ``data/resume_e34da0f/`` (made by
``tools/make_resume_fixture.py``; ``manifest.json`` says which shards were finished and what
that version's ``batchtok plan`` made of them), one job per output format. Only the
``batchtok`` command and the file system are used here, so the test holds however the runner
is arranged inside.

One thing that version wrote is no longer what this one writes: a datatrove output held an
empty document as an index entry (a repeated end), which this version leaves out as datatrove's
own pipeline does. Such an output (``c`` and ``d`` of the datatrove job: their inputs have
empty texts) is written again, its shards encoded again: the test finds them from the old
files themselves (:func:`outdated_inputs`) and expects that of them, and everything above of
the rest.

The old state is relocatable as it is: the job's paths are relative to the job file, outputs
and sidecars name files relatively, and what is absolute (the input's path in each record, the
job file in the lock) or tied to the old machine (each record's stats of inputs and outputs:
inode, ctime) is never trusted as it stands. A copy therefore has its inputs hashed again and
its outputs read back before they are reused: checked, not encoded again.
"""

from __future__ import annotations

import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "data" / "resume_e34da0f"
MANIFEST = json.loads((FIXTURE / "manifest.json").read_text(encoding="utf-8"))
STATE = ".batchtok"  # the output's state directory: records, parts, lock, temporary files
SUMMARY = "_batchtok_summary.json"


def batchtok(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``batchtok ARGS`` run by this checkout's code in ``cwd``."""
    path = os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p)
    return subprocess.run(
        [sys.executable, "-m", "batchtok", *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": path},
        capture_output=True,
        text=True,
        timeout=120,
    )


def job_copy(target: Path, with_outputs: bool) -> Path:
    """The fixture copied to ``target`` (the killed runs' output directories too, or not),
    with the tokenizer its jobs name beside them."""
    ignore = None if with_outputs else shutil.ignore_patterns("out_*")
    shutil.copytree(FIXTURE, target, ignore=ignore)
    shutil.copyfile(REPO / MANIFEST["tokenizer"], target / "tokenizer.json")
    return target


def run(job: Path) -> dict[str, Any]:
    """Run ``job`` to success; its summary."""
    done = batchtok("run", job.name, cwd=job.parent)
    assert done.returncode == 0, done.stderr
    out = job.parent / MANIFEST["jobs"][job.name]["output_dir"]
    return json.loads((out / SUMMARY).read_text(encoding="utf-8"))


def outputs(out: Path) -> dict[str, bytes]:
    """The output files (a trainer format's sets whole, the token-length chart), by path in
    ``out``. Left out: the state directory (records hold file stats, the lock a pid) and the
    summary (this run's counts, times and paths): neither is the output of the job, and both
    legitimately differ between a resumed run and an uninterrupted one."""
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and p.relative_to(out).parts[0] not in (STATE, SUMMARY)
    }


def outdated_inputs(out: Path) -> set[str]:
    """The inputs whose complete output in ``out``, as the old version wrote it, this version
    writes again: a datatrove set whose index repeats an end (an empty document's entry)."""
    outdated = set()
    for index in out.glob("*.ds.index"):
        data = index.read_bytes()
        ends = struct.unpack(f"<{len(data) // 8}Q", data)
        if any(a == b for a, b in zip((0, *ends), ends)):
            outdated.add(index.name.removesuffix(".ds.index") + ".parquet")
    return outdated


ADDED_SINCE = {"ids": None}  # metadata this version adds to every output's batchtok document
ADDED_TO_TOKENIZER = ("vocab_size", "max_id")


def _without_contract(path: Path) -> Any:
    """An output file's content without the metadata added since the old version: a
    Parquet file's table and batchtok document, a sidecar's document; other files' bytes."""

    def strip(doc: dict) -> dict:
        doc = {k: v for k, v in doc.items() if k not in ADDED_SINCE}
        tokenizer = {
            k: v for k, v in (doc.get("tokenizer") or {}).items() if k not in ADDED_TO_TOKENIZER
        }
        return {**doc, "tokenizer": tokenizer}

    if path.name.endswith(".batchtok.json"):
        doc = json.loads(path.read_text(encoding="utf-8"))
        return {**doc, "provenance": strip(doc.get("provenance") or {}), "files": None,
                "xxh3_128": None}  # fmt: skip
    if path.suffix == ".parquet":
        import pyarrow.parquet as pq

        table = pq.read_table(path)
        doc = json.loads((table.schema.metadata or {}).get(b"batchtok", b"{}"))
        return table.replace_schema_metadata(None).to_pydict(), strip(doc)
    return path.read_bytes()


def identities(out: Path, names: list[str]) -> dict[str, tuple[int, int]]:
    """(inode, mtime in ns) of each named file: a file rewritten, even with the same bytes,
    gets another inode (writes are renamed into place) or another mtime."""
    return {name: ((out / name).stat().st_ino, (out / name).stat().st_mtime_ns) for name in names}


@pytest.mark.parametrize("job_name", sorted(MANIFEST["jobs"]))
def test_a_run_killed_by_the_older_version_is_finished_without_encoding_again(
    job_name: str, tmp_path: Path
) -> None:
    expected = MANIFEST["jobs"][job_name]
    old = outdated_inputs(FIXTURE / expected["output_dir"])
    assert bool(old) == (job_name == "datatrove.toml")
    # the shards of an output written again are encoded again, as those never finished
    shards = {
        shard: {**found, "status": "to do"} if shard.split("#")[0] in old else found
        for shard, found in expected["shards"].items()
    }
    to_do = [shard for shard, found in shards.items() if found["status"] == "to do"]
    # a file is written by this run if any of its shards was not in a complete output
    files_to_write = {
        shard.split("#")[0] for shard, found in shards.items() if found["status"] != "cached"
    }
    killed = job_copy(tmp_path / "killed", with_outputs=True) / job_name
    out = killed.parent / expected["output_dir"]

    # This code sees what the old run finished: the same cache keys, the same statuses.
    planned = batchtok("plan", job_name, "--json", cwd=killed.parent)
    assert planned.returncode == 0, planned.stderr
    seen = {
        s["shard"]: {"status": s["status"], "rows": s["rows"], "key": s["key"]}
        for f in json.loads(planned.stdout)["files"]
        for s in f["shards"]
    }
    assert seen == shards

    # Finishing it encodes the shards left and nothing else.
    kept = [name for name in expected["outputs"] if f"{name.split('.')[0]}.parquet" not in old]
    complete = identities(out, kept)
    summary = run(killed)
    assert summary["status"] == "success"
    assert summary["shards"] == {
        "total": len(shards),
        "done": len(to_do),
        "cached": len(shards) - len(to_do),
        "failed": 0,
    }
    assert summary["rows"]["read"] == sum(shards[shard]["rows"] for shard in to_do)
    assert summary["files"]["written"] == len(files_to_write)
    assert identities(out, kept) == complete  # left as the old run wrote them
    for leftover in expected["parts"] + expected["temporary"]:  # joined, or a dead run's
        assert not (out / leftover).exists(), leftover

    # ... into the bytes an uninterrupted run writes.
    fresh = job_copy(tmp_path / "fresh", with_outputs=False) / job_name
    fresh_summary = run(fresh)
    assert fresh_summary["shards"]["done"] == len(shards)
    resumed_files = outputs(out)
    fresh_files = outputs(fresh.parent / expected["output_dir"])
    assert sorted(resumed_files) == sorted(fresh_files)
    differ = [name for name in resumed_files if resumed_files[name] != fresh_files[name]]
    # an output the old run finished, kept, differs from this version's only in what this
    # version's metadata adds (the contract's ids and vocabulary: batchtok.verify reads it)
    assert [
        name
        for name in differ
        if name not in kept
        or _without_contract(out / name)
        != _without_contract(fresh.parent / expected["output_dir"] / name)
    ] == []
    assert set(expected["outputs"]) < set(resumed_files)
    # the statistics of every token written, counted by both versions, are the same too
    assert summary["token_stats"] == fresh_summary["token_stats"]
    assert summary["token_stats"]["shards_without_stats"] == 0

    # A run after that has nothing to do (the chart of token lengths is drawn by every run).
    data_files = [name for name in resumed_files if not name.startswith("_")]
    written = identities(out, data_files)
    again = run(killed)
    assert again["shards"] == {"total": len(shards), "done": 0, "cached": len(shards), "failed": 0}
    assert again["rows"]["read"] == 0 and again["files"]["written"] == 0
    assert identities(out, data_files) == written
    assert outputs(out) == resumed_files
