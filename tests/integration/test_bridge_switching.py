"""The heart of KIP-125 on a real cluster: bridges switch between ZooKeeper and Kafka authority under load,
and an independent observer (a processing log plus a read-only owners watcher) proves that no partition is
processed by two threads at once, nothing is lost and nothing is processed twice."""

from __future__ import annotations

import random
import time

import pytest

from migrator.observe import OwnersWatcher, ProcessingLog
from migrator.observe.pause import pauses, summary
from migrator.observe.verdict import judge
from tests.helpers.bridge import owners, published, set_mode, start_bridge, wait_converged
from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until
from tests.helpers.workload import SequencedProducer

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def drain(log: ProcessingLog, produced: set, timeout: float = 60.0) -> None:
    wanted = {(t, p, o) for t, p, o in produced}
    wait_until(lambda: wanted <= {r.key for r in log.records()}, timeout=timeout, what="every record processed")


def test_ten_switches_under_load_keep_every_safety_property(cluster, unique_group, unique_topic, zk_client) -> None:
    partitions, streams = 16, 2
    make_topic(cluster, unique_topic, partitions)
    log = ProcessingLog()
    bridges = []
    rng = random.Random(125)
    with OwnersWatcher(cluster.zookeeper, unique_group) as watcher:
        producer = SequencedProducer(cluster, unique_topic, rate=800).start()
        names = {f"{unique_group}_b{i}" for i in range(4)}
        for i in range(4):
            bridges.append(start_bridge(cluster, unique_group, f"b{i}", unique_topic, streams, log))
        wait_converged(zk_client, unique_group, unique_topic, partitions, "zookeeper", names)
        triggers = []
        for n in range(10):
            mode = "kafka" if n % 2 == 0 else "zookeeper"
            triggers.append(set_mode(zk_client, unique_group, mode))
            wait_converged(zk_client, unique_group, unique_topic, partitions, mode, names)
            if mode == "kafka":
                assert {b.conn.authority for b in bridges} == {"kafka"}
                kafka_threads = set(owners(zk_client, unique_group, unique_topic).values())
                assert len(kafka_threads) == 8, kafka_threads
            time.sleep(rng.uniform(0.5, 2.0))
        produced = producer.stop()
        drain(log, produced)
        import threading

        leaving = [threading.Thread(target=b.shutdown) for b in bridges]  # leave together: revokes mid-shutdown
        for t in leaving:
            t.start()
        for t in leaving:
            t.join(timeout=60)
        assert not any(b.conn._member.alive for b in bridges), "an embedded member outlived shutdown()"
    verdict = judge(produced, log.records(), watcher.intervals())
    assert verdict.ok, verdict.summary()
    assert not verdict.duplicates, verdict.summary()
    measured = [p.seconds for p in pauses(triggers, log.records(), partitions) if p is not None]
    # Timing is reported, never asserted: benchmarks/switch_pause.py measures it against a plain rebalance.
    print(f"\nswitch pauses over {len(measured)} switches: {summary(measured)}; verdict {verdict.counts()}")


def test_legacy_connector_joining_in_kafka_mode_falls_back_and_returns(
    cluster, unique_group, unique_topic, zk_client
) -> None:
    partitions = 8
    make_topic(cluster, unique_topic, partitions)
    log = ProcessingLog()
    names = {f"{unique_group}_b{i}" for i in range(2)}
    with OwnersWatcher(cluster.zookeeper, unique_group) as watcher:
        producer = SequencedProducer(cluster, unique_topic, rate=300).start()
        bridges = [start_bridge(cluster, unique_group, f"b{i}", unique_topic, 2, log) for i in range(2)]
        set_mode(zk_client, unique_group, "kafka")
        wait_converged(zk_client, unique_group, unique_topic, partitions, "kafka", names)

        from tests.helpers.workload import Member

        legacy = Member(cluster.zookeeper, unique_group, "legacy", {unique_topic: 2}, log)
        wait_converged(zk_client, unique_group, unique_topic, partitions, "zookeeper", names)
        legacy_threads = {f"{unique_group}_legacy-0", f"{unique_group}_legacy-1"}
        wait_until(
            lambda: legacy_threads <= set(owners(zk_client, unique_group, unique_topic).values()),
            timeout=30,
            what="the legacy connector owns its range share",
        )
        reasons = {p.reason for p in published(zk_client, unique_group).values()}
        assert any("legacy connector registered" in r for r in reasons), reasons

        legacy.shutdown()
        wait_converged(zk_client, unique_group, unique_topic, partitions, "kafka", names)
        produced = producer.stop()
        drain(log, produced)
        for b in bridges:
            b.shutdown()
    verdict = judge(produced, log.records(), watcher.intervals())
    assert verdict.ok and not verdict.duplicates, verdict.summary()


def test_canary_bridge_among_three_legacy_connectors_gets_its_fair_share(
    cluster, unique_group, unique_topic, zk_client
) -> None:
    from tests.helpers.workload import Member

    make_topic(cluster, unique_topic, 12)
    log = ProcessingLog()
    members = [Member(cluster.zookeeper, unique_group, f"l{i}", {unique_topic: 1}, log) for i in range(3)]
    canary = start_bridge(cluster, unique_group, "canary", unique_topic, 1, log)
    canary_id = f"{unique_group}_canary-"
    set_mode(zk_client, unique_group, "kafka")  # ignored: legacy connectors are registered
    wait_until(lambda: len(owners(zk_client, unique_group, unique_topic)) == 12, timeout=30, what="12 owners")
    wait_until(
        lambda: (
            sum(1 for t in owners(zk_client, unique_group, unique_topic).values() if t.startswith(canary_id))
            in (2, 3, 4)
        ),
        timeout=30,
        what="the canary owns 3 ± 1 partitions",
    )
    # the bridge publishes its authority after it has claimed: wait for the node rather than race it
    wait_until(
        lambda: f"{unique_group}_canary" in published(zk_client, unique_group),
        timeout=30,
        what="the canary publishes its authority",
    )
    assert published(zk_client, unique_group)[f"{unique_group}_canary"].authority.value == "zookeeper"
    for m in [*members, canary]:
        m.shutdown()


def test_a_partition_that_stays_with_its_bridge_changes_thread_in_place(
    cluster, unique_group, unique_topic, zk_client, caplog
) -> None:
    """ZooKeeper's range gives thread 0 partitions 0-1 and thread 1 partitions 2-3; Kafka's round-robin
    subdivision gives thread 0 partitions 0 and 2. Partitions 1 and 2 change thread but not member: their
    owner nodes are rewritten in place (same node, never absent), nothing is committed or re-read. The
    switch reads only the mode node: the rest of the last snapshot is still current (its watches say so)."""
    import logging

    from migrator.zk.paths import GroupPaths

    caplog.set_level(logging.INFO, logger="migrator.coordination.worker")

    make_topic(cluster, unique_topic, 4)
    log = ProcessingLog()
    paths = GroupPaths(unique_group)
    name = f"{unique_group}_b0"
    with OwnersWatcher(cluster.zookeeper, unique_group) as watcher:
        producer = SequencedProducer(cluster, unique_topic, rate=400).start()
        bridge = start_bridge(cluster, unique_group, "b0", unique_topic, 2, log)
        wait_converged(zk_client, unique_group, unique_topic, 4, "zookeeper", {name})
        assert owners(zk_client, unique_group, unique_topic) == {0: f"{name}-0", 1: f"{name}-0", 2: f"{name}-1",
                                                                 3: f"{name}-1"}  # fmt: skip
        created = {p: zk_client.get(paths.owner(unique_topic, p))[1].czxid for p in range(4)}
        set_mode(zk_client, unique_group, "kafka")
        wait_converged(zk_client, unique_group, unique_topic, 4, "kafka", {name})
        assert owners(zk_client, unique_group, unique_topic) == {0: f"{name}-0", 1: f"{name}-1", 2: f"{name}-0",
                                                                 3: f"{name}-1"}  # fmt: skip
        after = {p: zk_client.get(paths.owner(unique_topic, p))[1].czxid for p in range(4)}
        assert after == created, "an owner node was deleted and re-created instead of handed over in place"
        switch_lines = lambda: [r.getMessage() for r in caplog.records if "rebalance (mode)" in r.getMessage()]  # noqa: E731
        wait_until(switch_lines, timeout=10, what="the switch's rebalance log line")
        assert "mode read" in switch_lines()[0] and "snapshot" not in switch_lines()[0], switch_lines()
        produced = producer.stop()
        drain(log, produced)
        bridge.shutdown()
    moved = [iv for iv in watcher.intervals() if iv.partition in (1, 2) and not iv.member_only]
    assert {iv.owner for iv in moved} == {f"{name}-0", f"{name}-1"}, moved
    verdict = judge(produced, log.records(), watcher.intervals())
    assert verdict.ok and not verdict.duplicates, verdict.summary()
