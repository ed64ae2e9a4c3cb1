"""A pykafka group migrated to Kafka's coordination and rolled back, as a team would, against real pykafka 2.8.0
(each member its own process, tests/helpers/pykafka_peer.py) on one shared cluster.

The walk: pykafka `BalancedConsumer`s; each replaced by a bridge in the pykafka dialect (`zookeeper.layout=pykafka`,
`coordination.migration.enabled=true`); `migrator set-mode kafka`; the bridges replaced by a managed pykafka
consumer and a plain confluent-kafka one; then rollback the same way back to `BalancedConsumer`s. A batch is
produced after every step and processed before the next; the observer judges the whole run: nothing lost,
nothing processed by two members at once, nothing processed twice (every step is a clean one) but what a managed
pykafka consumer's refused commits leave (`first_by_managed_pykafka`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from migrator.assign.pykafka import ASSIGNORS, PykafkaProtocol
from migrator.demo.workload import bridge_props
from migrator.kafka.admin import KafkaAdmin
from migrator.observe import Duplicate, duplicates, load_many, lost, overlaps
from migrator.protocol.pykafka_layout import Spelling
from migrator.zk.brokers import partition_leaders
from tests.helpers import cli
from tests.helpers.bridge import published
from tests.helpers.kafka import make_topic, produce
from tests.helpers.member_proc import MemberProcess
from tests.helpers.peers import PATIENT
from tests.helpers.pykafka_peer import ConfluentMember, PykafkaMember
from tests.helpers.wait import wait_until
from tests.integration.test_pykafka_peers import owners_by_partition

PARTITIONS = 6


class Migration:
    """Members of one group on one topic, of every kind, each logging to its own file; batches and the judge."""

    def __init__(self, cluster: Any, zk: KazooClient, group: str, topic: str, tmp: Path) -> None:
        self.cluster, self.zk, self.group, self.topic, self.tmp = cluster, zk, group, topic, tmp
        self.members: dict[str, MemberProcess] = {}
        self.produced: list[tuple[str, int, int]] = []
        self._next = dict.fromkeys(range(PARTITIONS), 0)

    def log(self, name: str) -> Path:
        return self.tmp / f"{name}.jsonl"

    def pykafka(self, name: str, managed: bool = False) -> PykafkaMember:
        member = PykafkaMember(self.cluster.zookeeper, self.cluster.bootstrap_servers, self.group, self.topic,
                               self.log(name), managed=managed)  # fmt: skip
        self.members[name] = member
        return member

    def bridge(self, name: str) -> MemberProcess:
        props = {"zookeeper.layout": "pykafka", **bridge_props(self.cluster.bootstrap_servers), **PATIENT}
        member = MemberProcess(self.cluster.zookeeper, self.group, self.topic, name, self.log(name), props=props)
        self.members[name] = member
        return member

    def confluent(self, name: str) -> ConfluentMember:
        member = ConfluentMember(self.cluster.bootstrap_servers, self.group, self.topic, name, self.log(name))
        self.members[name] = member
        return member

    def stop(self, name: str) -> None:
        member = self.members[name]
        assert member.stop() == 0, member.death()

    def cid(self, name: str) -> str:
        member = self.members[name]
        return member.consumer_id if isinstance(member, PykafkaMember) else f"{self.group}_{name}"

    def batch(self, step: str, timeout: float = 90) -> None:
        """Produce 3 records per partition and wait until the group has processed every record so far."""
        for p in range(PARTITIONS):
            produce(self.cluster, self.topic, [f"{step}-{p}-{i}".encode() for i in range(3)], partition=p)
            self.produced.extend((self.topic, p, self._next[p] + i) for i in range(3))
            self._next[p] += 3
        wait_until(lambda: not lost(self.produced, self.records()), timeout, what=f"{step}: every record processed")

    def records(self) -> list:
        return load_many([self.log(n) for n in self.members if self.log(n).exists()])

    def set_mode(self, mode: str) -> cli.CliRun:
        return cli.run("set-mode", mode, "-g", self.group, "-z", self.cluster.zookeeper,
                       "-b", self.cluster.bootstrap_servers, "--wait", "--timeout", "60")  # fmt: skip

    def close(self) -> None:
        for member in self.members.values():
            with contextlib.suppress(Exception):
                member.kill() if member.alive() else None


@pytest.fixture
def migration(cluster: Any, zk_client: KazooClient, unique_group: str, unique_topic: str,
              tmp_path: Path) -> Iterator[Migration]:  # fmt: skip
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    walk = Migration(cluster, zk_client, unique_group, unique_topic, tmp_path)
    yield walk
    walk.close()


def zookeeper_owners_follow_pykafka(m: Migration, names: list[str]) -> None:
    """The owner nodes are pykafka's range assignment over the members' ids, whoever the members are."""
    leaders = partition_leaders(m.zk, m.topic)
    expected = ASSIGNORS[PykafkaProtocol.RANGE](m.topic, Spelling.PYTHON3, [m.cid(n) for n in names], leaders)
    wait_until(lambda: owners_by_partition(m.zk, m.group, m.topic) == expected, 60, what=f"owners {expected}")


def bridges_obey(m: Migration, names: list[str], authority: str) -> None:
    cids = {m.cid(n) for n in names}

    def obeyed() -> bool:
        pub = published(m.zk, m.group)
        return cids <= set(pub) and all(pub[c].authority.value == authority for c in cids)

    wait_until(obeyed, 60, what=f"{names} obey {authority}")


def bridges_in_kafka(m: Migration, names: list[str], joined: bool) -> None:
    """Whether the bridges' embedded members are in the Kafka group: a bridge in the pykafka dialect stays out of
    it while a pykafka member is registered (the broker takes their commits only from a group without members)."""
    cids = {m.cid(n) for n in names}
    admin = KafkaAdmin(m.cluster.bootstrap_servers, {}, timeout_s=10)
    try:

        def as_expected() -> bool:
            in_group = admin.describe_group(m.group).client_ids
            return cids <= in_group if joined else not cids & in_group

        wait_until(as_expected, 60, what=f"{names} {'in' if joined else 'out of'} the Kafka group")
    finally:
        admin.close()


def first_by_managed_pykafka(duplicate: Duplicate) -> bool:
    """pykafka 2.8.0's `ManagedBalancedConsumer` commits with its old generation after a Kafka rebalance (the
    broker answers ILLEGAL_GENERATION), so what it processed since its last commit is processed again by the
    partition's next owner: pykafka's own loss of commits, whoever shares its group (docs/pykafka.md)."""
    first = min(duplicate.by, key=lambda r: r.start_ns)
    return first.member.startswith("pykafka-managed-")


def test_a_pykafka_group_migrates_to_kafka_and_back_without_loss_or_dual_processing(migration: Migration) -> None:
    m = migration
    m.pykafka("p0")
    m.pykafka("p1")
    m.batch("pykafka only")
    # each pykafka member replaced by a bridge; while one is registered, the bridges obey ZooKeeper
    m.bridge("b0")
    zookeeper_owners_follow_pykafka(m, ["p0", "p1", "b0"])
    bridges_obey(m, ["b0"], "zookeeper")
    bridges_in_kafka(m, ["b0"], joined=False)
    m.batch("pykafka members and a bridge")
    m.stop("p0")
    m.bridge("b1")
    zookeeper_owners_follow_pykafka(m, ["p1", "b0", "b1"])
    refused = m.set_mode("kafka")
    assert refused.code == 2 and m.cid("p1") in refused.single_error(2), refused
    m.batch("a pykafka member and bridges")
    m.stop("p1")
    zookeeper_owners_follow_pykafka(m, ["b0", "b1"])
    bridges_in_kafka(m, ["b0", "b1"], joined=True)
    m.batch("bridges only")
    # the switch
    switched = m.set_mode("kafka")
    assert switched.code == 0, switched
    bridges_obey(m, ["b0", "b1"], "kafka")
    m.batch("bridges under Kafka")
    # the Kafka side: managed pykafka and confluent-kafka consumers share the group with the embedded members;
    # a managed pykafka consumer leaves before any bridge does, so it never becomes the group's leader (docs/pykafka.md)
    m.pykafka("managed", managed=True)
    m.batch("bridges and managed pykafka")
    m.confluent("c0")
    m.batch("bridges, managed pykafka, confluent")
    m.stop("managed")
    m.batch("bridges and confluent")
    m.stop("b1")
    m.confluent("c1")
    m.batch("a bridge and confluent")
    m.stop("b0")
    m.batch("confluent only")
    # rollback: bridges replace the Kafka consumers, back to ZooKeeper, pykafka members replace the bridges
    m.bridge("b2")
    m.batch("rollback: a bridge beside confluent consumers")
    m.stop("c0")
    m.bridge("b3")
    m.pykafka("managed2", managed=True)
    m.batch("rollback: bridges, managed pykafka, confluent")
    m.stop("managed2")
    m.stop("c1")
    bridges_obey(m, ["b2", "b3"], "kafka")
    m.batch("rollback: bridges under Kafka")
    rolled = m.set_mode("zookeeper")
    assert rolled.code == 0, rolled
    bridges_obey(m, ["b2", "b3"], "zookeeper")
    zookeeper_owners_follow_pykafka(m, ["b2", "b3"])
    m.batch("rollback: bridges under ZooKeeper")
    m.pykafka("p2")
    bridges_in_kafka(m, ["b2", "b3"], joined=False)
    m.stop("b2")
    m.pykafka("p3")
    m.stop("b3")
    zookeeper_owners_follow_pykafka(m, ["p2", "p3"])
    m.batch("rollback: pykafka only")
    for name in ("p2", "p3"):
        m.stop(name)
    records = m.records()
    assert not lost(m.produced, records)
    assert not overlaps(records), overlaps(records)[:3]
    assert not [d for d in duplicates(records) if not first_by_managed_pykafka(d)], duplicates(records)[:3]
