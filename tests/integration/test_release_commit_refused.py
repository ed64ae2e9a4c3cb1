"""A release whose Kafka commit is refused hands its position over through ZooKeeper.

A bridge's embedded member can lose its generation before the worker hears of it (a broker outage longer
than the session, a fence): the worker still commits through it, and Kafka refuses. Outside a release that
costs nothing (the next commit carries the offsets), but a release deletes the owner node next, and another
member then starts at max(ZooKeeper, Kafka): a release therefore writes ZooKeeper alone for what Kafka
refused. Against the real broker and ensemble: a consumer without a generation commits for a group that has
a live member, which the broker refuses.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import pytest
from confluent_kafka import Consumer
from kazoo.client import KazooClient

from migrator.coordination.offsets import OffsetStore
from migrator.kafka.admin import KafkaAdmin
from migrator.kafka.commit import member_commit_sync
from migrator.metrics import ConnectorMetrics
from migrator.protocol import stores
from migrator.protocol.partition import TopicPartition
from migrator.zk import offsets as zk_offsets
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import PollingMember, make_topic
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration


class _GenerationlessCommits:
    """Kafka offsets committed by a consumer that is not in the group (no generation, as a member whose
    session the broker ended), read with the admin client."""

    def __init__(self, consumer: Consumer, admin: KafkaAdmin, group: str) -> None:
        self._consumer = consumer
        self._admin = admin
        self._group = group

    def commit(self, offsets: Mapping[TopicPartition, int], timeout_s: float) -> set[TopicPartition]:
        return member_commit_sync(self._consumer, offsets)

    def committed(self, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
        return self._admin.committed_offsets(self._group, tps)


@pytest.fixture
def refused_kafka(cluster, unique_group: str, unique_topic: str) -> Iterator[_GenerationlessCommits]:
    """Kafka commits the broker refuses: the group has a live member, the committer no generation."""
    make_topic(cluster, unique_topic, 2)
    live = PollingMember(cluster.bootstrap_servers, unique_group, unique_topic, "live", paused=True)
    outsider = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": unique_group})
    admin = KafkaAdmin(cluster.bootstrap_servers)
    try:
        wait_until(lambda: live.assigned, 30, what="the live member's assignment")
        yield _GenerationlessCommits(outsider, admin, unique_group)
    finally:
        outsider.close()
        live.close()
        admin.close()


def _store(zk: KazooClient, group: str, kafka: _GenerationlessCommits) -> OffsetStore:
    """A bridge's dual-commit offset store (Kafka storage, dual commit on)."""
    return OffsetStore(
        zk, GroupPaths(group), stores.OffsetStore.KAFKA, True, kafka, ConnectorMetrics(group, "c"),
        max_retries=1, backoff_ms=100, commit_timeout_s=5.0,
    )  # fmt: skip


def _zookeeper(zk: KazooClient, group: str, tps: list[TopicPartition]) -> dict[TopicPartition, int]:
    return zk_offsets.start_reading_offsets(zk, GroupPaths(group), tps)()


def test_a_release_kafka_refuses_is_written_to_zookeeper_and_read_by_the_next_owner(
    refused_kafka: _GenerationlessCommits, zk_client: KazooClient, unique_group: str, unique_topic: str
) -> None:
    refusing_store = _store(zk_client, unique_group, refused_kafka)
    first, second = TopicPartition(unique_topic, 0), TopicPartition(unique_topic, 1)

    assert refusing_store.commit({first: 40}) is False  # a periodic commit: ZooKeeper only after Kafka (§4)
    assert _zookeeper(zk_client, unique_group, [first]) == {first: -1}

    assert refusing_store.commit({first: 42}, releasing=True) is False
    assert _zookeeper(zk_client, unique_group, [first]) == {first: 42}

    settle = refusing_store.start_release_commit({second: 17})  # a Kafka revoke's release: deletes follow at once
    assert _zookeeper(zk_client, unique_group, [second]) == {second: 17}
    settle()

    next_owner = _store(zk_client, unique_group, refused_kafka)
    assert next_owner.fetch([first, second]) == {first: 42, second: 17}
