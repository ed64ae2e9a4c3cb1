"""The dev cluster is real: records flow through the broker and its metadata is in ZooKeeper."""

from __future__ import annotations

import json
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from migrator.devcluster import DevCluster, process
from migrator.devcluster.ports import accepts
from migrator.errors import EXIT_REFUSED
from migrator.protocol.codecs import decode_broker, decode_broker_topic
from migrator.zk.paths import BROKER_IDS, broker_topic
from tests.helpers.cluster import ExternalCluster
from tests.helpers.kafka import consume, make_topic, produce


def test_produce_and_consume(cluster: DevCluster, unique_topic: str, unique_group: str) -> None:
    make_topic(cluster, unique_topic, partitions=3)
    produce(cluster, unique_topic, [(f"k{i}", f"v{i}") for i in range(30)])
    got = consume(cluster, unique_topic, 30, group=unique_group)
    assert sorted(r.value for r in got) == sorted(f"v{i}".encode() for i in range(30))
    assert {r.partition for r in got} <= {0, 1, 2}


def test_zookeeper_holds_broker_and_topic_metadata(
    cluster: DevCluster, zk_client: KazooClient, unique_topic: str
) -> None:
    make_topic(cluster, unique_topic, partitions=4)
    ids = zk_client.get_children(BROKER_IDS)
    assert ids == ["1"] or isinstance(cluster, ExternalCluster)
    host, port = decode_broker(zk_client.get(f"{BROKER_IDS}/{ids[0]}")[0])
    assert f"{host}:{port}" in cluster.bootstrap_servers.split(",") or isinstance(cluster, ExternalCluster)
    replicas = decode_broker_topic(zk_client.get(broker_topic(unique_topic))[0])
    assert sorted(replicas) == [0, 1, 2, 3]
    assert all(len(r) == 1 for r in replicas.values())


def test_mntr_counts_requests(cluster: DevCluster, zk_client: KazooClient) -> None:
    before = int(cluster.mntr()["zk_packets_received"])
    for _ in range(5):
        zk_client.exists(BROKER_IDS)
    assert int(cluster.mntr()["zk_packets_received"]) >= before + 5


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "migrator", "dev-cluster", *args], capture_output=True, text=True, timeout=180
    )


def _env_lines(stdout: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in stdout.splitlines() if "=" in line)


def test_cli_up_twice_refuses_and_down_leaves_nothing_running(request: pytest.FixtureRequest) -> None:
    name = f"cli-{uuid.uuid4().hex[:8]}"
    request.addfinalizer(lambda: _cli("down", "--name", name))
    up = _cli("up", "--name", name, "--broker-config", "group.max.size=7")
    assert up.returncode == 0, up.stderr
    env = _env_lines(up.stdout)
    assert set(env) == {"ZOOKEEPER", "BOOTSTRAP_SERVERS"}
    assert _env_lines(_cli("env", "--name", name).stdout) == env

    state_file = DevCluster.attach(name).state_file
    st = json.loads(state_file.read_text())
    pids = [p["pid"] for p in st["processes"]]
    assert all(process.is_ours(pid, st["cluster_dir"]) for pid in pids)
    broker = next(p for p in st["processes"] if p["name"] == "broker-1")
    assert "group.max.size=7" in Path(broker["config"]).read_text().splitlines()  # --broker-config reached it

    again = _cli("up", "--name", name)
    assert again.returncode == EXIT_REFUSED
    assert again.stderr.strip().count("\n") == 0 and "already running" in again.stderr
    assert "Traceback" not in again.stderr

    down = _cli("down", "--name", name)
    assert down.returncode == 0, down.stderr
    assert not any(process.is_alive(pid) for pid in pids)
    assert not state_file.exists()
    assert not Path(st["cluster_dir"]).exists()
    assert not accepts(int(env["ZOOKEEPER"].rsplit(":", 1)[1]))
    assert _cli("down", "--name", name).returncode == 0  # idempotent


@pytest.mark.slow
def test_stop_and_start_broker(
    cluster_factory: Callable[..., DevCluster], unique_topic: str, unique_group: str
) -> None:
    dedicated = cluster_factory(brokers=1)
    make_topic(dedicated, unique_topic, partitions=2)
    port = dedicated.port("broker-1")

    dedicated.stop_process("broker-1")
    assert not dedicated.is_running("broker-1") and not accepts(port)
    dedicated.start_process("broker-1")
    assert dedicated.port("broker-1") == port
    produce(dedicated, unique_topic, [b"after-restart"])

    dedicated.stop_process("broker-1", kill=True)  # its ZooKeeper registration lingers until expiry
    dedicated.start_process("broker-1")
    produce(dedicated, unique_topic, [b"after-kill"])
    values = {r.value for r in consume(dedicated, unique_topic, 2, group=unique_group)}
    assert values == {b"after-restart", b"after-kill"}  # same data dir: the first record survived


@pytest.mark.slow
def test_zookeeper_restart_keeps_data(cluster_factory: Callable[..., DevCluster], unique_topic: str) -> None:
    dedicated = cluster_factory(brokers=1)
    make_topic(dedicated, unique_topic, partitions=1)
    dedicated.stop_process("zookeeper", kill=True)
    dedicated.start_process("zookeeper")
    produce(dedicated, unique_topic, [b"x"])
    assert consume(dedicated, unique_topic, 1)[0].value == b"x"
    assert "zk_version" in dedicated.mntr()
