"""KIP-345 static membership of the embedded member (`migration.static.membership=true`) on a real cluster.

A static member's `group.instance.id` is the bridge's consumer.id. librdkafka's close() of a static member
sends no LeaveGroup, so a bridge that restarts cleanly with the same consumer.id within the Kafka session
timeout takes its old place in the group: the coordinator hands it the previous assignment under a new member
id, and the other members see no Kafka rebalance at all. In ZooKeeper the bridge still deregisters and
registers again. Under Kafka authority its partitions wait for it meanwhile (nobody else is assigned them),
and the independent observer checks that nothing is lost, processed twice or processed by two threads.

The second test is the control: the same restart without static membership rebalances the whole group.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import pytest
from kazoo.client import KazooClient

from migrator.demo.workload import bridge_props
from migrator.kafka.admin import KafkaAdmin
from migrator.observe import OwnersWatcher, ProcessingLog
from migrator.observe.verdict import judge
from migrator.protocol.kafka import KafkaGroup
from migrator.protocol.partition import TopicPartition
from migrator.zk.paths import GroupPaths
from tests.helpers.bridge import owners, set_mode, wait_converged
from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until
from tests.helpers.workload import Member, SequencedProducer

pytestmark = [pytest.mark.integration]

PARTITIONS, STREAMS, BRIDGES = 6, 2, 3
RESTARTED = 1  # the bridge that restarts; the others must not notice in Kafka
# Long enough that a restart (about a second) is well within it, short enough for a test.
SESSION_MS = "10000"
SETTLE_S = 3.0  # several heartbeat intervals (1 s): a rebalance the restart caused would have started by then


@dataclass
class Observed:
    before: KafkaGroup
    after_close: KafkaGroup
    after: KafkaGroup
    assignments_before: dict[str, int]  # consumerId -> assignments its embedded member had received
    assignments_after: dict[str, int]
    ids_node_before: tuple[int, int]  # (czxid, ephemeralOwner) of the restarted bridge's ids node
    ids_node_after: tuple[int, int]


def _bridge(cluster, group: str, cid: str, topic: str, log: ProcessingLog, props: dict[str, str]) -> Member:
    """A bridge whose `props` override the demo's bridge properties (e.g. the session timeout)."""
    return Member(cluster.zookeeper, group, cid, {topic: STREAMS}, log, **{**bridge_props(cluster.bootstrap_servers),
                                                                          **props})  # fmt: skip


def _by_client(group: KafkaGroup) -> dict[str, tuple[str, str | None, tuple]]:
    return {m.client_id: (m.member_id, m.group_instance_id, m.partitions) for m in group.members}


def _ids_node(zk: KazooClient, paths: GroupPaths, cid: str) -> tuple[int, int]:
    stat = zk.exists(paths.member(cid))
    assert stat is not None, f"{cid} is not registered in ZooKeeper"
    return stat.czxid, stat.ephemeralOwner


def _restart_under_load(cluster, group: str, topic: str, zk: KazooClient, static: bool) -> Observed:
    """Three bridges under Kafka authority and load; bridge 1 shuts down cleanly and starts again at once.
    Judges the observer's records itself; returns what the Kafka group and ZooKeeper looked like."""
    make_topic(cluster, topic, PARTITIONS)
    props = {"coordination.migration.session.timeout.ms": SESSION_MS}
    if static:
        props["migration.static.membership"] = "true"
    names = [f"{group}_b{i}" for i in range(BRIDGES)]
    restarted = names[RESTARTED]
    paths = GroupPaths(group)
    admin = KafkaAdmin(cluster.bootstrap_servers)
    log = ProcessingLog()
    with OwnersWatcher(cluster.zookeeper, group) as watcher:
        producer = SequencedProducer(cluster, topic, rate=300).start()
        bridges: list[Member] = []
        try:
            bridges += [_bridge(cluster, group, f"b{i}", topic, log, props) for i in range(BRIDGES)]
            set_mode(zk, group, "kafka")
            wait_converged(zk, group, topic, PARTITIONS, "kafka", set(names))
            wait_until(lambda: admin.describe_group(group).stable, timeout=30, what="stable group")
            before = admin.describe_group(group)
            assignments_before = {b.conn.consumer_id: b.conn._member.assignments for b in bridges}
            ids_before = _ids_node(zk, paths, restarted)

            bridges[RESTARTED].shutdown()
            assert not zk.exists(paths.member(restarted)), "a clean shutdown must deregister from ZooKeeper"
            after_close = admin.describe_group(group)
            bridges[RESTARTED] = _bridge(cluster, group, f"b{RESTARTED}", topic, log, props)

            wait_converged(zk, group, topic, PARTITIONS, "kafka", set(names))
            wait_until(
                lambda: sum(1 for t in owners(zk, group, topic).values() if t.startswith(restarted + "-")) > 0,
                timeout=30,
                what="the restarted bridge owns partitions again",
            )
            wait_until(lambda: admin.describe_group(group).stable, timeout=30, what="stable group")
            time.sleep(SETTLE_S)
            after = admin.describe_group(group)
            assignments_after = {b.conn.consumer_id: b.conn._member.assignments for b in bridges}
            ids_after = _ids_node(zk, paths, restarted)

            produced = producer.stop()
            wanted = {(t, p, o) for t, p, o in produced}
            wait_until(lambda: wanted <= {r.key for r in log.records()}, timeout=60, what="every record processed")
        finally:
            producer.stop()
            for b in bridges:
                b.shutdown()
    # Every bridge committed what it processed when it left, in Kafka too: the restarted member's commits
    # carry its new member id and the generation it rejoined, which the broker must accept.
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    assert admin.committed_offsets(group, tps) == admin.log_end_offsets(tps)
    verdict = judge(produced, log.records(), watcher.intervals())
    # A clean leave and a clean join: nothing lost, nobody processing a partition it does not own, and not
    # one record twice (CONTRACT §6.3 allows duplicates only after a crash).
    assert verdict.ok, verdict.summary()
    assert not verdict.duplicates, verdict.summary()
    return Observed(before, after_close, after, assignments_before, assignments_after, ids_before, ids_after)


def test_static_bridge_restarts_without_a_kafka_rebalance(cluster, unique_group, unique_topic, zk_client) -> None:
    seen = _restart_under_load(cluster, unique_group, unique_topic, zk_client, static=True)
    names = [f"{unique_group}_b{i}" for i in range(BRIDGES)]
    restarted = names[RESTARTED]
    before, after = _by_client(seen.before), _by_client(seen.after)

    # The embedded member is a static member whose group.instance.id is the consumer.id; client.id stays
    # the consumerId, which is how bridges are recognised in the group.
    assert {c: v[1] for c, v in before.items()} == {n: n.removeprefix(f"{unique_group}_") for n in names}
    assert {c: v[1] for c, v in after.items()} == {n: n.removeprefix(f"{unique_group}_") for n in names}

    # close() sent no LeaveGroup: the departed static member kept its place and its partitions.
    assert _by_client(seen.after_close) == before, "the static member left the Kafka group on close"

    # It came back as a new member id in the same place: same partitions, nobody else moved.
    assert after[restarted][0] != before[restarted][0], "the restarted bridge did not rejoin the Kafka group"
    assert {c: v[2] for c, v in after.items()} == {c: v[2] for c, v in before.items()}
    for other in set(names) - {restarted}:
        assert after[other][0] == before[other][0], f"{other} got a new member id"
        assert seen.assignments_after[other] == seen.assignments_before[other], (
            f"{other} went through a Kafka rebalance: {seen.assignments_before} -> {seen.assignments_after}"
        )
    assert seen.assignments_after[restarted] == 1, "the restarted bridge should be assigned exactly once"

    # In ZooKeeper the bridge deregistered and registered again, from its new session.
    assert seen.ids_node_after[0] > seen.ids_node_before[0], "the ids node was not re-created"
    assert seen.ids_node_after[1] != seen.ids_node_before[1], "the ids node belongs to the old session"


def test_dynamic_bridge_restart_rebalances_the_kafka_group(cluster, unique_group, unique_topic, zk_client) -> None:
    """The control for the test above: the same restart without static membership."""
    seen = _restart_under_load(cluster, unique_group, unique_topic, zk_client, static=False)
    names = [f"{unique_group}_b{i}" for i in range(BRIDGES)]
    restarted = names[RESTARTED]
    before = _by_client(seen.before)
    assert {v[1] for v in before.values()} == {None}, "dynamic members must not have a group.instance.id"
    # close() sent LeaveGroup: the member was gone at once, and came back as a new member.
    assert restarted not in _by_client(seen.after_close), "a dynamic member stayed in the group after close"
    assert restarted in _by_client(seen.after)
    for other in set(names) - {restarted}:
        # a rebalance when the bridge left and one when it came back (the two may merge into one)
        assert seen.assignments_after[other] > seen.assignments_before[other], (
            f"{other} saw no Kafka rebalance: {seen.assignments_before} -> {seen.assignments_after}"
        )
    assert seen.ids_node_after[0] > seen.ids_node_before[0]
