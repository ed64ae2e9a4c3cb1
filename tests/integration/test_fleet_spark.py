"""The fleet scan on a real Spark standalone cluster (a master and a 2-core worker on loopback, started from
the pyspark installation), run with `spark-submit scripts/fleet_scan.py` exactly as docs/fleet.md tells a
user, over a synthetic fleet (`scripts/make_fleet.py`) with real groups among it: our bridges, our legacy
connector, the Scala old consumer, and a group mixing it with a bridge. Every status must be the one the
executors' own function gives run in the test process, without Spark.

Every Spark JVM runs with `LEAN_JVM` options, and the daemons start before the session cluster and the peers'
compilation, so that their starts overlap.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest

from migrator.fleet.scan import ScanSettings, group_filter, list_groups, now_ms, scan_slice
from tests.helpers.kafka import admin, make_topic, produce
from tests.helpers.peers import ROOT, JvmPeers, Peers
from tests.helpers.spark import BIN, LEAN_JVM, SparkStandalone, spark_env
from tests.helpers.wait import wait_until
from tests.helpers.zk import zk_client

pytestmark = [pytest.mark.slow, pytest.mark.interop, pytest.mark.timeout(900)]
"""Minutes on 2 cores (two JVMs of Spark daemons, two drivers, an executor, the dev cluster and eight
members); far more when the machine is shared, hence the longer timeout."""

SYNTHETIC_GROUPS = 300
EXECUTOR_CORES = 2
"""One worker with both cores: one executor JVM runs the job's two tasks side by side."""


@pytest.fixture(scope="session", autouse=True)
def spark_starting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Future[SparkStandalone]]:
    """The Spark daemons, launched before anything else this module's test needs (autouse session fixtures
    are set up first), so that their JVM starts overlap the session cluster's, the peers' compilation and the
    groups' start. Stopped at the end of the session if the test did not stop them."""
    starting = SparkStandalone.in_background(tmp_path_factory.mktemp("spark"), workers=1, cores=EXECUTOR_CORES)
    yield starting
    if starting.exception() is None:  # a start that failed stopped its own daemons
        starting.result().stop()


@pytest.fixture
def spark_cluster(spark_starting: Future[SparkStandalone]) -> Iterator[SparkStandalone]:
    """The started cluster (waiting here for what is left of its start), stopped after the test."""
    started = spark_starting.result()
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


def test_the_fleet_scan_on_a_spark_standalone_cluster_matches_the_scan_without_spark(
    cluster, spark_cluster: SparkStandalone, synthetic_fleet: str, real_groups: dict[str, str], tmp_path: Path
) -> None:
    include = f"^({synthetic_fleet}-|{next(iter(real_groups)).rsplit('-', 1)[0]}-)"
    lean = {"SPARK_SUBMIT_OPTS": LEAN_JVM, "SPARK_LAUNCHER_OPTS": LEAN_JVM}  # the driver's JVM
    cluster_s = _spark_submit(spark_cluster, scan_args(cluster, include, tmp_path / "cluster"), tmp_path, lean)
    print(f"\nfleet scan on the spark standalone cluster: {cluster_s:.1f}s")

    on_cluster, in_process = statuses(tmp_path / "cluster"), statuses_in_process(cluster, include)
    assert len(in_process) == SYNTHETIC_GROUPS + len(real_groups)
    assert on_cluster == in_process
    assert {g: s for (_, g), (s, _) in in_process.items() if g in real_groups} == real_groups
    # the job ran on the worker's executor, not in the driver: the worker launched one for the application
    apps = spark_cluster.state().get("completedapps", [])
    assert len(apps) == 1, apps
    assert list(spark_cluster.work_dir(0).glob("app-*/*/stderr")), "the worker ran no executor"

    # the same job cleans the fleet's abandoned groups (offsets only, written minutes ago) in waves on the cluster
    abandoned = {g for (_, g), (s, _) in in_process.items() if s == "ORPHANED"}
    archives = tmp_path / "archives"
    cleanup = [*scan_args(cluster, include, tmp_path / "cleanup"), "--abandoned-after", "1s", "--cleanup",
               "--abandoned", "--execute", "--wave-size", "20", "--archive-dir", str(archives)]  # fmt: skip
    cleanup_s = _spark_submit(spark_cluster, cleanup, tmp_path, lean)
    print(f"fleet scan + cleanup of {len(abandoned)} groups on the cluster: {cleanup_s:.1f}s")
    with zk_client(cluster) as zk:
        assert abandoned and not [g for g in abandoned if zk.exists(f"/consumers/{g}")]
    assert len(list(archives.iterdir())) == len(abandoned)

    # and its plan rolls the cleanup back: every group put back from its archive
    [plan] = (tmp_path / "cleanup").glob("fleet-cleanup-*.json")
    rollback = ["--zookeeper", cluster.zookeeper, "--bootstrap-servers", cluster.bootstrap_servers, "--rollback",
                str(plan), "--no-progress"]  # fmt: skip
    _spark_submit(spark_cluster, rollback, tmp_path, lean)
    with zk_client(cluster) as zk:
        assert not [g for g in abandoned if not zk.exists(f"/consumers/{g}/offsets")]


def statuses_in_process(cluster: Any, include: str) -> dict[tuple[str, str], tuple[str, tuple[str, ...]]]:
    """The oracle: what the executors' own function (`scan_slice`) says of the same groups, run here without
    Spark (the local `migrator fleet-scan` run of the same code is `test_fleet_scan.py`'s)."""
    with zk_client(cluster) as zk:
        items = [(cluster.zookeeper, g) for g in list_groups(zk, group_filter(include, None))]
    settings = ScanSettings(bootstrap={cluster.zookeeper: cluster.bootstrap_servers}, stable_for_ms=0, now_ms=now_ms())
    return {
        (r.ensemble, r.group): (r.status, tuple(sorted(x.split(":", 1)[0] for x in r.reasons)))
        for r in scan_slice(items, settings)
    }


def _spark_submit(spark: SparkStandalone, args: list[str], tmp_path: Path, lean: dict[str, str]) -> float:
    """`spark-submit scripts/fleet_scan.py` to the standalone master, its executors lean too; seconds it took."""
    began = time.monotonic()
    driver_log = tmp_path / "spark-submit.log"
    with open(driver_log, "w") as out:
        submitted = subprocess.run(
            [str(BIN / "spark-submit"), "--master", spark.url,
             "--conf", f"spark.pyspark.python={sys.executable}", "--conf", "spark.executor.memory=512m",
             "--conf", "spark.driver.memory=512m", "--conf", f"spark.executor.extraJavaOptions={LEAN_JVM}",
             "--total-executor-cores", str(EXECUTOR_CORES), "scripts/fleet_scan.py", *args],
            cwd=ROOT, stdout=out, stderr=subprocess.STDOUT, timeout=700, env={**spark_env(spark.workdir), **lean},
        )  # fmt: skip
    assert submitted.returncode == 0, driver_log.read_text(errors="replace")[-3000:]
    return time.monotonic() - began
