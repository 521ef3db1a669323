"""The Ray executor (``run.executor = "ray"``) on a real local Ray cluster: the same bytes as
the local executor (with a killed actor's shard retried), runs interrupted on one executor
finished on the other.

One cluster serves the module. It lives in a child process, and every Ray run is a driver
subprocess that joins it (``RAY_ADDRESS``): the test process never connects to Ray, so its
local runs fork their workers safely (forking a process that talks to Ray can deadlock).
Patches for the actors travel as the driver's ``worker_process_setup_hook``
(tests/support/ray_hooks.py).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from batchtok.runner.io.lock import current_holder
from tests.support.ray_runs import (
    cluster_process,
    finish,
    ray_environment,
    ray_job,
    ray_run,
    same_output,
    write_inputs,
)
from tests.support.runner import (
    GPT2,
    invoke,
    kill_worker_on_shard,
    summary,
    visible_files,
    write_job,
)
from tests.support.s3 import CREDENTIALS, bucket, incomplete_uploads, moto_server, objects

pytest.importorskip("ray")

CLUSTER = """
import sys, tempfile
import ray
ray.init(
    num_cpus=2,
    include_dashboard=False,
    object_store_memory=80 * 1024 * 1024,
    _temp_dir=sys.argv[1],
    logging_level="WARNING",
)
print(ray.get_runtime_context().gcs_address, flush=True)
sys.stdin.read()  # until the test process closes it (or dies)
ray.shutdown()
"""


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory) -> Iterator[tuple[subprocess.Popen, dict[str, str]]]:
    """The module's cluster, starting (its process and environment; see :func:`ray_env`)."""
    home = tmp_path_factory.mktemp("ray_home")
    temp_dir = tempfile.mkdtemp(prefix="btray-")  # short: Ray's socket paths
    env = {
        **ray_environment(home, temp_dir),
        **CREDENTIALS,  # the actors upload to the module's S3 server
    }
    with cluster_process(CLUSTER, temp_dir, env) as proc:
        yield proc, env


@pytest.fixture(scope="module")
def ray_env(ray_cluster, reference) -> dict[str, str]:
    """The environment of a driver that joins the module's cluster, once it started (the
    local reference run overlaps its start)."""
    proc, env = ray_cluster
    address = proc.stdout.readline().strip()
    assert address, "the Ray cluster did not start"
    return {**env, "RAY_ADDRESS": address}


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    """a and b: one shard each; c: several shards (parts, joined at the end)."""
    return write_inputs(tmp_path_factory.mktemp("ray_inputs"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory, inputs: Path) -> Path:
    """The local executor's output of the job."""
    job = ray_job(tmp_path_factory.mktemp("ray_reference"), inputs, "out")
    code, output = invoke("run", job)
    assert code == 0, output
    return job.parent / "out"


def test_a_ray_run_writes_the_bytes_of_a_local_run_though_an_actor_is_killed(
    ray_env, inputs, reference, tmp_path
) -> None:
    """One check of both (each Ray run costs seconds): the actor writing a shard dies, is
    replaced and the shard retried; the output is still the local run's, byte for byte."""
    job = ray_job(tmp_path, inputs, "out")
    hook = ["die_once_on_shard", "c.parquet#2", str(tmp_path / "died")]
    code, stderr = finish(ray_run(ray_env, job, hook=hook, stderr=subprocess.PIPE))
    assert code == 0, stderr
    assert "(Ray actors)" in stderr
    assert (tmp_path / "died").exists()  # an actor did die
    assert "died while running shard c.parquet#2" in stderr
    report = summary(tmp_path / "out")
    assert [r["task"] for r in report["retries"]] == ["shard c.parquet#2"]
    assert report["status"] == "success"
    assert report["job"]["run"]["executor"] == "ray"
    assert report["shards"] == summary(reference)["shards"]
    same_output(tmp_path / "out", reference)
    # nothing to do: no phase starts, so the test process does not connect to Ray
    code, output = invoke("run", job, "--executor", "ray")
    assert code == 0, output
    assert "nothing to do" in output


def test_a_run_failed_locally_is_finished_on_ray_redoing_nothing_complete(
    ray_env, inputs, reference, tmp_path, monkeypatch
) -> None:
    job = ray_job(tmp_path, inputs, "out")
    kill_worker_on_shard("c.parquet#2", monkeypatch, os.getpid())
    code, output = invoke("run", job)
    assert code == 1, output
    monkeypatch.undo()
    code, stderr = finish(ray_run(ray_env, job, stderr=subprocess.PIPE))
    assert code == 0, stderr
    report = summary(tmp_path / "out")
    assert report["shards"]["done"] == 1  # only the shard that failed
    assert report["shards"]["cached"] == report["shards"]["total"] - 1
    same_output(tmp_path / "out", reference)


def test_a_killed_ray_run_is_finished_locally_redoing_nothing_complete(
    ray_env, inputs, reference, tmp_path
) -> None:
    job = ray_job(tmp_path, inputs, "out")
    out = tmp_path / "out"
    hook = ["slow_encoding", 0.05]
    proc = ray_run(
        ray_env, job, "--set", "run.batch_mb=0.0005", hook=hook, stderr=subprocess.DEVNULL
    )
    parts = out / ".batchtok" / "parts"
    deadline = time.monotonic() + 120
    while not (parts.exists() and any(parts.glob("*.parquet"))):
        assert proc.poll() is None, "the run ended before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 20
    while current_holder(out / ".batchtok" / "lock") is not None:
        assert time.monotonic() < deadline, "the killed run kept the lock"
        time.sleep(0.05)
    code, output = invoke("run", job)
    assert code == 0, output
    report = summary(out)
    assert report["shards"]["cached"] >= 1  # the parts the Ray run completed
    assert report["shards"]["done"] < report["shards"]["total"]
    same_output(out, reference)


def test_ray_actors_publish_an_s3_output_themselves_with_the_bytes_of_a_local_run(
    ray_env, inputs, reference, tmp_path
) -> None:
    with moto_server() as endpoint:
        bucket(endpoint, "ray-out")
        job = write_job(
            tmp_path / "s3.toml",
            {
                "input.paths": [str(inputs)],
                "tokenizer.path": str(GPT2),
                "output.dir": "s3://ray-out/tokens",
                "storage.endpoint": endpoint,
                "run.workers": 2,
                "run.shard_mb": 0.004,
                "output.row_group_mb": 0.0005,
            },
        )
        code, stderr = finish(ray_run(ray_env, job, stderr=subprocess.PIPE))
        assert code == 0, stderr
        found = objects(endpoint, "ray-out", "tokens/")
        for name in visible_files(reference):
            assert found[name] == (reference / name).read_bytes(), name
        assert not [k for k in found if k.startswith(".batchtok/parts/")]
        assert (
            json.loads(found["_batchtok_summary.json"])["token_stats"]
            == (summary(reference)["token_stats"])
        )
        assert incomplete_uploads(endpoint, "ray-out") == []
        code, output = invoke("run", job, "--executor", "ray")
        assert code == 0 and "nothing to do" in output, output


def test_a_stopped_ray_actor_is_killed_and_its_shard_retried_on_a_fresh_one(
    ray_env, inputs, reference, tmp_path
) -> None:
    """run.stall_timeout under Ray: the actor writing a shard stops itself (SIGSTOP); the
    driver's probe goes unanswered, it kills the actor and retries the shard on a fresh one."""
    job = ray_job(tmp_path, inputs, "out")
    marker = tmp_path / "stopped"
    hook = ["stop_once_on_shard", "c.parquet#2", str(marker)]
    started = time.monotonic()
    proc = ray_run(ray_env, job, "--set", "run.stall_timeout=2", hook=hook, stderr=subprocess.PIPE)
    code, stderr = finish(proc)
    assert code == 0, stderr
    assert time.monotonic() - started < 120
    pid = marker.read_text()
    assert (
        f"Ray actor (process {pid}) reported no progress for" in stderr
        and "while running shard c.parquet#2 (run.stall_timeout = 2 s): killed it" in stderr
    ), stderr
    report = summary(tmp_path / "out")
    assert [r["task"] for r in report["retries"]] == ["shard c.parquet#2"]
    same_output(tmp_path / "out", reference)
    # ray.kill reaches a stopped process through its raylet, which kills it after a grace
    deadline = time.monotonic() + 60
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not os.path.exists(f"/proc/{pid}"), "the stopped actor is still there"


def run_locally_and_on_ray(
    ray_env: dict[str, str], inputs: Path, tmp_path: Path, *args: str
) -> None:
    """The same job with ``args``, once with local workers into ``tmp_path/local`` and once
    on the Ray cluster into ``tmp_path/ray``; both must succeed."""
    code, output = invoke("run", ray_job(tmp_path, inputs, "local"), *args)
    assert code == 0, output
    remote = ray_job(tmp_path, inputs, "ray")
    code, stderr = finish(ray_run(ray_env, remote, *args, stderr=subprocess.PIPE))
    assert code == 0, stderr


def test_a_shuffled_stream_on_ray_is_the_local_runs_byte_for_byte(
    ray_env, inputs, tmp_path
) -> None:
    """The stream layout's files (cut by tokens, shuffled, with provenance) are written by
    the actors as by local workers: the same bytes."""
    layout = [
        "--set", "output.layout=stream", "--set", "output.max_tokens_per_file=2000",
        "--set", "output.shuffle_seed=9", "--set", "output.format=megatron",
        "--set", "output.provenance=true", "--set", "name=job",
    ]  # fmt: skip
    run_locally_and_on_ray(ray_env, inputs, tmp_path, *layout)
    names = [n for n in visible_files(tmp_path / "local") if not n.endswith(".batchtok.json")]
    assert len([n for n in names if n.endswith(".idx")]) > 1
    assert [n for n in visible_files(tmp_path / "ray") if not n.endswith(".batchtok.json")] == names
    for name in names:
        assert (tmp_path / "ray" / name).read_bytes() == (tmp_path / "local" / name).read_bytes()


def test_several_tokenizers_on_ray_read_each_shard_once_with_the_local_bytes(
    ray_env, inputs, tmp_path
) -> None:
    """Two tokenizers in one pass on Ray: the actors load both; the first run encodes every
    shard for both, the second only joins; the outputs are a local run's, byte for byte."""
    from tests.support.fixtures import tokenizer_path

    paths = {"gpt2": str(GPT2), "gemma3": str(tokenizer_path("gemma3"))}
    table = ", ".join(f"{n} = {json.dumps(p)}" for n, p in paths.items())
    run_locally_and_on_ray(ray_env, inputs, tmp_path, "--set", f"tokenizer.paths={{{table}}}")
    assert summary(tmp_path / "ray" / "gemma3")["shards"]["done"] == 0  # read by gpt2's run
    assert summary(tmp_path / "ray" / "gpt2")["shards"]["done"] > 0
    for name in paths:
        for f in visible_files(tmp_path / "local" / name):
            assert (tmp_path / "ray" / name / f).read_bytes() == (
                tmp_path / "local" / name / f
            ).read_bytes(), (name, f)
