"""A leader move in a mixed pykafka-dialect group: a real pykafka 2.8.0 `BalancedConsumer` and two bridges
(`zookeeper.layout=pykafka`, `coordination.migration.enabled=true`), each in its own process, under load on a
dedicated 2-broker cluster (topic and offsets replicated on both), judged by the independent observer.

pykafka names an owner node `<leader>-<partition>` and sorts partitions by a key holding the leader, so a broker
restart renames the nodes twice: when the broker stops, its partitions move to the other one; when it is back,
the controller's preferred-leader election (every `leader.imbalance.check.interval.seconds`) moves them back.
The bridges follow both moves: they re-assign when a leader changes and give the nodes they hold the current
leader's name, so a pykafka member (which only conflicts on that exact name) cannot claim a partition they
still process.

What pykafka 2.8.0 itself survives decides the shape (docs/compatibility.md, "Leader moves"): a member decides
with the leaders its own metadata last saw, and refreshes them only when a fetch of its own partitions fails,
so after a move it may keep an assignment the others no longer compute, and a partition it releases after its
leader moved keeps its node (deleted by the new leader's name). So the broker that stops is the one leading
none of the pykafka member's partitions (it never releases a moved one), and once the leaders are back the
operator restarts the pykafka member, the documented step that gives it fresh metadata; the whole group then
converges on pykafka's assignment over the current leaders, every node named after its current leader.

Records processed twice are allowed only where a pykafka member processed them first, and only as pykafka 2.8.0
repeats them in a group of its own: one contiguous block per hand-over, the last records it processed of the
partition before the next owner started. pykafka commits when a rebalance begins, goes on consuming until its
rebalance takes the consumer's lock, deletes the owner node, and commits what it consumed meanwhile only after it
has claimed all its new partitions; the next owner starts from the commit it finds (docs/pykafka.md, "Known
limits"). Any other repeat, and any record a bridge processed first that is processed again, fails the test.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.assign.pykafka import ASSIGNORS, PykafkaProtocol
from migrator.demo.workload import bridge_props
from migrator.observe import Duplicate, OwnerInterval, OwnersWatcher, OwnerViolation, Processed, judge, load_many
from migrator.protocol.pykafka_layout import Spelling, topic_text
from migrator.zk.brokers import partition_leaders
from tests.helpers.cluster import restart_process
from tests.helpers.kafka import make_topic
from tests.helpers.member_proc import MemberProcess
from tests.helpers.peers import PATIENT
from tests.helpers.pykafka_peer import PykafkaMember
from tests.helpers.wait import wait_until
from tests.helpers.workload import SequencedProducer
from tests.helpers.zk import zk_client
from tests.integration.test_pykafka_peers import owner_nodes

PARTITIONS = 6
RATE = 100.0
TWO_BROKERS = {"offsets.topic.replication.factor": 2, "leader.imbalance.check.interval.seconds": 5}
"""Offsets on both brokers (the group's commits survive either one stopping), and the preferred-leader
election every 5 s instead of 300 s: the leaders move back soon after the broker returns."""


class LeaderMoves:
    """The members, the load and the observer of one group on the 2-broker cluster."""

    def __init__(self, cluster: Any, zk: KazooClient, topic: str, tmp: Path) -> None:
        # '~' sorts after any host name: the bridges' ids (`<group>_<name>`) come after pykafka's `<host>:<uuid4>`
        self.cluster, self.zk, self.topic, self.tmp = cluster, zk, topic, tmp
        self.group = f"~leader-moves-{uuid.uuid4().hex[:8]}"
        self.folder = topic_text(topic, Spelling.PYTHON3)
        self.logs: list[Path] = []
        self.pykafka: list[PykafkaMember] = []
        self.bridges: dict[str, MemberProcess] = {}
        self.watcher: OwnersWatcher | None = None
        self.producer: SequencedProducer | None = None

    def start(self) -> None:
        self.watcher = OwnersWatcher(self.cluster.zookeeper, self.group).start()
        self.producer = SequencedProducer(self.cluster, self.topic, rate=RATE).start()

    def add_pykafka(self) -> PykafkaMember:
        log = self.tmp / f"pykafka-{len(self.logs)}.jsonl"
        self.logs.append(log)
        member = PykafkaMember(self.cluster.zookeeper, self.cluster.bootstrap_servers, self.group, self.topic, log)
        self.pykafka.append(member)
        return member

    def restart_pykafka(self, member: PykafkaMember) -> PykafkaMember:
        """A clean stop (SIGTERM, exit 0) and a new pykafka member in its place."""
        self.pykafka.remove(member)
        assert member.stop() == 0, member.death()
        return self.add_pykafka()

    def add_bridge(self, name: str) -> None:
        log = self.tmp / f"{name}.jsonl"
        self.logs.append(log)
        props = {"zookeeper.layout": "pykafka", **bridge_props(self.cluster.bootstrap_servers), **PATIENT}
        self.bridges[name] = MemberProcess(self.cluster.zookeeper, self.group, self.topic, name, log, props=props,
                                           log_level="INFO")  # fmt: skip

    def members(self) -> list[str]:
        return [m.consumer_id for m in self.pykafka] + [f"{self.group}_{name}" for name in self.bridges]

    def nodes(self) -> dict[str, str]:
        """owner node name -> owner."""
        return {node.name: owner for node, owner in owner_nodes(self.zk, self.group, self.folder).items()}

    def converged(self) -> bool:
        """Every partition owned as pykafka's range assignment over the current leaders decides, by one node
        named after its current leader."""
        self.assert_alive()
        leaders = partition_leaders(self.zk, self.topic)
        expected = ASSIGNORS[PykafkaProtocol.RANGE](self.topic, Spelling.PYTHON3, self.members(), leaders)
        return self.nodes() == {f"{leaders[p]}-{p}": owner for p, owner in expected.items()}

    def bridges_follow(self) -> bool:
        """Every node a bridge holds is named after its partition's current leader."""
        self.assert_alive()
        leaders = partition_leaders(self.zk, self.topic)
        ours = [name for name, owner in self.nodes().items() if owner.startswith(f"{self.group}_")]
        return bool(ours) and all(name == f"{leaders[int(name.split('-')[1])]}-{name.split('-')[1]}" for name in ours)

    def assert_alive(self) -> None:
        dead = [d for d in (m.death() for m in [*self.pykafka, *self.bridges.values()]) if d]
        assert not dead, f"member processes died: {dead}"

    def close(self) -> None:
        for member in [*self.pykafka, *self.bridges.values()]:
            if member.alive():
                member.kill()
        for part in (self.producer, self.watcher):
            if part is not None:
                with contextlib.suppress(Exception):
                    part.stop()


def pykafka_first(group: str) -> Callable[[Duplicate], bool]:
    """A repeat a pykafka member processed first: every bridge's id is `<group>_<name>`, pykafka's `<host>:<uuid>`."""
    return lambda d: not d.by[0].member.startswith(group)


IN_HAND_S = 2.0
"""How late after its node went a pykafka member may process the record its `consume()` held: the time its main
thread waits for the CPU behind the rebalance thread, on a loaded 2-core machine."""


def the_record_in_hand(
    group: str, records: list[Processed], ownership: list[OwnerInterval]
) -> Callable[[OwnerViolation], bool]:
    """pykafka 2.8.0's `consume()` takes a message under the consumer's lock and, when a rebalance is under way,
    yields to it before returning the message: the rebalance deletes the owner nodes first, and the application
    processes that one message with no node (a group of pykafka members alone does the same). Excused: a pykafka
    member's record that is the next offset after the last it processed of the partition while it held the node,
    and its first record of the partition since, within `IN_HAND_S`. Two members at once stay the overlap check's."""

    def excused(violation: OwnerViolation) -> bool:
        r = violation.record
        if r.member.startswith(group):
            return False
        ends = [iv.end_ns for iv in ownership if (iv.topic, iv.partition) == (r.topic, r.partition)
                and iv.held_by(r.thread_id) and iv.end_ns is not None and iv.end_ns <= r.start_ns]  # fmt: skip
        if not ends:
            return False
        ended = max(ends)
        mine = [x for x in records if x.worker == r.worker and (x.topic, x.partition) == (r.topic, r.partition)]
        held = [x.offset for x in mine if x.start_ns < ended]
        since = [x for x in mine if ended <= x.start_ns < r.start_ns]
        return bool(held) and r.offset == max(held) + 1 and not since and r.start_ns - ended <= IN_HAND_S * 1e9

    return excused


def uncommitted_tail_problems(repeats: list[Duplicate], records: list[Processed]) -> list[str]:
    """The repeats that are not what pykafka's late commit at a hand-over leaves: each contiguous run of one
    member's repeats of a partition must be the last records it processed of that partition before the next
    owner started."""
    runs: dict[tuple[str, int], list[list[Duplicate]]] = defaultdict(list)
    for d in sorted(repeats, key=lambda d: (d.by[0].member, d.key[1], d.key[2])):
        member_runs = runs[(d.by[0].member, d.key[1])]
        if member_runs and member_runs[-1][-1].key[2] + 1 == d.key[2]:
            member_runs[-1].append(d)
        else:
            member_runs.append([d])
    problems = []
    for (member, partition), member_runs in sorted(runs.items()):
        for run in member_runs:
            last, next_owner_started = run[-1].key[2], min(d.by[1].start_ns for d in run)
            beyond = [r.offset for r in records if r.member == member and r.partition == partition
                      and r.offset > last and r.start_ns < next_owner_started]  # fmt: skip
            if beyond:
                problems.append(f"{member} partition {partition}: repeats {run[0].key[2]}..{last}, but it processed "
                                f"{beyond[:3]} before the next owner started")  # fmt: skip
    return problems


@pytest.fixture
def moves(cluster_factory: Any, unique_topic: str, tmp_path: Path) -> Iterator[LeaderMoves]:
    cluster = cluster_factory(brokers=2, extra_broker_config=TWO_BROKERS)
    make_topic(cluster, unique_topic, partitions=PARTITIONS, replication=2)
    with zk_client(cluster) as zk:
        m = LeaderMoves(cluster, zk, unique_topic, tmp_path)
        try:
            yield m
        finally:
            m.close()


def test_a_broker_restart_renames_owner_nodes_and_the_mixed_pykafka_group_follows(moves: LeaderMoves) -> None:
    m = moves
    m.start()
    began = time.monotonic()
    pykafka = m.add_pykafka()
    m.add_bridge("b0")
    m.add_bridge("b1")
    wait_until(m.converged, 90, what="the group converged on pykafka's assignment")
    joined_s = time.monotonic() - began  # the baseline: the same group forming, in the same run
    preferred = partition_leaders(m.zk, m.topic)
    held = {int(name.split("-")[1]) for name, owner in m.nodes().items() if owner == pykafka.consumer_id}
    (down,) = set(preferred.values()) - {preferred[p] for p in held}
    m.cluster.stop_process(f"broker-{down}")
    wait_until(lambda: down not in partition_leaders(m.zk, m.topic).values(), 60, what="leaders moved away")
    moved = time.monotonic()
    wait_until(m.bridges_follow, 60, what="bridges' owner nodes renamed after the new leaders")
    followed_away_s = time.monotonic() - moved
    failures = restart_process(m.cluster, f"broker-{down}")
    restarted = time.monotonic()
    wait_until(lambda: partition_leaders(m.zk, m.topic) == preferred, 90, what="preferred leaders back")
    wait_until(m.bridges_follow, 60, what="bridges' owner nodes renamed after the preferred leaders again")
    followed_back_s = time.monotonic() - restarted
    # the operator's step after a leader move: restart each pykafka member, which then decides with fresh metadata
    m.restart_pykafka(pykafka)
    wait_until(m.converged, 90, what="the group converged on the current leaders' names")
    converged_s = time.monotonic() - restarted
    assert m.producer is not None and m.watcher is not None
    produced = m.producer.stop(flush_timeout_s=120.0)
    wait_until(lambda: produced <= {r.key for r in load_many(m.logs)}, 90, what="every produced record processed")
    members = [*m.pykafka, *m.bridges.values()]
    with ThreadPoolExecutor(len(members)) as pool:  # clean stops, side by side
        codes = list(pool.map(lambda member: member.stop(), members))
    assert codes == [0] * len(members), [member.death() for member in members]
    m.watcher.stop()

    records = load_many(m.logs)
    ownership = m.watcher.intervals()
    verdict = judge(produced, records, ownership, allow_duplicate=pykafka_first(m.group))
    in_hand = the_record_in_hand(m.group, records, ownership)
    kept = [v for v in verdict.owner_violations if not in_hand(v)]
    excused = len(verdict.owner_violations) - len(kept)
    verdict = dataclasses.replace(verdict, owner_violations=kept)
    repeats = [d for d in verdict.duplicates if d not in verdict.unexpected_duplicates]
    print(f"\n{m.group}: {verdict.summary()}; group formed in {joined_s:.1f}s; bridges renamed {followed_away_s:.1f}s "
          f"after the leaders moved away and {followed_back_s:.1f}s after broker {down} restarted; converged on the "
          f"new names {converged_s:.1f}s after the restart; restart retries {failures}; pykafka's records in hand "
          f"processed after its node went: {excused}")  # fmt: skip
    assert verdict.ok, verdict.summary()
    problems = uncommitted_tail_problems(repeats, records)
    assert not problems, problems


def test_only_the_tail_before_a_hand_over_counts_as_pykafkas_late_commit() -> None:
    def rec(member: str, offset: int, at: int) -> Processed:
        return Processed(member, f"{member}-0", "t", 2, offset, at, at + 1)

    pykafka = [rec("vm:1@7", o, o) for o in range(10)]
    bridge = [rec("g_b0@8", o, 100 + o) for o in range(6, 12)]
    repeats = [Duplicate(("t", 2, o), (pykafka[o], bridge[o - 6])) for o in range(6, 10)]
    assert uncommitted_tail_problems(repeats, [*pykafka, *bridge]) == []
    assert uncommitted_tail_problems(repeats[:2], [*pykafka, *bridge]) != []  # 8 and 9 went on unrepeated


def test_only_the_record_a_rebalance_found_in_hand_is_excused() -> None:
    def rec(member: str, offset: int, at: int) -> Processed:
        return Processed(member, f"{member.split('@')[0]}-0", "t", 2, offset, at, at + 1)

    held = OwnerInterval("t", 2, "vm:1", 0, 100, member_only=True)
    before = [rec("vm:1@7", o, o * 10) for o in range(9)]  # offsets 0..8 while the node was there
    in_hand, next_one, much_later = (
        rec("vm:1@7", 9, 103_000_000),
        rec("vm:1@7", 10, 104_000_000),
        rec("vm:1@7", 9, 3 * 10**9),
    )
    bridge = rec("g_b0@8", 9, 200_000_000)
    excused = the_record_in_hand("g", [*before, in_hand, next_one], [held])
    assert excused(OwnerViolation(in_hand, ()))
    assert not excused(OwnerViolation(next_one, ()))  # a second record after the node went
    assert not the_record_in_hand("g", [*before, much_later], [held])(OwnerViolation(much_later, ()))
    assert not the_record_in_hand("g", [*before, bridge], [held])(OwnerViolation(bridge, ()))
    assert not the_record_in_hand("g", [in_hand], [held])(OwnerViolation(in_hand, ()))  # nothing processed while held
