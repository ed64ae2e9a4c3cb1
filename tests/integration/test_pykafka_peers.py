"""Real pykafka 2.8.0 `BalancedConsumer`s (each its own process, tests/helpers/pykafka_peer.py) against the
dev cluster: what they leave in ZooKeeper is what `migrator.protocol.pykafka_layout` decodes, and the owners
they converge on are what `migrator.assign.pykafka` computes. The observer judges what they processed.
"""

from __future__ import annotations

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
from migrator.zk.paths import GroupPaths
from migrator.zk.pykafka_group import partition_leaders, recognise_group
from tests.helpers.kafka import make_topic, produce
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
    assert recognise_group(zk_client, GroupPaths(g.group)) == Recognition(Dialect.PYKAFKA, Spelling.PYTHON3)
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
