"""The independent observer's owners timeline against a real ZooKeeper, where its dating rules matter."""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient

from migrator.observe import OwnersWatcher, Processed, owner_violations
from migrator.protocol.partition import TopicPartition
from tests.helpers.kafka import KafkaCluster
from tests.helpers.wait import wait_until

pytestmark = pytest.mark.integration


def test_a_node_rewritten_in_place_before_the_first_read_is_not_credited_to_its_new_thread_since_creation(
    cluster: KafkaCluster, zk_client: KazooClient, unique_group: str
) -> None:
    """A bridge that switches to Kafka moves partitions between its own threads by rewriting the owner node.
    If the watcher first reads the node after such a rewrite (a busy machine delays it by 80 ms), the thread
    it reads owned the node only since `mtime`; what the previous thread processed before must not be
    reported as an owner violation (the false alarm that failed drill 12 on a loaded machine)."""
    path = f"/consumers/{unique_group}/owners/t/0"
    zk_client.create(path, b"c1-1", makepath=True, ephemeral=True)
    ctime_ns = zk_client.get(path)[1].ctime * 1_000_000
    time.sleep(0.05)
    zk_client.set(path, b"c1-0")  # the move: c1-1 stopped, then c1-0 took over in place
    mtime_ns = zk_client.get(path)[1].mtime * 1_000_000
    with OwnersWatcher(cluster.zookeeper, unique_group) as watcher:
        timeline = watcher.intervals()
    before = [iv for iv in timeline if iv.end_ns == mtime_ns]
    assert [(iv.owner, iv.member_only, iv.start_ns) for iv in before] == [("c1", True, ctime_ns)], timeline
    now_held = [iv for iv in timeline if not iv.member_only]
    assert [(iv.owner, iv.start_ns) for iv in now_held] == [("c1-0", mtime_ns)], timeline

    def processed(thread: str, start_ns: int) -> Processed:
        return Processed(thread.rsplit("-", 1)[0], thread, "t", 0, 0, start_ns, start_ns + 1_000)

    by_old_thread = processed("c1-1", ctime_ns + 10_000_000)
    by_another_member = processed("c2-0", ctime_ns + 10_000_000)
    by_old_thread_after_the_move = processed("c1-1", mtime_ns + 10_000_000)
    found = owner_violations(timeline, [by_old_thread, by_another_member, by_old_thread_after_the_move])
    assert [v.record for v in found] == [by_another_member, by_old_thread_after_the_move]


def test_a_watcher_started_before_the_group_exists_writes_nothing_and_sees_its_owners(
    cluster: KafkaCluster, zk_client: KazooClient, unique_group: str
) -> None:
    """The observer only reads: watching a group that does not exist yet leaves it absent (kazoo's TreeCache
    would create its root), and the owner node created later, its rewrite and its deletion are on the timeline."""
    path = f"/consumers/{unique_group}/owners/t/0"
    tp = TopicPartition("t", 0)
    with OwnersWatcher(cluster.zookeeper, unique_group) as watcher:
        assert zk_client.exists(f"/consumers/{unique_group}") is None
        zk_client.create(path, b"c1-0", makepath=True, ephemeral=True)
        ctime_ns = zk_client.get(path)[1].ctime * 1_000_000
        wait_until(lambda: watcher.current() == {tp: "c1-0"}, timeout=10.0, interval=0.01)
        zk_client.set(path, b"c1-1")
        mtime_ns = zk_client.get(path)[1].mtime * 1_000_000
        wait_until(lambda: watcher.current() == {tp: "c1-1"}, timeout=10.0, interval=0.01)
        zk_client.delete(path)
        wait_until(lambda: watcher.current() == {}, timeout=10.0, interval=0.01)
    found = [(iv.owner, iv.start_ns, iv.end_ns) for iv in watcher.intervals()]
    assert found == [("c1-0", ctime_ns, mtime_ns), ("c1-1", mtime_ns, found[1][2])], found
    assert found[1][2] is not None and found[1][2] >= mtime_ns


def test_a_hand_over_the_tree_cache_missed_is_on_the_timeline_from_the_new_nodes_creation(
    cluster: KafkaCluster, zk_client: KazooClient, unique_group: str
) -> None:
    """A tree cache may stop watching a node for good (its re-read after a reconnect races the watch events of
    that reconnect). The watcher's periodic read of the tree still finds a hand-over: the old owner's stretch
    ends when the read learnt of it, the new owner's starts at its node's creation, so the new owner's records
    are not owner violations and another member's still are."""
    path = f"/consumers/{unique_group}/owners/t/0"
    tp = TopicPartition("t", 0)
    zk_client.create(path, b"c1-0", makepath=True)
    with OwnersWatcher(cluster.zookeeper, unique_group) as watcher:
        wait_until(lambda: watcher.current() == {tp: "c1-0"}, timeout=10.0, interval=0.01)
        assert watcher._cache is not None
        watcher._cache.close()  # the cache delivers nothing more
        zk_client.delete(path)
        zk_client.create(path, b"c2-0")
        ctime_ns = zk_client.get(path)[1].ctime * 1_000_000
        wait_until(lambda: watcher.current() == {tp: "c2-0"}, timeout=10.0, interval=0.05)
    timeline = watcher.intervals()
    assert [(iv.owner, iv.start_ns) for iv in timeline if iv.owner == "c2-0"] == [("c2-0", ctime_ns)], timeline

    def processed(thread: str, start_ns: int) -> Processed:
        return Processed(thread.rsplit("-", 1)[0], thread, "t", 0, 0, start_ns, start_ns + 1_000)

    by_new_owner, by_another = processed("c2-0", ctime_ns + 1_000_000), processed("c3-0", ctime_ns + 1_000_000)
    assert [v.record for v in owner_violations(timeline, [by_new_owner, by_another])] == [by_another]
