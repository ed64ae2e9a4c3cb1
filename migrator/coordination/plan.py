"""Pure rebalance planning: the target ownership under an authority, and the diff to get there."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Set
from dataclasses import dataclass
from typing import Protocol

from migrator.assign.legacy import Assignor, assignor_for, context_from_subscriptions, own_partitions
from migrator.assign.model import ThreadId
from migrator.assign.subdivide import global_thread_assignment, subdivide
from migrator.coordination.authority import AuthorityDecision
from migrator.protocol.codecs import Authority
from migrator.protocol.partition import TopicPartition


@dataclass(frozen=True, slots=True)
class Target:
    """`own` is what this member must hold; `global_` is the thread-level view for the listener."""

    own: Mapping[TopicPartition, ThreadId]
    global_: Mapping[TopicPartition, ThreadId]


def zookeeper_target(
    consumer_id: str,
    subscriptions: Mapping[str, Mapping[str, int]],
    partitions: Mapping[str, Collection[int]],
    strategy: str | Assignor,
) -> Target:
    ctx = context_from_subscriptions(consumer_id, subscriptions, {t: sorted(p) for t, p in partitions.items()})
    global_ = assignor_for(strategy)(ctx)
    return Target(own=own_partitions(global_, consumer_id), global_=global_)


def kafka_target(
    consumer_id: str,
    subscriptions: Mapping[str, Mapping[str, int]],
    assigned: Collection[TopicPartition],
    kafka_members: Mapping[str, Collection[TopicPartition]] | None = None,
) -> Target:
    """Subdivide this bridge's Kafka partitions among its threads.

    `kafka_members` (member key → partitions, the key being a bridge's consumerId or a plain consumer's
    member id) gives the global view; without it the global view holds only this bridge.
    """
    own = subdivide(consumer_id, subscriptions.get(consumer_id, {}), assigned)
    if kafka_members is None:
        return Target(own=own, global_=dict(own))
    bridges = {cid: sub for cid, sub in subscriptions.items() if cid in kafka_members}
    members = dict(kafka_members)
    members[consumer_id] = tuple(assigned)
    return Target(own=own, global_=global_thread_assignment(members, bridges))


class DescribedMember(Protocol):
    """A member of the Kafka group as DescribeGroups reports it (`kafka.admin.KafkaMember`)."""

    @property
    def member_id(self) -> str: ...

    @property
    def client_id(self) -> str: ...

    @property
    def partitions(self) -> tuple[TopicPartition, ...]: ...


def kafka_members(members: Iterable[DescribedMember], bridges: Set[str]) -> dict[str, tuple[TopicPartition, ...]]:
    """The described members keyed as `kafka_target` wants them: a registered bridge (`bridges`) by its
    consumerId, which is its embedded member's `client.id`; anyone else by its Kafka member id, since plain
    consumers often share a client.id."""
    return {(m.client_id if m.client_id in bridges else m.member_id): m.partitions for m in members}


def decided_target(
    decision: AuthorityDecision,
    consumer_id: str,
    subscriptions: Mapping[str, Mapping[str, int]],
    partitions: Mapping[str, Collection[int]],
    strategy: str | Assignor,
    assigned: Collection[TopicPartition] | None,
    members: Mapping[str, Collection[TopicPartition]] | None,
) -> Target:
    """What this member must hold under `decision`: nothing while held; its Kafka assignment (`assigned`,
    None before any) subdivided under Kafka authority; ZooKeeper's `strategy` otherwise."""
    if decision.held:
        return Target(own={}, global_={})
    if decision.authority is Authority.KAFKA:
        return kafka_target(consumer_id, subscriptions, assigned or (), members)
    return zookeeper_target(consumer_id, subscriptions, partitions, strategy)


@dataclass(frozen=True, slots=True)
class Transition:
    release: Mapping[TopicPartition, ThreadId]
    claim: Mapping[TopicPartition, ThreadId]

    @property
    def empty(self) -> bool:
        return not self.release and not self.claim

    @property
    def moves(self) -> dict[TopicPartition, ThreadId]:
        """Partitions that stay with this member but change thread: handed over in place."""
        return {tp: th for tp, th in self.claim.items() if tp in self.release}

    @property
    def leaving(self) -> dict[TopicPartition, ThreadId]:
        """Partitions this member gives up (to another member, or to nobody)."""
        return {tp: th for tp, th in self.release.items() if tp not in self.claim}

    @property
    def arriving(self) -> dict[TopicPartition, ThreadId]:
        """Partitions this member takes that it did not hold on any thread."""
        return {tp: th for tp, th in self.claim.items() if tp not in self.release}


def transition(current: Mapping[TopicPartition, ThreadId], target: Mapping[TopicPartition, ThreadId]) -> Transition:
    """Partitions that stay on the same thread are neither released nor re-claimed."""
    return Transition(
        release={tp: th for tp, th in current.items() if target.get(tp) != th},
        claim={tp: th for tp, th in target.items() if current.get(tp) != th},
    )
