"""Make the fixture of ``tests/runner/test_resume_across_versions.py``: jobs that an older
batchtok started and was killed in (``kill -9`` of the run and its workers at once), with the
output directories, ``.batchtok`` state included, exactly as they were left.

Run it with the older code first on ``sys.path`` (as a script, not with ``-m``: ``-m`` would
put this checkout's ``batchtok`` first), and the repository's own GPT-2 tokenizer::

    git worktree add /tmp/resume-base e34da0f
    PYTHONPATH=/tmp/resume-base .venv/bin/python tools/make_resume_fixture.py \\
        --out tests/runner/data/resume_e34da0f
    git worktree remove /tmp/resume-base

It refuses a ``batchtok`` whose checkout has uncommitted changes (the fixture names the commit
it came from). What it writes, replacing ``--out`` (its ``README.md`` kept):

* ``in/``: the inputs, made here from a fixed seed: ``a.parquet`` (one shard), ``b.parquet``
  (three shards), ``c.parquet`` (two shards of many small row groups) and ``d.jsonl`` (JSON
  Lines, one shard); short rows of mixed scripts, empty ones, line breaks, JSON escapes and
  ``<|endoftext|>`` in the text;
* one job file per output format (``parquet.toml``, ``megatron.toml``, ``datatrove.toml``),
  its paths relative to the job file; ``tokenizer.path = "tokenizer.json"`` is not stored
  (2 MB): whoever runs the job puts ``configs/tokenizers/gpt2/tokenizer.json`` there;
* ``out_<format>/``: what the killed run left (outputs, ``.batchtok/records``, ``parts``,
  ``tokenizers``, the lock naming the dead run, the temporary file of the shard being
  written);
* ``manifest.json``: the commit; for each job the shards its run finished (in order), the old
  code's own ``batchtok plan --json`` of the state it left (each shard's status: ``cached`` in
  an output, ``part`` waiting to be joined, ``to do``; its rows and cache key), and the files
  it left (complete outputs, parts, temporary files).

Where a run stops is deterministic: one worker; shards dispatched largest first (d, the two
of c, then b's, then a); the parent sends the worker its next task only once it has recorded
the last one; after :data:`STOP_AFTER` shards the worker writes the first row group of the
next one and the run dies. So d's and c's outputs are complete, one shard of b is a part,
another is half written, and a was never started. The hooks that stop it (:data:`KILLED_RUN`)
reach into e34da0f's runner (``batchtok.runner.run``, ``.output``, ``.worker``): a fixture of a
later commit needs them pointed at where that commit keeps those.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

REPO = Path(__file__).resolve().parents[1]
GPT2 = REPO / "configs" / "tokenizers" / "gpt2" / "tokenizer.json"
DEFAULT_OUT = REPO / "tests" / "runner" / "data" / "resume_e34da0f"
SEED = 20240611

WORDS = (
    "the of and to in is was for on that with as by at from it an be this are or his "
    "Straße naïve café Ångström 日本語 テスト 测试 테스트 Привет мир مرحبا שלום नमस्ते "
    "🙂 👍🏽 ½ € 1234 3.14 <|endoftext|> def return {} ( ) \t"
).split(" ")

# Shards of at most 5 KB of text (by the footers' sizes) unless one row group is larger.
SHARD_MB = 0.005
STOP_AFTER = 4
# The statuses the state must show: what the test needs it to hold.
STATUSES = {"cached", "part", "to do"}

# name -> job keys besides the common ones
JOBS: dict[str, dict[str, str]] = {
    "parquet": {},
    "megatron": {"output.format": "megatron"},
    "datatrove": {"output.format": "datatrove"},
}

# Run in a process group of its own: the old code with hooks that kill the group (run and
# worker at once, as kill -9 of a job's process group does) at a chosen point.
KILLED_RUN = r"""
import json
import os
import signal
import sys
from pathlib import Path

from batchtok.runner import output, run, worker

stop_after, flag = int(sys.argv[2]), Path(sys.argv[3])
finished = []
encode_done = run._Run._encode_done


def recorded(self, executor, event):
    # the parent sends the worker its next task only after this returns
    encode_done(self, executor, event)
    if isinstance(event.task, worker.ShardTask):
        finished.append(event.task.shard_id)
        if len(finished) == stop_after:
            flag.write_text(json.dumps(finished))


write = output.AtomicParquet.write


def written(self, table):
    write(self, table)
    if flag.exists():  # the next shard's first row group is in its temporary file
        os.killpg(0, signal.SIGKILL)


run._Run._encode_done = recorded
output.AtomicParquet.write = written
sys.argv = ["batchtok", "run", sys.argv[1]]
from batchtok.cli import program

program()
"""


def texts(rng: random.Random, n: int, max_words: int) -> list[str]:
    """Short texts of mixed scripts; some empty, some with a line break."""
    out = []
    for _ in range(n):
        words = [rng.choice(WORDS) for _ in range(rng.randint(0, max_words))]
        if words and rng.random() < 0.1:
            words.insert(rng.randrange(len(words)), "\n")
        out.append(" ".join(words))
    return out


def write_parquet(path: Path, rows: list[str], row_group_size: int) -> None:
    table = pa.table({"id": pa.array(range(len(rows)), pa.int64()), "text": rows})
    pq.write_table(table, path, row_group_size=row_group_size)


def write_inputs(folder: Path) -> None:
    """The inputs, sized so that shards are encoded in the order the module docstring says:
    largest first, b's row groups too large for two to share a shard, c's small."""
    rng = random.Random(SEED)
    folder.mkdir(parents=True)
    write_parquet(folder / "a.parquet", texts(rng, 60, 12), row_group_size=60)
    write_parquet(folder / "b.parquet", texts(rng, 150, 22), row_group_size=50)
    write_parquet(folder / "c.parquet", texts(rng, 216, 10), row_group_size=8)
    lines = []
    for i, text in enumerate(texts(rng, 120, 16)):
        # JSON's own escapes on some lines, UTF-8 on the others
        lines.append(json.dumps({"id": i, "text": text}, ensure_ascii=i % 3 == 0))
    (folder / "d.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_job(path: Path, extra: dict[str, str]) -> None:
    keys = {
        "input.paths": '["in"]',
        "tokenizer.path": '"tokenizer.json"',
        "output.dir": f'"out_{path.stem}"',
        "run.workers": "1",
        "run.shard_mb": repr(SHARD_MB),
    }
    keys.update({k: json.dumps(v) for k, v in extra.items()})
    sections: dict[str, list[str]] = {}
    for key, value in keys.items():
        section, name = key.split(".", 1)
        sections.setdefault(section, []).append(f"{name} = {value}")
    text = "\n\n".join(f"[{s}]\n" + "\n".join(lines) for s, lines in sections.items())
    path.write_text(text + "\n", encoding="utf-8")


def old_code() -> tuple[Path, str]:
    """The checkout the imported ``batchtok`` comes from, and its commit (clean, or refused)."""
    import batchtok

    root = Path(batchtok.__file__).resolve().parents[1]
    print(f"batchtok from {batchtok.__file__}")

    def git(*args: str) -> str:
        return subprocess.check_output(["git", "-C", str(root), *args], text=True).strip()

    if git("status", "--porcelain", "--", "batchtok"):
        sys.exit(f"error: {root}/batchtok has uncommitted changes; use a clean worktree")
    return root, git("rev-parse", "HEAD")


def kill_run(work: Path, job: Path, code_root: Path) -> list[str]:
    """Run ``job`` with the old code until the hooks kill it; the shards it finished."""
    flag = work / f"{job.stem}.stopped"
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    proc = subprocess.run(
        [sys.executable, "-c", KILLED_RUN, job.name, str(STOP_AFTER), str(flag)],
        cwd=work,
        env=env,
        start_new_session=True,
        capture_output=True,
        text=True,
        timeout=300,
    )
    if proc.returncode != -signal.SIGKILL or not flag.exists():
        sys.exit(f"error: the run of {job.name} was not killed as planned:\n{proc.stderr}")
    return json.loads(flag.read_text())


def old_plan(work: Path, job: Path, code_root: Path) -> dict:
    """The old code's ``batchtok plan --json`` of the killed state (it writes nothing)."""
    env = {**os.environ, "PYTHONPATH": str(code_root)}
    found = subprocess.run(
        [sys.executable, "-m", "batchtok", "plan", job.name, "--json"],
        cwd=work,
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    plan = json.loads(found.stdout)
    return {
        s["shard"]: {"status": s["status"], "rows": s["rows"], "key": s["key"]}
        for f in plan["files"]
        for s in f["shards"]
    }


def left_behind(out: Path) -> dict[str, list[str]]:
    """The files a killed run left in ``out``: complete outputs (everything outside the state
    directory: it was killed before writing a summary), parts waiting to be joined, and
    temporary files; paths relative to ``out``."""
    found: dict[str, list[str]] = {"outputs": [], "parts": [], "temporary": []}
    for path in sorted(out.rglob("*")):
        rel = path.relative_to(out).as_posix()
        if path.is_dir():
            if not any(path.iterdir()):
                sys.exit(f"error: {path} is empty, and git does not keep empty directories")
        elif not rel.startswith(".batchtok/"):
            found["outputs"].append(rel)
        elif rel.startswith(".batchtok/parts/") and rel.endswith(".parquet"):
            found["parts"].append(rel)
        elif rel.startswith(".batchtok/tmp/"):
            found["temporary"].append(rel)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="the fixture directory")
    args = parser.parse_args()
    code_root, commit = old_code()
    with tempfile.TemporaryDirectory(prefix="batchtok-resume-") as tmp:
        work = Path(tmp) / "job"
        write_inputs(work / "in")
        shutil.copyfile(GPT2, work / "tokenizer.json")
        manifest: dict = {
            "commit": commit,
            "tokenizer": GPT2.relative_to(REPO).as_posix(),
            "jobs": {},
        }
        for name, extra in JOBS.items():
            job = work / f"{name}.toml"
            write_job(job, extra)
            finished = kill_run(work, job, code_root)
            plan = old_plan(work, job, code_root)
            manifest["jobs"][job.name] = {
                "output_dir": f"out_{name}",
                "finished": finished,
                "shards": plan,
                **left_behind(work / f"out_{name}"),
            }
            statuses = {s: p["status"] for s, p in plan.items()}
            print(f"{job.name}: finished {finished}; plan {statuses}")
            if set(statuses.values()) != STATUSES or not manifest["jobs"][job.name]["temporary"]:
                sys.exit(
                    f"error: {job.name} did not stop with a part, a temporary file and "
                    "shards both complete and to do; change the inputs or STOP_AFTER"
                )
        (work / "tokenizer.json").unlink()
        for flag in work.glob("*.stopped"):
            flag.unlink()
        (work / "manifest.json").write_text(
            json.dumps(manifest, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
        readme = args.out / "README.md"
        kept = readme.read_text(encoding="utf-8") if readme.exists() else None
        if args.out.exists():
            shutil.rmtree(args.out)
        shutil.copytree(work, args.out, symlinks=True)
        if kept is not None:
            readme.write_text(kept, encoding="utf-8")
    size = sum(p.stat().st_size for p in args.out.rglob("*") if p.is_file())
    print(f"wrote {args.out} ({size / 1e3:.0f} kB)")


if __name__ == "__main__":
    main()
