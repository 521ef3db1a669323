"""Helpers of the runner's Ray tests (tests/runner/test_ray.py, test_ray_node_loss.py).

A test process never connects to Ray itself (forking a process that talks to Ray can
deadlock, and its local runs fork their workers): each Ray run is a driver subprocess that
joins a cluster living in another subprocess (``RAY_ADDRESS``). Patches for the actors
travel as the driver's ``worker_process_setup_hook`` (:mod:`tests.support.ray_hooks`).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from tests.support.runner import GPT2, REPO, summary, texts, visible_files, write_job, write_parquet

# argv: hook as JSON ([name, *args] of tests.support.ray_hooks, or null), then run's arguments
DRIVER = """
import json, sys
hook = json.loads(sys.argv[1])
if hook:
    import ray
    from tests.support import ray_hooks
    name, *args = hook
    def setup():
        getattr(ray_hooks, name)(*args)
    ray.init(runtime_env={"worker_process_setup_hook": setup}, logging_level="WARNING")
from batchtok.cli import main
main(["run", *sys.argv[2:]])
"""


def ray_environment(home: Path, temp_dir: str) -> dict[str, str]:
    """The environment of a test cluster's processes and of the drivers joining it."""
    env = {
        **os.environ,
        "HOME": str(home),  # Ray >= 2.60 writes an auth token under ~/.ray
        "RAY_AUTH_MODE": "disabled",
        # where Ray writes what it writes outside a session (the cluster's address for
        # ray.init("auto")): not /tmp/ray, which the machine's other Ray users share
        "RAY_TMPDIR": temp_dir,
        "PYTHONPATH": str(REPO),
    }
    env.pop("RAY_ADDRESS", None)
    return env


@contextlib.contextmanager
def cluster_process(script: str, temp_dir: str, env: dict[str, str]) -> Iterator[subprocess.Popen]:
    """``python -c script temp_dir``: a process holding a Ray cluster until its stdin is
    closed (what it prints comes on its stdout); ``temp_dir`` is removed once it ended."""
    proc = subprocess.Popen(
        [sys.executable, "-c", script, temp_dir],
        cwd=REPO,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        proc.stdin.close()  # type: ignore[union-attr]
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(temp_dir, ignore_errors=True)


def write_inputs(root: Path) -> Path:
    """a and b: one shard each; c: several shards (parts, joined at the end)."""
    write_parquet(root / "a.parquet", texts(40, seed=1), row_group_size=40)
    write_parquet(root / "b.parquet", texts(40, seed=2), row_group_size=40)
    write_parquet(root / "c.parquet", texts(200, seed=3), row_group_size=20)
    return root


def ray_job(tmp_path: Path, inputs: Path, name: str) -> Path:
    """The job of the Ray tests (two workers, small shards and row groups), out to ``name``."""
    return write_job(
        tmp_path / f"{name}.toml",
        {
            "input.paths": [str(inputs)],
            "tokenizer.path": str(GPT2),
            "output.dir": str(tmp_path / name),
            "run.workers": 2,
            "run.shard_mb": 0.004,
            "output.row_group_mb": 0.0005,
        },
    )


def ray_run(
    env: dict[str, str], job: Path, *args: str, hook: list | None = None, **popen
) -> subprocess.Popen:
    """``batchtok run JOB --executor ray ARGS`` in a driver subprocess joining ``env``'s
    cluster, with ``hook`` (see :data:`DRIVER`) in its actors."""
    command = [sys.executable, "-c", DRIVER, json.dumps(hook), str(job), "--executor", "ray"]
    return subprocess.Popen([*command, *args], cwd=REPO, env=env, text=True, **popen)


def finish(proc: subprocess.Popen, timeout: float = 300) -> tuple[int, str]:
    """The driver's exit code and stderr (the run's log); a driver still running after
    ``timeout`` seconds is killed, and the test fails with its log."""
    try:
        _, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, stderr = proc.communicate()
        raise AssertionError(f"the run did not end in {timeout:g} s:\n{stderr}") from None
    return proc.returncode, stderr


def same_output(out: Path, reference: Path) -> None:
    """Every visible file byte for byte, and the token statistics of the run summaries."""
    assert visible_files(out) == visible_files(reference) == ["a.parquet", "b.parquet", "c.parquet"]
    for name in visible_files(reference):
        assert (out / name).read_bytes() == (reference / name).read_bytes(), name
    assert summary(out)["token_stats"] == summary(reference)["token_stats"]
    tmp = out / ".batchtok" / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []
    assert list((out / ".batchtok" / "parts").glob("*")) == []
