"""KIP-125's whole migration plan and its rollback, under continuous production, judged by the observer:
legacy connectors → bridges (rolling) → set-mode kafka → plain Kafka consumers (rolling) → and all the way
back. Plain consumers hold no ZooKeeper owner nodes, so only connector records go to the owner check; the
overlap check (two threads on one partition at once) covers everybody."""

from __future__ import annotations

import pytest

from migrator.demo.workload import PlainConsumer
from migrator.observe import OwnersWatcher, ProcessingLog
from migrator.observe.verdict import judge
from tests.helpers.bridge import published, set_mode, start_bridge, wait_converged
from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until
from tests.helpers.workload import Member, SequencedProducer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 8


def settle(log: ProcessingLog, topic: str, since_ns: int) -> None:
    """Every partition processed something after `since_ns`: the group is consuming again."""
    wait_until(
        lambda: len({r.partition for r in log.records() if r.topic == topic and r.start_ns > since_ns}) == PARTITIONS,
        timeout=60,
        what="every partition consumed again",
    )


def test_full_migration_plan_and_rollback(cluster, unique_group, unique_topic, zk_client) -> None:
    import time

    make_topic(cluster, unique_topic, PARTITIONS)
    log = ProcessingLog()
    g, t = unique_group, unique_topic
    with OwnersWatcher(cluster.zookeeper, g) as watcher:
        producer = SequencedProducer(cluster, t, rate=300).start()
        members: dict[str, Member | PlainConsumer] = {
            f"m{i}": Member(cluster.zookeeper, g, f"legacy{i}", {t: 2}, log) for i in range(3)
        }
        settle(log, t, 0)

        # 1. legacy -> bridges, one at a time
        for i in range(3):
            members[f"m{i}"].shutdown()
            members[f"m{i}"] = start_bridge(cluster, g, f"bridge{i}", t, 2, log)
            settle(log, t, time.time_ns())
        bridges = {f"{g}_bridge{i}" for i in range(3)}

        # 2. set-mode kafka
        set_mode(zk_client, g, "kafka")
        wait_converged(zk_client, g, t, PARTITIONS, "kafka", bridges)
        settle(log, t, time.time_ns())

        # 3. bridges -> plain Kafka consumers, one at a time
        for i in range(3):
            members[f"m{i}"].shutdown()
            bridges.discard(f"{g}_bridge{i}")
            members[f"m{i}"] = PlainConsumer(cluster.bootstrap_servers, g, t, log, f"plain{i}").start()
            settle(log, t, time.time_ns())
        assert not published(zk_client, g)  # no bridge left

        # 4. rollback: plain -> bridges, set-mode zookeeper, bridges -> legacy
        for i in range(3):
            members[f"m{i}"].shutdown()
            members[f"m{i}"] = start_bridge(cluster, g, f"bridge{i}", t, 2, log)
            bridges.add(f"{g}_bridge{i}")
            settle(log, t, time.time_ns())
        wait_converged(zk_client, g, t, PARTITIONS, "kafka", bridges)
        set_mode(zk_client, g, "zookeeper")
        wait_converged(zk_client, g, t, PARTITIONS, "zookeeper", bridges)
        for i in range(3):
            members[f"m{i}"].shutdown()
            members[f"m{i}"] = Member(cluster.zookeeper, g, f"legacy{i}", {t: 2}, log)
            settle(log, t, time.time_ns())

        produced = producer.stop()
        wait_until(lambda: produced <= {r.key for r in log.records()}, timeout=60, what="every record processed")
        for m in members.values():
            m.shutdown()
    records = log.records()
    connectors = [r for r in records if not r.member.startswith("plain")]
    verdict = judge(produced, records)
    owner_check = judge(produced, connectors, watcher.intervals())
    assert verdict.ok and not verdict.duplicates, verdict.summary()
    assert not owner_check.owner_violations, owner_check.summary()
    assert {r.member for r in records if r.member.startswith("plain")} == {"plain0", "plain1", "plain2"}


def test_group_larger_than_group_max_size_keeps_consuming_under_zookeeper(
    cluster_factory, unique_group, unique_topic
) -> None:
    small = cluster_factory(group_max_size=2)
    make_topic(small, unique_topic, PARTITIONS)
    log = ProcessingLog()
    from tests.helpers.zk import zk_client as open_zk

    with open_zk(small) as zk, OwnersWatcher(small.zookeeper, unique_group) as watcher:
        producer = SequencedProducer(small, unique_topic, rate=200).start()
        bridges = [start_bridge(small, unique_group, f"b{i}", unique_topic, 1, log) for i in range(3)]
        names = {f"{unique_group}_b{i}" for i in range(3)}
        set_mode(zk, unique_group, "kafka")
        wait_converged(zk, unique_group, unique_topic, PARTITIONS, "zookeeper", names)
        import time

        time.sleep(3)  # stays there: one bridge is refused by the group coordinator
        assert {p.authority.value for p in published(zk, unique_group).values()} == {"zookeeper"}
        settle(log, unique_topic, time.time_ns())

        bridges.pop().shutdown()  # two bridges fit: back to kafka by itself
        names.discard(f"{unique_group}_b2")
        wait_converged(zk, unique_group, unique_topic, PARTITIONS, "kafka", names, timeout=90)
        produced = producer.stop()
        wait_until(lambda: produced <= {r.key for r in log.records()}, timeout=60, what="every record processed")
        for b in bridges:
            b.shutdown()
    verdict = judge(produced, log.records(), watcher.intervals())
    assert verdict.ok and not verdict.duplicates, verdict.summary()


def test_a_bridge_joining_plain_kafka_consumers_never_obeys_zookeeper_first(
    cluster, unique_group, unique_topic, zk_client
) -> None:
    """Its first decision must already see its first Kafka assignment: deciding before it would fall back to
    ZooKeeper and claim partitions the plain consumers are processing (the demo caught this as duplicates)."""
    from migrator import ConsumerConnector, ConsumerRebalanceListener
    from migrator.demo.workload import CONNECTOR_PROPS, bridge_props

    make_topic(cluster, unique_topic, PARTITIONS)
    set_mode(zk_client, unique_group, "kafka")
    log = ProcessingLog()
    plains = [PlainConsumer(cluster.bootstrap_servers, unique_group, unique_topic, log, f"plain{i}").start()
              for i in range(2)]  # fmt: skip
    for p in plains:
        assert p.joined.wait(30)
    seen: list[dict[str, dict[int, str]]] = []

    class Recorder(ConsumerRebalanceListener):
        def before_starting_fetchers(self, consumer_id, assignment) -> None:
            seen.append({t: dict(ps) for t, ps in assignment.items()})

    conn = ConsumerConnector({"zookeeper.connect": cluster.zookeeper, "group.id": unique_group, "consumer.id": "b",
                              **CONNECTOR_PROPS, **bridge_props(cluster.bootstrap_servers)})  # fmt: skip
    conn.set_rebalance_listener(Recorder())
    try:
        conn.create_message_streams({unique_topic: 2})
        wait_until(lambda: seen, timeout=30, what="the bridge's first assignment")
        first = seen[0].get(unique_topic, {})
        plain_threads = {t for t in first.values() if not t.startswith(conn.consumer_id)}
        assert plain_threads, f"the first assignment gave every partition to the bridge: {first}"
        # the bridge publishes its decision right after the listener has run
        wait_until(lambda: conn.consumer_id in published(zk_client, unique_group), 10, what="its publication")
        assert published(zk_client, unique_group)[conn.consumer_id].authority.value == "kafka"
    finally:
        conn.shutdown()
        for p in plains:
            p.shutdown()
