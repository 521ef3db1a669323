"""Google Cloud Storage and Azure Blob Storage, in and out, against real servers on
127.0.0.1 (a GCS emulator, Azurite: tests/support/clouds.py), with nothing but each cloud's
standard variable set (``STORAGE_EMULATOR_HOST``, ``AZURE_STORAGE_CONNECTION_STRING``; no
``[storage]`` table): the outputs equal a local run's byte for byte, a re-run redoes nothing,
``--verify`` reads them back, the lock is taken by one of two runs, and an upload killed in
the middle leaves nothing visible."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from batchtok.runner.io.arrow_fs import StorageOptions
from batchtok.runner.io.lock import LockHeld, run_lock
from batchtok.runner.io.stores import as_path
from tests.support import clouds
from tests.support.runner import REPO, basic_job, invoke, texts, write_parquet

pytest.importorskip("google.cloud.storage")
pytest.importorskip("azure.storage.blob")


@dataclass(frozen=True)
class Cloud:
    scheme: str
    make_bucket: Callable[[str], None]
    upload_tree: Callable[[Path, str, str], None]
    objects: Callable[..., dict[str, bytes]]
    environment: dict[str, str]


@pytest.fixture(scope="module")
def gcs() -> Iterator[Cloud]:
    with clouds.gcs_server() as url:
        yield Cloud(
            "gs",
            clouds.gcs_bucket,
            clouds.gcs_upload_tree,
            clouds.gcs_objects,
            {"STORAGE_EMULATOR_HOST": url},
        )


@pytest.fixture(scope="module")
def azure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    with clouds.azurite_server(tmp_path_factory.mktemp("azurite")) as connection:
        yield Cloud(
            "az",
            clouds.az_container,
            clouds.az_upload_tree,
            clouds.az_objects,
            {"AZURE_STORAGE_CONNECTION_STRING": connection},
        )


@pytest.fixture(params=["gs", "az"])
def cloud(request: pytest.FixtureRequest) -> Cloud:
    return request.getfixturevalue({"gs": "gcs", "az": "azure"}[request.param])


def _bucket(cloud: Cloud, tmp_path: Path) -> str:
    name = f"b{abs(hash(tmp_path.name)) % 10**8}-{cloud.scheme}"
    cloud.make_bucket(name)
    return name


def _inputs(root: Path) -> Path:
    local = root / "in"
    write_parquet(local / "a.parquet", texts(150, seed=11), row_group_size=30)
    lines = [json.dumps({"text": t}) for t in texts(90, seed=12)]
    (local / "sub").mkdir(parents=True)
    (local / "sub" / "b.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return local


def _outputs(files: dict[str, bytes]) -> dict[str, bytes]:
    return {k: v for k, v in files.items() if not k.startswith(".batchtok/")}


def _local_outputs(out: Path) -> dict[str, bytes]:
    return {
        p.relative_to(out).as_posix(): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and ".batchtok" not in p.relative_to(out).parts
    }


def test_cloud_in_and_out_equals_a_local_run_and_a_rerun_redoes_nothing(
    cloud: Cloud, tmp_path: Path
) -> None:
    local = _inputs(tmp_path)
    name = _bucket(cloud, tmp_path)
    cloud.upload_tree(local, name, "corpus")
    for d in ("disk", "cloud"):
        (tmp_path / d).mkdir()
    on_disk = basic_job(tmp_path / "disk", input__paths=[str(local)], run__shard_mb=0.002)
    code, output = invoke("run", on_disk)
    assert code == 0, output
    remote = basic_job(
        tmp_path / "cloud",
        input__paths=[f"{cloud.scheme}://{name}/corpus/"],
        output__dir=f"{cloud.scheme}://{name}/tokens",
        run__shard_mb=0.002,
    )
    code, output = invoke("run", remote)
    assert code == 0, output
    written = cloud.objects(name, "tokens/")
    want = _local_outputs(tmp_path / "disk" / "out")
    assert set(_outputs(written)) == set(want) and want
    for key, data in want.items():
        if key.endswith(".parquet"):
            assert _outputs(written)[key] == data, key
    assert ".batchtok/lock" not in written  # released
    assert any(k.startswith(".batchtok/records/") for k in written)  # state under the prefix
    code, output = invoke("run", remote)
    assert code == 0 and "nothing to do" in output, output
    code, output = invoke("run", remote, "--verify")
    assert code == 0 and "nothing to do" in output, output


def test_an_output_object_changed_by_hand_is_caught_by_verify_and_written_again(
    cloud: Cloud, tmp_path: Path
) -> None:
    local = _inputs(tmp_path)
    name = _bucket(cloud, tmp_path)
    (tmp_path / "job").mkdir()
    job = basic_job(
        tmp_path / "job", input__paths=[str(local)], output__dir=f"{cloud.scheme}://{name}/t"
    )
    code, output = invoke("run", job)
    assert code == 0, output
    before = cloud.objects(name, "t/")["a.parquet"]
    target = as_path(f"{cloud.scheme}://{name}/t/a.parquet", StorageOptions())
    target.write_bytes(before[:-9] + b"corrupted")
    code, output = invoke("run", job, "--verify")
    assert code == 0, output
    assert cloud.objects(name, "t/")["a.parquet"] == before


def test_of_two_runs_racing_for_the_lock_one_wins(cloud: Cloud, tmp_path: Path) -> None:
    name = _bucket(cloud, tmp_path)
    path = as_path(f"{cloud.scheme}://{name}/t/.batchtok/lock", StorageOptions())
    won: list[object] = []
    refused: list[str] = []
    start = threading.Barrier(4)

    def take() -> None:
        lock = run_lock(path, job="race")
        start.wait()
        try:
            won.append(lock.acquire())
        except LockHeld as exc:
            refused.append(str(exc))

    threads = [threading.Thread(target=take) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(won) == 1 and len(refused) == 3, (won, refused)
    holder = won[0]
    assert holder.holds_path()  # type: ignore[attr-defined]
    # a stale lock's takeover is conditional on its version: of two, one wins
    version = path.read_versioned()[1]
    first, second = run_lock(path), run_lock(path)
    assert first._put(version) and not second._put(version)  # type: ignore[union-attr]
    assert not holder.holds_path()  # type: ignore[attr-defined]
    first.release()
    assert path.meta() is None


# A run whose first large upload stops after its first part (a resumable upload's first
# chunk, a block) and waits to be killed; the thresholds are lowered so that a small output
# is uploaded in parts.
KILLED_RUN = r"""
import os, sys, time
import requests
from batchtok.runner.io import azure, gcs

gcs.CHUNK_BYTES = 256 * 1024
import google.cloud.storage.blob as gblob
gblob._MAX_MULTIPART_SIZE = 256 * 1024
azure.SINGLE_PUT_BYTES = 256 * 1024
azure.BLOCK_BYTES = 256 * 1024
marker = sys.argv[1]
send = requests.Session.send
seen = []

def stopping(self, request, **kwargs):
    response = send(self, request, **kwargs)
    url = request.url or ""
    part = "upload_id" in url or "comp=block" in url
    if request.method == "PUT" and ".parquet" in url and part:
        seen.append(url)
        if not os.path.exists(marker):
            open(marker, "w").close()
        time.sleep(600)
    return response

requests.Session.send = stopping
sys.argv = ["batchtok", *sys.argv[2:]]
from batchtok.cli import program
program()
"""


def test_a_run_killed_mid_upload_leaves_nothing_visible_and_resumes(
    cloud: Cloud, tmp_path: Path
) -> None:
    local = tmp_path / "in"
    write_parquet(local / "big.parquet", texts(6000, seed=21, max_words=60), row_group_size=3000)
    name = _bucket(cloud, tmp_path)
    (tmp_path / "job").mkdir()
    job = basic_job(
        tmp_path / "job",
        input__paths=[str(local)],
        output__dir=f"{cloud.scheme}://{name}/t",
        run__workers=1,
        **{"output.compression": "none"},
    )
    marker = tmp_path / "uploading"
    env = {**os.environ, **cloud.environment}
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_RUN, str(marker), "run", str(job)],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 120
    while not marker.exists():
        assert proc.poll() is None, proc.stderr.read().decode()  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the upload never started"
        time.sleep(0.1)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert "big.parquet" not in cloud.objects(name, "t/")  # a part was sent; nothing visible
    code, output = invoke("run", job)
    assert code == 0, output
    (tmp_path / "disk").mkdir()
    code, output = invoke(
        "run",
        basic_job(
            tmp_path / "disk",
            input__paths=[str(local)],
            run__workers=1,
            **{"output.compression": "none"},
        ),
    )
    assert code == 0, output
    want = (tmp_path / "disk" / "out" / "big.parquet").read_bytes()
    assert cloud.objects(name, "t/")["big.parquet"] == want


def _cli(args: list[str], environment: dict[str, str]) -> subprocess.CompletedProcess:
    """``batchtok ARGS`` in a fresh process from the repository's root, with the variables of
    ``environment`` and no other storage setting (no cloud's variables of this process)."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "AZURE_", "GOOGLE_"))}
    env.pop("STORAGE_EMULATOR_HOST", None)
    env.update(environment)
    return subprocess.run(
        [sys.executable, "-m", "batchtok", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def _run_cli(args: list[str], environment: dict[str, str]) -> str:
    """:func:`_cli`, which must succeed; its output."""
    done = _cli(args, environment)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout + done.stderr


@pytest.fixture(scope="module")
def s3() -> Iterator[Cloud]:
    from tests.support.s3 import CREDENTIALS, bucket, moto_server, objects, upload_tree

    with moto_server() as endpoint:

        def upload(local: Path, name: str, prefix: str) -> None:
            upload_tree(bucket_fs[name], local, f"{name}/{prefix}")

        bucket_fs: dict[str, object] = {}

        def make(name: str) -> None:
            bucket_fs[name] = bucket(endpoint, name)

        yield Cloud(
            "s3",
            make,
            upload,  # type: ignore[arg-type]
            lambda name, prefix="": objects(endpoint, name, prefix),
            {**CREDENTIALS, "AWS_ENDPOINT_URL": endpoint},
        )


@pytest.mark.parametrize("which", ["gs", "az", "s3"])
def test_the_example_job_in_and_out_of_each_cloud_with_only_its_standard_environment(
    which: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """``batchtok run jobs/example.toml -i SCHEME://B/in/ -o SCHEME://B/out/`` with only the
    cloud's standard variable set (and, for S3, moto's test credentials) equals the local
    run; the inputs hold the example's Parquet file and a datasets save_to_disk directory."""
    datasets = pytest.importorskip("datasets")
    cloud: Cloud = request.getfixturevalue({"gs": "gcs", "az": "azure", "s3": "s3"}[which])
    local = tmp_path / "in"
    local.mkdir()
    (local / "sample.parquet").write_bytes((REPO / "configs/samples/sample.parquet").read_bytes())
    rows = {"text": texts(40, seed=31), "n": list(range(40))}
    datasets.Dataset.from_dict(rows).save_to_disk(str(local / "ds"), num_shards=2)
    name = _bucket(cloud, tmp_path)
    cloud.upload_tree(local, name, "in")
    _run_cli(["run", "jobs/example.toml", "-i", str(local), "-o", str(tmp_path / "out")], {})
    remote = ["run", "jobs/example.toml", "-i", f"{which}://{name}/in/", "-o"]
    _run_cli([*remote, f"{which}://{name}/out/"], cloud.environment)

    def data(files: dict[str, bytes]) -> dict[str, bytes]:  # (the summary says where and when)
        return {k: v for k, v in _outputs(files).items() if not k.startswith("_batchtok")}

    want = data(_local_outputs(tmp_path / "out"))
    assert set(want) == {
        "sample.parquet",
        "ds/data-00000-of-00002.parquet",
        "ds/data-00001-of-00002.parquet",
    }
    assert data(cloud.objects(name, "out/")) == want
    again = _run_cli([*remote, f"{which}://{name}/out/"], cloud.environment)
    assert "nothing to do" in again, again


@pytest.mark.parametrize(
    ("uri", "says"),
    [
        (
            "gs://bkt/out/",
            "no Google Cloud credentials were found: set GOOGLE_APPLICATION_CREDENTIALS",
        ),
        (
            "az://cont/out/",
            "no Azure storage account was named: set AZURE_STORAGE_CONNECTION_STRING",
        ),
    ],
)
def test_a_cloud_without_credentials_is_refused_before_any_work_naming_what_to_set(
    uri: str, says: str, tmp_path: Path
) -> None:
    # (HOME: no gcloud login of the machine's user)
    done = _cli(["run", "jobs/example.toml", "-o", uri], {"HOME": str(tmp_path)})
    assert done.returncode == 2, done.stdout + done.stderr
    assert "output.dir" in done.stderr and says in done.stderr, done.stderr


def test_the_storage_table_reaches_gcs_and_azure_without_their_variables(
    gcs: Cloud, azure: Cloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """[storage].endpoint (with anonymous access for the emulator, or the account's key from
    AZURE_STORAGE_ACCOUNT_KEY for Azurite) takes the place of each cloud's endpoint variable."""
    local = _inputs(tmp_path)
    buckets = {}
    for cloud in (gcs, azure):
        buckets[cloud.scheme] = _bucket(cloud, tmp_path / cloud.scheme)
        cloud.upload_tree(local, buckets[cloud.scheme], "corpus")
    gcs_url = gcs.environment["STORAGE_EMULATOR_HOST"]
    connection = azure.environment["AZURE_STORAGE_CONNECTION_STRING"]
    blob_endpoint = next(p.split("=", 1)[1] for p in connection.split(";") if p.startswith("Blob"))
    monkeypatch.delenv("STORAGE_EMULATOR_HOST")
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_KEY", clouds.AZURITE_KEY)
    cases = [
        ("gs", {"storage__endpoint": gcs_url, "storage__anonymous": True}),
        ("az", {"storage__endpoint": blob_endpoint}),
    ]
    for scheme, storage in cases:
        bucket = buckets[scheme]
        (tmp_path / f"job-{scheme}").mkdir()
        job = basic_job(
            tmp_path / f"job-{scheme}",
            input__paths=[f"{scheme}://{bucket}/corpus/"],
            output__dir=f"{scheme}://{bucket}/tokens",
            **storage,
        )
        code, output = invoke("run", job)
        assert code == 0, output
        code, output = invoke("run", job)
        assert code == 0 and "nothing to do" in output, output


def _on_disk_and_in_the_cloud(
    cloud: Cloud, tmp_path: Path, settings: dict
) -> tuple[Path, dict[str, bytes]]:
    """Run the job of ``settings`` over :func:`_inputs` to disk and to a new bucket of
    ``cloud``; (the cloud job, its output files), which equal the disk run's byte for byte
    (their sidecars, which name the output's place, apart)."""
    local = _inputs(tmp_path)
    name = _bucket(cloud, tmp_path)
    for where in ("disk", "cloud"):
        (tmp_path / where).mkdir()
    code, output = invoke(
        "run", basic_job(tmp_path / "disk", input__paths=[str(local)], **settings)
    )
    assert code == 0, output
    remote = basic_job(
        tmp_path / "cloud",
        input__paths=[str(local)],
        output__dir=f"{cloud.scheme}://{name}/t",
        **settings,
    )
    code, output = invoke("run", remote)
    assert code == 0, output
    want = {
        k: v for k, v in _local_outputs(tmp_path / "disk" / "out").items() if not k.startswith("_")
    }
    got = {k: v for k, v in _outputs(cloud.objects(name, "t/")).items() if not k.startswith("_")}
    assert set(got) == set(want)
    for key in want:
        if not key.endswith(".batchtok.json"):
            assert got[key] == want[key], key
    return remote, want


@pytest.mark.parametrize("output_format", ["megatron", "datatrove", "mds", "parquet"])
def test_each_trainer_format_in_a_cloud_equals_the_local_files(
    cloud: Cloud, output_format: str, tmp_path: Path
) -> None:
    """Every trainer format's file set (and packed Parquet), with its provenance file, is
    published to GCS and Azure as on disk, byte for byte, and a run with --verify reads it
    back and redoes nothing."""
    settings = {
        "output__format": output_format,
        "output__append_eos": True,
        "output__provenance": True,
        "run__shard_mb": 0.002,
    }
    if output_format == "parquet":
        settings["output__pack_length"] = 64
    remote, want = _on_disk_and_in_the_cloud(cloud, tmp_path, settings)
    assert len(want) >= 2 and any(key.endswith("docs.parquet") for key in want)
    code, output = invoke("run", remote, "--verify")
    assert code == 0 and "nothing to do" in output, output


def test_a_shuffled_stream_in_a_cloud_equals_the_local_files(cloud: Cloud, tmp_path: Path) -> None:
    """The stream layout's parts, files and records in GCS and Azure: the files are the
    local run's byte for byte, and a re-run (with --verify too) has nothing to do."""
    settings = {
        "name": "job",
        "output__layout": "stream",
        "output__max_tokens_per_file": 1500,
        "output__shuffle_seed": 4,
        "output__format": "datatrove",
        "output__provenance": True,
        "run__shard_mb": 0.002,
    }
    remote, want = _on_disk_and_in_the_cloud(cloud, tmp_path, settings)
    assert len([k for k in want if k.endswith(".ds")]) > 1
    code, output = invoke("run", remote)
    assert code == 0 and "nothing to do" in output, output
    code, output = invoke("run", remote, "--verify")
    assert code == 0 and "nothing to do" in output, output
