"""A Kafka assignment reuses the last snapshot only when every part of it came from ZooKeeper nodes the
connector watches (`Snapshot.watched`, `gating.refreshable`): a missing topic may appear on the brokers
alone, which only a Kafka rebalance shows."""

from __future__ import annotations

from kazoo.client import KazooClient

from migrator.coordination.gating import refreshable
from migrator.demo.group import create_topic
from migrator.kafka.admin import KafkaAdmin
from migrator.protocol.codecs import Registration
from migrator.protocol.events import Trigger
from migrator.zk.paths import GroupPaths
from migrator.zk.snapshot import read_snapshot
from tests.helpers.kafka import KafkaCluster


def test_a_kafka_assignment_reuses_only_a_snapshot_read_wholly_from_zookeeper(
    cluster: KafkaCluster, zk_client: KazooClient, unique_group: str, unique_topic: str
) -> None:
    admin = KafkaAdmin(cluster.bootstrap_servers)
    create_topic(admin, zk_client, unique_topic, 2)
    paths = GroupPaths(unique_group)
    zk_client.create(paths.member("c1"), Registration({unique_topic: 1}).encode(), makepath=True, ephemeral=True)

    snap = read_snapshot(zk_client, paths, kafka_partitions=admin.partitions)
    assert snap.partitions[unique_topic] == (0, 1)
    assert snap.watched and refreshable({Trigger.KAFKA_ASSIGNMENT}, snap.usable, snap.watched)

    missing = f"{unique_topic}-missing"
    zk_client.create(paths.member("c2"), Registration({missing: 1}).encode(), makepath=True, ephemeral=True)
    snap = read_snapshot(zk_client, paths, kafka_partitions=admin.partitions)
    assert snap.missing_topics == (missing,)
    assert not snap.watched and not refreshable({Trigger.KAFKA_ASSIGNMENT}, snap.usable, snap.watched)
    assert refreshable(
        {Trigger.MODE}, snap.usable, snap.watched
    )  # a mode change alone still re-reads only the mode node
