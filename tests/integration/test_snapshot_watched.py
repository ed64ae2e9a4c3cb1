"""A Kafka assignment reuses the last snapshot only when every part of it came from ZooKeeper nodes the
connector watches (`Snapshot.watched`, `snapshot.refreshable`): a missing topic may appear on the brokers
alone, which only a Kafka rebalance shows."""

from __future__ import annotations

from kazoo.client import KazooClient

from migrator.demo.group import create_topic
from migrator.kafka.admin import KafkaAdmin
from migrator.zk.codecs import Registration
from migrator.zk.paths import GroupPaths
from migrator.zk.snapshot import read_snapshot, refreshable
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
    assert snap.watched and refreshable({"kafka assignment"}, snap)

    missing = f"{unique_topic}-missing"
    zk_client.create(paths.member("c2"), Registration({missing: 1}).encode(), makepath=True, ephemeral=True)
    snap = read_snapshot(zk_client, paths, kafka_partitions=admin.partitions)
    assert snap.missing_topics == (missing,)
    assert not snap.watched and not refreshable({"kafka assignment"}, snap)
    assert refreshable({"mode"}, snap)  # a mode change alone still re-reads only the mode node
