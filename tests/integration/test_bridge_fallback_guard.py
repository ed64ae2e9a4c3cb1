"""The fallback guard on a real cluster (CONTRACT §6.1): in mode kafka, with a plain Kafka consumer in the
group, a legacy connector registering forces every bridge off Kafka authority. ZooKeeper's assignment knows
nothing of the plain consumer, so obeying it would put the bridge on the plain consumer's partitions; the
bridge must hold nothing instead, and resume by itself when the legacy connector leaves (back to Kafka) or
when the plain consumer leaves (then ZooKeeper's assignment overlaps nobody).

The legacy connector subscribes to another topic of the same group: it still forces the fallback (it is
registered in `ids` without being a bridge) but cannot itself overlap the plain consumer, so every overlap
the observer finds is the bridge's.
"""

from __future__ import annotations

import time

import pytest
from prometheus_client import REGISTRY

from migrator.demo.workload import PlainConsumer
from migrator.observe import OwnersWatcher, ProcessingLog
from migrator.observe.verdict import judge
from tests.helpers.bridge import owners, published, set_mode, start_bridge, wait_converged
from tests.helpers.kafka import make_topic
from tests.helpers.wait import wait_until
from tests.helpers.workload import Member, SequencedProducer

pytestmark = [pytest.mark.integration, pytest.mark.slow]

PARTITIONS = 8
HELD_S = 4.0  # longer than two guard rechecks: the hold must survive its own periodic re-evaluation


def test_a_bridge_next_to_a_plain_consumer_holds_nothing_instead_of_falling_back(
    cluster, unique_group, unique_topic, zk_client
) -> None:
    g, t, other = unique_group, unique_topic, f"{unique_topic}-legacy"
    make_topic(cluster, t, PARTITIONS)
    make_topic(cluster, other, 1)
    log = ProcessingLog()
    bridge_id = f"{g}_b"

    def bridge_partitions() -> set[int]:
        return {p for p, thread in owners(zk_client, g, t).items() if thread.startswith(f"{bridge_id}-")}

    def pub():  # type: ignore[no-untyped-def]
        return published(zk_client, g).get(bridge_id)

    def gauge() -> float | None:
        return REGISTRY.get_sample_value("migrator_zookeeper_fallback_held", {"group": g, "client_id": bridge_id})

    def held() -> bool:
        p = pub()
        return p is not None and p.held and not bridge_partitions()

    with OwnersWatcher(cluster.zookeeper, g) as watcher:
        producer = SequencedProducer(cluster, t, rate=300).start()
        # slow processing keeps the bridge busy on a partition, so sharing one with the plain consumer shows as
        # an overlap (two workers at once), not only as duplicates
        bridge = start_bridge(cluster, g, "b", t, 2, log, process_s=0.005)  # type: ignore[arg-type]
        set_mode(zk_client, g, "kafka")
        wait_converged(zk_client, g, t, PARTITIONS, "kafka", {bridge_id})

        plain = PlainConsumer(cluster.bootstrap_servers, g, t, log, "plain").start()
        assert plain.joined.wait(30)
        wait_until(
            lambda: plain.assigned_now() and bridge_partitions() == set(range(PARTITIONS)) - plain.assigned_now(),
            timeout=30, what="the bridge and the plain consumer share the topic under Kafka authority",
        )  # fmt: skip

        joined = judge(set(), log.records())
        assert not joined.overlaps, "overlap when the plain consumer joined: " + joined.summary()

        # 1. a legacy connector registers: the authority rule falls back, the guard holds
        fallback_ns = time.time_ns()
        legacy = Member(cluster.zookeeper, g, "legacy", {other: 1}, log)
        wait_until(
            lambda: (p := pub()) is not None and "legacy connector registered" in p.reason,
            timeout=30, what="the bridge decided after the legacy connector registered",
        )  # fmt: skip
        time.sleep(HELD_S)
        early = judge(set(), [r for r in log.records() if r.end_ns > fallback_ns])
        assert not early.overlaps, "the bridge fell back onto the plain consumer's partitions: " + early.summary()
        assert held(), f"the bridge should hold nothing: {pub()!r}, owns {bridge_partitions()}"
        reason = pub().reason  # type: ignore[union-attr]
        assert "holding nothing" in reason and "plain" in reason, reason
        assert gauge() == 1
        held_since = time.time_ns()
        time.sleep(1.0)
        assert not [r for r in log.records() if r.member == bridge_id and r.start_ns > held_since]
        assert [r for r in log.records() if r.member == "plain" and r.start_ns > held_since], "plain stopped"

        # 2. the legacy connector leaves: Kafka authority is healthy again, the bridge takes its share back
        legacy.shutdown()
        wait_until(
            lambda: (p := pub()) is not None and p.authority.value == "kafka" and not p.held
            and bridge_partitions() == set(range(PARTITIONS)) - plain.assigned_now(),
            timeout=30, what="the bridge back under Kafka authority",
        )  # fmt: skip
        assert gauge() == 0

        # 3. held again, then the plain consumer leaves: ZooKeeper's assignment overlaps nobody any more
        legacy = Member(cluster.zookeeper, g, "legacy", {other: 1}, log)
        wait_until(held, timeout=30, what="the bridge holds nothing again")
        plain.shutdown()
        wait_until(
            lambda: (p := pub()) is not None and p.authority.value == "zookeeper" and not p.held
            and bridge_partitions() == set(range(PARTITIONS)),
            timeout=30, what="the bridge obeys ZooKeeper once no plain consumer remains",
        )  # fmt: skip

        legacy.shutdown()
        wait_converged(zk_client, g, t, PARTITIONS, "kafka", {bridge_id})
        produced = producer.stop()
        wait_until(lambda: produced <= {r.key for r in log.records()}, timeout=60, what="every record processed")
        bridge.shutdown()
    records = log.records()
    verdict = judge(produced, records)
    assert verdict.ok and not verdict.duplicates, verdict.summary()
    connectors = [r for r in records if r.member != "plain"]
    owner_check = judge(produced, connectors, watcher.intervals())
    assert not owner_check.owner_violations, owner_check.summary()
