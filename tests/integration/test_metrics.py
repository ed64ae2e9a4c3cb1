"""A bridge's Prometheus endpoint on the real cluster: every CONTRACT §7 metric is exposed with the
`group`/`client_id` labels, and the authority gauges follow the mode node (kafka, zookeeper, garbage)."""

from __future__ import annotations

import contextlib
import socket
import urllib.request
from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient
from prometheus_client.metrics import MetricWrapperBase
from prometheus_client.parser import text_string_to_metric_families

from migrator import ConsumerConnector
from migrator import metrics as m
from migrator.kafka.admin import KafkaAdmin
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until

FAST = {
    "rebalance.backoff.ms": "300",
    "coordination.migration.poll.interval.ms": "200",
    "zookeeper.session.timeout.ms": "4000",
}
ALL_METRICS = [v for v in vars(m).values() if isinstance(v, MetricWrapperBase)]
"""What migrator/metrics.py defines, so that a new metric cannot be left out of this test."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def exposed_name(metric: MetricWrapperBase) -> str:
    """The family name on /metrics: prometheus-client appends `_total` to counters."""
    return metric._name + ("_total" if metric._type == "counter" else "")  # type: ignore[attr-defined]


class Scrape:
    def __init__(self, port: int) -> None:
        self.url = f"http://127.0.0.1:{port}/metrics"

    def text(self) -> str:
        with urllib.request.urlopen(self.url, timeout=5) as resp:
            assert resp.status == 200
            return resp.read().decode()

    def samples(self, client_id: str) -> dict[str, list[tuple[dict[str, str], float]]]:
        """Sample name → (labels, value) of one connector."""
        out: dict[str, list[tuple[dict[str, str], float]]] = {}
        for family in text_string_to_metric_families(self.text()):
            for s in family.samples:
                if s.labels.get("client_id") == client_id:
                    out.setdefault(s.name, []).append((s.labels, s.value))
        return out

    def value(self, client_id: str, name: str, **labels: str) -> float | None:
        for got, value in self.samples(client_id).get(name, []):
            if all(got.get(k) == v for k, v in labels.items()):
                return value
        return None


@contextlib.contextmanager
def _running_bridge(cluster, group: str, topic: str, **extra: str) -> Iterator[tuple[ConsumerConnector, Scrape]]:
    """A bridge with 2 streams on `topic`, scraped on a free port; its streams are kept in `.streams`."""
    port = free_port()
    conn = ConsumerConnector(
        {
            "zookeeper.connect": cluster.zookeeper,
            "group.id": group,
            "auto.offset.reset": "smallest",
            "coordination.migration.enabled": "true",
            "coordination.migration.bootstrap.servers": cluster.bootstrap_servers,
            "metrics.port": str(port),
            **FAST,
            **extra,
        }
    )
    try:
        conn.streams = conn.create_message_streams({topic: 2})[topic]  # type: ignore[attr-defined]
        yield conn, Scrape(port)
    finally:
        conn.shutdown()


@pytest.fixture
def bridge(cluster, unique_group, unique_topic) -> Iterator[tuple[ConsumerConnector, Scrape]]:
    """A bridge with 2 streams on a 3-partition topic."""
    make_topic(cluster, unique_topic, partitions=3)
    with _running_bridge(cluster, unique_group, unique_topic) as running:
        yield running


def write_mode(zk: KazooClient, group: str, value: str) -> None:
    path = GroupPaths(group).mode
    if zk.exists(path):
        zk.set(path, value.encode())
    else:
        zk.create(path, value.encode(), makepath=True)


def kafka_assigned(cluster, group: str, client_id: str) -> int:
    desc = KafkaAdmin(cluster.bootstrap_servers).describe_group(group)
    return len(desc.assignment_by_client().get(client_id, ()))


def mode_gauge(scrape: Scrape, client_id: str) -> str:
    """The one `mode` label value of migrator_coordination_mode that is 1 (every other must be 0)."""
    samples = scrape.samples(client_id)["migrator_coordination_mode"]
    assert {labels["mode"] for labels, _ in samples} == set(m.MODES)
    ones = [labels["mode"] for labels, value in samples if value == 1]
    assert len(ones) == 1 and sum(value for _, value in samples) == 1, samples
    return ones[0]


def test_every_metric_is_served_with_group_and_client_id(bridge, unique_group) -> None:
    conn, scrape = bridge
    cid = conn.consumer_id
    wait_until(lambda: scrape.value(cid, "migrator_owned_partitions", authority="zookeeper") == 3, 60,
               what="the bridge to own all 3 partitions under ZooKeeper authority")  # fmt: skip
    text = scrape.text()
    for metric in ALL_METRICS:
        assert f"# TYPE {exposed_name(metric)} " in text, f"{exposed_name(metric)} is not served"
        assert {"group", "client_id"} <= set(metric._labelnames), metric._name  # type: ignore[attr-defined]
    samples = scrape.samples(cid)
    for name in (
        "migrator_active_kafka_coordination",
        "migrator_kafka_owned_partitions",
        "migrator_owned_partitions",
        "migrator_rebalances_total",
        "migrator_rebalance_duration_seconds_count",
        "migrator_zookeeper_session_state",
        "migrator_kafka_coordination_unavailable",
    ):
        assert name in samples, f"no {name} sample for {cid}"
        assert all(labels["group"] == unique_group for labels, _ in samples[name])
    assert scrape.value(cid, "migrator_active_kafka_coordination") == 0
    assert scrape.value(cid, "migrator_zookeeper_session_state") == 1
    assert scrape.value(cid, "migrator_rebalances_total") >= 1


def test_authority_gauges_follow_the_mode_node(cluster, bridge, zk_client, unique_group) -> None:
    conn, scrape = bridge
    cid = conn.consumer_id
    active = "migrator_active_kafka_coordination"
    wait_until(lambda: scrape.value(cid, "migrator_owned_partitions", authority="zookeeper") == 3, 60,
               what="ZooKeeper ownership first")  # fmt: skip
    assert mode_gauge(scrape, cid) == "absent"

    write_mode(zk_client, unique_group, "kafka")
    wait_until(lambda: scrape.value(cid, active) == 1, 60, what="active_kafka_coordination 1")
    assert conn.authority == "kafka"
    assert mode_gauge(scrape, cid) == "kafka"  # so "alert while the mode is kafka" can be written
    assigned = wait_until(lambda: kafka_assigned(cluster, unique_group, cid), 30, what="a Kafka assignment")
    assert assigned == 3  # the only member of the group
    wait_until(lambda: scrape.value(cid, "migrator_kafka_owned_partitions") == assigned, 30,
               what="kafka_owned_partitions == the Kafka assignment")  # fmt: skip
    wait_until(lambda: scrape.value(cid, "migrator_owned_partitions", authority="kafka") == 3, 30,
               what="owned partitions counted under kafka")  # fmt: skip
    assert scrape.value(cid, "migrator_owned_partitions", authority="zookeeper") == 0
    assert (scrape.value(cid, "migrator_authority_switches_total", to="kafka") or 0) >= 1

    write_mode(zk_client, unique_group, "zookeeper")
    wait_until(lambda: scrape.value(cid, active) == 0, 60, what="active_kafka_coordination back to 0")
    assert (scrape.value(cid, "migrator_authority_switches_total", to="zookeeper") or 0) >= 1
    wait_until(lambda: scrape.value(cid, "migrator_owned_partitions", authority="zookeeper") == 3, 30,
               what="ZooKeeper ownership again")  # fmt: skip

    before = scrape.value(cid, "migrator_unknown_mode_values_total") or 0
    write_mode(zk_client, unique_group, "kafak")
    wait_until(lambda: (scrape.value(cid, "migrator_unknown_mode_values_total") or 0) > before, 60,
               what="the unknown mode value to be counted")  # fmt: skip
    assert scrape.value(cid, active) == 0
    assert conn.authority == "zookeeper"
    assert mode_gauge(scrape, cid) == "unknown"


def drain(conn: ConsumerConnector, n: int) -> list[tuple[int, int]]:
    """Take `n` records from the bridge's streams (each stream on its own thread) and commit them."""
    import threading

    got: list[tuple[int, int]] = []
    lock = threading.Lock()

    def run(stream) -> None:
        try:
            for msg in stream:
                with lock:
                    got.append((msg.partition, msg.offset))
                    if len(got) >= n:
                        break
        except Exception:  # ConsumerTimeout: this stream's partitions are drained
            pass
        conn.commit_offsets()

    threads = [threading.Thread(target=run, args=(s,)) for s in conn.streams]  # type: ignore[attr-defined]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return got


@pytest.fixture
def consuming_bridge(cluster, unique_group, unique_topic) -> Iterator[tuple[ConsumerConnector, Scrape]]:
    """Like `bridge`, with consumer.timeout.ms so that a drained stream ends instead of blocking."""
    make_topic(cluster, unique_topic, partitions=3)
    produce(cluster, unique_topic, [str(i) for i in range(30)])
    extra = {"consumer.timeout.ms": "3000", "auto.commit.interval.ms": "1000"}
    with _running_bridge(cluster, unique_group, unique_topic, **extra) as running:
        yield running


def test_records_and_commits_are_counted(consuming_bridge) -> None:
    conn, scrape = consuming_bridge
    cid = conn.consumer_id
    got = drain(conn, 30)
    assert len(set(got)) == 30
    assert scrape.value(cid, "migrator_records_consumed_total") == 30
    assert (scrape.value(cid, "migrator_offset_commits_total", store="zookeeper") or 0) >= 1
    assert (scrape.value(cid, "migrator_offset_commits_total", store="kafka") or 0) >= 1  # a bridge dual-commits
    assert (scrape.value(cid, "migrator_offset_commit_failures_total", store="kafka") or 0) == 0


def test_consumer_lag_is_exposed(consuming_bridge) -> None:
    conn, scrape = consuming_bridge
    cid = conn.consumer_id
    drain(conn, 20)
    wait_until(lambda: scrape.value(cid, "migrator_consumer_lag") is not None, 10, what="a consumer lag sample")
