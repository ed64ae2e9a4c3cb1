"""Reading a pykafka group's nodes (`migrator.protocol.pykafka_layout`) and the partition leaders its owner
node names and assignment order depend on."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError

from migrator.assign.legacy import AssignmentContext
from migrator.assign.model import ThreadId, consumer_of_thread
from migrator.assign.pykafka import PykafkaProtocol, assign_threads
from migrator.errors import ConfigError
from migrator.protocol.codecs import Registration
from migrator.protocol.layout_dialect import Dialect, LayoutEvidence, Recognition, recognise
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import (
    OwnerNode,
    Spelling,
    decode_owner,
    decode_partition_leader,
    encode_owner,
    topic_text,
)
from migrator.zk.paths import GroupPaths, broker_topic_partitions, partition_state
from migrator.zk.snapshot import Snapshot, SnapshotReader, read_snapshot

log = logging.getLogger(__name__)


def partition_leaders(zk: KazooClient, topic: str) -> dict[int, int]:
    """partition -> leader broker id, from the broker's `partitions/<p>/state` nodes ({} for no such topic)."""
    try:
        names = zk.get_children(broker_topic_partitions(topic))
    except NoNodeError:
        return {}
    reads = {int(p): zk.get_async(partition_state(topic, p)) for p in names if p.isdigit()}
    leaders: dict[int, int] = {}
    for partition, result in reads.items():
        with contextlib.suppress(NoNodeError):
            leaders[partition] = decode_partition_leader(result.get()[0])
    return leaders


@dataclass(frozen=True, slots=True)
class OwnerClaim:
    """One owner node of a pykafka group: where it is, and whose it is."""

    spelling: Spelling
    node: OwnerNode
    owner: str


def read_owner_nodes(zk: KazooClient, paths: GroupPaths, topic: str) -> list[OwnerClaim]:
    """Every owner node of `topic` under both folder spellings, sorted (a node gone meanwhile is skipped)."""
    reads = {}
    for spelling in Spelling:
        folder = f"{paths.owners}/{topic_text(topic, spelling)}"
        try:
            names = zk.get_children(folder)
        except NoNodeError:
            continue
        for name in names:
            node = OwnerNode.parse(name)
            if node is not None:
                reads[(spelling, node)] = zk.get_async(f"{folder}/{name}")
    claims = []
    for (spelling, node), result in reads.items():
        with contextlib.suppress(NoNodeError):
            claims.append(OwnerClaim(spelling, node, decode_owner(result.get()[0])))
    return sorted(claims, key=lambda c: (c.node.partition, c.node.leader, c.spelling.value))


def read_layout_evidence(zk: KazooClient, paths: GroupPaths) -> LayoutEvidence:
    """The `ids` data and `owners` child names `recognise` decides over, pipelined (nodes gone meanwhile are
    skipped: they were some member's, and the next read shows the group without them)."""
    try:
        ids = zk.get_children(paths.ids)
    except NoNodeError:
        ids = []
    try:
        folders = zk.get_children(paths.owners)
    except NoNodeError:
        folders = []
    id_reads = {cid: zk.get_async(paths.member(cid)) for cid in ids}
    folder_reads = {folder: zk.get_children_async(f"{paths.owners}/{folder}") for folder in folders}
    registrations: dict[str, bytes] = {}
    for cid, result in id_reads.items():
        with contextlib.suppress(NoNodeError):
            registrations[cid] = result.get()[0] or b""
    owners: dict[str, tuple[str, ...]] = {}
    for folder, children in folder_reads.items():
        with contextlib.suppress(NoNodeError):
            owners[folder] = tuple(sorted(children.get()))
    return LayoutEvidence(registrations, owners)


def recognise_group(zk: KazooClient, paths: GroupPaths) -> Recognition:
    return recognise(read_layout_evidence(zk, paths))


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

    def refresh(self, zk: KazooClient, paths: GroupPaths) -> None:
        self.leaders = partition_leaders(zk, self.topic)
        claims = [c for c in read_owner_nodes(zk, paths, self.topic) if c.spelling is self.spelling]
        self.nodes = names_by_partition(claims, self.consumer_id)

    def leader_name(self, partition: int) -> str:
        """The name pykafka gives a new owner node of `partition`: after its current leader."""
        return OwnerNode(self.leaders.get(partition, -1), partition).name

    def assign(self, ctx: AssignmentContext) -> dict[TopicPartition, ThreadId]:
        """The dialect's assignor (`WorkerSettings.strategy`)."""
        threads = {t: ths for t, ths in ctx.thread_ids_per_topic.items() if t == self.topic}
        return assign_threads(self.protocol, self.spelling, threads, {self.topic: self.leaders})


def names_by_partition(claims: list[OwnerClaim], consumer_id: str) -> dict[int, str]:
    """partition -> one owner node name: our own node wins over another member's (a pykafka member may leave a
    node named after an old leader beside the current one: see `rename_own_nodes`)."""
    names: dict[int, str] = {}
    for claim in claims:
        if claim.owner == consumer_id or claim.node.partition not in names:
            names[claim.node.partition] = claim.node.name
    return names


def rename_own_nodes(zk: KazooClient, paths: GroupPaths, view: PykafkaView) -> None:
    """Give each owner node this member holds the name of its partition's current leader, as pykafka names the
    node it claims: a pykafka member only conflicts on that exact name, so a node of ours named after an
    old leader would not keep it from claiming the partition while we still process it. The new node is
    created before the old one is deleted, so the partition is never without our node. If another member
    already holds the new name, ours stays as it is (that member claimed a partition we hold)."""
    folder = paths.owners_topic(view.topic)
    owner = encode_owner(view.consumer_id)
    for partition, name in sorted(view.nodes.items()):
        current = view.leader_name(partition)
        if name == current or view.leaders.get(partition, -1) < 0:
            continue
        try:
            data, _ = zk.get(f"{folder}/{name}")
            if data != owner:
                continue
            zk.create(f"{folder}/{current}", owner, ephemeral=True)
        except NoNodeError:
            continue
        except NodeExistsError:
            log.warning("owner node %s/%s exists beside ours (%s): not renamed", folder, current, name)
            continue
        with contextlib.suppress(NoNodeError):
            zk.delete(f"{folder}/{name}")
        view.nodes[partition] = current
        log.info("owner node of partition %d renamed %s -> %s: its leader moved", partition, name, current)


class PykafkaNaming:
    """`OwnerNaming` of the pykafka dialect: `owners/<folder>/<leader>-<partition>` holding the consumer id.

    An owner node that exists keeps its name (we wait on and delete that node: our own, else another
    member's); once the nodes a claim waited for are gone, the new one is named after the partition's
    current leader, as pykafka names it."""

    def __init__(self, view: PykafkaView) -> None:
        self._view = view

    def folder(self, topic: str) -> str:
        return topic_text(topic, self._view.spelling)

    def node(self, topic: str, partition: int) -> str:
        return self._view.nodes.get(partition) or self._view.leader_name(partition)

    def released(self, topic: str, partitions: Iterable[int]) -> None:
        if topic != self._view.topic:
            return
        for partition in partitions:
            if self._view.nodes.get(partition) not in (None, self._view.leader_name(partition)):
                self._view.nodes.pop(partition)

    def encode(self, thread: str) -> bytes:
        return encode_owner(consumer_of_thread(thread))

    def decode(self, data: bytes) -> str:
        return f"{decode_owner(data)}-0"


class PykafkaSnapshotReader(SnapshotReader):
    """Snapshots of a pykafka group (members decode through `protocol.dialect.CODECS`), the view refreshed first."""

    def __init__(self, zk: KazooClient, paths: GroupPaths, *, view: PykafkaView, **kwargs: Any) -> None:
        super().__init__(zk, paths, **kwargs)
        self._view = view

    def read(self) -> Snapshot:
        self._view.refresh(self._zk, self._paths)
        rename_own_nodes(self._zk, self._paths, self._view)
        return read_snapshot(self._zk, self._paths, self._exclude_internal, self._kafka_partitions, self._kafka_topics)


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
    found = recognise_group(zk, GroupPaths(group))
    if found.refusal is not None:
        raise ConfigError(f"zookeeper.layout=pykafka: group {group}: {found.detail}")
    if found.dialect is Dialect.SCALA:
        raise ConfigError(f"zookeeper.layout=pykafka: group {group} is written in the Scala layout")
    (topic,) = topics
    return PykafkaView(topic, found.spelling or Spelling.PYTHON3, PykafkaProtocol(strategy), consumer_id)
