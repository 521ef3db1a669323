"""A Ray node lost in the middle of a run: the shards it held are retried on the node left,
the driver says once which node it lost and what it retried, and the output is a clean
run's, byte for byte.

The cluster has two nodes on this machine (``ray.cluster_utils.Cluster``, one CPU each, so
one actor each), in a child process that removes the second node, killing its raylet and
every process of it (SIGKILL), when the test asks. The head node's GCS declares a node dead
after missed health checks: the cluster checks every second (Ray's default: every 3 s after
5 s), so the loss is known a few seconds after the kill. The run is a driver subprocess
joining the cluster, as in test_ray.py; the second node's actor holds its first shard in
flight (tests/support/ray_hooks.py ``hold_on_node``) until the node is killed.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.ray_runs import (
    cluster_process,
    finish,
    ray_environment,
    ray_job,
    ray_run,
    same_output,
    write_inputs,
)
from tests.support.runner import invoke, summary

pytest.importorskip("ray")

# argv: the temporary directory; prints the cluster's address and the second node's id, then
# removes that node (SIGKILL, no grace) when it reads "kill", printing "killed".
CLUSTER = """
import sys
from ray.cluster_utils import Cluster

health = {"health_check_initial_delay_ms": 1000, "health_check_period_ms": 1000}
cluster = Cluster(
    initialize_head=True,
    head_node_args={
        "num_cpus": 1,
        "include_dashboard": False,
        "object_store_memory": 80 * 1024 * 1024,
        "temp_dir": sys.argv[1],
        "_system_config": health,
    },
)
second = cluster.add_node(num_cpus=1, object_store_memory=80 * 1024 * 1024)
print(cluster.address, second.node_id, flush=True)
for line in sys.stdin:
    if line.strip() == "kill":
        cluster.remove_node(second, allow_graceful=False)
        print("killed", flush=True)
cluster.shutdown()
"""


# The encoding of every batch is slowed, so that the head node's actor is at work when the
# second node is lost (and for a while after the loss is known): about 70 batches of 0.1 s.
BATCH_MB = 0.0005
SLOW_BATCH_SECONDS = 0.1


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory) -> Iterator[tuple[subprocess.Popen, dict[str, str]]]:
    """The module's two-node cluster, starting (its process, and the environment of a driver
    joining it, but for ``RAY_ADDRESS``, which its first line gives)."""
    temp_dir = tempfile.mkdtemp(prefix="btnode-")  # short: Ray's socket paths
    os.makedirs(os.path.join(temp_dir, "ray"))  # RAY_TMPDIR's: the address file goes there
    env = ray_environment(tmp_path_factory.mktemp("ray_home"), temp_dir)
    with cluster_process(CLUSTER, temp_dir, env) as proc:
        yield proc, env


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> Path:
    return write_inputs(tmp_path_factory.mktemp("node_loss_inputs"))


@pytest.fixture(scope="module")
def reference(tmp_path_factory, inputs: Path, two_nodes) -> Path:
    """The local executor's output of the job (while the cluster starts)."""
    job = ray_job(tmp_path_factory.mktemp("node_loss_reference"), inputs, "out")
    code, output = invoke("run", job)
    assert code == 0, output
    return job.parent / "out"


def test_a_lost_node_s_shards_are_retried_on_the_node_left_and_the_driver_says_so(
    two_nodes, inputs, reference, tmp_path
) -> None:
    cluster, env = two_nodes
    address, second = cluster.stdout.readline().split()
    env = {**env, "RAY_ADDRESS": address}
    job = ray_job(tmp_path, inputs, "out")
    marker = tmp_path / "held"
    hook = ["hold_on_node", second, str(marker), SLOW_BATCH_SECONDS]
    proc = ray_run(env, job, "--set", f"run.batch_mb={BATCH_MB}", hook=hook, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while not marker.exists() or not marker.read_text():
        assert proc.poll() is None, proc.communicate()[1]
        assert time.monotonic() < deadline, "the second node never took a shard"
        time.sleep(0.05)
    held = json.loads(marker.read_text())  # the shard the second node holds, its actor's pid
    cluster.stdin.write("kill\n")
    cluster.stdin.flush()
    assert cluster.stdout.readline().strip() == "killed"

    code, stderr = finish(proc, timeout=90)
    print(stderr)  # the driver's log (pytest shows it with -s, or on a failure)
    assert code == 0, stderr
    label = f"shard {held['shard']}"
    lost = [line for line in stderr.splitlines() if "was lost" in line]
    assert len(lost) == 1, stderr  # said once
    assert f"Ray node {second}" in lost[0], lost[0]
    assert f"1 task it was running is retried on the nodes left: {label}" in lost[0], lost[0]
    assert "1 actor on 1 CPU from now on" in lost[0], lost[0]

    report = summary(tmp_path / "out")
    assert report["status"] == "success"
    assert report["failures"] == []
    assert [r["task"] for r in report["retries"]] == [label]
    assert f"Ray node {second}" in report["retries"][0]["error"]
    assert len(report["lost_nodes"]) == 1
    record = report["lost_nodes"][0]
    assert record["node"] == second
    assert record["retried"] == [label]
    assert report["shards"] == summary(reference)["shards"]
    same_output(tmp_path / "out", reference)  # the held shard's partial file is gone too
    # no process of the lost node is left (its actor ends with its raylet)
    deadline = time.monotonic() + 10
    while os.path.exists(f"/proc/{held['pid']}") and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not os.path.exists(f"/proc/{held['pid']}"), "the lost node's actor is still there"
