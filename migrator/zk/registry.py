"""A member's own nodes: its registration under `ids` (and, for bridges, `migration/ids`) and its
published authority; plus the watches that turn ZooKeeper changes into worker events.

Order matters: a bridge appears under `migration/ids` before `ids` and leaves `ids` first, so no member
ever sees it as a legacy connector and falls back to ZooKeeper authority for nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable

from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError
from kazoo.recipe.watchers import ChildrenWatch, DataWatch

from migrator.protocol.codecs import PublishedAuthority, Registration
from migrator.protocol.events import Trigger
from migrator.protocol.membership_delta import only_arrived
from migrator.zk.paths import (
    BROKER_IDS,
    BROKER_TOPICS,
    GroupPaths,
    broker_topic,
    broker_topic_partitions,
    partition_state,
)


class Registry:
    def __init__(
        self,
        zk: KazooClient,
        paths: GroupPaths,
        consumer_id: str,
        bridge: bool,
        encode: Callable[[Registration], bytes] = Registration.encode,
    ) -> None:
        """`encode`: the dialect's `ids` data (Scala's JSON by default)."""
        self._zk = zk
        self._paths = paths
        self._cid = consumer_id
        self._bridge = bridge
        self._encode = encode
        self._published = False
        """Whether this session's authority node was written: the first publish creates it at once."""

    def register(self, registration: Registration) -> None:
        """A bridge's two nodes in one transaction (one round trip on a joining bridge's way to its first
        claim, and both or neither); where it fails (a node left by an earlier session of ours, a folder not
        there yet), one by one, replacing leftovers, `migration/ids` first."""
        self._published = False
        data = self._encode(registration)
        nodes = [self._paths.migration_member(self._cid)] if self._bridge else []
        nodes.append(self._paths.member(self._cid))
        if len(nodes) > 1 and self._create_together(nodes, data):
            return
        for path in nodes:
            self._create_ephemeral(path, data)

    def _create_together(self, nodes: list[str], data: bytes) -> bool:
        transaction = self._zk.transaction()
        for path in nodes:
            transaction.create(path, data, ephemeral=True)
        return not any(isinstance(result, Exception) for result in transaction.commit())

    def deregister(self) -> None:
        """Delete our nodes in one pipelined round trip: ZooKeeper applies one session's requests in order, so
        `ids` still goes first (shutdown waits for this before leaving the Kafka group)."""
        nodes = [self._paths.member(self._cid)]
        if self._bridge:
            nodes += [self._paths.published_authority(self._cid), self._paths.migration_member(self._cid)]
        for result in [self._zk.delete_async(path) for path in nodes]:
            with contextlib.suppress(NoNodeError):
                result.get()

    def publish(self, authority: PublishedAuthority) -> None:
        """Write our authority node: created by the first publish after registering (one request, not a write
        refused for want of the node and a create), written after."""
        if not self._bridge:
            return
        path = self._paths.published_authority(self._cid)
        if not self._published:
            self._create_ephemeral(path, authority.encode())
            self._published = True
            return
        try:
            self._zk.set(path, authority.encode())
        except NoNodeError:
            self._create_ephemeral(path, authority.encode())

    def _create_ephemeral(self, path: str, data: bytes) -> None:
        """Create, replacing a leftover node of a previous session of ours (same consumer.id)."""
        try:
            self._zk.create(path, data, ephemeral=True, makepath=True)
        except NodeExistsError:
            with contextlib.suppress(NoNodeError):
                self._zk.delete(path)
            self._zk.create(path, data, ephemeral=True, makepath=True)


class Watches:
    """kazoo watch recipes that re-arm themselves (also across sessions) and only post a trigger."""

    def __init__(
        self,
        zk: KazooClient,
        paths: GroupPaths,
        post: Callable[[Trigger], None],
        bridge: bool,
        brokers: bool = False,
        own_id: str | None = None,
    ) -> None:
        """`brokers`: also watch `/brokers/ids` and the partition leaders of the watched topics (a dialect whose
        assignment and owner node names follow the partition leaders). `own_id`: this member's consumer id,
        whose own registration changes nothing the worker has not read (`only_arrived`)."""
        self._own_id = own_id
        self._zk = zk
        self._paths = paths
        self._post = post
        self._bridge = bridge
        self._brokers = brokers
        self._topics: set[str] = set()
        self._stopped = False
        self._wildcard = False

    def start(self) -> None:
        self._zk.ensure_path(self._paths.ids)
        self._children(self._paths.ids, Trigger.IDS)
        if self._bridge:
            self._zk.ensure_path(self._paths.migration_ids)
            self._children(self._paths.migration_ids, Trigger.MIGRATION_IDS)
            DataWatch(self._zk, self._paths.mode, self._on_data(Trigger.MODE))
        if self._brokers:
            self._zk.ensure_path(BROKER_IDS)
            self._children(BROKER_IDS, Trigger.BROKERS)

    def watch_topics(self, topics: Iterable[str], wildcard: bool) -> None:
        """Watch `/brokers/topics/<t>` (partitions added) and, for wildcards, the topic list."""
        if wildcard and not self._wildcard:
            self._wildcard = True
            if self._zk.exists(BROKER_TOPICS):
                self._children(BROKER_TOPICS, Trigger.TOPICS)
        for topic in sorted(set(topics) - self._topics):
            self._topics.add(topic)
            DataWatch(self._zk, broker_topic(topic), self._on_data(Trigger.TOPIC))
            if self._brokers:
                self._watch_leaders(topic)

    def _watch_leaders(self, topic: str) -> None:
        """Each partition's state node (its leader): the pykafka dialect's order and owner node names follow it."""
        with contextlib.suppress(NoNodeError):
            for partition in sorted(self._zk.get_children(broker_topic_partitions(topic))):
                DataWatch(self._zk, partition_state(topic, partition), self._on_data(Trigger.BROKERS))

    def stop(self) -> None:
        self._stopped = True

    def _children(self, path: str, what: Trigger) -> None:
        ChildrenWatch(self._zk, path, self._members_trigger(what) if self._own_id else self._trigger(what))

    def _members_trigger(self, what: Trigger) -> Callable[[list[str]], bool | None]:
        """`_trigger` for a member listing, silent when the only change is this member registering: the watches
        are armed before it registers, and the worker's first read comes after, so that read already has it
        (a registration of a new session is followed by a full read of its own)."""
        post = self._trigger(what)
        seen: frozenset[str] | None = None

        def on_children(children: list[str]) -> bool | None:
            nonlocal seen
            before, seen = seen, frozenset(children)
            if before is not None and self._own_id is not None and only_arrived(before, seen, self._own_id):
                return False if self._stopped else None
            return post(children)

        return on_children

    def _on_data(self, what: Trigger) -> Callable[..., bool | None]:
        return self._trigger(what)

    def _trigger(self, what: Trigger) -> Callable[..., bool | None]:
        """A watch callback that posts `what` on every change after the first call (which only arms it),
        and disarms itself once the watches are stopped."""
        first = True

        def on_change(*_args: object) -> bool | None:
            nonlocal first
            if self._stopped:
                return False
            if not first:
                self._post(what)
            first = False
            return None

        return on_change
