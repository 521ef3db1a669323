"""Which files a job's input.paths give, and where their outputs go: symbolic-link loops end
and outputs mirror the real tree; a name that is not UTF-8 is carried as bytes and shown
escaped; files are picked by extension alike for every format, in any case, locally and in
object storage; metadata and sidecars are never inputs; a state directory on another file
system is refused up front; a long list of missing paths is capped."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from batchtok.runner.report.progress import JsonFormatter, TextFormatter
from tests.support.runner import (
    REPO,
    basic_job,
    invoke,
    oracle_ids,
    summary,
    texts,
    visible_files,
    write_job,
    write_parquet,
)

CAFE = os.fsdecode(b"caf\xe9")  # a name that is not UTF-8, as Python carries it
SHOWN = "caf\\xe9"  # ... and as it is shown


def _planned(job: Path, out: Path) -> list[str]:
    """The output names ``batchtok plan --json`` gives, relative to ``out``."""
    code, output = invoke("plan", job, "--json", "--no-hash")
    assert code == 0, output
    return sorted(
        Path(f["output"]).relative_to(out).as_posix() for f in json.loads(output)["files"]
    )


def _jsonl(path: Path, rows: list[str]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps({"text": t}) + "\n" for t in rows), encoding="utf-8")
    return path


def _ids_match_oracle(path: str | Path, rows: list[str]) -> None:
    table = pq.read_table(pa.OSFile(os.fsencode(path)))
    assert table["input_ids"].to_pylist() == oracle_ids(rows)


# -- symbolic links ---------------------------------------------------------------------------


def test_a_glob_over_symlink_loops_ends_and_mirrors_the_real_tree(tmp_path: Path) -> None:
    rows = texts(40, seed=3)
    real = tmp_path / "in" / "real"
    write_parquet(real / "x.parquet", rows)
    for name, target in (("a_loop", "."), ("b_up", ".."), ("c_top", "../..")):
        (real / name).symlink_to(target)
    (tmp_path / "in" / "a_link").symlink_to("real")  # sorts before the real directory
    job = basic_job(tmp_path, input__paths=[str(tmp_path / "in" / "**" / "*.parquet")])
    # the original walked every path through the loops: bound it in another process
    plan = subprocess.run(
        [sys.executable, "-m", "batchtok", "plan", str(job), "--json", "--no-hash"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert plan.returncode == 0, plan.stderr
    outputs = [f["output"] for f in json.loads(plan.stdout)["files"]]
    assert outputs == [str(tmp_path / "out" / "real" / "x.parquet")]
    code, output = invoke("run", job)
    assert code == 0, output
    assert visible_files(tmp_path / "out") == ["real/x.parquet"]
    _ids_match_oracle(tmp_path / "out" / "real" / "x.parquet", rows)


def test_a_directory_input_follows_links_once_and_names_outside_ones_by_the_link(
    tmp_path: Path,
) -> None:
    inside = tmp_path / "in"
    write_parquet(inside / "real" / "x.parquet", texts(10, seed=1))
    write_parquet(tmp_path / "elsewhere" / "y.parquet", texts(10, seed=2))
    write_parquet(tmp_path / "elsewhere" / "lone.parquet", texts(10, seed=4))
    (inside / "ext").symlink_to(tmp_path / "elsewhere")  # a directory outside: followed
    (inside / "0_same.parquet").symlink_to("real/x.parquet")  # the same file: one input
    (inside / "one.parquet").symlink_to(tmp_path / "elsewhere" / "lone.parquet")
    (inside / "real" / "loop").symlink_to(inside)
    (tmp_path / "elsewhere" / "back").symlink_to(inside)
    job = basic_job(tmp_path)
    assert _planned(job, tmp_path / "out") == [
        "ext/lone.parquet",  # a file reached twice from outside: by the first (sorted) path
        "ext/y.parquet",
        "real/x.parquet",
    ]
    (inside / "broken.parquet").symlink_to(tmp_path / "missing.parquet")
    code, output = invoke("plan", job)
    assert code == 2 and f"cannot read {inside / 'broken.parquet'}" in output, output


def test_two_entries_naming_one_file_give_one_input(tmp_path: Path) -> None:
    path = write_parquet(tmp_path / "in" / "a.parquet", texts(10))
    (tmp_path / "alias.parquet").symlink_to(path)
    job = basic_job(
        tmp_path, input__paths=[str(path), str(tmp_path / "in"), str(tmp_path / "alias.parquet")]
    )
    assert _planned(job, tmp_path / "out") == ["a.parquet"]


# -- names that are not UTF-8 -----------------------------------------------------------------


def test_a_file_name_that_is_not_utf8_runs_end_to_end(tmp_path: Path) -> None:
    rows, lines = texts(300, seed=5), texts(60, seed=6)
    inputs = os.fsencode(tmp_path / "in")
    write_parquet(tmp_path / "in" / "a.parquet", rows, row_group_size=30)
    os.mkdir(inputs + b"/d\xff")
    os.rename(inputs + b"/a.parquet", inputs + b"/d\xff/caf\xe9.parquet")
    _jsonl(tmp_path / "in" / "b.jsonl", lines)
    with open(inputs + b"/b.jsonl", "a", encoding="utf-8") as f:
        f.write("not json\n")  # a bad row: logged naming the file
    os.rename(inputs + b"/b.jsonl", inputs + b"/caf\xe9.jsonl")
    job = basic_job(tmp_path, run__shard_mb=0.002)  # several shards: parts are named too
    out = tmp_path / "out"
    code, output = invoke("run", job)
    assert code == 3, output  # success with one bad row
    assert f"{SHOWN}.jsonl row 60" in output
    produced = sorted(os.listdir(os.fsencode(out)))
    assert b"caf\xe9.parquet" in produced and b"d\xff" in produced  # the input's bytes
    _ids_match_oracle(os.fsdecode(os.fsencode(out) + b"/d\xff/caf\xe9.parquet"), rows)
    table = pq.read_table(pa.OSFile(os.fsencode(out) + b"/caf\xe9.parquet"))
    assert table["input_ids"].to_pylist()[:-1] == oracle_ids(lines)
    # everything written as JSON is UTF-8, names escaped, readable by any JSON reader
    report = summary(out)
    assert report["shards"]["failed"] == 0
    assert [e["file"] for e in report["bad_rows"]["examples"]] == [
        str(tmp_path / "in" / f"{SHOWN}.jsonl")
    ]
    assert not list((out / ".batchtok").glob("summary.*.tmp"))
    doc = pq.read_metadata(pa.OSFile(os.fsencode(out) + b"/caf\xe9.parquet")).metadata
    assert json.loads(doc[b"batchtok"].decode("ascii"))["input"]["file"] == f"{SHOWN}.parquet"
    records = list(Path(out / ".batchtok" / "records").rglob("*.json"))
    assert len(records) == 2
    # records are batchtok's own state: they name the files exactly as the file system does
    owned = {n for r in records for n in json.loads(r.read_text(encoding="ascii"))["owned"]}
    assert {"caf\udce9.parquet"} <= owned, owned
    # a re-run redoes nothing; plan and status show the names escaped
    code, output = invoke("run", job)
    assert code == 3 and "nothing to do" in output, output
    assert summary(out)["shards"]["done"] == 0
    code, output = invoke("plan", job, "--json")
    assert code == 0, output
    planned = json.loads(output)
    assert {s["status"] for f in planned["files"] for s in f["shards"]} == {"cached"}
    assert planned["files"][1]["output"] == str(out / f"d\\xff/{SHOWN}.parquet")
    code, output = invoke("plan", job)
    assert code == 0 and f"d\\xff/{SHOWN}.parquet#0" in output, output
    code, output = invoke("status", job)
    assert code == 0 and "last run: success_with_bad_rows" in output, output
    assert "0 done, " in output and SHOWN in output  # the longest document's file


def test_log_lines_show_a_name_that_is_not_utf8_escaped() -> None:
    path = f"/data/{CAFE}.parquet"
    record = logging.LogRecord("batchtok", logging.WARNING, "", 0, "bad row: %s", (path,), None)
    record.file = path  # an event's field, as the worker's bad-row lines carry
    line = JsonFormatter().format(record)
    line.encode("utf-8")
    doc = json.loads(line)
    assert doc["message"] == f"bad row: /data/{SHOWN}.parquet"
    assert doc["file"] == f"/data/{SHOWN}.parquet"
    assert TextFormatter().format(record).endswith(f"bad row: /data/{SHOWN}.parquet")


# -- which names are inputs -------------------------------------------------------------------


def _mixed_directory(root: Path) -> None:
    """Inputs of every format in any case, and what data directories hold beside them."""
    write_parquet(root / "A.PARQUET", texts(5, seed=1))
    write_parquet(root / "b.Parquet", texts(5, seed=2))
    _jsonl(root / "sub" / "c.JSONL", texts(5, seed=3))
    _jsonl(root / "d.ndjson", texts(5, seed=4))
    _jsonl(root / "e.json", texts(5, seed=5))
    for name in ("MANIFEST.json", "state.json", "dataset_info.json", "x.batchtok.json"):
        (root / name).write_text('{\n  "a": 1\n}\n', encoding="utf-8")
    (root / "notes.txt").write_text("hello\n", encoding="utf-8")


PICKED = ["A.PARQUET", "b.Parquet", "d.parquet", "sub/c.parquet"]


def test_a_directory_picks_files_by_extension_alike_for_every_format(tmp_path: Path) -> None:
    _mixed_directory(tmp_path / "in")
    out = tmp_path / "out"
    assert _planned(basic_job(tmp_path), out) == PICKED
    glob_all = basic_job(tmp_path, input__paths=[str(tmp_path / "in" / "**" / "*")])
    assert _planned(glob_all, out) == PICKED  # a glob not naming an extension: the same
    named = basic_job(tmp_path, input__paths=[str(tmp_path / "in" / "*.json")])
    assert _planned(named, out) == ["e.parquet"]  # .json when a glob names it
    spelled = basic_job(tmp_path, input__paths=[str(tmp_path / "*" / "state.json")])
    assert _planned(spelled, out) == ["in/state.parquet"]  # ... metadata if it names the file
    one = basic_job(tmp_path, input__paths=[str(tmp_path / "in" / "e.json")])
    assert _planned(one, out) == ["e.parquet"]  # ... or a path names the file


def test_a_sidecar_named_as_an_input_is_refused(tmp_path: Path) -> None:
    _mixed_directory(tmp_path / "in")
    job = basic_job(tmp_path, input__paths=[str(tmp_path / "in" / "x.batchtok.json")])
    code, output = invoke("plan", job)
    assert code == 2 and "x.batchtok.json is a batchtok sidecar" in output, output


def test_an_s3_prefix_picks_the_names_a_local_directory_picks(tmp_path: Path) -> None:
    from tests.support.s3 import bucket, moto_server, upload_tree

    _mixed_directory(tmp_path / "in")
    with moto_server() as endpoint:
        upload_tree(bucket(endpoint, "mixed"), tmp_path / "in", "mixed/corpus")
        job = basic_job(
            tmp_path,
            input__paths=["s3://mixed/corpus/"],
            storage__endpoint=endpoint,
            storage__region="us-east-1",
        )
        assert _planned(job, tmp_path / "out") == PICKED
        one = "s3://mixed/corpus/e.json"
        job = basic_job(
            tmp_path, input__paths=[one], storage__endpoint=endpoint, storage__region="us-east-1"
        )
        assert _planned(job, tmp_path / "out") == ["e.parquet"]  # an object named: taken
        # a local name that is not UTF-8 cannot be mirrored as a key: refused up front
        write_parquet(tmp_path / "local" / "a.parquet", texts(5))
        local = os.fsencode(tmp_path / "local")
        os.rename(local + b"/a.parquet", local + b"/caf\xe9.parquet")
        job = basic_job(
            tmp_path,
            input__paths=[str(tmp_path / "local")],
            output__dir="s3://mixed/out",
            storage__endpoint=endpoint,
            storage__region="us-east-1",
        )
        code, output = invoke("plan", job)
        assert code == 2 and f"{SHOWN}.parquet is not UTF-8" in output, output


def _other_file_system(near: Path) -> Path | None:
    """A directory on another file system than ``near`` (tmpfs), if the machine has one."""
    for candidate in ("/dev/shm", "/run/user", "/run"):
        try:
            if os.stat(candidate).st_dev != os.stat(near).st_dev and os.access(candidate, os.W_OK):
                return Path(candidate)
        except OSError:
            continue
    return None


@pytest.mark.parametrize("where", [".batchtok", ".batchtok/tmp"])
def test_a_state_directory_on_another_file_system_is_refused_up_front(
    tmp_path: Path, where: str
) -> None:
    other = _other_file_system(tmp_path)
    if other is None:
        pytest.skip("no second file system to link to")
    write_parquet(tmp_path / "in" / "a.parquet", texts(20))
    out = tmp_path / "out"
    (out / where).parent.mkdir(parents=True, exist_ok=True)
    target = other / f"batchtok-test-{os.getpid()}-{tmp_path.name}"
    target.mkdir()
    try:
        (out / where).symlink_to(target)
        code, output = invoke("run", basic_job(tmp_path))
        assert code == 2, output
        assert f"{out / where} is on another file system than {out}" in output
        assert "plain directory" in output
        assert visible_files(out) == [] and not os.listdir(target)  # nothing was done
    finally:
        for leftover in sorted(target.rglob("*"), reverse=True):
            leftover.unlink() if leftover.is_file() else leftover.rmdir()
        target.rmdir()


def test_many_missing_input_paths_are_listed_up_to_a_cap(tmp_path: Path) -> None:
    missing = [str(tmp_path / f"missing-{i}.parquet") for i in range(20_000)]
    job = write_job(
        tmp_path / "job.toml",
        {
            "input.paths": missing,
            "tokenizer.path": str(REPO / "configs/tokenizers/gpt2/tokenizer.json"),
            "output.dir": str(tmp_path / "out"),
        },
    )
    code, output = invoke("plan", job)
    assert code == 2
    lines = output.splitlines()
    assert len(lines) < 30, lines[:40]
    assert "no such file or directory" in lines[1]
    assert "and 19980 more problems" in output
