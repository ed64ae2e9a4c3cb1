"""The fleet scan on a real Spark standalone cluster (a master and 2 workers on loopback, started from the
pyspark installation), run with `spark-submit scripts/fleet_scan.py` exactly as docs/fleet.md tells a
user, over a synthetic fleet (`scripts/make_fleet.py`) with real groups among it: our bridges, our legacy
connector, the Scala old consumer, and a group mixing it with a bridge. Every status must be the one the
local run (`migrator fleet-scan`, Spark's embedded local mode) gives.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.kafka import admin, make_topic, produce
from tests.helpers.peers import ROOT, JvmPeers, Peers
from tests.helpers.spark import BIN, SparkStandalone, spark_env
from tests.helpers.wait import wait_until

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(900)]
"""About 3.5 minutes alone on 2 cores (three JVMs of Spark daemons, a driver, two executors, the dev
cluster and eight members); far more when the machine is shared, hence the longer timeout."""

SYNTHETIC_GROUPS = 100


@pytest.fixture
def spark_cluster(tmp_path: Path) -> Iterator[SparkStandalone]:
    (tmp_path / "spark").mkdir()
    started = SparkStandalone(tmp_path / "spark", workers=2)
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture
def synthetic_fleet(cluster: Any) -> Iterator[str]:
    """`scripts/make_fleet.py` holding its groups until its stdin closes; the prefix of their names."""
    prefix = f"spk{int(time.time())}"
    proc = subprocess.Popen(
        [sys.executable, "scripts/make_fleet.py", "-z", cluster.zookeeper, "-n", str(SYNTHETIC_GROUPS),
         "--prefix", prefix, "--seed", "11", "--stop-on-eof"],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert proc.stdout is not None and proc.stdin is not None
    line = proc.stdout.readline()
    assert line.strip() == "READY", f"make_fleet did not start: {line!r} {proc.stderr.read() if proc.stderr else ''}"
    yield prefix
    proc.stdin.close()
    assert proc.wait(60) == 0


@pytest.fixture
def real_groups(cluster: Any, jvm_peers: JvmPeers, tmp_path: Path) -> Iterator[dict[str, str]]:
    """group -> the status its members make it: all-bridge READY, ours legacy and Scala LEGACY, a Scala member
    beside a bridge MIGRATING. Every member is its own process; records are produced and processed first so
    that the bridges' dual commits exist in both stores."""
    run = f"spkreal{int(time.time())}"
    shapes = {"bridges": "READY", "legacy": "LEGACY", "scala": "LEGACY", "mixed": "MIGRATING"}
    started: list[Peers] = []
    try:
        for shape in shapes:
            group, topic = f"{run}-{shape}", f"{run}-{shape}-t"
            make_topic(cluster, topic, partitions=4)
            produce(cluster, topic, [f"r{i}" for i in range(40)])
            (tmp_path / shape).mkdir()
            peers = Peers(cluster, jvm_peers, group, topic, tmp_path / shape)
            started.append(peers)
            if shape in ("bridges", "mixed"):
                peers.ours("bridge1", streams=2, bridge=True)
            if shape == "bridges":
                peers.ours("bridge2", streams=2, bridge=True)
            if shape == "legacy":
                peers.ours("legacy1", streams=2)
            if shape in ("scala", "mixed"):
                peers.scala("s1")
            wait_until(lambda p=peers: len(list(_records(p))) >= 40, 60, what=f"{shape} processed its records")
            if shape == "bridges":  # READY needs a Stable Kafka group: the second bridge's join may still rebalance
                wait_until(lambda g=group: _kafka_group_stable(cluster, g, members=2), 60, what=f"{group} stable")
        yield {f"{run}-{shape}": status for shape, status in shapes.items()}
    finally:
        for peers in started:
            for peer in peers.started.values():
                with contextlib.suppress(Exception):  # the test's own failure is the one to report
                    peer.stop()
            peers.close()


def _kafka_group_stable(cluster: Any, group: str, members: int) -> bool:
    description = admin(cluster).describe_consumer_groups([group], request_timeout=10)[group].result(timeout=15)
    return getattr(description.state, "name", "") == "STABLE" and len(description.members) == members


def _records(peers: Peers) -> Iterator[str]:
    for log in peers.logs():
        yield from log.read_text().splitlines()


def scan_args(cluster: Any, include: str, out: Path) -> list[str]:
    return ["--zookeeper", cluster.zookeeper, "--bootstrap-servers", cluster.bootstrap_servers,
            "--include", include, "--stable-for", "0s", "--no-progress", "--output", str(out),
            "--format", "json"]  # fmt: skip


def statuses(out: Path) -> dict[tuple[str, str], tuple[str, tuple[str, ...]]]:
    """(ensemble, group) -> (status, reason codes), read from the rows file the scan wrote."""
    rows = [json.loads(line) for line in (out / "fleet-scan.jsonl").read_text().splitlines()]
    return {
        (r["ensemble"], r["group"]): (r["status"], tuple(sorted(x.split(":", 1)[0] for x in r["reasons"])))
        for r in rows
    }


def test_the_fleet_scan_on_a_spark_standalone_cluster_matches_the_local_run(
    cluster, spark_cluster: SparkStandalone, synthetic_fleet: str, real_groups: dict[str, str], tmp_path: Path
) -> None:
    include = f"^({synthetic_fleet}-|{next(iter(real_groups)).rsplit('-', 1)[0]}-)"
    began = time.monotonic()
    local = subprocess.run([sys.executable, "-m", "migrator", "fleet-scan",
                            *scan_args(cluster, include, tmp_path / "local")],
                           cwd=ROOT, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert local.returncode == 0, local.stderr[-2000:]
    local_s = time.monotonic() - began

    began = time.monotonic()
    driver_log = tmp_path / "spark-submit.log"
    with open(driver_log, "w") as out:
        submitted = subprocess.run(
            [str(BIN / "spark-submit"), "--master", spark_cluster.url,
             "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=512m",
             "--conf", "spark.driver.memory=512m", "--total-executor-cores", "2",
             "scripts/fleet_scan.py", *scan_args(cluster, include, tmp_path / "cluster")],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=700, env=spark_env(tmp_path / "spark"),
        )  # fmt: skip
    assert submitted.returncode == 0, driver_log.read_text(errors="replace")[-3000:]
    cluster_s = time.monotonic() - began
    print(f"\nfleet scan: local {local_s:.1f}s, spark standalone (2 workers) {cluster_s:.1f}s")

    on_cluster, locally = statuses(tmp_path / "cluster"), statuses(tmp_path / "local")
    assert len(locally) == SYNTHETIC_GROUPS + len(real_groups)
    assert on_cluster == locally
    assert {g: s for (_, g), (s, _) in locally.items() if g in real_groups} == real_groups
    # the job ran on the workers' executors, not in the driver: each worker launched one for the application
    apps = spark_cluster.state().get("completedapps", [])
    assert len(apps) == 1, apps
    for worker in range(2):
        assert list(spark_cluster.work_dir(worker).glob("app-*/*/stderr")), f"worker{worker} ran no executor"
