"""The legacy connector on the real cluster: assignment layout, ZooKeeper bytes, rebalance listener.

Layouts are read back from `/owners` (what another connector, or a Scala one, would see), and compared
both with our assignor functions and with a literal map, so a bug shared by the assignor and the
connector cannot hide.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping

import pytest
from kazoo.client import KazooClient

from migrator import ConsumerConnector, ConsumerRebalanceListener, Whitelist
from migrator.assign.legacy import context_from_subscriptions, range_assign, roundrobin_assign
from migrator.observe import ProcessingLog
from migrator.protocol.partition import TopicPartition
from migrator.zk.group_reader import read_group
from migrator.zk.paths import GroupPaths
from tests.helpers.kafka import make_topic, produce
from tests.helpers.wait import wait_until
from tests.helpers.workload import TEST_PROPS, Member

pytestmark = pytest.mark.integration


def props(cluster: object, group: str, cid: str, **extra: str) -> dict[str, str]:
    return {"zookeeper.connect": cluster.zookeeper, "group.id": group, "consumer.id": cid, **TEST_PROPS, **extra}  # type: ignore[attr-defined]


def converge(zk: KazooClient, group: str, topic: str, expected: Mapping[TopicPartition, str],
             conns: list[Member]) -> None:  # fmt: skip
    """ZooKeeper shows `expected`, and each connector's own view agrees with it."""

    def done() -> bool:
        if read_group(zk, group).owners_of(topic) != dict(expected):
            return False
        return all(m.conn.owned == {tp: th for tp, th in expected.items() if th.startswith(m.conn.consumer_id + "-")}
                   for m in conns)  # fmt: skip

    wait_until(done, 40, what=f"owners of {group} to converge to {dict(expected)}")


@pytest.mark.parametrize("strategy", ["range", "roundrobin"])
def test_three_connectors_converge_to_the_legacy_layout(
    cluster: object, zk_client: KazooClient, unique_group: str, unique_topic: str, members: list[Member], strategy: str
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=12)  # type: ignore[arg-type]
    log = ProcessingLog()
    for cid in ("c1", "c2", "c3"):
        members.append(Member(cluster.zookeeper, unique_group, cid, {topic: 2}, log,  # type: ignore[attr-defined]
                              **{"partition.assignment.strategy": strategy}))  # fmt: skip
    subs = {f"{unique_group}_{c}": {topic: 2} for c in ("c1", "c2", "c3")}
    ctx = context_from_subscriptions(f"{unique_group}_c1", subs, {topic: range(12)})
    computed = (range_assign if strategy == "range" else roundrobin_assign)(ctx)
    assert sorted(set(computed.values())) == [f"{unique_group}_c{i}-{j}" for i in (1, 2, 3) for j in (0, 1)]
    if strategy == "range":
        literal = {TopicPartition(topic, p): f"{unique_group}_c{p // 4 + 1}-{(p // 2) % 2}" for p in range(12)}
        assert computed == literal
    converge(zk_client, unique_group, topic, computed, members)

    produce(cluster, topic, [f"v{i}" for i in range(120)])  # type: ignore[arg-type]
    wait_until(lambda: len(log) >= 120, 30, what="120 records processed")
    by_owner = {(r.partition, r.thread_id) for r in log.records()}
    assert by_owner <= {(tp.partition, th) for tp, th in computed.items()}, "a record came from a non-owner"


def test_zookeeper_layout_is_byte_for_byte_legacy(
    cluster: object, zk_client: KazooClient, unique_group: str, unique_topic: str
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=2)  # type: ignore[arg-type]
    produce(cluster, topic, [f"v{i}" for i in range(10)], partition=0)  # type: ignore[arg-type]
    produce(cluster, topic, [f"w{i}" for i in range(7)], partition=1)  # type: ignore[arg-type]
    paths = GroupPaths(unique_group)
    cid = f"{unique_group}_c1"
    conn = ConsumerConnector(props(cluster, unique_group, "c1"))
    try:
        streams = conn.create_message_streams({topic: 2})[topic]
        data = zk_client.get(paths.member(cid))[0]
        assert re.fullmatch(
            rb'\{"version":1,"subscription":\{"' + re.escape(topic.encode()) + rb'":2\},"pattern":"static",'
            rb'"timestamp":"\d+"\}', data
        ), data  # fmt: skip
        wait_until(lambda: len(conn.owned) == 2, 30, what="both partitions claimed")
        parts = zk_client.get_children(paths.owners_topic(topic))
        owners = {int(p): zk_client.get(paths.owner(topic, int(p)))[0] for p in parts}
        assert owners == {0: f"{cid}-0".encode(), 1: f"{cid}-1".encode()}

        seen: dict[int, int] = {}
        done = threading.Event()

        def drain(stream: object) -> None:
            for m in stream:  # type: ignore[attr-defined]
                seen[m.partition] = max(seen.get(m.partition, -1), m.offset)
                if seen == {0: 9, 1: 6}:
                    conn.commit_offsets()  # marks this thread's current record processed, then commits
                    done.set()

        for s in streams:
            threading.Thread(target=drain, args=(s,), daemon=True).start()
        wait_until(done.is_set, 30, what="17 records processed")

        def offsets() -> dict[int, bytes]:
            return {int(p): zk_client.get(paths.offset(topic, int(p)))[0]
                    for p in zk_client.get_children(paths.offsets_topic(topic))}  # fmt: skip

        # each thread's last record counts once it asks for the next; the auto-commit then writes it
        wait_until(lambda: zk_client.exists(paths.offsets_topic(topic)) and offsets() == {0: b"10", 1: b"7"},
                   20, what="offsets 10 and 7")  # fmt: skip
        assert zk_client.exists(paths.migration) is None
        assert sorted(zk_client.get_children(paths.root)) == ["ids", "offsets", "owners"]
    finally:
        conn.shutdown()
    assert zk_client.get_children(paths.ids) == []
    assert zk_client.get_children(paths.owners_topic(topic)) == []
    assert zk_client.get(paths.offset(topic, 0))[0] == b"10"
    assert zk_client.exists(paths.migration) is None


def test_wildcard_registration_is_the_normalised_regex(
    cluster: object, zk_client: KazooClient, unique_group: str
) -> None:
    conn = ConsumerConnector(props(cluster, unique_group, "w1"))
    try:
        conn.create_message_streams_by_filter(Whitelist("a.*, b"), 2)
        data = zk_client.get(GroupPaths(unique_group).member(f"{unique_group}_w1"))[0]
        assert re.fullmatch(rb'\{"version":1,"subscription":\{"a\.\*\|b":2\},"pattern":"white_list",'
                            rb'"timestamp":"\d+"\}', data), data  # fmt: skip
    finally:
        conn.shutdown()


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.released: list[dict[str, set[int]]] = []
        self.started: list[tuple[str, dict[str, dict[int, str]]]] = []
        self.event = threading.Event()

    def before_releasing_partitions(self, ownership: Mapping[str, set[int]]) -> None:
        self.released.append({t: set(ps) for t, ps in ownership.items()})

    def before_starting_fetchers(self, consumer_id: str, assignment: Mapping[str, Mapping[int, str]]) -> None:
        self.started.append((consumer_id, {t: dict(ps) for t, ps in assignment.items()}))
        self.event.set()


def test_rebalance_listener_sees_release_and_the_global_assignment(
    cluster: object, zk_client: KazooClient, unique_group: str, unique_topic: str
) -> None:
    topic = make_topic(cluster, unique_topic, partitions=12)  # type: ignore[arg-type]
    first, second = Recorder(), Recorder()
    a = ConsumerConnector(props(cluster, unique_group, "a"))
    b = ConsumerConnector(props(cluster, unique_group, "b"))
    try:
        a.set_rebalance_listener(first)
        a.create_message_streams({topic: 2})
        wait_until(lambda: len(a.owned) == 12, 30, what="a owns all 12")
        assert first.started and first.started[-1][0] == f"{unique_group}_a"
        assert first.started[-1][1] == {topic: {p: f"{unique_group}_a-{p // 6}" for p in range(12)}}

        b.set_rebalance_listener(second)
        b.create_message_streams({topic: 2})
        want = {p: f"{unique_group}_{'a' if p < 6 else 'b'}-{(p // 3) % 2}" for p in range(12)}

        def both_see_it() -> bool:
            return bool(second.started) and first.started[-1][1] == second.started[-1][1] == {topic: want}

        wait_until(both_see_it, 30, what="both listeners see the new layout")
        assert second.started[-1][0] == f"{unique_group}_b"
        assert set(second.started[-1][1][topic]) == set(range(12))  # global, not only b's partitions
        assert {6, 7, 8, 9, 10, 11} <= set().union(*(r.get(topic, set()) for r in first.released))
    finally:
        b.shutdown()
        a.shutdown()
    assert any(topic in r for r in second.released)  # a clean shutdown releases through the listener
