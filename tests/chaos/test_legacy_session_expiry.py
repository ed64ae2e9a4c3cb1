"""One member's ZooKeeper session expires under load: the group recovers and nobody processes a partition
it does not own.

The expiry is forced the classic way: a second client attaches to the member's session (same id and
password) and closes it, so the server expires it at once while the member itself notices only later.
"""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient, KazooState

from migrator.observe import Duplicate, OwnersWatcher, ProcessingLog, judge
from migrator.zk.group_reader import read_group
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until
from tests.helpers.workload import Member, SequencedProducer
from tests.helpers.zk import expire_session

pytestmark = [pytest.mark.chaos, pytest.mark.integration, pytest.mark.slow]


def test_expired_member_recovers_without_dual_processing(
    cluster: object, zk_client: KazooClient, unique_group: str, unique_topic: str, members: list[Member]
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=6)  # type: ignore[arg-type]
    zk = cluster.zookeeper  # type: ignore[attr-defined]
    paths = GroupPaths(unique_group)

    def owned_count() -> int:
        return len(read_group(zk_client, unique_group).owners_of(topic))

    log = ProcessingLog()
    states: list[KazooState] = []
    with OwnersWatcher(zk, unique_group) as watcher:
        producer = SequencedProducer(cluster, topic, rate=150).start()  # type: ignore[arg-type]
        victim = Member(zk, unique_group, "v", {topic: 2}, log, process_s=0.002)
        members.append(victim)
        members.append(Member(zk, unique_group, "o", {topic: 2}, log, process_s=0.002))
        try:
            wait_until(lambda: owned_count() == 6, 30, what="6 partitions owned")
            time.sleep(2.0)
            victim.conn._zk.add_listener(lambda s: states.append(s) and None)
            before = victim.conn.owned
            victim_parts = {tp.partition for tp in before}
            committed = {p: int(zk_client.get(paths.offset(topic, p))[0]) for p in victim_parts
                         if zk_client.exists(paths.offset(topic, p))}  # fmt: skip
            expire_session(zk, victim.conn._zk)
            expired_at = time.monotonic()
            wait_until(lambda: KazooState.LOST in states, 20, what="the victim to notice its expired session")
            # back in the group: registered again and owning the same range share as before
            wait_until(lambda: victim.conn.owned == before and owned_count() == 6,
                       30, what="the victim to rejoin")  # fmt: skip
            recovered_s = time.monotonic() - expired_at
            time.sleep(2.0)
        finally:
            produced = producer.stop()
        wait_until(lambda: produced <= {r.key for r in log.records()}, 30, what="every record processed")
        while members:
            members.pop().shutdown()
        ownership = watcher.intervals()

    def allowed(d: Duplicate) -> bool:
        # the session died without a final commit: its partitions may be re-read from the last commit
        _t, partition, offset = d.key
        return partition in victim_parts and offset >= committed.get(partition, 0)

    verdict = judge(produced, log.records(), ownership, allow_duplicate=allowed)
    print(f"\nsession expiry: recovered in {recovered_s:.2f}s; states {[str(s) for s in states]}; {verdict.summary()}")
    assert verdict.ok, verdict.summary()
    assert not verdict.overlaps and not verdict.owner_violations
