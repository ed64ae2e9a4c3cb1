"""`set-mode --wait`: watch a switch complete and measure the pause it caused.

A switch is done when every bridge has published the new authority *after* the mode write, and every
partition of the group's topics has an owner again. "After" is decided by ZooKeeper's transaction ids
(the authority node's mzxid is larger than the mode write's), not by clocks, so host clock skew cannot
make a stale publication look fresh.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Iterable, Mapping
from dataclasses import dataclass

from migrator.errors import MigratorError
from migrator.kafka.admin import KafkaAdmin, KafkaUnavailable
from migrator.protocol.codecs import Mode, PublishedAuthority, authority_of
from migrator.protocol.group import Group
from migrator.protocol.group_view import GroupView
from migrator.protocol.partition import TopicPartition
from migrator.zk.brokers import topics_partitions
from migrator.zk.group_reader import read_group
from migrator.zk.session import ZkSession

POLL_INTERVAL_S = 0.2


class WaitTimeout(MigratorError):
    """The switch did not complete in time (exit 1): the message says what is missing."""


@dataclass(frozen=True, slots=True)
class Progress:
    pending_bridges: tuple[str, ...]
    unowned: tuple[TopicPartition, ...]
    partitions_known: bool
    refusing: tuple[tuple[str, str, str], ...] = ()
    """(bridge, authority, reason) of pending bridges that did publish after the write, but another
    authority: the authority rule kept them there (a legacy connector, Kafka unavailable), which waiting
    longer will not change. The operator needs that reason, not just the bridge's name."""

    @property
    def done(self) -> bool:
        return not self.pending_bridges and not self.unowned

    def describe(self) -> str:
        parts = []
        refusing = {cid for cid, _a, _r in self.refusing}
        for cid, authority, reason in self.refusing:
            parts.append(f"bridge {cid} published {authority} after the write: {reason or 'no reason given'}")
        silent = [cid for cid in self.pending_bridges if cid not in refusing]
        if silent:
            parts.append(f"bridges not yet publishing the new authority: {', '.join(silent)}")
        if self.unowned:
            shown = ", ".join(str(tp) for tp in self.unowned[:10])
            more = f" and {len(self.unowned) - 10} more" if len(self.unowned) > 10 else ""
            parts.append(f"{len(self.unowned)} partition(s) without owner: {shown}{more}")
        return "; ".join(parts) or "nothing"

    def summary(self) -> str:
        """One short line for a progress display."""
        unowned = f"{len(self.unowned)} partition(s) without owner" if self.partitions_known else "partitions unknown"
        return f"{len(self.pending_bridges)} bridge(s) not yet obeying, {unowned}"


def progress(
    target: Mode,
    bridges: Iterable[str],
    published: Mapping[str, tuple[PublishedAuthority, int]],
    write_mzxid: int,
    partitions: Iterable[TopicPartition] | None,
    owned: Collection[TopicPartition],
) -> Progress:
    """Pure: which bridges still lag behind the write, and which partitions nobody owns.

    `published` maps a bridge to (its published authority, that node's mzxid); `partitions` is None when
    the group's partitions could not be listed (then only the bridges are waited for).
    """
    wanted = authority_of(target)
    pending = tuple(
        sorted(
            cid
            for cid in bridges
            if cid not in published or published[cid][0].authority is not wanted or published[cid][1] <= write_mzxid
        )
    )
    refusing = tuple(
        (cid, published[cid][0].authority.value, published[cid][0].reason)
        for cid in pending
        if cid in published and published[cid][1] > write_mzxid and published[cid][0].authority is not wanted
    )
    unowned = () if partitions is None else tuple(sorted(tp for tp in partitions if tp not in owned))
    return Progress(pending, unowned, partitions is not None, refusing)


def _broker_partitions(admin: KafkaAdmin | None, topic: str) -> tuple[int, ...] | None:
    if admin is None:
        return None
    try:
        ids = admin.partitions(topic)
    except KafkaUnavailable:
        return None
    return None if ids is None else tuple(ids)


def group_partitions(zk: ZkSession, admin: KafkaAdmin | None, topics: Iterable[str]) -> list[TopicPartition] | None:
    """Partitions of `topics` from the brokers, else from `/brokers/topics` (ZooKeeper-mode clusters, all such
    topics in one read); None when a topic is known to neither."""
    ids = {topic: _broker_partitions(admin, topic) for topic in sorted(topics)}
    from_zookeeper = topics_partitions(zk, [t for t, found in ids.items() if found is None])
    found: list[TopicPartition] = []
    for topic, known in ids.items():
        partitions = known if known is not None else from_zookeeper[topic]
        if not isinstance(partitions, tuple):
            return None
        found.extend(TopicPartition(topic, p) for p in partitions)
    return found


def _kafka_owned(admin: KafkaAdmin | None, view: GroupView) -> set[TopicPartition]:
    """Partitions plain Kafka consumers hold: they own them without a ZooKeeper owners node."""
    if admin is None:
        return set()
    try:
        kafka = admin.describe_group(view.group)
    except KafkaUnavailable:
        return set()
    return {tp for m in Group(view, kafka).plain_consumers for tp in m.partitions}


def _published(view: GroupView) -> dict[str, tuple[PublishedAuthority, int]]:
    """Each bridge's published authority with its node's mzxid, as the group read found them."""
    return {cid: (node, view.authority_mzxids[cid]) for cid, node in view.authorities.items()}


def wait_for_switch(
    zk: ZkSession,
    group: str,
    target: Mode,
    *,
    write_mzxid: int,
    write_monotonic: float,
    timeout_s: float,
    admin: KafkaAdmin | None = None,
    on_progress: Callable[[Progress], None] | None = None,
) -> float:
    """Seconds from the mode write until the switch completed; raises WaitTimeout after `timeout_s`.
    `on_progress` is given every state read that is not yet done (for a display)."""
    deadline = time.monotonic() + timeout_s
    partitions: list[TopicPartition] | None = None
    while True:
        view = read_group(zk, group)
        if partitions is None or {tp.topic for tp in partitions} != set(view.topics):
            partitions = group_partitions(zk, admin, view.topics)
        bridges = [m.consumer_id for m in view.bridges]
        owned = set(view.owners)
        if target is Mode.KAFKA:
            owned |= _kafka_owned(admin, view)
        state = progress(target, bridges, _published(view), write_mzxid, partitions, owned)
        if state.done:
            return time.monotonic() - write_monotonic
        if time.monotonic() >= deadline:
            what = state.describe()
            raise WaitTimeout(f"the switch to {target.value} did not complete within {timeout_s:g}s: {what}")
        if on_progress is not None:
            on_progress(state)
        time.sleep(POLL_INTERVAL_S)
