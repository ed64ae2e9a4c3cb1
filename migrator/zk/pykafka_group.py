"""A member in the pykafka dialect (`migrator.protocol.pykafka_layout`): the leaders and owner node names of its
topic, taken from each snapshot's read of the group, and the renaming of its own owner nodes when leaders move
(the one write of this module, done by the rebalance, never by a read)."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from migrator.assign.legacy import AssignmentContext
from migrator.assign.model import ThreadId, consumer_of_thread
from migrator.assign.pykafka import PykafkaProtocol, assign_threads
from migrator.errors import ConfigError
from migrator.protocol.codecs import Registration
from migrator.protocol.dialect import Dialect, OwnerRead, PykafkaNaming
from migrator.protocol.layout_dialect import GroupLayout
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import (
    OwnerNode,
    PartitionNode,
    Spelling,
    claimed_first,
    decode_owner,
    encode_owner,
    rename_waits,
)
from migrator.zk import owners
from migrator.zk.group_reader import read_group_with_layout
from migrator.zk.owners import ClaimResult
from migrator.zk.paths import GroupPaths
from migrator.zk.snapshot import Snapshot, SnapshotReader, snapshot_of

__all__ = [
    "OwnerClaim",
    "PykafkaNaming",
    "PykafkaSnapshotReader",
    "PykafkaView",
    "claim_or_give_way",
    "open_pykafka_group",
    "partition_nodes",
    "rename_own_nodes",
]

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class OwnerClaim:
    """One owner node of a pykafka group: where it is, and whose it is."""

    spelling: Spelling
    node: OwnerNode
    owner: str

    @classmethod
    def of(cls, read: OwnerRead) -> OwnerClaim | None:
        """The claim a pykafka owner node read stands for; None for another dialect's node."""
        name = read.name
        if read.dialect is not Dialect.PYKAFKA or name.spelling is None or name.leader is None:
            return None
        return cls(name.spelling, OwnerNode(name.leader, name.partition.partition), consumer_of_thread(read.thread))


class PykafkaView:
    """The leaders and existing owner node names of one pykafka group's topic, as the latest snapshot read them.

    pykafka's order of partitions and its owner node names depend on the leaders, which the legacy snapshot
    does not carry; the dialect's assignor and owner naming read them here. Both run on the rebalance
    worker's thread, right after the snapshot reader refreshed this view, so they see one moment."""

    def __init__(self, topic: str, spelling: Spelling, protocol: PykafkaProtocol, consumer_id: str = "") -> None:
        self.topic = topic
        self.spelling = spelling
        self.protocol = protocol
        self.consumer_id = consumer_id
        self.leaders: dict[int, int] = {}
        self.nodes: dict[int, str] = {}
        """partition -> the name of an owner node that exists for it: this member's own if it holds one, else
        another member's (the one a claim waits for)."""

    def update(self, layout: GroupLayout) -> None:
        """Take the leaders and owner nodes of this view's topic from a read of the group."""
        self.leaders = dict(layout.leaders.get(self.topic, {}))
        claims = [c for r in layout.owner_nodes if r.name.partition.topic == self.topic and (c := OwnerClaim.of(r))]
        self.nodes = names_by_partition([c for c in claims if c.spelling is self.spelling], self.consumer_id)

    def leader_name(self, partition: int) -> str:
        """The name pykafka gives a new owner node of `partition`: after its current leader."""
        return PykafkaNaming(self).leader_name(partition)

    def assign(self, ctx: AssignmentContext) -> dict[TopicPartition, ThreadId]:
        """The dialect's assignor (`WorkerSettings.strategy`)."""
        threads = {t: ths for t, ths in ctx.thread_ids_per_topic.items() if t == self.topic}
        return assign_threads(self.protocol, self.spelling, threads, {self.topic: self.leaders})


def names_by_partition(claims: Iterable[OwnerClaim], consumer_id: str) -> dict[int, str]:
    """partition -> one owner node name: our own node wins over another member's (a pykafka member may leave a
    node named after an old leader beside the current one: see `rename_own_nodes`)."""
    names: dict[int, str] = {}
    for claim in sorted(claims, key=lambda c: (c.node.partition, c.node.leader, c.spelling.value)):
        if claim.owner == consumer_id or claim.node.partition not in names:
            names[claim.node.partition] = claim.node.name
    return names


def rename_own_nodes(zk: KazooClient, paths: GroupPaths, view: PykafkaView) -> None:
    """Give each owner node this member holds the name of its partition's current leader, as pykafka names the
    node it claims: a pykafka member only conflicts on that exact name, so a node of ours named after an
    old leader would not keep it from claiming the partition while we still process it. The new node is
    created before the old one is deleted, so the partition is never without our node. If another member
    already holds the new name, or another member's node of the partition exists beside ours, ours stays as it
    is (that member claimed a partition we hold, and gives way on seeing our older node: `claimed_first`).

    The rebalance calls it right after reading its snapshot (which refreshed `view`), before it assigns."""
    folder = paths.owners_topic(view.topic)
    for partition, name in sorted(view.nodes.items()):
        current = view.leader_name(partition)
        if name == current or view.leaders.get(partition, -1) < 0:
            continue
        if _renamed(zk, folder, view.consumer_id, OwnerNode(view.leaders[partition], partition), name):
            view.nodes[partition] = current
            log.info("owner node of partition %d renamed %s -> %s: its leader moved", partition, name, current)


def _renamed(zk: KazooClient, folder: str, consumer_id: str, new: OwnerNode, old: str) -> bool:
    """Create `new` for our node `old`, then delete `old`; False (and `old` kept) where `old` is not ours, the
    new name is taken, or another member's node of the partition exists (`rename_waits`)."""
    owner = encode_owner(consumer_id)
    try:
        data, _ = zk.get(f"{folder}/{old}")
        if data != owner:
            return False
        zk.create(f"{folder}/{new.name}", owner, ephemeral=True)
    except NoNodeError:
        return False
    except NodeExistsError:
        log.warning("owner node %s/%s exists beside ours (%s): not renamed", folder, new.name, old)
        return False
    nodes = partition_nodes(zk, folder, {new.partition}).get(new.partition, [])
    if rename_waits(consumer_id, nodes):
        with contextlib.suppress(NoNodeError):
            zk.delete(f"{folder}/{new.name}")
        log.info(
            "owner node %s/%s not renamed to %s yet: another member claims its partition too", folder, old, new.name
        )
        return False
    with contextlib.suppress(NoNodeError):
        zk.delete(f"{folder}/{old}")
    return True


def partition_nodes(zk: KazooClient, folder: str, partitions: Iterable[int]) -> dict[int, list[PartitionNode]]:
    """The owner nodes of those of `partitions` that have more than one in `folder` (one listing, then the
    nodes read pipelined); a partition with a single node is left out."""
    wanted = set(partitions)
    names: dict[int, list[str]] = {}
    for name in zk.get_children(folder):
        node = OwnerNode.parse(name)
        if node is not None and node.partition in wanted:
            names.setdefault(node.partition, []).append(name)
    reads = {(p, n): zk.get_async(f"{folder}/{n}") for p, ns in names.items() if len(ns) > 1 for n in ns}
    nodes: dict[int, list[PartitionNode]] = {}
    for (partition, name), result in reads.items():
        try:
            data, stat = result.get()
        except NoNodeError:
            continue
        nodes.setdefault(partition, []).append(PartitionNode(name, decode_owner(data), stat.czxid))
    return nodes


def claim_or_give_way(
    zk: KazooClient, paths: GroupPaths, view: PykafkaView, wanted: Mapping[TopicPartition, ThreadId]
) -> ClaimResult:
    """`owners.claim`, then a look at each claimed partition's nodes: where another member created one before
    ours (its view of the leader gave it another name, so both creates succeeded), ours is deleted and the
    partition is a conflict, to be waited for under that member's node name (`claimed_first`)."""
    result = owners.claim(zk, paths, wanted)
    folder = paths.owners_topic(view.topic)
    nodes = partition_nodes(zk, folder, {tp.partition for tp in result.claimed}) if result.claimed else {}
    first: dict[TopicPartition, PartitionNode] = {}
    for tp in result.claimed:
        ours = [n for n in nodes.get(tp.partition, []) if n.name == paths.naming.node(tp.topic, tp.partition)]
        earlier = claimed_first(ours[0], nodes[tp.partition]) if ours else None
        if earlier is not None:
            first[tp] = earlier
    if not first:
        return result
    owners.release(zk, paths, {tp: result.claimed[tp] for tp in first})
    for tp, node in first.items():
        view.nodes[tp.partition] = node.name
    log.info("%d partitions claimed by another member first under another leader's name; giving way", len(first))
    claimed = {tp: thread for tp, thread in result.claimed.items() if tp not in first}
    return ClaimResult(claimed, {**result.conflicts, **{tp: node.owner for tp, node in first.items()}})


class PykafkaSnapshotReader(SnapshotReader):
    """Snapshots of a pykafka group, each with the view of its topic refreshed from the same read of the group."""

    def __init__(self, zk: KazooClient, paths: GroupPaths, *, view: PykafkaView, **kwargs: Any) -> None:
        super().__init__(zk, paths, **kwargs)
        self._view = view

    def read(self) -> Snapshot:
        group, layout = read_group_with_layout(self._zk, self._paths.group, leaders=True, offsets=False)
        self._view.update(layout)
        return snapshot_of(self._zk, group, self._exclude_internal, self._kafka_partitions, self._kafka_topics)


def open_pykafka_group(
    zk: KazooClient, group: str, registration: Registration, strategy: str, consumer_id: str = ""
) -> PykafkaView:
    """The view a member in the pykafka dialect works with, after checking it can be one: a pykafka member
    consumes one topic with one stream, and the group must not be written in another layout (a group with no
    owner node yet gets pykafka's Python 3 spelling)."""
    topics = dict(registration.subscription)
    if registration.is_wildcard or len(topics) != 1 or next(iter(topics.values())) != 1:
        raise ConfigError(
            "zookeeper.layout=pykafka: a pykafka member consumes exactly one topic with one stream "
            "(create_message_streams({topic: 1}))"
        )
    found = read_group_with_layout(zk, group)[1].recognition
    if found.refusal is not None:
        raise ConfigError(f"zookeeper.layout=pykafka: group {group}: {found.detail}")
    if found.dialect not in (None, Dialect.PYKAFKA):
        raise ConfigError(f"zookeeper.layout=pykafka: group {group} is written in the {found.dialect.value} layout")
    (topic,) = topics
    return PykafkaView(topic, found.spelling or Spelling.PYTHON3, PykafkaProtocol(strategy), consumer_id)
