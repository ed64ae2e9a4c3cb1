"""A pykafka member's snapshot read only reads: the renaming of its own owner nodes after their partitions'
current leaders is the rebalance's upkeep (`rename_own_nodes`, `WorkerParts.owner_upkeep`), run after the read."""

from __future__ import annotations

from typing import Any

from kazoo.client import KazooClient

from migrator.assign.pykafka import PykafkaProtocol
from migrator.protocol.dialect import Dialect
from migrator.protocol.pykafka_layout import OwnerNode, Spelling, decode_partition_leader, topic_text
from migrator.zk.paths import GroupPaths, partition_state
from migrator.zk.pykafka_group import PykafkaNaming, PykafkaSnapshotReader, PykafkaView, rename_own_nodes
from tests.helpers.kafka import make_topic
from tests.helpers.layouts import write_group
from tests.helpers.round_trips import RoundTripCounter

STALE_LEADER = 99
"""A broker id no partition has as leader: the name a node keeps after its partition's leader moved."""


def test_a_pykafka_snapshot_read_writes_nothing_and_the_upkeep_renames_after_it(
    cluster: Any, zk_client: KazooClient, unique_group: str, unique_topic: str
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=2)
    write_group(zk_client, unique_group, topic, 2, 1, Dialect.PYKAFKA)
    me = f"{unique_group}_m000"
    folder = f"{GroupPaths(unique_group).owners}/{topic_text(topic, Spelling.PYTHON3)}"
    leader = decode_partition_leader(zk_client.get(partition_state(topic, 0))[0])
    current, stale = OwnerNode(leader, 0).name, OwnerNode(STALE_LEADER, 0).name
    zk_client.delete(f"{folder}/{current}")
    zk_client.create(f"{folder}/{stale}", me.encode())
    view = PykafkaView(topic, Spelling.PYTHON3, PykafkaProtocol.RANGE, me)
    paths = GroupPaths(unique_group, PykafkaNaming(view))
    counter = RoundTripCounter()
    counter.install(zk_client)

    snapshot = PykafkaSnapshotReader(zk_client, paths, view=view, exclude_internal=True).read()

    assert counter.writes == [], counter.writes
    assert snapshot.partitions[topic] == (0, 1) and me in snapshot.registrations
    assert view.nodes[0] == stale and view.leaders[0] == leader  # refreshed from the same read
    assert stale in zk_client.get_children(folder)

    rename_own_nodes(zk_client, paths, view)
    names = set(zk_client.get_children(folder))
    assert current in names and stale not in names and view.nodes[0] == current
