"""Members join, leave, crash and partitions appear while records keep flowing; the observer judges.

Clean joins and leaves must lose nothing, duplicate nothing and never let two threads work one partition
(CONTRACT §6.1-6.3). After `kill -9` duplicates are allowed only on the dead member's partitions and only
from the offset it had committed when it died.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import NewPartitions
from kazoo.client import KazooClient

from migrator.observe import Duplicate, OwnersWatcher, ProcessingLog, judge, load_many
from migrator.protocol.partition import TopicPartition
from migrator.zk.group_reader import read_group
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import admin, make_topic, produce
from tests.helpers.wait import wait_until
from tests.helpers.workload import Member, SequencedProducer
from tests.helpers.zk import zk_client as open_zk

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]


def _owners(zk: KazooClient, paths: GroupPaths, topic: str) -> dict[TopicPartition, str]:
    return read_group(zk, paths.group).owners_of(topic)


def processed_keys(records: list) -> set[tuple[str, int, int]]:
    return {r.key for r in records}


@pytest.fixture
def running() -> Iterator[dict[str, Member]]:
    """Members still running when the test ends (even by failure) are shut down."""
    started: dict[str, Member] = {}
    yield started
    for m in started.values():
        m.shutdown()


def test_clean_joins_and_leaves_under_production_lose_and_repeat_nothing(
    cluster: object, unique_group: str, unique_topic: str, running: dict[str, Member]
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=12)  # type: ignore[arg-type]
    zk = cluster.zookeeper  # type: ignore[attr-defined]
    log = ProcessingLog()
    members = running
    with OwnersWatcher(zk, unique_group) as watcher:
        producer = SequencedProducer(cluster, topic, rate=150).start()  # type: ignore[arg-type]
        try:
            for cid in ("a", "b", "c"):
                members[cid] = Member(zk, unique_group, cid, {topic: 2}, log, process_s=0.001)
                time.sleep(1.5)
            members.pop("b").shutdown()
            time.sleep(1.5)
            members["d"] = Member(zk, unique_group, "d", {topic: 2}, log, process_s=0.001)
            time.sleep(1.5)
            members.pop("a").shutdown()
            time.sleep(1.0)
        finally:
            produced = producer.stop()
        wait_until(lambda: produced <= processed_keys(log.records()), 30, what="every produced record processed")
        while members:
            members.popitem()[1].shutdown()
        ownership = watcher.intervals()
    verdict = judge(produced, log.records(), ownership)
    print(f"\nclean joins/leaves: {verdict.summary()}; owner intervals {len(ownership)}")
    assert len(produced) > 500
    assert verdict.ok, verdict.summary()
    assert len({iv.owner for iv in ownership}) >= 8  # the watcher saw a, b, c and d threads come and go


def spawn(cluster: object, group: str, topic: str, cid: str, log: Path, process_ms: float = 1.0) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "tests.helpers.member_proc", "--zookeeper", cluster.zookeeper,  # type: ignore[attr-defined]
           "--group", group, "--topic", topic, "--streams", "2", "--consumer-id", cid, "--log", str(log),
           "--process-ms", str(process_ms)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    line = proc.stdout.readline() if proc.stdout else ""
    assert line.startswith("ready"), f"member {cid} did not start: {line!r}"
    return proc


@pytest.fixture
def procs() -> Iterator[list[subprocess.Popen]]:
    started: list[subprocess.Popen] = []
    yield started
    for p in started:
        if p.poll() is None:
            p.kill()
            p.wait(10)


def test_kill_9_duplicates_only_the_dead_members_uncommitted_records(
    cluster: object, zk_client: KazooClient, unique_group: str, unique_topic: str, tmp_path: Path,
    procs: list[subprocess.Popen],
) -> None:  # fmt: skip
    topic = make_topic(cluster, unique_topic, partitions=6)  # type: ignore[arg-type]
    paths = GroupPaths(unique_group)
    logs = {cid: tmp_path / f"{cid}.jsonl" for cid in ("x", "y")}
    producer = SequencedProducer(cluster, topic, rate=150).start()  # type: ignore[arg-type]
    try:
        victim = spawn(cluster, unique_group, topic, "x", logs["x"])
        procs.append(victim)
        procs.append(spawn(cluster, unique_group, topic, "y", logs["y"]))
        dead_prefix = f"{unique_group}_x-"
        wait_until(lambda: sum(th.startswith(dead_prefix) for th in _owners(zk_client, paths, topic).values())
                   == 4, 30, what="x owns its 4 partitions")  # fmt: skip
        time.sleep(2.5)  # x processes and auto-commits at least once
        os.kill(victim.pid, signal.SIGKILL)
        victim.wait(10)
        # until its session expires, x's owner nodes stay and nobody else can commit its partitions
        dead_parts = {tp.partition for tp, th in _owners(zk_client, paths, topic).items()
                      if th.startswith(dead_prefix)}  # fmt: skip
        committed = {p: int(zk_client.get(paths.offset(topic, p))[0]) for p in dead_parts
                     if zk_client.exists(paths.offset(topic, p))}  # fmt: skip
        assert dead_parts == {0, 1, 2, 3}  # range: x-0 gets 0-1, x-1 gets 2-3
        time.sleep(6)  # past x's 4 s session: y takes over while records keep coming
    finally:
        produced = producer.stop()
    wait_until(lambda: produced <= processed_keys(load_many(logs.values())), 40, what="every record processed")
    survivor = procs[1]
    survivor.send_signal(signal.SIGTERM)
    assert survivor.wait(30) == 0

    records = load_many(logs.values())

    def allowed(d: Duplicate) -> bool:
        _topic, partition, offset = d.key
        by_dead = any(r.member.startswith(f"{unique_group}_x@") for r in d.by)
        return partition in dead_parts and offset >= committed.get(partition, 0) and by_dead and len(d.by) == 2

    verdict = judge(produced, records, allow_duplicate=allowed)
    print(f"\nkill -9: {verdict.summary()}; dead partitions {sorted(dead_parts)} committed {committed}")
    assert verdict.ok, verdict.summary()
    assert any(r.member.startswith(f"{unique_group}_x@") for r in records)
    assert {r.partition for r in records if r.member.startswith(f"{unique_group}_y@")} == set(range(6))


@pytest.mark.parametrize(
    "extra",
    [
        pytest.param({}, id="default"),
        pytest.param({"fetcher.topic.metadata.refresh.interval.ms": "1000"}, id="fast-metadata-refresh"),
    ],
)
def test_added_partitions_are_rebalanced_and_consumed(
    cluster: object, zk_client: KazooClient, unique_group: str, unique_topic: str, extra: dict[str, str]
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=2)  # type: ignore[arg-type]
    zk = cluster.zookeeper  # type: ignore[attr-defined]
    log = ProcessingLog()
    members = [Member(zk, unique_group, cid, {topic: 2}, log, **extra) for cid in ("a", "b")]
    paths = GroupPaths(unique_group)
    try:
        wait_until(lambda: len(_owners(zk_client, paths, topic)) == 2, 30, what="2 partitions owned")
        client = admin(cluster)  # type: ignore[arg-type]  # keep it alive until the future resolves
        client.create_partitions([NewPartitions(topic, 4)])[topic].result(30)
        expected = {TopicPartition(topic, p): f"{unique_group}_{'a' if p < 2 else 'b'}-{p % 2}" for p in range(4)}
        wait_until(lambda: _owners(zk_client, paths, topic) == expected, 40, what=f"owners {expected}")
        produced = set()
        for p in (2, 3):
            produce(cluster, topic, [f"new-{p}-{i}" for i in range(5)], partition=p)  # type: ignore[arg-type]
            produced |= {(topic, p, i) for i in range(5)}
        wait_until(lambda: produced <= processed_keys(log.records()), 15, what="records of the new partitions")
        b = f"{unique_group}_b"
        wait_until(lambda: members[1].conn.owned == {tp: th for tp, th in expected.items() if th.startswith(b)},
                   10, what="b's own view includes the new partitions")  # fmt: skip
    finally:
        for m in members:
            m.shutdown()
    assert {(r.partition, r.thread_id) for r in log.records()} == {(2, f"{b}-0"), (3, f"{b}-1")}


def test_an_owner_node_left_by_an_earlier_session_of_the_same_consumer_is_recreated_under_ours(
    cluster, unique_group, unique_topic, zk_client
) -> None:
    """A connector restarted with the same consumer.id before its old session expired finds owner nodes
    holding its own thread id. They count as its own (CONTRACT §3 step 5), but must be re-created under
    the new session: adopted as they are, they vanish when the old session expires, and the partition is
    processed without a lock."""
    from migrator.protocol.codecs import encode_owner

    make_topic(cluster, unique_topic, 2)
    paths = GroupPaths(unique_group)
    thread = f"{unique_group}_c1-0"
    with open_zk(cluster) as earlier:
        earlier.create(paths.owner(unique_topic, 0), encode_owner(thread), ephemeral=True, makepath=True)
        member = Member(cluster.zookeeper, unique_group, "c1", {unique_topic: 1}, ProcessingLog())

        def owned_under_a_live_session_of_ours() -> bool:
            held = _owners(zk_client, paths, unique_topic)
            stat = zk_client.exists(paths.owner(unique_topic, 0))
            mine = stat is not None and stat.ephemeralOwner != earlier.client_id[0]
            return set(held.values()) == {thread} and len(held) == 2 and mine

        try:
            # Fails without the re-creation: the node keeps the earlier session as its ephemeral owner.
            wait_until(
                owned_under_a_live_session_of_ours, timeout=30, what="both partitions owned under the new session"
            )
            earlier.stop()  # the earlier session ends: its ephemeral nodes go
            time.sleep(0.5)
            assert zk_client.exists(paths.owner(unique_topic, 0)) is not None, "the owner node vanished"
        finally:
            member.shutdown()
