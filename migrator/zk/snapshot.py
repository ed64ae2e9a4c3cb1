"""The snapshot a rebalance decides over: who is registered, with what subscription, which of them are
bridges, the mode node, and the partitions of every subscribed topic.

The whole snapshot is read and validated before anything is released (issue: "validate before you
release"). A corrupt `ids` node makes the snapshot unusable; the connector then keeps what it owns and
waits for the next change. A subscribed topic that does not exist (yet) has no partitions, as in Scala: the
topics that exist are assigned, and the topic's watch starts a rebalance when it is created.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.interfaces import IAsyncResult

from migrator.errors import CorruptNodeError
from migrator.protocol.codecs import ModeNode, Registration
from migrator.protocol.dialect import member_dialect
from migrator.protocol.filters import filter_from_registration
from migrator.protocol.group_view import GroupView, bridge_ids
from migrator.protocol.membership_delta import Listing, merged, to_read
from migrator.zk.brokers import topics_partitions
from migrator.zk.group_reader import read_membership
from migrator.zk.paths import BROKER_TOPICS, GroupPaths

log = logging.getLogger(__name__)

PartitionLookup = Callable[[str], "tuple[int, ...] | None"]
TopicLister = Callable[[], "list[str]"]


@dataclass(frozen=True, slots=True)
class Snapshot:
    registrations: Mapping[str, Registration]
    migration_ids: frozenset[str]
    mode: ModeNode
    subscriptions: Mapping[str, Mapping[str, int]]  # consumerId -> resolved topic -> streams
    partitions: Mapping[str, tuple[int, ...]]
    problems: tuple[str, ...] = field(default=())
    missing_topics: tuple[str, ...] = field(default=())
    """Subscribed topics that exist neither in ZooKeeper nor on the brokers: nothing of them to assign."""
    watched: bool = True
    """Whether every part was read from ZooKeeper nodes the connector watches: False when a topic list or a
    topic's partitions came from the brokers, or a subscribed topic is missing (it may appear on the
    brokers alone). Only a watched snapshot may be reused for a Kafka rebalance (`refreshable`)."""
    ids: Listing | None = None
    """The `ids` folder as listed for this snapshot (None: its child version was not read), from which a later
    read of changed members starts (`read_members`)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "registrations", MappingProxyType(dict(self.registrations)))
        object.__setattr__(self, "partitions", MappingProxyType(dict(self.partitions)))
        frozen = {k: MappingProxyType(dict(v)) for k, v in self.subscriptions.items()}
        object.__setattr__(self, "subscriptions", MappingProxyType(frozen))

    @property
    def usable(self) -> bool:
        return not self.problems

    @property
    def member_ids(self) -> frozenset[str]:
        return frozenset(self.registrations)

    @property
    def registered_bridges(self) -> frozenset[str]:
        """The registered members that are bridges (`bridge_ids`)."""
        return bridge_ids(self.member_ids, self.migration_ids)


def _all_topics(zk: KazooClient, kafka_topics: TopicLister | None) -> tuple[list[str], bool]:
    """Every topic, and whether the list came from ZooKeeper (watched) rather than the brokers."""
    try:
        topics = zk.get_children(BROKER_TOPICS)
    except NoNodeError:
        topics = []
    if not topics and kafka_topics is not None:
        return sorted(kafka_topics()), False
    return sorted(topics), True


def read_snapshot(
    zk: KazooClient,
    paths: GroupPaths,
    exclude_internal: bool = True,
    kafka_partitions: PartitionLookup | None = None,
    kafka_topics: TopicLister | None = None,
) -> Snapshot:
    """Read everything a rebalance needs, pipelined; problems are collected, never guessed around."""
    # The group reader's pipeline: one round trip for the listings and the mode, one for the members' nodes
    # (a member that left between the two is skipped: its watch fires again); one more for their topics.
    view = read_membership(zk, paths.group)
    return snapshot_of(zk, view, exclude_internal, kafka_partitions, kafka_topics)


def snapshot_of(
    zk: KazooClient,
    view: GroupView,
    exclude_internal: bool = True,
    kafka_partitions: PartitionLookup | None = None,
    kafka_topics: TopicLister | None = None,
) -> Snapshot:
    """The snapshot of a group read as `view`, with the partitions of its members' topics (one more round trip,
    and one for the topic list when a member subscribes by pattern)."""
    problems = [f"malformed ids node {c.consumer_id}: {c.problem}" for c in view.corrupt_members]
    registrations = {m.consumer_id: m.registration for m in view.members}
    migration_ids, mode = view.migration_ids, view.mode

    subscriptions: dict[str, dict[str, int]] = {}
    all_topics: list[str] | None = None
    watched = True
    for cid, reg in registrations.items():
        if reg.is_wildcard:
            if all_topics is None:
                all_topics, watched = _all_topics(zk, kafka_topics)
            ((regex, streams),) = reg.subscription.items()
            topic_filter = filter_from_registration(reg.pattern, regex)
            subscriptions[cid] = {t: streams for t in all_topics if topic_filter.is_allowed(t, exclude_internal)}
        else:
            subscriptions[cid] = dict(reg.subscription)

    partitions: dict[str, tuple[int, ...]] = {}
    missing: list[str] = []
    for topic, ids in topics_partitions(zk, {t for sub in subscriptions.values() for t in sub}).items():
        if isinstance(ids, CorruptNodeError):
            problems.append(f"topic {topic}: {ids}")
            continue
        if ids is not None:
            partitions[topic] = ids
            continue
        found = kafka_partitions(topic) if kafka_partitions is not None else None
        partitions[topic] = found or ()
        watched = False
        if not found:
            missing.append(topic)
    # A member that left between the listing and its read is not in `member_ids`, but the child version counted
    # its delete: the next `read_members` then finds a change it cannot account for, and reads everything.
    listing = None if view.ids_cversion is None else Listing(view.member_ids, view.ids_cversion)
    return Snapshot(
        registrations, migration_ids, mode, subscriptions, partitions, tuple(problems), tuple(missing), watched, listing
    )


def read_members(zk: KazooClient, paths: GroupPaths, last: Snapshot) -> Snapshot | None:
    """`last` with the group's members read again, reading the registrations of only the members that joined
    since (`protocol.membership_delta`): two pipelined listings and one read per new member, where a full
    read takes every member's registration, the mode and the topics again. None where that cannot stand for
    a full read: the listings miss a change, a new registration does not decode (the full read names it),
    a member subscribes by pattern, or to a topic `last` has no partitions of."""
    if last.ids is None or not last.usable:
        return None
    listing_read = zk.get_children_async(paths.ids, include_data=True)
    migration_read = zk.get_children_async(paths.migration_ids)
    try:
        children, stat = listing_read.get()
    except NoNodeError:
        return None
    try:
        migration_ids = frozenset(migration_read.get())
    except NoNodeError:
        migration_ids = frozenset()
    now = Listing(frozenset(children), stat.cversion)
    new = to_read(last.ids, now)
    if new is None:
        return None
    read = _registrations(zk, paths, new)
    if read is None:
        return None
    registrations = merged(last.registrations, now, read)
    if any(r.is_wildcard for r in registrations.values()):
        return None
    subscriptions = {cid: dict(r.subscription) for cid, r in registrations.items()}
    if not {t for sub in subscriptions.values() for t in sub} <= set(last.partitions):
        return None
    listing = Listing(frozenset(registrations), now.cversion)
    return replace(last, registrations=registrations, migration_ids=migration_ids, subscriptions=subscriptions,
                   ids=listing)  # fmt: skip


def _registrations(zk: KazooClient, paths: GroupPaths, ids: frozenset[str]) -> dict[str, Registration] | None:
    """The registrations of `ids`, pipelined; one that left meanwhile is left out; None if one does not decode."""
    reads = {cid: zk.get_async(paths.member(cid)) for cid in sorted(ids)}
    found: dict[str, Registration] = {}
    for cid, result in reads.items():
        try:
            data, _ = result.get()
        except NoNodeError:
            continue
        try:
            found[cid] = member_dialect(data)[0]
        except CorruptNodeError:
            return None
    return found


def refresh_mode(zk: KazooClient, paths: GroupPaths, last: Snapshot) -> Snapshot:
    """`last` with the mode node read again."""
    return replace(last, mode=_mode_of(zk.get_async(paths.mode)))


def _mode_of(read: IAsyncResult) -> ModeNode:
    try:
        return ModeNode.decode(read.get()[0])
    except NoNodeError:
        return ModeNode.absent()


class SnapshotReader:
    """One group's snapshots, as the rebalance worker reads them: the worker's only view of ZooKeeper's group
    state, built by the connector (topics known only to the brokers are looked up with `kafka_partitions`
    and `kafka_topics`, the admin client's)."""

    def __init__(
        self,
        zk: KazooClient,
        paths: GroupPaths,
        *,
        exclude_internal: bool,
        kafka_partitions: PartitionLookup | None = None,
        kafka_topics: TopicLister | None = None,
    ) -> None:
        self._zk = zk
        self._paths = paths
        self._exclude_internal = exclude_internal
        self._kafka_partitions = kafka_partitions
        self._kafka_topics = kafka_topics

    @property
    def mode_path(self) -> str:
        return self._paths.mode

    def read(self) -> Snapshot:
        return read_snapshot(self._zk, self._paths, self._exclude_internal, self._kafka_partitions, self._kafka_topics)

    def refresh_mode(self, last: Snapshot) -> Snapshot:
        return refresh_mode(self._zk, self._paths, last)

    def read_members(self, last: Snapshot) -> Snapshot | None:
        return read_members(self._zk, self._paths, last)
