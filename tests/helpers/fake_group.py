"""Stand-ins for group members, for the operator-tooling tests.

A *bridge* is simulated the way the brokers and ZooKeeper see one: ephemeral `ids` and `migration/ids`
nodes from its own ZooKeeper session, and a polling Kafka member with `client.id = consumerId` in the
Kafka group. A *legacy* connector has only the `ids` node. A *plain* consumer is only the Kafka member.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator

from kazoo.client import KazooClient

from migrator.kafka.admin import KafkaAdmin
from migrator.protocol.codecs import Authority, PublishedAuthority, Registration
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import KafkaCluster, PollingMember
from tests.helpers.wait import wait_until
from tests.helpers.zk import zk_client

PLAIN = "plain-app"
"""The client.id of the plain consumer `add_bridge_and_plain` puts next to a bridge."""


class FakeGroup:
    """One consumer group of simulated members on `topic`; `close` removes them all."""

    def __init__(self, cluster: KafkaCluster, group: str, topic: str) -> None:
        self.cluster, self.group, self.topic = cluster, group, topic
        self.paths = GroupPaths(group)
        self.members: list[PollingMember] = []
        self._sessions = contextlib.ExitStack()

    def __enter__(self) -> FakeGroup:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def register(self, cid: str, *, bridge: bool) -> KazooClient:
        """The member's `ids` (and for a bridge `migration/ids`) node, ephemeral in a session of its own."""
        zk = self._sessions.enter_context(zk_client(self.cluster))
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
        self.members.append(PollingMember(self.cluster.bootstrap_servers, self.group, self.topic, client_id))

    def add_bridge_and_plain(self) -> str:
        """A bridge and a plain consumer (`PLAIN`), both in a stable Kafka group; returns the bridge's id."""
        bridge = self.add_bridge(f"{self.group}_b1")
        self.add_kafka_member(PLAIN)
        self.wait_kafka_members({bridge, PLAIN})
        return bridge

    def wait_kafka_members(self, client_ids: set[str], timeout: float = 45.0) -> None:
        admin = KafkaAdmin(self.cluster.bootstrap_servers)

        def stable() -> bool:
            group = admin.describe_group(self.group)
            return group.stable and group.client_ids == client_ids

        wait_until(stable, timeout, interval=0.3, what=f"Kafka group {self.group} stable with {client_ids}")

    @contextlib.contextmanager
    def following(self, zk: KazooClient, bridges: list[str]) -> Iterator[None]:
        """For the length of a `with` block, a thread plays the bridges' part of a switch to kafka."""
        stop = threading.Event()
        thread = threading.Thread(target=self._follow_switch, args=(zk, bridges, stop), daemon=True)
        thread.start()
        try:
            yield
        finally:
            stop.set()
            thread.join(5)

    def _follow_switch(self, zk: KazooClient, bridges: list[str], stop: threading.Event) -> None:
        """Once the mode is kafka: publish the new authority, then claim the partitions again."""
        p = self.paths
        while not stop.is_set():
            if zk.exists(p.mode) and zk.get(p.mode)[0] == b"kafka":
                time.sleep(0.3)
                for i, cid in enumerate(bridges):
                    pa = PublishedAuthority(Authority.KAFKA, 2, int(time.time() * 1000))
                    zk.create(p.published_authority(cid), pa.encode(), makepath=True, ephemeral=True)
                    zk.create(p.owner(self.topic, i), f"{cid}-0".encode(), makepath=True, ephemeral=True)
                zk.create(p.owner(self.topic, 2), f"{bridges[0]}-0".encode(), makepath=True, ephemeral=True)
                return
            time.sleep(0.05)

    def close(self) -> None:
        for member in self.members:
            member.close()
        self._sessions.close()
