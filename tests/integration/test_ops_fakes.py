"""Stand-ins for group members, for the operator-tooling tests, plus the group reader's own test.

A *bridge* is simulated the way the brokers and ZooKeeper see one: ephemeral `ids` and `migration/ids`
nodes from its own ZooKeeper session, and a confluent-kafka Consumer with `client.id = consumerId` in the
Kafka group. A *legacy* connector has only the `ids` node. A *plain* consumer is only the Kafka member.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer
from kazoo.client import KazooClient

from migrator.kafka.admin import KafkaAdmin
from migrator.protocol.codecs import Authority, PublishedAuthority, Registration
from migrator.zk.brokers import published_bootstrap
from migrator.zk.group_reader import read_group, read_groups, read_published
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import make_topic
from tests.helpers.zk import zk_client


class _Member(threading.Thread):
    """A Kafka group member that keeps polling (so it stays in the group) and never commits."""

    def __init__(self, bootstrap: str, group: str, topic: str, client_id: str) -> None:
        super().__init__(daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "client.id": client_id,
                "enable.auto.commit": False,
                "auto.offset.reset": "earliest",
                "session.timeout.ms": 6000,
                "heartbeat.interval.ms": 500,
                "partition.assignment.strategy": "range",
            }
        )
        self.consumer.subscribe([topic])
        self.stopping = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            self.consumer.poll(0.2)
        self.consumer.close()

    def stop(self) -> None:
        self.stopping.set()
        self.join(15)


class FakeGroup:
    def __init__(self, cluster: Any, group: str, topic: str) -> None:
        self.cluster, self.group, self.topic = cluster, group, topic
        self.paths = GroupPaths(group)
        self.sessions: list[KazooClient] = []
        self.members: list[_Member] = []
        self._stack: list[Any] = []

    def _session(self) -> KazooClient:
        cm = zk_client(self.cluster)
        zk = cm.__enter__()
        self._stack.append(cm)
        return zk

    def register(self, cid: str, *, bridge: bool) -> KazooClient:
        zk = self._session()
        data = Registration({self.topic: 1}, timestamp_ms=int(time.time() * 1000)).encode()
        zk.create(self.paths.member(cid), data, ephemeral=True, makepath=True)
        if bridge:
            zk.create(self.paths.migration_member(cid), data, ephemeral=True, makepath=True)
        return zk

    def add_bridge(self, cid: str, *, embedded: bool = True) -> str:
        self.register(cid, bridge=True)
        if embedded:
            self.add_kafka_member(cid)
        return cid

    def add_legacy(self, cid: str) -> str:
        self.register(cid, bridge=False)
        return cid

    def add_kafka_member(self, client_id: str) -> None:
        member = _Member(self.cluster.bootstrap_servers, self.group, self.topic, client_id)
        member.start()
        self.members.append(member)

    def wait_kafka_members(self, client_ids: set[str], timeout: float = 45.0) -> None:
        admin = KafkaAdmin(self.cluster.bootstrap_servers)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            group = admin.describe_group(self.group)
            if group.state == "STABLE" and group.client_ids == client_ids:
                return
            time.sleep(0.3)
        raise AssertionError(f"Kafka group {self.group} never became stable with {client_ids}")

    def close(self) -> None:
        for member in self.members:
            member.stop()
        for cm in reversed(self._stack):
            cm.__exit__(None, None, None)


@pytest.fixture
def fake_group(cluster: Any, unique_group: str, unique_topic: str) -> Iterator[FakeGroup]:
    make_topic(cluster, unique_topic, partitions=3)
    fake = FakeGroup(cluster, unique_group, unique_topic)
    try:
        yield fake
    finally:
        fake.close()


def test_read_group_sees_every_kind_of_node(fake_group: FakeGroup, zk_client: KazooClient) -> None:
    p = fake_group.paths
    fake_group.add_bridge(f"{fake_group.group}_b1", embedded=False)
    fake_group.add_legacy(f"{fake_group.group}_l1")
    zk_client.create(p.member(f"{fake_group.group}_bad"), b"{not json", ephemeral=True)
    zk_client.create(p.owner(fake_group.topic, 0), f"{fake_group.group}_b1-0".encode(), makepath=True)
    zk_client.create(p.offset(fake_group.topic, 0), b"42", makepath=True)
    zk_client.create(p.offset(fake_group.topic, 1), b"garbage", makepath=True)
    zk_client.create(p.mode, b"kafak", makepath=True)

    view = read_group(zk_client, fake_group.group)

    assert [m.consumer_id for m in view.bridges] == [f"{fake_group.group}_b1"]
    assert [m.consumer_id for m in view.legacy] == [f"{fake_group.group}_l1"]
    assert [c.consumer_id for c in view.corrupt_members] == [f"{fake_group.group}_bad"]
    assert all(m.ctime_ms > 0 for m in view.members)
    assert view.mode.is_unknown and view.mode_mtime_ms
    assert dict(view.owners) == {(fake_group.topic, 0): f"{fake_group.group}_b1-0"}
    assert dict(view.offsets) == {(fake_group.topic, 0): 42}  # the corrupt offset is skipped


def test_read_groups_many_at_once(zk_client: KazooClient, unique_group: str) -> None:
    groups = [f"{unique_group}-{i}" for i in range(30)]
    for g in groups[:20]:
        zk_client.create(GroupPaths(g).offset("t", 0), b"7", makepath=True)
    views = read_groups(zk_client, groups)
    assert [views[g].exists for g in groups] == [True] * 20 + [False] * 10
    assert all(dict(views[g].offsets) == {("t", 0): 7} for g in groups[:20])


def test_the_published_authority_read_skips_silent_and_corrupt(zk_client: KazooClient, unique_group: str) -> None:
    """The one read of `migration/authority` that status, set-mode --wait, bootstrap discovery and the demo share."""
    p = GroupPaths(unique_group)
    assert read_published(zk_client, unique_group) == {}  # no such group
    kafka = PublishedAuthority(Authority.KAFKA, 3, 1, reason="r", bootstrap="127.0.0.1:1")
    zk_client.create(p.published_authority("b2"), kafka.encode(), makepath=True)
    zk_client.create(p.published_authority("b1"), PublishedAuthority(Authority.ZOOKEEPER, 1, 1).encode())
    zk_client.create(p.published_authority("bad"), b"{not json")
    stat = zk_client.set(p.published_authority("b2"), kafka.encode())

    everyone = read_published(zk_client, unique_group)
    assert sorted(everyone) == ["b1", "b2"]
    assert everyone["b2"] == (kafka, stat.mzxid)
    assert sorted(read_published(zk_client, unique_group, ["b2", "bad", "silent"])) == ["b2"]
    assert published_bootstrap(zk_client, unique_group) == "127.0.0.1:1"
    assert read_group(zk_client, unique_group).authorities == {cid: pub.node for cid, pub in everyone.items()}
