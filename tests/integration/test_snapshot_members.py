"""A member listing change reads only the members that joined (`zk.snapshot.read_members`): on the real
ZooKeeper it gives what a full read gives, costs two listings and one read per joiner, and declines (the
caller reads everything) where the `ids` child version shows a change it cannot see."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kazoo.client import KazooClient

from migrator.kafka.admin import KafkaAdmin
from migrator.protocol.codecs import Registration
from migrator.zk.client import CountingClient, connect
from migrator.zk.paths import GroupPaths
from migrator.zk.snapshot import Snapshot, read_members, read_snapshot
from tests.helpers.kafka import KafkaCluster, make_topic

pytestmark = pytest.mark.integration


@pytest.fixture
def counted(cluster: KafkaCluster) -> Iterator[CountingClient]:
    """The product's own client, which counts the requests it sends."""
    client = connect(cluster.zookeeper)
    assert isinstance(client, CountingClient)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def _register(zk: KazooClient, paths: GroupPaths, cid: str, registration: Registration) -> None:
    zk.create(paths.member(cid), registration.encode(), makepath=True, ephemeral=True)


def _two_members(cluster: KafkaCluster, zk: KazooClient, group: str, topic: str) -> GroupPaths:
    """A group of members c1 and c2 on `topic` (4 partitions), each with one stream."""
    make_topic(cluster, topic, 4)
    paths = GroupPaths(group)
    for cid in ("c1", "c2"):
        _register(zk, paths, cid, Registration({topic: 1}))
    return paths


def _same(a: Snapshot, b: Snapshot) -> None:
    assert dict(a.registrations) == dict(b.registrations)
    assert a.migration_ids == b.migration_ids
    assert {c: dict(s) for c, s in a.subscriptions.items()} == {c: dict(s) for c, s in b.subscriptions.items()}
    assert dict(a.partitions) == dict(b.partitions) and a.mode == b.mode and a.ids == b.ids


def test_a_join_reads_the_joiner_alone_and_equals_a_full_read(
    cluster: KafkaCluster, zk_client: KazooClient, counted: CountingClient, unique_group: str, unique_topic: str
) -> None:
    paths = _two_members(cluster, zk_client, unique_group, unique_topic)
    zk_client.ensure_path(paths.migration_ids)
    last = read_snapshot(counted, paths)
    assert last.ids is not None and last.ids.children == {"c1", "c2"}

    _register(zk_client, paths, "c3", Registration({unique_topic: 2}))
    zk_client.create(f"{paths.migration_ids}/c3")
    before = dict(counted.requests_sent)
    changed = read_members(counted, paths, last)
    sent = {kind: n - before.get(kind, 0) for kind, n in counted.requests_sent.items() if n != before.get(kind, 0)}
    assert sent == {"GetChildren2": 1, "GetChildren": 1, "GetData": 1}
    assert changed is not None
    _same(changed, read_snapshot(counted, paths))

    zk_client.delete(paths.member("c1"))
    after_leave = read_members(counted, paths, changed)
    assert after_leave is not None and set(after_leave.registrations) == {"c2", "c3"}
    _same(after_leave, read_snapshot(counted, paths))


def test_a_member_registered_again_between_two_reads_makes_it_read_everything(
    cluster: KafkaCluster, zk_client: KazooClient, counted: CountingClient, unique_group: str, unique_topic: str
) -> None:
    """Deleted and created again with another subscription: the same children, but two changes counted."""
    paths = _two_members(cluster, zk_client, unique_group, unique_topic)
    last = read_snapshot(counted, paths)
    zk_client.delete(paths.member("c1"))
    _register(zk_client, paths, "c1", Registration({unique_topic: 3}))
    assert read_members(counted, paths, last) is None
    assert read_snapshot(counted, paths).registrations["c1"] == Registration({unique_topic: 3})


@pytest.mark.parametrize("joiner", ["pattern", "unknown topic", "corrupt"])
def test_a_joiner_the_last_snapshot_cannot_answer_for_makes_it_read_everything(
    cluster: KafkaCluster,
    zk_client: KazooClient,
    counted: CountingClient,
    unique_group: str,
    unique_topic: str,
    joiner: str,
) -> None:
    make_topic(cluster, unique_topic, 2)
    paths = GroupPaths(unique_group)
    _register(zk_client, paths, "c1", Registration({unique_topic: 1}))
    last = read_snapshot(counted, paths, kafka_partitions=KafkaAdmin(cluster.bootstrap_servers).partitions)
    data = {
        "pattern": Registration({f"{unique_topic}.*": 1}, pattern="white_list").encode(),
        "unknown topic": Registration({f"{unique_topic}-other": 1}).encode(),
        "corrupt": b"{not json",
    }[joiner]
    zk_client.create(paths.member("c2"), data, ephemeral=True)
    assert read_members(counted, paths, last) is None
