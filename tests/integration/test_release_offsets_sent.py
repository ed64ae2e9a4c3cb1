"""A Kafka revoke's release sends its ZooKeeper offset writes without waiting for them (dual commit: Kafka
took the same offsets first), ahead of the owner nodes' deletes; here, on the real ZooKeeper, what those
writes leave behind once their replies are read."""

from __future__ import annotations

from kazoo.client import KazooClient

from migrator.coordination.offsets import zookeeper_write_sent_only
from migrator.protocol.partition import TopicPartition
from migrator.zk.offsets import start_reading_offsets, start_writing_offsets
from migrator.zk.paths import GroupPaths


def test_only_a_store_written_after_kafka_is_left_unawaited() -> None:
    assert zookeeper_write_sent_only(kafka_first=True, use_zk=True)
    assert not zookeeper_write_sent_only(kafka_first=False, use_zk=True)  # ZooKeeper alone holds them
    assert not zookeeper_write_sent_only(kafka_first=True, use_zk=False)


def test_sent_writes_set_existing_nodes_and_create_missing_ones(zk_client: KazooClient, unique_group: str) -> None:
    paths = GroupPaths(unique_group)
    old, new = TopicPartition("t", 0), TopicPartition("t", 1)
    zk_client.create(paths.offset("t", 0), b"5", makepath=True)
    finish = start_writing_offsets(zk_client, paths, {old: 7, new: 3}, keep_newer=True)
    assert finish() == {old, new}
    assert start_reading_offsets(zk_client, paths, [old, new])() == {old: 7, new: 3}


def test_a_node_another_member_created_meanwhile_keeps_its_newer_offset(
    zk_client: KazooClient, unique_group: str
) -> None:
    """The write to a missing node fails; by the time its reply is read, the partition's next owner has
    committed (created the node): creating it then would fail, and overwriting it would go back in time."""
    paths = GroupPaths(unique_group)
    tp = TopicPartition("t", 0)
    zk_client.ensure_path(paths.offsets_topic("t"))
    finish = start_writing_offsets(zk_client, paths, {tp: 7}, keep_newer=True)
    zk_client.sync(paths.offsets_topic("t"))  # after the write in this session's order: it has failed
    zk_client.create(paths.offset("t", 0), b"9")  # the next owner's commit
    assert finish() == set()
    assert start_reading_offsets(zk_client, paths, [tp])() == {tp: 9}
