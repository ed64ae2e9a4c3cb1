"""A claim's owner nodes and a release's deletes go to the real ZooKeeper as one transaction each (one entry
in its log, where as many single requests are as many entries that its write path handles one after
another)."""

from __future__ import annotations

from kazoo.client import KazooClient

from migrator.protocol.partition import TopicPartition
from migrator.zk import owners
from migrator.zk.paths import GroupPaths

TOPIC = "t"
PARTITIONS = [TopicPartition(TOPIC, p) for p in range(16)]


def thread(p: int) -> str:
    return f"g_b0-{p % 2}"


def test_a_claims_owner_nodes_are_created_by_one_transaction(zk_client: KazooClient, unique_group: str) -> None:
    paths = GroupPaths(unique_group)
    owners.ensure_topic_parents(zk_client, paths, {TOPIC})

    result = owners.claim(zk_client, paths, {tp: thread(tp.partition) for tp in PARTITIONS})

    assert result.claimed == {tp: thread(tp.partition) for tp in PARTITIONS} and result.conflicts == {}
    created_at = {zk_client.exists(paths.owner(TOPIC, tp.partition)).czxid for tp in PARTITIONS}
    assert len(created_at) == 1


def test_a_releases_deletes_are_one_transaction(zk_client: KazooClient, unique_group: str) -> None:
    paths = GroupPaths(unique_group)
    held = {tp: thread(tp.partition) for tp in PARTITIONS}
    owners.claim(zk_client, paths, held)
    marker = f"{paths.root}/marker-"

    before = zk_client.exists(zk_client.create(marker, sequence=True)).czxid
    owners.release(zk_client, paths, held)
    after = zk_client.exists(zk_client.create(marker, sequence=True)).czxid

    assert zk_client.get_children(paths.owners_topic(TOPIC)) == []
    assert after - before < len(PARTITIONS)  # one transaction between the markers (and any broker's writes)
