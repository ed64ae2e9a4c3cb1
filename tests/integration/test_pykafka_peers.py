"""Real pykafka 2.8.0 `BalancedConsumer`s (each its own process, tests/helpers/pykafka_peer.py) against the
dev cluster: what they leave in ZooKeeper is what `migrator.protocol.pykafka_layout` decodes, and the owners
they converge on are what `migrator.assign.pykafka` computes. The observer judges what they processed.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from migrator.assign.pykafka import ASSIGNORS, PykafkaProtocol
from migrator.observe import duplicates, load_many, lost, overlaps
from migrator.protocol.layout_dialect import Dialect, Recognition
from migrator.protocol.pykafka_layout import OwnerNode, Spelling, decode_owner, decode_registration, topic_text
from migrator.zk.brokers import partition_leaders
from migrator.zk.group_reader import read_group_with_layout
from tests.helpers import cli
from tests.helpers.kafka import make_topic, produce
from tests.helpers.member_proc import MemberProcess
from tests.helpers.peers import PATIENT
from tests.helpers.pykafka_peer import PykafkaMember
from tests.helpers.wait import wait_until

PARTITIONS = 12  # two digits: pykafka's textual order puts 10 and 11 before 2


class PykafkaGroup:
    """pykafka members of one group on one topic, each logging to its own JSONL file in `tmp`."""

    def __init__(self, cluster: Any, group: str, topic: str, tmp: Path) -> None:
        self.cluster, self.group, self.topic, self.tmp = cluster, group, topic, tmp
        self.members: list[PykafkaMember] = []

    def start(self, protocol: str = "range") -> PykafkaMember:
        log = self.tmp / f"pykafka-{len(self.members)}.jsonl"
        member = PykafkaMember(self.cluster.zookeeper, self.cluster.bootstrap_servers, self.group, self.topic, log,
                               protocol=protocol)  # fmt: skip
        self.members.append(member)
        return member

    def close(self) -> None:
        for member in self.members:
            member.kill() if member.alive() else None


@pytest.fixture
def pykafka_group(cluster: Any, unique_group: str, unique_topic: str, tmp_path: Path) -> Iterator[PykafkaGroup]:
    make_topic(cluster, unique_topic, partitions=PARTITIONS)
    group = PykafkaGroup(cluster, unique_group, unique_topic, tmp_path)
    yield group
    group.close()


def owner_nodes(zk: KazooClient, group: str, folder: str) -> dict[OwnerNode, str]:
    base = f"/consumers/{group}/owners/{folder}"
    try:
        names = zk.get_children(base)
    except NoNodeError:
        return {}
    nodes: dict[OwnerNode, str] = {}
    for name in names:
        node = OwnerNode.parse(name)
        assert node is not None, f"owner node {name!r} is not <leader>-<partition>"
        with contextlib.suppress(NoNodeError):  # released between the listing and the read
            nodes[node] = decode_owner(zk.get(f"{base}/{name}")[0])
    return nodes


@pytest.mark.parametrize("protocol", list(PykafkaProtocol))
def test_pykafka_members_leave_the_layout_and_assignment_we_compute(
    pykafka_group: PykafkaGroup, zk_client: KazooClient, protocol: PykafkaProtocol
) -> None:
    g = pykafka_group
    members = [g.start(protocol.value) for _ in range(2)]
    cids = sorted(m.consumer_id for m in members)
    for cid in cids:
        assert decode_registration(zk_client.get(f"/consumers/{g.group}/ids/{cid}")[0]) == g.topic
    leaders = partition_leaders(zk_client, g.topic)
    expected = ASSIGNORS[protocol](g.topic, Spelling.PYTHON3, cids, leaders)
    folder = topic_text(g.topic, Spelling.PYTHON3)

    def converged() -> bool:
        nodes = owner_nodes(zk_client, g.group, folder)
        return {n.partition: owner for n, owner in nodes.items()} == expected

    wait_until(converged, 60, what=f"pykafka owners = {expected}")
    assert {n.leader for n in owner_nodes(zk_client, g.group, folder)} <= set(leaders.values())
    assert read_group_with_layout(zk_client, g.group)[1].recognition == Recognition(Dialect.PYKAFKA, Spelling.PYTHON3)
    refused = cli.run("set-mode", "kafka", "-g", g.group, "-z", g.cluster.zookeeper, "-b", g.cluster.bootstrap_servers)
    err = refused.stderr.strip().splitlines()
    assert refused.code == 2 and len(err) == 1 and err[0].startswith("error: "), refused
    assert "legacy connector(s) registered" in err[0] and cids[0] in err[0], err
    produced = [(g.topic, p, o) for p in range(PARTITIONS) for o in range(5)]
    for p in range(PARTITIONS):
        produce(g.cluster, g.topic, [f"{p}-{i}".encode() for i in range(5)], partition=p)

    def processed() -> list:
        return load_many([m.log for m in members if m.log.exists()])

    wait_until(lambda: not lost(produced, processed()), 60, what="every record processed")
    for member in members:
        assert member.stop() == 0
    records = processed()
    assert not duplicates(records) and not overlaps(records)


def owners_by_partition(zk: KazooClient, group: str, topic: str) -> dict[int, str]:
    folder = topic_text(topic, Spelling.PYTHON3)
    return {n.partition: owner for n, owner in owner_nodes(zk, group, folder).items()}


@pytest.mark.parametrize("protocol", list(PykafkaProtocol))
def test_our_connector_in_the_pykafka_dialect_shares_a_group_with_real_balanced_consumers(
    pykafka_group: PykafkaGroup, zk_client: KazooClient, protocol: PykafkaProtocol
) -> None:
    """A pykafka member alone, then our connector joins (`zookeeper.layout=pykafka`), then the pykafka
    member leaves: both compute pykafka's assignment, hand partitions over, and our connector resumes from
    the offsets pykafka committed to Kafka. Nothing is lost, nothing processed twice or by two at once."""
    g = pykafka_group
    pykafka = g.start(protocol.value)
    leaders = partition_leaders(zk_client, g.topic)
    produced: list[tuple[str, int, int]] = []

    def produce_batch(batch: int) -> None:
        for p in range(PARTITIONS):
            produce(g.cluster, g.topic, [f"{batch}-{p}-{i}".encode() for i in range(3)], partition=p)
            produced.extend((g.topic, p, 3 * batch + i) for i in range(3))

    logs = [pykafka.log, g.tmp / "ours.jsonl"]

    def all_processed() -> bool:
        return not lost(produced, load_many(logs))

    produce_batch(0)
    wait_until(all_processed, 60, what="pykafka alone processes the first batch")
    props = {"zookeeper.layout": "pykafka", "partition.assignment.strategy": protocol.value, **PATIENT}
    ours = MemberProcess(g.cluster.zookeeper, g.group, g.topic, "ours", logs[1], props=props)
    try:
        cid = f"{g.group}_ours"
        assert decode_registration(zk_client.get(f"/consumers/{g.group}/ids/{cid}")[0]) == g.topic
        both = ASSIGNORS[protocol](g.topic, Spelling.PYTHON3, [pykafka.consumer_id, cid], leaders)
        assert set(both.values()) == {pykafka.consumer_id, cid}
        wait_until(lambda: owners_by_partition(zk_client, g.group, g.topic) == both, 60, what=f"owners {both}")
        produce_batch(1)
        wait_until(all_processed, 60, what="both process the second batch")
        assert pykafka.stop() == 0
        alone = dict.fromkeys(range(PARTITIONS), cid)
        wait_until(lambda: owners_by_partition(zk_client, g.group, g.topic) == alone, 60, what="ours owns all")
        produce_batch(2)
        wait_until(all_processed, 60, what="ours processes the third batch")
    finally:
        assert ours.stop() == 0, ours.death()
    records = load_many(logs)
    assert not overlaps(records), overlaps(records)[:3]
    assert not duplicates(records), duplicates(records)[:3]
    assert {r.partition for r in records if r.member.startswith(cid)} == set(range(PARTITIONS))
