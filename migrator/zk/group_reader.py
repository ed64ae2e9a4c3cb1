"""Reading `/consumers/<group>` into a `GroupView` and its `GroupLayout`, pipelined: the only reader of a group.

The fleet scan reads thousands of groups, so one round trip per znode would take minutes. Every read of
one tree level (for all groups at once) is issued before any result is awaited (`migrator.zk.pipeline`):
a group costs three round trips in total, whatever its size and its dialect, and many groups share them.
The dialect is recognised from the nodes read (`migrator.protocol.layout_dialect`) and the owner nodes are
decoded by the dialect that wrote them (`migrator.protocol.dialect`), in the same pass; so are the partition
leaders a pykafka group's assignment depends on (`leaders`).

Members come and go while we read: a node listed by `get_children` and gone by the time of `get` is
skipped (that member left). A node that does not decode is kept as a `CorruptMember` so that decisions
can say why they refuse instead of silently ignoring a member.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kazoo.client import KazooClient

from migrator.errors import CorruptNodeError
from migrator.protocol.codecs import ModeNode, PublishedAuthority, decode_offset
from migrator.protocol.dialect import Dialect, OwnerNodeName, OwnerRead, member_dialect, owner_node_dialect
from migrator.protocol.group_view import CorruptMember, Fence, GroupView, Member, bridge_ids
from migrator.protocol.layout_dialect import GroupLayout, LayoutEvidence, Recognition, recognise
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import spelling_of_folder
from migrator.zk.brokers import TopicPartitions, queue_partition_leaders, queue_topic_partitions
from migrator.zk.fence import members_can_create
from migrator.zk.paths import GroupPaths
from migrator.zk.pipeline import (
    DEFAULT_RESULT_TIMEOUT_S,
    MISSING,
    AclReadPipeline,
    KazooPipeline,
    ReadPipeline,
    VersionedListingPipeline,
    pipeline_of,
)

__all__ = [
    "MISSING",
    "ReadPipeline",
    "pipeline_of",
    "read_group",
    "read_groups",
    "read_groups_with_layout",
    "read_many_with_layout",
]

log = logging.getLogger(__name__)

BATCH_GROUPS = 500
"""Groups read per pipeline: bounds the requests in flight (and memory) during a fleet scan."""

_NONE = MISSING


@dataclass
class _Partial:
    """What has been read of one group so far (mutable while reading, frozen into a GroupView at the end)."""

    group: str
    paths: GroupPaths
    exists: bool = True
    ids: list[str] = field(default_factory=list)
    ids_cversion: int | None = None
    migration_ids: frozenset[str] = frozenset()
    mode: ModeNode = field(default_factory=ModeNode.absent)
    mode_mtime_ms: int | None = None
    mode_version: int | None = None
    fence: Fence | None = None
    authority_ids: list[str] = field(default_factory=list)
    owner_topics: list[str] = field(default_factory=list)
    offset_topics: list[str] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)
    corrupt: list[CorruptMember] = field(default_factory=list)
    authorities: dict[str, PublishedAuthority] = field(default_factory=dict)
    authority_mzxids: dict[str, int] = field(default_factory=dict)
    owner_partitions: dict[str, list[str]] = field(default_factory=dict)
    offset_partitions: dict[str, list[str]] = field(default_factory=dict)
    owner_reads: list[OwnerRead] = field(default_factory=list)
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    id_data: dict[str, bytes] = field(default_factory=dict)
    topic_partitions: dict[str, TopicPartitions] = field(default_factory=dict)
    leaders: dict[str, dict[int, int]] = field(default_factory=dict)
    recognised: Recognition | None = None

    def recognition(self) -> Recognition:
        """The group's dialect, decided once over the `ids` data and `owners` children (all read by the second
        level: ask no earlier)."""
        if self.recognised is None:
            owners = {t: tuple(sorted(c)) for t, c in self.owner_partitions.items()}
            self.recognised = recognise(LayoutEvidence(dict(self.id_data), owners))
        return self.recognised

    def owners(self, recognition: Recognition) -> dict[TopicPartition, str]:
        """The owner thread of each partition, from the nodes of the recognised dialect (and spelling); of a
        group in no dialect yet, or refused, the Scala nodes. Of two nodes of one partition (a pykafka node
        named after an old leader beside the current one) the later name wins."""
        dialect = recognition.dialect or Dialect.SCALA
        kept = [r for r in self.owner_reads if r.dialect is dialect]
        if recognition.spelling is not None:
            kept = [r for r in kept if r.name.spelling is recognition.spelling]
        kept.sort(key=lambda r: (r.name.partition, r.name.leader or 0))
        return {r.name.partition: r.thread for r in kept}

    def read(self) -> tuple[GroupView, GroupLayout]:
        recognition = self.recognition()
        view = GroupView(
            group=self.group,
            members=tuple(sorted(self.members, key=lambda m: m.consumer_id)),
            corrupt_members=tuple(sorted(self.corrupt, key=lambda c: c.consumer_id)),
            migration_ids=self.migration_ids,
            mode=self.mode,
            mode_mtime_ms=self.mode_mtime_ms,
            mode_version=self.mode_version,
            authorities=self.authorities,
            authority_mzxids=self.authority_mzxids,
            owners=self.owners(recognition),
            offsets=self.offsets,
            exists=self.exists,
            fence=self.fence,
            ids_cversion=self.ids_cversion,
        )
        leaders = {t: dict(ls) for t, ls in self.leaders.items()}
        nodes = sorted(self.owner_reads, key=lambda r: (r.name.partition, r.name.leader or 0, str(r.name.spelling)))
        return view, GroupLayout(recognition, leaders, tuple(nodes))


class Published(NamedTuple):
    """A bridge's `migration/authority/<consumerId>` node: what it holds, and the mzxid of its last write
    (ZooKeeper's own order of writes, which `set-mode --wait` compares with the mode write's)."""

    node: PublishedAuthority
    mzxid: int


def _published(group: str, cid: str, result: Any) -> Published | None:
    """One bridge's published authority from a `get` result; None when it has not published (or stopped) or
    the node does not decode (logged: a reader must go on with the others)."""
    if result is _NONE:
        return None
    data, stat = result
    try:
        return Published(PublishedAuthority.decode(data), stat.mzxid)
    except CorruptNodeError as exc:
        log.warning("group %s: ignoring authority node of %s: %s", group, cid, exc)
        return None


def published_bootstrap(zk: KazooClient, group: str | GroupView) -> str:
    """The Kafka cluster the group's bridges published (first by consumer id), "" when none did; of a group
    already read, from its view."""
    view = group if isinstance(group, GroupView) else read_group(zk, group)
    return next((node.bootstrap for _, node in sorted(view.authorities.items()) if node.bootstrap), "")


def _level1(pipe: ReadPipeline, g: _Partial, full: bool, fence: bool = False) -> None:
    """Children lists and the mode node (`full`: also the published authorities, owners and offsets; `fence`:
    the ACL of `ids`)."""
    p = g.paths

    def on_root(stat: Any) -> None:
        g.exists = stat is not None and stat is not _NONE

    def on_ids(children: Any) -> None:
        g.ids = [] if children is _NONE else sorted(children)

    def on_versioned_ids(result: Any) -> None:
        on_ids(_NONE if result is _NONE else result[0])
        g.ids_cversion = None if result is _NONE else result[1].cversion

    def on_migration_ids(children: Any) -> None:
        g.migration_ids = frozenset() if children is _NONE else frozenset(children)

    def on_mode(result: Any) -> None:
        if result is _NONE:
            return
        data, stat = result
        g.mode = ModeNode.decode(data)
        g.mode_mtime_ms = stat.mtime
        g.mode_version = stat.version

    def on_authority(children: Any) -> None:
        g.authority_ids = [] if children is _NONE else sorted(children)

    def on_owner_topics(children: Any) -> None:
        g.owner_topics = [] if children is _NONE else sorted(children)

    def on_offset_topics(children: Any) -> None:
        g.offset_topics = [] if children is _NONE else sorted(children)

    pipe.exists(p.root, on_root)
    if isinstance(pipe, VersionedListingPipeline):
        pipe.children_with_stat(p.ids, on_versioned_ids)
    else:
        pipe.children(p.ids, on_ids)
    pipe.children(p.migration_ids, on_migration_ids)
    pipe.get(p.mode, on_mode)
    if fence:
        _queue_fence(pipe, g)
    if not full:
        return
    pipe.children(p.authority, on_authority)
    pipe.children(p.owners, on_owner_topics)
    pipe.children(p.offsets, on_offset_topics)


def _queue_fence(pipe: ReadPipeline, g: _Partial) -> None:
    """The `ids` folder's ACL, as the cutover fence reads it (`migrator.zk.fence.members_can_create`)."""
    if not isinstance(pipe, AclReadPipeline):
        raise TypeError(f"{type(pipe).__name__} reads no ACLs: the fence needs a kazoo client")

    def on_acls(result: Any) -> None:
        exists = result is not _NONE
        g.fence = Fence(exists, not exists or members_can_create(list(result[0])))

    pipe.acls(g.paths.ids, on_acls)


def _level2_members(pipe: ReadPipeline, g: _Partial) -> None:
    """Member registrations (with ctime, in the dialect each is written in) and published authorities."""
    p = g.paths
    for cid in g.ids:

        def on_member(result: Any, cid: str = cid) -> None:
            if result is _NONE:
                return  # the member left between get_children and get
            data, stat = result
            g.id_data[cid] = data or b""
            try:
                registration, dialect = member_dialect(data)
            except CorruptNodeError as exc:
                g.corrupt.append(CorruptMember(cid, str(exc)))
                return
            is_bridge = cid in bridge_ids({cid}, g.migration_ids)
            g.members.append(Member(cid, registration, stat.ctime, is_bridge, dialect))

        pipe.get(p.member(cid), on_member)

    for cid in g.authority_ids:

        def on_authority(result: Any, cid: str = cid) -> None:
            if (published := _published(g.group, cid, result)) is not None:
                g.authorities[cid] = published.node
                g.authority_mzxids[cid] = published.mzxid

        pipe.get(p.published_authority(cid), on_authority)


def _level2_listings(pipe: ReadPipeline, g: _Partial, leaders: bool) -> None:
    """Children of every owners and offsets folder; with `leaders`, the partitions of each owners folder's topic
    (whose leaders the next level reads if the folder turns out to be pykafka's)."""
    p = g.paths
    for folder in g.owner_topics:

        def on_owner_parts(children: Any, folder: str = folder) -> None:
            g.owner_partitions[folder] = [] if children is _NONE else list(children)

        pipe.children(f"{p.owners}/{folder}", on_owner_parts)
        named = spelling_of_folder(folder)
        if leaders and named is not None:
            _queue_partitions(pipe, g, named[0])

    for topic in g.offset_topics:

        def on_offset_parts(children: Any, topic: str = topic) -> None:
            g.offset_partitions[topic] = [] if children is _NONE else list(children)

        pipe.children(p.offsets_topic(topic), on_offset_parts)


def _queue_partitions(pipe: ReadPipeline, g: _Partial, topic: str) -> None:
    if topic not in g.topic_partitions:
        g.topic_partitions[topic] = None
        queue_topic_partitions(pipe, topic, lambda ids: g.topic_partitions.__setitem__(topic, ids))


def _owner_setter(g: _Partial, dialect: Dialect, name: OwnerNodeName) -> Callable[[Any], None]:
    def on_owner(result: Any) -> None:
        if result is not _NONE:
            g.owner_reads.append(OwnerRead(dialect, name, dialect.codec.owner_thread(result[0])))

    return on_owner


def _offset_setter(g: _Partial, tp: TopicPartition) -> Callable[[Any], None]:
    def on_offset(result: Any) -> None:
        if result is _NONE:
            return
        try:
            g.offsets[tp] = decode_offset(result[0])
        except CorruptNodeError as exc:
            log.warning("group %s: ignoring offset of %s: %s", g.group, tp, exc)

    return on_offset


def _level3(pipe: ReadPipeline, g: _Partial, offsets: bool = True) -> None:
    """Owner data per node (of whichever dialect wrote it) and (`offsets`) offset data per partition."""
    p = g.paths
    for folder, names in g.owner_partitions.items():
        for name in names:
            found = owner_node_dialect(folder, name)
            if found is None:
                log.warning("group %s: ignoring owners/%s/%s (no dialect's owner node)", g.group, folder, name)
                continue
            pipe.get(f"{p.owners}/{folder}/{name}", _owner_setter(g, *found))
    if not offsets:
        return
    for topic, names in g.offset_partitions.items():
        for name in names:
            if not name.isdigit():
                log.warning("group %s: ignoring offsets/%s/%s (not a partition id)", g.group, topic, name)
                continue
            pipe.get(p.offset(topic, int(name)), _offset_setter(g, TopicPartition(topic, int(name))))


def _leader_topics(g: _Partial) -> set[str]:
    """The topics whose leaders the group's assignment needs: its members', in a dialect where leaders matter."""
    dialect = g.recognition().dialect
    if dialect is None or not dialect.codec.leaders_matter:
        return set()
    return {t for m in g.members if m.dialect is dialect for t in m.registration.subscription}


def _leaders_level(pipe: ReadPipeline, partials: Sequence[_Partial]) -> bool:
    """Queue the leader reads of every `_leader_topics` topic whose partitions are known, and the partition reads
    of those whose are not yet (a topic no owner folder names); whether anything was queued."""
    queued = False
    for g in partials:
        for topic in sorted(_leader_topics(g)):
            ids = g.topic_partitions.get(topic)
            if topic not in g.topic_partitions:
                _queue_partitions(pipe, g, topic)
            elif isinstance(ids, tuple) and topic not in g.leaders:
                queue_partition_leaders(pipe, topic, ids, g.leaders.setdefault(topic, {}))
            else:
                continue
            queued = True
    return queued


def _read_partials(
    pipe: ReadPipeline,
    groups: Sequence[str],
    full: bool = True,
    offsets: bool = True,
    leaders: bool = False,
    fence: bool = False,
) -> list[_Partial]:
    """Three pipelined round trips for every group; with `leaders`, the leader reads ride on the third (a
    pykafka topic no owner folder names yet costs up to two more); with `fence`, the ACL read rides on the
    first."""
    partials = [_Partial(group, GroupPaths(group)) for group in groups]
    for g in partials:
        _level1(pipe, g, full, fence)
    pipe.drain()
    for g in partials:
        _level2_members(pipe, g)
        _level2_listings(pipe, g, leaders)
    pipe.drain()
    for g in partials:
        _level3(pipe, g, offsets)
    more = leaders and _leaders_level(pipe, partials)
    pipe.drain()
    while more and _leaders_level(pipe, partials):
        pipe.drain()
    return partials


def read_groups_with_layout(
    source: KazooClient | ReadPipeline,
    groups: Sequence[str],
    *,
    offsets: bool = True,
    leaders: bool = False,
    fence: bool = False,
    timeout_s: float = DEFAULT_RESULT_TIMEOUT_S,
) -> list[tuple[GroupView, GroupLayout]]:
    """Each group's `GroupView` with its recognised layout, in one pipelined batch (the caller bounds `groups`).

    Without `offsets` the offset nodes' data is not read (the view's `offsets` is empty): a reader that
    consults no Kafka log end needs only their existence, which it does not use either. With `leaders` the
    layout of a pykafka group carries its topics' partition leaders; with `fence` the view carries the cutover
    fence (`source` must read ACLs: a kazoo client)."""
    pipe = pipeline_of(source, timeout_s)
    partials = _read_partials(pipe, list(dict.fromkeys(groups)), offsets=offsets, leaders=leaders, fence=fence)
    return [g.read() for g in partials]


def read_group_with_layout(
    zk: KazooClient,
    group: str,
    *,
    offsets: bool = True,
    leaders: bool = False,
    fence: bool = False,
    timeout_s: float = DEFAULT_RESULT_TIMEOUT_S,
) -> tuple[GroupView, GroupLayout]:
    """One group's `GroupView` and layout (`read_groups_with_layout`)."""
    return read_groups_with_layout(zk, [group], offsets=offsets, leaders=leaders, fence=fence, timeout_s=timeout_s)[0]


def read_many_with_layout(
    zk: KazooClient, groups: Iterable[str], *, fence: bool = False, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S
) -> dict[str, tuple[GroupView, GroupLayout]]:
    """Each group's `GroupView` and layout (a group without `/consumers/<group>` gets `exists=False`).

    Reads are pipelined per tree level across up to `BATCH_GROUPS` groups. Raises kazoo's errors on
    connection loss or a missing permission (NoNode is tolerated everywhere).
    """
    unique = list(dict.fromkeys(groups))
    read: dict[str, tuple[GroupView, GroupLayout]] = {}
    for start in range(0, len(unique), BATCH_GROUPS):
        batch = unique[start : start + BATCH_GROUPS]
        for view, layout in read_groups_with_layout(zk, batch, fence=fence, timeout_s=timeout_s):
            read[view.group] = (view, layout)
    return read


def read_groups(
    zk: KazooClient, groups: Iterable[str], *, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S
) -> dict[str, GroupView]:
    """A `GroupView` for each group (`read_many_with_layout`)."""
    return {group: view for group, (view, _) in read_many_with_layout(zk, groups, timeout_s=timeout_s).items()}


def read_group(zk: KazooClient, group: str, *, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S) -> GroupView:
    """The `GroupView` of one group, read in three pipelined round trips."""
    return read_group_with_layout(zk, group, timeout_s=timeout_s)[0]


def read_membership(zk: KazooClient, group: str, *, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S) -> GroupView:
    """The members and the mode of one group, in two pipelined round trips: a `GroupView` without published
    authorities, owners and offsets (what a rebalance decides over reads no more)."""
    (partial,) = _read_partials(KazooPipeline(zk, timeout_s), [group], full=False)
    return partial.read()[0]
