"""Where a legacy connector starts and what it commits: `auto.offset.reset`, clean shutdown, resume."""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient

from migrator.observe import ProcessingLog, judge
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import high_watermarks, make_topic, produce
from tests.helpers.wait import wait_until
from tests.helpers.workload import Member

pytestmark = pytest.mark.integration


def test_smallest_consumes_what_exists(cluster: object, unique_group: str, unique_topic: str) -> None:
    topic = make_topic(cluster, unique_topic, partitions=3)  # type: ignore[arg-type]
    produce(cluster, topic, [f"old-{i}" for i in range(30)])  # type: ignore[arg-type]
    log = ProcessingLog()
    member = Member(cluster.zookeeper, unique_group, "s", {topic: 1}, log, **{"auto.offset.reset": "smallest"})  # type: ignore[attr-defined]
    try:
        wait_until(lambda: len(log) >= 30, 30, what="30 existing records")
    finally:
        member.shutdown()
    assert len(log) == 30 and len({r.key for r in log.records()}) == 30


def test_largest_consumes_only_what_comes_after_joining(cluster: object, unique_group: str, unique_topic: str) -> None:
    """`largest` without a commit starts where the log ends when fetching starts (as in the Scala connector,
    which resolves it in its fetcher): nothing produced before the join is consumed, and from the first record
    consumed on, every later one is. Probes are produced until each partition has yielded one, so the check
    does not depend on how soon after the claim fetching starts."""
    topic = make_topic(cluster, unique_topic, partitions=3)  # type: ignore[arg-type]
    for p in range(3):
        produce(cluster, topic, [f"old-{p}-{i}" for i in range(10)], partition=p)  # type: ignore[arg-type]
    log = ProcessingLog()
    member = Member(cluster.zookeeper, unique_group, "l", {topic: 1}, log, **{"auto.offset.reset": "largest"})  # type: ignore[attr-defined]

    def started() -> set[int]:
        return {r.partition for r in log.records()}

    try:
        wait_until(lambda: len(member.conn.owned) == 3, 30, what="3 partitions claimed")
        deadline = time.monotonic() + 30
        while started() != {0, 1, 2} and time.monotonic() < deadline:
            for p in set(range(3)) - started():
                produce(cluster, topic, [f"probe-{p}"], partition=p)  # type: ignore[arg-type]
            time.sleep(0.2)
        assert started() == {0, 1, 2}, f"only partitions {sorted(started())} consumed a probe within 30 s"
        for p in range(3):
            produce(cluster, topic, [f"new-{p}-{i}" for i in range(3)], partition=p)  # type: ignore[arg-type]
        ends = {p: int(o) for p, o in high_watermarks(cluster.bootstrap_servers, topic, 3).items()}  # type: ignore[attr-defined]
        wait_until(lambda: {(p, ends[p] - 1) for p in range(3)} <= {(r.partition, r.offset) for r in log.records()},
                   30, what="the records produced after the probes")  # fmt: skip
        time.sleep(1.0)  # room for any old record to show up wrongly
    finally:
        member.shutdown()
    for p in range(3):
        offsets = sorted(r.offset for r in log.records() if r.partition == p)
        assert offsets[0] >= 10, f"partition {p}: records produced before joining were consumed: {offsets}"
        assert offsets == list(range(offsets[0], ends[p])), (
            f"partition {p}: a gap or a repeat after the first: {offsets}"
        )


def test_clean_shutdown_commits_next_offsets_and_a_successor_resumes_exactly_there(
    cluster: object, zk_client: KazooClient, unique_group: str, unique_topic: str
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=4)  # type: ignore[arg-type]
    zk = cluster.zookeeper  # type: ignore[attr-defined]
    paths = GroupPaths(unique_group)
    # every partition gets records, so each has a committed offset to check (the sticky partitioner could put
    # a fast run of keyless records on fewer partitions)
    first_batch = sum(produce(cluster, topic, [f"a-{p}-{i}" for i in range(10)], partition=p)  # type: ignore[arg-type]
                      for p in range(4))  # fmt: skip
    log = ProcessingLog()
    first = Member(zk, unique_group, "one", {topic: 2}, log, **{"auto.commit.interval.ms": "60000"})
    try:
        wait_until(lambda: len(log) >= first_batch, 30, what="first batch processed")
    finally:
        first.shutdown()  # the only commit: auto-commit is a minute away
    last = {}
    for r in log.records():
        last[r.partition] = max(last.get(r.partition, -1), r.offset)
    committed = {p: int(zk_client.get(paths.offset(topic, p))[0]) for p in range(4)}
    assert committed == {p: last[p] + 1 for p in range(4)}

    produce(cluster, topic, [f"b-{i}" for i in range(20)])  # type: ignore[arg-type]
    second = Member(zk, unique_group, "two", {topic: 1}, log)
    try:
        wait_until(lambda: len(log) >= 60, 30, what="second batch processed")
        time.sleep(1.0)  # room for a wrong re-read of the first batch
    finally:
        second.shutdown()
    resumed = [r for r in log.records() if r.member == f"{unique_group}_two"]
    assert len(resumed) == 20
    assert all(r.offset >= committed[r.partition] for r in resumed)
    produced = {(topic, p, o) for p in range(4) for o in range(int(zk_client.get(paths.offset(topic, p))[0]))}
    verdict = judge(produced, log.records())
    assert verdict.ok and verdict.produced == 60, verdict.summary()


def test_kafka_storage_commits_through_the_fetcher_and_shutdown_closes_the_admin_client(
    cluster: object, zk_client: KazooClient, unique_group: str, unique_topic: str
) -> None:
    """`offsets.storage=kafka` without dual commit: a legacy connector's simple commit goes through its fetcher
    (bounded, under the fetcher's lock) and lands in Kafka only; after shutdown its Kafka clients are closed."""
    from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
    from migrator.protocol.partition import TopicPartition

    topic = make_topic(cluster, unique_topic, partitions=2)  # type: ignore[arg-type]
    # both partitions get records (keyless records may all stick to one partition)
    produced = sum(produce(cluster, topic, [f"r{p}-{i}" for i in range(10)], partition=p) for p in range(2))  # type: ignore[arg-type]
    log = ProcessingLog()
    props = {"offsets.storage": "kafka", "dual.commit.enabled": "false", "auto.commit.interval.ms": "60000"}
    member = Member(cluster.zookeeper, unique_group, "k", {topic: 1}, log, **props)  # type: ignore[attr-defined]
    try:
        wait_until(lambda: len(log) >= produced, 30, what="every record processed")
    finally:
        member.shutdown()  # the only commit: auto-commit is a minute away
    with pytest.raises(KafkaUnavailable):
        member.conn._admin.topics()  # type: ignore[union-attr]
    tps = [TopicPartition(topic, p) for p in range(2)]
    with KafkaAdmin(cluster.bootstrap_servers) as admin:  # type: ignore[attr-defined]
        committed = admin.committed_offsets(unique_group, tps)
    ends: dict[int, int] = {}
    for r in log.records():
        ends[r.partition] = max(ends.get(r.partition, -1), r.offset + 1)
    assert committed == {TopicPartition(topic, p): ends[p] for p in range(2)}
    assert not zk_client.exists(GroupPaths(unique_group).offsets)
