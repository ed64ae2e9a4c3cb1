"""The independent observer's owners timeline against a real ZooKeeper, where its dating rules matter."""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient

from migrator.observe import OwnersWatcher, Processed, owner_violations
from tests.helpers.kafka import KafkaCluster

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
