"""Reading `/consumers/<group>` into a `GroupView`, pipelined.

The fleet scan reads thousands of groups, so one round trip per znode would take minutes. Every read of
one tree level (for all groups at once) is issued with kazoo's `*_async` calls before any result is
awaited: a group costs three round trips in total, whatever its size, and many groups share them.

Members come and go while we read: a node listed by `get_children` and gone by the time of `get` is
skipped (that member left). A node that does not decode is kept as a `CorruptMember` so that decisions
can say why they refuse instead of silently ignoring a member.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, Protocol

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError
from kazoo.interfaces import IAsyncResult

from migrator.errors import CorruptNodeError
from migrator.protocol.codecs import ModeNode, PublishedAuthority, decode_offset, decode_owner
from migrator.protocol.dialect import decode_member
from migrator.protocol.group_view import CorruptMember, GroupView, Member, bridge_ids
from migrator.protocol.layout_dialect import LayoutEvidence
from migrator.protocol.partition import TopicPartition
from migrator.protocol.pykafka_layout import OwnerNode
from migrator.zk.paths import GroupPaths

log = logging.getLogger(__name__)

DEFAULT_RESULT_TIMEOUT_S = 30.0
BATCH_GROUPS = 500
"""Groups read per pipeline: bounds the requests in flight (and memory) during a fleet scan."""

_NONE = object()
MISSING = _NONE
"""What a `ReadPipeline` hands a `children`/`get` callback for a node that does not exist."""


class ReadPipeline(Protocol):
    """Reads queued with their callbacks, sent and answered by `drain` (kazoo's async calls, or another client)."""

    def children(self, path: str, on_result: Callable[[Any], None]) -> None: ...

    def get(self, path: str, on_result: Callable[[Any], None]) -> None: ...

    def exists(self, path: str, on_result: Callable[[Any], None]) -> None: ...

    def drain(self) -> None: ...


def _wait(result: IAsyncResult, timeout_s: float) -> Any:
    """The result, or `_NONE` when the node vanished (a member left between two reads)."""
    try:
        return result.get(timeout=timeout_s)
    except NoNodeError:
        return _NONE


@dataclass
class _Partial:
    """What has been read of one group so far (mutable while reading, frozen into a GroupView at the end)."""

    group: str
    paths: GroupPaths
    exists: bool = True
    ids: list[str] = field(default_factory=list)
    migration_ids: frozenset[str] = frozenset()
    mode: ModeNode = field(default_factory=ModeNode.absent)
    mode_mtime_ms: int | None = None
    authority_ids: list[str] = field(default_factory=list)
    owner_topics: list[str] = field(default_factory=list)
    offset_topics: list[str] = field(default_factory=list)
    members: list[Member] = field(default_factory=list)
    corrupt: list[CorruptMember] = field(default_factory=list)
    authorities: dict[str, PublishedAuthority] = field(default_factory=dict)
    owner_partitions: dict[str, list[str]] = field(default_factory=dict)
    offset_partitions: dict[str, list[str]] = field(default_factory=dict)
    owners: dict[TopicPartition, str] = field(default_factory=dict)
    offsets: dict[TopicPartition, int] = field(default_factory=dict)
    id_data: dict[str, bytes] = field(default_factory=dict)

    def evidence(self) -> LayoutEvidence:
        """What `layout_dialect.recognise` decides the group's dialect over, from the nodes already read."""
        return LayoutEvidence(dict(self.id_data), {t: tuple(sorted(c)) for t, c in self.owner_partitions.items()})

    def view(self) -> GroupView:
        return GroupView(
            group=self.group,
            members=tuple(sorted(self.members, key=lambda m: m.consumer_id)),
            corrupt_members=tuple(sorted(self.corrupt, key=lambda c: c.consumer_id)),
            migration_ids=self.migration_ids,
            mode=self.mode,
            mode_mtime_ms=self.mode_mtime_ms,
            authorities=self.authorities,
            owners=self.owners,
            offsets=self.offsets,
            exists=self.exists,
        )


class _Pipeline:
    """Issue many async reads, then wait on all of them and hand each result to its callback."""

    def __init__(self, zk: KazooClient, timeout_s: float) -> None:
        self._zk = zk
        self._timeout_s = timeout_s
        self._pending: list[tuple[IAsyncResult, Callable[[Any], None]]] = []

    def children(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((self._zk.get_children_async(path), on_result))

    def get(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((self._zk.get_async(path), on_result))

    def exists(self, path: str, on_result: Callable[[Any], None]) -> None:
        self._pending.append((self._zk.exists_async(path), on_result))

    def drain(self) -> None:
        pending, self._pending = self._pending, []
        for result, on_result in pending:
            on_result(_wait(result, self._timeout_s))


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


def read_published(
    zk: KazooClient, group: str, bridges: Iterable[str] | None = None, *, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S
) -> dict[str, Published]:
    """The published authority of each of `bridges` (default: every bridge that published), in one pipelined
    round trip (one more to list them). Bridges without a readable node are left out."""
    paths = GroupPaths(group)
    pipe = _Pipeline(zk, timeout_s)
    if bridges is None:
        listed: list[str] = []
        pipe.children(paths.authority, lambda children: listed.extend(() if children is _NONE else children))
        pipe.drain()
        bridges = sorted(listed)
    out: dict[str, Published] = {}
    for cid in bridges:

        def on_published(result: Any, cid: str = cid) -> None:
            if (published := _published(group, cid, result)) is not None:
                out[cid] = published

        pipe.get(paths.published_authority(cid), on_published)
    pipe.drain()
    return out


def _partition_id(name: str) -> int | None:
    return int(name) if name.isdigit() else None


def _level1(pipe: ReadPipeline, g: _Partial, full: bool) -> None:
    """Children lists and the mode node (`full`: also the published authorities, owners and offsets)."""
    p = g.paths

    def on_root(stat: Any) -> None:
        g.exists = stat is not None and stat is not _NONE

    def on_ids(children: Any) -> None:
        g.ids = [] if children is _NONE else sorted(children)

    def on_migration_ids(children: Any) -> None:
        g.migration_ids = frozenset() if children is _NONE else frozenset(children)

    def on_mode(result: Any) -> None:
        if result is _NONE:
            return
        data, stat = result
        g.mode = ModeNode.decode(data)
        g.mode_mtime_ms = stat.mtime

    def on_authority(children: Any) -> None:
        g.authority_ids = [] if children is _NONE else sorted(children)

    def on_owner_topics(children: Any) -> None:
        g.owner_topics = [] if children is _NONE else sorted(children)

    def on_offset_topics(children: Any) -> None:
        g.offset_topics = [] if children is _NONE else sorted(children)

    pipe.exists(p.root, on_root)
    pipe.children(p.ids, on_ids)
    pipe.children(p.migration_ids, on_migration_ids)
    pipe.get(p.mode, on_mode)
    if not full:
        return
    pipe.children(p.authority, on_authority)
    pipe.children(p.owners, on_owner_topics)
    pipe.children(p.offsets, on_offset_topics)


def _level2(pipe: ReadPipeline, g: _Partial) -> None:
    """Member registrations (with ctime), published authorities, and partition lists per topic."""
    p = g.paths
    for cid in g.ids:

        def on_member(result: Any, cid: str = cid) -> None:
            if result is _NONE:
                return  # the member left between get_children and get
            data, stat = result
            g.id_data[cid] = data or b""
            try:
                registration, dialect = decode_member(data)
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

        pipe.get(p.published_authority(cid), on_authority)

    for topic in g.owner_topics:

        def on_owner_parts(children: Any, topic: str = topic) -> None:
            g.owner_partitions[topic] = [] if children is _NONE else list(children)

        pipe.children(p.owners_topic(topic), on_owner_parts)

    for topic in g.offset_topics:

        def on_offset_parts(children: Any, topic: str = topic) -> None:
            g.offset_partitions[topic] = [] if children is _NONE else list(children)

        pipe.children(p.offsets_topic(topic), on_offset_parts)


def _owner_setter(g: _Partial, tp: TopicPartition) -> Callable[[Any], None]:
    def on_owner(result: Any) -> None:
        if result is not _NONE:
            g.owners[tp] = decode_owner(result[0])

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
    """Owner and (`offsets`) offset data per partition."""
    p = g.paths
    kinds = [("owners", g.owner_partitions, p.owner, _owner_setter)]
    if offsets:
        kinds.append(("offsets", g.offset_partitions, p.offset, _offset_setter))
    for kind, listing, path_of, setter in kinds:
        for topic, names in listing.items():
            for name in names:
                partition = _partition_id(name)
                if partition is None and kind == "owners" and OwnerNode.parse(name) is not None:
                    continue  # a pykafka owner node (<leader>-<partition>): the pykafka dialect reads those
                if partition is None:
                    log.warning("group %s: ignoring %s/%s/%s (not a partition id)", g.group, kind, topic, name)
                    continue
                pipe.get(path_of(topic, partition), setter(g, TopicPartition(topic, partition)))


def _read_partials(
    pipe: ReadPipeline, groups: Sequence[str], full: bool = True, offsets: bool = True
) -> list[_Partial]:
    partials = [_Partial(group, GroupPaths(group)) for group in groups]
    for g in partials:
        _level1(pipe, g, full)
    pipe.drain()
    for g in partials:
        _level2(pipe, g)
    pipe.drain()
    for g in partials:
        _level3(pipe, g, offsets)
    pipe.drain()
    return partials


def _read_batch(zk: KazooClient, groups: Sequence[str], timeout_s: float, full: bool = True) -> dict[str, GroupView]:
    return {g.group: g.view() for g in _read_partials(_Pipeline(zk, timeout_s), groups, full)}


def pipeline_of(source: KazooClient | ReadPipeline, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S) -> ReadPipeline:
    """A `ReadPipeline` over kazoo's async calls for a client; another pipeline as it is."""
    return _Pipeline(source, timeout_s) if isinstance(source, KazooClient) else source


def read_groups_with_layout(
    source: KazooClient | ReadPipeline,
    groups: Sequence[str],
    *,
    offsets: bool = True,
    timeout_s: float = DEFAULT_RESULT_TIMEOUT_S,
) -> list[tuple[GroupView, LayoutEvidence]]:
    """Each group's `GroupView` with the evidence of its layout dialect, in one pipelined batch (the caller
    bounds `groups`). Without `offsets` the offset nodes' data is not read (the view's `offsets` is empty):
    a reader that consults no Kafka log end needs only their existence, which it does not use either."""
    partials = _read_partials(pipeline_of(source, timeout_s), list(dict.fromkeys(groups)), offsets=offsets)
    return [(g.view(), g.evidence()) for g in partials]


def read_groups(
    zk: KazooClient, groups: Iterable[str], *, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S
) -> dict[str, GroupView]:
    """A `GroupView` for each group (a group without `/consumers/<group>` gets `exists=False`).

    Reads are pipelined per tree level across up to `BATCH_GROUPS` groups. Raises kazoo's errors on
    connection loss or a missing permission (NoNode is tolerated everywhere).
    """
    unique = list(dict.fromkeys(groups))
    views: dict[str, GroupView] = {}
    for start in range(0, len(unique), BATCH_GROUPS):
        views.update(_read_batch(zk, unique[start : start + BATCH_GROUPS], timeout_s))
    return views


def read_group(zk: KazooClient, group: str, *, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S) -> GroupView:
    """The `GroupView` of one group, read in three pipelined round trips."""
    return read_groups(zk, [group], timeout_s=timeout_s)[group]


def read_membership(zk: KazooClient, group: str, *, timeout_s: float = DEFAULT_RESULT_TIMEOUT_S) -> GroupView:
    """The members and the mode of one group, in two pipelined round trips: a `GroupView` without published
    authorities, owners and offsets (what a rebalance decides over reads no more)."""
    return _read_batch(zk, [group], timeout_s, full=False)[group]
